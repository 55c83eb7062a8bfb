"""Where the latent class world's P(unique) loses its calibration under LDP (Adult, k-RR).

Each hypothesis is one variant of ``UniquenessModel(world="latent")`` scored on the query records of
private points drawn as benchmarks/uniqueness_accuracy.py draws them (``make_point``, seeds 0, 1, ...:
at epsilon = 1 the databases and truth of its default point's first seeds; its epsilon sweep uses
seeds 200, 201, ..., so at other epsilons the points are not those of its pages):

* ``default``: the current default (prior calibrated on the simulated q and database counts);
* ``counts twice``: the former default, a q-only prior then conditioned on the counts' likelihood
  (``SIMULATED_COUNT_FEATURES = False``);
* ``oracle shape world``: the bootstrap population drawn from the latent class fit of the whole raw
  population (an oracle, not a method: is the shape of the simulated population the limit?);
* ``shape world from q's fit``: the shape world started from q's world (its K) and continued without
  the category prior, instead of its own K selection and starts (q and the population from one fit);
* ``mixture predictive``: no prior at all, P(X = 1) = (1 - q)^(N - 1) of q's world.

For each: the largest reliability gap of P(X = 1) (bins with >= 50 records), the noise floor of that
check (95 % quantile of the largest gap of a perfectly calibrated predictor making the same
predictions), balanced accuracy at T = 1, and the gap over the query records in the database and
over those not in it (the double counting shows there).

``--raw-seeds`` adds the raw-database section: ``world="latent"`` with its prior calibrated on the
simulated (q, neighbours, counts) (``RAW_LATENT_SIMULATED``, the current path), the former path
(prior on the reference database's cross-fitted q, then the counts' likelihood), the current path
with the oracle shape world, and the copula world (what ``world="auto"`` picks with a raw
database), on Adult and the synthetic population.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import uniqueness_accuracy as ua  # noqa: E402
from _harness import Results, md_table  # noqa: E402
from reidrisk.latent import LatentClassModel  # noqa: E402
from reidrisk.uniqueness import model as model_module  # noqa: E402
from reidrisk.uniqueness.decisions import classification, reliability  # noqa: E402
from reidrisk.uniqueness.model import UniquenessModel  # noqa: E402

VARIANTS = ("default", "counts twice", "oracle shape world", "shape world from q's fit",
            "mixture predictive")


class _FromQ(UniquenessModel):
    """Shape world = q's world continued without the category prior (same K, no own starts)."""

    def _shape_world(self, gen):
        data = [d.data if d.randomized else np.asarray(d.data) for d in self.databases_]
        return LatentClassModel(self.latent_.n_classes_, category_prior=model_module.SHAPE_CATEGORY_PRIOR,
                                rng=gen).fit(data, self.schema_, init=self.latent_)


RAW_VARIANTS = ("latent world, joint prior", "latent world, reference prior",
                "latent world, joint prior, oracle shape world", "copula world")


def membership(pop, private, eps, seed, name="adult"):
    """Which query records of make_point are in its (first) database (its draws: point_draws)."""
    _, members, pick = ua.point_draws(name, pop.shape[0], private, eps, 1, seed)
    return members[0][pick]


def run(variant, schema, pop, sizes, eps, seed, oracle):
    N = pop.shape[0]
    dbs, rec, truth, _, _ = ua.make_point("adult", schema, pop, sizes, True, eps, 1, seed)
    flag = model_module.SIMULATED_COUNT_FEATURES
    try:
        if variant == "counts twice":
            model_module.SIMULATED_COUNT_FEATURES = False
        if variant == "oracle shape world":
            m = ua._ShapeOracle(world="latent", rng=seed)
            m.shape = oracle
        elif variant == "shape world from q's fit":
            m = _FromQ(world="latent", rng=seed)
        else:
            m = UniquenessModel(world="latent", rng=seed)
        m.fit(dbs, N, schema)
        s = m.score(rec, np.array([1.0]))
    finally:
        model_module.SIMULATED_COUNT_FEATURES = flag
    if variant == "mixture predictive":
        p = (1.0 - m.latent_.prob(rec)) ** (N - 1)
        dec = p < np.mean(p)  # "X > 1" where P(X = 1) is below its mean (no prior, no base rate)
        return p, dec, truth, membership(pop, True, eps, seed)
    return s.p_unique, s.greater[:, 0], truth, membership(pop, True, eps, seed)


def _gaps(P, unique, M):
    """The largest reliability gap of P(X = 1) over bins with >= 50 records, its noise floor (the
    95 % quantile of the largest gap of a calibrated predictor making the same predictions), and
    the largest gaps over the records in the database (``M``) and over those not in it."""
    return (reliability(P, unique).max_gap(50), ua.calibrated_reference(P)[1],
            reliability(P[M], unique[M]).max_gap(50), reliability(P[~M], unique[~M]).max_gap(50))


def _add_membership(res, base, P, unique, M, gin, gout):
    """Record the gaps in and out of the database, and the mean P(X = 1) and share unique of the
    records in it."""
    res.add({**base, "records": int(M.sum()), "subset": "in the database"},
            "calibration_max_gap", gin, "probability")
    res.add({**base, "records": int((~M).sum()), "subset": "not in the database"},
            "calibration_max_gap", gout, "probability")
    res.add({**base, "subset": "in the database"}, "mean_p_unique", float(P[M].mean()), "probability")
    res.add({**base, "subset": "in the database"}, "share_unique", float(unique[M].mean()), "fraction")


def run_raw(variant, name, schema, pop, sizes, seed, oracle=None):
    """One raw point of benchmarks/uniqueness_accuracy.py (10 % raw database, epsilon key 1, seed):
    P(X = 1), P(X > T) and the decisions at T = 1, 10, the truth and the database membership.
    "latent world, joint prior": ``world="latent"`` as it is; "latent world, reference prior": the
    same with ``RAW_LATENT_SIMULATED = False`` (the prior fitted on the reference database's
    cross-fitted q, then conditioned on the counts); "latent world, joint prior, oracle shape
    world": the joint prior with the bootstrap population drawn from the latent class fit of the
    whole population (an oracle, not a method); "copula world": what ``world="auto"`` picks."""
    N = pop.shape[0]
    dbs, rec, truth, _, _ = ua.make_point(name, schema, pop, sizes, False, 1.0, 1, seed)
    flag = model_module.RAW_LATENT_SIMULATED
    try:
        model_module.RAW_LATENT_SIMULATED = variant != "latent world, reference prior"
        world = "copula" if variant == "copula world" else "latent"
        T = np.array([1.0, 10.0])
        if variant.endswith("oracle shape world"):
            m = ua._ShapeOracle(world="latent", rng=seed)
            m.shape = oracle
        else:
            m = UniquenessModel(world=world, rng=seed)
        s = m.fit(dbs, N, schema).score(rec, T)
    finally:
        model_module.RAW_LATENT_SIMULATED = flag
    return s, truth, membership(pop, False, 1.0, seed, name)


def raw_section(res, seeds, datasets, alone=False):
    """The raw-database table: per dataset and variant, balanced accuracy and AUC at T = 1 and 10
    (mean over seeds), the largest reliability gap of P(X = 1) over all seeds' records, its noise
    floor, and the gaps over the query records in the database and not in it."""
    rows = []
    t0 = time.perf_counter()
    for name in datasets:
        schema, pop = ua.load_datasets(False)[name]
        sizes = ua.group_sizes(pop)
        oracle = LatentClassModel(rng=0).fit(pop, schema)
        for variant in RAW_VARIANTS:
            P, Y, M, bal, auc = [], [], [], {1: [], 10: []}, {1: [], 10: []}
            for seed in range(seeds):
                s, y, mem = run_raw(variant, name, schema, pop, sizes, seed, oracle)
                P.append(s.p_unique), Y.append(y), M.append(mem)
                for j, t in enumerate((1, 10)):
                    c = classification(s.greater[:, j], y, t,
                                       ua.ranked(s.p_greater, s.expected)[:, j])
                    bal[t].append(c.balanced_accuracy), auc[t].append(c.auc)
            P, Y, M = map(np.concatenate, (P, Y, M))
            unique = Y == 1
            gap, floor, gin, gout = _gaps(P, unique, M)
            base = {"dataset": name, "mechanism": "raw", "variant": variant, "seeds": seeds,
                    "records": int(P.size), "min_count": 50}
            res.add(base, "calibration_max_gap", gap, "probability")
            res.add(base, "calibrated_max_gap_q95", floor, "probability")
            for t in (1, 10):
                res.add({**base, "T": t}, "balanced_accuracy", float(np.mean(bal[t])), "fraction")
                res.add({**base, "T": t}, "auc", float(np.mean(auc[t])), "fraction")
            _add_membership(res, base, P, unique, M, gin, gout)
            rows.append([name, variant, f"{np.mean(bal[1]):.3f}", f"{np.mean(bal[10]):.3f}",
                         f"{np.mean(auc[1]):.3f}", f"{np.mean(auc[10]):.3f}", f"{gap:.3f}",
                         f"{floor:.3f}", f"{gin:.3f}", f"{gout:.3f}",
                         f"{P[M].mean():.3f} / {unique[M].mean():.3f}"])
            print(f"[{time.perf_counter() - t0:5.0f} s] raw {name} {variant}: gap {gap:.3f} "
                  f"(floor {floor:.3f}), bal. acc T=1 {np.mean(bal[1]):.3f} T=10 {np.mean(bal[10]):.3f}, "
                  f"AUC {np.mean(auc[1]):.3f}", flush=True)
    return (["# The latent class world's P(unique) on a raw database", ""] if alone else []) + [
        "## Raw database: the latent class world's prior", "",
        " ".join(line.strip() for line in (run_raw.__doc__ or "").split("\n")[2:]).strip(), "",
        f"One 10 % raw database (benchmarks/uniqueness_accuracy.py's raw points: Adult, paper 000's 9 "
        f"attributes, and its synthetic population), {seeds} seeds x 1,000 query records. Balanced "
        "accuracy and AUC are means over the seeds; the gaps are over all seeds' records (bins with "
        ">= 50 records); \"calibrated: 95 % gap\" is the 95 % quantile of the largest gap of a "
        "perfectly calibrated predictor making the same predictions (the noise floor of the check).", "",
        md_table(["dataset", "variant", "bal. acc T=1", "bal. acc T=10", "AUC T=1", "AUC T=10",
                  "largest gap", "calibrated: 95 % gap", "gap: in db", "gap: not in db",
                  "in db: mean P(X=1) / unique"], rows), "",
    ]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3,
                    help="seeds (x 1,000 query records) per epsilon of the private section (3)")
    ap.add_argument("--epsilons", default="1,2,10",
                    help="comma-separated k-RR epsilons per attribute of the private section "
                         "(empty: no such section)")
    ap.add_argument("--name", default="uniqueness_diagnosis", help="name of the results files")
    ap.add_argument("--out-dir", default=None, help="results directory (default docs/results)")
    ap.add_argument("--raw-seeds", type=int, default=0,
                    help="seeds of the raw-database section (0: no such section)")
    ap.add_argument("--raw-datasets", default="adult,synthetic",
                    help="comma-separated datasets of the raw-database section")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run into a temporary folder: 1 seed, epsilon 10, 1 raw seed on "
                         "the synthetic population")
    args = ap.parse_args(argv)
    if args.quick:
        args.seeds, args.epsilons, args.raw_seeds, args.raw_datasets = 1, "10", 1, "synthetic"
        args.out_dir = args.out_dir or tempfile.mkdtemp(prefix="uniqueness_diagnosis_")
    res = Results(args.name, results_dir=Path(args.out_dir) if args.out_dir else None)
    schema, pop = ua.load_datasets(False)["adult"]
    sizes = ua.group_sizes(pop)
    oracle = LatentClassModel(rng=0).fit(pop, schema) if args.epsilons.strip() else None
    epsilons = [float(e) for e in args.epsilons.split(",") if e.strip()]
    rows = []
    t0 = time.perf_counter()
    for eps in epsilons:
        for variant in VARIANTS:
            P, D, Y, M = [], [], [], []
            for seed in range(args.seeds):
                p, d, y, mem = run(variant, schema, pop, sizes, eps, seed, oracle)
                P.append(p), D.append(d), Y.append(y), M.append(mem)
            P, D, Y, M = map(np.concatenate, (P, D, Y, M))
            unique = Y == 1
            gap, floor, gin, gout = _gaps(P, unique, M)
            bal = classification(D, Y, 1).balanced_accuracy
            base = {"dataset": "adult", "mechanism": "grr", "epsilon": eps, "variant": variant,
                    "seeds": args.seeds, "records": int(P.size), "min_count": 50}
            res.add(base, "calibration_max_gap", gap, "probability")
            res.add(base, "calibrated_max_gap_q95", floor, "probability")
            res.add(base, "balanced_accuracy_T1", bal, "fraction")
            _add_membership(res, base, P, unique, M, gin, gout)
            rows.append([f"{eps:g}", variant, f"{gap:.3f}", f"{floor:.3f}", f"{bal:.3f}", f"{gin:.3f}",
                         f"{gout:.3f}", f"{P[M].mean():.3f} / {unique[M].mean():.3f}"])
            print(f"[{time.perf_counter() - t0:5.0f} s] eps {eps:g} {variant}: gap {gap:.3f} "
                  f"(floor {floor:.3f}), bal. acc {bal:.3f}", flush=True)
    body = [] if not epsilons else [
        "# Where the latent class world's P(unique) loses its calibration (Adult, k-RR)", "",
        (__doc__ or "").split("\n\n", 1)[1].split("\n\n``--raw-seeds``")[0].strip(), "",
        f"Adult (paper 000's 9 attributes), one 10 % database randomized with k-RR at epsilon per "
        f"attribute, {args.seeds} seeds x 1,000 query records (drawn as "
        "benchmarks/uniqueness_accuracy.py's private points). \"in db\": the query records that are in the database (about 10 %); the "
        "last column is their mean P(X = 1) against their share unique. The \"mixture predictive\" row "
        "decides \"X > 1\" by P(X = 1) below its mean (it has no base rate).", "",
        md_table(["epsilon", "variant", "largest gap", "calibrated: 95 % gap", "bal. acc T=1",
                  "gap: in db", "gap: not in db", "in db: mean P(X=1) / unique"], rows), "",
    ]
    if args.raw_seeds > 0:
        body += raw_section(res, args.raw_seeds, args.raw_datasets.split(","), not epsilons)
    res.write(body)


if __name__ == "__main__":
    main()
