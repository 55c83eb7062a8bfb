"""The exact copula table's cost against the shape's estimate that decides the default.

``reidrisk collect table`` and ``GET /surveys/{id}/table`` estimate an exact table of c >= 3
attributes as cells x c x ``EXACT_SECONDS_PER_CELL`` (``reidrisk.collect.model_io.
exact_table_seconds``) before any work, and then compute it in timed chunks
(``exact_copula_table``) that measure the model's own rate. This script measures that rate: for
c = 3..8 attributes (domain sizes chosen so that each table has 1,000-4,100 cells), populations
of 20,000 records from a one-factor Gaussian model with weak (factor loading 0.3) and strong
(0.9) dependence, cut into equal-width values, collected by the default protocol at a large budget
(so the fitted copula carries the population's dependence), the copula fitted by
``CollectPipeline()``; then the whole table timed once (wall clock) and compared with the estimate.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/exact_table_cost.py [--quick]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import Results, md_table  # noqa: E402
from reidrisk.collect import CollectPipeline  # noqa: E402
from reidrisk.collect.model_io import (  # noqa: E402
    EXACT_SECONDS_PER_CELL,
    exact_copula_table,
    exact_table_seconds,
)
from reidrisk.collect.protocol import Protocol  # noqa: E402
from reidrisk.collect.reports_io import CollectedReports  # noqa: E402
from reidrisk.schema import Attribute, Schema  # noqa: E402

SHAPES = {3: (16, 16, 16), 4: (8, 8, 8, 8), 5: (5, 5, 5, 5, 5), 6: (4, 4, 4, 4, 3, 3),
          7: (3, 3, 3, 3, 3, 3, 3), 8: (3, 3, 3, 3, 2, 2, 2, 2)}
LOADINGS = {"weak": 0.3, "strong": 0.9}
N = 20_000
SEED = 20261124


def fitted_copula(sizes, loading, rng):
    """The copula of ``CollectPipeline()`` fitted on reports of a one-factor population."""
    schema = Schema(tuple(Attribute(f"a{j}", tuple(f"v{i}" for i in range(f)))
                          for j, f in enumerate(sizes)))
    z = loading * rng.standard_normal((N, 1)) + np.sqrt(1 - loading ** 2) * rng.standard_normal(
        (N, len(sizes)))
    codes = np.column_stack([np.clip(((z[:, j] + 2) / 4 * f).astype(int), 0, f - 1)
                             for j, f in enumerate(sizes)]).astype(np.int32)
    protocol = Protocol(8.0 * len(sizes), attributes_per_person=len(sizes))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = CollectPipeline().fit(CollectedReports(protocol.randomize(schema, codes, rng),
                                                       protocol))
    return model.copula


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="c = 3 and 4 only; results under a temporary folder")
    args = ap.parse_args(argv)
    res = Results("exact_table_cost", results_dir=Path(tempfile.mkdtemp()) if args.quick else None)
    rng = np.random.default_rng(SEED)
    rows = []
    shapes = {c: s for c, s in SHAPES.items() if not args.quick or c <= 4}
    for c, sizes in shapes.items():
        for dep, loading in LOADINGS.items():
            copula = fitted_copula(sizes, loading, rng)
            cols = list(range(c))
            t0 = time.perf_counter()
            table = exact_copula_table(copula, cols)
            seconds = time.perf_counter() - t0
            cells = table.size
            est = exact_table_seconds(sizes)
            per = seconds / (cells * c) * 1e6
            pp = {"attributes": c, "sizes": list(sizes), "cells": cells, "dependence": dep,
                  "loading": loading}
            res.add(pp, "seconds", seconds, "s")
            res.add(pp, "estimate_seconds", est, "s")
            res.add(pp, "microseconds_per_cell_and_attribute", per, "us")
            rows.append([c, "x".join(map(str, sizes)), f"{cells:,}", dep, f"{seconds:.2f}",
                         f"{est:.2f}", f"{per:.0f}", f"{seconds / est:.1f}"])
            print(f"c = {c}, {dep}: {cells} cells, {seconds:.2f} s (estimate {est:.2f} s)",
                  flush=True)
    ratios = [float(r[-1]) for r in rows]
    text = [
        "# The exact copula table's cost against the shape's estimate",
        "",
        __doc__.split("\n\n")[1].replace("\n", " "),
        "",
        f"The estimate charges {EXACT_SECONDS_PER_CELL * 1e6:.0f} microseconds per cell and "
        f"attribute. Measured / estimate: {min(ratios):.1f}-{max(ratios):.1f}x over these "
        f"{len(rows)} tables. The timed chunks (`exact_copula_table` with a limit) are what keep "
        "a request within its time where the estimate is low.",
        "",
        md_table(["c", "sizes", "cells", "dependence", "measured (s)", "estimate (s)",
                  "us per cell and attribute", "measured / estimate"], rows),
        "",
    ]
    res.write(text, echo=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
