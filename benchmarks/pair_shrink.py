"""The default pair tables against the unshrunk pair EM and two references: mean squared error and
Jensen-Shannon divergence of the estimated (f_j, f_j') table against the true one.

Estimators on each randomized sample (``reidrisk.estimation.estimate_pairs``, estimator ``"em"``):

* ``default``: as shipped: the pair EM shrunk toward the independence table of the (shrunk)
  marginal estimates by ``interaction_weights`` (``reidrisk.estimation.pairs``,
  docs/design/core.md#pair-shrinkage): Stein's unbiased risk estimate of the interaction, charging
  the EM's own (face) noise, or, where that weight's standard error is above ``SURE_SE_MAX``, the
  estimated share of the inversion's dependence that is signal, ``max(0, 1 - V / ||D||^2)`` with
  ``V`` the exact noise of the interaction directions (``interaction_noise``);
* ``toward uniform``: the rule this replaced, recomputed from the public pieces: the same EM
  shrunk toward the uniform table by ``shrink_weights`` (SURE with the EM's face noise, James and
  Stein's weight on the inversion where SURE's is too uncertain, at least the null weight);
* ``share of signal``: tried first: the default's target with the second weight alone (the
  collection pipeline's ``shrink="js"`` weight), which charges the inversion's noise, not the
  EM's;
* ``both``: tried: the default, then shrunk toward the uniform table by the previous rule's
  weight (for the cells where the independence table of noisy marginals is itself far off);
* ``MLE``: the same EM unshrunk (``shrink=False``);
* ``uniform``: the uniform table (doing nothing);
* ``independence``: the product of the default marginal estimates.

Grids (per attribute budget epsilon; records drawn once per cell from the truth, then randomized
``--reps`` times; each mechanism's own sampler through ``RecordRandomizer``):

* main: GRR, OUE, OLH, subset, RAPPOR and GLH (every mechanism of the registry); epsilon in
  {0.1, 0.5, 1, 3}; shapes 2 x 2, 4 x 4, 8 x 8 and 3 x 8 (mixed); n = 10,000; truths:
  ``skewed`` (a Gaussian copula with correlation 0.9 cut at the normal quantiles 1/2, 3/4, 7/8,
  ...: each value half as likely as the one before, and strongly dependent), ``near-uniform``
  (Dirichlet(5) over the cells), ``dependent`` (a Gaussian copula with correlation 0.7 cut into
  equal-probability values) and ``independent`` (the product of two Dirichlet(0.5) marginals);
* n: the same at 4 x 4 with n = 1,000 and 100,000;
* real pairs: the 15 pairs of six UCI Adult attributes (age, marital-status, relationship, race,
  sex, income; ``load_adult_encoded(complete_only=True)``, train, 30,162 records; skipped with a
  message when the files are absent), every mechanism, epsilon in {0.1, 0.5, 1, 3};
* the demo: ``reidrisk demo``'s population (six attributes of 2 to 16 values, 20,000 records,
  30% missing) and reports at its whole-record budgets 1 to 16 (1/6 to 8/3 per attribute), all
  six mechanisms, the mean over its 15 pairs as the demo prints it.

MSE = sum over cells of (estimate - truth)^2; JS in bits (``js_divergence``); both averaged over
the randomizations with their standard error. ``/ best``: an estimator's mean over the best of
``MLE``, ``uniform`` and ``independence`` in that cell (the target: the default at most 1.2).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/pair_shrink.py [--quick] [--reps R]
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy.stats import multivariate_normal, norm

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import Results, md_table  # noqa: E402
from reidrisk.estimation import (  # noqa: E402
    estimate_marginals,
    estimate_pairs,
    inversion_noise,
    invert_tables,
    js_divergence,
    null_departure,
    pair_counts,
)
from reidrisk.estimation.frequency import shrink_weight, shrink_weights  # noqa: E402
from reidrisk.estimation.pairs import interaction_noise  # noqa: E402
from reidrisk.mechanisms import RecordRandomizer  # noqa: E402
from reidrisk.schema import MISSING, Attribute, Schema  # noqa: E402

MECHS = ("grr", "oue", "olh", "subset", "rappor", "glh")
EPSILONS = (0.1, 0.5, 1.0, 3.0)
SHAPES = ((2, 2), (4, 4), (8, 8), (3, 8))
TRUTHS = ("skewed", "near-uniform", "dependent", "independent")
ESTIMATORS = ("default", "toward uniform", "share of signal", "both", "MLE", "uniform",
              "independence")
REFERENCES = ("MLE", "uniform", "independence")
ADULT_ATTRS = ("age", "marital-status", "relationship", "race", "sex", "income")
TARGET = 1.2
DEMO_EPSILONS = (1.0, 2.0, 4.0, 8.0, 16.0)
CUT = 12.0  # standard deviations: the normal's outer cells end here (probability < 1e-30 beyond)


# ---- truths ------------------------------------------------------------------------------------
def truth_table(kind: str, f1: int, f2: int, rng: np.random.Generator) -> np.ndarray:
    """A true (f1, f2) distribution of the named family (module doc)."""
    if kind == "independent":
        return np.outer(rng.dirichlet(np.full(f1, 0.5)), rng.dirichlet(np.full(f2, 0.5)))
    if kind == "near-uniform":
        return rng.dirichlet(np.full(f1 * f2, 5.0)).reshape(f1, f2)
    rho = 0.9 if kind == "skewed" else 0.7
    mvn = multivariate_normal(mean=[0.0, 0.0], cov=[[1.0, rho], [rho, 1.0]])
    edges = []
    for f in (f1, f2):
        probs = 1.0 - 0.5 ** np.arange(1, f) if kind == "skewed" else np.arange(1, f) / f
        edges.append(np.concatenate([[-CUT], norm.ppf(probs), [CUT]]))
    # cell probabilities of the bivariate normal between the cuts (exact, no sampling)
    x, y = np.meshgrid(*edges, indexing="ij")
    F = mvn.cdf(np.stack([x.ravel(), y.ravel()], axis=1)).reshape(x.shape)
    out = np.clip(F[1:, 1:] - F[:-1, 1:] - F[1:, :-1] + F[:-1, :-1], 0.0, None)
    return out / out.sum()


def records_of(table: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """n records (n, 2) drawn from a pair distribution."""
    idx = rng.choice(table.size, size=n, p=table.ravel())
    return np.column_stack(np.unravel_index(idx, table.shape)).astype(np.int32)


def empirical(codes: np.ndarray, f1: int, f2: int, j: int = 0, k: int = 1) -> np.ndarray:
    both = (codes[:, j] != MISSING) & (codes[:, k] != MISSING)
    t = np.zeros((f1, f2))
    np.add.at(t, (codes[both, j], codes[both, k]), 1.0)
    return t / t.sum()


# ---- the estimators ------------------------------------------------------------------------------
def estimates(rr, counts, marginals=None) -> dict:
    """Every pair's table by every estimator of the module doc, from one set of reports."""
    d = estimate_pairs(rr, counts=counts, marginals=marginals)
    m = estimate_pairs(rr, counts=counts, shrink=False, marginals=d.marginals)
    mechs = rr.mechanisms
    out = {}
    for (j, k), T in m.items():
        f1, f2 = T.shape
        m1, m2 = mechs[j], mechs[k]
        n = counts.n_present(j, k)
        a1, q1 = m1.p_support - m1.q_support, m1.q_support
        a2, q2 = m2.p_support - m2.q_support, m2.q_support
        inv = invert_tables(counts.block(j, k).astype(np.float64), a1, q1, a2, q2) / n
        ind = np.outer(d.marginals[j].probs, d.marginals[k].probs)
        # the previous rule (oriented as the estimator stacked it: smaller domain first)
        if f1 <= f2:
            null = null_departure(a1, q1, a2, q2, f1, f2, float(n), "em")
        else:
            null = null_departure(a2, q2, a1, q1, f2, f1, float(n), "em")
        lam_u = shrink_weights(T.reshape(1, -1), inv.reshape(1, -1),
                               np.array([inversion_noise(n, m1, m2)]), np.array([null]))[0]
        u = 1.0 / T.size
        D = inv - np.outer(inv.sum(axis=1), inv.sum(axis=0))
        lam_s = shrink_weight(D, interaction_noise(n, m1, m2))
        out[(j, k)] = {
            "default": d[(j, k)], "toward uniform": u + lam_u * (T - u),
            "share of signal": ind + lam_s * (T - ind),
            "both": u + lam_u * (d[(j, k)] - u), "MLE": T,
            "uniform": np.full(T.shape, u), "independence": ind,
        }
    return out


def errors(est: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    return (float(np.sum((est - truth) ** 2)),
            float(js_divergence(truth.ravel(), np.clip(est, 0.0, None).ravel())))


# ---- cells ---------------------------------------------------------------------------------------
def summarize(samples: dict) -> dict:
    """Per estimator (mse mean, mse se, js mean, js se), and the ratios to the best reference."""
    s = {}
    for e, v in samples.items():
        a = np.asarray(v)
        r = a.shape[0]
        se = a.std(axis=0, ddof=1) / np.sqrt(r) if r > 1 else np.full(2, np.nan)
        s[e] = (a[:, 0].mean(), se[0], a[:, 1].mean(), se[1])
    best_mse = min(s[e][0] for e in REFERENCES)
    best_js = min(s[e][2] for e in REFERENCES)
    s["ratio"] = {e: (s[e][0] / best_mse, s[e][2] / best_js) for e in ESTIMATORS}
    return s


def record(res: Results, params: dict, s: dict) -> None:
    for e in ESTIMATORS:
        m, ms, j, js = s[e]
        res.add({**params, "estimator": e, "se": ms}, "mse", m, "probability^2")
        res.add({**params, "estimator": e, "se": js}, "js", j, "bits")
        res.add({**params, "estimator": e}, "mse_over_best", s["ratio"][e][0], "ratio")
        res.add({**params, "estimator": e}, "js_over_best", s["ratio"][e][1], "ratio")


def run_cell(res, grid, mech, eps, n, shape, kind, reps, rng) -> dict:
    f1, f2 = shape
    table = truth_table(kind, f1, f2, rng)
    codes = records_of(table, n, rng)
    truth = empirical(codes, f1, f2)
    schema = Schema((Attribute("a", tuple(f"v{i}" for i in range(f1))),
                     Attribute("b", tuple(f"v{i}" for i in range(f2)))))
    samples: dict = {e: [] for e in ESTIMATORS}
    for _ in range(reps):
        rr = RecordRandomizer(schema, mech, 2 * eps).randomize(codes, rng)
        ests = estimates(rr, pair_counts(rr))[(0, 1)]
        for e in ESTIMATORS:
            samples[e].append(errors(ests[e], truth))
    s = summarize(samples)
    params = {"grid": grid, "mechanism": mech, "epsilon": eps, "n": n,
              "shape": f"{f1}x{f2}", "truth": kind, "reps": reps}
    record(res, params, s)
    s["label"] = f"{grid}: {mech}, eps {eps:g}, {f1} x {f2}, {kind}, n = {n:,}"
    print(f"{s['label']}: default / best {s['ratio']['default'][0]:.2f} (MSE) "
          f"{s['ratio']['default'][1]:.2f} (JS)", flush=True)
    return s


def adult_cells(res, reps, rng, quick) -> list:
    try:
        from reidrisk.data import load_adult_encoded

        schema, codes = load_adult_encoded(complete_only=True)
    except Exception as exc:  # absent files: skip this grid, say why
        print(f"Adult skipped: {exc}")
        return []
    cols = [schema.names.index(a) for a in ADULT_ATTRS]
    sub = Schema(tuple(schema[c] for c in cols))
    codes = np.ascontiguousarray(codes[:, cols])
    sizes = sub.sizes
    g = len(cols)
    pairs = [(j, k) for j in range(g) for k in range(j + 1, g)]
    truths = {p: empirical(codes, sizes[p[0]], sizes[p[1]], *p) for p in pairs}
    out = []
    for mech in (("grr",) if quick else MECHS):
        for eps in ((0.5,) if quick else EPSILONS):
            samples: dict = {p: {e: [] for e in ESTIMATORS} for p in pairs}
            for _ in range(reps):
                rr = RecordRandomizer(sub, mech, g * eps).randomize(codes, rng)
                ests = estimates(rr, pair_counts(rr))
                for p in pairs:
                    for e in ESTIMATORS:
                        samples[p][e].append(errors(ests[p][e], truths[p]))
            for p in pairs:
                s = summarize(samples[p])
                names = f"{ADULT_ATTRS[p[0]]} x {ADULT_ATTRS[p[1]]}"
                params = {"grid": "adult", "mechanism": mech, "epsilon": eps,
                          "n": int(codes.shape[0]), "pair": names,
                          "shape": f"{sizes[p[0]]}x{sizes[p[1]]}", "reps": reps}
                record(res, params, s)
                s["label"] = f"Adult {names}: {mech}, eps {eps:g}"
                out.append(s)
            worst = max(out[-len(pairs):], key=lambda s: s["ratio"]["default"][0])
            print(f"Adult {mech} eps {eps:g}: worst default / best {worst['ratio']['default'][0]:.2f}"
                  f" ({worst['label']})", flush=True)
    return out


def demo_cells(res, quick) -> list:
    """The demo's population and reports (``reidrisk.demo``: same seed, draws and marginals) at
    its budgets: mean JS (as the demo prints it) and mean MSE over its pairs per estimator."""
    from reidrisk import demo

    n = 4_000 if quick else None
    entropy = int(np.random.SeedSequence(0).entropy)  # type: ignore[arg-type]
    schema, codes, *_ = demo._prepare(None, None, n or 20_000, 0.3, demo.DEFAULT_SIZES,
                                      demo.DEFAULT_DEPENDENCE, entropy, lambda m: None)
    truth = demo._Truth.of(schema, codes)
    rows = []
    for mech in (("grr",) if quick else MECHS):
        for eps in ((1.0, 2.0) if quick else DEMO_EPSILONS):
            rr = RecordRandomizer(schema, mech, eps).randomize(codes, demo._rng(entropy, mech, eps))
            marg = estimate_marginals(rr, "em")
            ests = estimates(rr, pair_counts(rr), marginals=marg)
            pairs = list(zip(truth.pairs, truth.pair_tables))
            js = {e: float(np.mean([demo._js(t, ests[p][e]) for p, t in pairs]))
                  for e in ESTIMATORS}
            mse = {e: float(np.mean([np.sum((ests[p][e] - t) ** 2) for p, t in pairs]))
                   for e in ESTIMATORS}
            for e in ESTIMATORS:
                params = {"grid": "demo", "mechanism": mech, "whole_record_epsilon": eps,
                          "estimator": e}
                res.add(params, "mean_pair_js", js[e], "bits")
                res.add(params, "mean_pair_mse", mse[e], "probability^2")
            rows.append((mech, eps, js, mse))
            print(f"demo {mech} eps {eps:g}: " + ", ".join(f"{e} {v:.4f}" for e, v in js.items()),
                  flush=True)
    return rows


# ---- report --------------------------------------------------------------------------------------
def r2(x: float) -> str:
    return f"{x:.2f}"


def worst_cells(cells: list, count: int = 15) -> list:
    """The ``count`` cells where the default is furthest above the best (MSE or JS)."""
    return sorted(cells, key=lambda c: -max(c["ratio"]["default"]))[:count]


def overview(cells: list) -> list:
    rows = []
    for e in ESTIMATORS:
        a = np.array([c["ratio"][e] for c in cells])
        rows.append((e, r2(np.median(a[:, 0])), r2(a[:, 0].max()), int((a[:, 0] > TARGET).sum()),
                     r2(np.median(a[:, 1])), r2(a[:, 1].max()), int((a[:, 1] > TARGET).sum())))
    return rows


def reading(every: list, demo_rows: list) -> list:
    """The page's summary: the target, the rule replaced, the rule tried, the demo."""
    def ratios(e: str, m: int) -> np.ndarray:
        return np.array([c["ratio"][e][m] for c in every])

    d, u, s = ratios("default", 0), ratios("toward uniform", 0), ratios("share of signal", 0)
    dj, uj = ratios("default", 1), ratios("toward uniform", 1)
    over = int((d > TARGET).sum())
    worst = worst_cells(every)
    ind_u = np.array([c["independence"][0] / c["uniform"][0] for c in worst])
    far = ind_u > 1
    worst_eps = {m.group(1) for c in worst
                 if (m := re.search(r"eps ([0-9.]+)(?:,|$)", c["label"]))}
    lines = [
        "## Reading",
        "",
        f"* Target (the default at most {TARGET}x the best of the unshrunk EM, the uniform table "
        f"and the independence table in every cell): **{'met' if over == 0 else 'not met'}**, "
        f"{over} of {len(every)} cells "
        f"above it in MSE ({int((dj > TARGET).sum())} in JS), worst {d.max():.2f}x (JS "
        f"{dj.max():.2f}x). The rule it replaced (`toward uniform`): {int((u > TARGET).sum())} "
        f"cells ({int((uj > TARGET).sum())} in JS), worst {u.max():.2f}x ({uj.max():.2f}x).",
        f"* Median over the cells: {np.median(d):.2f}x (JS {np.median(dj):.2f}x) against "
        f"{np.median(u):.2f}x ({np.median(uj):.2f}x) for the rule replaced; the default is below "
        f"it in {int((d < u).sum())} of {len(every)} cells.",
        f"* In {int(far.sum())} of the default's {len(worst)} worst cells (table below: epsilon "
        f"{', '.join(sorted(worst_eps, key=float))}) the independence table of the default "
        "marginals, toward which it shrinks, is itself further from the truth than the uniform "
        f"table (median {np.median(ind_u[far]) if far.any() else float('nan'):.1f}x its MSE), "
        "and the default cannot be better than it by much"
        + (f"; in the other {len(worst) - int(far.sum())} the independence table is the best "
           "reference and the default stays above it" if not far.all() else "") + ".",
        f"* `share of signal` alone (the weight tried first, charging the inversion's noise): "
        f"median {np.median(s):.2f}x, {int((s > TARGET).sum())} cells above {TARGET}; against the "
        f"default it is worse by more than 0.1 in {int((s > d + 0.1).sum())} cells (up to "
        f"{(s / d).max():.2f}x the default's error, in {every[int(np.argmax(s / d))]['label']}) "
        f"and better by more than 0.1 in {int((s < d - 0.1).sum())}.",
    ]
    if demo_rows:
        below = sum(v["default"] < v["uniform"] for _, _, v, _ in demo_rows)
        better = sum(v["default"] < v["toward uniform"] for _, _, v, _ in demo_rows)
        lines.append(
            f"* The demo: the default pair tables are below the uniform table's JS in {below} of "
            f"{len(demo_rows)} (mechanism, budget) points and below the rule replaced in {better}.")
    return lines + [""]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a small smoke run into a temporary folder")
    ap.add_argument("--reps", type=int, default=10, help="randomizations per cell (default 10)")
    args = ap.parse_args(argv)
    q = args.quick
    reps = 2 if q else args.reps
    res = Results("pair_shrink", results_dir=Path(tempfile.mkdtemp()) if q else None)
    rng = np.random.default_rng(20261124)

    main_cells, n_cells = [], []
    for mech in (("grr", "oue") if q else MECHS):
        for eps in ((0.1, 1.0) if q else EPSILONS):
            for shape in (((4, 4),) if q else SHAPES):
                for kind in TRUTHS:
                    main_cells.append(run_cell(res, "main", mech, eps, 2_000 if q else 10_000,
                                               shape, kind, reps, rng))
            for n in ((1_000,) if q else (1_000, 100_000)):
                for kind in TRUTHS:
                    n_cells.append(run_cell(res, "n", mech, eps, n, (4, 4), kind, reps, rng))
    adult = adult_cells(res, reps, rng, q)
    demo_rows = demo_cells(res, q)

    every = main_cells + n_cells + adult
    head = ["estimator", "MSE / best: median", "max", f"cells > {TARGET}",
            "JS / best: median", "max", f"cells > {TARGET}"]
    worst = worst_cells(every)
    ratio_d = np.array([c["ratio"]["default"] for c in every])
    for stat, f in (("median", np.median), ("max", np.max)):
        res.add({"grid": "all"}, f"default_mse_over_best_{stat}", float(f(ratio_d[:, 0])), "ratio")
        res.add({"grid": "all"}, f"default_js_over_best_{stat}", float(f(ratio_d[:, 1])), "ratio")

    lines = [
        "# Pair tables: the default shrinkage against the unshrunk EM and the references",
        "",
        *reading(every, demo_rows),
        "",
        "Produced by `benchmarks/pair_shrink.py` (`make bench-pair_shrink`); what each estimator "
        "and grid is: the script's docstring. Per cell the truth is fixed and the reports are "
        f"randomized {reps} times; `/ best` is an estimator's mean error over the best mean of "
        "the unshrunk EM (`MLE`), the uniform table and the independence table of the default "
        f"marginals in that cell. Target: the default at most {TARGET}x the best in every cell.",
        "",
        f"## Overview ({len(every)} cells: {len(main_cells)} main, {len(n_cells)} n, "
        f"{len(adult)} Adult pairs)",
        "",
        md_table(head, overview(every)),
        "",
        "Main grid only:",
        "",
        md_table(head, overview(main_cells)),
        "",
    ]
    if adult:
        lines += ["Adult pairs only:", "", md_table(head, overview(adult)), ""]
    lines += [
        "## Worst cells of the default",
        "",
        md_table(["cell", "default MSE / best", "JS / best", "toward uniform MSE / best",
                  "JS / best", "MSE: default ± se", "MLE", "uniform", "independence"],
                 [(c["label"], r2(c["ratio"]["default"][0]), r2(c["ratio"]["default"][1]),
                   r2(c["ratio"]["toward uniform"][0]), r2(c["ratio"]["toward uniform"][1]),
                   f"{c['default'][0]:.2e} ± {c['default'][1]:.1e}", f"{c['MLE'][0]:.2e}",
                   f"{c['uniform'][0]:.2e}", f"{c['independence'][0]:.2e}") for c in worst]),
        "",
        "## By truth and budget (main and n grids): default / best (MSE), median and max; the "
        "previous rule's beside it",
        "",
    ]
    rows = []
    for kind in TRUTHS:
        for eps in sorted({c_eps for c_eps in (EPSILONS if not q else (0.1, 1.0))}):
            cs = [c for c in main_cells + n_cells if f", {kind}," in c["label"]
                  and f"eps {eps:g}," in c["label"]]
            if not cs:
                continue
            d = np.array([c["ratio"]["default"][0] for c in cs])
            u = np.array([c["ratio"]["toward uniform"][0] for c in cs])
            rows.append((kind, f"{eps:g}", len(cs), r2(np.median(d)), r2(d.max()),
                         r2(np.median(u)), r2(u.max())))
    lines += [md_table(["truth", "epsilon", "cells", "default median", "max",
                        "toward uniform median", "max"], rows), ""]
    lines += [
        "## The demo (`reidrisk demo`, seed 0): mean over its 15 pairs",
        "",
        "JS divergence (bits), as the demo prints it:",
        "",
        md_table(["mechanism", "whole-record epsilon", *ESTIMATORS],
                 [(m, f"{e:g}", *(f"{v[x]:.4f}" for x in ESTIMATORS)) for m, e, v, _ in demo_rows]),
        "",
        "MSE:",
        "",
        md_table(["mechanism", "whole-record epsilon", *ESTIMATORS],
                 [(m, f"{e:g}", *(f"{v[x]:.2e}" for x in ESTIMATORS)) for m, e, _, v in demo_rows]),
        "",
    ]
    res.write(lines, echo=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
