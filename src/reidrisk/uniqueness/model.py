"""How many people share a record's values: the population model of paper 000, end to end.

``UniquenessModel.fit`` takes m databases, each a sample of a population of N people at rate s_i,
holding raw records or LDP reports (``RecordReports``, any registered mechanism), and

1. estimates every attribute's and every pair's distribution from all databases pooled (paper 000
   Section IV.A; the EM through each mechanism's channel for reports, plain counts for raw
   records; databases with different mechanisms weighted by their effective sample sizes);
2. fits the world model q comes from (``world``): the Gaussian copula of those tables
   (docs/design/uniqueness.md#model) or a latent class model (``reidrisk.latent``;
   Manrique-Vallier & Reiter, JASA 2012). ``world="auto"``: the copula when a database is raw,
   the latent class model when every database is randomized (``DEFAULT_WORLD``);
3. ``preset="reidrisk"`` (default): fits the prior of each record's population count
   (``scorer.CountPrior``) by empirical Bayes, on a raw database's records when there is one and
   the world is the copula, otherwise on a population simulated from the fitted world and sampled,
   randomized and re-estimated like the real databases (a parametric bootstrap;
   ``RAW_LATENT_SIMULATED``, ``SHAPE_CATEGORY_PRIOR``, ``SIMULATED_COUNT_FEATURES``).
   ``preset="paper"``: the paper's prior, Binomial(N, q) with the existence floor (eq. 9-19).

``score(records, T)`` then computes for each query record the copula probability q of its cell (a
multivariate normal rectangle probability by randomized quasi-Monte Carlo), its counts in the
databases, and the posterior of its population count X: E[X], P(X = 1), P(X > T), "X > T".

The two configurations (docs/design/uniqueness.md#the-two-configurations): ``"paper"`` is paper
000 as printed (q floored by eq. 14 or ``"poisson"``, X ~ Binomial(N, q) truncated at 1, eq. 16,
conditioned on the plain counts, eq. 17-18, decided by E[X] rounded, eq. 19; ``alpha="auto"``
picks alpha by the likelihood of the raw database's own counts). ``"reidrisk"`` makes four
changes: the prior X = 1 + Y with Y negative binomial, its mean log-linear in log q (and in the
raw records differing on one attribute), replacing the floor; the counts' likelihood models the
randomization (``counts="channel"``: a member matches with probability kappa = prod_j p_j, others
by chance phi); the decision "X > T" by the balanced rule P(X > T) > P(X > T over the
population); and an EM stopped at a step size shrinking as 1/sqrt(n) (``DEFAULT_EM_STOP``).

With a raw database and the copula world P(X = 1) is calibrated; with only LDP databases it is
only as calibrated as the simulated population is clumped like the real one: the ranking stays
useful, the probabilities can be too high, and ``reidrisk uniqueness score`` says so where the
measured gap at the databases' epsilon is above ``caveat``'s threshold. Why, and where it is
measured: docs/design/uniqueness.md#how-far-px--1-can-be-trusted.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from reidrisk._compat import renamed_attribute, renamed_keywords
from reidrisk.copula import GaussianCopula, rectangle_probability
from reidrisk.data.tables import contingency
from reidrisk.errors import ReidriskError
from reidrisk.estimation.pairs import estimate_pairs
from reidrisk.latent import LatentClassModel
from reidrisk.mechanisms.base import as_generator
from reidrisk.mechanisms.record import RecordRandomizer, RecordReports
from reidrisk.schema import MISSING, Schema, SchemaError
from reidrisk.uniqueness.decisions import RULES, decide
from reidrisk.uniqueness.floors import DEFAULT_ALPHA, FLOORS, INV_E, floor_q
from reidrisk.uniqueness.posterior import (
    PosteriorResult,
    check_population_size,
    match_counts,
    population_count_posterior,
)
from reidrisk.uniqueness.scorer import (
    CountPosterior,
    CountPrior,
    count_posterior,
    fit_count_prior,
)

METHODS: tuple[str, ...] = ("reidrisk", "paper")

PRESETS: dict[str, dict] = {
    "reidrisk": dict(prior="calibrated", counts="channel", neighbors=True, rule="balanced",
                     floor="none", alpha=None, world="auto"),
    "paper": dict(prior="binomial", counts="plain", neighbors=False, rule="expected",
                  floor="lambertw", alpha=DEFAULT_ALPHA, world="copula"),
}
"""The settings each ``method`` stands for; any of them can be overridden in the constructor."""

PRIORS = ("calibrated", "binomial")
WORLDS = ("auto", "latent", "copula")
DEFAULT_WORLD = "auto"
"""Model of the population whose cell probabilities q feed the prior and that the prior's
simulation draws from: ``"latent"`` (a latent class model, ``reidrisk.latent``, fitted on the
databases' records or through their channels) or ``"copula"`` (the Gaussian copula of the
estimated pair tables, paper 000). ``"auto"``: the copula when a database holds raw records (the
prior is then fitted on real counts, and the copula's q calibrates better there), the latent class
world when every database is randomized. Why: docs/design/uniqueness.md#settings-measured."""
COUNTS = ("channel", "plain")

DEFAULT_EM_STOP: float | str = "auto"
"""EM stopping rule for randomized databases. ``"auto"``: stop when no probability moves by more than
``EM_STOP_SCALE / sqrt(n)`` in one step, n = the reports pooled for the estimate (3e-4 at n = 3,000):
the threshold follows the 1/sqrt(n) scale of the estimates' standard errors. The early stop
regularizes: it ranks q better than the EM run to its noise-level fixed point, whose estimates of
large domains follow the noise (docs/design/uniqueness.md#model,
docs/design/uniqueness.md#settings-measured). A number is a fixed threshold; ``"noise"`` or None are passed to
``estimate_pairs`` as they are."""

DEFAULT_FALSE_DISPERSION: float = 1.0
"""Dispersion r of the chance matches of a randomized database, NegBin(r, phi): their mean phi comes
from an independence approximation, so it is given a coefficient of variation of one (r = 1)."""

EM_STOP_SCALE: float = 0.0164
"""Constant of the ``"auto"`` EM stopping rule (threshold = EM_STOP_SCALE / sqrt(n))."""

DEFAULT_QMC_POINTS = 128
"""Quasi-Monte Carlo points per record for q (2 scrambles x 64; their error:
docs/results/uniqueness_speed.md)."""

_PROB_FLOOR = 1e-9  # smallest probability of a category (estimation can return 0)
_Q_MIN_LAMBDA = 1e-8  # q is floored at this / N before taking logs (a feature, not the paper floor)
_ALPHA_GRID = 25
SHAPE_CATEGORY_PRIOR: float = 0.0
"""Strength of the category prior (``LatentClassModel(category_prior=...)``) of the latent class
world the prior's parametric bootstrap draws its population from (no database is raw, or
``RAW_LATENT_SIMULATED``; the *shape* world, ``UniquenessModel.shape_``; q keeps the default
world, ``latent_``). The default
category prior, 1 pseudo-record per class and attribute spread evenly over the categories, is
negligible against raw records but not against LDP reports: a k-RR report of a 41-category
attribute at epsilon = 1 carries less than a hundredth of a raw record's information (the inverse
variance of its frequency estimate, 1 / 600 for a category of share 1/41), so the prior pulls
every class toward uniform and the world is far more diffuse than the population. Shrinking toward uniform biases exactly the quantity the
bootstrap must reproduce, how clumped people are, so the shape world has none (0: the likelihood
along the same early-stopped EM path, K by held-out likelihood). Measured:
docs/design/uniqueness.md#settings-measured."""
SIMULATED_COUNT_FEATURES: bool = True
"""Without a raw database, the prior's parametric bootstrap also records each simulated query's
count in every simulated database (``count_matches``, the same event as the real counts) and the
prior takes log(1 + count_i) as features beside log q; the score is then that prior alone, with
the real counts as features, instead of the prior conditioned on the counts by their likelihood
(``count_posterior``'s kappa and phi). The reason: a world fitted on the databases has already
seen the counts, its q of a record is higher when the record or its cell-mates are in a database
(in-sample) and lower when none is, so conditioning on the counts after a prior calibrated on q
alone counts that evidence twice (measured: docs/design/uniqueness.md#settings-measured). Calibrating on (q, counts) jointly uses the evidence once, in
the amount the simulation shows it carries. False: the q-only prior and the counts' likelihood."""
RAW_LATENT_SIMULATED: bool = True
"""With ``world="latent"`` and a raw database, the prior is calibrated as without one: on the
parametric bootstrap's (q, database counts) together (``SIMULATED_COUNT_FEATURES``), with the
neighbours in the simulated reference database as a feature when ``neighbors`` is on, and the score
is that prior. The latent world is fitted on the raw database too, so its q of a record already
carries the record's (and its cell-mates') presence there; the former path, a prior fitted on the
reference database's cross-fitted q and then conditioned on the counts by their likelihood, used
that evidence twice. Not calibrated yet: the records in the database still get too low a
P(X = 1) (tests/uniqueness/test_world.py); measured: docs/design/uniqueness.md#settings-measured. False: the
former path (``_CROSSFIT_FOLDS`` cross-fitted q on the reference database, counts by likelihood).
The copula world keeps the reference-database prior; ``world="auto"`` still picks it with a raw
database."""
_CROSSFIT_FOLDS = 5  # folds of the latent world's cross-fitted q on the reference database


class UniquenessError(ReidriskError, ValueError):
    """Bad input to the uniqueness model. The message names the database/parameter and the fix."""


# ---------------------------------------------------------------------------------------------
# databases
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Database:
    """One sampled database: raw encoded records (n, g) or LDP reports, and its sampling rate.

    Parameters
    ----------
    data : numpy.ndarray (n, g) or RecordReports
        Raw encoded records, or LDP reports.
    rate : float, optional
        The share s of the population it samples, in (0, 1]; None means n / N.
    name : str
        Shown in messages and reports.
    """

    data: np.ndarray | RecordReports
    rate: float | None = None
    name: str = ""

    @property
    def randomized(self) -> bool:
        return isinstance(self.data, RecordReports)

    @property
    def n(self) -> int:
        return int(self.reports.n if self.randomized else np.asarray(self.data).shape[0])

    @property
    def reports(self) -> RecordReports:
        """The LDP reports of a randomized database."""
        if not isinstance(self.data, RecordReports):
            raise UniquenessError(f"database {self.name or '?'} holds raw records, not reports")
        return self.data

    @classmethod
    def from_randomized_codes(cls, codes: np.ndarray, schema: Schema, mechanism: str, epsilon: float,
                              rate: float | None = None, name: str = "",
                              weights: Sequence[float] | None = None) -> Database:
        """A database of k-RR reports stored as codes (one randomized category per attribute),
        randomized with ``mechanism`` (``"grr"``) at whole-record budget ``epsilon`` split by
        ``weights`` (even by default), as ``RecordRandomizer`` does.

        Parameters
        ----------
        codes : numpy.ndarray (n, g)
            The reports' codes.
        schema : Schema
            The attributes.
        mechanism : str
            ``"grr"`` (set-valued reports are passed as ``RecordReports``).
        epsilon : float
            Whole-record budget.
        rate : float, optional
            Sampling rate, as in ``Database``.
        name : str
            As in ``Database``.
        weights : sequence of float, optional
            Split of the budget over the attributes (even by default).

        Returns
        -------
        Database
            The reports with their k-RR mechanisms.
        """
        if str(mechanism).lower() != "grr":
            raise UniquenessError(
                f"database {name or '?'}: reports stored as category codes are k-RR reports; "
                f"mechanism {mechanism!r} produces set-valued reports, pass them as RecordReports"
            )
        codes = schema.validate_codes(codes)
        mechs = RecordRandomizer(schema, "grr", epsilon, weights).mechanisms
        reports = tuple(np.asarray(codes[:, j], dtype=np.int64) for j in range(len(schema)))
        return cls(RecordReports(schema, mechs, reports), rate, name)


def _as_database(item, i: int) -> Database:
    if isinstance(item, Database):
        return item
    if isinstance(item, RecordReports) or isinstance(item, np.ndarray):
        return Database(item, None, f"#{i}")
    if isinstance(item, tuple) and 1 <= len(item) <= 3:
        name = item[2] if len(item) == 3 else f"#{i}"
        return Database(item[0], item[1] if len(item) > 1 else None, str(name))
    raise UniquenessError(
        f"database {i}: expected a Database, RecordReports, an encoded (n, g) array or a tuple "
        f"(data, rate), got {type(item).__name__}"
    )


def _mech_key(reports: RecordReports) -> tuple:
    return tuple((m.name, m.k, round(float(m.epsilon), 12), type(m).__name__) for m in reports.mechanisms)


def _support_probs(db: Database, g: int) -> tuple[np.ndarray, np.ndarray]:
    """(p, q) per attribute: P(report supports the true value), P(it supports a given other one)."""
    if not db.randomized:
        return np.ones(g), np.zeros(g)
    mechs = db.reports.mechanisms
    return (np.array([m.p_support for m in mechs], dtype=np.float64),
            np.array([m.q_support for m in mechs], dtype=np.float64))


def _single_valued(db: Database) -> bool:
    return (not db.randomized) or all(m.name == "grr" for m in db.reports.mechanisms)


def _codes_of(db: Database) -> np.ndarray:
    """Raw codes, or the k-RR reports as codes (one reported category per attribute)."""
    if not db.randomized:
        return np.asarray(db.data)
    return np.column_stack([np.asarray(r, dtype=np.int64) for r in db.reports.reports])


def _present(db: Database) -> np.ndarray:
    return db.reports.present() if db.randomized else np.asarray(db.data) != MISSING


# ---------------------------------------------------------------------------------------------
# estimating the marginals and pairs from all databases
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PopulationEstimate:
    """Pooled estimates (paper 000 Section IV.A).

    Parameters
    ----------
    marginals : list of numpy.ndarray
        g probability vectors.
    tables : dict
        {(j, j'): (f_j, f_j') table} for j < j'.
    n_effective : numpy.ndarray (g,)
        Effective sample size per attribute (present records times the channel's efficiency,
        1 for raw data).
    groups : int
        Number of separately estimated database groups.
    """

    marginals: tuple[np.ndarray, ...]
    tables: dict
    n_effective: np.ndarray
    groups: int


def _efficiency(theta: np.ndarray, p: float, q: float) -> float:
    """Variance of the raw-data estimate over that of the inversion estimate through (p, q),
    averaged over the cells (paper 002 eq. 22; docs/design/core.md#inversion-variance): 1 for raw
    data, smaller under randomization."""
    if q == 0.0 and p == 1.0:
        return 1.0
    raw = np.sum(theta * (1.0 - theta))
    ldp = np.sum(theta * p * (1.0 - p) + (1.0 - theta) * q * (1.0 - q)) / (p - q) ** 2
    return float(raw / ldp) if ldp > 0 else 0.0


def estimate_population(databases: Sequence[Database], schema: Schema, em_stop=DEFAULT_EM_STOP
                        ) -> PopulationEstimate:
    """Marginals and pair tables of the population from every database, pooled.

    Raw databases are pooled into one table of counts; randomized databases are pooled per
    mechanism setting (same mechanism, budget and domain for every attribute) and estimated by the
    EM through the channel (``reidrisk.estimation.pairs.estimate_pairs``). The group estimates are
    averaged with weights = effective sample sizes (per attribute, and the product of the two
    attributes' efficiencies times the records having both for a pair). Probabilities are floored
    at ``_PROB_FLOOR`` (relative, for pairs) so that no category has probability exactly 0; no other
    smoothing (a pseudo-count flattens the EM estimates of large domains badly when epsilon is small).

    Parameters
    ----------
    databases : sequence of Database
        The sampled databases.
    schema : Schema
        Their attributes.
    em_stop : str, tuple, float or None
        The EM's stopping rule for the marginals and the pairs (``estimate_pairs``).

    Returns
    -------
    PopulationEstimate
        The pooled marginals and pair tables.
    """
    g = len(schema)
    sizes = [int(f) for f in schema.sizes]
    pairs = [(j, k) for j in range(g) for k in range(j + 1, g)]
    groups: list[_GroupEstimate] = []

    raw = [np.asarray(d.data) for d in databases if not d.randomized]
    if raw:
        groups.append(_raw_group(np.concatenate(raw, axis=0), sizes, pairs))
    by_mech: dict[tuple, list[RecordReports]] = {}
    for d in databases:
        if d.randomized:
            by_mech.setdefault(_mech_key(d.reports), []).append(d.reports)
    for reps in by_mech.values():
        groups.append(_randomized_group(reps, pairs, em_stop))
    if not groups:
        raise UniquenessError("no databases given; pass at least one sampled database")
    return _pool(groups, sizes, pairs)


class _GroupEstimate(NamedTuple):
    """One group's estimate in ``estimate_population``: the marginals (g,) and pair tables
    {(j, k): table}, and the weight of each, its effective sample size: ``n_eff`` (g,) per
    attribute, ``pair_n_eff`` {(j, k): n} per pair."""

    marginals: list[np.ndarray]
    tables: dict
    n_eff: np.ndarray
    pair_n_eff: dict


def _raw_group(codes: np.ndarray, sizes: list[int], pairs: list) -> _GroupEstimate:
    """The raw databases' records pooled: their frequencies, each weighted by its records."""
    g = len(sizes)
    margs, neff = [], np.zeros(g)
    for j, f in enumerate(sizes):
        col = codes[:, j]
        cnt = np.bincount(col[col != MISSING], minlength=f).astype(np.float64)
        neff[j] = cnt.sum()
        margs.append(cnt / cnt.sum() if cnt.sum() > 0 else np.full(f, 1.0 / f))
    tabs, npair = {}, {}
    for j, k in pairs:
        t = contingency(codes, sizes, [j, k], normalize=False).astype(np.float64)
        npair[(j, k)] = t.sum()
        tabs[(j, k)] = t / t.sum() if t.sum() > 0 else np.outer(margs[j], margs[k])
    return _GroupEstimate(margs, tabs, neff, npair)


def _randomized_group(reps: list[RecordReports], pairs: list, em_stop) -> _GroupEstimate:
    """Databases randomized with one mechanism setting, pooled and estimated by the EM through
    the channel, each estimate weighted by its reports times the channel's efficiency."""
    g = len(reps[0].schema)
    first = reps[0]
    pooled = first if len(reps) == 1 else RecordReports(
        first.schema, first.mechanisms,
        tuple(np.concatenate([r.reports[j] for r in reps], axis=0) for j in range(g)))
    stop = EM_STOP_SCALE / np.sqrt(max(pooled.n, 1)) if em_stop == "auto" else em_stop
    pe = estimate_pairs(pooled, estimator="em", stop=stop, shrink=False)
    margs = [np.clip(np.asarray(fe.probs, dtype=np.float64), 0.0, None) for fe in pe.marginals]
    margs = [m / m.sum() if m.sum() > 0 else np.full(m.size, 1.0 / m.size) for m in margs]
    eff = np.array([_efficiency(margs[j], m.p_support, m.q_support)
                    for j, m in enumerate(first.mechanisms)])
    neff = np.array([fe.n_present for fe in pe.marginals], dtype=np.float64) * eff
    tabs, npair = {}, {}
    for j, k in pairs:
        t = np.clip(np.asarray(pe[(j, k)], dtype=np.float64), 0.0, None)
        tabs[(j, k)] = t / t.sum() if t.sum() > 0 else np.outer(margs[j], margs[k])
        npair[(j, k)] = pe.n_present[(j, k)] * eff[j] * eff[k]
    return _GroupEstimate(margs, tabs, neff, npair)


def _pool(groups: list[_GroupEstimate], sizes: list[int], pairs: list) -> PopulationEstimate:
    """The groups' estimates averaged with their effective sample sizes as weights, floored at
    ``_PROB_FLOOR`` (``estimate_population``)."""
    g = len(sizes)
    marginals, tables = [], {}
    n_eff = np.zeros(g)
    for j, f in enumerate(sizes):
        w = np.array([grp.n_eff[j] for grp in groups])
        p = (sum(wi * grp.marginals[j] for wi, grp in zip(w, groups)) / w.sum() if w.sum() > 0
             else np.full(f, 1.0 / f))
        n_eff[j] = w.sum()
        p = np.maximum(p, _PROB_FLOOR)
        marginals.append(p / p.sum())
    for j, k in pairs:
        w = np.array([grp.pair_n_eff[(j, k)] for grp in groups])
        if w.sum() > 0:
            t = sum(wi * grp.tables[(j, k)] for wi, grp in zip(w, groups)) / w.sum()
        else:
            t = np.outer(marginals[j], marginals[k])
        t = np.maximum(t, _PROB_FLOOR * np.outer(marginals[j], marginals[k]))
        tables[(j, k)] = t / t.sum()
    return PopulationEstimate(tuple(marginals), tables, n_eff, len(groups))


# ---------------------------------------------------------------------------------------------
# counting
# ---------------------------------------------------------------------------------------------
def _patterns(records: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Groups of records sharing a missing-value pattern: [(present columns, row indices)]."""
    present = records != MISSING
    pats, inv = np.unique(present, axis=0, return_inverse=True)
    inv = inv.ravel()
    return [(np.flatnonzero(p), np.flatnonzero(inv == i)) for i, p in enumerate(pats)]


def count_matches(records: np.ndarray, db: Database, chunk: int = 1 << 22) -> np.ndarray:
    """(r,) records of ``db`` matching each query record on the query's present attributes.

    Raw data and k-RR reports: equal codes (``posterior.match_counts``); other mechanisms: reports
    whose support contains the query's value for every present attribute (the same event as an
    equal code for k-RR). Database rows missing one of those attributes never match. Vectorized
    through integer keys (loop over missing-value patterns) or a product of sparse support columns
    (loop over attributes, records in chunks).

    Parameters
    ----------
    records : numpy.ndarray (r, g)
        Encoded query records (``MISSING`` allowed).
    db : Database
        The database searched.
    chunk : int
        Most cells of a sparse product at once.

    Returns
    -------
    numpy.ndarray (r,)
        The matches.
    """
    out = np.zeros(records.shape[0], dtype=np.int64)
    if _single_valued(db):
        codes = _codes_of(db)
        for cols, rows in _patterns(records):
            if cols.size:
                out[rows] = match_counts(records[np.ix_(rows, cols)], codes[:, cols])
            else:
                out[rows] = int(_present(db).shape[0])
        return out
    supports = db.reports.supports()
    n = db.n
    for cols, rows in _patterns(records):
        if not cols.size:
            out[rows] = n
            continue
        step = max(1, chunk // max(n, 1))
        for s0 in range(0, rows.size, step):
            rr = rows[s0:s0 + step]
            acc = None
            for j in cols:  # loop over attributes
                col = supports[j][:, records[rr, j]]
                col = col.tocsc() if hasattr(col, "tocsc") else np.asarray(col, dtype=bool)
                if acc is None:
                    acc = col
                elif hasattr(acc, "multiply"):
                    acc = acc.multiply(col)
                else:
                    acc = acc & col if not hasattr(col, "multiply") else col.multiply(acc)
            assert acc is not None  # cols is not empty
            out[rr] = np.asarray(acc.sum(axis=0)).ravel().astype(np.int64)
    return out


def neighbor_counts(records: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """(r,) rows of a raw database that differ from each query record on exactly one of its present
    attributes (and agree on all the others). Loop over attributes, vectorized over records.

    Parameters
    ----------
    records : numpy.ndarray (r, g)
        Encoded query records.
    codes : numpy.ndarray (n, g)
        The raw database.

    Returns
    -------
    numpy.ndarray (r,)
        The neighbours of each record.
    """
    out = np.zeros(records.shape[0], dtype=np.float64)
    for cols, rows in _patterns(records):
        if cols.size < 2:
            continue
        rec = records[np.ix_(rows, cols)]
        db = codes[:, cols]
        exact = match_counts(rec, db)
        total = np.zeros(rows.size, dtype=np.float64)
        for j in range(cols.size):
            keep = np.delete(np.arange(cols.size), j)
            total += match_counts(rec[:, keep], db[:, keep]) - exact
        out[rows] = total
    return out


# ---------------------------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class UniquenessScores:
    """Per-record answers of ``UniquenessModel.score`` for r records and t thresholds.

    Parameters
    ----------
    preset : {"reidrisk", "paper"}
        The model's preset (formerly ``method``).
    settings : dict
        Its settings.
    rule : str
        The decision rule.
    N : int
        Population size.
    q : numpy.ndarray (r,)
        Copula probability of each record's cell (before any floor).
    counts : numpy.ndarray (r, m)
        Matches of each record in each database.
    expected, variance : numpy.ndarray (r,)
        E[X] and Var[X].
    p_unique : numpy.ndarray (r,)
        P(X = 1).
    thresholds : numpy.ndarray (t,)
        The thresholds T.
    p_greater : numpy.ndarray (r, t)
        P(X > T).
    greater : numpy.ndarray (r, t) of bool
        The decision "X > T" by ``rule``; ``at_risk`` is its negation.
    base_rates : numpy.ndarray (t,) or None
        P(X > T) over the population (the balanced rule's cut-offs).
    posterior : CountPosterior or PosteriorResult
        The full posterior.
    """

    preset: str
    settings: dict
    rule: str
    N: int
    q: np.ndarray
    counts: np.ndarray
    expected: np.ndarray
    variance: np.ndarray
    p_unique: np.ndarray
    thresholds: np.ndarray
    p_greater: np.ndarray
    greater: np.ndarray
    base_rates: np.ndarray | None
    posterior: CountPosterior | PosteriorResult = field(repr=False)

    method = renamed_attribute("preset", "method")

    @property
    def n_records(self) -> int:
        return int(self.q.size)

    @property
    def at_risk(self) -> np.ndarray:
        """(r, t) bool: the record is predicted to be shared by at most T people."""
        return ~self.greater

    def to_frame(self, index=None) -> pd.DataFrame:
        """One row per record: expected_count, p_unique, p_gt_<T> and flag_le_<T> per threshold
        (flag = 1 when at most T people are predicted to share the record's values), q, and the
        count in each database.

        Parameters
        ----------
        index : array_like, optional
            The frame's index (default 0..r-1).

        Returns
        -------
        pandas.DataFrame
            One row per record.
        """
        data = {"expected_count": self.expected, "p_unique": self.p_unique}
        for j, t in enumerate(self.thresholds):
            tag = f"{t:g}"
            data[f"p_gt_{tag}"] = self.p_greater[:, j]
            data[f"flag_le_{tag}"] = self.at_risk[:, j].astype(np.int8)
        data["q"] = self.q
        for i in range(self.counts.shape[1]):
            data[f"count_db{i + 1}"] = self.counts[:, i]
        return pd.DataFrame(data, index=index)


# ---------------------------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------------------------
class UniquenessModel:
    """Population counts and uniqueness of records from sampled, possibly LDP, databases (paper 000).

    Parameters
    ----------
    preset : "reidrisk" (default) or "paper"; selects the settings in ``PRESETS`` (formerly
        ``method``).
    prior : "calibrated" (empirical-Bayes negative binomial, ``scorer``) or "binomial" (eq. 15-16
        with the floor).
    counts : "channel" (the counts' likelihood through the randomization) or "plain" (eq. 17);
        not used where the calibrated prior is simulated and takes the counts as features
        (``SIMULATED_COUNT_FEATURES``: no raw database, or ``RAW_LATENT_SIMULATED``), where the
        score is that prior.
    neighbors : use the records of a raw database that differ on one attribute as a prior feature.
    rule : "balanced", "probability" or "expected" (``decisions.decide``).
    floor, alpha : the existence floor of the binomial prior (``floors``); alpha="auto" chooses it
        by the likelihood of a raw database's own counts.
    world : "auto", "latent" or "copula" (``DEFAULT_WORLD`` for "reidrisk", the copula for
        "paper"): the population model q comes from.
    latent_classes : K of the latent class world ("auto": held-out likelihood, ``reidrisk.latent``).
    copula_fit : pair fit of the copula ("table", docs/design/uniqueness.md#model, or "mi"; formerly
        ``copula_method``).
    em_stop : stopping rule of the EM on randomized databases (``DEFAULT_EM_STOP``).
    false_dispersion : dispersion of the chance matches in the channel likelihood
        (``DEFAULT_FALSE_DISPERSION``; np.inf = Poisson).
    qmc_points : quasi-Monte Carlo points per record for q (>= 128; 2 scrambles).
    n_calibration : records the prior is fitted on.
    simulation_cap : largest simulated population (parametric bootstrap: no raw database exists, or
        the latent class world).
    rng : seed or Generator for the calibration samples and the simulation.

    Learned: ``schema_``, ``N_``, ``rates_`` (m,), ``sizes_`` (m,), ``randomized_`` (m,),
    ``estimate_`` (PopulationEstimate), ``copula_``, ``prior_`` (CountPrior or None), ``alpha_``,
    ``world_`` ("latent" or "copula", after "auto"), ``latent_`` (LatentClassModel or None),
    ``shape_`` (the latent class world the bootstrap population was drawn from, or None),
    ``reference_`` (index of the raw database used for calibration/neighbors, or None),
    ``timings_`` (seconds per fitting step).
    """

    @renamed_keywords(method="preset", copula_method="copula_fit")
    def __init__(
        self,
        preset: str = "reidrisk",
        *,
        prior: str | None = None,
        counts: str | None = None,
        neighbors: bool | None = None,
        rule: str | None = None,
        floor: str | None = None,
        alpha: float | str | None = None,
        world: str | None = None,
        latent_classes: int | str = "auto",
        copula_fit: str = "table",
        em_stop: float | str = DEFAULT_EM_STOP,
        false_dispersion: float = DEFAULT_FALSE_DISPERSION,
        qmc_points: int = DEFAULT_QMC_POINTS,
        n_calibration: int = 1000,
        simulation_cap: int = 1_000_000,
        rng: np.random.Generator | int | None = 0,
    ) -> None:
        if preset not in METHODS:
            raise UniquenessError(f"preset must be one of {list(METHODS)}, got {preset!r}")
        chosen = PRESETS[preset]
        self.preset = preset
        self.prior = chosen["prior"] if prior is None else prior
        self.counts = chosen["counts"] if counts is None else counts
        self.neighbors = chosen["neighbors"] if neighbors is None else bool(neighbors)
        self.rule = chosen["rule"] if rule is None else rule
        self.floor = chosen["floor"] if floor is None else floor
        self.alpha = chosen["alpha"] if alpha is None else alpha
        if self.prior not in PRIORS:
            raise UniquenessError(f"prior must be one of {list(PRIORS)}, got {self.prior!r}")
        if self.counts not in COUNTS:
            raise UniquenessError(f"counts must be one of {list(COUNTS)}, got {self.counts!r}")
        if self.rule not in RULES:
            raise UniquenessError(f"rule must be one of {list(RULES)}, got {self.rule!r}")
        if self.floor not in FLOORS:
            raise UniquenessError(f"floor must be one of {list(FLOORS)}, got {self.floor!r}")
        if self.prior == "binomial":
            if self.counts != "plain":
                raise UniquenessError(
                    "the binomial prior (paper 000 eq. 15-18) conditions on the plain counts; use "
                    "counts='plain' with prior='binomial', or prior='calibrated'"
                )
            if self.rule == "balanced":
                raise UniquenessError("the balanced rule needs prior='calibrated' (its base rates)")
            if not (self.alpha == "auto" or isinstance(self.alpha, (int, float))):
                raise UniquenessError(f"alpha must be a number or 'auto', got {self.alpha!r}")
        world = chosen["world"] if world is None else world
        if world not in WORLDS:
            raise UniquenessError(f"world must be one of {list(WORLDS)}, got {world!r}")
        self.world = world
        self.latent_classes = latent_classes
        self.copula_fit = copula_fit
        self.em_stop = em_stop
        if not float(false_dispersion) > 0:
            raise UniquenessError(f"false_dispersion must be > 0 (np.inf: Poisson), got {false_dispersion!r}")
        self.false_dispersion = float(false_dispersion)
        if int(qmc_points) < 128:
            raise UniquenessError(f"qmc_points must be >= 128 (2 scrambles x 64), got {qmc_points}")
        self.qmc_points = int(qmc_points)
        self.n_calibration = int(n_calibration)
        self.simulation_cap = int(simulation_cap)
        self.rng = rng

    def settings(self) -> dict:
        """The effective settings (after the preset).

        Returns
        -------
        dict
            The settings.
        """
        return dict(preset=self.preset, prior=self.prior, counts=self.counts,
                    neighbors=self.neighbors, rule=self.rule, floor=self.floor, alpha=self.alpha,
                    world=self.world, copula_fit=self.copula_fit, em_stop=self.em_stop,
                    qmc_points=self.qmc_points)

    method = renamed_attribute("preset", "method")
    copula_method = renamed_attribute("copula_fit", "copula_method")

    def __repr__(self) -> str:
        return f"UniquenessModel({', '.join(f'{k}={v!r}' for k, v in self.settings().items())})"

    # ---- fitting -------------------------------------------------------------------------------
    def fit(self, databases: Sequence, population_size: int, schema: Schema | None = None
            ) -> UniquenessModel:
        """Fit the population model from m >= 1 databases sampled from a population of
        ``population_size`` people.

        Parameters
        ----------
        databases : sequence
            ``Database`` objects, ``RecordReports``, encoded (n, g) arrays (raw records) or
            tuples ``(data, rate)``.
        population_size : int
            N.
        schema : Schema, optional
            Required when every database is raw.

        Returns
        -------
        UniquenessModel
            This model, fitted.
        """
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        dbs = [_as_database(d, i) for i, d in enumerate(databases)]
        if not dbs:
            raise UniquenessError("no databases given; pass at least one sampled database")
        schema = self._schema(dbs, schema)
        N = _check_N(population_size)
        dbs = [self._check_db(d, i, schema, N) for i, d in enumerate(dbs)]
        self.schema_ = schema
        self.N_ = N
        self.databases_ = tuple(dbs)
        self.sizes_ = np.array([d.n for d in dbs], dtype=np.int64)
        self.rates_ = np.array([d.rate if d.rate is not None else d.n / N for d in dbs])
        self.randomized_ = np.array([d.randomized for d in dbs])
        raw_complete = [int((_present(d).all(axis=1)).sum()) if not d.randomized else -1 for d in dbs]
        self.reference_ = int(np.argmax(raw_complete)) if max(raw_complete) >= 2 else None
        self._gen = as_generator(self.rng)

        self.estimate_ = estimate_population(dbs, schema, self.em_stop)
        timings["estimation"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        self.copula_: GaussianCopula | None = None
        self.latent_: LatentClassModel | None = None
        self.shape_: LatentClassModel | None = None
        self.world_ = self.world if self.world != "auto" else (
            "copula" if self.reference_ is not None else "latent")
        if self.world_ == "copula":
            self.copula_ = GaussianCopula(copula_fit=self.copula_fit).fit(
                list(self.estimate_.marginals), self.estimate_.tables)
            timings["copula"] = time.perf_counter() - t1
        else:
            self.latent_ = _fit_latent(dbs, schema, self.latent_classes, self._gen)
            timings["latent"] = time.perf_counter() - t1
        t2 = time.perf_counter()
        self.prior_: CountPrior | None = None
        self.counts_in_prior_ = False
        self.alpha_: Any = self.alpha if self.alpha != "auto" else None  # a number once chosen
        self.alpha_source_ = "given"
        self._calibration_features: np.ndarray | None = None
        if self.prior == "calibrated":
            self._fit_prior()
        elif self.alpha == "auto":
            self._fit_alpha()
        timings["calibration"] = time.perf_counter() - t2
        timings["total"] = time.perf_counter() - t0
        self.timings_ = timings
        return self

    def _schema(self, dbs: list[Database], schema: Schema | None) -> Schema:
        found = [d.reports.schema for d in dbs if d.randomized]
        if schema is None:
            if not found:
                raise UniquenessError(
                    "every database holds raw codes: pass the schema (fit(..., schema=schema)) so "
                    "that the attributes and their domains are known"
                )
            schema = found[0]
        for s in found:
            if list(s.names) != list(schema.names) or list(s.sizes) != list(schema.sizes):
                raise UniquenessError(
                    "the databases do not share one schema (attribute names and domain sizes must "
                    "agree); encode every database with the same schema"
                )
        return schema

    def _check_db(self, d: Database, i: int, schema: Schema, N: int) -> Database:
        label = d.name or f"#{i}"
        if d.randomized:
            d.reports.validate()
        else:
            try:
                codes = schema.validate_codes(np.asarray(d.data))
            except SchemaError as exc:
                raise SchemaError(f"database {label}: {exc}") from None
            d = Database(codes, d.rate, d.name)
        if d.n == 0:
            raise UniquenessError(f"database {label} has no records")
        if d.n > N:
            raise UniquenessError(
                f"database {label} holds {d.n} records but the population has N = {N}: a sample "
                "cannot exceed its population; check the population size"
            )
        if d.rate is not None:
            s = float(d.rate)
            if not (np.isfinite(s) and 0.0 < s <= 1.0):
                raise UniquenessError(
                    f"database {label}: sampling rate s = {d.rate!r} is outside (0, 1]; pass the "
                    "share of the population it samples (its size / N), or None for n / N"
                )
        return d

    def _check_fitted(self) -> None:
        if not hasattr(self, "estimate_"):
            raise UniquenessError("this UniquenessModel is not fitted; call fit(databases, N) first")

    # ---- cell probabilities ------------------------------------------------------------------
    def cell_probability(self, records: np.ndarray) -> np.ndarray:
        """q (r,): probability of each record's cell under the fitted copula
        (docs/design/uniqueness.md#model, step 4): a normal rectangle probability by randomized QMC
        (``qmc_points`` points, fixed scrambling seed, so a record's q does not depend on the other
        records). A missing value leaves its attribute unconstrained.

        Parameters
        ----------
        records : numpy.ndarray (r, g)
            Encoded records.

        Returns
        -------
        numpy.ndarray (r,)
            q.
        """
        self._check_fitted()
        rec = self._check_records(records)
        return self._q(rec)

    def _q(self, rec: np.ndarray, world=None) -> np.ndarray:
        """q of each record's cell under the fitted world (or ``world``)."""
        world = (self.latent_ if self.world_ == "latent" else self.copula_) if world is None else world
        if isinstance(world, LatentClassModel):
            return world.prob(rec)
        return _rectangles(world, rec, self.qmc_points)

    def _check_records(self, records) -> np.ndarray:
        rec = np.asarray(records)
        if rec.ndim == 1 and rec.size == len(self.schema_):
            rec = rec[None, :]
        try:
            rec = self.schema_.validate_codes(rec)
        except SchemaError as exc:
            raise SchemaError(f"query records: {exc}") from None
        return rec.astype(np.int64)

    # ---- the calibrated prior ----------------------------------------------------------------
    def _features(self, q: np.ndarray, neighbors: np.ndarray | None, N: int,
                  counts: np.ndarray | None = None) -> np.ndarray:
        lq = np.log(np.maximum(q, _Q_MIN_LAMBDA / N))
        cols = [np.ones_like(lq), lq]
        if neighbors is not None:
            cols.append(np.log1p(neighbors))
        if counts is not None:
            cols.extend(np.log1p(np.asarray(counts, dtype=np.float64)).T)
        return np.column_stack(cols)

    def _feature_names(self) -> tuple[str, ...]:
        names = ("intercept", "log_q") + (("log1p_neighbors",) if self._use_neighbors() else ())
        if self._counts_in_prior():
            names += tuple(f"log1p_count_{i}" for i in range(len(self.databases_)))
        return names

    def _counts_in_prior(self) -> bool:
        """Whether the prior takes the database counts as features (``SIMULATED_COUNT_FEATURES``;
        the prior is calibrated on a simulation, ``_simulated_prior``) and the score is the prior."""
        return bool(self.counts_in_prior_)

    def _use_neighbors(self) -> bool:
        return bool(self.neighbors and self.reference_ is not None)

    def _simulated_prior(self) -> bool:
        """Whether the prior is calibrated on the parametric bootstrap: no database is raw, or the
        latent class world with a raw one (``RAW_LATENT_SIMULATED``)."""
        return self.reference_ is None or (self.world_ == "latent" and RAW_LATENT_SIMULATED)

    def _reference_sample(self):
        """Up to ``n_calibration`` complete records of the raw reference database: (its codes, the
        records, their copula q, their other matches in it, and the probability ``thin`` that
        another member of a record's cell is among them: the rate times the complete share)."""
        assert self.reference_ is not None  # only called with a raw reference database
        codes = np.asarray(self.databases_[self.reference_].data)
        complete = np.flatnonzero((codes != MISSING).all(axis=1))
        take = complete if complete.size <= self.n_calibration else np.sort(
            self._gen.choice(complete, self.n_calibration, replace=False))
        rec = codes[take].astype(np.int64)
        q = self._q(rec) if self.world_ == "copula" else self._crossfit_q(codes, take)
        other = match_counts(rec, codes) - 1
        thin = float(self.rates_[self.reference_]) * complete.size / codes.shape[0]
        return codes, rec, q, other, min(max(thin, 1e-12), 1.0)

    def _crossfit_q(self, codes: np.ndarray, take: np.ndarray) -> np.ndarray:
        """q of the reference database's own records under the latent world, cross-fitted: each of
        ``_CROSSFIT_FOLDS`` folds gets q from the world refitted on the
        other folds' records (and every other database; same K, own starts). A record's q under a world fitted on it is
        biased up for the rare records the prior is about, while the query records are (mostly) not
        in the databases; cross-fitting removes that mismatch."""
        gen = self._gen
        fold = np.asarray(gen.integers(0, _CROSSFIT_FOLDS, size=codes.shape[0]))
        q = np.empty(take.size)
        others = [d.data if d.randomized else np.asarray(d.data)
                  for i, d in enumerate(self.databases_) if i != self.reference_]
        for f in range(_CROSSFIT_FOLDS):
            rows = np.flatnonzero(fold[take] == f)
            if rows.size == 0:
                continue
            assert self.latent_ is not None  # cross-fitting refits the latent world
            world = LatentClassModel(self.latent_.n_classes_, rng=gen).fit(
                [codes[fold != f]] + others, self.schema_)
            q[rows] = world.prob(codes[take[rows]])
        return q

    def _fit_prior(self) -> None:
        if not self._simulated_prior():
            codes, rec, q, other, thin = self._reference_sample()
            nb = neighbor_counts(rec, codes) if self._use_neighbors() else None
            F = self._features(q, nb, self.N_)
            self.prior_ = fit_count_prior(F, other, thin, self.N_, self._feature_names(), "databases")
            self._calibration_features = F
            self._calibration_N = self.N_
        else:
            self.counts_in_prior_ = SIMULATED_COUNT_FEATURES
            F, y, Ns = self._simulate()
            self.prior_ = fit_count_prior(F, y, 1.0, Ns, self._feature_names(), "simulation")
            self._calibration_features = F
            self._calibration_N = Ns

    def _simulate(self) -> tuple[np.ndarray, np.ndarray, int]:
        """Parametric bootstrap: draw a population from the fitted world (the copula, or the
        latent class shape world ``shape_``, fitted without the category prior:
        ``SHAPE_CATEGORY_PRIOR``), sample and randomize the databases as the real ones were (sizes,
        mechanisms, missing-value patterns), re-estimate the world the same way as q's (for the
        latent class world: its K and settings), and return the features and the exact
        other-member counts Y of simulated query records."""
        gen = self._gen
        Ns = int(min(self.N_, max(self.simulation_cap, 2 * int(self.sizes_.max()))))
        fitted: LatentClassModel | GaussianCopula | None = self.copula_
        if self.world_ == "latent":
            fitted = self.shape_ = self._shape_world(gen)
        assert fitted is not None  # fit set the world it chose
        population = fitted.sample(Ns, gen).astype(np.int64)
        sim = []
        for d in self.databases_:
            n = min(d.n, Ns)
            rows = gen.choice(Ns, n, replace=False)
            codes = population[rows].copy()
            present = _present(d)
            mask = present[gen.choice(present.shape[0], n, replace=n > present.shape[0])]
            codes[~mask] = MISSING
            if d.randomized:
                mechs = d.reports.mechanisms
                reports = tuple(m.perturb(codes[:, j], gen) for j, m in enumerate(mechs))
                sim.append(Database(RecordReports(self.schema_, mechs, reports), d.rate, d.name))
            else:
                sim.append(Database(codes, d.rate, d.name))
        world: LatentClassModel | GaussianCopula
        if self.world_ == "latent":
            assert self.latent_ is not None
            world = _fit_latent(sim, self.schema_, self.latent_.n_classes_, gen)
        else:
            est = estimate_population(sim, self.schema_, self.em_stop)
            world = GaussianCopula(copula_fit=self.copula_fit).fit(list(est.marginals), est.tables)
        k = min(self.n_calibration, Ns)
        targets = population[gen.choice(Ns, k, replace=False)]
        y = match_counts(targets, population) - 1
        q = self._q(targets, world)
        # a simulated database samples Ns < N people at n / Ns > s: thin its counts to the rate
        # of the real one (N > simulation_cap only; exact for the members of the cell)
        keep = np.array([min(1.0, float(self.rates_[i]) * Ns / max(d.n, 1)) for i, d in enumerate(sim)])
        counts = nb = None
        if self._counts_in_prior():
            counts = np.column_stack([count_matches(targets, d) for d in sim])
            if np.any(keep < 1.0):
                counts = gen.binomial(counts, keep[None, :])
        if self._use_neighbors():
            assert self.reference_ is not None  # _use_neighbors checks it
            nb = neighbor_counts(targets, np.asarray(sim[self.reference_].data))
            if keep[self.reference_] < 1.0:
                nb = gen.binomial(nb.astype(np.int64), keep[self.reference_]).astype(np.float64)
        return self._features(q, nb, Ns, counts), y, Ns

    def _shape_world(self, gen: np.random.Generator) -> LatentClassModel:
        """The latent class world the bootstrap population is drawn from (``SHAPE_CATEGORY_PRIOR``).

        Parameters
        ----------
        gen : numpy.random.Generator
            The fit's generator (starts and held-out split).
        """
        return _fit_latent(self.databases_, self.schema_, "auto", gen, SHAPE_CATEGORY_PRIOR)

    def base_rates(self, T: Sequence[float] | np.ndarray, N: int | None = None) -> np.ndarray:
        """P(X > T) over the population for each T: the mean of the prior P(X > T) over the records
        the prior was fitted on (a sample of the population, real or simulated).

        Parameters
        ----------
        T : sequence of float or numpy.ndarray
            The thresholds.
        N : int, optional
            Population size (default the fitted one).

        Returns
        -------
        numpy.ndarray (t,)
            P(X > T).
        """
        self._check_fitted()
        if self.prior_ is None:
            raise UniquenessError("base rates need the calibrated prior (prior='calibrated')")
        N = self.N_ if N is None else _check_N(N)
        t = np.atleast_1d(np.asarray(T, dtype=np.float64))
        F = self._calibration_features
        assert F is not None  # set with the prior
        return np.array([self.prior_.prob_at_least(v, F, N).mean() for v in t])

    # ---- alpha by the data (paper configuration) ---------------------------------------------
    def _fit_alpha(self) -> None:
        """Choose alpha maximizing the likelihood of the raw reference database's own counts under
        the paper's model: X ~ Poisson(N q_floor) truncated at 1 (eq. 9-16), each of the X - 1
        others in the database with probability s (a record of the database is one of the X)."""
        if self.reference_ is None:
            self.alpha_ = DEFAULT_ALPHA
            self.alpha_source_ = "default (no raw database to choose alpha from)"
            return
        _, _, q, other, thin = self._reference_sample()
        other = other.astype(np.float64)
        hi = INV_E if self.floor == "lambertw" else 0.999
        grid = np.geomspace(1e-4, hi, _ALPHA_GRID)
        ll = np.array([_paper_loglik(floor_q(q, self.N_, a, self.floor) * self.N_, other, thin)
                       for a in grid])
        self.alpha_ = float(grid[int(np.argmax(ll))])
        self.alpha_source_ = "chosen by the likelihood of the raw database's counts"

    # ---- scoring -------------------------------------------------------------------------------
    def counts_of(self, records: np.ndarray) -> np.ndarray:
        """(r, m) matches of each record in each database (``count_matches``).

        Parameters
        ----------
        records : numpy.ndarray (r, g)
            Encoded records.

        Returns
        -------
        numpy.ndarray (r, m)
            The matches.
        """
        self._check_fitted()
        rec = self._check_records(records)
        return np.column_stack([count_matches(rec, d) for d in self.databases_])

    def _channel(self, rec: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(kappa, phi), each (r, m): probability that a member of the record's cell in database i
        is counted, and the expected chance matches from other cells (independence approximation
        of the randomized records: n_P * [prod_j (p_j theta_j + q_j (1 - theta_j)) - prod_j p_j
        theta_j] over the record's present attributes P)."""
        r, g = rec.shape
        m = len(self.databases_)
        kappa = np.ones((r, m))
        phi = np.zeros((r, m))
        margs = self.estimate_.marginals
        for i, d in enumerate(self.databases_):
            p, qs = _support_probs(d, g)
            present = _present(d)
            for cols, rows in _patterns(rec):
                n_p = float(present[:, cols].all(axis=1).sum()) if cols.size else float(present.shape[0])
                share = n_p / max(present.shape[0], 1)
                theta = np.column_stack([margs[j][rec[rows, j]] for j in cols]) if cols.size else np.ones((rows.size, 0))
                keep = np.prod(p[cols]) if cols.size else 1.0
                kappa[rows, i] = max(share * keep, 1e-300)
                if d.randomized:
                    tilde = p[cols][None, :] * theta + qs[cols][None, :] * (1.0 - theta)
                    phi[rows, i] = n_p * np.maximum(np.prod(tilde, axis=1) - keep * np.prod(theta, axis=1), 0.0)
        return kappa, phi

    def score(self, records: np.ndarray, T: Sequence[float] | np.ndarray | float = (1,),
              N: int | None = None,
              keep_pmf: bool = True) -> UniquenessScores:
        """Posterior of each record's population count X: E[X], P(X = 1), P(X > T) and the decision.

        Parameters
        ----------
        records : numpy.ndarray (r, g)
            Encoded codes under the model's schema (``MISSING`` allowed: the count is then over
            the present attributes).
        T : float or sequence of float
            One or more thresholds.
        N : int, optional
            Population size (default the fitted one).
        keep_pmf : bool
            Keep the full posterior (memory r x grid size).

        Returns
        -------
        UniquenessScores
            The per-record answers.
        """
        self._check_fitted()
        rec = self._check_records(records)
        Nn = self.N_ if N is None else _check_N(N)
        if Nn < int(self.sizes_.max()):
            raise UniquenessError(
                f"N = {Nn} is smaller than database {int(np.argmax(self.sizes_))} "
                f"({int(self.sizes_.max())} records); the population must hold every database"
            )
        thresholds = np.atleast_1d(np.asarray(T, dtype=np.float64))
        if thresholds.ndim != 1 or thresholds.size == 0 or np.any(~np.isfinite(thresholds)) or np.any(thresholds < 0):
            raise UniquenessError(f"T must be one or more finite thresholds >= 0, got {T!r}")
        q = self._q(rec)
        counts = np.column_stack([count_matches(rec, d) for d in self.databases_])
        base = None
        post: PosteriorResult | CountPosterior
        if self.prior == "binomial":
            post = population_count_posterior(q, Nn, self.rates_, counts, alpha=self.alpha_,
                                              floor=self.floor, sizes=self.sizes_)
            pg = post.prob_greater(thresholds)
            if pg.ndim == 1:
                pg = pg[:, None]
            greater = decide(self.rule, pg, post.expected, thresholds)
            expected, variance, p_unique = post.expected, post.variance, post.p_unique
        else:
            nb = None
            if self._use_neighbors():
                assert self.reference_ is not None  # _use_neighbors checks it
                nb = neighbor_counts(rec, np.asarray(self.databases_[self.reference_].data))
            assert self.prior_ is not None  # fit calibrates it for this prior
            if self._counts_in_prior():
                # the prior is calibrated on (q, counts): it is the posterior (SIMULATED_COUNT_FEATURES)
                mu, a = self.prior_.parameters(self._features(q, nb, Nn, counts), Nn)
                cpost = count_posterior(mu, a, Nn, T=thresholds, keep_pmf=keep_pmf)
            else:
                mu, a = self.prior_.parameters(self._features(q, nb, Nn), Nn)
                if self.counts == "channel":
                    kappa, phi = self._channel(rec)
                else:
                    kappa, phi = None, None
                cpost = count_posterior(mu, a, Nn, self.rates_, counts, kappa, phi, T=thresholds,
                                        keep_pmf=keep_pmf, false_dispersion=self.false_dispersion)
            pg = cpost.p_greater
            base = self.base_rates(thresholds, Nn) if self.rule == "balanced" else None
            greater = decide(self.rule, pg, cpost.expected, thresholds, base)
            expected, variance, p_unique = cpost.expected, cpost.variance, cpost.p_unique
            post = cpost
        for arr in (q, counts, greater):
            arr.flags.writeable = False
        return UniquenessScores(self.preset, self.settings(), self.rule, Nn, q, counts, expected,
                                variance, p_unique, thresholds, pg, greater, base, post)


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
def _fit_latent(dbs: Sequence[Database], schema: Schema, n_classes, gen,
                category_prior: float | None = None) -> LatentClassModel:
    """The latent class world fitted on every database pooled: raw records as they are, reports
    through their channels (``reidrisk.latent``); ``category_prior`` None keeps the model's own
    default, so that q follows ``LatentClassModel``'s default prior."""
    data = [d.data if d.randomized else np.asarray(d.data) for d in dbs]
    model = (LatentClassModel(n_classes, rng=gen) if category_prior is None
             else LatentClassModel(n_classes, category_prior=category_prior, rng=gen))
    return model.fit(data, schema)


def _check_N(N) -> int:
    return check_population_size(N, UniquenessError)


def _rectangles(copula: GaussianCopula, rec: np.ndarray, points: int) -> np.ndarray:
    """Copula probability of each record's cell; MISSING leaves the attribute unconstrained.

    2 scrambled Sobol' replicates of points / 2 each (``rectangle_probability``); below 3
    constrained attributes the probability is exact.
    """
    g = rec.shape[1]
    lo = np.empty(rec.shape)
    up = np.empty(rec.shape)
    missing = rec == MISSING
    safe = np.where(missing, 0, rec)
    for j in range(g):
        t = copula.thresholds_[j]
        lo[:, j] = np.where(missing[:, j], -np.inf, t[safe[:, j]])
        up[:, j] = np.where(missing[:, j], np.inf, t[safe[:, j] + 1])
    out = np.empty(rec.shape[0])
    for cols, rows in _patterns(rec):
        if cols.size == 0:
            out[rows] = 1.0
        elif cols.size == 1:
            out[rows] = copula.marginals_[cols[0]][rec[rows, cols[0]]]
        else:
            res = rectangle_probability(lo[np.ix_(rows, cols)], up[np.ix_(rows, cols)],
                                        copula.correlation_[np.ix_(cols, cols)], rtol=0.0, atol=0.0,
                                        max_points=points, n_replicates=2, rng=0)
            out[rows] = res.prob
    return out


def _paper_loglik(lam: np.ndarray, other: np.ndarray, thin: float) -> float:
    """sum_r log P(other_r) with X ~ Poisson(lam_r) truncated at 1 and other ~ Binomial(X - 1, thin).

    Summed over x on a shared grid 1..x_max (x_max covers the Poisson and the observed counts)."""
    from scipy.special import gammaln

    x_max = int(np.ceil(max(other.max() + 2, lam.max() + 12 * np.sqrt(lam.max()) + 30)))
    x = np.arange(1, x_max + 1, dtype=np.float64)[None, :]
    lam = lam[:, None]
    k = other[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        lp = x * np.log(lam) - lam - gammaln(x + 1.0) - np.log(-np.expm1(-lam))
        y = x - 1.0
        lb = (gammaln(y + 1.0) - gammaln(k + 1.0) - gammaln(y - k + 1.0)
              + np.where(k > 0, k * np.log(thin), 0.0)
              + np.where(y - k > 0, (y - k) * np.log1p(-thin) if thin < 1 else -np.inf, 0.0))
    lb = np.where(k <= y, lb, -np.inf)
    tot = lp + lb
    mx = tot.max(axis=1, keepdims=True)
    return float(np.sum(mx[:, 0] + np.log(np.exp(tot - mx).sum(axis=1))))


__all__ = [
    "Database", "METHODS", "PRESETS", "PopulationEstimate", "UniquenessError", "UniquenessModel",
    "UniquenessScores", "count_matches", "estimate_population", "neighbor_counts",
]
