#!/usr/bin/env python
"""reidrisk against CALM, paired: the same truth, the same missing values and the same query
attribute sets for every method in each repetition, with as many repetitions as it takes for the
verdict at each point to be more than noise.

Paired design. Repetition r at dataset D and missing rate m removes values completely at random
at rate m (one draw, shared by every method), draws ``--queries`` distinct c-subsets of attributes
(shared) and lets each method's clients randomize what is left under the whole-record budget
epsilon (c = 3, epsilon = 5: collect_accuracy's default point). A method's value in repetition r
is its mean Jensen-Shannon divergence (bits) over the queries against the tables of the true data.
Methods:

* ``reidrisk``: the default configuration, k from ``choose_attributes_per_person`` planned for
  m = 0.5 (``PLANNING_MISSING_RATE``), as in collect_accuracy;
* ``reidrisk_m``: the same with k planned for the data's m (``missing_rate = m``, the knowledge
  CALM's own design is given in ``calm_m``);
* ``calm``: CALM with its design planned for m = 0.5; ``calm_paper``: planned for m = 0 (complete
  records, the paper's assumption); ``calm_m``: planned for the data's m.

A configuration that is the same method as another at a point (``reidrisk_m`` where its k equals
the default's, ``calm_m`` at m = 0 and 0.5) is not fitted twice: it takes the other's values.

Interval. For a comparison A / B the ratio of the mean values over R repetitions,
``rho = mean(a) / mean(b)``, with a 95 % interval from the delta method on ``log rho`` with the
paired covariance, ``var = s_a^2 / (R a^2) + s_b^2 / (R b^2) - 2 s_ab / (R a b)``, and Student's t
with R - 1 degrees of freedom. A point is *decided* when the interval excludes 1 (one method wins
beyond noise) or lies within [0.9, 1.1] (the two are within 10 % of each other). Repetitions are
added in batches of ``--batch`` until every comparison of the point is decided or ``--max-reps``
is reached (sequential: the stopping rule makes the nominal 95 % slightly optimistic; the
repetitions used are reported).

Planner check. On the datasets of ``--kscan-datasets`` at the rates of ``--kscan-m`` (m = 0 and
m = 0.5), the default configuration with every k of ``--kscan-k`` (default 1..min(g, 16); the
planner's k is always added) on paired repetitions: the k that measures best against the k
``choose_attributes_per_person`` picks for that m.

Run from the repository root::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \
        .venv/bin/python benchmarks/collect_calm_paired.py          # full run
    .venv/bin/python benchmarks/collect_calm_paired.py --quick      # smoke run, temporary folder

Writes docs/results/collect_calm_paired.{json,md}; collect_accuracy.py renders its comparison
table into collect_accuracy.md.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import Results, md_table  # noqa: E402

NAME = "collect_calm_paired"
PACKAGES = ["pandas", "tqdm"]
EPS, C = 5.0, 3
M_VALUES = (0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
DATASETS = ("syn10", "syn100", "adult", "adult10", "communities")
METHODS = ("reidrisk", "reidrisk_m", "calm", "calm_paper", "calm_m")
LABEL = {"reidrisk": "reidrisk", "reidrisk_m": "reidrisk (planned for the data's m)",
         "calm": "CALM (planned for m = 0.5)", "calm_paper": "CALM (planned for m = 0)",
         "calm_m": "CALM (planned for the data's m)"}
#: (numerator, denominator) of the compared ratios; the first three decide the stopping rule
COMPARISONS = (("reidrisk", "calm"), ("reidrisk", "calm_paper"), ("reidrisk_m", "calm_m"),
               ("reidrisk_m", "reidrisk"))
DECIDING = COMPARISONS[:3]
MARGIN = 0.10
LEVEL = 0.95


@dataclass(frozen=True)
class Task:
    """One repetition at (dataset, m); ``ks``: a k scan instead of the method comparison."""

    dataset: str
    m: float
    rep: int
    queries: int
    seed: int
    ks: tuple[int, ...] = ()


def _seed(*parts) -> np.random.SeedSequence:
    import zlib

    return np.random.SeedSequence([zlib.crc32(str(p).encode()) for p in parts])


_DATA: dict = {}


def _data(name: str):
    import collect_accuracy as ca

    if name not in _DATA:
        _DATA[name] = ca.load_dataset(name)
    return _DATA[name]


def _init_worker() -> None:
    warnings.simplefilter("ignore")
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except ImportError:
        pass


def run_task(task: Task) -> list[dict]:
    """Fit the methods (or the k scan) of one repetition; one record per (method, query)."""
    from reidrisk.collect.baselines import CALM
    from reidrisk.collect.report import (
        PLANNING_MISSING_RATE,
        js_bits,
        method_specs,
        planned_attributes_per_person,
        run_method,
    )
    from reidrisk.data.missing import mcar
    from reidrisk.data.tables import contingency

    warnings.simplefilter("ignore")
    t_task = time.perf_counter()
    schema, codes = _data(task.dataset)
    n, g = codes.shape
    sizes = schema.sizes
    observed = mcar(codes, task.m, np.random.default_rng(
        _seed(task.seed, "missing", task.dataset, task.m, task.rep)))
    qrng = np.random.default_rng(_seed(task.seed, "queries", task.dataset, task.m, task.rep))
    queries = [sorted(int(j) for j in qrng.choice(g, C, replace=False)) for _ in range(task.queries)]
    truths = [contingency(codes, sizes, q) for q in queries]
    prng = np.random.default_rng(_seed(task.seed, "reports", task.dataset, task.m, task.rep,
                                       bool(task.ks)))
    spec = method_specs(["reidrisk"])[0]
    out: list[dict] = []

    def score(key, method, fit_s, k=None):
        for i, cols in enumerate(queries):
            est = np.asarray(method.table(cols), dtype=np.float64)
            out.append(dict(dataset=task.dataset, m=task.m, rep=task.rep, query=i, method=key,
                            js=js_bits(truths[i], est), fit_s=fit_s, k=k,
                            calm_l=getattr(getattr(method, "design_", None), "l", None),
                            calm_m=getattr(getattr(method, "design_", None), "m", None)))

    if task.ks:
        from reidrisk.estimation.em import EstimationError

        for k in task.ks:
            try:
                method, fit_s = run_method(spec, schema, codes, observed, EPS, prng, k)
            except EstimationError as exc:  # counted and shown, not dropped silently
                out.append(dict(dataset=task.dataset, m=task.m, rep=task.rep, query=-1,
                                method=f"k={k}", js=np.nan, fit_s=np.nan, k=k, calm_l=None,
                                calm_m=None, error=str(exc)))
                continue
            score(f"k={k}", method, fit_s, k)
    else:
        k0 = planned_attributes_per_person(sizes, EPS, n)
        km = planned_attributes_per_person(sizes, EPS, n, missing_rate=task.m)
        method, fit_s = run_method(spec, schema, codes, observed, EPS, prng, k0)
        score("reidrisk", method, fit_s, k0)
        if km != k0:
            method, fit_s = run_method(spec, schema, codes, observed, EPS, prng, km)
        score("reidrisk_m", method, fit_s, km)
        calm_rates = {"calm": PLANNING_MISSING_RATE, "calm_paper": 0.0, "calm_m": task.m}
        fitted: dict[float, tuple] = {}
        for key, rate in calm_rates.items():
            if rate not in fitted:  # the same design rule at the same rate: the same method
                meth = CALM(missing_rate=rate)
                reports = meth.protocol(EPS).randomize(schema, observed, prng)
                t0 = time.perf_counter()
                meth.fit(reports)
                fitted[rate] = (meth, time.perf_counter() - t0)
            score(key, *fitted[rate])
    task_s = time.perf_counter() - t_task
    for rec in out:
        rec["task_s"] = task_s
    return out


def execute(tasks: list[Task], jobs: int, desc: str) -> list[dict]:
    from tqdm.auto import tqdm

    records: list[dict] = []
    bar = tqdm(total=len(tasks), desc=desc, unit="rep", file=sys.stderr)
    if jobs <= 1:
        _init_worker()
        for t in tasks:
            records += run_task(t)
            bar.update()
    else:
        import multiprocessing as mp

        with ProcessPoolExecutor(jobs, mp_context=mp.get_context("fork"),
                                 initializer=_init_worker) as pool:
            for recs in pool.map(run_task, tasks, chunksize=1):
                records += recs
                bar.update()
    bar.close()
    return records


# ---- statistics --------------------------------------------------------------------------------
def ratio_interval(a: np.ndarray, b: np.ndarray, level: float = LEVEL) -> dict:
    """mean(a) / mean(b) over paired repetitions with its delta-method interval (module doc), and
    the mean paired difference with its t interval."""
    from scipy import stats

    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    R = a.size
    ma, mb = float(a.mean()), float(b.mean())
    t = float(stats.t.ppf(0.5 + level / 2, R - 1)) if R > 1 else math.inf
    d = a - b
    d_half = t * float(d.std(ddof=1)) / math.sqrt(R) if R > 1 else math.inf
    out = dict(reps=R, a=ma, b=mb, diff=float(d.mean()), diff_lo=float(d.mean()) - d_half,
               diff_hi=float(d.mean()) + d_half)
    if ma <= 0 or mb <= 0 or R < 2:
        out.update(ratio=ma / mb if mb > 0 else math.nan, lo=math.nan, hi=math.nan)
        return out
    cov = np.cov(a, b, ddof=1)
    var = (cov[0, 0] / ma**2 + cov[1, 1] / mb**2 - 2 * cov[0, 1] / (ma * mb)) / R
    half = t * math.sqrt(max(var, 0.0))
    rho = ma / mb
    out.update(ratio=rho, lo=rho * math.exp(-half), hi=rho * math.exp(half))
    return out


def decided(ci: dict) -> bool:
    """The interval excludes 1 or lies within 1 +- MARGIN (module doc); identical methods (no
    difference at all) are decided too."""
    if ci["diff_lo"] == ci["diff_hi"] == 0.0:
        return True
    lo, hi = ci["lo"], ci["hi"]
    if lo != lo:
        return False
    return hi < 1.0 or lo > 1.0 or (lo >= 1 - MARGIN and hi <= 1 + MARGIN)


def per_rep(records: list[dict]):
    import pandas as pd

    df = pd.DataFrame(records)
    return df.groupby(["dataset", "m", "method", "rep"], as_index=False).agg(
        js=("js", "mean"), fit_s=("fit_s", "first"), k=("k", "first"),
        calm_l=("calm_l", "first"), calm_m=("calm_m", "first"))


def point_cis(pr, ds: str, m: float) -> dict:
    sub = pr[(pr.dataset == ds) & np.isclose(pr.m, m)].pivot_table(index="rep", columns="method",
                                                                   values="js")
    out = {}
    for a, b in COMPARISONS:
        if a in sub and b in sub:
            v = sub[[a, b]].dropna()
            out[(a, b)] = ratio_interval(v[a].to_numpy(), v[b].to_numpy())
    return out


def fmt_ci(ci: dict) -> str:
    if ci["diff_lo"] == ci["diff_hi"] == 0.0:
        return "1 (same method)"
    if ci["lo"] != ci["lo"]:
        return f"{ci['ratio']:.2f}"
    return f"{ci['ratio']:.2f} ({ci['lo']:.2f}-{ci['hi']:.2f})"


def verdict(ci: dict) -> str:
    if ci["diff_lo"] == ci["diff_hi"] == 0.0:
        return "same"
    if ci["hi"] < 1.0:
        return "reidrisk wins"
    if ci["lo"] > 1.0:
        return "CALM wins"
    if ci["lo"] >= 1 - MARGIN and ci["hi"] <= 1 + MARGIN:
        return "within 10 %"
    return "undecided"


# ---- main --------------------------------------------------------------------------------------
def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--m-values", default=",".join(f"{m:g}" for m in M_VALUES))
    ap.add_argument("--queries", type=int, default=4, help="query sets per repetition (4)")
    ap.add_argument("--batch", type=int, default=10, help="repetitions added per round (10)")
    ap.add_argument("--max-reps", type=int, default=40, help="repetitions at most per point (40)")
    ap.add_argument("--kscan-datasets", default="syn10,adult10,syn100,adult,communities",
                    help="datasets of the planner check ('' to skip)")
    ap.add_argument("--kscan-m", default="0,0.5")
    ap.add_argument("--kscan-reps", type=int, default=10)
    ap.add_argument("--kscan-k", default="",
                    help="comma-separated k of the planner check (default: 1..min(g, 16))")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: syn10 and adult10, m = 0 and 0.5, 3 + 3 repetitions")
    ap.add_argument("--out-dir", default=None)
    ap.add_argument("--checkpoint", default=None, metavar="PATH",
                    help="pickle the records to PATH after every round and k scan, and resume "
                         "from it when it exists (same options)")
    args = ap.parse_args(argv)
    args.datasets = [d for d in args.datasets.split(",") if d]
    args.m_values = [float(x) for x in args.m_values.split(",") if x]
    args.kscan_datasets = [d for d in args.kscan_datasets.split(",") if d]
    args.kscan_m = [float(x) for x in args.kscan_m.split(",") if x]
    args.kscan_k = [int(x) for x in args.kscan_k.split(",") if x]
    if args.quick:
        args.datasets, args.m_values = ["syn10", "adult10"], [0.0, 0.5]
        args.batch, args.max_reps, args.kscan_reps = 3, 6, 2
        args.kscan_datasets = ["syn10"]
        args.out_dir = args.out_dir or tempfile.mkdtemp(prefix=NAME + "_")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    from reidrisk.collect.protocol import choose_attributes_per_person

    res = Results(NAME, packages=PACKAGES, results_dir=args.out_dir)
    res.results_dir.mkdir(parents=True, exist_ok=True)
    for ds in set(args.datasets) | set(args.kscan_datasets):
        _data(ds)  # load in the parent so forked workers share them
    t0 = time.perf_counter()
    # ---- the paired comparison, in rounds ------------------------------------------------------
    import pickle

    records: list[dict] = []
    done_reps = {(ds, m): 0 for ds in args.datasets for m in args.m_values}
    open_points = set(done_reps)
    kscan: list[dict] = []
    scanned: set = set()
    earlier = 0.0  # measuring time spent before a resume
    resumed = None
    if args.checkpoint and Path(args.checkpoint).exists():
        with open(args.checkpoint, "rb") as fh:
            ck = pickle.load(fh)
        records, done_reps, open_points = ck["records"], ck["done_reps"], ck["open_points"]
        kscan, scanned = ck["kscan"], ck["scanned"]
        earlier, resumed = ck.get("wall", 0.0), ck.get("machine")
        if resumed and not open_points and len(scanned) == len(args.kscan_datasets) * len(args.kscan_m):
            res.machine = dict(resumed)  # nothing left to measure: the measured run's record
        print(f"resumed from {args.checkpoint}: {len(open_points)} open point(s), "
              f"{len(scanned)} k scan(s) done")

    def save() -> None:
        if args.checkpoint:
            with open(args.checkpoint, "wb") as fh:
                pickle.dump(dict(records=records, done_reps=done_reps, open_points=open_points,
                                 kscan=kscan, scanned=scanned, machine=resumed or res.machine,
                                 wall=earlier + time.perf_counter() - t0), fh)

    rnd = 0
    while open_points:
        rnd += 1
        tasks = [Task(ds, m, r, args.queries, args.seed) for (ds, m) in sorted(open_points)
                 for r in range(done_reps[(ds, m)], min(done_reps[(ds, m)] + args.batch,
                                                        args.max_reps))]
        tasks.sort(key=lambda t: {"syn100": 0, "communities": 1, "adult": 2}.get(t.dataset, 3))
        records += execute(tasks, args.jobs, f"round {rnd}: {len(open_points)} point(s)")
        pr = per_rep(records)
        for key in list(open_points):
            done_reps[key] = min(done_reps[key] + args.batch, args.max_reps)
            cis = point_cis(pr, *key)
            if all(decided(cis[c]) for c in DECIDING if c in cis) or done_reps[key] >= args.max_reps:
                open_points.discard(key)
        save()
    pr = per_rep(records)
    # ---- the planner check -----------------------------------------------------------------------
    kscan_info = {}
    kscan_ks: dict = {}
    for ds in args.kscan_datasets:
        schema, codes = _data(ds)
        n, g = codes.shape
        for m in args.kscan_m:
            choice = choose_attributes_per_person(list(schema.sizes), EPS, n=n, missing_rate=m)
            kscan_info[(ds, m)] = choice
            ks = tuple(sorted({k for k in args.kscan_k if k <= g}
                              | {int(choice.attributes_per_person)})) if args.kscan_k else \
                tuple(sorted(set(range(1, min(g, 16) + 1)) | {int(choice.attributes_per_person)}))
            kscan_ks[(ds, m)] = ks
            if (ds, m) in scanned:
                continue
            kscan += execute([Task(ds, m, r, args.queries, args.seed, ks)
                              for r in range(args.kscan_reps)], args.jobs, f"k scan {ds} m={m:g}")
            scanned.add((ds, m))
            save()
    wall = earlier + time.perf_counter() - t0

    # ---- results ---------------------------------------------------------------------------------
    rows: list[list] = []
    summary: dict = {}
    for ds in args.datasets:
        for m in args.m_values:
            cis = point_cis(pr, ds, m)
            summary[(ds, m)] = cis
            sub = pr[(pr.dataset == ds) & np.isclose(pr.m, m)]
            means = sub.groupby("method").js.mean()
            kk = sub.groupby("method").k.first()
            lm = sub.groupby("method")[["calm_l", "calm_m"]].median()
            reps = int(sub.rep.nunique())
            for meth in METHODS:
                s = sub[sub.method == meth]
                if not len(s):
                    continue
                params = {"dataset": ds, "m": m, "c": C, "epsilon": EPS, "method": meth,
                          "reps": int(s.rep.nunique()), "queries": args.queries}
                if meth.startswith("reidrisk"):
                    params["k"] = int(kk[meth])
                else:
                    params["calm_l"], params["calm_m"] = (float(lm.loc[meth, "calm_l"]),
                                                          float(lm.loc[meth, "calm_m"]))
                res.add(params, "js_mean", float(s.js.mean()), "bits")
                res.add(params, "js_sd", float(s.js.std(ddof=1)), "bits")
                res.add(params, "fit_s_median", float(s.fit_s.median()), "s")
            for (a, b), ci in cis.items():
                params = {"dataset": ds, "m": m, "c": C, "epsilon": EPS, "numerator": a,
                          "denominator": b, "reps": ci["reps"], "queries": args.queries,
                          "level": LEVEL, "ci_low": ci["lo"], "ci_high": ci["hi"],
                          "diff": ci["diff"], "diff_low": ci["diff_lo"], "diff_high": ci["diff_hi"],
                          "verdict": verdict(ci)}
                res.add(params, "js_ratio", ci["ratio"], "ratio")
            c = cis
            rows.append([ds, f"{m:g}", reps, f"{means['reidrisk']:.4f}", f"{means['calm']:.4f}",
                         f"{means['calm_paper']:.4f}",
                         fmt_ci(c[("reidrisk", "calm")]), fmt_ci(c[("reidrisk", "calm_paper")]),
                         f"{int(kk['reidrisk_m'])}: {means['reidrisk_m']:.4f}",
                         f"{int(lm.loc['calm_m', 'calm_l'])}, {int(lm.loc['calm_m', 'calm_m'])}: "
                         f"{means['calm_m']:.4f}",
                         fmt_ci(c[("reidrisk_m", "calm_m")]),
                         ", ".join(verdict(c[x]) for x in DECIDING)])
    table = md_table(["dataset", "m", "reps", "reidrisk", "CALM (m = 0.5)", "CALM (m = 0)",
                      "reidrisk / CALM (m = 0.5)", "reidrisk / CALM (m = 0)",
                      "reidrisk planned for m: k: JS", "CALM planned for m: l, groups: JS",
                      "planned for m: reidrisk / CALM", "verdicts"], rows)
    # ---- k scan table
    ks_body: list[str] = []
    if kscan:
        kp = per_rep(kscan)
        for (ds, m), choice in kscan_info.items():
            sub = kp[(kp.dataset == ds) & np.isclose(kp.m, m)]
            piv = sub.pivot_table(index="rep", columns="method", values="js", dropna=False)
            ks = kscan_ks[(ds, m)]
            # a k whose fit failed in some repetition (an EstimationError) is shown with its
            # failures and left out of the choice of the best k
            fails = {k: int(piv[f"k={k}"].isna().sum()) if f"k={k}" in piv else len(piv)
                     for k in ks}
            ok = [k for k in ks if fails[k] == 0]
            means = {k: float(piv[f"k={k}"].mean()) if f"k={k}" in piv else math.nan for k in ks}
            means_ok = {k: means[k] for k in ok}
            best = min(means_ok, key=means_ok.get)
            kc = int(choice.attributes_per_person)
            ci = ratio_interval(piv[f"k={kc}"].to_numpy(), piv[f"k={best}"].to_numpy())
            for k in ks:
                res.add({"dataset": ds, "m": m, "c": C, "epsilon": EPS, "k": k,
                         "reps": int(piv.shape[0]), "queries": args.queries,
                         "planner_error": float(choice.errors[k - 1]), "planner_k": kc,
                         "failed_fits": fails[k]},
                        "js_mean", means[k], "bits")
            res.add({"dataset": ds, "m": m, "c": C, "epsilon": EPS, "planner_k": kc,
                     "best_k": best, "reps": ci["reps"], "ci_low": ci["lo"], "ci_high": ci["hi"],
                     "level": LEVEL}, "js_ratio_planner_to_best", ci["ratio"], "ratio")
            # the k scan's repetitions share truth, missing values and queries with the
            # comparison's repetitions of the same number: the best k against CALM, paired
            cmp_ = pr[(pr.dataset == ds) & np.isclose(pr.m, m)].pivot_table(
                index="rep", columns="method", values="js")
            vs = []
            for ck_ in ("calm", "calm_paper"):
                if ck_ in cmp_:
                    both = piv[[f"k={best}"]].join(cmp_[[ck_]], how="inner").dropna()
                    if len(both) > 1:
                        ci2 = ratio_interval(both[f"k={best}"].to_numpy(), both[ck_].to_numpy())
                        vs.append(fmt_ci(ci2))
                        res.add({"dataset": ds, "m": m, "c": C, "epsilon": EPS, "k": best,
                                 "denominator": ck_, "reps": ci2["reps"], "ci_low": ci2["lo"],
                                 "ci_high": ci2["hi"], "level": LEVEL},
                                "js_ratio_best_k_to_calm", ci2["ratio"], "ratio")
            order = np.argsort(choice.errors)
            ks_body.append(
                f"| {ds} | {m:g} | {kc} | {', '.join(str(int(choice.candidates[i])) for i in order[:3])} "
                f"| {best} | {means[kc]:.4f} | {means[best]:.4f} | {fmt_ci(ci)} | "
                f"{' / '.join(vs) if vs else '-'} | "
                + " ".join(f"{k}:{means[k]:.4f}" + (f" ({fails[k]} failed)" if fails[k] else "")
                           for k in ks) + " |")
    # ---- markdown
    doc = __doc__.split("\n\n")
    body = ["# reidrisk against CALM, paired comparison", "", doc[1].replace("\n", " "), "",
            "\n\n".join(doc[2:4]).strip(), "", doc[4].replace("\n", " "), "", doc[5].replace("\n", " "),
            "",
            f"Settings: c = {C}, ε = {EPS:g}, {args.queries} query sets per repetition, repetitions "
            f"in batches of {args.batch} up to {args.max_reps} per point. Wall time "
            f"{wall / 60:.1f} min with {args.jobs} worker(s)"
            + (f"; the measurement began {resumed.get('date_utc')} (load at start "
               f"{' / '.join(str(x) for x in resumed.get('load_avg_start', []))}) and was resumed "
               "from its checkpoint by the command below, which measured what was left and "
               "rendered the results." if resumed else ".")
            + " Timings depend on the load (below); the scores do not.", "",
            "## Paired comparison (c = 3, ε = 5)", "",
            "JS divergence in bits, mean over repetitions; ratios reidrisk / CALM with their 95 % "
            "interval (below 1: reidrisk is better). Verdicts of the three comparisons, in the "
            "order reidrisk / CALM (m = 0.5), reidrisk / CALM (m = 0), planned for m.", "",
            table, ""]
    if ks_body:
        body += ["## Planner check: measured JS over k", "",
                 "The default configuration with each k on the same repetitions (the first repetitions of the "
                 "comparison above: the same truth, missing values and queries); the planner's k "
                 "(`choose_attributes_per_person` at that m), its three best k by the error model, "
                 "the k that measured best, and the ratio planner's k / best k with its 95 % "
                 f"interval ({args.kscan_reps} repetitions of {args.queries} query sets).", "",
                 "| dataset | m | planner's k | model's top 3 | measured best k | JS at planner's k "
                 "| JS at best k | planner's k / best k (95 %) | best k / CALM (m = 0.5) / "
                 "CALM (m = 0), paired | JS for each k measured (k:JS) |",
                 "| :-- | --: | --: | --: | --: | --: | --: | --: | --: | :-- |", *ks_body, "",
                 "The best k is chosen on the same repetitions it is scored on, so its ratios "
                 "favour it somewhat (a winner's curse over the k compared)."]
    res.write(body, echo=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
