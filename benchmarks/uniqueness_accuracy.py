"""Paper 000, Fig. 3-7: how well "more than T people share this record" is predicted, on UCI Adult
and on a synthetic population, without and with local differential privacy.

Each dataset is the population (N = its size). m databases are independent samples at rate s; in
the private setting every database is randomized with k-RR at epsilon per attribute (the paper's
mechanism). 1,000 query records are drawn from the population per seed; the truth is each record's
count in the population. For every method we report accuracy (the paper's measure), balanced
accuracy and ROC AUC, for every threshold T, and sweep m (Fig. 3, 5), T (Fig. 4, 6) and epsilon
(Fig. 7). At the default point (m = 1, s = 0.1, epsilon = 1) we also report the ablations of the
default configuration, the paper's floor and alpha, and the calibration of P(X = 1).

Run from the repository root::

    .venv/bin/python benchmarks/uniqueness_accuracy.py            # full run (~10 min)
    .venv/bin/python benchmarks/uniqueness_accuracy.py --quick    # smoke run into a temp folder
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import Results, md_table  # noqa: E402
from reidrisk.copula import GaussianCopula  # noqa: E402
from reidrisk.data.synthetic import make_population  # noqa: E402
from reidrisk.latent import LatentClassModel  # noqa: E402
from reidrisk.mechanisms import RecordRandomizer  # noqa: E402
from reidrisk.uniqueness.baselines import (  # noqa: E402
    ProductDomainTooLarge,
    group_sizes,
    idue_q,
    indep_q,
    opt_mean,
    opt_mode,
)
from reidrisk.uniqueness.decisions import classification, decide, reliability  # noqa: E402
from reidrisk.uniqueness.floors import INV_E  # noqa: E402
from reidrisk.uniqueness.model import Database, UniquenessModel, estimate_population  # noqa: E402
from reidrisk.uniqueness.posterior import population_count_posterior  # noqa: E402

TS = (1, 2, 5, 10, 20, 50, 100)
EPSILONS = (0.1, 0.3, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0)
MS = tuple(range(1, 11))
RATE = 0.1
N_TARGETS = 1000
IDUE_MAX_CELLS = 2**26
SYNTHETIC = dict(n=30_000, sizes=[6, 8, 5, 10, 4, 3, 2, 12, 2], dependence=0.6, rng=1)

# methods drawn in the sweep figures, in legend order
WORLD_METHODS = ("reidrisk, latent world", "reidrisk, copula world")
SWEEP_METHODS = ("reidrisk", *WORLD_METHODS, "reidrisk, first database only", "paper", "Copula", "Indep",
                 "Indep + eq. 15-19", "OptMode", "OptMean", "majority rule", "Sample (c / s)", "IDUE_OUE",
                 "IDUE_RAPPOR")
ABLATIONS = ("reidrisk, plain counts", "reidrisk, no neighbours", "reidrisk, rule P > 1/2",
             "reidrisk, EM to the noise-level fixed point",
             "paper, alpha by data", "paper, Poisson floor", "paper, MI pair fit", "paper, rule P > 1/2")
FIG = "uniqueness"  # file name prefix of the figures (the results name)
PAPER_CLAIMS = {("adult", False): "0.4-0.8 at T = 1 (Fig. 4)", ("adult", True): "0.25-0.6 at T = 1 (Fig. 6)"}


# ---- data --------------------------------------------------------------------------------------
def load_datasets(quick: bool) -> dict:
    out = {}
    try:
        from reidrisk.data.adult import load_adult_encoded

        schema, codes = load_adult_encoded(variant="paper000", complete_only=True, domain="observed")
        out["adult"] = (schema, np.asarray(codes, dtype=np.int64))
    except Exception as exc:  # the data set may be absent on this machine
        print(f"Adult skipped: {exc}")
    syn = make_population(**SYNTHETIC)
    out["synthetic"] = (syn.schema, syn.codes.astype(np.int64))
    return out


# ---- one configuration ---------------------------------------------------------------------------
def point_draws(name, N, private, eps, m, seed):
    """The draws that fix a point of a population of N: its generator, the m databases' membership
    masks (N,) and the query records' indices, in the order ``make_point`` takes them."""
    rng = np.random.default_rng([zlib.crc32(name.encode()), int(private), int(eps * 1000), m, seed])
    members = [rng.random(N) < RATE for _ in range(m)]
    pick = rng.choice(N, N_TARGETS, replace=False)
    return rng, members, pick


def make_point(name, schema, pop, sizes, private, eps, m, seed):
    """The m databases (k-RR at eps per attribute when private), the query records, their truth
    and the generator that made them, all fixed by (dataset, privacy, epsilon, m, seed)."""
    N, g = pop.shape
    rng, members, pick = point_draws(name, N, private, eps, m, seed)
    raws = [pop[member] for member in members]
    rec, truth = pop[pick], sizes[pick]
    if private:
        rnd = RecordRandomizer(schema, "grr", eps * g)
        dbs = [Database(rnd.randomize(d, rng), RATE, f"db{i}") for i, d in enumerate(raws)]
    else:
        dbs = [Database(d, RATE, f"db{i}") for i, d in enumerate(raws)]
    return dbs, rec, truth, raws, rng


def run_point(name, schema, pop, sizes, private, eps, m, seed, ablations=False, idue=True,
              keep=None):
    """Every method at one (dataset, privacy, epsilon, m, seed): {method: (decisions, scores)}, the
    truth, and timings. decisions (r, len(TS)) bool; scores (r, len(TS)) or None."""
    N, g = pop.shape
    dbs, rec, truth, raws, rng = make_point(name, schema, pop, sizes, private, eps, m, seed)
    T = np.asarray(TS, dtype=np.float64)
    out = {}
    t0 = time.perf_counter()
    paper = UniquenessModel("paper", rng=seed).fit(dbs, N, schema)
    sp = paper.score(rec, T)
    t_paper = time.perf_counter() - t0
    out["paper"] = (sp.greater, ranked(sp.p_greater, sp.expected))
    q, counts = sp.q, sp.counts
    out["Copula"] = (N * q[:, None] > T[None, :], np.repeat(q[:, None], T.size, 1))
    qi = indep_q(paper.estimate_.marginals, rec)
    out["Indep"] = (N * qi[:, None] > T[None, :], np.repeat(qi[:, None], T.size, 1))
    pi = population_count_posterior(qi, N, paper.rates_, counts, alpha=0.1, floor="lambertw")
    pgi = pi.prob_greater(T)
    out["Indep + eq. 15-19"] = (decide("expected", pgi, pi.expected, T), ranked(pgi, pi.expected))
    out["OptMean"] = (np.broadcast_to(opt_mean(sizes) > T, (rec.shape[0], T.size)), None)
    out["OptMode"] = (np.broadcast_to(opt_mode(sizes) > T, (rec.shape[0], T.size)), None)
    out["majority rule"] = (np.broadcast_to(np.mean(sizes[:, None] > T[None, :], axis=0) > 0.5,
                                            (rec.shape[0], T.size)), None)
    if not private:
        est = np.mean(counts / paper.rates_[None, :], axis=1)
        out["Sample (c / s)"] = (est[:, None] > T[None, :], np.repeat(est[:, None], T.size, 1))
    elif idue:
        for mech, label in (("oue", "IDUE_OUE"), ("rappor", "IDUE_RAPPOR")):
            try:
                qd = idue_q(np.concatenate(raws), rec, schema.sizes, mech, epsilon=eps * g,
                            rng=rng, max_cells=IDUE_MAX_CELLS).q
            except ProductDomainTooLarge:
                continue
            out[label] = (N * qd[:, None] > T[None, :], np.repeat(qd[:, None], T.size, 1))
    t1 = time.perf_counter()
    ours = UniquenessModel(rng=seed).fit(dbs, N, schema)
    t_fit = time.perf_counter() - t1
    so = ours.score(rec, T)
    t_ours = time.perf_counter() - t1
    out["reidrisk"] = (so.greater, ranked(so.p_greater, so.expected))
    # both world models of the prior (the default picks one of them, ``world="auto"``)
    world_p, latent_share, shape_share = {}, float("nan"), float("nan")
    for world, label in zip(("latent", "copula"), WORLD_METHODS):
        model = ours if ours.world_ == world else UniquenessModel(world=world, rng=seed).fit(dbs, N, schema)
        sw = so if model is ours else model.score(rec, T)
        out[label] = (sw.greater, ranked(sw.p_greater, sw.expected))
        world_p[label] = sw.p_unique
        if world == "latent":
            latent_share = shared_share(model.latent_.sample(N, np.random.default_rng(seed)))
            if model.shape_ is not None:
                shape_share = shared_share(model.shape_.sample(N, np.random.default_rng(seed)))
    if m > 1:
        s1 = UniquenessModel(rng=seed).fit(dbs[:1], N, schema).score(rec, T)
        out["reidrisk, first database only"] = (s1.greater, ranked(s1.p_greater, s1.expected))
    if keep is not None:
        keep.append((truth, so.p_unique, sp.p_unique, world_p, latent_share, shape_share))
    if ablations:
        ours.counts = "plain"
        sa = ours.score(rec, T)
        out["reidrisk, plain counts"] = (sa.greater, ranked(sa.p_greater, sa.expected))
        out["reidrisk, rule P > 1/2"] = (decide("probability", so.p_greater), ranked(so.p_greater, so.expected))
        if not private:
            sn = UniquenessModel(neighbors=False, rng=seed).fit(dbs, N, schema).score(rec, T)
            out["reidrisk, no neighbours"] = (sn.greater, ranked(sn.p_greater, sn.expected))
            sa = UniquenessModel("paper", alpha="auto", rng=seed).fit(dbs, N, schema).score(rec, T)
            out["paper, alpha by data"] = (sa.greater, ranked(sa.p_greater, sa.expected))
        else:
            se = UniquenessModel(em_stop="noise", rng=seed).fit(dbs, N, schema).score(rec, T)
            out["reidrisk, EM to the noise-level fixed point"] = (se.greater, ranked(se.p_greater, se.expected))
        pf = population_count_posterior(q, N, paper.rates_, counts, alpha=0.5, floor="poisson")
        pgf = pf.prob_greater(T)
        out["paper, Poisson floor"] = (decide("expected", pgf, pf.expected, T), ranked(pgf, pf.expected))
        smi = UniquenessModel("paper", copula_fit="mi", rng=seed).fit(dbs, N, schema).score(rec, T)
        out["paper, MI pair fit"] = (smi.greater, ranked(smi.p_greater, smi.expected))
        out["paper, rule P > 1/2"] = (decide("probability", sp.p_greater), ranked(sp.p_greater, sp.expected))
    floors = {}
    if ablations:
        for floor, alphas in (("lambertw", (0.001, 0.01, 0.05, 0.1, 0.2, INV_E)),
                              ("poisson", (0.01, 0.1, 0.3, 0.5, 0.7, 0.9))):
            for a in alphas:
                pf = population_count_posterior(q, N, paper.rates_, counts, alpha=a, floor=floor)
                floors[(floor, a)] = decide("expected", pf.prob_greater(T), pf.expected, T)
        floors[("none", 0.0)] = decide("expected", sp.p_greater,
                                       population_count_posterior(q, N, paper.rates_, counts, floor="none").expected, T)
    timing = dict(paper_fit_score_s=t_paper, reidrisk_fit_s=t_fit, reidrisk_fit_score_s=t_ours)
    return out, truth, floors, timing


def ranked(p_greater, expected):
    """A score for the AUC: P(X > T), ties (e.g. probabilities that are exactly 0 far below the
    posterior's support) broken by E[X]. Returns (r, t) ranks."""
    out = np.empty(p_greater.shape)
    for j in range(p_greater.shape[1]):
        order = np.lexsort((expected, p_greater[:, j]))
        out[order, j] = np.arange(order.size)
    return out


def calibrated_reference(prob, bins=10, min_count=50, draws=2000, tol=0.05, seed=0):
    """The noise floor of the calibration check: the largest reliability gap (bins with >=
    ``min_count`` records, as ``Reliability.max_gap``) of a perfectly calibrated predictor that makes
    the same predictions ``prob``, i.e. with outcomes drawn as Bernoulli(prob). Returns (median gap,
    95 % quantile, share of draws whose gap is <= ``tol``) over ``draws`` outcome draws (fixed seed)."""
    p = np.asarray(prob, dtype=np.float64)
    idx = np.clip(np.digitize(p, np.linspace(0.0, 1.0, bins + 1)) - 1, 0, bins - 1)
    count = np.bincount(idx, minlength=bins)
    ok = count >= min_count
    if not ok.any():
        return float("nan"), float("nan"), float("nan")
    pred = np.bincount(idx, weights=p, minlength=bins)[ok] / count[ok]
    onehot = (idx[:, None] == np.flatnonzero(ok)[None, :]).astype(np.float64)  # (r, bins kept)
    gen = np.random.default_rng(seed)
    gaps = np.empty(draws)
    for s0 in range(0, draws, 250):  # blocks of draws, each vectorized over records and draws
        y = (gen.random((p.size, min(250, draws - s0))) < p[:, None]).astype(np.float64)
        obs = (onehot.T @ y) / count[ok][:, None]
        gaps[s0:s0 + y.shape[1]] = np.max(np.abs(obs - pred[:, None]), axis=0)
    return float(np.median(gaps)), float(np.quantile(gaps, 0.95)), float(np.mean(gaps <= tol))


class _ShapeOracle(UniquenessModel):
    """The default model with the latent class world, except that its prior's bootstrap population
    is drawn from a given latent class model (``shape``) instead of its own shape world: with the
    latent class fit of the whole raw population it shows whether the posterior step is calibrated
    when the simulated population is as clumped as the real one (an oracle, not a method)."""

    shape = None

    def _shape_world(self, gen):
        return self.shape


class _WorldModel(UniquenessModel):
    """The default model, except that its prior is calibrated on a population simulated from a
    given copula (``world``) instead of its own fit: with the copula of the whole raw population
    it shows what the best pairwise model could do (an oracle, not a method)."""

    oracle = None

    def _simulate(self):
        own, self.copula_ = self.copula_, self.oracle
        try:
            return super()._simulate()
        finally:
            self.copula_ = own


def shared_share(codes):
    """Share of the records whose values some other record shares."""
    return float(np.mean(group_sizes(codes) > 1))


def identifiability(name, schema, pop, sizes, seeds):
    """Private default point: how clumped the world of each model is, and how calibrated P(X = 1)
    is when the prior is simulated from the copula fitted to the *whole raw population* (an
    oracle that knows every pair table exactly). Returns a dict of measurements."""
    N = pop.shape[0]
    full = estimate_population([Database(pop, 1.0)], schema)
    oracle = GaussianCopula().fit(list(full.marginals), full.tables)
    gen = np.random.default_rng(zlib.crc32(f"worlds {name}".encode()))
    out = {"population": shared_share(pop), "oracle copula": shared_share(oracle.sample(N, gen))}
    latent_oracle = LatentClassModel(rng=0).fit(pop, schema)
    out["oracle latent"] = shared_share(latent_oracle.sample(N, gen))
    fitted_share, probs, truths, lprobs = [], [], [], []
    for seed in range(seeds):
        dbs, rec, truth, _, _ = make_point(name, schema, pop, sizes, True, 1.0, 1, seed)
        own = UniquenessModel(world="copula", rng=seed).fit(dbs, N, schema)
        fitted_share.append(shared_share(own.copula_.sample(N, gen)))
        model = _WorldModel(world="copula", rng=seed)
        model.oracle = oracle
        probs.append(model.fit(dbs, N, schema).score(rec, np.array([1.0])).p_unique)
        truths.append(truth)
        lmodel = _ShapeOracle(world="latent", rng=seed)
        lmodel.shape = latent_oracle
        lprobs.append(lmodel.fit(dbs, N, schema).score(rec, np.array([1.0])).p_unique)
    out["fitted copula"] = float(np.mean(fitted_share))
    out["oracle gap"] = reliability(np.concatenate(probs), np.concatenate(truths) == 1).max_gap(50)
    out["oracle latent gap"] = reliability(np.concatenate(lprobs), np.concatenate(truths) == 1).max_gap(50)
    return out


def evaluate(out, truth):
    """{(method, T): Classification}"""
    res = {}
    for method, (dec, score) in out.items():
        for j, t in enumerate(TS):
            res[(method, t)] = classification(dec[:, j], truth, t, None if score is None else score[:, j])
    return res


# ---- aggregation -----------------------------------------------------------------------------------
def mean_sd(values):
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return float("nan"), float("nan")
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0


def add_points(res: Results, rows: dict, base: dict):
    """rows: {(method, T): [Classification per seed]} -> JSON points (mean over seeds)."""
    summary = {}
    for (method, t), cs in rows.items():
        for metric in ("accuracy", "balanced_accuracy", "auc"):
            m, sd = mean_sd([getattr(c, metric) for c in cs])
            if np.isnan(m):
                continue
            res.add({**base, "method": method, "T": t, "seeds": len(cs), "sd_over_seeds": sd},
                    metric, m, "fraction")
            summary[(method, t, metric)] = (m, sd)
    return summary


def fmt(m, sd=None):
    if m is None or np.isnan(m):
        return "-"
    return f"{m:.3f}" if sd is None else f"{m:.3f} ± {sd:.3f}"


# ---- figures ---------------------------------------------------------------------------------------
def plot_sweep(curves: dict, xs, xlabel, title, path: Path, log_x=False):
    """curves: {(panel, metric): {method: [mean per x]}}"""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = sorted({p for p, _ in curves}, key=lambda p: list(dict.fromkeys(p for p, _ in curves)).index(p))
    metrics = ["accuracy", "balanced_accuracy"]
    fig, axes = plt.subplots(2, len(panels), figsize=(3.6 * len(panels), 6.2), squeeze=False,
                             constrained_layout=True)
    cmap = plt.get_cmap("tab20")
    colors = {m: cmap(i % 20) for i, m in enumerate(SWEEP_METHODS)}
    for c, panel in enumerate(panels):
        for r, metric in enumerate(metrics):
            ax = axes[r, c]
            for method in SWEEP_METHODS:
                ys = curves.get((panel, metric), {}).get(method)
                if ys is None or np.all(np.isnan(ys)):
                    continue
                lw = 2.4 if method in ("reidrisk", "paper") else 1.2
                ax.plot(xs, ys, marker="o", ms=3, lw=lw, label=method, color=colors[method])
            if log_x:
                ax.set_xscale("log")
            ax.set_ylim(0, 1)
            ax.grid(alpha=0.3)
            ax.set_xlabel(xlabel)
            ax.set_ylabel(metric.replace("_", " "))
            if r == 0:
                ax.set_title(panel, fontsize=10)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    for ax in axes.ravel():
        h, lab = ax.get_legend_handles_labels()
        for hh, ll in zip(h, lab):
            if ll not in labels:
                handles.append(hh)
                labels.append(ll)
    fig.legend(handles, labels, loc="outside lower center", ncol=6, fontsize=8, frameon=False)
    fig.suptitle(title, fontsize=11)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")


def plot_reliability(rels: dict, path: Path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(rels), figsize=(3.4 * len(rels), 3.4), squeeze=False,
                             constrained_layout=True)
    for ax, (panel, by_method) in zip(axes[0], rels.items()):
        ax.plot([0, 1], [0, 1], ls=":", color="grey")
        for method, rel in by_method.items():
            ok = rel.count >= 50
            ax.errorbar(rel.predicted[ok], rel.observed[ok], yerr=1.96 * rel.se[ok], marker="o",
                        ms=3, capsize=2, label=method)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_title(panel, fontsize=10)
        ax.set_xlabel("predicted P(X = 1)")
        ax.set_ylabel("observed share unique")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, frameon=False)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")


# ---- main ------------------------------------------------------------------------------------------
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="1 seed, few sweep points, temp output")
    ap.add_argument("--seeds", type=int, default=3, help="seeds at the default point (T sweep)")
    ap.add_argument("--sweep-seeds", type=int, default=2, help="seeds per point of the m and epsilon sweeps")
    ap.add_argument("--out-dir", type=Path, default=None)
    ap.add_argument("--datasets", default="adult,synthetic", help="comma-separated: adult, synthetic")
    ap.add_argument("--no-m-sweep", action="store_true", help="skip the m sweep")
    ap.add_argument("--epsilons", default=None, help="comma-separated epsilon sweep (default: all)")
    ap.add_argument("--no-ablations", action="store_true", help="default point without the ablations")
    ap.add_argument("--no-idue", action="store_true", help="skip the IDUE baselines in the sweeps")
    ap.add_argument("--name", default="uniqueness", help="results file name (docs/results/<name>.md/.json)")
    args = ap.parse_args(argv)
    out_dir = args.out_dir or (Path(tempfile.mkdtemp()) if args.quick else None)
    global FIG
    FIG = args.name
    res = Results(args.name, results_dir=out_dir)
    results_dir = res.results_dir
    results_dir.mkdir(parents=True, exist_ok=True)
    seeds = 1 if args.quick else args.seeds
    sweep_seeds = 1 if args.quick else args.sweep_seeds
    ms = () if args.no_m_sweep else ((1, 3) if args.quick else MS)
    epsilons = (0.3, 3.0) if args.quick else EPSILONS
    if args.epsilons:
        epsilons = tuple(float(e) for e in args.epsilons.split(","))
    started = time.perf_counter()
    datasets = {k: v for k, v in load_datasets(args.quick).items() if k in args.datasets.split(",")}
    settings = [(name, private) for name in datasets for private in (False, True)]
    panel = lambda name, private: f"{name}, {'k-RR eps = 1' if private else 'non-private'}"  # noqa: E731

    # -- default point: every method, every T, ablations, floors, calibration ----------------------
    headline, floor_rows, timings, calib = {}, {}, {}, {}
    for name, private in settings:
        schema, pop = datasets[name]
        sizes = group_sizes(pop)
        rows, frows, keep = {}, {}, []
        for seed in range(seeds):
            out, truth, floors, timing = run_point(name, schema, pop, sizes, private, 1.0, 1, seed,
                                                   ablations=not args.no_ablations, keep=keep,
                                                   idue=not args.no_idue)
            for k, c in evaluate(out, truth).items():
                rows.setdefault(k, []).append(c)
            for key, dec in floors.items():
                for j, t in enumerate(TS):
                    if t in (1, 10):
                        frows.setdefault((key, t), []).append(classification(dec[:, j], truth, t))
            for k, v in timing.items():
                timings.setdefault((name, private, k), []).append(v)
        headline[(name, private)] = add_points(
            res, rows, {"sweep": "T", "dataset": name, "private": private, "epsilon": 1.0 if private else None,
                        "m": 1, "s": RATE})
        floor_rows[(name, private)] = frows
        truth = np.concatenate([k[0] for k in keep])
        calib[(name, private)] = {"reidrisk": reliability(np.concatenate([k[1] for k in keep]), truth == 1),
                                  "paper": reliability(np.concatenate([k[2] for k in keep]), truth == 1)}
        ref = calibrated_reference(np.concatenate([k[1] for k in keep]))
        calib[(name, private)]["reference"] = ref
        for label in WORLD_METHODS:
            calib[(name, private)][label] = reliability(np.concatenate([k[3][label] for k in keep]), truth == 1)
        calib[(name, private)]["latent share"] = float(np.nanmean([k[4] for k in keep]))
        calib[(name, private)]["shape share"] = (float(np.nanmean([k[5] for k in keep]))
                                                 if private else float("nan"))
        res.add({"dataset": name, "private": private, "epsilon": 1.0 if private else None,
                 "world": "fitted latent class model", "seeds": seeds}, "shared_share",
                calib[(name, private)]["latent share"], "fraction")
        if private:
            worlds = identifiability(name, schema, pop, sizes, seeds)
            calib[(name, private)]["worlds"] = worlds
            res.add({"dataset": name, "private": private, "epsilon": 1.0,
                     "world": "shape world (latent class model without the category prior)", "seeds": seeds},
                    "shared_share", calib[(name, private)]["shape share"], "fraction")
            res.add({"dataset": name, "private": True, "method": "reidrisk, latent world, bootstrap "
                     "population from the latent class fit of the whole raw population (oracle)",
                     "min_count": 50, "records": int(truth.size)}, "calibration_max_gap",
                    worlds["oracle latent gap"], "probability")
            for key in ("population", "oracle copula", "fitted copula", "oracle latent"):
                res.add({"dataset": name, "private": True, "epsilon": 1.0, "world": key,
                         "seeds": seeds if key == "fitted copula" else 1}, "shared_share",
                        worlds[key], "fraction")
            res.add({"dataset": name, "private": True, "method": "reidrisk, prior simulated from the "
                     "copula of the whole raw population (oracle)", "min_count": 50,
                     "records": int(truth.size)}, "calibration_max_gap", worlds["oracle gap"],
                    "probability")
        for label, v in zip(("calibration_max_gap_if_calibrated_median", "calibration_max_gap_if_calibrated_q95",
                             "calibration_pass_rate_if_calibrated"), ref):
            res.add({"dataset": name, "private": private, "method": "reidrisk", "min_count": 50,
                     "records": int(truth.size), "draws": 2000}, label, v,
                    "fraction" if label.endswith("rate_if_calibrated") else "probability")
        for method in ("reidrisk", "paper", *WORLD_METHODS):
            rel = calib[(name, private)][method]
            res.add({"dataset": name, "private": private, "method": method, "min_count": 50,
                     "records": int(truth.size)}, "calibration_max_gap", rel.max_gap(50), "probability")
            for i in range(rel.count.size):
                if rel.count[i]:
                    res.add({"dataset": name, "private": private, "method": method,
                             "bin": [float(rel.lo[i]), float(rel.hi[i])], "records": int(rel.count[i]),
                             "mean_predicted": float(rel.predicted[i])},
                            "observed_unique_share", float(rel.observed[i]), "fraction")
        for ((fl, a), t), cs in frows.items():
            for metric in ("accuracy", "balanced_accuracy"):
                m, sd = mean_sd([getattr(c, metric) for c in cs])
                res.add({"sweep": "floor", "dataset": name, "private": private, "floor": fl, "alpha": a,
                         "T": t, "seeds": len(cs), "sd_over_seeds": sd}, metric, m, "fraction")
        print(f"[{time.perf_counter() - started:6.0f} s] default point done: {panel(name, private)}")
        sys.stdout.flush()

    # -- sweeps over m and epsilon ---------------------------------------------------------------------
    m_curves, eps_curves, t_curves, eps_worlds = {}, {}, {}, {}
    for name, private in settings:
        schema, pop = datasets[name]
        sizes = group_sizes(pop)
        for m in ms:
            rows = {}
            for seed in range(sweep_seeds):
                out, truth, _, _ = run_point(name, schema, pop, sizes, private, 1.0, m, 100 + seed,
                                             idue=(name != "adult"))
                for k, c in evaluate(out, truth).items():
                    if k[1] == 10:
                        rows.setdefault(k, []).append(c)
            summ = add_points(res, rows, {"sweep": "m", "dataset": name, "private": private,
                                          "epsilon": 1.0 if private else None, "m": m, "s": RATE})
            for (method, _t, metric), (mean, _) in summ.items():
                m_curves.setdefault((panel(name, private), metric), {}).setdefault(method, []).append(mean)
            for method in SWEEP_METHODS:  # keep the curves aligned when a method is absent
                for metric in ("accuracy", "balanced_accuracy"):
                    lst = m_curves.setdefault((panel(name, private), metric), {}).setdefault(method, [])
                    if len(lst) < ms.index(m) + 1:
                        lst.append(np.nan)
        print(f"[{time.perf_counter() - started:6.0f} s] m sweep done: {panel(name, private)}")
        sys.stdout.flush()
        # T curves from the default point
        for method in SWEEP_METHODS:
            for metric in ("accuracy", "balanced_accuracy"):
                t_curves.setdefault((panel(name, private), metric), {})[method] = [
                    headline[(name, private)].get((method, t, metric), (np.nan, 0))[0] for t in TS]
    for name in datasets:
        schema, pop = datasets[name]
        sizes = group_sizes(pop)
        for eps in epsilons:
            rows, ekeep = {}, []
            for seed in range(sweep_seeds):
                out, truth, _, _ = run_point(name, schema, pop, sizes, True, eps, 1, 200 + seed,
                                             idue=(not args.no_idue and (name != "adult" or seed == 0)),
                                             keep=ekeep)
                for k, c in evaluate(out, truth).items():
                    if k[1] in (1, 10):
                        rows.setdefault(k, []).append(c)
            summ = add_points(res, rows, {"sweep": "epsilon", "dataset": name, "private": True,
                                          "epsilon": eps, "m": 1, "s": RATE})
            etruth = np.concatenate([k[0] for k in ekeep]) == 1
            for label in WORLD_METHODS:
                gap = reliability(np.concatenate([k[3][label] for k in ekeep]), etruth).max_gap(50)
                eps_worlds.setdefault(name, {}).setdefault(label, []).append(gap)
                res.add({"sweep": "epsilon", "dataset": name, "private": True, "epsilon": eps,
                         "method": label, "min_count": 50, "records": int(etruth.size)},
                        "calibration_max_gap", gap, "probability")
                # the noise floor of that gap: a perfectly calibrated predictor making the same
                # predictions (as the default point's table; calibrated_reference)
                floor95 = calibrated_reference(np.concatenate([k[3][label] for k in ekeep]))[1]
                eps_worlds.setdefault(name, {}).setdefault(f"{label}: calibrated 95 % gap", []).append(floor95)
                res.add({"sweep": "epsilon", "dataset": name, "private": True, "epsilon": eps,
                         "method": label, "min_count": 50, "records": int(etruth.size),
                         "reference": "perfectly calibrated predictor, 95 % quantile of its largest gap"},
                        "calibrated_max_gap_q95", floor95, "probability")
            share = float(np.nanmean([k[4] for k in ekeep]))
            eps_worlds.setdefault(name, {}).setdefault("latent share", []).append(share)
            sshare = float(np.nanmean([k[5] for k in ekeep]))
            eps_worlds.setdefault(name, {}).setdefault("shape share", []).append(sshare)
            res.add({"sweep": "epsilon", "dataset": name, "private": True, "epsilon": eps,
                     "world": "shape world (latent class model without the category prior)",
                     "seeds": sweep_seeds}, "shared_share", sshare, "fraction")
            res.add({"sweep": "epsilon", "dataset": name, "private": True, "epsilon": eps,
                     "world": "fitted latent class model", "seeds": sweep_seeds}, "shared_share",
                    share, "fraction")
            for (method, t, metric), (mean, _) in summ.items():
                eps_curves.setdefault((f"{name}, T = {t}", metric), {}).setdefault(method, []).append(mean)
            for t in (1, 10):
                for method in SWEEP_METHODS:
                    for metric in ("accuracy", "balanced_accuracy"):
                        lst = eps_curves.setdefault((f"{name}, T = {t}", metric), {}).setdefault(method, [])
                        if len(lst) < epsilons.index(eps) + 1:
                            lst.append(np.nan)
        print(f"[{time.perf_counter() - started:6.0f} s] epsilon sweep done: {name}")
        sys.stdout.flush()
    for (name, private, k), v in timings.items():
        res.add({"dataset": name, "private": private, "step": k, "records": N_TARGETS}, "time",
                float(np.median(v)), "s")

    if ms:
        plot_sweep(m_curves, list(ms), "number of databases m", "Fig. 3 / 5: T = 10, s = 0.1, varying m",
                   results_dir / f"{args.name}_m.png")
    plot_sweep(t_curves, list(TS), "threshold T", "Fig. 4 / 6: m = 1, s = 0.1, varying T",
               results_dir / f"{args.name}_T.png", log_x=True)
    plot_sweep(eps_curves, list(epsilons), "epsilon per attribute (k-RR)",
               "Fig. 7: m = 1, s = 0.1, varying epsilon", results_dir / f"{args.name}_epsilon.png", log_x=True)
    plot_reliability({panel(n, p): {k: r for k, r in v.items() if k in ("paper", *WORLD_METHODS)}
                      for (n, p), v in calib.items()}, results_dir / f"{args.name}_reliability.png")
    res.write_json()
    res.write_markdown(report(datasets, settings, headline, floor_rows, calib, timings, panel, seeds,
                              sweep_seeds, m_curves, eps_curves, ms, epsilons,
                              time.perf_counter() - started, eps_worlds, sys.argv[1:]))


# ---- the markdown ----------------------------------------------------------------------------------
TARGETS = {False: {1: 0.87, 10: 0.81}, True: {1: 0.78, 10: 0.68}}


def report(datasets, settings, headline, floor_rows, calib, timings, panel, seeds, sweep_seeds,
           m_curves, eps_curves, ms, epsilons, seconds, eps_worlds=None, argv=()) -> str:
    lines = ["# Population uniqueness (paper 000, Fig. 3-7): accuracy, balanced accuracy, AUC", ""]
    lines += [
        f"Each dataset is the population. One database samples it at s = {RATE} (m databases in "
        "the m sweep); private databases are randomized with k-RR at epsilon per attribute (paper 000 "
        f"eq. 2; epsilon = 1 at the default point). {N_TARGETS:,} query records per seed are drawn "
        "from the population; the truth is each record's count in the population. \"count > T\" is "
        "classified by every method. Accuracy is the paper's measure; it rewards the majority answer "
        "(on Adult 80 % of records are not unique, so \"never unique\" scores 0.80 at T = 1), so "
        "balanced accuracy (mean of the true-positive and true-negative rates; 0.5 for any constant "
        "rule) and ROC AUC of each method's score are reported beside it (the score of a posterior "
        "method is P(X > T), ties broken by E[X]; of Copula, Indep and IDUE, q).",
        "",
        f"Default point: {seeds} seeds x {N_TARGETS:,} records; m and epsilon sweeps: {sweep_seeds} "
        f"seeds per point. Values are means over seeds (± the standard deviation across seeds).",
        "",
        "Datasets: **adult** = UCI Adult, the 9 categorical attributes of paper 000 (observed domain, "
        "product of domain sizes 5.4e7), 30,162 complete records; **synthetic** = "
        f"`make_population(30000, {SYNTHETIC['sizes']}, dependence=0.6, rng=1)`, a population drawn "
        "from a Gaussian copula (so the paper's model is correctly specified there).",
        "",
        "Methods: **reidrisk** = `UniquenessModel()` (calibrated negative-binomial prior fitted by "
        "empirical Bayes, channel-aware counts, balanced decision rule); **paper** = "
        "`UniquenessModel('paper')`: q from the copula, Lambert-W floor with alpha = 0.1, eq. 15-19 "
        "with the plain counts, classified by E[X] rounded to a whole number; **Copula** = E = N q; "
        "**Indep** = E = N q with q the product of the estimated marginals; **Indep + eq. 15-19** = "
        "that q through the paper's posterior; **OptMean / OptMode** = the population's mean / most "
        "common group size (they see the truth); **majority rule** = the most common answer in the "
        "population; **Sample (c / s)** = the database count scaled up (non-private only); "
        "**IDUE_OUE / IDUE_RAPPOR** = a unary-encoding frequency oracle over the product domain at "
        "the same total budget (private only; on Adult its 5.4e7-cell bit vector per person was "
        "simulated in aggregate).",
        "",
    ]
    # headline table
    key_methods = ["reidrisk", *WORLD_METHODS, "paper", "Copula", "Indep", "Indep + eq. 15-19", "OptMode", "OptMean",
                   "majority rule", "Sample (c / s)", "IDUE_OUE", "IDUE_RAPPOR"]
    lines += ["## Default point (m = 1, s = 0.1, epsilon = 1 per attribute)", ""]
    checks = []
    for name, private in settings:
        h = headline[(name, private)]
        lines += [f"### {panel(name, private)}", ""]
        rows = []
        for method in key_methods + list(ABLATIONS):
            if (method, 1, "accuracy") not in h:
                continue
            row = [method]
            for t in (1, 10):
                for metric in ("accuracy", "balanced_accuracy", "auc"):
                    row.append(fmt(*h.get((method, t, metric), (np.nan, None))))
            rows.append(row)
        lines += [md_table(["method", "acc T=1", "bal. acc T=1", "AUC T=1", "acc T=10",
                            "bal. acc T=10", "AUC T=10"], rows), ""]
        if name == "adult":
            tgt = TARGETS[private]
            for t in (1, 10):
                ours = h[("reidrisk", t, "balanced_accuracy")][0]
                best_base = max((h[(mm, t, "balanced_accuracy")][0], mm) for mm in key_methods[1:]
                                if (mm, t, "balanced_accuracy") in h and not mm.startswith("reidrisk"))
                checks.append((panel(name, private), t, ours, tgt[t], best_base))
        rel = calib[(name, private)]["reidrisk"]
        checks_cal = rel.max_gap(50)
        lines += [f"Calibration of P(X = 1) (reidrisk, {int(rel.count.sum()):,} records pooled over "
                  f"seeds): largest gap between mean prediction and observed share over bins with "
                  f">= 50 records = **{checks_cal:.3f}** (paper's method: "
                  f"{calib[(name, private)]['paper'].max_gap(50):.3f}).", ""]
    # targets
    lines += ["## Targets (Adult, balanced accuracy of reidrisk's default)", ""]
    trow = []
    for pan, t, ours, tgt, (base, bname) in checks:
        trow.append([pan, t, f"{ours:.3f}", f">= {tgt}", "met" if ours >= tgt else f"missed by {tgt - ours:.3f}",
                     f"{bname} {base:.3f}", "yes" if ours > base else "no"])
    lines += [md_table(["setting", "T", "reidrisk", "target", "", "best baseline", "reidrisk beats it"], trow), ""]
    cal_rows = []
    for name, private in settings:
        rel = calib[(name, private)]["reidrisk"]
        gap = rel.max_gap(50)
        ok = rel.count >= 50
        se = float(np.max(rel.se[ok])) if ok.any() else float("nan")
        med, q95, passes = calib[(name, private)]["reference"]
        cal_rows.append([panel(name, private), f"{gap:.3f}", f"{se:.3f}",
                         "met" if gap <= 0.05 else f"missed by {gap - 0.05:.3f}",
                         f"{med:.3f}", f"{q95:.3f}", f"{passes:.2f}"])
    lines += ["Calibration target: the reliability curve of P(X = 1) within 0.05 of the diagonal in "
              "every bin with >= 50 records. The binomial standard error of such a bin is up to "
              "the value shown, so gaps of that size are noise. The last three columns give the "
              "noise floor of the check itself: the largest gap of a perfectly calibrated predictor "
              "making the same predictions (outcomes drawn as Bernoulli(P(X = 1)), 2,000 draws): its "
              "median, its 95 % quantile and how often it is <= 0.05. A gap below the 95 % quantile "
              "is consistent with perfect calibration.", "",
              md_table(["setting", "largest gap", "largest bin s.e.", "",
                        "calibrated: median gap", "calibrated: 95 % gap", "calibrated: P(gap <= 0.05)"],
                       cal_rows), "",
              f"![reliability]({FIG}_reliability.png)", ""]
    world_rows = [[name, f"{w['population']:.3f}", f"{w['oracle copula']:.3f}",
                   f"{w['fitted copula']:.3f}", f"{w['oracle latent']:.3f}",
                   f"{calib[(name, True)]['shape share']:.3f}",
                   f"{calib[(name, True)]['reidrisk'].max_gap(50):.3f}",
                   f"{w['oracle gap']:.3f}", f"{w['oracle latent gap']:.3f}"]
                  for (name, private), v in calib.items() if private and "worlds" in v
                  for w in [v["worlds"]]]
    if world_rows:
        lines += ["Where the private gaps come from. A record's P(X = 1) depends on how clumped the "
                  "population is: how many people share their values with someone. Under k-RR with "
                  "epsilon = 1 per attribute almost no report keeps all its values, and the prior is "
                  "calibrated on a population simulated from a world fitted to the reports. The table "
                  "gives the share of people who share their values with someone in the population; "
                  "in a population drawn from the copula fitted to the pair tables of the *whole raw "
                  "population* (the best any pairwise model can know), from the copula the copula "
                  "world fits to the k-RR database, from the latent class model fitted to the whole "
                  "raw population, and from the shape world the default draws its bootstrap population "
                  "from (latent class model without the category prior, fitted to the k-RR database; "
                  "means over seeds); and the largest reliability gap of the default, of the copula "
                  "world with its prior simulated from the whole-population copula, and of the default "
                  "with its bootstrap population drawn from the whole-population latent class model "
                  "(oracles, not methods: the last one shows what the posterior step gives when the "
                  "simulated population is as clumped as the real one):", "",
                  md_table(["dataset", "shared: population", "shared: whole-population copula",
                            "shared: fitted copula", "shared: whole-population latent model",
                            "shared: shape world", "largest gap: default",
                            "largest gap: copula oracle prior", "largest gap: latent oracle population"],
                           world_rows), ""]
    lines += world_section(datasets, settings, headline, calib, panel, epsilons, eps_worlds or {}, argv)
    # floors (measured with the ablations only: --no-ablations leaves the section out)
    floor_settings = [s for s in settings if floor_rows.get(s)]
    if floor_settings:
        lines += ["## The paper's floor and alpha (default point, paper's method with the plain counts)", "",
                  "Balanced accuracy (accuracy in brackets) of the paper's method for each floor and alpha. "
                  "The Lambert-W floor exists only for alpha <= 1/e; `none` is eq. 15-19 without a floor.", ""]
    for name, private in floor_settings:
        frows = floor_rows[(name, private)]
        keys = sorted({k for k, _ in frows}, key=lambda k: (k[0], k[1]))
        rows = []
        for key in keys:
            row = [key[0], f"{key[1]:.3g}"]
            for t in (1, 10):
                cs = frows[(key, t)]
                ba, _ = mean_sd([c.balanced_accuracy for c in cs])
                acc, _ = mean_sd([c.accuracy for c in cs])
                row.append(f"{ba:.3f} ({acc:.3f})")
            rows.append(row)
        lines += [f"### {panel(name, private)}", "", md_table(["floor", "alpha", "T = 1", "T = 10"], rows), ""]
    # sweeps
    # the m sweep's figure and table only where it ran (--no-m-sweep writes no figure)
    lines += ["## Sweeps", ""] + ([f"![m sweep]({FIG}_m.png)", ""] if ms else []) + [
              f"![T sweep]({FIG}_T.png)", "", f"![epsilon sweep]({FIG}_epsilon.png)", ""]
    for title, curves, xs, xname in (("m (T = 10)", m_curves, ms, "m"), ("epsilon (private, m = 1)", eps_curves, epsilons, "epsilon")):
        if not len(xs):
            continue
        lines += [f"### Balanced accuracy against {title}", ""]
        panels = list(dict.fromkeys(p for p, _ in curves))
        for pan in panels:
            rows = []
            for method in ("reidrisk", *WORLD_METHODS, "reidrisk, first database only", "paper", "Copula", "Indep",
                           "Indep + eq. 15-19", "IDUE_OUE"):
                ys = curves.get((pan, "balanced_accuracy"), {}).get(method)
                if ys is None or np.all(np.isnan(ys)):
                    continue
                rows.append([method] + [fmt(y) for y in ys])
            lines += [f"**{pan}**", "", md_table([xname] + [f"{x:g}" for x in xs], rows), ""]
    # paper claims
    lines += ["## Where the paper's claims hold", "",
              "Checked on the two datasets here (the paper also used Default, COVID-19 and Census).", ""]
    for (name, private), claim in PAPER_CLAIMS.items():
        if (name, private) not in headline:
            continue
        h = headline[(name, private)]
        acc = h[("paper", 1, "accuracy")][0]
        maj = h[("majority rule", 1, "accuracy")][0]
        lines.append(f"- Accuracy at T = 1, {panel(name, private)}: claimed {claim}; measured "
                     f"{acc:.3f} for the paper's method, against {maj:.3f} for the majority rule (its "
                     f"balanced accuracy is {h[('paper', 1, 'balanced_accuracy')][0]:.3f}).")
    paper_set = ("paper", "Copula", "OptMean", "OptMode", "IDUE_OUE", "IDUE_RAPPOR")
    for (pan, metric), by_method in sorted(m_curves.items()):
        if metric != "accuracy" or "paper" not in by_method:
            continue
        ys = by_method["paper"]
        lines.append(f"- Fig. 3 / 5 (\"the proposed method slightly improved accuracy as the number of "
                     f"databases increased\"), {pan}, T = 10: accuracy {ys[0]:.3f} at m = {ms[0]} and "
                     f"{ys[-1]:.3f} at m = {ms[-1]} ({'holds' if ys[-1] > ys[0] else 'does not hold'}).")
    for (pan, metric), by_method in sorted(eps_curves.items()):
        if metric != "accuracy" or not pan.endswith("T = 10"):
            continue
        wins = 0
        for k in range(len(epsilons)):
            vals = {m: by_method[m][k] for m in paper_set if m in by_method and not np.isnan(by_method[m][k])}
            wins += int(max(vals, key=vals.get) == "paper") if vals else 0
        lines.append(f"- Fig. 7 (\"the proposed method produced the best results for almost all values of "
                     f"epsilon\"), {pan}: best in accuracy among the paper's methods ({', '.join(paper_set)}) "
                     f"at {wins} of {len(epsilons)} values of epsilon.")
    lines += ["", f"Run time: {seconds / 60:.1f} min.", ""]
    return "\n".join(lines)


def world_section(datasets, settings, headline, calib, panel, epsilons, eps_worlds, argv) -> list[str]:
    """The latent class world against the copula world (issue targets on Adult)."""
    lines = ["## World model: latent class model against the Gaussian copula", "",
             "The prior's cell probability q and, without a raw database (for the latent class "
             "world also with one, `RAW_LATENT_SIMULATED`), the population the prior is "
             "calibrated on, come from a world model: the Gaussian copula of the pair tables (paper "
             "000) or a latent class model (`reidrisk.latent`: a mixture of K products of "
             "categoricals, MAP-EM through the k-RR channel, K by held-out likelihood). "
             "`UniquenessModel()` uses `world=\"auto\"`: the copula when a database is raw, the "
             "latent class world when every database is randomized. The "
             "latent class world's prior is calibrated on a population drawn from its *shape world*: "
             "the latent class model fitted without the category prior (`SHAPE_CATEGORY_PRIOR`), "
             "whose Dirichlet pseudo-records, negligible on raw records, outweigh a class's "
             "information in strongly randomized reports and make the fitted world diffuse; q keeps "
             "the default fit. \"shared\" is the share of people who share their values with "
             "someone in a population of N drawn from the fitted latent class world (q's) and from "
             "the shape world (private settings; population: see the last column).", ""]
    rows = []
    for name, private in settings:
        h = headline[(name, private)]
        pop_share = shared_share(datasets[name][1])
        for label in WORLD_METHODS:
            rel = calib[(name, private)][label]
            row = [panel(name, private), label.split(", ")[1]]
            for t in (1, 10):
                row.append(fmt(h.get((label, t, "balanced_accuracy"), (np.nan, None))[0]))
            for t in (1, 10):
                row.append(fmt(h.get((label, t, "auc"), (np.nan, None))[0]))
            row.append(f"{rel.max_gap(50):.3f}")
            row.append(f"{calib[(name, private)]['latent share']:.3f}" if label.startswith("reidrisk, latent")
                       else "-")
            row.append(f"{calib[(name, private)]['shape share']:.3f}"
                       if label.startswith("reidrisk, latent") and private else "-")
            row.append(f"{pop_share:.3f}")
            rows.append(row)
    lines += [md_table(["setting", "world", "bal. acc T=1", "bal. acc T=10", "AUC T=1", "AUC T=10",
                        "largest gap", "shared: fitted latent world", "shared: shape world",
                        "shared: population"], rows), ""]
    for name, by in eps_worlds.items():
        names = {"latent share": "shared: fitted latent world", "shape share": "shared: shape world"}
        erows = [[names.get(label) or label.split(", ", 1)[1]]
                 + [f"{v:.3f}" for v in vals] for label, vals in by.items()]
        lines += [f"Largest reliability gap of P(X = 1) by world, and the share sharing of the fitted "
                  f"latent class world and of the shape world, against epsilon per attribute ({name}, k-RR, m = 1, the "
                  f"epsilon sweep's seeds pooled; population shares {shared_share(datasets[name][1]):.3f}; "
                  f"\"calibrated 95 % gap\": the 95 % quantile of the largest gap of a perfectly "
                  f"calibrated predictor making the same predictions, so a gap below it is noise):", "",
                  md_table(["epsilon"] + [f"{e:g}" for e in epsilons], erows), ""]
    if argv:
        lines += [f"This run's options: `{' '.join(argv)}`.", ""]
    return lines


if __name__ == "__main__":
    main()
