#!/usr/bin/env python
"""The latent class model as the collection model (``CollectPipeline(model="latent")``) against
the copula default, paired, on every dataset of ``collect_accuracy.py``.

Protocol: the repetitions of ``benchmarks/collect_accuracy.py`` (its ``run_task``, with the same
seeds), so the two methods -- ``reidrisk`` (the copula default) and ``latent`` ("reidrisk (latent
class)") -- see the same truth, the same injected missingness, the same queries and the same
reports (both use attribute sampling, so the clients' reports are shared), and each repetition's
value is the mean Jensen-Shannon divergence (bits) of its queries. The points: the default point
(m = 0.5, c = 3, epsilon = 5), c = 2 answered by the same fits, epsilon = 1 and m = 0; at the
default point also the copula fitted on the true pair tables (``true_pairs_copula``, the copula's
own floor). The paired difference latent - copula is given with its standard error over
repetitions (sd / sqrt(reps)).

Targets (issue "latent class model", Collect): where the latent model would be the default it must
be below the copula default on every dataset; on Adult it should close half of the copula's
distance to the true-pairs floor. Default rule: the latent model becomes the default only if its
paired mean is above the copula's at no measured point, and below it at the default point on every
dataset where it fitted a mixture (where both fall back they give the same model).

Run from the repository root::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/collect_latent.py --jobs 2   # 15 min measured
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/collect_latent.py --quick    # smoke run, temp dir

Writes docs/results/collect_latent.{json,md}. The committed run took 14.8 min with --jobs 2 on 2
cores under a load of 2-9 (its page's footer), 11.5 min of it the main table.
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

import collect_accuracy as ca
from _harness import Results, md_table

NAME = "collect_latent"
METHODS = ("reidrisk", "latent")
#: the latent model without its fallback (diagnostic: what the fallback changes)
RAW = "latent_nofallback"
FLOOR = "true_pairs_copula"
#: (m, epsilon, cs) of the measured points; c = 2 is answered by the default point's fits
POINTS = ((ca.DEFAULT_M, ca.DEFAULT_EPS, (2, 3)), (ca.DEFAULT_M, 1.0, (3,)), (0.0, ca.DEFAULT_EPS, (3,)))


def plan(args) -> list:
    tasks = []
    for ds in args.datasets:
        for m, eps, cs in POINTS:
            default = (m, eps) == (ca.DEFAULT_M, ca.DEFAULT_EPS)
            # the diagnostics (the mixture without the fallback, the copula on true pairs) at the
            # default point only: the mixture is fitted 5 times in each
            methods = METHODS + ((RAW, FLOOR) if default else ())
            for r in range(args.reps):
                tasks.append(ca.Task(ds, m, eps, r, cs, methods, args.queries, args.seed))
    return tasks


def diagnose(args) -> tuple[list[str], list[tuple]]:
    """What limits the latent model on Adult at the default point: the same mixture (K chosen the
    same way, ``LatentClassModel("auto")``) fitted on ever less information -- the complete true
    data, the data after the missingness, the values the sampling protocol asks each person for
    (no LDP noise), the reports -- and on the reports as one fit, as averages of 2, 5 (the latent
    method) and 8 fits, with other fit settings (random starts, category prior, stopping) and with
    K fixed. Same missingness, queries and reports as the main table (collect_accuracy's seeds)."""
    from reidrisk.collect.latent_fit import N_FITS, average_fits
    from reidrisk.collect.protocol import Protocol
    from reidrisk.collect.report import js_bits, planned_attributes_per_person
    from reidrisk.data.missing import mcar
    from reidrisk.data.tables import contingency
    from reidrisk.latent import LatentClassModel
    from reidrisk.schema import MISSING

    ds, m, eps = "adult", ca.DEFAULT_M, ca.DEFAULT_EPS
    schema, codes = ca._data(ds)
    n, g = codes.shape
    k = planned_attributes_per_person(schema.sizes, eps, n)
    names = {"truth": "complete true data", "observed": f"after the missingness (m = {m:g})",
             "asked": f"the {k} attributes each person is asked, raw (no LDP noise)",
             "reports": f"the reports, average of {N_FITS} fits (the latent method)",
             "one": "the reports, one fit (seed 0; the latent method before the average)",
             "avg2": "the reports, average of 2 fits", "avg8": "the reports, average of 8 fits",
             "starts10": "the reports, one fit, 10 random starts per K (3)",
             "prior0": "the reports, one fit, no category prior (1 pseudo-record per class)",
             "long": "the reports, one fit, EM to 1e-7 per record, at most 1,000 steps "
                     "(1e-5, 200)",
             "K8": "the reports, K = 8 fixed", "K32": "the reports, K = 32 fixed"}
    js: dict[str, list[float]] = {key: [] for key in names}
    chosen: dict[str, list[int]] = {key: [] for key in names}
    full = LatentClassModel("auto", rng=0).fit(codes, schema)
    for r in range(args.reps):
        observed = mcar(codes, m, np.random.default_rng(ca._seed(args.seed, "missing", ds, m, r)))
        proto_rng = np.random.default_rng(ca._seed(args.seed, "reports", ds, m, eps, r))
        reports = Protocol(eps, k, "subset").randomize(schema, observed, proto_rng)
        asked = np.where(reports.present(), observed, MISSING)
        qrng = np.random.default_rng(ca._seed(args.seed, "queries", ds, r, ca.DEFAULT_C))
        queries = [sorted(int(j) for j in qrng.choice(g, ca.DEFAULT_C, replace=False))
                   for _ in range(args.queries)]
        _, fits = average_fits(reports, 8)  # seeds 0-7: the averages of 2, 5 and 8 are nested
        models = {"truth": full,
                  "observed": LatentClassModel("auto", rng=0).fit(observed, schema),
                  "asked": LatentClassModel("auto", rng=0).fit(asked, schema),
                  "reports": _Average(fits[:N_FITS]), "one": fits[0],
                  "avg2": _Average(fits[:2]), "avg8": _Average(fits),
                  "starts10": LatentClassModel("auto", n_starts=10, rng=0).fit(reports),
                  "prior0": LatentClassModel("auto", category_prior=0.0, rng=0).fit(reports),
                  "long": LatentClassModel("auto", max_iter=1000, tol=1e-7, rng=0).fit(reports),
                  "K8": LatentClassModel(8, rng=0).fit(reports),
                  "K32": LatentClassModel(32, rng=0).fit(reports)}
        for key, model in models.items():
            js[key].append(float(np.mean([js_bits(contingency(codes, schema.sizes, q),
                                                  model.table(q)) for q in queries])))
            chosen[key].append(model.n_classes_)  # an average: its fits' largest K
    lines = ["## What limits the latent model on Adult", "",
             f"The mixture (`LatentClassModel(\"auto\")`, no fallback; the latent method "
             f"averages {N_FITS} such fits) fitted on ever less information, Adult at the default point, c = {ca.DEFAULT_C}, "
             f"the same {args.reps} repetitions and queries as above; K: the chosen numbers of "
             "classes (min-max over repetitions; for an average, the largest K of its fits).", ""]
    body, points = [], []
    for key, label in names.items():
        v = np.asarray(js[key])
        body.append([label, f"{v.mean():.4f}", f"{v.std(ddof=1) if v.size > 1 else 0:.4f}",
                     f"{min(chosen[key])}-{max(chosen[key])}"])
        points.append(({"dataset": ds, "m": m, "eps": eps, "c": ca.DEFAULT_C, "reps": args.reps,
                        "queries": args.queries, "fitted_on": key,
                        "classes": [int(x) for x in chosen[key]]},
                       "latent_js_mean", float(v.mean()), "bits"))
    lines += [md_table(["latent class model fitted on", "JS mean", "sd", "K"], body), ""]
    return lines, points


class _Average:
    """The equal-weight average of fitted latent class models, as far as ``diagnose`` reads it
    (``reidrisk.collect.latent_fit.average_fits`` builds the same mixture as one model)."""

    def __init__(self, fits):
        self.fits = fits
        self.n_classes_ = max(f.n_classes_ for f in fits)

    def table(self, cols):
        return np.mean([f.table(cols) for f in self.fits], axis=0)


def heldout(args) -> tuple[list[str], list[tuple]]:
    """Lever (a) and (b) of the issue, at the default point: per fit, the copula or the mixture
    chosen by the held-out likelihood of the reports, and the blend of their tables with its
    weight chosen the same way (``reidrisk.collect.latent_fit.report_likelihoods`` and
    ``blend_weight``). The reports are split 80 / 20 by person (seed ``LATENT_SEED``); both models
    are fitted on the 80 %, scored on the 20 %, and the choice is applied to the two models fitted
    on all reports (the main table's fits: the same reports, queries and seeds). Repetitions in
    which the copula pipeline falls back are left out (no mixture is fitted there)."""
    from reidrisk.collect.latent_fit import LATENT_SEED, blend_weight, report_likelihoods
    from reidrisk.collect.pipeline import CollectPipeline
    from reidrisk.collect.protocol import Protocol
    from reidrisk.collect.report import js_bits, planned_attributes_per_person
    from reidrisk.data.missing import mcar
    from reidrisk.data.tables import contingency
    from reidrisk.latent.model import HOLDOUT_SHARE

    warnings.simplefilter("ignore")  # the pipeline's fallback notes: the repetition is left out
    m, eps, c = ca.DEFAULT_M, ca.DEFAULT_EPS, ca.DEFAULT_C
    kinds = ("copula", "latent", "auto", "stack", "half")
    body, points = [], []
    for ds in args.datasets:
        schema, codes = ca._data(ds)
        n, g = codes.shape
        k = planned_attributes_per_person(schema.sizes, eps, n)
        js: dict[str, list[float]] = {key: [] for key in kinds}
        weights = []
        for r in range(args.reps):
            observed = mcar(codes, m, np.random.default_rng(ca._seed(args.seed, "missing", ds, m, r)))
            prng = np.random.default_rng(ca._seed(args.seed, "reports", ds, m, eps, r))
            reports = Protocol(eps, k, "subset").randomize(schema, observed, prng)
            copula = CollectPipeline().fit(reports)
            if copula.report.fallback != "none":
                continue
            latent = CollectPipeline(model="latent", fallback=False).fit(reports)
            hold = np.random.default_rng(LATENT_SEED).random(n) < HOLDOUT_SHARE
            train, test = reports.take(~hold), reports.take(hold)
            lik_c = report_likelihoods(CollectPipeline(fallback=False).fit(train), test)
            lik_l = report_likelihoods(
                CollectPipeline(model="latent", fallback=False).fit(train), test)
            lam, scores = blend_weight(lik_c, lik_l)
            weights.append(lam)
            auto = float(scores[-1] > scores[0])
            qrng = np.random.default_rng(ca._seed(args.seed, "queries", ds, r, c))
            queries = [sorted(int(j) for j in qrng.choice(g, c, replace=False))
                       for _ in range(args.queries)]
            per = {key: [] for key in kinds}
            for q in queries:
                truth, tc, tl = contingency(codes, schema.sizes, q), copula.table(q), latent.table(q)
                for key, w in zip(kinds, (0.0, 1.0, auto, lam, 0.5)):
                    per[key].append(js_bits(truth, w * tl + (1 - w) * tc))
            for key in kinds:
                js[key].append(float(np.mean(per[key])))
        if not weights:
            continue
        base = np.asarray(js["copula"])
        row = [ca.DATASET_LABEL.get(ds, ds), f"{len(weights)}/{args.reps}"]
        for key in kinds:
            v = np.asarray(js[key])
            d = v - base
            se = d.std(ddof=1) / math.sqrt(d.size) if d.size > 1 else 0.0
            row.append(f"{v.mean():.4f}" + ("" if key == "copula" else f" ({d.mean():+.4f} ± {se:.4f})"))
            points.append(({"dataset": ds, "m": m, "eps": eps, "c": c, "reps": len(weights),
                            "queries": args.queries, "method": f"heldout_{key}",
                            "diff_vs_copula": float(d.mean()), "se": float(se)},
                           "js_mean", float(v.mean()), "bits"))
        row.append(", ".join(f"{w:.1f}" for w in weights))
        body.append(row)
    lines = ["## Choosing between the copula and the mixture by held-out likelihood", "",
             f"The default point (m = {m:g}, ε = {eps:g}, c = {c}), repetitions in which the copula "
             "pipeline fitted a model (no fallback); mean JS (paired difference against the copula "
             "± its standard error). Both models are fitted on 80 % of the people's reports and "
             "score the other 20 % (`reidrisk.collect.latent_fit.report_likelihoods`: a person's "
             "reports through the model's table of the attributes they carry); *auto*: the model "
             "with the larger held-out likelihood, per fit; *stack*: the blend "
             "λ latent + (1 - λ) copula of the two models' tables, λ on a grid of 0.1 chosen by "
             "held-out likelihood (`blend_weight`); *half*: λ = 1/2 fixed (not chosen on data); "
             "the tables are those of the two models fitted on all reports.", "",
             md_table(["dataset", "fitted", "copula", "latent", "auto", "stack", "half", "λ"],
                      body), ""]
    return lines, points


def summarize(records: list[dict]):
    """Per point and method: mean, sd and reps of the per-repetition values, and the paired
    difference latent - copula."""
    import pandas as pd

    df = pd.DataFrame(records)
    per_rep = (df.groupby(["dataset", "m", "eps", "c", "method", "rep"], as_index=False)
               .agg(js=("js", "mean"), fit_s=("fit_s", "first"),
                    fell_back=("fallback", lambda s: s.iloc[0] not in (None, "none"))))
    rows = []
    for (ds, m, eps, c), grp in per_rep.groupby(["dataset", "m", "eps", "c"], sort=False):
        wide = grp.pivot(index="rep", columns="method", values="js")
        fits = grp.pivot(index="rep", columns="method", values="fit_s")
        d = (wide["latent"] - wide["reidrisk"]).to_numpy()
        row = dict(dataset=ds, m=float(m), eps=float(eps), c=int(c), reps=int(len(d)),
                   copula=float(wide["reidrisk"].mean()), copula_sd=float(wide["reidrisk"].std()),
                   latent=float(wide["latent"].mean()), latent_sd=float(wide["latent"].std()),
                   diff=float(d.mean()), diff_se=float(d.std(ddof=1) / math.sqrt(len(d))),
                   wins=int((d < 0).sum()),
                   latent_fallbacks=int(grp[grp["method"] == "latent"]["fell_back"].sum()),
                   copula_fit_s=float(fits["reidrisk"].median()),
                   latent_fit_s=float(fits["latent"].median()))
        if FLOOR in wide:
            row["floor"] = float(wide[FLOOR].mean())
        if RAW in wide:
            row["raw"] = float(wide[RAW].mean())
        rows.append(row)
    return rows


def render(rows: list[dict], args, seconds: float) -> tuple[list[str], list[tuple]]:
    """Markdown lines and the JSON points (params, metric, value, unit)."""
    from reidrisk.collect.latent_fit import N_FITS

    points = []
    for r in rows:
        base = dict(dataset=r["dataset"], m=r["m"], eps=r["eps"], c=r["c"], reps=r["reps"],
                    queries=args.queries)
        points.append(({**base, "method": "reidrisk", "sd": r["copula_sd"]}, "js_mean",
                       r["copula"], "bits"))
        points.append(({**base, "method": "latent", "sd": r["latent_sd"]}, "js_mean",
                       r["latent"], "bits"))
        points.append(({**base, "se": r["diff_se"], "latent_wins": r["wins"]},
                       "js_diff_latent_minus_copula", r["diff"], "bits"))
        points.append(({**base, "method": "reidrisk"}, "fit_s_median", r["copula_fit_s"], "s"))
        points.append(({**base, "method": "latent"}, "fit_s_median", r["latent_fit_s"], "s"))
        if "floor" in r:
            points.append(({**base, "method": FLOOR}, "js_mean", r["floor"], "bits"))
        if "raw" in r:
            points.append(({**base, "method": RAW}, "js_mean", r["raw"], "bits"))
        points.append(({**base, "method": "latent"}, "fallbacks", r["latent_fallbacks"], "reps"))
    lines = [
        "# The latent class model as the collection model, against the copula default",
        "",
        "Mean Jensen-Shannon divergence (bits) of c-way tables against the true data, mean over "
        f"{args.reps} paired repetitions of {args.queries} random attribute sets each "
        "(`benchmarks/collect_accuracy.py`'s protocol and seeds: the same truth, missingness, "
        "queries and reports for both). *copula*: `CollectPipeline()` (the default); *latent*: "
        f"`CollectPipeline(model=\"latent\")`, the average of {N_FITS} latent class models each with "
        "its own held-out split and random starts (`reidrisk.collect.latent_fit.average_fits`); "
        "both with attribute sampling. *diff*: the paired "
        "mean of latent - copula with its standard error over repetitions; *wins*: repetitions "
        "where the latent model is closer. *fell back*: repetitions in which the pipeline's tests "
        "found no dependence, so the latent model fell back as the copula does "
        "(`reidrisk.collect.latent_fit`, \"Fallback\"; the copula default then gives the same "
        "model); *no fallback*: `CollectPipeline(model=\"latent\", fallback=False)`, the mixture "
        "fitted always (diagnostic), and *floor*: the copula fitted on the true pair tables, both "
        "at the default point only. Fit times are medians under the load stated below.",
        "",
    ]
    head = ["dataset", "m", "ε", "c", "copula", "latent", "diff ± se", "wins", "fell back",
            "no fallback", "floor", "fit copula", "fit latent"]
    body = []
    for r in rows:
        body.append([ca.DATASET_LABEL.get(r["dataset"], r["dataset"]), f"{r['m']:g}", f"{r['eps']:g}",
                     r["c"], f"{r['copula']:.4f}", f"{r['latent']:.4f}",
                     f"{r['diff']:+.4f} ± {r['diff_se']:.4f}", f"{r['wins']}/{r['reps']}",
                     f"{r['latent_fallbacks']}/{r['reps']}",
                     f"{r['raw']:.4f}" if "raw" in r else "",
                     f"{r['floor']:.4f}" if "floor" in r else "", f"{r['copula_fit_s']:.2f} s",
                     f"{r['latent_fit_s']:.2f} s"])
    lines += [md_table(head, body), ""]
    # targets
    lines += ["## Targets", ""]
    default_pt = [r for r in rows if (r["m"], r["eps"], r["c"]) ==
                  (ca.DEFAULT_M, ca.DEFAULT_EPS, ca.DEFAULT_C)]
    above = [r for r in rows if r["diff"] > 0]
    fitted = [r for r in default_pt if r["latent_fallbacks"] < r["reps"]]
    not_below = [r for r in fitted if r["diff"] >= 0]
    ok = not above and not not_below

    def pt(r):
        return (f"{r['dataset']} m = {r['m']:g} ε = {r['eps']:g} c = {r['c']}: "
                f"{r['latent']:.4f} against {r['copula']:.4f}, diff {r['diff']:+.4f} ± "
                f"{r['diff_se']:.4f}")

    # the rule compares means; say which of its findings stand out of the noise of the paired
    # difference (two standard errors: a two-sided 95 % normal interval excludes 0)
    above2 = [r for r in above if r["diff"] > 2 * r["diff_se"]]
    below2 = [r for r in fitted if r["diff"] < -2 * r["diff_se"]]
    noise = (f" Beyond two standard errors of the paired difference the latent model is above the "
             f"copula at {len(above2)} of {len(rows)} points"
             + (" (" + "; ".join(pt(r) for r in above2) + ")" if above2 else "")
             + f", and below it at the default point on {len(below2)} of the {len(fitted)} "
             "datasets where it fitted a mixture"
             + (" (" + ", ".join(r["dataset"] for r in below2) + ")" if below2 else "")
             + ("; the other differences the rule weighs are within that noise"
                if len(above2) < len(above) or len(below2) < len(fitted) else "")
             + ".")

    lines.append(
        "- Default rule: the latent model becomes the default only if its paired mean is above "
        "the copula's at no measured point, and below it at the default point on every dataset "
        "where it fitted a mixture in at least one repetition (where both fall back they give "
        "the same model). "
        + ("Both hold." if ok else
           "It does not hold: "
           + (f"the latent model is above the copula at {len(above)} of {len(rows)} points ("
              + "; ".join(pt(r) for r in above) + ")" if above else "")
           + ("; " if above and not_below else "")
           + ("not below it at the default point on " + "; ".join(pt(r) for r in not_below)
              if not_below else "")
           + ". So the copula stays the default and the latent model is an option.")
        + noise
    )
    for r in default_pt:
        if r["dataset"] == "adult" and "floor" in r:
            gap = r["copula"] - r["floor"]
            closed = (r["copula"] - r["latent"]) / gap if gap > 0 else float("nan")
            points.append(({"dataset": "adult", "m": r["m"], "eps": r["eps"], "c": r["c"],
                            "reps": r["reps"], "copula": r["copula"], "latent": r["latent"],
                            "floor": r["floor"]}, "share_of_floor_gap_closed", closed, "ratio"))
            lines.append(
                f"- Adult at the default point: copula {r['copula']:.4f}, latent {r['latent']:.4f}, "
                f"copula on true pairs {r['floor']:.4f}; the latent model closes "
                f"{100 * closed:.0f} % of the copula's distance to that floor (target 50 %: "
                + ("met" if closed >= 0.5 else "not met") + "), with the latent method as it "
                f"is: the average of {N_FITS} latent class fits (one fit alone, and averages of 2 and 8, "
                "in the last section; the per-fit choice and the blend of the two models in the "
                "section before it).")
    lines += ["", f"Run time of the main table {seconds / 60:.1f} min, {args.jobs} "
              + ("process." if args.jobs == 1 else "processes.")]
    return lines, points


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=10, help="repetitions per point (10)")
    ap.add_argument("--queries", type=int, default=4,
                    help="random c-subsets scored per repetition (4; the first 2 are "
                         "collect_accuracy's)")
    ap.add_argument("--datasets", default=",".join(ca.DATASETS),
                    help=f"comma-separated subset of {','.join(ca.DATASETS)}")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="smoke run: 2 reps, 1 query, temp folder")
    ap.add_argument("--out-dir", default=None, help="where to write results (default docs/results)")
    ap.add_argument("--jobs", type=int, default=1,
                    help="worker processes of the main table's repetitions (1)")
    args = ap.parse_args(argv)
    args.datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
    unknown = [d for d in args.datasets if d not in ca.DATASETS]
    if unknown:
        raise SystemExit(f"unknown dataset(s) {unknown}; choose from {', '.join(ca.DATASETS)}")
    if args.quick:
        args.reps, args.queries = 2, 1
        args.out_dir = args.out_dir or tempfile.mkdtemp(prefix="collect_latent_")
    # run collect_accuracy's repetitions with the latent method among its specs
    ca.METHODS = tuple(ca.METHODS) + tuple(m for m in METHODS if m not in ca.METHODS)
    ablation = ca.ablation_specs

    def with_raw():
        from reidrisk.collect.report import MethodSpec, _proposed

        return ablation() + [MethodSpec(RAW, "reidrisk (latent class), no fallback",
                                        lambda: _proposed(RAW, model="latent", fallback=False),
                                        sampling=True)]

    ca.ablation_specs = with_raw
    res = Results(NAME, packages=ca.PACKAGES,
                  results_dir=Path(args.out_dir) if args.out_dir else None)
    run = argparse.Namespace(datasets=args.datasets, jobs=args.jobs, max_exact_cells=1000,
                             sampled_records=1 << 20)
    t0 = time.perf_counter()
    records = ca.execute(plan(args), run)
    rows = summarize(records)
    lines, points = render(rows, args, time.perf_counter() - t0)
    sections = [heldout] + ([diagnose] if "adult" in args.datasets else [])
    if args.jobs > 1:  # the two sections side by side, one process each
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(min(args.jobs, len(sections)),
                                 mp_context=mp.get_context("fork")) as pool:
            done = [f.result() for f in [pool.submit(fn, args) for fn in sections]]
    else:
        done = [fn(args) for fn in sections]
    for more, extra in done:
        lines[-2:-2] = ["", *more]
        points += extra
    for params, metric, value, unit in points:
        res.add(params, metric, value, unit)
    res.write(lines, echo=True)


if __name__ == "__main__":
    main()
