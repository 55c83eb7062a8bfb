"""CALM baseline: consistent adaptive local marginals (Zhang, Wang, Li, He and Chen, "CALM:
Consistent Adaptive Local Marginal for Marginal Release under Local Differential Privacy", ACM CCS
2018), the standard method for k-way marginals under LDP. How we read each step, with the error
model that chooses l and m: docs/design/collect.md#calm-as-we-read-it.

1. **Marginal choice** (Section 4). The collector fixes m attribute sets of l attributes each,
   (l, m) minimising per pair of attributes

   ``E(l, m) = P(l, m) * [V(l, m) + S(l, m)] / s(l, m) + (1 - P(l, m)) * R0``

   (P the probability that a pair is covered, s the mean number of sets covering it, V the
   frequency oracle's summed variance, S the sampling error of one group, ``R0``
   (``pair_dependence``) the error of an uncovered pair) over l = 2..d (joint domains up to
   ``max_cells`` cells) and m = ceil(d / l)..n_eff; the sets use every attribute equally often.
2. **Reporting** (Section 4.1). Users are split at random into m groups; a user of group j reports
   the joint value of set j through a frequency oracle with the whole budget epsilon: OLH, or GRR
   where its variance is smaller (``oracle="adaptive"``, default; Wang et al. 2017, Section 4.4).
3. **Estimation and consistency** (Section 4.2). Each marginal is inverted
   (``reidrisk.estimation.invert``), then Norm-Sub and PriView's consistency step (Qardaji et al.,
   SIGMOD 2014, Section 4.3: inverse-variance weighted means over the intersections of the
   reported sets) alternate (``rounds``) until no cell is negative.
4. **Answering a query** (Section 4.3). A query inside a reported set is summed from it; any other
   by maximum entropy subject to the reported marginals' projections, by iterative proportional
   fitting from the uniform table.

Missing values: as in the other complete-case baselines (``CompleteCase``), a user reports only if
they answered all l attributes of their group's set; the others send a missing report.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from reidrisk.collect.baselines.base import Method
from reidrisk.estimation import invert, norm_sub, variance
from reidrisk.mechanisms import make_mechanism
from reidrisk.mechanisms.base import Mechanism, as_generator, check_epsilon
from reidrisk.mechanisms.glh import optimal_g
from reidrisk.schema import MISSING, Schema, SchemaError

PAIR_DEPENDENCE = 0.01
"""Reconstruction error assumed for a pair no reported set covers (module doc, step 1)."""

MAX_CELLS = 4096
"""Largest joint domain of a reported marginal considered by the design search (OLH hashes each
report against every cell, so its cost grows with the domain)."""

ORACLES = ("adaptive", "olh")
CONSISTENCY_ROUNDS = 5
IPF_TOL = 1e-12
IPF_MAX_ITER = 2000


# ---------------------------------------------------------------------------------------------
# step 1: choosing l and m
# ---------------------------------------------------------------------------------------------
def oracle_name(cells: int, epsilon: float, oracle: str = "adaptive") -> str:
    """The frequency oracle of a joint domain of ``cells`` values (module doc, step 2).

    Parameters
    ----------
    cells : int
        Size D of the joint domain.
    epsilon : float
        The budget of one report.
    oracle : {"adaptive", "olh"}
        ``"adaptive"``: GRR where its variance is smaller, else OLH; ``"olh"``: always OLH.

    Returns
    -------
    str
        ``"grr"`` when ``oracle`` is ``"adaptive"`` and ``D < 3 e^eps + 2``, else ``"olh"``.

    Raises
    ------
    ValueError
        When ``oracle`` is not one of ``ORACLES``.
    """
    if oracle not in ORACLES:
        raise ValueError(f"oracle must be one of {ORACLES}, got {oracle!r}")
    if oracle == "adaptive" and cells < 3.0 * math.exp(epsilon) + 2.0:
        return "grr"
    return "olh"


def oracle_variance(cells: int, epsilon: float, oracle: str = "adaptive") -> float:
    """Summed variance over the cells of one report's inversion estimate (module doc, step 1).

    ``[p (1 - p) + (D - 1) q (1 - q)] / (p - q)^2``, with p and q of the oracle ``oracle_name``
    picks (GRR; or OLH with ``g = optimal_g(epsilon)``, p on the hashed value and 1 / g for any
    other value). Multiply by 1 / N for N reports.

    Parameters
    ----------
    cells : int
        Size D of the joint domain.
    epsilon : float
        The budget of one report.
    oracle : {"adaptive", "olh"}
        ``"adaptive"``: GRR where its variance is smaller, else OLH; ``"olh"``: always OLH.

    Returns
    -------
    float
        The summed variance of the estimate from one report.
    """
    e = math.exp(epsilon)
    if oracle_name(cells, epsilon, oracle) == "grr":
        p, q = e / (e + cells - 1), 1.0 / (e + cells - 1)
    else:  # OLH: p' on the hashed value, 1/g for any other value (collisions uniform)
        g = optimal_g(epsilon)
        p, q = e / (e + g - 1), 1.0 / g
    return summed_variance(cells, p, q)


def summed_variance(cells: int, p: float, q: float) -> float:
    """``reidrisk.estimation.variance`` of one report, summed over the cells.

    The sum does not depend on the distribution, whose probabilities sum to 1:
    ``[p (1 - p) + (D - 1) q (1 - q)] / (p - q)^2``.

    Parameters
    ----------
    cells : int
        Size D of the domain.
    p : float
        The oracle's probability of supporting the true value.
    q : float
        Its probability of supporting any other value (``0 <= q < p <= 1``).

    Returns
    -------
    float
        The summed variance of the estimate from one report.
    """

    return float(variance(np.full(cells, 1.0 / cells), 1, p, q).sum())


@dataclass(frozen=True)
class CALMDesign:
    """The reported marginals of a CALM collection (module doc, step 1).

    Parameters
    ----------
    l : int
        Attributes per reported set.
    m : int
        Number of sets, one per group of users.
    sets : tuple of tuple of int
        The m sets, each l sorted attribute indices.
    oracles : tuple of str
        The frequency oracle of each set's joint domain (``"grr"`` or ``"olh"``).
    expected_error : float
        The error model E(l, m) at the chosen design (nan for a single attribute).
    """

    l: int
    m: int
    sets: tuple[tuple[int, ...], ...]
    oracles: tuple[str, ...]
    expected_error: float


def expected_pair_error(sizes: Sequence[int], epsilon: float, n: int, l: int, m: np.ndarray,
                        *, missing_rate: float = 0.0, oracle: str = "adaptive",
                        pair_dependence: float = PAIR_DEPENDENCE) -> np.ndarray:
    """The error model E(l, m) of the module doc (step 1) for one l and an array of m.

    Parameters
    ----------
    sizes : sequence of int
        Domain sizes of the d >= 2 attributes (their mean f gives ``D_l = f^l``).
    epsilon : float
        The budget of one report.
    n : int
        Number of users.
    l : int
        Attributes per reported set, 2..d.
    m : array_like of int
        Numbers of sets to evaluate.
    missing_rate : float
        The missing rate the design plans for (``m_plan``; 0 as in the paper).
    oracle : {"adaptive", "olh"}
        ``"adaptive"``: GRR where its variance is smaller, else OLH; ``"olh"``: always OLH.
    pair_dependence : float
        R0, the error counted for a pair no set covers.

    Returns
    -------
    numpy.ndarray
        E(l, m) for each m, of ``m``'s shape.
    """
    d = len(sizes)
    m = np.asarray(m, dtype=np.float64)
    f = float(np.mean(sizes))
    cells_l, cells_2 = f ** l, f ** 2
    r = math.comb(l, 2) / math.comb(d, 2)
    cover = 1.0 - (1.0 - r) ** m
    s = m * r / cover
    n_group = n * (1.0 - missing_rate) ** l / m
    var = oracle_variance(max(2, round(cells_l)), epsilon, oracle)
    err = (var + (1.0 - 1.0 / cells_2)) / n_group
    return cover * err / s + (1.0 - cover) * pair_dependence


def choose_design(sizes: Sequence[int] | np.ndarray, epsilon: float, n: int, *, missing_rate: float = 0.0,
                  oracle: str = "adaptive", pair_dependence: float = PAIR_DEPENDENCE,
                  max_cells: int = MAX_CELLS, rng=None) -> CALMDesign:
    """The design (l, m) minimizing the error model, with its m attribute sets (module doc, step 1).

    Parameters
    ----------
    sizes : sequence of int
        Domain sizes of the d attributes.
    epsilon : float
        The budget of one report.
    n : int
        Number of users (at least 1).
    missing_rate : float
        The missing rate the design plans for (``m_plan``; 0 as in the paper).
    oracle : {"adaptive", "olh"}
        ``"adaptive"``: GRR where its variance is smaller, else OLH; ``"olh"``: always OLH.
    pair_dependence : float
        R0, the error counted for a pair no set covers.
    max_cells : int
        Largest joint domain searched for l > 2 (l = 2 is always searched).
    rng : numpy.random.Generator, int or None
        Breaks ties when the sets are drawn (``None``: a fresh secure generator).

    Returns
    -------
    CALMDesign
        The chosen design (a single attribute: one set holding it, l = m = 1).

    Raises
    ------
    ValueError
        When there are no attributes or no users.
    """
    epsilon = check_epsilon(epsilon)
    sizes = [int(s) for s in sizes]
    d = len(sizes)
    if d == 0 or n < 1:
        raise ValueError(f"a CALM design needs attributes and users, got d={d}, n={n}")
    rng = as_generator(rng)
    if d == 1:
        return CALMDesign(1, 1, ((0,),), (oracle_name(sizes[0], epsilon, oracle),), float("nan"))
    f = float(np.mean(sizes))
    best = (math.inf, 2, 1)
    for l in range(2, d + 1):
        if f ** l > max_cells and l > 2:
            break
        n_eff = n * (1.0 - missing_rate) ** l
        m_min = math.ceil(d / l)  # every attribute in some set, or its marginal is unknown
        ms = np.unique(np.round(np.geomspace(m_min, max(m_min, n_eff), 600))).astype(np.int64)
        e = expected_pair_error(sizes, epsilon, n, l, ms, missing_rate=missing_rate,
                                oracle=oracle, pair_dependence=pair_dependence)
        i = int(np.argmin(e))
        if e[i] < best[0]:
            best = (float(e[i]), l, int(ms[i]))
    err, l, m = best
    sets = _balanced_sets(d, l, m, rng)
    oracles = tuple(oracle_name(int(np.prod([sizes[j] for j in s])), epsilon, oracle) for s in sets)
    return CALMDesign(l, m, sets, oracles, err)


def _balanced_sets(d: int, l: int, m: int, rng: np.random.Generator) -> tuple[tuple[int, ...], ...]:
    """m sets of l attributes, each set the l least used attributes so far (random ties)."""
    used = np.zeros(d)
    out = []
    for _ in range(m):  # m sets (not records), each an O(d log d) choice
        key = used + rng.random(d) * 0.5
        s = np.sort(np.argsort(key, kind="stable")[:l])
        used[s] += 1
        out.append(tuple(int(j) for j in s))
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# step 2: the client
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CALMReports:
    """What CALM's clients send, with the public design they followed.

    Parameters
    ----------
    schema : Schema
        The attributes.
    design : CALMDesign
        The reported sets and their oracles.
    groups : numpy.ndarray (n,) of int
        Each user's group, an index into ``design.sets``.
    mechanisms : tuple of Mechanism
        Per group, the oracle over the joint domain of its set, with the whole budget.
    reports : tuple of numpy.ndarray
        Per group, the reports of its users in user order (a missing report where the user lacks
        one of the set's attributes).
    epsilon : float
        The whole-record budget each user spent.
    """

    schema: Schema
    design: CALMDesign
    groups: np.ndarray
    mechanisms: tuple[Mechanism, ...]
    reports: tuple[np.ndarray, ...]
    epsilon: float

    @property
    def n(self) -> int:
        """Number of users."""
        return int(self.groups.size)


@dataclass(frozen=True)
class CALMProtocol:
    """CALM's client protocol for a whole-record budget (module doc, step 2).

    Every user reports one l-way marginal with the whole ``epsilon``. The design is chosen in
    ``randomize`` from the schema and the number of users (``choose_design``), unless a
    ``design`` is given.

    Parameters
    ----------
    epsilon : float
        Budget of one user's report.
    missing_rate : float
        The missing rate the design plans for (as in ``choose_design``).
    oracle : {"adaptive", "olh"}
        ``"adaptive"``: GRR where its variance is smaller, else OLH; ``"olh"``: always OLH.
    pair_dependence : float
        R0 of the error model.
    max_cells : int
        Largest joint domain searched for l > 2.
    design : CALMDesign, optional
        A fixed design, used instead of choosing one.
    """

    epsilon: float
    missing_rate: float = 0.0
    oracle: str = "adaptive"
    pair_dependence: float = PAIR_DEPENDENCE
    max_cells: int = MAX_CELLS
    design: CALMDesign | None = None

    among = "group"

    @property
    def mechanism(self) -> str:
        """The protocol's name, with what sets its design apart (report caches key on it)."""
        return (f"calm(oracle={self.oracle}, planned missing rate={self.missing_rate:g}, "
                f"R0={self.pair_dependence:g}, cells<={self.max_cells})")

    def attributes_for(self, g: int) -> int:
        """The number of attributes that may be asked for, which identifies the protocol in caches.

        l itself is chosen with the users' count in ``randomize``.

        Parameters
        ----------
        g : int
            Number of attributes of the schema.

        Returns
        -------
        int
            g: every attribute may be asked for.
        """
        return int(g)

    k_for = attributes_for

    def randomize(self, schema: Schema, codes: np.ndarray,
                  rng: np.random.Generator | int | None = None) -> CALMReports:
        """Choose the design, split the users into its m groups and randomize each group's values.

        Users are assigned to the m groups uniformly at random, in groups of sizes differing by
        at most one; each reports the joint value of its group's set through the set's oracle.

        Parameters
        ----------
        schema : Schema
            The attributes of ``codes``.
        codes : numpy.ndarray (n, g) of int
            Encoded values (``MISSING`` where a user has no value), checked against ``schema``.
        rng : numpy.random.Generator, int or None
            Source of the design's ties, the groups and the reports (``None``: a fresh secure
            generator).

        Returns
        -------
        CALMReports
            The reports, with the design and each user's group.
        """
        codes = schema.validate_codes(codes)
        rng = as_generator(rng)
        n = codes.shape[0]
        design = self.design or choose_design(
            schema.sizes, self.epsilon, n, missing_rate=self.missing_rate, oracle=self.oracle,
            pair_dependence=self.pair_dependence, max_cells=self.max_cells, rng=rng)
        groups = np.empty(n, dtype=np.int64)
        groups[rng.permutation(n)] = np.arange(n) % design.m
        order = np.argsort(groups, kind="stable")
        bounds = np.searchsorted(groups[order], np.arange(design.m + 1))
        mechs, reps = [], []
        for j, (attrs, fo) in enumerate(zip(design.sets, design.oracles)):  # m groups
            rows = order[bounds[j]:bounds[j + 1]]
            dims = tuple(int(schema.sizes[a]) for a in attrs)
            vals = codes[np.ix_(rows, np.asarray(attrs))]
            full = (vals != MISSING).all(axis=1)
            joint = np.full(rows.size, MISSING, dtype=np.int64)
            if full.any():
                joint[full] = np.ravel_multi_index(tuple(vals[full].T), dims)
            mech = make_mechanism(fo, self.epsilon, int(np.prod(dims)))
            mechs.append(mech)
            reps.append(mech.perturb(joint, rng))
        return CALMReports(schema, design, groups, tuple(mechs), tuple(reps), float(self.epsilon))


# ---------------------------------------------------------------------------------------------
# step 3: consistency
# ---------------------------------------------------------------------------------------------
def project(table: np.ndarray, attrs: Sequence[int], onto: Sequence[int]) -> np.ndarray:
    """The marginal of ``table`` on the attributes ``onto``, with its axes in ``onto``'s order.

    Parameters
    ----------
    table : numpy.ndarray
        A table with one axis per attribute of ``attrs``.
    attrs : sequence of int
        The attribute of each axis of ``table``.
    onto : sequence of int
        A subset of ``attrs`` (empty: the total, a 0-d array).

    Returns
    -------
    numpy.ndarray
        ``table`` summed over the other axes.
    """
    attrs = list(attrs)
    keep = [attrs.index(a) for a in onto]
    drop = tuple(i for i in range(len(attrs)) if i not in keep)
    t = np.asarray(table).sum(axis=drop) if drop else np.asarray(table)
    left = sorted(keep)  # the axes left after the sum, in table order
    return np.transpose(t, [left.index(k) for k in keep])


def intersection_closure(sets: Sequence[Sequence[int]]) -> list[tuple[int, ...]]:
    """The sets closed under intersection, smallest first (module doc, step 3).

    The sets themselves (a set reported by several groups), every intersection of two of them
    and of those intersections, and the empty set (every marginal shares the total); sorted by
    size, so every set comes after its subsets.

    Parameters
    ----------
    sets : sequence of sequence of int
        The reported attribute sets.

    Returns
    -------
    list of tuple of int
        Each distinct set once, as sorted attribute indices, ordered by (size, indices).
    """
    base = {frozenset(s) for s in sets}
    found: set[frozenset] = set(base) | {frozenset()}
    frontier = {a & b for a, b in itertools.combinations(base, 2)} - found
    while frontier:  # only intersections with a new set can be new
        found |= frontier
        frontier = {a & b for a in frontier for b in found} - found
    return sorted((tuple(sorted(s)) for s in found), key=lambda s: (len(s), s))


def consistency_plan(sets: Sequence[Sequence[int]]) -> list[tuple[tuple[int, ...], list[int]]]:
    """The consistency step's order: each shared set with the indices of the sets containing it.

    Parameters
    ----------
    sets : sequence of sequence of int
        The reported attribute sets.

    Returns
    -------
    list of (tuple of int, list of int)
        The sets of ``intersection_closure(sets)`` contained in two or more of ``sets``, in that
        order, each with the indices into ``sets`` of those containing it.
    """
    frozen = [frozenset(s) for s in sets]
    plan = []
    for A in intersection_closure(sets):
        a = frozenset(A)
        members = [i for i, s in enumerate(frozen) if a <= s]
        if len(members) >= 2:
            plan.append((A, members))
    return plan


def make_consistent(tables: Sequence[np.ndarray], sets: Sequence[Sequence[int]],
                    cell_var: Sequence[float] | np.ndarray | None = None,
                    plan: list | None = None) -> list[np.ndarray]:
    """The consistency step (module doc, step 3).

    Afterwards every two tables have the same projection on their common attributes.

    Parameters
    ----------
    tables : sequence of numpy.ndarray
        The marginals; ``tables[i]`` has one axis per attribute of ``sets[i]``.
    sets : sequence of sequence of int
        The attributes of each table.
    cell_var : sequence of float, optional
        Each table's per-cell variance, for the inverse-variance weights (``None``: equal
        weights; ``inf``: no information, weight 0).
    plan : list, optional
        ``consistency_plan(sets)`` computed beforehand (for repeated calls).

    Returns
    -------
    list of numpy.ndarray
        The consistent tables (float64 copies; the inputs are not changed).
    """
    out = [np.array(t, dtype=np.float64) for t in tables]
    var = np.ones(len(out)) if cell_var is None else np.asarray(cell_var, dtype=np.float64)
    sets = [tuple(s) for s in sets]
    for A, members in (consistency_plan(sets) if plan is None else plan):
        projs, weights, spread = [], [], []
        for i in members:
            c = out[i].size / int(np.prod([out[i].shape[sets[i].index(a)] for a in A]))
            projs.append(project(out[i], sets[i], A) if A else np.asarray(out[i].sum()))
            weights.append(0.0 if not np.isfinite(var[i]) else 1.0 / (c * var[i]))
            spread.append(c)
        w = np.asarray(weights)
        if w.sum() <= 0:
            w = np.ones_like(w)
        target = sum(wi * p for wi, p in zip(w, projs)) / w.sum()
        for i, p, c in zip(members, projs, spread):
            out[i] += _expand((target - p) / c, A, sets[i])
    return out


def _expand(t: np.ndarray, sub: Sequence[int], attrs: Sequence[int]) -> np.ndarray:
    """``t`` (axes ``sub``) reshaped to broadcast against a table with axes ``attrs``."""
    t = np.asarray(t)
    if not len(sub):
        return t
    pos = [list(attrs).index(a) for a in sub]
    t = np.transpose(t, np.argsort(pos))
    shape = [1] * len(attrs)
    for a, size in zip(sorted(pos), t.shape):
        shape[a] = size
    return t.reshape(shape)


def _norm_sub(t: np.ndarray) -> np.ndarray:
    return norm_sub(t.ravel(), 1.0).reshape(t.shape)


# ---------------------------------------------------------------------------------------------
# step 4: maximum entropy
# ---------------------------------------------------------------------------------------------
def max_entropy(tables: Sequence[np.ndarray], sets: Sequence[Sequence[int]], cols: Sequence[int],
                shape: Sequence[int], cell_var: Sequence[float] | np.ndarray | None = None, *,
                tol: float = IPF_TOL, max_iter: int = IPF_MAX_ITER) -> np.ndarray:
    """The maximum-entropy table on ``cols`` given the marginals' projections (module doc, step 4).

    The constraints are the projections of ``tables`` onto their intersections with ``cols``
    (negative cells clipped, each normalized). Projections onto the same set are averaged with
    inverse-variance weights; a set contained in a larger one is implied by it and dropped.
    Iterative proportional fitting from the uniform table (each constraint rescales the table so
    its projection matches), until every projection is within ``tol`` or ``max_iter`` sweeps.

    Parameters
    ----------
    tables : sequence of numpy.ndarray
        The marginals; ``tables[i]`` has one axis per attribute of ``sets[i]``.
    sets : sequence of sequence of int
        The attributes of each table.
    cols : sequence of int
        The query's attributes, the axes of the result in this order.
    shape : sequence of int
        The domain sizes of ``cols``.
    cell_var : sequence of float, optional
        Each table's per-cell variance (``None``: equal weights; ``inf``: weight 0).
    tol : float
        Largest absolute difference between a projection and its target at convergence.
    max_iter : int
        Largest number of sweeps over the constraints.

    Returns
    -------
    numpy.ndarray
        The table on ``cols``, of shape ``shape``: the pooled projection itself when a table
        covers all of ``cols``, else the fitted table (uniform when nothing constrains it).
    """
    cols = [int(c) for c in cols]
    var = np.ones(len(tables)) if cell_var is None else np.asarray(cell_var, dtype=np.float64)
    acc: dict[tuple[int, ...], list] = {}
    for t, s, v in zip(tables, sets, var):
        S = tuple(c for c in cols if c in s)
        if not S:
            continue
        p = np.clip(project(t, s, S), 0.0, None)
        c = np.asarray(t).size / p.size
        w = 1.0 / (c * v) if np.isfinite(v) and v > 0 else (1.0 if v == 0 else 0.0)
        a = acc.setdefault(S, [0.0, 0.0])
        a[0] = a[0] + w * p
        a[1] += w
    pooled = {S: (a[0] / a[1] if a[1] > 0 else None) for S, a in acc.items()}
    cons = {S: p / p.sum() for S, p in pooled.items() if p is not None and p.sum() > 0}
    full = tuple(cols)
    if full in cons:
        return cons[full]
    keep = [S for S in cons if not any(set(S) < set(T) for T in cons)]
    P = np.full(tuple(int(x) for x in shape), 1.0 / float(np.prod(shape)))
    axes = {S: tuple(i for i, c in enumerate(cols) if c not in S) for S in keep}
    targets = {S: _expand(cons[S], S, cols) for S in keep}
    for _ in range(max_iter):
        worst = 0.0
        for S in keep:
            cur = P.sum(axis=axes[S], keepdims=True)
            worst = max(worst, float(np.abs(cur - targets[S]).max()))
            with np.errstate(divide="ignore", invalid="ignore"):
                P *= np.where(cur > 0, targets[S] / cur, 0.0)
        if worst <= tol:
            break
    return P


# ---------------------------------------------------------------------------------------------
# the method
# ---------------------------------------------------------------------------------------------
class CALM(Method):
    """CALM, consistent adaptive local marginals, as a collection method (module doc).

    Learned: ``schema_``, ``design_``, ``sets_`` (the distinct reported sets),
    ``raw_marginals_`` (the unbiased estimates, one per set), ``marginals_`` (after Norm-Sub and
    consistency), ``cell_var_`` (per-cell variance of each) and ``n_complete_`` (complete reports
    per group).

    Parameters
    ----------
    oracle : {"adaptive", "olh"}
        ``"adaptive"``: GRR or OLH, whichever has the smaller variance; ``"olh"``: always OLH.
    missing_rate : float
        The missing rate in [0, 1) the design plans for (the paper: 0).
    pair_dependence : float
        R0 of the error model (module doc, step 1).
    max_cells : int
        Largest joint domain searched for l > 2.
    rounds : int
        Largest number of Norm-Sub / consistency alternations (at least one is done).
    """

    name = "calm"
    label = "CALM"
    mechanism = "calm"

    def __init__(self, oracle: str = "adaptive", missing_rate: float = 0.0,
                 pair_dependence: float = PAIR_DEPENDENCE, max_cells: int = MAX_CELLS,
                 rounds: int = CONSISTENCY_ROUNDS) -> None:
        if oracle not in ORACLES:
            raise ValueError(f"oracle must be one of {ORACLES}, got {oracle!r}")
        if not 0.0 <= float(missing_rate) < 1.0:
            raise ValueError(f"missing_rate must be in [0, 1), got {missing_rate!r}")
        self.oracle = oracle
        self.missing_rate = float(missing_rate)
        self.pair_dependence = float(pair_dependence)
        self.max_cells = int(max_cells)
        self.rounds = int(rounds)

    def protocol(  # type: ignore[override]  # CALM's client is not a per-attribute Protocol
            self, epsilon: float, attributes_per_person: int | None = None,
            among: str = "present", k: int | None = None) -> CALMProtocol:
        """CALM's own client, every user reporting one l-way marginal with the whole budget.

        Parameters
        ----------
        epsilon : float
            Budget of one user's report.
        attributes_per_person : int, optional
            Not used (it belongs to the per-attribute split); accepted for the common interface.
        among : str
            Not used, as ``attributes_per_person``.
        k : int, optional
            Former name of ``attributes_per_person``; not used.

        Returns
        -------
        CALMProtocol
            The client with this method's oracle, planned missing rate, R0 and joint-domain
            limit; the design is chosen when it randomizes.
        """
        return CALMProtocol(check_epsilon(epsilon), self.missing_rate, self.oracle,
                            self.pair_dependence, self.max_cells)

    def fit(self, reports) -> CALM:
        if not isinstance(reports, CALMReports):
            raise SchemaError(
                f"CALM is fitted on CALMReports (from CALM().protocol(epsilon).randomize), got "
                f"{type(reports).__name__}: its clients report l-way marginals, not attributes")
        design = reports.design
        # groups that report the same set (same joint domain, same oracle) pool their support
        # counts: the inversion of the pooled counts is the inverse-variance weighted mean of the
        # groups' inversions, which is what the consistency step would make of them anyway
        pooled: dict[tuple[int, ...], list] = {}
        ns = []
        for attrs, mech, rep in zip(design.sets, reports.mechanisms, reports.reports):
            w, n = mech.support_counts(rep)
            ns.append(int(n))
            acc = pooled.setdefault(tuple(attrs), [np.zeros_like(w, dtype=np.float64), 0, mech])
            if acc[2] is not mech and acc[2].params() != mech.params():
                # pooled counts are inverted through one channel: another one would bias them
                raise ValueError(
                    f"CALM reports: two groups report the set {tuple(int(a) for a in attrs)} "
                    f"through different oracles ({acc[2]!r} and {mech!r}); the groups of one set "
                    "share its oracle (randomize with CALM().protocol(epsilon))")
            acc[0] = acc[0] + w
            acc[1] += int(n)
        raw, var = [], []
        for attrs, (w, n, mech) in pooled.items():
            dims = tuple(int(reports.schema.sizes[a]) for a in attrs)
            p, q = mech.p_support, mech.q_support
            if n == 0:
                raw.append(np.full(dims, 1.0 / np.prod(dims)))
                var.append(np.inf)
            else:
                raw.append((invert(w, n, p, q) / n).reshape(dims))
                cells = int(np.prod(dims))  # mean per-cell variance (module doc, step 1)
                var.append(summed_variance(cells, p, q) / (n * cells))
        self.schema_ = reports.schema
        self.design_ = design
        self.sets_ = tuple(pooled)
        self.raw_marginals_ = tuple(raw)
        self.cell_var_ = np.asarray(var)
        self.n_complete_ = np.asarray(ns)
        self.marginals_ = tuple(self._post_process(raw))
        return self

    def _post_process(self, raw) -> list[np.ndarray]:
        sets = self.sets_
        plan = consistency_plan(sets)
        tabs = [np.asarray(t, dtype=np.float64) for t in raw]
        for _ in range(max(1, self.rounds)):  # Norm-Sub, then consistency (module doc, step 3)
            tabs = make_consistent([_norm_sub(t) for t in tabs], sets, self.cell_var_, plan)
            if min(float(t.min()) for t in tabs) >= -1e-12:
                break
        return tabs

    def _table(self, cols: list[int]) -> np.ndarray:
        shape = tuple(int(self.schema_.sizes[j]) for j in cols)
        return max_entropy(self.marginals_, self.sets_, cols, shape, self.cell_var_)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(oracle={self.oracle!r}, missing_rate={self.missing_rate:g})"


__all__ = [
    "CALM",
    "MAX_CELLS",
    "PAIR_DEPENDENCE",
    "CALMDesign",
    "CALMProtocol",
    "CALMReports",
    "choose_design",
    "consistency_plan",
    "expected_pair_error",
    "intersection_closure",
    "make_consistent",
    "max_entropy",
    "oracle_name",
    "oracle_variance",
    "project",
]
