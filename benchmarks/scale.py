#!/usr/bin/env python
"""Scale: counting throughput on one machine and on Dask, memory high-water marks, the counting
kernel against a bare GEMM, the 200-attribute fit, and a projection to 10^8 and 10^9 reports.

Every estimator of reidrisk.collect reads the reports only through their count tables, which are
sums over reports (``PairCounts``: B^T B, P^T P, n), so the cost of a collection is one pass of
counting (linear in n, bounded memory) plus a fit from the counts (independent of n but for the EM
steps). Measured here, with one BLAS thread everywhere:

1. Counting kernel (``pair_counts``) against a bare float32 ``B.T @ B`` of the same one-hot
   matrix B (built densely beforehand, not timed), on the two shapes of the scale issue:
   10^6 reports x 131 categories (19 attributes) and 10^5 x 1,504 (188 attributes of 8 values),
   for GRR, subset, OUE and a mix of GRR/subset/OUE/RAPPOR, 20% missing values. CPU seconds of
   this process (``time.process_time``, best of ``--repeats``): on a shared machine wall time grows
   with the other work while CPU time of a one-thread call hardly does; the ratio of the two CPU
   times is the figure of merit (target <= 2).
2. Throughput (reports/s) and peak resident memory of counting partitioned Parquet reports
   (``benchmarks/scale_memory.py``: GRR, 30 attributes, F = 268, 10% missing, partitions of 10^6
   rows): the chunked single-machine reader (``count_reports``) and Dask (``count_dask``) on a
   ``LocalCluster`` of 1 and 2 one-thread worker processes (timed once the cluster is up: its
   start and stop are not counted; peak: the largest worker's), each step in a fresh process so
   its peak resident set (``VmHWM``) is its own. At 10^6 reports there is one partition, so the second worker
   has nothing to do.
3. The collect fit at 10^5 people x 200 attributes (domain sizes 2..11, latent-Gaussian
   population, m = 0.5 MCAR, epsilon = 5, the planned protocol ``Protocol.planned``):
   ``CollectPipeline().fit`` wall and CPU seconds, and the counting's share.
4. EM steps at 10^6 x 20 (same population type and protocol): the largest number of steps of the
   marginal and pair EMs and how many fits reached ``max_iter``.
5. Projection: the per-report cost of the largest measured n times 10^8 and 10^9 reports
   (counting is one pass; the fit from the counts is added as measured), peak memory as measured
   (bounded: one chunk plus the F x F tables), and the Parquet bytes per report times n.

Run from the repository root (``make bench-scale``)::

    .venv/bin/python benchmarks/scale.py            # full: 10^6 and 10^7 reports (< 10 min idle)
    .venv/bin/python benchmarks/scale.py --quick    # 10^5 and 10^6, smaller kernel shapes (< 2 min)

The full run writes docs/results/scale.{json,md}; ``--quick`` writes into a temporary folder
unless ``--out-dir`` is given.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import scale_memory  # noqa: E402
from _harness import Results, md_table  # noqa: E402

KERNEL_KINDS = ("grr", "subset", "oue", "mix")
SHAPE_A = [6, 8, 5, 9, 9, 7, 9, 6, 5, 2, 3, 3, 7, 8, 2, 12, 10, 10, 10]  # F = 131
SHAPE_B = [8] * 188  # F = 1,504
PROJECT = (10**8, 10**9)
ROWS_PER_PARTITION = 1_000_000


# ---- 1. kernel against a bare GEMM -------------------------------------------------------------
def _kernel_reports(n: int, sizes, kind: str, seed: int = 0):
    from reidrisk.mechanisms import GRR, OUE, ORappor, RecordReports, Subset
    from reidrisk.schema import MISSING, Attribute, Schema

    rng = np.random.default_rng(seed)
    schema = Schema(tuple(Attribute(f"a{j}", tuple(str(v) for v in range(f)))
                          for j, f in enumerate(sizes)))
    kinds = {"grr": GRR, "subset": Subset, "oue": OUE, "rappor": ORappor}
    order = ("grr", "subset", "oue", "rappor")
    mechs = tuple(kinds[kind if kind != "mix" else order[j % 4]](1.0, f)
                  for j, f in enumerate(sizes))
    reps = []
    for j, m in enumerate(mechs):
        x = rng.integers(0, sizes[j], n).astype(np.int32)
        x[rng.random(n) < 0.2] = MISSING
        reps.append(m.perturb(x, rng))
    return RecordReports(schema, mechs, tuple(reps))


def _cpu_best(fn, repeats: int) -> tuple[float, float, object]:
    best_cpu, best_wall, out = np.inf, np.inf, None
    for _ in range(repeats):
        c, t = time.process_time(), time.perf_counter()
        out = fn()
        best_cpu = min(best_cpu, time.process_time() - c)
        best_wall = min(best_wall, time.perf_counter() - t)
    return best_cpu, best_wall, out


def _bare_gemm(rr, repeats: int):
    """(CPU s, wall s, G) of ``B.T @ B`` for the dense float32 one-hot matrix B of the reports
    (built before timing and freed after)."""
    import scipy.sparse as sp

    B = np.hstack([np.asarray(s.toarray() if sp.issparse(s) else s) != 0
                   for s in rr.supports()]).astype(np.float32)
    return _cpu_best(lambda: B.T @ B, repeats)


def kernel_part(res: Results, shapes, repeats: int) -> list:
    from reidrisk.estimation import pair_counts

    rows = []
    for label, n, sizes in shapes:
        for kind in KERNEL_KINDS:
            rr = _kernel_reports(n, sizes, kind)
            bare_cpu, bare_wall, G = _bare_gemm(rr, repeats)
            kern_cpu, kern_wall, pc = _cpu_best(lambda: pair_counts(rr), repeats)  # noqa: B023
            exact = bool(np.array_equal(pc.gram, np.rint(G).astype(np.int64)))
            params = {"shape": label, "n": n, "F": int(sum(sizes)), "g": len(sizes),
                      "mechanism": kind, "missing": 0.2, "dense_path": pc.dense,
                      "repeats": repeats, "equal_counts": exact}
            res.add({**params, "wall_s": bare_wall}, "bare_gemm_cpu_s", bare_cpu, "s")
            res.add({**params, "wall_s": kern_wall}, "pair_counts_cpu_s", kern_cpu, "s")
            res.add(params, "kernel_over_gemm", kern_cpu / bare_cpu, "ratio")
            rows.append((label, kind, f"{bare_cpu:.3f}", f"{kern_cpu:.3f}",
                         f"{kern_cpu / bare_cpu:.2f}", "yes" if exact else "NO",
                         kern_cpu / bare_cpu))
            print(f"kernel {label} {kind}: bare {bare_cpu:.3f} s, pair_counts {kern_cpu:.3f} s "
                  f"({kern_cpu / bare_cpu:.2f}x), equal {exact}", flush=True)
    return rows


# ---- 2. reader and Dask throughput, memory ----------------------------------------------------
def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


def throughput_part(res: Results, sizes_n, g: int, workdir: Path) -> dict:
    out: dict = {}
    for n in sizes_n:
        d = workdir / f"grr_{n}"
        shutil.rmtree(d, ignore_errors=True)
        sim = scale_memory.make_grr(d, n=n, g=g, rows_per_partition=min(n, ROWS_PER_PARTITION))
        disk = _dir_bytes(d)
        res.add({"n": n, "g": g, "F": sim["categories"]}, "parquet_bytes_per_report",
                disk / n, "B")
        print(f"simulated {n:,} x {g} in {sim['seconds']:.1f} s ({disk / n:.1f} B/report)",
              flush=True)
        for step, label in (("count", "chunked reader, 1 process"),
                            ("count-dask-1", "Dask, 1 worker"), ("count-dask-2", "Dask, 2 workers")):
            m = scale_memory.measure(step, d, n=n, g=g)
            peak = m.get("worker_peak_rss_bytes", m["peak_rss_bytes"])
            params = {"n": n, "g": g, "F": m["categories"], "path": label,
                      "load_average": m["load_average"]}
            res.add(params, "count_seconds", m["seconds"], "s")
            res.add(params, "reports_per_s", n / m["seconds"], "reports/s")
            res.add(params, "peak_rss_bytes", peak, "B")
            if "worker_peak_rss_bytes" in m:
                res.add(params, "client_peak_rss_bytes", m["peak_rss_bytes"], "B")
            out[(n, label)] = (m["seconds"], peak, disk / n)
            print(f"{label} n={n:,}: {m['seconds']:.1f} s, {n / m['seconds']:,.0f} reports/s, "
                  f"peak {peak / 2**20:.0f} MiB (load {m['load_average'][0]:.1f})", flush=True)
        shutil.rmtree(d, ignore_errors=True)
    return out


# ---- 3./4. fits ----------------------------------------------------------------------------------
def _collect_reports(n: int, g: int, seed: int = 1):
    from reidrisk.collect.protocol import Protocol
    from reidrisk.data.missing import mcar
    from reidrisk.data.synthetic import make_population

    sizes = [int(f) for f in np.random.default_rng(seed).integers(2, 12, g)]
    pop = make_population(n, sizes, 0.5, 7, "random", "random")
    rng = np.random.default_rng(3)
    protocol = Protocol.planned(pop.schema, 5.0, n=n, missing_rate=0.5)
    return protocol.randomize(pop.schema, mcar(pop.codes, 0.5, rng), rng), protocol, sizes


def fit_part(res: Results, n: int, g: int) -> dict:
    from reidrisk.collect.pipeline import CollectPipeline
    from reidrisk.estimation import pair_counts

    rr, protocol, sizes = _collect_reports(n, g)
    k = protocol.attributes_for(g)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c, t = time.process_time(), time.perf_counter()
        model = CollectPipeline().fit(rr)
        cpu, wall = time.process_time() - c, time.perf_counter() - t
    count_cpu, count_wall, _ = _cpu_best(lambda: pair_counts(rr), 1)
    params = {"n": n, "g": g, "F": sum(sizes), "pairs": g * (g - 1) // 2,
              "attributes_per_person": k, "epsilon": 5.0, "missing": 0.5,
              "fallback": model.fallback, "load_average": list(os.getloadavg())}
    res.add({**params, "cpu_s": cpu}, "fit_seconds", wall, "s")
    res.add({**params, "wall_s": count_wall}, "count_cpu_seconds", count_cpu, "s")
    m_it = list(model.report.marginal_iterations)
    p_it = list(model.report.pair_iterations.values()) or [0]
    cap = model.report.settings["max_iter"]
    res.add(params, "max_marginal_em_steps", max(m_it), "steps")
    res.add(params, "max_pair_em_steps", max(p_it), "steps")
    res.add(params, "fits_at_max_iter", sum(i >= cap for i in m_it + p_it), "fits")
    print(f"fit {n:,} x {g}: {wall:.1f} s wall, {cpu:.1f} s CPU (counting {count_cpu:.1f} s CPU); "
          f"EM steps: marginal max {max(m_it)}, pair max {max(p_it)}", flush=True)
    return {"wall": wall, "cpu": cpu, "count_cpu": count_cpu, "k": k, "m_it": max(m_it),
            "p_it": max(p_it), "capped": sum(i >= cap for i in m_it + p_it),
            "fallback": model.fallback, "F": sum(sizes)}


# ---- report --------------------------------------------------------------------------------------
def _mib(b: float) -> str:
    return f"{b / 2**20:,.0f} MiB"


def _human_s(s: float) -> str:
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes (< 2 min)")
    ap.add_argument("--out-dir", type=Path, default=None)
    ap.add_argument("--repeats", type=int, default=None)
    args = ap.parse_args(argv)
    out_dir = args.out_dir or (Path(tempfile.mkdtemp(prefix="scale-")) if args.quick else None)
    res = Results("scale", packages=["pyarrow", "dask", "distributed"], results_dir=out_dir)
    repeats = args.repeats or (1 if args.quick else 2)
    div = 10 if args.quick else 1
    shapes = [(f"{10**6 // div:,} x 131", 10**6 // div, SHAPE_A),
              (f"{10**5 // div:,} x 1,504", 10**5 // div, SHAPE_B)]
    sizes_n = (10**5, 10**6) if args.quick else (10**6, 10**7)
    g_read = 30
    em_n = 10**5 if args.quick else 10**6

    kern_rows = kernel_part(res, shapes, repeats)
    fit200 = fit_part(res, 10**5, 200)
    em20 = fit_part(res, em_n, 20)
    work = Path(tempfile.mkdtemp(prefix="scale-data-"))
    try:
        thr = throughput_part(res, sizes_n, g_read, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    # projection from the largest n: counting is linear in n, memory bounded, the fit from the
    # counts is added as measured (its EM steps grow with log n at most; table 4)
    big = max(sizes_n)
    proj_rows = []
    for label in ("chunked reader, 1 process", "Dask, 1 worker", "Dask, 2 workers"):
        sec, peak, bpr = thr[(big, label)]
        per = sec / big
        res.add({"path": label, "from_n": big}, "seconds_per_report", per, "s")
        for N in PROJECT:
            t = per * N + fit200["wall"]
            res.add({"path": label, "n": N, "from_n": big, "fit_s_added": fit200["wall"]},
                    "projected_seconds", t, "s")
            res.add({"path": label, "n": N, "from_n": big}, "projected_parquet_bytes", bpr * N,
                    "B")
            proj_rows.append((label, f"{N:.0e}".replace("e+0", "e"), f"{per * 1e6:.2f} us",
                              _human_s(t), _mib(peak), f"{bpr * N / 2**30:,.1f} GiB"))

    over = [f"{r[0]} {r[1]} ({r[4]}x)" for r in kern_rows if r[6] > 2.0]
    worst = max(kern_rows, key=lambda r: r[6])
    reader = thr[(big, "chunked reader, 1 process")][0]
    dask2 = thr[(big, "Dask, 2 workers")][0]
    checks = [
        ("counting kernel within 2x of a bare float32 GEMM (CPU time, every shape and mechanism)",
         "met" if not over else "not met: " + ", ".join(over),
         f"largest ratio {worst[6]:.2f} ({worst[0]}, {worst[1]})"),
        ("counts equal the GEMM's exactly", "met" if all(r[5] == "yes" for r in kern_rows)
         else "NOT MET", f"{len(kern_rows)} cases"),
        ("200 attributes at 10^5 reports fit in <= 10 s", "met" if fit200["wall"] <= 10
         else "not met", f"{fit200['wall']:.1f} s wall (load {res.machine.get('load_avg_start')})"),
        (f"no EM fit at the step cap at {em_n:,} x 20", "met" if em20["capped"] == 0
         else "not met", f"largest: marginals {em20['m_it']}, pairs {em20['p_it']} steps"),
        (f"Dask on 2 workers against the chunked reader at {big:,}", "measured",
         f"{reader / dask2:.2f}x the reader's throughput"),
    ]
    load = res.machine.get("load_avg_start")
    thr_rows = [(f"{n:,}", label, f"{sec:.1f}", f"{n / sec:,.0f}", _mib(peak))
                for (n, label), (sec, peak, _) in sorted(thr.items())]
    body = f"""# Scale: counting at the BLAS limit, on one machine and on Dask

## Summary

{md_table(["check", "result", "measured"], checks, align="lll")}

`benchmarks/scale.py` ({'quick' if args.quick else 'full'} run; the method is in the script's
docstring). Machine below; load average at the start {load} on
{res.machine['usable_cores']} cores: other work ran on this machine during the run, so wall
times are slower and noisier than on an idle machine; kernel ratios are CPU times of the same
process, measured back to back.

## 1. Counting kernel against a bare float32 GEMM (one BLAS thread)

`pair_counts(reports)` (reports in, exact int64 counts out) against `B.T @ B` of the
already-built dense float32 one-hot matrix B (CPU seconds, best of {repeats}; target ratio <= 2;
"equal": the counts equal the GEMM's, integer for integer).

{md_table(["shape (n x F)", "mechanisms", "bare B.T @ B", "pair_counts", "ratio", "equal"],
          [r[:6] for r in kern_rows])}

## 2. Counting throughput and memory (GRR, {g_read} attributes, F = 268, partitioned Parquet)

{md_table(["reports", "path", "seconds", "reports/s", "peak RSS"], thr_rows)}

Partitions hold up to {ROWS_PER_PARTITION:,} rows: at {min(sizes_n):,} reports the data are one
partition, so the second Dask worker is idle and the 2-worker row measures only its overhead;
the speed-up of a second worker is the {big:,} row. Dask times start once the cluster is up (its start and stop are not counted); the
reader's include opening the partitions. Peak RSS of a Dask run is the largest worker's (the
client's is in the JSON); the reader's is its whole process.

## 3. Fit at 10^5 people x 200 attributes (planned protocol, k = {fit200['k']})

`CollectPipeline().fit`: {fit200['wall']:.1f} s wall, {fit200['cpu']:.1f} s CPU (of which
counting {fit200['count_cpu']:.1f} s CPU), 19,900 pairs, fallback "{fit200['fallback']}"
(target <= 10 s).

## 4. EM steps at {em_n:,} people x 20 attributes (planned protocol, k = {em20['k']})

Largest number of EM steps: marginals {em20['m_it']}, pairs {em20['p_it']}; fits that reached
`max_iter` (10,000): {em20['capped']}. Fit {em20['wall']:.1f} s wall.

## 5. Projection to 10^8 and 10^9 reports

Per-report cost of counting at {big:,} reports times n, plus the 200-attribute fit time of
section 3 (the fit reads only the counts); peak memory as measured at {big:,} (bounded by one
chunk and the F x F tables, so it does not grow with n: compare the two sizes in section 2);
Parquet storage at the measured bytes per report.

{md_table(["path", "reports", "cost per report", "projected time", "peak RSS", "Parquet"],
          proj_rows)}
"""
    res.write_json()
    res.write_markdown(body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
