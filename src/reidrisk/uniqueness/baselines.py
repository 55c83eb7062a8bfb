"""Baselines of the paper 000 evaluation (Section V) for "how many people share a record's values".

Design: docs/design/uniqueness.md#evaluation.

* ``copula_baseline``: the population model applied directly, ``E = N q`` with X ~ Binomial(N, q):
  no existence floor, no truncation at X >= 1, no database correction.
* ``opt_mean`` / ``opt_mode`` (and ``opt_median``): constant predictors from the population's
  group sizes, where a record's group size is the number of population records equal to it.
  Paper 000 Table 2 ("Number of same records": Mean, Mode) takes these over *records*: the mean
  of the per-record group sizes is ``sum_g size_g^2 / N``, and the mode is the group size most
  records have (Census: 1; Default and Census5: the largest group). The paper's text calls OptMode
  "the median"; its name and Table 2 say mode, which is what ``opt_mode`` returns.
* ``majority_rule``: the constant classifier answering the majority label of "count > T".
* ``indep_q``: the cell probability as the product of marginal probabilities (independence).
* ``idue_q``: IDUE_RAPPOR / IDUE_OUE, a unary-encoding frequency oracle over the *product* domain
  of all attributes (Gu et al., cited as [25] in paper 000): every record is one value of the
  product domain, randomized with OUE ("oue") or symmetric RAPPOR ("rappor") under one budget for
  all inputs (with a single budget input-discriminative unary encoding is the plain unary
  encoding), and q of a record is the unbiased frequency estimate of its cell. The bit vector has
  ``prod_j f_j`` entries; beyond ``max_cells`` the method is refused with
  ``ProductDomainTooLarge`` (paper 000 reports it infeasible on Census: 4.8e22 cells).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import binom

from reidrisk.errors import ReidriskError
from reidrisk.mechanisms import make_mechanism
from reidrisk.mechanisms.base import as_generator
from reidrisk.schema import MISSING
from reidrisk.uniqueness.posterior import check_population_size

DEFAULT_MAX_CELLS: int = 1 << 22
"""Largest product domain ``idue_q`` accepts (4,194,304 cells)."""

UNARY_MECHANISMS: tuple[str, ...] = ("oue", "rappor")


class BaselineError(ReidriskError, ValueError):
    """Bad baseline input. The message names the parameter, its value and the fix."""


class ProductDomainTooLarge(BaselineError):
    """The product domain of the attributes exceeds the cell limit of a product-domain oracle.

    Parameters
    ----------
    cells : int
        Size of the product domain.
    max_cells : int
        The limit it exceeds.
    """

    def __init__(self, cells: int, max_cells: int) -> None:
        self.cells = int(cells)
        self.max_cells = int(max_cells)
        super().__init__(
            f"the product domain has {cells:.3g} cells (> max_cells = {max_cells:,}): a unary "
            "encoding over it needs one bit per cell per person, which is infeasible (paper 000, "
            "Census: 4.8e22 cells). Select fewer attributes, coarsen them, or raise max_cells if "
            "the memory allows"
        )


# ---------------------------------------------------------------------------------------------
# the copula baseline
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CountPrediction:
    """X ~ Binomial(N, q) per record, untruncated (the paper's "Copula" method).

    Parameters
    ----------
    q : numpy.ndarray (r,)
        Cell probability of each record.
    N : int
        Population size.
    expected : numpy.ndarray (r,)
        N q.
    p_unique : numpy.ndarray (r,)
        P(X = 1).
    """

    q: np.ndarray
    N: int
    expected: np.ndarray
    p_unique: np.ndarray

    def prob_greater(self, T: float | np.ndarray) -> np.ndarray:
        """P(X > T) per record under X ~ Binomial(N, q), for one threshold or several.

        Parameters
        ----------
        T : float or numpy.ndarray
            A threshold, or a 1-D array of them (no NaN); a fractional T means P(X > floor T).

        Returns
        -------
        numpy.ndarray
            (r,) for a scalar T; (r, len(T)) for an array of thresholds.

        Raises
        ------
        BaselineError
            When ``T`` has more than one dimension or holds NaN.
        """
        t = np.asarray(T, dtype=np.float64)
        if t.ndim > 1 or np.isnan(t).any():
            raise BaselineError(f"thresholds T must be a number or a 1-D array without NaN, got {T!r}")
        if t.ndim == 0:
            return binom.sf(np.floor(t), self.N, self.q)
        return binom.sf(np.floor(t)[None, :], self.N, self.q[:, None])


def _check_q_N(q, N):
    qa = np.atleast_1d(np.asarray(q, dtype=np.float64))
    bad = ~np.isfinite(qa) | (qa < 0) | (qa > 1)
    if qa.ndim != 1 or bad.any():
        i = int(np.flatnonzero(bad.ravel())[0]) if bad.any() else 0
        raise BaselineError(f"q must be a 1-D array of probabilities in [0, 1]; q[{i}] = {qa.ravel()[i]!r}")
    Nn = check_population_size(N, BaselineError)
    return qa, Nn


def copula_baseline(q: np.ndarray, N: int) -> CountPrediction:
    """Paper 000 Section V "Copula": ``E = N q``, ``P(X = 1) = N q (1 - q)^(N - 1)``.

    Parameters
    ----------
    q : numpy.ndarray (r,)
        Cell probability of each record, straight from the population model (no floor, no
        database correction).
    N : int
        Population size.

    Returns
    -------
    CountPrediction
        ``q`` (as float64), ``N``, the expected count ``N q`` and ``P(X = 1)`` per record, as
        read-only arrays.

    Raises
    ------
    BaselineError
        When ``q`` is not a 1-D array of probabilities in [0, 1], or ``N`` is not a valid
        population size.
    """
    qa, Nn = _check_q_N(q, N)
    expected = Nn * qa
    p_unique = binom.pmf(1, Nn, qa)
    for a in (qa, expected, p_unique):
        a.flags.writeable = False
    return CountPrediction(q=qa, N=Nn, expected=expected, p_unique=p_unique)


# ---------------------------------------------------------------------------------------------
# group sizes and constant predictors
# ---------------------------------------------------------------------------------------------
def group_sizes(codes: np.ndarray) -> np.ndarray:
    """(N,) size of each population record's group (the records equal to it on every attribute).

    Parameters
    ----------
    codes : numpy.ndarray (N, g)
        Non-empty integer code matrix of the population; rows are compared as encoded,
        ``MISSING`` included as a value of its own.

    Returns
    -------
    numpy.ndarray (N,) of int64
        Per record, the number of population records (itself included) equal to it, >= 1.

    Raises
    ------
    BaselineError
        When ``codes`` is not a non-empty 2-D integer array.
    """
    a = np.asarray(codes)
    if a.ndim != 2 or a.shape[0] == 0 or not np.issubdtype(a.dtype, np.integer):
        raise BaselineError(f"codes must be a non-empty (N, g) integer matrix, got {a.dtype} {a.shape}")
    _, inverse, counts = np.unique(a, axis=0, return_inverse=True, return_counts=True)
    return counts[inverse.ravel()].astype(np.int64)


def _check_sizes(sizes) -> np.ndarray:
    s = np.asarray(sizes)
    if s.ndim != 1 or s.size == 0 or not np.issubdtype(s.dtype, np.integer) or (s < 1).any():
        raise BaselineError(
            "population_group_sizes must be a non-empty 1-D int array with one entry >= 1 per "
            "population record (see group_sizes)"
        )
    return s.astype(np.int64)


def opt_mean(population_group_sizes: np.ndarray) -> float:
    """OptMean: the mean over population records of their group size (paper 000 Table 2 "Mean").

    Parameters
    ----------
    population_group_sizes : numpy.ndarray (N,)
        Group size of each population record (``group_sizes``), int >= 1.

    Returns
    -------
    float
        The mean group size, ``sum_g size_g^2 / N`` over the groups g.

    Raises
    ------
    BaselineError
        When the sizes are not a non-empty 1-D integer array of values >= 1.
    """
    return float(np.mean(_check_sizes(population_group_sizes)))


def opt_mode(population_group_sizes: np.ndarray) -> int:
    """OptMode: the group size most population records have (ties: the smallest such size).

    Parameters
    ----------
    population_group_sizes : numpy.ndarray (N,)
        Group size of each population record (``group_sizes``), int >= 1.

    Returns
    -------
    int
        The group size most records have (paper 000 Table 2 "Mode").

    Raises
    ------
    BaselineError
        As ``opt_mean``.
    """
    s = _check_sizes(population_group_sizes)
    vals, cnt = np.unique(s, return_counts=True)
    return int(vals[np.argmax(cnt)])


def opt_median(population_group_sizes: np.ndarray) -> float:
    """The median over population records of their group size (the paper text's OptMode).

    Parameters
    ----------
    population_group_sizes : numpy.ndarray (N,)
        Group size of each population record (``group_sizes``), int >= 1.

    Returns
    -------
    float
        The median group size (the mean of the two middle values when N is even).

    Raises
    ------
    BaselineError
        As ``opt_mean``.
    """
    return float(np.median(_check_sizes(population_group_sizes)))


def classify_greater(estimate: np.ndarray | float, T: float) -> np.ndarray:
    """The "count > T" decision for an estimated count.

    Parameters
    ----------
    estimate : numpy.ndarray or float
        Estimated count per record, or one constant predictor.
    T : float
        The threshold.

    Returns
    -------
    numpy.ndarray of bool
        True where the estimate exceeds ``T``; the shape of ``estimate`` (0-d for a constant).
    """
    return np.asarray(estimate) > T


def majority_rule(population_group_sizes: np.ndarray, T: float) -> bool:
    """The majority label of "count > T" over population records (ties answer False).

    Parameters
    ----------
    population_group_sizes : numpy.ndarray (N,)
        Group size of each population record (``group_sizes``), int >= 1: a record's count.
    T : float
        The threshold.

    Returns
    -------
    bool
        True when more than half of the population records have a group size above ``T``.

    Raises
    ------
    BaselineError
        As ``opt_mean``.
    """
    s = _check_sizes(population_group_sizes)
    return bool(np.count_nonzero(s > T) * 2 > s.size)


def accuracy(predicted: np.ndarray, true_counts: np.ndarray, T: float) -> float:
    """Share of records whose "count > T" decision matches the truth (paper 000 Section V).

    Parameters
    ----------
    predicted : numpy.ndarray or bool
        The decision per record (or one constant decision), broadcast to ``true_counts``.
    true_counts : numpy.ndarray
        The true count per record.
    T : float
        The threshold.

    Returns
    -------
    float
        The share in [0, 1] (nan for no records).
    """
    truth = np.asarray(true_counts) > T
    pred = np.broadcast_to(np.asarray(predicted, dtype=bool), truth.shape)
    return float(np.mean(pred == truth))


# ---------------------------------------------------------------------------------------------
# independence and the product-domain oracle
# ---------------------------------------------------------------------------------------------
def _check_records(records, g: int, sizes: Sequence[int] | None, what: str = "records") -> np.ndarray:
    a = np.asarray(records)
    if a.ndim != 2 or a.shape[1] != g:
        raise BaselineError(f"{what} must be an encoded (n, {g}) code matrix, got shape {a.shape}")
    if a.size and not np.issubdtype(a.dtype, np.integer):
        raise BaselineError(f"{what} must hold integer codes, got dtype {a.dtype}")
    a = a.astype(np.int64, copy=False)
    if sizes is not None and a.size:
        hi = np.asarray(sizes, dtype=np.int64)[None, :]
        bad = (a < MISSING) | (a >= hi)
        if bad.any():
            i, j = map(int, np.argwhere(bad)[0])
            raise BaselineError(
                f"{what}[{i}, {j}] = {a[i, j]} is outside attribute {j}'s domain 0..{int(hi[0, j]) - 1} "
                f"(or {MISSING} for missing)"
            )
    return a


def indep_q(marginals: Sequence[np.ndarray], records: np.ndarray) -> np.ndarray:
    """q of each record as the product of its values' marginal probabilities, shape (r,).

    Parameters
    ----------
    marginals : sequence of numpy.ndarray
        ``marginals[j]`` is attribute j's probability vector (length f_j).
    records : numpy.ndarray (r, g)
        Integer codes; a missing value (``MISSING``) contributes a factor 1 (the attribute is
        marginalized out).

    Returns
    -------
    numpy.ndarray (r,)
        The product of the record's present values' probabilities (1 for a record with every
        value missing).

    Raises
    ------
    BaselineError
        When a marginal is not a non-empty 1-D vector of finite probabilities >= 0, or
        ``records`` is not an (r, g) integer matrix of codes in the attributes' domains.
    """
    margs = [np.asarray(m, dtype=np.float64) for m in marginals]
    for j, m in enumerate(margs):
        if m.ndim != 1 or m.size == 0 or (m < 0).any() or not np.all(np.isfinite(m)):
            raise BaselineError(f"marginals[{j}] must be a 1-D vector of probabilities >= 0")
    rec = _check_records(records, len(margs), [m.size for m in margs])
    q = np.ones(rec.shape[0])
    for j, m in enumerate(margs):  # loop over attributes, vectorized over records
        col = rec[:, j]
        present = col != MISSING
        q[present] *= m[col[present]]
    return q


def product_domain_size(sizes: Sequence[int]) -> int:
    """prod_j f_j as an exact Python integer (never overflows).

    Parameters
    ----------
    sizes : sequence of int
        The domain sizes f_j.

    Returns
    -------
    int
        The product (1 for no sizes).
    """
    return math.prod(int(f) for f in sizes)


def flatten_codes(codes: np.ndarray, sizes: Sequence[int],
                  max_cells: int = DEFAULT_MAX_CELLS) -> np.ndarray:
    """Product-domain code of each row (mixed radix over ``sizes``); -1 where any value is missing.

    Parameters
    ----------
    codes : numpy.ndarray (n, g)
        Integer codes, ``MISSING`` where absent.
    sizes : sequence of int
        The domain sizes f_j of the g columns.
    max_cells : int
        Largest product domain accepted (default 2^22).

    Returns
    -------
    numpy.ndarray (n,) of int64
        Each row's cell index in 0..prod(sizes)-1 (``numpy.ravel_multi_index``, the last
        attribute varying fastest); ``MISSING`` (-1) where any value is missing.

    Raises
    ------
    ProductDomainTooLarge
        When ``prod(sizes) > max_cells``.
    BaselineError
        When ``codes`` is not an (n, g) integer matrix of codes in the domains.
    """
    sizes = [int(f) for f in sizes]
    cells = product_domain_size(sizes)
    if cells > max_cells:
        raise ProductDomainTooLarge(cells, max_cells)
    a = _check_records(codes, len(sizes), sizes, "codes")
    out = np.full(a.shape[0], MISSING, dtype=np.int64)
    ok = (a != MISSING).all(axis=1)
    if ok.any():
        out[ok] = np.ravel_multi_index(tuple(a[ok].T), tuple(sizes))
    return out


@dataclass(frozen=True)
class ProductDomainEstimate:
    """q per query record from a product-domain frequency oracle (IDUE_OUE / IDUE_RAPPOR).

    Parameters
    ----------
    q : numpy.ndarray (r,)
        Estimated cell probability, clipped to [0, 1].
    raw : numpy.ndarray (r,)
        The unbiased (unclipped) estimate.
    mechanism : str
        "oue" or "rappor".
    epsilon : float
        Budget of one person's whole report.
    cells : int
        Size of the product domain.
    n : int
        Reports used (database records without missing values).
    """

    q: np.ndarray
    raw: np.ndarray
    mechanism: str
    epsilon: float
    cells: int
    n: int


def idue_q(
    database: np.ndarray,
    records: np.ndarray,
    sizes: Sequence[int],
    mechanism: str = "oue",
    epsilon: float = 1.0,
    rng: np.random.Generator | int | None = None,
    max_cells: int = DEFAULT_MAX_CELLS,
    simulate: str = "aggregate",
) -> ProductDomainEstimate:
    """IDUE_OUE / IDUE_RAPPOR baseline of paper 000 Section V: q from a product-domain oracle.

    Parameters
    ----------
    database : numpy.ndarray (n, g)
        Integer codes of the people who report; rows with a missing value are dropped (a
        product-domain value needs every attribute).
    records : numpy.ndarray (r, g)
        Integer codes of the query records.
    sizes : sequence of int
        The g domain sizes f_j; the product domain has prod f_j cells.
    mechanism : {"oue", "rappor"}
        The unary encoding (``reidrisk.mechanisms`` registry names; default ``"oue"``).
    epsilon : float
        Budget of one person's whole report (default 1.0; pass g * epsilon_per_attribute to
        compare with per-attribute randomization).
    rng : numpy.random.Generator or int, optional
        Randomness of the simulated reports (a Generator, or a seed).
    max_cells : int
        Largest product domain accepted (default 2^22).
    simulate : {"aggregate", "reports"}
        ``"aggregate"`` (default) draws the support counts of all reports directly: with a unary
        encoding every bit of every report is an independent Bernoulli given the input, so the
        count of reports supporting cell v is Binomial(n_v, p) + Binomial(n - n_v, q) exactly
        (n_v = people in cell v, p/q = ``p_support``/``q_support``). ``"reports"`` randomizes
        each person with ``Mechanism.perturb`` (memory n x cells; small domains only).

    Returns
    -------
    ProductDomainEstimate
        ``q``: the unbiased frequency estimate of each record's cell, ``(w_v / n - q) / (p - q)``,
        clipped to [0, 1] (``raw``: unclipped); a query record with a missing value gets NaN.

    Raises
    ------
    ProductDomainTooLarge
        When ``prod(sizes) > max_cells``.
    BaselineError
        For a mechanism that is not a unary encoding, an unknown ``simulate``, bad codes, or a
        database without a complete record.
    """

    name = str(mechanism).lower()
    if name not in UNARY_MECHANISMS:
        raise BaselineError(f"mechanism {mechanism!r} is not a unary encoding; choose one of {list(UNARY_MECHANISMS)}")
    if simulate not in ("aggregate", "reports"):
        raise BaselineError(f"simulate must be 'aggregate' or 'reports', got {simulate!r}")
    sizes = [int(f) for f in sizes]
    cells = product_domain_size(sizes)
    if cells > max_cells:
        raise ProductDomainTooLarge(cells, max_cells)
    gen = as_generator(rng)
    db = flatten_codes(database, sizes, max_cells)
    db = db[db != MISSING]
    rec = flatten_codes(records, sizes, max_cells)
    n = int(db.size)
    if n == 0:
        raise BaselineError("the database has no record without missing values; nothing to estimate from")
    mech = make_mechanism(name, epsilon, cells)
    p, q = float(mech.p_support), float(mech.q_support)
    if simulate == "aggregate":
        n_v = np.bincount(db, minlength=cells)
        w = gen.binomial(n_v, p) + gen.binomial(n - n_v, q)
    else:
        reports = mech.perturb(db, gen)
        w, _ = mech.support_counts(reports)
    z = (np.asarray(w, dtype=np.float64) / n - q) / (p - q)
    raw = np.full(rec.size, np.nan)
    ok = rec != MISSING
    raw[ok] = z[rec[ok]]
    qhat = np.clip(raw, 0.0, 1.0)
    for a in (qhat, raw):
        a.flags.writeable = False
    return ProductDomainEstimate(q=qhat, raw=raw, mechanism=name, epsilon=float(mech.epsilon),
                                 cells=cells, n=n)
