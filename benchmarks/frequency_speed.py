#!/usr/bin/env python
"""Speed and accuracy of single-attribute frequency oracles: reidrisk against pure-ldp and
multi-freq-ldpy, in one run; and pairwise counting against a bare Gram matrix B^T B.

Part 1 (speed). For GRR, OUE and OLH, k in {2, 16, 128, 1024} and n in {1e5, 1e6}, on the same
Zipf-like data: the time to randomize all n records and to estimate the frequency vector, for
reidrisk (``make_mechanism(...).perturb`` + ``estimate_marginal(..., estimator="inversion")``, the
like-for-like counterpart of the peers' unbiased estimators; ``norm_sub`` and the default
``estimate_marginal(mech, reports)`` -- whatever method and stopping rule it uses, with its
iteration count -- are timed separately) and for each peer through its public per-record API,
called as a user would (a list comprehension over the records, then the server's
aggregate/estimate call). Every call, ours and the peers', is timed the same way: ``--warmup``
untimed calls, then up to ``--repeats`` timed calls (stopping once they add up to
``--repeat-budget`` seconds), best kept, wall time (``time.perf_counter``) and CPU time
(``time.process_time``) both recorded. A peer cell whose call would take longer than ``--budget``
seconds is measured on fewer records, never fewer than ``--min-records`` (20,000), and scaled
linearly to n (the peers' loops are per record); such cells are marked. Targets at n = 1e6:
randomize + estimate >= 10x faster than the faster peer, estimation alone never slower.

Part 2 (accuracy). The mean squared error of the estimated frequency vector against the true
frequencies, over R repetitions with fixed seeds, on the same data for all libraries, with the
closed-form variance of the unbiased estimator as a reference (paper 004 eq. 5: w_v is a sum of
independent Bernoulli(p) / Bernoulli(q) indicators, so
Var(f_v_hat) = (f_v p(1-p) + (1-f_v) q(1-q)) / (n (p-q)^2)).

Part 3 (pairs). g = 10 attributes of k = 16 with 10% values missing completely at random, GRR
reports: ``pair_counts`` and ``estimate_pairs`` against a dense float32 B^T B (BLAS limited to 1
thread; ``--pair-threads 1 2`` adds 2 threads, meaningful only on an otherwise idle machine) and
a SciPy sparse B^T B on the same stacked support matrix B (paper 004 Section 4.2.2: all pair
counts are blocks of one Gram matrix).

Run from the repository root: ``.venv/bin/python benchmarks/frequency_speed.py`` (``make bench``).
Writes docs/results/frequency_speed.{json,md}.
"""

from __future__ import annotations

import argparse
import gc
import math
import random
import sys
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from _harness import (
    Results,
    Timing,
    atomic_write_text,
    fmt_s,
    fmt_x,
    md_table,
    time_call,
    time_once,
)

warnings.filterwarnings("ignore")

NAME = "frequency_speed"
PEER_PACKAGES = ["pure-ldp", "multi-freq-ldpy", "numba", "xxhash", "scikit-learn", "statsmodels"]
MECHS = ("grr", "oue", "olh")
LABEL = {"grr": "GRR", "oue": "OUE", "olh": "OLH"}
PEERS = ("pure-ldp", "multi-freq-ldpy")
#: record counts a peer measurement may be cut down to (largest that fits the time budget); the
#: smallest used is ``--min-records`` (20,000 by default)
NICE_N = (1_000_000, 500_000, 200_000, 100_000, 50_000, 20_000, 10_000, 5_000, 2_000, 1_000)
ZIPF_S = 1.1
TARGET_TOTAL = 10.0  # reidrisk randomize+estimate at least this many times faster than the faster peer
TARGET_EST = 1.0     # reidrisk estimation alone never slower


# ---- data --------------------------------------------------------------------------------------
def zipf_probs(k: int, s: float = ZIPF_S) -> np.ndarray:
    """P(v) proportional to (v + 1)^-s over 0..k-1."""
    w = (np.arange(k) + 1.0) ** -s
    return w / w.sum()


def make_codes(k: int, n: int, seed: int) -> np.ndarray:
    """n int32 codes drawn from ``zipf_probs(k)`` (the encoded form a Schema produces)."""
    rng = np.random.default_rng(seed)
    return rng.choice(k, size=n, p=zipf_probs(k)).astype(np.int32)


def true_freq(codes: np.ndarray, k: int) -> np.ndarray:
    return np.bincount(codes, minlength=k) / codes.size


# ---- peers -------------------------------------------------------------------------------------
_numba_seed = None


def seed_peers(seed: int) -> None:
    """Seed every random source the peers draw from: ``random``, NumPy's global state and
    numba's own generator (used inside multi-freq-ldpy's compiled clients)."""
    global _numba_seed
    random.seed(seed)
    np.random.seed(seed % 2**32)
    if _numba_seed is None:
        import numba

        @numba.njit(cache=False)
        def _seed(s):
            np.random.seed(s)

        _numba_seed = _seed
    _numba_seed(seed % 2**32)


@dataclass
class Peer:
    """One mechanism of one peer library, behind its public API.

    ``inputs(codes)`` turns codes 0..k-1 into what the library's client takes (untimed);
    ``randomize(inputs)`` returns the list of reports; ``estimate(reports, n)`` returns the
    (k,) estimated frequency vector (probabilities).
    """

    lib: str
    mech: str
    k: int
    eps: float
    inputs: Callable[[np.ndarray], list]
    randomize: Callable[[list], list]
    estimate: Callable[[list, int], np.ndarray]


def make_peer(lib: str, mech: str, k: int, eps: float) -> Peer:
    k = int(k)
    eps = float(eps)
    if lib == "pure-ldp":
        from pure_ldp.frequency_oracles.direct_encoding import DEClient, DEServer
        from pure_ldp.frequency_oracles.local_hashing import LHClient, LHServer
        from pure_ldp.frequency_oracles.unary_encoding import UEClient, UEServer

        client, server = {
            "grr": (lambda: DEClient(eps, k), lambda: DEServer(eps, k)),
            "oue": (lambda: UEClient(eps, k, use_oue=True), lambda: UEServer(eps, k, use_oue=True)),
            "olh": (lambda: LHClient(eps, k, use_olh=True), lambda: LHServer(eps, k, use_olh=True)),
        }[mech]

        def randomize(xs):
            c = client()
            return [c.privatise(x) for x in xs]

        def estimate(reports, n):
            s = server()
            s.aggregate_all(reports)
            return np.asarray(s.estimate_all(range(1, k + 1), suppress_warnings=True)) / n

        # pure-ldp's default index mapper takes items 1..k
        return Peer(lib, mech, k, eps, lambda c: (c.astype(np.int64) + 1).tolist(), randomize, estimate)

    if lib == "multi-freq-ldpy":
        from multi_freq_ldpy.pure_frequency_oracles.GRR import GRR_Aggregator_MI, GRR_Client
        from multi_freq_ldpy.pure_frequency_oracles.LH import LH_Aggregator_MI, LH_Client
        from multi_freq_ldpy.pure_frequency_oracles.UE import UE_Aggregator_MI, UE_Client

        if mech == "grr":
            def randomize(xs):
                return [GRR_Client(x, k, eps) for x in xs]

            def estimate(reports, n):
                return np.asarray(GRR_Aggregator_MI(reports, k, eps))
        elif mech == "oue":
            def randomize(xs):
                return [UE_Client(x, k, eps, True) for x in xs]

            def estimate(reports, n):
                return np.asarray(UE_Aggregator_MI(reports, eps, True))
        else:
            def randomize(xs):
                return [LH_Client(x, k, eps, True) for x in xs]

            def estimate(reports, n):
                return np.asarray(LH_Aggregator_MI(reports, k, eps, True))
        return Peer(lib, mech, k, eps, lambda c: c.astype(np.int64).tolist(), randomize, estimate)
    raise ValueError(f"unknown peer library {lib!r}")


@dataclass
class PeerCost:
    """A peer's randomize and estimate timings on ``n`` records (``Timing``: best wall and CPU
    seconds of the same warm-up and repeats as reidrisk's)."""

    n: int
    rand: Timing
    est: Timing

    @property
    def rand_s(self) -> float:
        return self.rand.best

    @property
    def est_s(self) -> float:
        return self.est.best

    @property
    def rand_cpu(self) -> float:
        return self.rand.cpu_best

    @property
    def est_cpu(self) -> float:
        return self.est.cpu_best

    @property
    def per_record(self) -> float:
        return (self.rand_s + self.est_s) / self.n


def measure_peer(peer: Peer, codes: np.ndarray, n: int, args) -> PeerCost:
    """The peer's randomize and estimate on the first n records, each timed exactly as reidrisk's
    calls are (``time_call`` with ``--warmup``, ``--repeats`` and ``--repeat-budget``); the
    randomization is seeded before every call."""
    xs = peer.inputs(codes[:n])

    def randomize():
        seed_peers(7)
        return peer.randomize(xs)

    gc.collect()
    rand = time_call(randomize, repeats=args.repeats, warmup=args.warmup,
                     budget_s=args.repeat_budget)
    reports = randomize()
    est = time_call(lambda: peer.estimate(reports, n), repeats=args.repeats, warmup=args.warmup,
                    budget_s=args.repeat_budget)
    reports = None  # free the reports (not `del`: the timed lambda above names them)
    return PeerCost(n, rand, est)


def pilot_cost(peer: Peer, codes: np.ndarray, n: int) -> float:
    """Seconds per record of one randomize + estimate on n records (to size the measurement;
    not reported)."""
    xs = peer.inputs(codes[:n])
    seed_peers(3)
    took, _, reports = time_once(lambda: peer.randomize(xs))
    took2, _, _ = time_once(lambda: peer.estimate(reports, n))
    return (took + took2) / n


def pick_n(n_target: int, per_record: float, budget: float, floor: int = 20_000) -> int:
    """The largest n in NICE_N (<= n_target, >= floor) whose estimated cost fits the budget;
    ``min(n_target, floor)`` when none does (the measurement then takes longer than the budget:
    extrapolating from fewer records would be worse)."""
    for n in NICE_N:
        if floor <= n <= n_target and per_record * n <= budget:
            return n
    return min(n_target, floor)


# ---- reidrisk ----------------------------------------------------------------------------------
def rr_mechanism(mech: str, k: int, eps: float):
    from reidrisk.mechanisms import make_mechanism

    return make_mechanism(mech, eps, k)


def rr_estimate(mech_obj, reports, method: str):
    """``estimate_marginal`` with ``method``; ``"default"`` calls it without one (the default
    estimator and stopping rule, whatever they are)."""
    from reidrisk.estimation.frequency import estimate_marginal

    if method == "default":
        return estimate_marginal(mech_obj, reports)
    if method == "mle":  # the default before the shrinkage toward uniform
        return estimate_marginal(mech_obj, reports, shrink=False)
    return estimate_marginal(mech_obj, reports, estimator=method)


# ---- part 1: speed -----------------------------------------------------------------------------
@dataclass
class SpeedCell:
    mech: str
    k: int
    n: int
    rr_rand: Timing
    rr_est: dict[str, Timing]
    default_method: str = ""      # what estimate_marginal(mech, reports) ran
    default_iterations: int = 0   # its iterations (0 for a closed form)
    default_converged: bool = True
    peer: dict[str, PeerCost] = field(default_factory=dict)  # measured cost (maybe on fewer records)

    def peer_total(self, lib: str) -> float:
        c = self.peer[lib]
        return (c.rand_s + c.est_s) * self.n / c.n

    def peer_total_cpu(self, lib: str) -> float:
        c = self.peer[lib]
        return (c.rand_cpu + c.est_cpu) * self.n / c.n

    def peer_est_cpu(self, lib: str) -> float:
        c = self.peer[lib]
        return c.est_cpu * self.n / c.n

    def peer_est(self, lib: str) -> float:
        c = self.peer[lib]
        return c.est_s * self.n / c.n

    def extrapolated(self, lib: str) -> bool:
        return self.peer[lib].n < self.n

    @property
    def rr_total(self) -> float:
        return self.rr_rand.best + self.rr_est["inversion"].best

    @property
    def rr_total_cpu(self) -> float:
        return self.rr_rand.cpu_best + self.rr_est["inversion"].cpu_best

    def speedup(self) -> float:
        """Faster peer's randomize + estimate over reidrisk's (wall time)."""
        return self.peer_total(self.faster_peer()) / self.rr_total

    def speedup_cpu(self) -> float:
        return min(self.peer_total_cpu(lib) for lib in self.peer) / self.rr_total_cpu

    def est_speedup(self) -> float:
        return self.peer_est(self.faster_peer_est()) / self.rr_est["inversion"].best

    def est_speedup_cpu(self) -> float:
        return min(self.peer_est_cpu(lib) for lib in self.peer) / self.rr_est["inversion"].cpu_best

    def faster_peer(self) -> str:
        return min(self.peer, key=self.peer_total)

    def faster_peer_est(self) -> str:
        return min(self.peer, key=self.peer_est)


def run_speed(args, res: Results, data: dict[int, np.ndarray]) -> list[SpeedCell]:
    cells: list[SpeedCell] = []
    methods = ["inversion", "norm_sub", "default"]
    for mech in args.mechanisms:
        for k in args.ks:
            codes = data[k]
            m = rr_mechanism(mech, k, args.epsilon)
            # --- peers: compile/import on a few records (numba), a pilot to size the
            # measurement, then each distinct measured n timed like reidrisk's calls
            peer_costs: dict[str, dict[int, PeerCost]] = {}
            pilots: dict[str, float] = {}
            for lib in PEERS:
                peer = make_peer(lib, mech, k, args.epsilon)
                peer.estimate(peer.randomize(peer.inputs(codes[:20])), 20)
                pilots[lib] = pilot_cost(peer, codes, min(args.pilot, max(args.ns)))
                peer_costs[lib] = {}
                for n in args.ns:
                    n_meas = pick_n(n, pilots[lib], args.budget, args.min_records)
                    if n_meas not in peer_costs[lib]:
                        peer_costs[lib][n_meas] = measure_peer(peer, codes, n_meas, args)
            for n in args.ns:
                x = codes[:n]
                rand_t = time_call(lambda: m.perturb(x, 11), repeats=args.repeats,
                                   warmup=args.warmup, budget_s=args.repeat_budget)
                reports = m.perturb(x, 12)
                est_t = {
                    meth: time_call(lambda meth=meth: rr_estimate(m, reports, meth),
                                    repeats=args.repeats, warmup=args.warmup,
                                    budget_s=args.repeat_budget)
                    for meth in methods
                }
                fit = rr_estimate(m, reports, "default")
                reports = None  # free the reports (not `del`: the timed lambda above names them)
                cell = SpeedCell(mech, k, n, rand_t, est_t, default_method=str(fit.estimator),
                                 default_iterations=int(fit.iterations),
                                 default_converged=bool(fit.converged))
                for lib in PEERS:
                    n_meas = pick_n(n, pilots[lib], args.budget, args.min_records)
                    cell.peer[lib] = peer_costs[lib][n_meas]
                cells.append(cell)
                params = {"mechanism": mech, "k": k, "n": n, "epsilon": args.epsilon,
                          "warmup": args.warmup}
                res.add_timing({**params, "library": "reidrisk"}, "randomize_s", rand_t)
                for meth, t in est_t.items():
                    extra = ({"default_method": cell.default_method,
                              "iterations": cell.default_iterations,
                              "converged": cell.default_converged} if meth == "default" else {})
                    res.add_timing({**params, "library": "reidrisk", "method": meth, **extra},
                                   "estimate_s", t)
                res.add({**params, "library": "reidrisk", "method": "default"},
                        "default_estimator_iterations", cell.default_iterations, "steps")
                res.add({**params, "library": "reidrisk", "method": "inversion",
                         "cpu_s": cell.rr_total_cpu}, "total_s", cell.rr_total, "s")
                for lib in PEERS:
                    c = cell.peer[lib]
                    pp = {**params, "library": lib, "measured_n": c.n, "extrapolated": c.n < n}
                    res.add({**pp, "cpu_s": c.rand_cpu * n / c.n, "repeats": c.rand.repeats},
                            "randomize_s", c.rand_s * n / c.n, "s")
                    res.add({**pp, "cpu_s": c.est_cpu * n / c.n, "repeats": c.est.repeats},
                            "estimate_s", c.est_s * n / c.n, "s")
                    res.add({**pp, "cpu_s": cell.peer_total_cpu(lib)}, "total_s",
                            cell.peer_total(lib), "s")
                fp, fe = cell.faster_peer(), cell.faster_peer_est()
                res.add({**params, "versus": fp}, "speedup_total_vs_faster_peer",
                        cell.speedup(), "x")
                res.add({**params, "versus": fe, "method": "inversion"},
                        "speedup_estimate_vs_faster_peer", cell.est_speedup(), "x")
                res.add(params, "speedup_total_vs_faster_peer_cpu_time", cell.speedup_cpu(), "x")
                res.add({**params, "method": "inversion"},
                        "speedup_estimate_vs_faster_peer_cpu_time", cell.est_speedup_cpu(), "x")
                print(
                    f"{LABEL[mech]:4s} k={k:5d} n={n:8d}  reidrisk {fmt_s(cell.rr_total):>9s} "
                    f"(rand {fmt_s(rand_t.best)}, inv {fmt_s(est_t['inversion'].best)}, "
                    f"norm_sub {fmt_s(est_t['norm_sub'].best)}, default "
                    f"{fmt_s(est_t['default'].best)} [{cell.default_method}, "
                    f"{cell.default_iterations} steps])  "
                    + "  ".join(
                        f"{lib} {fmt_s(cell.peer_total(lib))}{'*' if cell.extrapolated(lib) else ''}"
                        for lib in PEERS
                    )
                    + f"  -> {fmt_x(cell.speedup())} total ({fmt_x(cell.speedup_cpu())} CPU), "
                    f"{fmt_x(cell.est_speedup())} estimate ({fmt_x(cell.est_speedup_cpu())} CPU)",
                    flush=True,
                )
    return cells


# ---- part 2: accuracy --------------------------------------------------------------------------
@dataclass
class MseRow:
    mech: str
    k: int
    n: int
    reps: int
    theory: float  # closed-form MSE of the unbiased estimator (mean over v of its variance)
    mse: dict[str, tuple[float, float]]  # label -> (mean MSE over reps, standard error)
    em_iterations: float  # mean number of iterations of the default estimator
    default_method: str = ""  # what estimate_marginal(mech, reports) ran


def theory_mse(mech_obj, f: np.ndarray, n: int) -> float:
    p, q = mech_obj.p_support, mech_obj.q_support
    var = (f * p * (1 - p) + (1 - f) * q * (1 - q)) / (n * (p - q) ** 2)
    return float(var.mean())


def run_mse(args, res: Results, data: dict[int, np.ndarray], cells: list[SpeedCell]) -> list[MseRow]:
    rows: list[MseRow] = []
    cost = {}  # per-record peer cost, from the speed part
    for c in cells:
        for lib in PEERS:
            cost[(c.mech, c.k, lib)] = c.peer[lib].per_record
    for mech in args.mechanisms:
        for k in args.ks:
            done_n = set()
            for n_nom, reps_nom in args.mse_plan:
                n_nom = min(n_nom, data[k].size)
                # common n for every library: the largest at which each peer fits its budget
                worst = max(cost[(mech, k, lib)] for lib in PEERS)
                n = n_nom
                for cand in NICE_N:
                    if cand <= n_nom and worst * cand * reps_nom <= args.mse_budget:
                        n = cand
                        break
                else:
                    n = min(n_nom, 2_000)
                reps = int(min(reps_nom, max(3, args.mse_budget // max(worst * n, 1e-9))))
                if done_n and n <= max(done_n):
                    continue  # no larger n than the row before fits the budget
                done_n.add(n)
                rows.append(mse_row(args, res, data, mech, k, n, reps))
    return rows


#: reidrisk's estimators in the accuracy table: ``estimate_marginal`` with these estimators
#: (``"default"``: no options; ``"mle"``: ``shrink=False``, the default before the shrinkage)
RR_MSE_METHODS = ("inversion", "norm_sub", "default", "mle")


def mse_row(args, res: Results, data: dict[int, np.ndarray], mech: str, k: int, n: int,
            reps: int) -> MseRow:
    """One accuracy row: every library on the same ``n`` records, ``reps`` randomizations."""
    x = data[k][:n]
    f = true_freq(x, k)
    m = rr_mechanism(mech, k, args.epsilon)
    errs: dict[str, list[float]] = {}
    em_iters: list[int] = []
    default_method = ""
    for r in range(reps):
        seed = 10_000 + 97 * r
        rep = m.perturb(x, seed)
        for meth in RR_MSE_METHODS:
            fit = rr_estimate(m, rep, meth)
            est = np.asarray(fit.probs, dtype=float)
            errs.setdefault(f"reidrisk {meth}", []).append(float(np.mean((est - f) ** 2)))
            if meth == "default":
                em_iters.append(int(fit.iterations))
                default_method = str(fit.estimator)
        for lib in PEERS:
            peer = make_peer(lib, mech, k, args.epsilon)
            xs = peer.inputs(x)
            seed_peers(seed)
            est = peer.estimate(peer.randomize(xs), n)
            errs.setdefault(lib, []).append(float(np.mean((est - f) ** 2)))
    th = theory_mse(m, f, n)
    mse = {lab: (float(np.mean(v)), float(np.std(v, ddof=1) / math.sqrt(len(v))))
           for lab, v in errs.items()}
    params = {"mechanism": mech, "k": k, "n": n, "epsilon": args.epsilon, "reps": reps,
              "true_distribution": f"zipf s={ZIPF_S}"}
    res.add({**params, "library": "theory", "method": "inversion"}, "mse", th, "1")
    res.add({**params, "library": "reidrisk", "method": "default",
             "default_method": default_method}, "default_iterations_mean",
            float(np.mean(em_iters)), "steps")
    for lab, (mu, se) in mse.items():
        lib, _, meth = lab.partition(" ")
        res.add({**params, "library": lib, "method": meth or "default", "se": se}, "mse", mu, "1")
    print(f"MSE {LABEL[mech]:4s} k={k:5d} n={n:8d} R={reps:2d} theory {th:.3g}  "
          + "  ".join(f"{lab} {mu:.3g}±{se:.1g}" for lab, (mu, se) in mse.items()), flush=True)
    return MseRow(mech, k, n, reps, th, mse, float(np.mean(em_iters)), default_method)


def no_worse(ours: tuple[float, float], theirs: tuple[float, float]) -> bool:
    """reidrisk's (MSE, SE) is at most the peer's plus two standard errors of the difference."""
    return ours[0] - theirs[0] <= 2.0 * math.hypot(ours[1], theirs[1])


# ---- part 3: pairs vs the Gram floor -----------------------------------------------------------
@dataclass
class PairRow:
    n: int
    g: int
    k: int
    threads: int      # BLAS threads (threadpoolctl) for this row
    support_s: float  # building B from the reports (reference)
    dense: Timing     # the floor: one float32 GEMM B^T B on B already in memory
    sparse: Timing    # SciPy sparse B^T B (single-threaded; the same in every row)
    counts: Timing    # pair_counts(reports)
    est: dict[str, Timing]  # estimate_pairs(reports, method, counts=...) from the counts

    def total(self, method: str) -> float:
        return self.counts.best + self.est[method].best


PAIR_EST_METHODS = ("inversion", "norm_sub", "em")


def run_pairs(args, res: Results) -> list[PairRow]:
    from threadpoolctl import threadpool_limits

    from reidrisk.estimation.pairs import estimate_pairs, pair_counts
    from reidrisk.mechanisms import RecordRandomizer
    from reidrisk.schema import MISSING, Attribute, Schema

    g, k = args.pair_g, args.pair_k
    schema = Schema(tuple(Attribute(f"a{j}", tuple(str(v) for v in range(k))) for j in range(g)))
    rows = []
    for n in args.pair_ns:
        rng = np.random.default_rng(2024)
        codes = rng.choice(k, size=(n, g), p=zipf_probs(k)).astype(np.int32)
        codes[rng.random((n, g)) < args.pair_missing] = MISSING
        rr = RecordRandomizer(schema, "grr", args.epsilon * g).randomize(codes, 5)
        support_s, _, B = time_once(
            lambda: sp.hstack(rr.supports(), format="csr", dtype=np.float32))
        Bd = B.toarray()
        sparse = time_call(lambda: B.T @ B, repeats=args.repeats, warmup=args.warmup,
                           budget_s=args.repeat_budget)
        params = {"n": n, "g": g, "k": k, "mechanism": "grr", "missing_rate": args.pair_missing}
        res.add(params, "build_support_matrix_s", support_s, "s")
        res.add_timing(params, "sparse_gram_s", sparse)
        for threads in args.pair_threads:
            with threadpool_limits(limits=threads, user_api="blas"):
                dense = time_call(lambda: Bd.T @ Bd, repeats=args.repeats, warmup=args.warmup,
                                  budget_s=args.repeat_budget)
                counts = time_call(lambda: pair_counts(rr), repeats=args.repeats,
                                   warmup=args.warmup,
                                   budget_s=args.repeat_budget)
                pc = pair_counts(rr)
                est = {meth: time_call(lambda meth=meth: estimate_pairs(rr, estimator=meth, counts=pc),
                                       repeats=args.repeats, warmup=args.warmup,
                                       budget_s=args.repeat_budget)
                       for meth in PAIR_EST_METHODS}
            row = PairRow(n, g, k, threads, support_s, dense, sparse, counts, est)
            rows.append(row)
            pt = {**params, "blas_threads": threads}
            res.add_timing(pt, "dense_gram_s", dense)
            res.add_timing(pt, "pair_counts_s", counts)
            for meth, t in est.items():
                res.add_timing({**pt, "method": meth}, "estimate_pairs_from_counts_s", t)
                res.add({**pt, "method": meth}, "pair_counts_plus_estimate_over_floor",
                        row.total(meth) / dense.best, "x")
            res.add(pt, "pair_counts_over_floor", counts.best / dense.best, "x")
            print(f"pairs n={n} g={g} k={k} BLAS threads={threads}: dense B^T B {fmt_s(dense.best)}, "
                  f"sparse {fmt_s(sparse.best)}, pair_counts {fmt_s(counts.best)} "
                  f"({fmt_x(counts.best / dense.best)} the floor), estimate from counts "
                  + ", ".join(f"{m_} {fmt_s(t.best)}" for m_, t in est.items()), flush=True)
        Bd = None  # free the dense copy (not `del`: the timed lambda names it)
    return rows


# ---- report ------------------------------------------------------------------------------------
def _peer_cell(c: SpeedCell, lib: str, what: str) -> str:
    star = "*" if c.extrapolated(lib) else ""
    if what == "total":
        return f"{fmt_s(c.peer_total(lib))}{star} / {fmt_s(c.peer_total_cpu(lib))}{star}"
    return fmt_s(c.peer_est(lib)) + star


def render(args, cells: list[SpeedCell], mse_rows: list[MseRow], pair_rows: list[PairRow]) -> str:
    out = [
        "# Frequency oracles: speed and accuracy against pure-ldp and multi-freq-ldpy",
        "",
        f"One attribute, epsilon = {args.epsilon:g}, true data drawn from a Zipf-like distribution "
        f"(P(v) ~ (v+1)^-{ZIPF_S}), the same records for every library. reidrisk: "
        "`make_mechanism(name, epsilon, k).perturb(codes, rng)` on the int32 code array, then "
        "`estimate_marginal(mech, reports, estimator=...)`. Peers: their public per-record clients in "
        "a list comprehension, then their server/aggregator (pure-ldp `DEClient`/`UEClient(use_oue="
        "True)`/`LHClient(use_olh=True)` with the matching servers' `aggregate_all` + "
        "`estimate_all`; multi-freq-ldpy `GRR_Client`/`UE_Client(optimal=True)`/`LH_Client(optimal="
        "True)` with the matching `*_Aggregator_MI`). multi-freq-ldpy's numba clients are compiled "
        "on a few records first.",
        "",
        f"Every call, reidrisk's and the peers', is timed the same way: {args.warmup} untimed "
        f"warm-up call(s) on the same input, then up to {args.repeats} timed calls (fewer once the "
        f"timed calls add up to {args.repeat_budget:g} s), the best kept; randomization and "
        "estimation are timed separately and added. Wall time (`time.perf_counter`) and CPU time "
        "(`time.process_time`) of the same calls are both reported.",
        "",
        f"`*` = one call of the peer on all n records would take more than {args.budget:g} s, so "
        "it was timed on fewer records (the `measured on` columns; never fewer than "
        f"{args.min_records:,}, or n if smaller) and scaled linearly to n. Both peers' randomize "
        "and aggregate loops are per record, so their cost is linear in n; every unmarked cell "
        "is measured on all n records.",
        "",
    ]
    big = max(args.ns)
    # ---- targets summary
    at_big = [c for c in cells if c.n == big]
    if at_big:
        def verdict(ratios, target, what):
            miss = [(c, r) for c, r in ratios if r < target]
            return (f"**met**{' ' + what if what else ''}" if not miss else "**missed** for " + ", ".join(
                f"{LABEL[c.mech]} k={c.k} ({fmt_x(r)})" for c, r in miss)) + smallest(ratios)

        def smallest(ratios):
            c, r = min(ratios, key=lambda cr: cr[1])
            scaled = [lib for lib in PEERS if c.extrapolated(lib)]
            return (f" (smallest ratio {fmt_x(r)}, {LABEL[c.mech]} k={c.k}"
                    + (f", against {' and '.join(scaled)} times scaled from fewer records (`*`)"
                       if scaled else "") + ")")

        out += [f"## Targets at n = {big:,}", ""]
        out.append(
            f"- randomize + estimate at least {TARGET_TOTAL:g}x faster than the faster peer: "
            f"wall time {verdict([(c, c.speedup()) for c in at_big], TARGET_TOTAL, 'for every mechanism and k')}; "
            f"CPU time {verdict([(c, c.speedup_cpu()) for c in at_big], TARGET_TOTAL, 'for every mechanism and k')}."
        )
        out.append(
            "- estimation alone never slower than the faster peer: "
            f"wall time {verdict([(c, c.est_speedup()) for c in at_big], TARGET_EST, '')}; "
            f"CPU time {verdict([(c, c.est_speedup_cpu()) for c in at_big], TARGET_EST, '')}."
        )
        if mse_rows:
            bad = [r for r in mse_rows
                   if not (no_worse(r.mse["reidrisk inversion"], r.mse["pure-ldp"])
                           and no_worse(min(r.mse["reidrisk norm_sub"], r.mse["reidrisk default"]),
                                        r.mse["multi-freq-ldpy"]))]
            out.append(
                "- estimation error no worse (MSE over repetitions, accuracy table below): "
                + ("**met** in every row" if not bad else "**missed** for " + ", ".join(
                    f"{LABEL[r.mech]} k={r.k} n={r.n:,}" for r in bad))
                + "."
            )
        out += [
            "",
            "Wall time (`time.perf_counter`) is the headline figure. CPU time "
            "(`time.process_time`) is shown beside it because the machine may be shared: other "
            "work slows wall time down unevenly between measurements, while the CPU time of these "
            "single-threaded calls hardly changes.",
        ]
        out.append("")
    # ---- speed tables
    for n in args.ns:
        rows = []
        for c in (c for c in cells if c.n == n):
            rows.append([
                LABEL[c.mech], c.k,
                fmt_s(c.rr_rand.best), fmt_s(c.rr_est["inversion"].best),
                f"{fmt_s(c.rr_total)} / {fmt_s(c.rr_total_cpu)}",
                _peer_cell(c, "pure-ldp", "total"), _peer_cell(c, "multi-freq-ldpy", "total"),
                f"**{fmt_x(c.speedup())}**", fmt_x(c.speedup_cpu()),
                _peer_cell(c, "pure-ldp", "est"), _peer_cell(c, "multi-freq-ldpy", "est"),
                f"**{fmt_x(c.est_speedup())}**", fmt_x(c.est_speedup_cpu()),
                f"{c.peer['pure-ldp'].n:,} / {c.peer['multi-freq-ldpy'].n:,}",
                f"{min(c.rr_rand.repeats, c.rr_est['inversion'].repeats)} / "
                + " / ".join(str(min(c.peer[lib].rand.repeats, c.peer[lib].est.repeats))
                             for lib in PEERS),
            ])
        out += [
            f"## Speed at n = {n:,}",
            "",
            md_table(
                ["mechanism", "k", "reidrisk randomize", "reidrisk estimate",
                 "reidrisk total (wall / CPU)", "pure-ldp total (wall / CPU)",
                 "multi-freq-ldpy total (wall / CPU)", "total speedup vs faster peer",
                 "(CPU time)", "pure-ldp estimate", "multi-freq-ldpy estimate",
                 "estimate speedup vs faster peer", "(CPU time)",
                 "peers measured on (pure-ldp / multi-freq-ldpy)",
                 "timed calls (reidrisk / pure-ldp / multi-freq-ldpy, fewest)"],
                rows, "lrrrrrrrrrrrrrr"),
            "",
        ]
    # ---- reidrisk estimators
    rows = [[LABEL[c.mech], c.k, f"{c.n:,}", fmt_s(c.rr_est["inversion"].best),
             fmt_s(c.rr_est["norm_sub"].best),
             f"{fmt_s(c.rr_est['default'].best)} / {fmt_s(c.rr_est['default'].cpu_best)}",
             f"{c.default_method}, {c.default_iterations}"
             + ("" if c.default_converged else " (not converged)"),
             fmt_s(min(c.peer_est(lib) for lib in PEERS))] for c in cells]
    out += [
        "## reidrisk estimators (estimation alone)",
        "",
        "`inversion` is the unbiased closed form (paper 004 eq. 4-5), `norm_sub` projects it onto "
        "the simplex, `default` is `estimate_marginal(mech, reports)` with no options: the "
        "library's default estimator and stopping rule, named in the next column with the "
        "number of iterations it ran on these reports (the timed work).",
        "",
        md_table(["mechanism", "k", "n", "inversion", "norm_sub", "default (wall / CPU)",
                  "default: method, iterations", "faster peer estimate"],
                 rows, "lrrrrrrr"),
        "",
    ]
    # ---- accuracy
    if mse_rows:
        labels = ["reidrisk inversion", "pure-ldp", "reidrisk norm_sub", "reidrisk default",
                  "reidrisk mle", "multi-freq-ldpy"]
        rows = []
        for r in mse_rows:
            inv, pl, mf = r.mse["reidrisk inversion"], r.mse["pure-ldp"], r.mse["multi-freq-ldpy"]
            ns_, em = r.mse["reidrisk norm_sub"], r.mse["reidrisk default"]
            best_pp = min(ns_, em)
            rows.append(
                [LABEL[r.mech], r.k, f"{r.n:,}", r.reps, f"{r.theory:.3g}"]
                + [f"{r.mse[lab][0]:.3g} ± {r.mse[lab][1]:.1g}" for lab in labels]
                + [f"{r.em_iterations:.0f}", f"{inv[0] / pl[0]:.2f}", f"{best_pp[0] / mf[0]:.2f}",
                   f"{min(ns_, r.mse['reidrisk mle'])[0] / mf[0]:.2f}",
                   "yes" if no_worse(inv, pl) and no_worse(best_pp, mf) else "**no**"]
            )
        out += [
            "## Accuracy: mean squared error of the frequency vector",
            "",
            "MSE = mean over the k values of (estimate - true frequency)^2, averaged over R "
            "repetitions with fixed seeds (± one standard error over the repetitions); the same "
            "records for all libraries. `theory` is the closed-form variance of the unbiased "
            "estimator averaged over v (see the script's docstring). Two like-for-like pairs: "
            "reidrisk `inversion` against pure-ldp (both unbiased, no post-processing), and the best "
            "of reidrisk `norm_sub`/`default` against multi-freq-ldpy (whose MI clips negatives "
            "to 0 and "
            "renormalises). A ratio below 1 means reidrisk is more accurate. n is the same for all "
            "libraries in a row. Rows are planned at "
            + " and ".join(f"n = {n_:,} with R = {r_}" for n_, r_ in args.mse_plan)
            + f" per mechanism and k; n is cut where a peer would need more than "
            f"{args.mse_budget:g} s for the R repetitions (and a row is dropped when its cut n is "
            "no larger than the previous row's). `default steps` is the mean number of iterations "
            "of reidrisk's default estimator (`estimate_marginal(mech, reports)`), which shrinks "
            "the EM toward uniform (`reidrisk.estimation.frequency`, \"Shrinkage toward "
            "uniform\"; `norm_sub` is shrunk the same way); `reidrisk mle` is the same EM with "
            "`shrink=False`, the default before the shrinkage; the column before the verdict "
            "compares the best of norm_sub and mle with multi-freq-ldpy (the verdict uses the "
            "shipped default). "
            "`no worse?` is yes when, in both pairs, reidrisk's MSE exceeds the peer's by at most "
            "two standard errors of the difference (the repetitions are independent, so the "
            "difference is noisy at small k).",
            "",
            md_table(["mechanism", "k", "n", "R", "theory (unbiased)", *labels,
                      "default steps (mean)", "inversion / pure-ldp",
                      "best of norm_sub, default / multi-freq-ldpy",
                      "best of norm_sub, mle / multi-freq-ldpy", "no worse?"],
                     rows, "lrrrrrrrrrrrrrrc"),
            "",
        ]
    # ---- pairs
    if pair_rows:
        rows = []
        for p in pair_rows:
            rows.append([
                f"{p.n:,}", p.threads, f"{fmt_s(p.dense.best)} / {fmt_s(p.dense.cpu_best)}",
                fmt_s(p.sparse.best),
                f"{fmt_s(p.counts.best)} / {fmt_s(p.counts.cpu_best)}",
                f"**{fmt_x(p.counts.best / p.dense.best)}**",
                *[fmt_s(p.est[m_].best) for m_ in PAIR_EST_METHODS],
                f"**{fmt_x(p.total('em') / p.dense.best)}**",
            ])
        p0 = pair_rows[0]
        best_floor = {}
        for p in pair_rows:
            best_floor[p.n] = min(best_floor.get(p.n, math.inf), p.dense.best)
        best_counts = {}
        for p in pair_rows:
            best_counts[p.n] = min(best_counts.get(p.n, math.inf), p.counts.best)
        out += [
            "## Pairwise counting against the Gram floor",
            "",
            f"g = {p0.g} attributes of k = {p0.k} (Zipf-like, independent), "
            f"{args.pair_missing:.0%} of values missing completely at random, GRR reports with "
            f"epsilon = {args.epsilon:g} per attribute. B = the stacked 0/1 support matrix "
            f"(n x {p0.g * p0.k}); all pair counts are blocks of B^T B (paper 004 Section 4.2.2). "
            "The floor is a bare dense float32 B^T B: one BLAS call on B already in memory, timed "
            "with the BLAS limited to "
            + " and to ".join(f"{t} thread{'s' if t > 1 else ''}" for t in args.pair_threads)
            + " (threadpoolctl); SciPy's sparse product is single-threaded. "
            + ("" if args.pair_threads != [1] else
               "Rows with 2 BLAS threads are left out: on a 2-core machine that has any other "
               "work, "
               "OpenBLAS's second thread waits for a core and the measured times (up to 52x the "
               "1-thread time in an earlier run under load 4-5) are contention, not the code; "
               "`--pair-threads 1 2` on an idle machine measures them. ")
            + "Wall / CPU time of the same calls. `pair_counts` starts from the reports, so it "
            "also builds B "
            f"(building B alone took {', '.join(fmt_s(p.support_s) for p in pair_rows if p.threads == args.pair_threads[0])}). "
            "`estimate_pairs` is timed from those counts (`counts=`), for all "
            f"{p0.g * (p0.g - 1) // 2} pairs; the last column is pair_counts + estimate_pairs "
            "(EM) over the floor with the same thread count.",
            "",
            md_table(["n", "BLAS threads", "dense B^T B (floor, wall / CPU)", "sparse B^T B",
                      "pair_counts (wall / CPU)",
                      "pair_counts / floor", "estimate inversion", "estimate norm_sub",
                      "estimate em", "counts + em / floor"],
                     rows, "rrrrrrrrrr"),
            "",
            "Best over thread settings: " + "; ".join(
                f"n = {n:,}: pair_counts {fmt_s(best_counts[n])} against a floor of "
                f"{fmt_s(best_floor[n])} ({fmt_x(best_counts[n] / best_floor[n])})"
                for n in best_floor) + ".",
            "",
        ]
        by = {(p.n, p.threads): p for p in pair_rows}
        if 1 in args.pair_threads and 2 in args.pair_threads:
            out += [
                "BLAS threads, measured: with 2 threads instead of 1 the bare floor took "
                + ", ".join(f"{fmt_x(by[(n, 2)].dense.best / by[(n, 1)].dense.best)} as long at "
                            f"n = {n:,}" for n in args.pair_ns)
                + " and `pair_counts` (many small GEMMs on row chunks) "
                + ", ".join(f"{fmt_x(by[(n, 2)].counts.best / by[(n, 1)].counts.best)}"
                            for n in args.pair_ns)
                + " (above 1x: slower with 2 threads). On 2 cores a second thread can at best "
                "halve a GEMM, and while other work holds a core (see the load average below) "
                "OpenBLAS's threads wait on each other.",
                "",
            ]
    return "\n".join(out)


# ---- main --------------------------------------------------------------------------------------
def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--mechanisms", nargs="+", default=list(MECHS), choices=MECHS)
    ap.add_argument("--ks", nargs="+", type=int, default=None,
                    help="domain sizes (2 16 128 1024; with --quick 2 16 128)")
    ap.add_argument("--ns", nargs="+", type=int, default=[100_000, 1_000_000])
    ap.add_argument("--repeats", type=int, default=3,
                    help="timed calls per measurement, reidrisk and peers alike (best kept; 3)")
    ap.add_argument("--warmup", type=int, default=1,
                    help="untimed calls before the timed ones, reidrisk and peers alike (1)")
    ap.add_argument("--repeat-budget", "--rr-budget", dest="repeat_budget", type=float,
                    default=10.0, help="stop repeating a measurement once its timed calls add up "
                    "to this many seconds, reidrisk and peers alike (10)")
    ap.add_argument("--budget", type=float, default=5.0,
                    help="seconds one peer call on all n records may take; above it the peer is "
                    "timed on fewer records (>= --min-records) and scaled to n (5)")
    ap.add_argument("--min-records", type=int, default=20_000,
                    help="fewest records a peer is timed on before scaling to n (20,000)")
    ap.add_argument("--pilot", type=int, default=2_000,
                    help="records in the peers' sizing run (not reported)")
    ap.add_argument("--mse-n", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--mse-reps", type=int, nargs="+", default=[20, 5])
    ap.add_argument("--mse-budget", type=float, default=4.0,
                    help="seconds a peer may spend on all repetitions of one accuracy row")
    ap.add_argument("--pair-ns", nargs="+", type=int, default=[100_000, 1_000_000])
    ap.add_argument("--pair-g", type=int, default=10)
    ap.add_argument("--pair-k", type=int, default=16)
    ap.add_argument("--pair-missing", type=float, default=0.1)
    ap.add_argument("--pair-threads", nargs="+", type=int, default=[1],
                    help="BLAS thread counts to time the pairwise part with (1; add 2 only on an "
                    "otherwise idle machine: under load the second thread measures contention)")
    ap.add_argument("--skip-mse", action="store_true")
    ap.add_argument("--skip-pairs", action="store_true")
    ap.add_argument("--mse-only", action="store_true",
                    help="re-measure only the accuracy part, at the (mechanism, k, n, R) points of "
                         "the existing results, and replace only its records and table there "
                         "(the speed and pair parts, timed on an idle machine, are kept)")
    ap.add_argument("--quick", action="store_true",
                    help="a small smoke run written to a temporary folder (not docs/results)")
    ap.add_argument("--out-dir", default=None, help="where to write the results (default docs/results)")
    args = ap.parse_args(argv)
    if len(args.mse_n) != len(args.mse_reps):
        ap.error("--mse-n and --mse-reps need the same number of values")
    if args.quick:
        args.ks = args.ks or [2, 16, 128]
        args.ns, args.repeats = [2_000, 30_000], 2
        args.budget, args.mse_n, args.mse_reps, args.mse_budget = 0.5, [5_000], [3], 2.0
        args.pair_ns, args.pilot = [20_000], 500
        if args.out_dir is None:
            args.out_dir = tempfile.mkdtemp(prefix="frequency_speed_")
    args.ks = args.ks or [2, 16, 128, 1024]
    args.mse_plan = list(zip(args.mse_n, args.mse_reps))
    args.ns = sorted(args.ns)
    return args


MSE_METRICS = ("mse", "default_iterations_mean")
ACCURACY_HEAD = "## Accuracy: mean squared error of the frequency vector"
TARGET_MSE_LINE = "- estimation error no worse"


def main_mse_only(args) -> int:
    """``--mse-only``: the accuracy rows again at the points of the existing results; only their
    records (``MSE_METRICS``), the accuracy section and the accuracy target line are replaced."""
    import json
    from pathlib import Path

    res = Results(NAME, packages=PEER_PACKAGES, results_dir=args.out_dir)
    jpath, mpath = res.results_dir / f"{NAME}.json", res.results_dir / f"{NAME}.md"
    old = json.loads(Path(jpath).read_text())
    points = sorted({(r["params"]["mechanism"], r["params"]["k"], r["params"]["n"],
                      r["params"]["reps"]) for r in old
                     if r.get("metric") == "mse" and r["params"].get("library") == "theory"},
                    key=lambda t: (MECHS.index(t[0]), t[1], t[2]))
    n_max = max([*args.ns, *args.mse_n])
    data = {k: make_codes(k, n_max, seed=1000 + k) for k in sorted({p[1] for p in points})}
    rows = [mse_row(args, res, data, *pt) for pt in points]
    res.finish()
    machine = res.records()[0]
    new = [r for r in res.records() if r.get("metric") in MSE_METRICS]
    for r in new:
        r["params"]["measured"] = machine["machine"]["date_utc"]
    kept = [r for r in old if r.get("metric") not in MSE_METRICS]
    kept.append({**machine, "record": "machine (accuracy re-run, --mse-only)"})
    atomic_write_text(jpath, json.dumps(kept + new, indent=1) + "\n")
    # the markdown: the accuracy section and the accuracy target line only
    md = Path(mpath).read_text()
    fresh = render(args, [], rows, [])
    section = fresh[fresh.index(ACCURACY_HEAD):].rstrip("\n") + "\n"
    load = machine["machine"]
    note = (f"\nRe-measured on {load['date_utc']} by `{res.command}` (load average "
            f"{', '.join(f'{x:.2f}' for x in load['load_avg_start'])} at the start; accuracy does "
            "not depend on the load), with the default estimator's shrinkage toward uniform as "
            "of this commit (`reidrisk.estimation.frequency`, \"Shrinkage toward uniform\"); the "
            "speed tables above are from the earlier run.\n")
    start = md.index(ACCURACY_HEAD)
    nxt = md.find("\n## ", start + len(ACCURACY_HEAD))
    md = md[:start] + section + note + ("" if nxt < 0 else md[nxt:])
    bad = [r for r in rows
           if not (no_worse(r.mse["reidrisk inversion"], r.mse["pure-ldp"])
                   and no_worse(min(r.mse["reidrisk norm_sub"], r.mse["reidrisk default"]),
                                r.mse["multi-freq-ldpy"]))]
    line = ("- estimation error no worse (MSE over repetitions, accuracy table below): "
            + ("**met** in every row" if not bad else "**missed** for " + ", ".join(
                f"{LABEL[r.mech]} k={r.k} n={r.n:,}" for r in bad)) + ".")
    lines = md.split("\n")
    lines = [line if ln.startswith(TARGET_MSE_LINE) else ln for ln in lines]
    atomic_write_text(mpath, "\n".join(lines))
    print(f"wrote {jpath}\nwrote {mpath}")
    return 0


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.mse_only:
        return main_mse_only(args)
    res = Results(NAME, packages=PEER_PACKAGES, results_dir=args.out_dir)
    n_max = max([*args.ns, *args.mse_n])
    data = {k: make_codes(k, n_max, seed=1000 + k) for k in args.ks}
    cells = run_speed(args, res, data)
    mse_rows = [] if args.skip_mse else run_mse(args, res, data, cells)
    pair_rows = [] if args.skip_pairs else run_pairs(args, res)
    res.write_json()
    res.write_markdown(render(args, cells, mse_rows, pair_rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
