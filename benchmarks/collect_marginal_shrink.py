#!/usr/bin/env python
"""The collect pipeline's marginal shrinkage weight against the core's: a paired comparison of
the default configuration (``reidrisk``, the copula model) on the protocol of
``benchmarks/collect_accuracy.py`` (docs/design/collect.md#evaluation).

Two rules for step 1 of the pipeline's marginal shrinkage (``reidrisk.collect.pipeline``, module
doc, "Marginal shrinkage"; the false-discovery step 2 is the same in both):

* ``--rule pipeline``: the code as it is (the pipeline's positive-part James-Stein weight
  ``max(0, 1 - tr C / ||d||^2)``);
* ``--rule core``: the weight of ``reidrisk.estimation.frequency.shrink_weights`` with the inputs
  ``marginals_from_counts`` gives it (the inversion of the support counts, ``inversion_noise``,
  ``null_departures``), so each marginal equals the core's default estimate of the same counts
  (``_core_shrink_marginals`` below, installed over the pipeline's step for the run).

Each rule is measured by its own run (``--measure PATH`` saves its records);
``--before PATH --after PATH`` pairs two such runs and writes
docs/results/collect_marginal_shrink.{md,json}. Both runs use collect_accuracy's seeds
(``--seed``, default 0), so repetition r of a point has the same missing values, reports and
queries in both, and the same as repetition r of the default method in collect_accuracy.py; a
repetition's value is its mean 3-way Jensen-Shannon divergence (bits) over ``--queries`` random
attribute sets, and the table gives, per dataset and point, the mean over the repetitions before
and after, the mean paired difference (after - before) with its standard error, and the
repetitions where the second rule is closer to the truth.

Points (``--points``): ``m:eps`` pairs, by default the collect_accuracy default point
(m = 0.5, eps = 5), eps = 1 and m = 0; c = 3.

Run from the repository root::

    .venv/bin/python benchmarks/collect_marginal_shrink.py --rule pipeline --measure /tmp/p.pkl
    .venv/bin/python benchmarks/collect_marginal_shrink.py --rule core --measure /tmp/c.pkl
    .venv/bin/python benchmarks/collect_marginal_shrink.py --before /tmp/p.pkl --after /tmp/c.pkl \\
        --label-before "pipeline (JS, tr C)" --label-after "core (shrink_weights)"
    .venv/bin/python benchmarks/collect_marginal_shrink.py --quick   # all three steps, small, temp dir
"""

from __future__ import annotations

import argparse
import math
import os
import pickle
import shlex
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from _harness import Results, md_table

NAME = "collect_marginal_shrink"
DATASETS = ("syn10", "syn100", "adult", "adult10", "communities")
POINTS = ((0.5, 5.0), (0.5, 1.0), (0.0, 5.0))
METHOD = "reidrisk"


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--measure", metavar="PATH", help="measure one rule, save to PATH")
    ap.add_argument("--diagnose", action="store_true",
                    help="each marginal's error under both weights, by domain size (--reps, "
                         "--points, --datasets)")
    ap.add_argument("--rule", choices=("pipeline", "core"), default="pipeline",
                    help="the marginal weight measured by --measure (module doc)")
    ap.add_argument("--before", metavar="PATH", help="records of the old rule (--measure)")
    ap.add_argument("--after", metavar="PATH", help="records of the new rule (--measure)")
    ap.add_argument("--also", metavar="PATH", help="a third run, paired with --before too")
    ap.add_argument("--label-before", default="pipeline", help="name of the --before rule")
    ap.add_argument("--label-after", default="core", help="name of the --after rule")
    ap.add_argument("--label-also", default="also", help="name of the --also rule")
    ap.add_argument("--provenance", default="", help="a paragraph on how the runs were made")
    ap.add_argument("--reps", type=int, default=20, help="repetitions per point (20)")
    ap.add_argument("--queries", type=int, default=2,
                    help="random 3-subsets of attributes per repetition (2, as collect_accuracy)")
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--points", default=",".join(f"{m:g}:{e:g}" for m, e in POINTS),
                    help="comma-separated m:eps pairs")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out-dir", default=None, help="where to write results (default docs/results)")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run into a temporary folder: both rules measured (syn10, m = 0.5, "
                         "eps = 5, 2 repetitions, 1 query, 1 process), then paired")
    args = ap.parse_args(argv)
    args.datasets = [d for d in args.datasets.split(",") if d]
    args.points = [tuple(float(x) for x in p.split(":")) for p in args.points.split(",") if p]
    if args.quick:
        args.datasets, args.points, args.reps, args.queries, args.jobs = ["syn10"], [(0.5, 5.0)], 2, 1, 1
    elif not args.measure and not args.diagnose and not (args.before and args.after):
        ap.error("give --measure PATH, --diagnose, --before PATH and --after PATH, or --quick")
    return args


def _core_shrink_marginals(self, schema, mechs, marginals, tests):
    """The pipeline's step 4 for the marginals with the core's weight (``--rule core``): each
    marginal keeps the share ``shrink_weights`` gives it, from the inputs ``marginals_from_counts``
    gives it; then the pipeline's false-discovery step, unchanged."""
    from reidrisk.collect import pipeline as pl

    margs = list(marginals)
    if not self.marginal_shrink or self.estimator == "raw":
        return margs, [], None, []
    lam = _core_weights(mechs, margs, self._counts,
                        "norm_sub" if self.estimator == "norm_sub" else "em")
    margs = [1.0 / p.size + float(w) * (p - 1.0 / p.size) for p, w in zip(margs, lam)]
    shrink = lam.tolist()
    keep = pl.false_discovery_control(np.asarray(tests.pvalue), method="bh") <= pl.MARGINAL_FDR
    for j in np.flatnonzero(~keep).tolist():
        margs[j] = np.full(mechs[j].k, 1.0 / mechs[j].k)
        shrink[j] = 0.0
    return margs, shrink, keep, []


def _core_weights(mechs, margs, counts, estimator: str) -> np.ndarray:
    """``shrink_weights`` of every marginal with the inputs ``marginals_from_counts`` gives it."""
    from reidrisk.estimation.frequency import (
        inversion_noise,
        invert,
        null_departures,
        shrink_weights,
    )

    lam = np.ones(len(mechs))
    groups: dict[int, list[int]] = {}
    for j, m in enumerate(mechs):
        groups.setdefault(m.k, []).append(j)
    for f, J in groups.items():  # one stack per domain size, as marginals_from_counts
        n = np.array([float(counts.n_present(j)) for j in J])
        p = np.array([float(mechs[j].p_support) for j in J])
        q = np.array([float(mechs[j].q_support) for j in J])
        W = np.stack([counts.counts(j).astype(np.float64) for j in J])
        inv = invert(W, n, p, q) / n[:, None]
        trace = np.array([inversion_noise(nj, mechs[j]) for nj, j in zip(n, J)])
        null = null_departures(p - q, q, 1.0, 0.0, f, 1, n, estimator)
        lam[J] = shrink_weights(np.stack([margs[j] for j in J]), inv, trace, null)
    return lam


def _install_core_rule() -> None:
    """``--rule core``: the pipeline's marginal step becomes ``_core_shrink_marginals`` (which
    reads the counts ``_estimate`` was given)."""
    from reidrisk.collect.pipeline import CollectPipeline

    estimate = CollectPipeline._estimate

    def _estimate(self, schema, mechs, counts, rr):
        self._counts = counts
        return estimate(self, schema, mechs, counts, rr)

    CollectPipeline._estimate = _estimate
    CollectPipeline._shrink_marginals = _core_shrink_marginals


def measure(args) -> None:
    import collect_accuracy as ca
    import reidrisk

    if args.rule == "core":
        _install_core_rule()

    tasks = [ca.Task(ds, m, e, r, (3,), (METHOD,), args.queries, args.seed)
             for ds in args.datasets for m, e in args.points for r in range(args.reps)]
    tasks.sort(key=ca._cost, reverse=True)
    for ds in args.datasets:
        ca._data(ds)  # load in the parent so forked workers share them
    opts = {"blas_threads": 1}
    t0 = time.perf_counter()
    records: list[dict] = []
    if args.jobs <= 1:
        ca._init_worker(opts)
        for t in tasks:
            records += ca.run_task(t)
    else:
        import multiprocessing as mp

        with ProcessPoolExecutor(args.jobs, mp_context=mp.get_context("fork"),
                                 initializer=ca._init_worker, initargs=(opts,)) as pool:
            for out in pool.map(ca.run_task, tasks):
                records += out
    with open(args.measure, "wb") as fh:
        pickle.dump({"records": records, "source": os.path.dirname(reidrisk.__file__),
                     "rule": args.rule, "wall_s": time.perf_counter() - t0, "argv": sys.argv,
                     "load": os.getloadavg()}, fh)
    print(f"{len(records)} records from {reidrisk.__file__} in {time.perf_counter() - t0:.0f} s "
          f"-> {args.measure}")


def diagnose(args) -> None:
    """``--diagnose``: each marginal's error against the true data's under the two weights
    (before the false-discovery step, which is the same in both), by domain size: squared error
    (what the core's weight minimises) and JS divergence in bits (what the tables are scored by).
    The pipeline's marginal EM on reports of the pipeline's default clients (k from
    ``planned_attributes_per_person``), collect_accuracy's missing values."""
    import collect_accuracy as ca
    from reidrisk.collect import Protocol
    from reidrisk.collect import pipeline as pl
    from reidrisk.collect.report import js_bits, planned_attributes_per_person
    from reidrisk.data.missing import mcar
    from reidrisk.estimation.frequency import shrink_weight
    from reidrisk.estimation.pairs import pair_counts

    res = Results(NAME + "_diagnosis", packages=["pandas"], results_dir=args.out_dir)
    rows = []
    for ds in args.datasets:
        schema, codes = ca.load_dataset(ds)
        n, g = codes.shape
        truth = [np.bincount(codes[codes[:, j] >= 0, j], minlength=f) / np.sum(codes[:, j] >= 0)
                 for j, f in enumerate(schema.sizes)]
        for m, eps in args.points:
            k = planned_attributes_per_person(schema.sizes, eps, n)
            err: dict = {}
            for r in range(args.reps):
                obs = mcar(codes, m, np.random.default_rng(ca._seed(args.seed, "missing", ds, m, r)))
                rr = Protocol(eps, attributes_per_person=k).randomize(
                    schema, obs, rng=np.random.default_rng(ca._seed(args.seed, "diag", ds, m, eps, r)))
                pipe = pl.CollectPipeline()
                counts = pair_counts(rr)
                mechs = rr.mechanisms
                margs, _ = pl._as_marginals(pipe._marginal_estimates(schema, mechs, counts, rr),
                                            counts)
                second = [pl._second_moment(counts.block(j, j), counts.n_present(j), mm)
                          for j, mm in enumerate(mechs)]
                tests = pl._test_marginals(mechs, counts, second, 0.05)
                core = _core_weights(mechs, margs, counts, "em")
                for j, p in enumerate(margs):
                    f = p.size
                    own = shrink_weight(tests.departure[j], tests.noise[j])
                    for rule, lam in (("pipeline", own), ("core", float(core[j]))):
                        est = 1.0 / f + lam * (p - 1.0 / f)
                        e = err.setdefault((f, rule), {"sq": [], "js": []})
                        e["sq"].append(float(np.sum((est - truth[j]) ** 2)))
                        e["js"].append(float(js_bits(truth[j], est)))
            for f in sorted({f for f, _ in err}):
                a, b = err[(f, "pipeline")], err[(f, "core")]
                cells = []
                for loss in ("sq", "js"):
                    x, y = np.array(a[loss]), np.array(b[loss])
                    d = y - x
                    se = float(d.std(ddof=1) / math.sqrt(len(d))) if len(d) > 1 else math.nan
                    params = {"dataset": ds, "m": m, "eps": eps, "k": k, "f": f,
                              "marginals": len(d), "loss": loss}
                    res.add(params, "pipeline", float(x.mean()), "bits" if loss == "js" else "")
                    res.add(params, "core", float(y.mean()), "bits" if loss == "js" else "")
                    res.add(params, "diff_se", se, "bits" if loss == "js" else "")
                    cells += [f"{x.mean():.5f}", f"{y.mean():.5f}",
                              f"{d.mean() / x.mean():+.0%} ({d.mean() / se:+.1f} se)"]
                rows.append([ds, f"{m:g}", f"{eps:g}", k, f, len(err[(f, "core")]["sq"])] + cells)
    head = ["dataset", "m", "ε", "k", "values", "marginals", "sq. error: pipeline", "core",
            "core vs pipeline", "JS (bits): pipeline", "core", "core vs pipeline"]
    body = [f"# {NAME}_diagnosis", "",
            "Each marginal's error against the true data's under the pipeline's weight and the "
            "core's (`shrink_weights`), before the false-discovery step (the same in both), by "
            "domain size; marginals x repetitions per row, paired (difference in standard errors "
            "of the paired mean). The core's weight minimises the squared error; the tables of "
            "collect_marginal_shrink.md are scored by JS divergence.", "",
            md_table(head, rows), "", f"Command: `{shlex.join(sys.argv)}`."]
    res.write("\n".join(body), echo=True)


def _per_rep(records: list[dict]) -> dict:
    """{(dataset, m, eps): {rep: mean JS over the queries}}."""
    out: dict = {}
    for r in records:
        if r["method"] != METHOD or r["c"] != 3:
            continue
        out.setdefault((r["dataset"], float(r["m"]), float(r["eps"])), {}).setdefault(
            r["rep"], []).append(r["js"])
    return {k: {rep: float(np.mean(v)) for rep, v in d.items()} for k, d in out.items()}


def _paired(res: Results, before: dict, after: dict, label: str, queries: int):
    """Rows of the paired table of ``after`` against ``before`` (records by ``_per_rep``), the
    points added to ``res`` (``rule``: ``label``), and the points worse beyond 2 se."""
    rows, worse = [], []
    keys = sorted(set(after) & set(before),
                  key=lambda k: (DATASETS.index(k[0]) if k[0] in DATASETS else 99, -k[1], -k[2]))
    for key in keys:
        reps = sorted(set(after[key]) & set(before[key]))
        x = np.array([before[key][r] for r in reps])
        y = np.array([after[key][r] for r in reps])
        d = y - x
        se = float(d.std(ddof=1) / math.sqrt(len(d))) if len(d) > 1 else math.nan
        wins, ties = int(np.sum(d < 0)), int(np.sum(d == 0))
        ds, m, eps = key
        params = {"dataset": ds, "m": m, "eps": eps, "c": 3, "reps": len(reps),
                  "queries": queries, "rule": label}
        for metric, value, unit in (("js_before", x.mean(), "bits"), ("js_after", y.mean(), "bits"),
                                    ("diff", d.mean(), "bits"), ("diff_se", se, "bits"),
                                    ("wins", wins, "reps"), ("ties", ties, "reps")):
            res.add(params, metric, float(value), unit)
        beyond = bool(d.mean() > 2 * se)
        if beyond:
            worse.append(key)
        rows.append([ds, f"{m:g}", f"{eps:g}", len(reps), f"{x.mean():.4f}", f"{y.mean():.4f}",
                     f"{d.mean():+.5f} ± {se:.5f}" + (" **worse**" if beyond else ""),
                     f"{d.mean() / x.mean():+.1%}", f"{wins} / {len(reps) - ties}"])
    return rows, worse


def compare(args) -> None:
    runs = {}
    for name in ("before", "after", "also"):
        path = getattr(args, name)
        if path:
            with open(path, "rb") as fh:
                runs[name] = pickle.load(fh)
    b = _per_rep(runs["before"]["records"])
    res = Results(NAME, packages=["pandas"], results_dir=args.out_dir)
    body = [
        f"# {NAME}",
        "",
        "The collect pipeline's default (`CollectPipeline()`, copula model): mean 3-way JS "
        "divergence (bits) from the true table with two weights for step 1 of its marginal "
        "shrinkage (the false-discovery step 2 is the same), paired: the same truths, missing "
        "values, reports and queries (collect_accuracy's seeds, so repetition r is repetition r "
        f"of the default method there). {args.queries} random 3-way queries per repetition; "
        "*wins*: repetitions where the second rule is closer to the truth, of those where the two "
        "differ (the rest are ties, e.g. every marginal set to uniform by the false-discovery "
        "step).",
        "",
    ]
    head = ["dataset", "m", "ε", "reps", args.label_before, args.label_after,
            "second − first ± se", "relative", "wins"]
    for name, label in (("after", args.label_after), ("also", args.label_also)):
        if name not in runs:
            continue
        rows, worse = _paired(res, b, _per_rep(runs[name]["records"]), label, args.queries)
        head[5] = label
        body += [f"## {args.label_before} against {label}", "", md_table(head, rows), ""]
        body.append(("Points where it is worse than the pipeline's own rule beyond noise "
                     "(difference > 2 se): "
                     + ", ".join(f"{k[0]} m = {k[1]:g} ε = {k[2]:g}" for k in worse) + ".")
                    if worse else "No point where it is worse beyond noise (difference > 2 se).")
        body.append("")
    if args.provenance:
        body += [args.provenance, ""]
    body += ["Runs (wall time, load average at the end of the run, on the machine below):", ""]
    body += [f"- {name}: `{' '.join(r['argv'])}` ({r['source']}, rule "
             f"{r.get('rule', 'as installed')}): {r['wall_s']:.0f} s, load "
             + (" / ".join(f"{x:.1f}" for x in r["load"]) if "load" in r else "not recorded")
             for name, r in runs.items()]
    argv = [a if not (i and sys.argv[i - 1] == "--provenance") else "<the paragraph above>"
            for i, a in enumerate(sys.argv)]
    body += ["", f"Rendered with `{shlex.join(argv)}`."]
    res.write("\n".join(body), echo=True)


def quick(args) -> None:
    """``--quick``: ``--measure`` with each rule (the pipeline's first: ``--rule core`` patches the
    pipeline for the rest of the process), then the paired table, all in a temporary folder."""
    tmp = tempfile.mkdtemp(prefix=NAME + "_")
    args.out_dir = args.out_dir or tmp
    for rule, side in (("pipeline", "before"), ("core", "after")):
        args.rule, args.measure = rule, os.path.join(tmp, f"{rule}.pkl")
        measure(args)
        setattr(args, side, args.measure)
    args.label_before, args.label_after = "pipeline (JS, tr C)", "core (shrink_weights)"
    compare(args)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.quick:
        quick(args)
    elif args.diagnose:
        diagnose(args)
    elif args.measure:
        measure(args)
    else:
        compare(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
