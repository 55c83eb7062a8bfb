"""Shared helpers for every benchmark script in this folder.

A benchmark script does, in order::

    from _harness import Results, time_call

    res = Results("frequency_speed", packages=["pure-ldp"])   # prints machine + library versions
    t = time_call(lambda: work(), repeats=5)                  # Timing(best, median, ...) in seconds
    res.add({"k": 16, "n": 10**6}, "total_s", t.best, "s")    # one object per measured point
    res.write_json()                                          # docs/results/<name>.json
    res.write_markdown(text)                                  # docs/results/<name>.md (atomic)
    # or both at once, printing the text too: res.write(text, echo=True)

``docs/results/<name>.json`` is a JSON list. Its first object is the run record
``{"benchmark", "record": "machine", "command", "machine": {...}}``; every other object is one measured
point ``{"benchmark", "params": {...}, "metric", "value", "unit"}``.

Only the standard library, NumPy, SciPy and (if installed, as in the ``bench`` extra) threadpoolctl
are used here, so any script can import this module first.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO / "docs" / "results"

#: environment variables that change what the BLAS does (the env notes: OPENBLAS_CORETYPE and
#: OPENBLAS_L2_SIZE force an older, slower kernel on some processors; the *_NUM_THREADS set the pool).
THREAD_ENV = (
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
)

#: libraries reported for every benchmark (others are added per script)
CORE_PACKAGES = ("reidrisk", "numpy", "scipy", "threadpoolctl")


# ---- timing ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Timing:
    """Wall-clock seconds (``time.perf_counter``) of repeated calls of one function, and the CPU
    seconds of this process (``time.process_time``, all threads) of the same calls.

    On a busy machine wall time grows with the other work while a single-threaded call's CPU
    time hardly does, so ``cpu_best`` is the steadier figure there; for multi-threaded calls
    (BLAS) CPU time adds up the threads and is not a duration.
    """

    best: float
    median: float
    times: tuple[float, ...]
    cpu_best: float = math.nan
    cpu_times: tuple[float, ...] = ()

    @property
    def repeats(self) -> int:
        return len(self.times)


def time_call(
    fn: Callable[[], object],
    repeats: int = 5,
    warmup: int = 0,
    budget_s: float | None = None,
) -> Timing:
    """Time ``fn()`` ``repeats`` times after ``warmup`` untimed calls.

    With ``budget_s``, stop early once the timed calls add up to more than ``budget_s`` seconds
    (at least one call is always timed), so slow cases are not repeated for minutes; a warm-up
    call that alone exceeds ``budget_s`` is returned as the only timing.
    """
    times: list[float] = []
    cpus: list[float] = []
    for _ in range(warmup):
        took, cpu, _ = time_once(fn)
        if budget_s is not None and took > budget_s:
            # too slow to repeat: a cold first call is all there is (say so via repeats == 1)
            return Timing(took, took, (took,), cpu, (cpu,))
    for _ in range(max(1, repeats)):
        took, cpu, _ = time_once(fn)
        times.append(took)
        cpus.append(cpu)
        if budget_s is not None and sum(times) > budget_s:
            break
    return Timing(min(times), statistics.median(times), tuple(times), min(cpus), tuple(cpus))


def time_once(fn: Callable[[], object]) -> tuple[float, float, object]:
    """(wall seconds, CPU seconds, result) of one call of ``fn()``."""
    c0 = time.process_time()
    t0 = time.perf_counter()
    out = fn()
    t1 = time.perf_counter()
    return t1 - t0, time.process_time() - c0, out


# ---- machine -----------------------------------------------------------------------------------
def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _ram_gib() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return None


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def blas_info() -> list[dict]:
    """The BLAS/OpenMP pools loaded in this process (threadpoolctl), one dict per library.

    Call after importing numpy and scipy: threadpoolctl only sees libraries already loaded.
    """
    try:
        import threadpoolctl
    except ImportError:
        return [{"note": "threadpoolctl not installed (pip install -e '.[bench]')"}]
    keys = ("user_api", "internal_api", "version", "num_threads", "architecture",
            "threading_layer", "prefix")
    return [{k: d.get(k) for k in keys if k in d} for d in threadpoolctl.threadpool_info()]


def load_average() -> list[float] | None:
    """1, 5 and 15 minute load averages (None where the OS has none). Other work on the machine
    slows every timing down (and multi-threaded BLAS most of all): compare it with the cores."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return None


def _git() -> dict:
    def run(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    status = run("status", "--porcelain", "--untracked-files=no")
    return {"commit": run("rev-parse", "HEAD"), "dirty": bool(status) if status is not None else None}


def machine_info(packages: Iterable[str] = ()) -> dict:
    """CPU, cores, RAM, OS, Python, library versions, BLAS pools and the thread environment."""
    import numpy  # noqa: F401  (load the BLAS before asking threadpoolctl)
    import scipy.linalg  # noqa: F401

    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    names = list(dict.fromkeys([*CORE_PACKAGES, *packages]))
    return {
        "cpu": _cpu_model(),
        "arch": platform.machine(),
        "logical_cores": os.cpu_count(),
        "usable_cores": usable,
        "ram_gib": _ram_gib(),
        "os": platform.platform(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "packages": {name: _version(name) for name in names},
        "blas": blas_info(),
        "env": {var: os.environ.get(var) for var in THREAD_ENV},
        "git": _git(),
        "load_avg_start": load_average(),
        "date_utc": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def command_line() -> str:
    """The command that is running, as one shell line: thread variables that are set, the
    interpreter (relative to the repository when inside it) and the script's arguments."""
    exe = Path(sys.executable)
    try:
        exe_s = str(exe.relative_to(REPO)) if exe.is_absolute() else str(exe)
    except ValueError:
        exe_s = str(exe)
    script = Path(sys.argv[0]).resolve()
    try:
        script_s = str(script.relative_to(REPO))
    except ValueError:
        script_s = str(script)
    env = [f"{v}={shlex.quote(os.environ[v])}" for v in THREAD_ENV if v in os.environ]
    return shlex.join([exe_s, script_s, *sys.argv[1:]]) if not env else " ".join(
        env + [shlex.join([exe_s, script_s, *sys.argv[1:]])]
    )


def format_machine(info: dict) -> str:
    """Plain-text lines describing the machine (for the console and the .md file)."""
    pk = ", ".join(f"{k} {v}" for k, v in info["packages"].items() if v is not None)
    missing = [k for k, v in info["packages"].items() if v is None]
    blas = "; ".join(
        f"{b.get('internal_api', '?')} {b.get('version', '')} ({b.get('architecture', '?')} kernel, "
        f"{b.get('num_threads', '?')} threads, {b.get('user_api', '?')})"
        if "internal_api" in b else b.get("note", str(b))
        for b in info["blas"]
    ) or "none loaded"
    env = ", ".join(f"{k}={v}" for k, v in info["env"].items() if v is not None) or "none set"
    git = info["git"]
    loads = "; ".join(
        f"{label} {' / '.join(f'{x:g}' for x in info[key])}"
        for key, label in (("load_avg_start", "at start"), ("load_avg_end", "at end"))
        if info.get(key)
    )
    lines = [
        f"CPU: {info['cpu']} ({info['arch']}), {info['logical_cores']} logical cores "
        f"({info['usable_cores']} usable), {info['ram_gib']} GiB RAM",
        f"OS: {info['os']}; Python: {info['python']}",
        f"Libraries: {pk}" + (f" (not installed: {', '.join(missing)})" if missing else ""),
        f"BLAS: {blas}",
        f"Thread environment: {env}",
        f"reidrisk commit: {git.get('commit') or 'unknown'}"
        + (" (with uncommitted changes)" if git.get("dirty") else ""),
        f"Date (UTC): {info['date_utc']}",
    ]
    if info.get("duration_s") is not None:
        lines.append(f"Run time: {fmt_s(info['duration_s'])}")
    if loads:
        lines.append(f"Load average (1/5/15 min): {loads} (on {info['usable_cores']} cores)")
    return "\n".join(lines)


# ---- files -------------------------------------------------------------------------------------
def atomic_write_text(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file in the same folder and ``os.replace``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; results are ordinary files
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _jsonable(x):
    """NumPy scalars/arrays and non-finite floats to plain JSON values."""
    if hasattr(x, "item") and getattr(x, "ndim", 1) == 0:
        x = x.item()
    elif hasattr(x, "tolist"):
        x = x.tolist()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    return x


class Results:
    """The measured points of one benchmark run, and its machine record.

    Creating it prints the machine and library versions (so every run's log says where it ran).
    """

    def __init__(self, name: str, packages: Sequence[str] = (), results_dir: Path | None = None,
                 quiet: bool = False) -> None:
        self.name = name
        self.results_dir = Path(results_dir) if results_dir is not None else RESULTS_DIR
        self._t0 = time.perf_counter()
        self.command = command_line()
        self.machine = machine_info(packages)
        self.points: list[dict] = []
        if not quiet:
            print(f"== {name}: {self.command}")
            print(format_machine(self.machine))
            load = self.machine.get("load_avg_start")
            if load and load[0] > 0.5 * (self.machine["usable_cores"] or 1):
                print(f"note: the machine is busy (load average {load[0]:g} on "
                      f"{self.machine['usable_cores']} cores); timings will be slower and noisier.")
            if self.machine["env"].get("OPENBLAS_CORETYPE"):
                print(
                    "note: OPENBLAS_CORETYPE is set; it can force an older, slower BLAS kernel. "
                    "To measure the current kernel, run with "
                    "`env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ...` (then check the BLAS line)."
                )
            sys.stdout.flush()

    def add(self, params: dict, metric: str, value: float, unit: str) -> dict:
        """Record one measured point; returns it."""
        point = {"benchmark": self.name, "params": _jsonable(dict(params)), "metric": metric,
                 "value": _jsonable(value), "unit": unit}
        self.points.append(point)
        return point

    def add_timing(self, params: dict, metric: str, timing: Timing) -> None:
        """Record a Timing as ``<metric>`` (best wall time, s) with the median, the best CPU time
        and the number of repeats in the params."""
        self.add({**params, "repeats": timing.repeats, "median_s": timing.median,
                  "cpu_s": timing.cpu_best}, metric, timing.best, "s")

    def records(self) -> list[dict]:
        head = {"benchmark": self.name, "record": "machine", "command": self.command,
                "machine": _jsonable(self.machine)}
        return [head, *self.points]

    def finish(self) -> None:
        """Record the load average at the end of the run (called by ``write_json``)."""
        if "load_avg_end" not in self.machine:
            self.machine["load_avg_end"] = load_average()
            if "duration_s" not in self.machine:
                self.machine["duration_s"] = round(time.perf_counter() - self._t0, 1)

    def write_json(self) -> Path:
        self.finish()
        path = self.results_dir / f"{self.name}.json"
        atomic_write_text(path, json.dumps(self.records(), indent=1) + "\n")
        print(f"wrote {path}")
        return path

    def write_markdown(self, body: str) -> Path:
        """Write ``<name>.md``: ``body`` followed by the exact command and the machine."""
        self.finish()
        text = (
            body.rstrip()
            + "\n\n## How these numbers were produced\n\n"
            + f"Command (from the repository root):\n\n```\n{self.command}\n```\n\n"
            + "Machine:\n\n```\n" + format_machine(self.machine) + "\n```\n\n"
            + f"Every number above is also in `{self.name}.json` (one object per measured point).\n"
        )
        path = self.results_dir / f"{self.name}.md"
        atomic_write_text(path, text)
        print(f"wrote {path}")
        return path

    def write(self, body: str | Sequence[str], echo: bool = False) -> None:
        """``write_json()`` then ``write_markdown(body)`` (a list of lines is joined with
        newlines); with ``echo`` the body is printed as well."""
        text = body if isinstance(body, str) else "\n".join(body)
        self.write_json()
        self.write_markdown(text)
        if echo:
            print(text)


# ---- formatting --------------------------------------------------------------------------------
def md_table(headers: Sequence[str], rows: Iterable[Sequence[object]], align: str | None = None) -> str:
    """A GitHub-flavoured Markdown table; ``align`` is one letter (l/r/c) per column."""
    headers = [str(h) for h in headers]
    align = align or "l" + "r" * (len(headers) - 1)
    marks = {"l": ":--", "r": "--:", "c": ":-:"}
    out = ["| " + " | ".join(headers) + " |", "| " + " | ".join(marks[a] for a in align) + " |"]
    for row in rows:
        out.append("| " + " | ".join(str(c) for c in row) + " |")
    return "\n".join(out)


def fmt_s(seconds: float | None) -> str:
    """Seconds in a readable unit (us, ms, s, min)."""
    if seconds is None or not math.isfinite(seconds):
        return "n/a"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    if seconds < 120:
        return f"{seconds:.2f} s"
    return f"{seconds / 60:.1f} min"


def fmt_x(ratio: float | None) -> str:
    """A speed ratio as '12x' / '1.3x' / '0.42x'."""
    if ratio is None or not math.isfinite(ratio):
        return "n/a"
    if ratio >= 100:
        return f"{ratio:,.0f}x"
    if ratio >= 10:
        return f"{ratio:.0f}x"
    return f"{ratio:.2g}x" if ratio < 1 else f"{ratio:.1f}x"
