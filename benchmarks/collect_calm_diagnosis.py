#!/usr/bin/env python
"""Where CALM beats reidrisk's default, which part of CALM does it: its 1-way marginals, its
dependence, its frequency oracle on joint domains, or its consistency step.

At the points where collect_accuracy.md shows CALM ahead (m = 0, epsilon = 5 on the synthetic
tables), each repetition removes nothing (m = 0), randomizes the data once per client protocol and
scores c-way tables (c = 1, 2, 3; ``--queries`` random attribute sets, the same for every variant)
by the Jensen-Shannon divergence in bits against the true table:

* ``reidrisk``: the default configuration (as in collect_accuracy);
* ``calm``: CALM as in collect_accuracy (design planned for m = 0.5, GRR or OLH by variance);
* ``calm_olh``: the same design with OLH only (the frequency oracle's share);
* ``calm_no_consistency``: Norm-Sub alone, no consistency step (the consistency step's share);
* ``calm_product``: the product of CALM's 1-way marginals (CALM without any dependence: if this
  beats reidrisk at c = 3, CALM wins on the marginals, not on the dependence);
* ``reidrisk_product``: the product of reidrisk's 1-way marginals (the same for reidrisk);
* ``calm_m0``: CALM with its design planned for complete records (collect_accuracy's "CALM
  (planned for m = 0)"), and ``calm_m0_product`` the product of its 1-way marginals.

Run from the repository root::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/collect_calm_diagnosis.py [--quick]

Writes docs/results/collect_calm_diagnosis.{json,md}.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import Results, md_table  # noqa: E402

NAME = "collect_calm_diagnosis"
VARIANTS = ("reidrisk", "calm", "calm_olh", "calm_no_consistency", "calm_product",
            "reidrisk_product", "calm_m0", "calm_m0_product")


def _calm_variant(key: str):
    from reidrisk.collect.baselines.calm import CALM, _norm_sub
    from reidrisk.collect.report import PLANNING_MISSING_RATE

    class NoConsistency(CALM):
        def _post_process(self, raw):
            return [_norm_sub(np.asarray(t, dtype=np.float64)) for t in raw]

    if key == "calm_olh":
        return CALM(oracle="olh", missing_rate=PLANNING_MISSING_RATE)
    if key == "calm_no_consistency":
        return NoConsistency(missing_rate=PLANNING_MISSING_RATE)
    if key == "calm_m0":
        return CALM()
    return CALM(missing_rate=PLANNING_MISSING_RATE)


def run(dataset: str, m: float, eps: float, reps: int, queries: int, seed: int) -> list[dict]:
    import collect_accuracy as ca
    from reidrisk.collect.baselines import product_table
    from reidrisk.collect.report import js_bits, method_specs, planned_k, run_method
    from reidrisk.data.missing import mcar
    from reidrisk.data.tables import contingency

    schema, codes = ca.load_dataset(dataset)
    n, g = codes.shape
    k = planned_k(schema.sizes, eps, n)
    spec = method_specs(["reidrisk"])[0]
    out = []
    for r in range(reps):
        rng = np.random.default_rng([seed, r, int(1000 * m)])
        observed = mcar(codes, m, rng) if m > 0 else codes.copy()
        qs = {c: [sorted(int(j) for j in rng.choice(g, c, replace=False)) for _ in range(queries)]
              for c in (1, 2, 3)}
        fitted = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitted["reidrisk"], _ = run_method(spec, schema, codes, observed, eps, rng, k)
            calm_reports = None
            for key in ("calm", "calm_olh", "calm_no_consistency", "calm_m0"):
                meth = _calm_variant(key)
                if key in ("calm_olh", "calm_m0"):
                    rep_ = meth.protocol(eps).randomize(schema, observed, rng)
                else:  # the same reports for the two variants that differ only on the server
                    if calm_reports is None:
                        calm_reports = meth.protocol(eps).randomize(schema, observed, rng)
                    rep_ = calm_reports
                fitted[key] = meth.fit(rep_)
        for c, cols_list in qs.items():
            for cols in cols_list:
                truth = contingency(codes, schema.sizes, cols)
                tabs = {key: fitted[key].table(cols) for key in fitted}
                for base in ("calm", "reidrisk", "calm_m0"):
                    margs = {j: fitted[base].table([j]) for j in cols}
                    tabs[f"{base}_product"] = product_table(margs, cols)
                for key, t in tabs.items():
                    out.append(dict(dataset=dataset, m=m, eps=eps, rep=r, c=c, cols=cols,
                                    variant=key, js=js_bits(truth, t)))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default="syn10,syn100")
    ap.add_argument("--m", type=float, default=0.0)
    ap.add_argument("--eps", type=float, default=5.0)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--queries", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="2 repetitions into a temporary folder")
    ap.add_argument("--out-dir", default=None)
    args = ap.parse_args(argv)
    if args.quick:
        args.reps = 2
        args.out_dir = args.out_dir or tempfile.mkdtemp(prefix=NAME + "_")
    import pandas as pd

    res = Results(NAME, packages=["pandas"], results_dir=args.out_dir)
    res.results_dir.mkdir(parents=True, exist_ok=True)
    recs = []
    for ds in args.datasets.split(","):
        recs += run(ds, args.m, args.eps, args.reps, args.queries, args.seed)
    df = pd.DataFrame(recs)
    per_rep = df.groupby(["dataset", "c", "variant", "rep"], as_index=False).js.mean()
    agg = per_rep.groupby(["dataset", "c", "variant"]).js.agg(["mean", "std", "size"]).reset_index()
    for r in agg.itertuples():
        params = {"dataset": r.dataset, "m": args.m, "epsilon": args.eps, "c": int(r.c),
                  "variant": r.variant, "reps": int(r.size), "queries": args.queries}
        res.add(params, "js_mean", float(r.mean), "bits")
        res.add(params, "js_sd", float(r.std), "bits")
    body = ["# Where CALM beats reidrisk: which part of CALM does it", "",
            __doc__.split("\n\n")[1].replace("\n", " "), "",
            __doc__.split("\n\n")[2].strip(), "",
            f"Settings: m = {args.m:g}, ε = {args.eps:g}, {args.reps} repetitions, "
            f"{args.queries} random attribute sets per c and repetition. JS divergence in bits, "
            "mean ± sd over repetitions.", ""]
    for ds in args.datasets.split(","):
        rows = []
        for v in VARIANTS:
            row = [v]
            for c in (1, 2, 3):
                s = agg[(agg.dataset == ds) & (agg.c == c) & (agg.variant == v)]
                row.append(f"{float(s['mean'].iloc[0]):.4f} ± {float(s['std'].iloc[0]):.4f}"
                           if len(s) else "-")
            rows.append(row)
        body += [f"## {ds}", "", md_table(["variant", "c = 1", "c = 2", "c = 3"], rows), ""]
    res.write(body, echo=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
