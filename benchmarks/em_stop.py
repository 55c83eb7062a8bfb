"""The EM's default (``stop="noise"``, reidrisk.estimation.em) against the fully converged EM and
norm-sub: mean squared error of the estimated distribution, and the EM steps it takes.

Estimators on each randomized sample:

* ``default``: ``estimate_marginal``'s EM as shipped (uniform start, SQUAREM, the noise rule on the
  extrapolated remaining deviance);
* ``converged``: the same EM run to ``("noise", 1e-12)`` (up to 200,000 steps);
* ``norm-sub``: the inversion projected onto the simplex;
* ``uniform``: the uniform distribution (doing nothing);
* ``previous``: the default before the one-engine change (plain EM from the uniform start, stopped
  as soon as one step gained a deviance below 1e-4 per free parameter; up to 10,000 steps),
  re-implemented here for comparison;
* ``norm-sub start``: the default rule started from the norm-sub estimate (a considered
  alternative to the uniform start).

Grids:

* small domains: GRR, subset and OUE; k in {2, 6, 20}; epsilon in {0.1, 0.5, 1, 3}; n = 10,000;
  30 truths from Dirichlet(0.5) per cell; reports from each mechanism's sampler;
* a large domain: GRR and OUE, k = 1024, (n, epsilon) in {(1e5, 1), (1e5, 2), (1e6, 1), (1e7, 1)};
  truths spread out (Dirichlet(0.5)) and with a heavy head (Zipf, exponent 1.1, in a random
  order), 3 each; support counts drawn from their exact distribution (GRR: the kept reports
  binomial, the others multinomial over the remaining k - 1 values; OUE: independent binomials per
  value), since 10^7 OUE reports of 1024 bits do not fit in memory;
* a check on truth families that are in neither grid (the rule was not chosen on them):
  near-uniform (Dirichlet(5)) and geometric (ratio 0.99) truths, GRR and OUE, k = 1024, n = 10^6,
  epsilon = 1, and k = 20, n = 10^5, epsilon = 0.5 and 1; 3 truths each.

MSE = sum over values of (estimated - true probability)^2, averaged over truths. The target: the
default's MSE within 1.2x of the better of norm-sub and the converged EM in every cell.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/em_stop.py [--quick]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import Results, md_table  # noqa: E402
from reidrisk.estimation.em import NOISE_TOL, poisson_gain  # noqa: E402
from reidrisk.estimation.frequency import invert, marginals_from_counts, norm_sub  # noqa: E402
from reidrisk.mechanisms import make_mechanism  # noqa: E402

CONVERGED = dict(stop=("noise", 1e-12), max_iter=200_000)
TARGET = 1.2
ESTIMATORS = ("default", "converged", "norm-sub", "uniform", "previous", "norm-sub start")


def previous_default(w, n, mech, max_iter=10_000):
    """The rule replaced by the one engine: plain EM steps from the uniform start until one step
    gains a deviance below NOISE_TOL per free parameter (structured channel a I + q 1 1^T)."""
    k = w.size
    a, q = mech.p_support - mech.q_support, mech.q_support
    col = a + k * q
    z = np.full(k, n / k)
    mu = a * z + q * z.sum()
    for it in range(1, max_iter + 1):  # noqa: B007 - the count is returned after the loop
        r = np.divide(w, mu, out=np.zeros(k), where=mu > 0)
        z_new = z * (a * r + q * r.sum()) / col
        mu_new = a * z_new + q * z_new.sum()
        done = 2 * poisson_gain(w, mu, mu_new) < NOISE_TOL * max(k - 1, 1)
        z, mu = z_new, mu_new
        if done:
            break
    return z / z.sum(), it


def exact_counts(mech_name, mech, c, rng):
    """Support counts of reports whose true values have counts ``c``, from their exact law."""
    k = c.size
    if mech_name == "oue":
        return (rng.binomial(c, mech.p_support) + rng.binomial(c.sum() - c, mech.q_support)
                ).astype(np.float64)
    kept = rng.binomial(c, mech.p_support)
    moved = rng.multinomial(c - kept, np.full(k - 1, 1.0 / (k - 1)))  # (k, k-1): row x
    full = np.zeros((k, k))
    full[~np.eye(k, dtype=bool)] = moved.ravel()
    return (kept + full.sum(axis=0)).astype(np.float64)


def estimates(mech, w, n):
    """{estimator: (probabilities, EM steps)} on one sample's support counts (module doc)."""
    out = {}
    for name, kw in (("default", {}), ("converged", CONVERGED)):
        fe = marginals_from_counts([mech], [w], [n], **kw)[0]
        out[name] = (fe.probs, fe.iterations)
    z = norm_sub(invert(w, n, mech.p_support, mech.q_support), n)
    out["norm-sub"] = (z / z.sum(), 0)
    out["uniform"] = (np.full(w.size, 1.0 / w.size), 0)
    out["previous"] = previous_default(w, n, mech)
    fe = marginals_from_counts([mech], [w], [n], inits=[np.maximum(z, 0) + 1e-300])[0]
    out["norm-sub start"] = (fe.probs, fe.iterations)
    return out


def truth_of(kind, k, rng):
    if kind == "Dirichlet(0.5)":
        return rng.dirichlet(np.full(k, 0.5))
    if kind == "Dirichlet(5)":
        return rng.dirichlet(np.full(k, 5.0))
    if kind == "geometric(0.99)":
        t = 0.99 ** np.arange(k)
        return rng.permutation(t / t.sum())
    t = 1.0 / np.arange(1, k + 1) ** 1.1  # Zipf(1.1)
    return rng.permutation(t / t.sum())


def run_cell(res, grid, mech_name, k, eps, n, kind, truths, rng, sampler):
    mech = make_mechanism(mech_name, eps, k)
    errs = {e: [] for e in ESTIMATORS}
    steps = {e: [] for e in ESTIMATORS}
    t0 = time.perf_counter()
    for _ in range(truths):
        truth = truth_of(kind, k, rng)
        if sampler:
            x = rng.choice(k, size=n, p=truth)
            w, n_present = mech.support_counts(mech.perturb(x, rng))
            w = np.asarray(w, dtype=np.float64)
        else:
            w, n_present = exact_counts(mech_name, mech, rng.multinomial(n, truth), rng), n
        for e, (p, its) in estimates(mech, w, n_present).items():
            errs[e].append(float(np.sum((p - truth) ** 2)))
            steps[e].append(its)
    params = {"grid": grid, "mechanism": mech_name, "k": k, "epsilon": eps, "n": n, "truth": kind,
              "truths": truths}
    s = {}
    for e in ESTIMATORS:
        mse, its = float(np.mean(errs[e])), float(np.mean(steps[e]))
        s[e] = (mse, its)
        res.add({**params, "estimator": e}, "mse", mse, "squared error")
        if its:
            res.add({**params, "estimator": e}, "em_steps", its, "steps")
    best = min(s["converged"][0], s["norm-sub"][0])
    s["ratio"] = s["default"][0] / best
    s["ratio_previous"] = s["previous"][0] / best
    s["ratio_nsstart"] = s["norm-sub start"][0] / best
    res.add(params, "default_mse_over_best_of_converged_and_norm_sub", s["ratio"], "ratio")
    res.add(params, "previous_mse_over_best_of_converged_and_norm_sub", s["ratio_previous"],
            "ratio")
    print(f"{grid}: {mech_name} k={k} eps={eps:g} n={n:,} {kind}: ratio {s['ratio']:.2f} "
          f"(previous {s['ratio_previous']:.2f}) [{time.perf_counter() - t0:.1f} s]", flush=True)
    return s


def r2(x):
    return f"{x:.2f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a small smoke run into a temporary folder")
    args = ap.parse_args(argv)
    res = Results("em_stop", results_dir=Path(tempfile.mkdtemp()) if args.quick else None)
    rng = np.random.default_rng(20261123)
    q = args.quick

    small_n, small_truths = (2_000, 3) if q else (10_000, 30)
    small = []
    for mech_name in ("grr", "subset", "oue"):
        for k in (2, 6, 20):
            for eps in (0.1, 0.5, 1.0, 3.0):
                s = run_cell(res, "small", mech_name, k, eps, small_n, "Dirichlet(0.5)",
                             small_truths, rng, sampler=True)
                small.append((mech_name, k, eps, s))

    settings = [(10**5, 1.0), (10**5, 2.0), (10**6, 1.0), (10**7, 1.0)]
    if q:
        settings = [(20_000, 2.0)]
    large = []
    for mech_name in ("grr", "oue"):
        for n, eps in settings:
            for kind in ("Dirichlet(0.5)", "Zipf(1.1)"):
                s = run_cell(res, "large", mech_name, 1024, eps, n, kind, 1 if q else 3, rng,
                             sampler=False)
                large.append((mech_name, n, eps, kind, s))

    check_cells = [(1024, 10**6, 1.0), (20, 10**5, 0.5), (20, 10**5, 1.0)]
    if q:
        check_cells = [(20, 20_000, 1.0)]
    check = []
    for mech_name in ("grr", "oue"):
        for k, n, eps in check_cells:
            for kind in ("Dirichlet(5)", "geometric(0.99)"):
                s = run_cell(res, "check", mech_name, k, eps, n, kind, 1 if q else 3, rng,
                             sampler=False)
                check.append((mech_name, k, n, eps, kind, s))

    every = [s for *_, s in small] + [s for *_, s in large] + [s for *_, s in check]
    worst = max(every, key=lambda s: s["ratio"])
    where = next(lbl for lbl, s in
                 [(f"small grid, {m} k = {k}, epsilon = {e:g}", s) for m, k, e, s in small]
                 + [(f"k = 1024, {m}, n = {n:,}, epsilon = {e:g}, {kd}", s)
                    for m, n, e, kd, s in large]
                 + [(f"check, {m} k = {k}, n = {n:,}, epsilon = {e:g}, {kd}", s)
                    for m, k, n, e, kd, s in check] if s is worst)
    grid_ratios = [s["ratio"] for *_, s in small] + [s["ratio"] for *_, s in large]
    check_ratios = [s["ratio"] for *_, s in check]
    prev_ratios = [s["ratio_previous"] for *_, s in small] + [s["ratio_previous"]
                                                              for *_, s in large]
    res.add({"grid": "all"}, "worst_default_ratio", worst["ratio"], "ratio")
    ns_worst = max(every, key=lambda s: s["ratio_nsstart"])
    steps_default = float(np.mean([s["default"][1] for s in every]))
    steps_ns = float(np.mean([s["norm-sub start"][1] for s in every]))

    def row_small(m, k, e, s):
        return [m, k, f"{e:g}", r2(s["ratio"]), r2(s["ratio_previous"]), r2(s["ratio_nsstart"]),
                f"{s['default'][1]:.0f}", f"{s['converged'][1]:.0f}", f"{s['previous'][1]:.0f}"]

    def mse(x):
        return f"{x:.3g}"

    def row_large(lead, s):
        return [*lead, r2(s["ratio"]), mse(s["default"][0]), mse(s["converged"][0]),
                mse(s["norm-sub"][0]), mse(s["uniform"][0]), mse(s["previous"][0]),
                r2(s["ratio_nsstart"]), f"{s['default'][1]:.0f}", f"{s['converged'][1]:.0f}"]

    large_head = ["default / best", "default", "converged", "norm-sub", "uniform", "previous",
                  "norm-sub start / best", "steps (default)", "steps (converged)"]
    body = [
        "# The EM's default against the converged EM and norm-sub",
        "",
        "Mean squared error of the estimated distribution (sum over values of the squared error of "
        "each probability), averaged over truths. `default` is `estimate_marginal`'s EM as shipped "
        "(uniform start, SQUAREM, stop when the extrapolated remaining deviance is below 1e-4 per "
        "free parameter: `reidrisk.estimation.em`); `converged` runs the same EM to "
        "`stop=(\"noise\", 1e-12)`; `previous` is the default before the one-engine change (plain EM "
        "stopped when one step gained less than 1e-4 per free parameter); `norm-sub start` is the "
        "default rule started from the norm-sub estimate. \"/ best\": MSE divided by the better of "
        f"norm-sub and the converged EM (target: at most {TARGET} in every cell).",
        "",
        f"**Worst cell of the default: {worst['ratio']:.2f} ({where}).** Grid cells: "
        f"{min(grid_ratios):.2f}-{max(grid_ratios):.2f}, above {TARGET}: "
        f"{sum(r > TARGET for r in grid_ratios)} of {len(grid_ratios)}. Check families (not used "
        f"to choose the rule): {min(check_ratios):.2f}-{max(check_ratios):.2f}, above {TARGET}: "
        f"{sum(r > TARGET for r in check_ratios)} of {len(check_ratios)}. The previous default: "
        f"{min(prev_ratios):.2f}-{max(prev_ratios):.2f}, above {TARGET} in "
        f"{sum(r > TARGET for r in prev_ratios)} of {len(prev_ratios)} grid cells.",
        "",
        f"## Small domains: n = {small_n:,}, {small_truths} truths from Dirichlet(0.5) per cell",
        "",
        md_table(["mechanism", "k", "epsilon", "default / best", "previous / best",
                  "norm-sub start / best", "steps (default)", "steps (converged)",
                  "steps (previous)"], [row_small(*c) for c in small]),
        "",
        "## A large domain: k = 1024",
        "",
        "Truths spread out (Dirichlet(0.5)) or with a heavy head (Zipf, exponent 1.1, random order); "
        "MSE of each estimator, mean EM steps.",
        "",
        md_table(["mechanism", "n", "epsilon", "truth", *large_head],
                 [row_large([m, f"{n:,}", f"{e:g}", kd], s) for m, n, e, kd, s in large]),
        "",
        "## Check: truth families not in the grids",
        "",
        "Near-uniform (Dirichlet(5)) and geometric (ratio 0.99, random order) truths; the rule and "
        "its threshold were fixed before these were run.",
        "",
        md_table(["mechanism", "k", "n", "epsilon", "truth", *large_head],
                 [row_large([m, k, f"{n:,}", f"{e:g}", kd], s) for m, k, n, e, kd, s in check]),
        "",
        f"Why the default starts from the uniform distribution: started from the norm-sub "
        f"estimate the same rule takes fewer steps (mean {steps_ns:.0f} against {steps_default:.0f} "
        f"over all cells) but its worst cell is {ns_worst['ratio_nsstart']:.2f} against "
        f"{worst['ratio']:.2f}: norm-sub sets values to zero that the maximum-likelihood estimate "
        "keeps, and multiplicative EM steps grow such values so slowly that the rule stops before "
        "they recover.",
        "",
        "Where the signal is weak (large k, small epsilon and n, spread-out truths) the maximum-"
        "likelihood estimate and norm-sub are both worse than the uniform guess (column `uniform`); "
        "the default follows the maximum-likelihood estimate there, as the target asks, and the "
        "collection pipeline's marginal shrinkage toward uniform (`reidrisk.collect.pipeline`) is "
        "what guards a model against it. The previous default's early stop was better than both in "
        "those cells only because it returned (nearly) the uniform start, and worse where the "
        "data were informative.",
        "",
        "Other processes (tests and benchmarks) were running on the same 2-core "
        "machine during this run; the EM steps are exact, the run time below is not a speed "
        "measurement.",
    ]
    res.write_json()
    res.write_markdown("\n".join(body))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
