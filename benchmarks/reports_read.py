#!/usr/bin/env python
"""Reading a reports file (``read_reports``), and the service's batch ingest, against an earlier
revision of the cell decoder.

``read_reports`` and the service decode report cells with one function
(``reports_io.decode_column``). This script measures what that costs:

1. the file reader: the wall and CPU seconds of ``read_reports`` (parse, decode every cell,
   ``validate_reports``, the protocol's check) on a CSV and a Parquet file (``write_reports``) of
   10^5 and 10^6 reports, 15 attributes of 2 to 8 categories (``service_load.py``'s survey), 20 %
   missing, whole-record epsilon = 5, for GRR (``int`` cells), the subset mechanism and OLH
   (``ints``: h codes; 10-digit hash parameters and a value) and OUE (``bits``);
2. the service: the batch phase of ``service_load.py`` (8 clients sending batches of 100
   reports to ``reidrisk serve`` on SQLite), reports/s.

With ``--baseline REV`` each measurement is taken for the checked-out tree and for a copy of its
``src/`` in which the cell decoder's modules (``reports_io.py``, ``service/wire.py``;
``--baseline-paths``) are those of the revision ``REV`` (the copy is put first on
``PYTHONPATH``), alternately (the order swapped every repeat) so that both see the same load:
every timed read runs in a fresh process that imports one of the two, and every service run
starts its own server. Files are written once, by the checked-out tree, and read by both (the
file format is the same).

Run from the repository root (``make bench-reports_read ARGS=--baseline=REV``)::

    .venv/bin/python benchmarks/reports_read.py --baseline 1b95198   # about 20 min at load 1
    .venv/bin/python benchmarks/reports_read.py --quick             # 10^4 and 10^5, no service

The full run writes docs/results/reports_read.{json,md}; ``--quick`` writes into a temporary
folder unless ``--out-dir`` is given.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

from _harness import REPO, Results, fmt_s, fmt_x, md_table  # noqa: E402

MECHANISMS = ("grr", "subset", "olh", "oue")
DECODER_FILES = ("src/reidrisk/collect/reports_io.py", "src/reidrisk/service/wire.py")
FORMATS = ("csv", "parquet")
EPSILON = 5.0
MISSING = 0.2


def write_files(workdir: Path, n: int, mechanism: str) -> dict[str, Path]:
    """A CSV and a Parquet reports file of ``n`` reports (``service_load.py``'s population)."""
    from reidrisk.collect.protocol import Protocol
    from reidrisk.collect.reports_io import write_reports
    from service_load import make_schema, population

    schema = make_schema()
    proto = Protocol(EPSILON, mechanism=mechanism)
    rr = proto.randomize(schema, population(n, np.random.default_rng(n)), rng=1)
    return {fmt: write_reports(workdir / f"{mechanism}_{n}.{fmt}", rr, proto) for fmt in FORMATS}


def time_one(path: Path) -> dict:
    """Wall and CPU seconds of one ``read_reports(path)`` in this process (the child's job)."""
    import pyarrow.parquet  # noqa: F401  (imported on first use: not part of a read)

    import reidrisk.collect.reports_io as rio

    c0, t0 = time.process_time(), time.perf_counter()
    back = rio.read_reports(path)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"wall": wall, "cpu": cpu, "n": back.n, "module": rio.__file__}


def child_env(src: Path | None) -> dict:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(src), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def timed_read(path: Path, src: Path | None) -> dict:
    out = subprocess.run([sys.executable, __file__, "--time-one", str(path)], env=child_env(src),
                         capture_output=True, text=True, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    if src is not None and not got["module"].startswith(str(src)):
        raise RuntimeError(f"the baseline child imported {got['module']}, not {src}")
    return got


def service_run(src: Path | None, workdir: Path, seconds: float) -> float:
    """Reports/s of ``service_load.py``'s batch phase (the other phases made short)."""
    out = workdir / f"service_{time.monotonic_ns()}"
    out.mkdir()
    cmd = [sys.executable, str(REPO / "benchmarks" / "service_load.py"), "--seconds", str(seconds),
           "--max-reports", str(int(10_000 * seconds)), "--open-rate", "0", "--query-n", "0",
           "--single-clients", "10", "--out-dir", str(out)]
    subprocess.run(cmd, env=child_env(src), capture_output=True, text=True, check=True)
    points = json.loads((out / "service.json").read_text())
    return next(p["value"] for p in points if p.get("metric") == "batch_throughput")


def reader_row(points: list[dict], baseline: bool) -> list[str]:
    """One table row from the ``read_s`` points of one file (both versions)."""
    got = {p["params"]["version"]: p for p in points if p["metric"] == "read_s"}
    cur = got["current"]
    q = cur["params"]
    row = [q["mechanism"], q["format"], f"{q['n']:,}", f"{q['file_bytes'] / 2**20:.1f}",
           fmt_s(cur["value"]), fmt_s(q["cpu_s"]), f"{q['n'] / cur['value']:,.0f}"]
    if baseline:
        base = got["baseline"]
        row += [fmt_s(base["value"]), fmt_s(base["params"]["cpu_s"]),
                fmt_x(base["value"] / cur["value"]), fmt_x(base["params"]["cpu_s"] / q["cpu_s"])]
    return row


def reader_table(points: list[dict], baseline: str | None) -> str:
    """The file reader's table: wall (best of the repeats) and CPU seconds, per file."""
    reads = [p for p in points if p["metric"] == "read_s"]
    files: dict[tuple, list[dict]] = {}
    for p in reads:
        q = p["params"]
        files.setdefault((q["n"], q["mechanism"], q["format"]), []).append(p)
    head = ["mechanism", "format", "reports", "file MiB", "wall (now)", "CPU (now)",
            "reports/s (now)"]
    if baseline:
        head += [f"wall ({baseline})", f"CPU ({baseline})", "speed-up (wall)", "speed-up (CPU)"]
    return md_table(head, [reader_row(ps, baseline is not None) for ps in files.values()])


def service_verdict(rates: dict[str, list[float]]) -> str:
    """The medians' difference beside the spread of one version's runs (the noise)."""
    med = {v: statistics.median(r) for v, r in rates.items()}
    spread = max((max(r) - min(r)) / med[v] for v, r in rates.items())
    return (f"Medians: {med['current']:,.0f} against {med['baseline']:,.0f} reports/s "
            f"({med['current'] / med['baseline'] - 1:+.0%}); the runs of one version spread over "
            f"{spread:.0%} of their median, so a difference smaller than that is within the noise "
            "of this run.")


def export_baseline(rev: str, paths: list[str], workdir: Path) -> Path:
    """The checked-out ``src/`` with ``paths`` as they were at ``rev``: the rest of the package
    is the same for both versions, so the comparison is of those files only."""
    dest = workdir / "baseline" / "src"
    shutil.copytree(REPO / "src", dest, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for rel in paths:
        old = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:{rel}"], capture_output=True,
                             check=True).stdout
        (dest / Path(rel).relative_to("src")).write_bytes(old)
    return dest


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", default=None, help="git revision to compare with")
    ap.add_argument("--baseline-paths", nargs="+", default=list(DECODER_FILES),
                    help="files taken from the baseline revision (the rest is the checked-out "
                         "src/) [default: the cell decoder's modules]")
    ap.add_argument("--sizes", type=int, nargs="+", default=None,
                    help="reports per file [default: 100000 1000000; --quick: 10000 100000]")
    ap.add_argument("--mechanisms", nargs="+", default=list(MECHANISMS))
    ap.add_argument("--repeats", type=int, default=None,
                    help="reads per file and version [default: 3 below 10^6 reports, else 2]")
    ap.add_argument("--service-runs", type=int, default=3,
                    help="service runs per version (needs --baseline; 0 skips the service)")
    ap.add_argument("--service-seconds", type=float, default=8.0)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out-dir", type=Path, default=None)
    ap.add_argument("--time-one", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.time_one is not None:
        print(json.dumps(time_one(args.time_one)))
        return 0
    sizes = args.sizes or ([10_000, 100_000] if args.quick else [100_000, 1_000_000])
    out_dir = args.out_dir
    if out_dir is None and args.quick:
        out_dir = Path(tempfile.mkdtemp(prefix="reports_read_"))
    res = Results("reports_read", packages=["pandas", "pyarrow"], results_dir=out_dir)
    versions = ["current"] + (["baseline"] if args.baseline else [])
    service_rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        srcs: dict[str, Path | None] = {"current": None}
        if args.baseline:
            srcs["baseline"] = export_baseline(args.baseline, args.baseline_paths, work)
        for n in sizes:
            repeats = args.repeats or (2 if n >= 1_000_000 else 3)
            for mech in args.mechanisms:
                t0 = time.perf_counter()
                files = write_files(work, n, mech)
                print(f"wrote {mech} n={n:,} in {time.perf_counter() - t0:.1f} s", flush=True)
                for fmt, path in files.items():
                    got: dict[str, list[dict]] = {v: [] for v in versions}
                    for r in range(repeats):
                        for v in (versions if r % 2 == 0 else versions[::-1]):
                            got[v].append(timed_read(path, srcs[v]))
                    best = {}
                    for v in versions:
                        walls = [g["wall"] for g in got[v]]
                        best[v] = min(walls)
                        p = {"mechanism": mech, "format": fmt, "n": n, "version": v,
                             "revision": args.baseline if v == "baseline" else "checked out",
                             "repeats": repeats, "median_s": statistics.median(walls),
                             "cpu_s": min(g["cpu"] for g in got[v]),
                             "file_bytes": path.stat().st_size}
                        res.add(p, "read_s", best[v], "s")
                        res.add(p, "read_throughput", n / best[v], "reports/s")
                    print(" | ".join(reader_row(res.points[-2 * len(versions):], "baseline"
                                                in versions)), flush=True)
                    path.unlink()
                    if fmt == "csv":
                        Path(str(path) + ".meta.json").unlink(missing_ok=True)
        if args.baseline and args.service_runs > 0 and not args.quick:
            rates: dict[str, list[float]] = {v: [] for v in versions}
            for r in range(args.service_runs):
                for v in (versions if r % 2 == 0 else versions[::-1]):
                    rates[v].append(service_run(srcs[v], work, args.service_seconds))
                    print(f"service {v}: {rates[v][-1]:,.0f} reports/s", flush=True)
            for v in versions:
                p = {"version": v, "revision": args.baseline if v == "baseline" else "checked out",
                     "runs": rates[v], "seconds": args.service_seconds, "clients": 8, "batch": 100,
                     "database": "sqlite"}
                res.add(p, "service_batch_throughput_median", statistics.median(rates[v]),
                        "reports/s")
                service_rows.append([v, ", ".join(f"{x:,.0f}" for x in rates[v]),
                                     f"{statistics.median(rates[v]):,.0f}"])
    text = [
        "# Reading a reports file, and the service's batch ingest",
        "",
        "`read_reports` (parse, decode every cell with `reports_io.decode_column`, "
        "`validate_reports`, the protocol's check) on files written by `write_reports`: 15 "
        "attributes of 2 to 8 categories, 20 % missing, whole-record epsilon = 5. Best wall time "
        "and best CPU time (of the reading process) of the repeats, each read in a fresh "
        "process; on a busy machine the CPU time is the steadier figure"
        + (f"; the same tree with the decoder's modules ({', '.join(args.baseline_paths)}) of "
           f"`{args.baseline}` read the same files in alternation with it (same load)."
           if args.baseline else "."),
        "",
        reader_table(res.points, args.baseline),
    ]
    if service_rows:
        text += [
            "",
            "## The service's batch ingest",
            "",
            f"`service_load.py`'s batch phase ({args.service_seconds:g} s, 8 clients, batches of "
            "100 reports of the subset mechanism, SQLite), one server per run, the two versions "
            "in alternation. The service decodes with the same `decode_column`.",
            "",
            md_table(["version", "runs (reports/s)", "median"], service_rows),
            "",
            service_verdict(rates),
        ]
    text += [
        "",
        "Timings were taken on a machine shared with other work: the load average at the start "
        "and the end of the run is below; alternation gives both versions the same load, but "
        "the absolute figures are not those of an idle machine.",
    ]
    res.write(text, echo=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
