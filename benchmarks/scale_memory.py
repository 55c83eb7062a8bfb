"""Memory high-water marks and times of the partitioned reports path (reidrisk.collect.partitioned).

Each measurement runs in a fresh Python process, so its peak resident set (``VmHWM`` of that
process, which only grows) is the peak of that step alone. Used by docs/scale.md and callable from
other benchmark scripts::

    from scale_memory import make_grr, make_oue, measure
    make_grr(directory, n=10**7, g=30)        # partitioned Parquet of 10^7 x 30 GRR reports
    measure("count", directory)               # {"seconds", "peak_rss_bytes", "reports", ...}

Steps (``measure(step, directory, ...)``):

* ``count``: ``count_reports`` of the partitions (chunked reader + counting kernel);
* ``count-dask-W``: ``count_dask`` on a LocalCluster of W one-thread worker processes (timed once
  the cluster is up, its start and stop not counted; ``worker_peak_rss_bytes``: the largest
  worker's peak);
* ``oue-packed``: ``OUE.perturb_packed`` of n codes over k values (the packed array in memory);
* ``simulate-grr`` / ``simulate-oue``: writing the partitions (``simulate_partitioned``).

    python benchmarks/scale_memory.py simulate-grr /tmp/grr -n 10000000 -g 30
    python benchmarks/scale_memory.py count /tmp/grr
    python benchmarks/scale_memory.py simulate-oue /tmp/oue -n 10000000 -k 1024
    python benchmarks/scale_memory.py oue-packed /tmp/unused -n 10000000 -k 1024
    python benchmarks/scale_memory.py count /tmp/oue
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

THREADS = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
SIZES = (2, 3, 5, 8, 10, 12, 16, 20)  # cycled over the attributes: F = 268 for g = 30


def _schema(sizes):
    from reidrisk.schema import Attribute, Schema

    return Schema(tuple(Attribute(f"a{j}", tuple(str(v) for v in range(f)))
                        for j, f in enumerate(sizes)))


def _peak() -> int:
    """This process's peak resident set in bytes: ``VmHWM`` of /proc/self/status where there is
    one. Not ``ru_maxrss``: Linux carries it over fork and exec, so a step started by a large
    parent (``scale.py`` after its kernel part) would report the parent's peak instead of its own."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024  # kB
    except OSError:
        pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024  # Linux: KiB


def _run_step(step: str, directory: str, n: int, g: int, k: int, rows: int) -> dict:
    from reidrisk.collect.partitioned import count_reports, simulate_partitioned
    from reidrisk.collect.protocol import Protocol

    t0 = time.perf_counter()
    out: dict = {"step": step, "directory": directory}
    if step == "count":
        counts = count_reports(directory, progress=False)
        out.update(reports=counts.n, categories=int(counts.gram.shape[0]))
    elif step.startswith("count-dask-"):  # count-dask-W: W worker processes of one thread
        from distributed import Client, LocalCluster

        from reidrisk.collect.dask_counts import count_dask

        workers = int(step.rsplit("-", 1)[1])
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            t1 = time.perf_counter()  # the cluster's start and stop are not counted
            counts = count_dask(directory, client=client)
            out["seconds"] = time.perf_counter() - t1
            peaks = client.run(_peak)
        out.update(reports=counts.n, categories=int(counts.gram.shape[0]), workers=workers,
                   worker_peak_rss_bytes=max(peaks.values()))
    elif step == "simulate-grr":
        sizes = [SIZES[j % len(SIZES)] for j in range(g)]
        simulate_partitioned(directory, _schema(sizes), Protocol(float(g), None, "grr"), n,
                             rows_per_partition=rows, missing_rate=0.1, rng=1)
        out.update(reports=n, attributes=g, categories=sum(sizes))
    elif step == "simulate-oue":
        simulate_partitioned(directory, _schema([k]), Protocol(1.0, None, "oue"), n,
                             rows_per_partition=rows, rng=1)
        out.update(reports=n, attributes=1, categories=k)
    elif step == "oue-packed":
        import numpy as np

        from reidrisk.mechanisms.oue import OUE

        x = np.random.default_rng(0).integers(0, k, n).astype(np.int32)
        packed = OUE(1.0, k).perturb_packed(x, rng=1)
        out.update(reports=n, categories=k, packed_bytes=packed.nbytes)
    else:
        raise SystemExit(f"unknown step {step!r}")
    out.setdefault("seconds", time.perf_counter() - t0)
    out["peak_rss_bytes"] = _peak()
    out["load_average"] = list(os.getloadavg())
    return out


def measure(step: str, directory: str | Path, *, n: int = 10**7, g: int = 30, k: int = 1024,
            rows_per_partition: int = 1_000_000) -> dict:
    """Run one step in a fresh process (one BLAS thread) and return its measurements."""
    cmd = [sys.executable, __file__, step, str(directory), "-n", str(n), "-g", str(g),
           "-k", str(k), "--rows", str(rows_per_partition)]
    res = subprocess.run(cmd, check=True, capture_output=True, text=True,
                         env={**os.environ, **THREADS})
    return json.loads(res.stdout.strip().splitlines()[-1])


def make_grr(directory, n: int = 10**7, g: int = 30, rows_per_partition: int = 1_000_000) -> dict:
    return measure("simulate-grr", directory, n=n, g=g, rows_per_partition=rows_per_partition)


def make_oue(directory, n: int = 10**7, k: int = 1024, rows_per_partition: int = 1_000_000) -> dict:
    return measure("simulate-oue", directory, n=n, k=k, rows_per_partition=rows_per_partition)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("step")
    ap.add_argument("directory")
    ap.add_argument("-n", type=int, default=10**7)
    ap.add_argument("-g", type=int, default=30)
    ap.add_argument("-k", type=int, default=1024)
    ap.add_argument("--rows", type=int, default=1_000_000)
    a = ap.parse_args()
    print(json.dumps(_run_step(a.step, a.directory, a.n, a.g, a.k, a.rows)))


if __name__ == "__main__":  # Dask's worker processes import this module
    main()
