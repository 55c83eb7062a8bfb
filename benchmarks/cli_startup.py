"""Start-up of the ``reidrisk`` command: ``--help``, ``--version`` and every group's and command's
``--help``, each as the wall time of a fresh process minus that of a bare ``python -c pass``.

Every command runs as the installed console script (``.venv/bin/reidrisk ARGS``, what a user
types), output discarded, ``--repeats`` times in turn with the bare interpreter (so a change in the
machine's load hits both); the table gives the best time over the bare interpreter's best (the
start-up the command adds), the median, and the CPU seconds of the best run (user + system of the
child process, steadier than wall time on a busy machine). One more run per command under
``python -X importtime`` lists which of NumPy, pandas, SciPy, Matplotlib and Jinja2 it loads.

``--baseline REV`` measures the same commands on the source tree of git revision REV too
(``git archive REV src``, unpacked in a temporary folder and put first on ``PYTHONPATH``; same
interpreter and libraries), for a before/after table. Commands REV does not have are marked n/a.

    python benchmarks/cli_startup.py                      # the working tree only
    python benchmarks/cli_startup.py --baseline 1481b95   # and the tree before lazy loading

Writes docs/results/cli_startup.md and .json.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from _harness import REPO, Results, md_table

TARGET_S = 0.3
HEAVY = ("numpy", "pandas", "scipy", "matplotlib", "jinja2")
IMPORT_LINE = re.compile(r"^import time:\s+\d+\s+\|\s+\d+\s+\|\s+(\S.*)$")


def commands() -> list[list[str]]:
    """``--help``, ``--version`` and ``[*path, "--help"]`` for every group and command (loads them
    all, in this process only)."""
    import click

    from reidrisk.cli import cli

    out = [["--help"], ["--version"]]

    def walk(group: click.Group, path: list[str]) -> None:
        ctx = click.Context(group)
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            if command is None or command.hidden:
                continue
            out.append([*path, name, "--help"])
            if isinstance(command, click.Group):
                walk(command, [*path, name])

    walk(cli, [])
    return out


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """(wall seconds, child CPU seconds, exit code) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.returncode


def heavy_imports(args: list[str], env: dict[str, str]) -> list[str]:
    """The libraries of ``HEAVY`` that ``python -X importtime -m reidrisk.cli ARGS`` imports."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "reidrisk.cli", *args],
                          env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          check=False)
    loaded = set()
    for line in proc.stderr.splitlines():
        m = IMPORT_LINE.match(line)
        if m:
            loaded.add(m.group(1).strip().split(".")[0])
    return [name for name in HEAVY if name in loaded]


def measure(cmds: list[list[str]], env: dict[str, str], repeats: int) -> dict:
    """Best and median wall time, CPU of the best run and exit code per command, and the bare
    interpreter's, interleaved."""
    script = str(Path(sys.executable).parent / "reidrisk")
    bare: list[tuple[float, float]] = []
    runs: dict[tuple[str, ...], list[tuple[float, float, int]]] = {tuple(c): [] for c in cmds}
    for _ in range(repeats):
        for c in cmds:
            wall, cpu, _code = run_once([sys.executable, "-c", "pass"], env)
            bare.append((wall, cpu))
            runs[tuple(c)].append(run_once([script, *c], env))
    bare_best = min(bare)
    out = {"bare": {"best_s": bare_best[0], "cpu_s": bare_best[1],
                    "median_s": sorted(w for w, _ in bare)[len(bare) // 2]}}
    for c, rs in runs.items():
        walls = sorted(w for w, _, _ in rs)
        best = min(rs)
        out[c] = {"best_s": best[0], "median_s": walls[len(walls) // 2], "cpu_s": best[1],
                  "exit": best[2], "heavy": heavy_imports(list(c), env)}
    return out


def baseline_tree(rev: str, folder: Path) -> Path:
    """``src/`` of git revision ``rev`` unpacked in ``folder``; returns the ``src`` path."""
    tar = subprocess.run(["git", "archive", "--format=tar", rev, "src"], cwd=REPO,
                         capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        archive.extractall(folder, filter="data")
    return folder / "src"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7, help="runs per command (default 7)")
    parser.add_argument("--baseline", metavar="REV", default=None,
                        help="also measure the commands on git revision REV's source tree")
    parser.add_argument("--baseline-repeats", type=int, default=3,
                        help="runs per command of the baseline (default 3)")
    args = parser.parse_args()

    res = Results("cli_startup", packages=["click", "pandas"])
    cmds = commands()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.pop("REIDRISK_DEBUG", None)
    print(f"{len(cmds)} commands, {args.repeats} runs each")
    now = measure(cmds, env, args.repeats)
    before = None
    rev = None
    if args.baseline is not None:
        rev = subprocess.run(["git", "rev-parse", "--short", args.baseline], cwd=REPO,
                             capture_output=True, text=True, check=True).stdout.strip()
        with tempfile.TemporaryDirectory() as tmp:
            src = baseline_tree(args.baseline, Path(tmp))
            print(f"baseline {rev}: {args.baseline_repeats} runs each")
            before = measure(cmds, {**env, "PYTHONPATH": str(src)}, args.baseline_repeats)

    def over(m: dict, c: tuple[str, ...]) -> float:
        return m[c]["best_s"] - m["bare"]["best_s"]

    rows = []
    for c in map(tuple, cmds):
        line = " ".join(c)
        res.add({"command": line, "tree": "working"}, "startup_over_bare_s", over(now, c), "s")
        res.add({"command": line, "tree": "working"}, "median_s", now[c]["median_s"], "s")
        res.add({"command": line, "tree": "working"}, "cpu_s", now[c]["cpu_s"], "s")
        res.add({"command": line, "tree": "working"}, "heavy_imports", now[c]["heavy"], "modules")
        row = [f"`reidrisk {line}`"]
        if before is not None:
            ok = before[c]["exit"] == 0
            if ok:
                res.add({"command": line, "tree": rev}, "startup_over_bare_s", over(before, c), "s")
                res.add({"command": line, "tree": rev}, "heavy_imports", before[c]["heavy"],
                        "modules")
            row += [f"{over(before, c):.3f}" if ok else "n/a",
                    ", ".join(before[c]["heavy"]) or "none" if ok else "n/a"]
        row += [f"{over(now, c):.3f}", f"{now[c]['median_s'] - now['bare']['best_s']:.3f}",
                f"{now[c]['cpu_s']:.3f}", ", ".join(now[c]["heavy"]) or "none"]
        rows.append(row)
    worst = max(over(now, c) for c in map(tuple, cmds))
    within = sum(over(now, c) <= TARGET_S for c in map(tuple, cmds))
    failed = [" ".join(c) for c in map(tuple, cmds) if now[c]["exit"] != 0]
    heavy = [" ".join(c) for c in map(tuple, cmds) if now[c]["heavy"]]

    headers = ["command"]
    align = "l"
    if before is not None:
        headers += [f"before ({rev}): s over bare", "before: loads"]
        align += "rl"
    headers += ["s over bare (best)", "median", "CPU s (best run)", "loads"]
    align += "rrrl"
    body = [
        "# Start-up of the `reidrisk` command",
        "",
        "Wall time of `reidrisk ARGS` in a fresh process (output discarded) minus that of a bare "
        f"`python -c pass` (best of {args.repeats} runs each, interleaved: "
        f"{now['bare']['best_s']:.3f} s for the bare interpreter), for `--help`, `--version` and "
        "every group's and command's `--help`. \"median\" is the median run minus the same bare "
        "best; \"CPU s\" the user + system time of the best run's process, bare interpreter "
        "included. \"loads\" lists which of NumPy, pandas, SciPy, Matplotlib and Jinja2 the "
        "command imports (`python -X importtime`)."
        + (f" The before columns are the source tree of {rev} (best of {args.baseline_repeats} "
           "runs, same interpreter and libraries)." if before is not None else ""),
        "",
        md_table(headers, rows, align),
        "",
        f"Reading: {within} of {len(cmds)} commands start within {TARGET_S} s of the bare "
        f"interpreter; the slowest adds {worst:.3f} s."
        + (f" Commands that load a heavy library: {', '.join(heavy)}." if heavy else
           " None of them loads NumPy, pandas, SciPy, Matplotlib or Jinja2.")
        + (f" Commands that failed: {', '.join(failed)}." if failed else ""),
    ]
    if before is not None:
        worst_before = max(over(before, c) for c in map(tuple, cmds) if before[c]["exit"] == 0)
        body[-1] += f" Before ({rev}) the slowest added {worst_before:.3f} s."
    res.write(body, echo=True)


if __name__ == "__main__":
    main()
