"""Single-attribute frequency estimation from LDP reports (paper 004 Section 4.2.1, eq. 4-11).

Every mechanism in ``reidrisk.mechanisms`` is a pure frequency oracle: the support counts ``w``
(column sums of ``Mechanism.support``) of ``n`` present reports have expectation ``M z`` with
``M = support_matrix()`` (``p`` on the diagonal, ``q`` elsewhere) and ``z`` the true count vector
(``sum z = n``). On that channel this module offers

* ``invert``     -- the unbiased closed-form inversion ``z = (w - q n) / (p - q)`` (eq. 6);
* ``norm_sub``   -- Euclidean projection of an estimate onto ``{z >= 0, sum z = total}``;
* ``em_counts``  -- the count-based EM of eq. 8-11, corrected
  (docs/design/core.md#count-em-correction);
* ``em_reports`` -- the exact report-level maximum-likelihood EM (uses each report's whole set);
* ``estimate_marginal`` / ``estimate_marginals`` -- the above applied to one / every attribute,
  shrunk toward uniform by default;
* ``variance``   -- the exact per-cell variance of the inversion estimate (paper 002 eq. 22,
  docs/design/core.md#inversion-variance);
* ``default_shrink``, ``shrink_weights``, ``inversion_noise``, ``null_departure``,
  ``james_stein_noise``, ``shrink_toward_uniform`` -- that shrinkage.

Every EM runs on the package's one engine, ``reidrisk.estimation.em``. The default
``stop="noise"`` starts from uniform and stops when the deviance still to be gained is
statistically invisible, i.e. at the maximum-likelihood estimate to within a small fraction of a
standard error (docs/design/core.md#em-engine). ``stop=("noise", threshold)`` uses another
threshold than ``NOISE_TOL``; ``stop=<float>`` stops when no probability moves by more than that
in one plain EM step; ``stop=None`` runs exactly ``max_iter`` plain steps.

Shrinkage toward uniform (``shrink=True``, default of the front ends) keeps a share ``lam`` of the
estimate's departure from uniform, ``p <- u + lam (p - u)``: the weight minimising Stein's
unbiased risk estimate with the noise of the simplex face the estimate lands on; James and
Stein's weight on the inversion where that weight's 95% interval is wider than [0, 1]
(``SURE_SE_MAX``); and at least the share beyond the null departure (``null_departure``). Nothing
is shrunk for ``k <= 3``; the raw ``"inversion"`` is never shrunk; ``FrequencyEstimate.shrink``
records ``lam``. The rule, the rules it replaced and those tried and not adopted:
docs/design/core.md#shrinkage-toward-uniform and docs/design/core.md#shrinkage-rules-not-adopted.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from reidrisk._compat import renamed_attribute, renamed_keywords
from reidrisk.estimation import em as engine
from reidrisk.estimation.em import (
    DEFAULT_MAX_ITER,
    NOISE_TOL,
    EMResult,
    EstimationError,
    PoissonCounts,
    ReportMixture,
    _frozen,
    check_max_iter,
    parse_stop,
    positive_start,
)
from reidrisk.mechanisms.base import Mechanism
from reidrisk.mechanisms.record import RecordReports

METHODS = ("em", "inversion", "norm_sub", "exact_em")

__all__ = [
    "DEFAULT_MAX_ITER", "EMResult", "EstimationError", "FrequencyEstimate", "METHODS", "NOISE_TOL",
    "default_shrink", "em_counts", "em_reports", "estimate_marginal", "estimate_marginals",
    "inversion_noise", "invert", "james_stein_noise", "marginals_from_counts", "norm_sub",
    "null_departure", "null_departures", "shrink_shares", "shrink_toward_uniform", "shrink_weight",
    "shrink_weights", "variance",
]


# ---------------------------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FrequencyEstimate:
    """Estimated distribution of one attribute.

    Parameters
    ----------
    probs : numpy.ndarray (k,)
        Estimated probabilities (sum 1; for ``"inversion"`` the raw unbiased estimate, which may
        hold negative entries).
    counts : numpy.ndarray (k,)
        The same on the scale of the present reports (``probs * n_present``).
    n_present : int
        Number of reports that have the attribute.
    estimator : str
        The estimator used (formerly ``method``).
    iterations : int
        EM steps (0 for closed forms).
    converged : bool
        EM met its stopping rule (``True`` for closed forms).
    name : str, optional
        Attribute name, when known.
    shrink : float
        The share of the estimate's departure from uniform kept by the shrinkage toward uniform
        (``shrink_toward_uniform``; 1 = not shrunk).
    """

    probs: np.ndarray
    counts: np.ndarray
    n_present: int
    estimator: str
    iterations: int = 0
    converged: bool = True
    name: str | None = None
    shrink: float = 1.0

    method = renamed_attribute("estimator", "method")

    def __post_init__(self) -> None:
        object.__setattr__(self, "probs", _frozen(self.probs))
        object.__setattr__(self, "counts", _frozen(self.counts))

# ---------------------------------------------------------------------------------------------
# closed forms
# ---------------------------------------------------------------------------------------------
def _check_pq(p, q) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    if np.any(~np.isfinite(p)) or np.any(~np.isfinite(q)) or np.any(p <= q) or np.any(q < 0) \
            or np.any(p > 1):
        raise EstimationError(
            f"channel probabilities must satisfy 0 <= q < p <= 1, got p={p!r}, q={q!r}; pass the "
            "mechanism's p_support and q_support"
        )
    return p, q


def invert(w, n, p, q) -> np.ndarray:
    """Unbiased inversion of support counts: ``z = (w - q n) / (p - q)``.

    Paper 004 eq. 6 in closed form (docs/design/core.md#frequency-estimation): for
    ``M = (p - q) I + q 1 1^T`` and ``sum z = n`` (known), ``M z = (p - q) z + q n 1``.
    ``E[z] = z_true`` exactly; variance per cell: ``n**2 * variance(z/n, n, p, q)``.

    Parameters
    ----------
    w : array_like (..., k)
        Support counts.
    n : float or array_like
        Number of present reports (scalar or broadcastable to ``w[..., 0]``).
    p : float or array_like
        The channel's probability of supporting the true value (``Mechanism.p_support``;
        an array broadcasts against ``w[..., 0]``).
    q : float or array_like
        Its probability of supporting any other value (``Mechanism.q_support``), with
        ``0 <= q < p <= 1``.

    Returns
    -------
    numpy.ndarray (..., k)
        Counts, float64; entries may be negative.

    Raises
    ------
    EstimationError
        ``p`` and ``q`` violate ``0 <= q < p <= 1``.
    """
    p, q = _check_pq(p, q)
    w = np.asarray(w, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)[..., None]
    return (w - q[..., None] * n) / (p - q)[..., None]


def norm_sub(z, total) -> np.ndarray:
    """Euclidean projection of ``z`` onto ``{x >= 0, sum x = total}`` along the last axis.

    Norm-sub of Wang et al. (NDSS 2020) zeroes the negative entries and shifts the rest by a common
    amount, repeating until nothing is negative; its result has the form ``max(z - tau, 0)``, which
    is exactly the Euclidean projection whenever the positive part of ``z`` sums to at least
    ``total`` (always the case for an inversion of GRR/subset counts, which sums to ``n`` exactly).
    This function computes the projection itself, exactly and without iterating, by the
    sorted-threshold rule: sort descending ``u``,
    ``rho = max{j : u_j > (sum_{i<=j} u_i - total)/j}``,
    ``tau = (sum_{i<=rho} u_i - total) / rho``. (When the positive part sums to less than
    ``total`` the iterative variant only lifts the positive entries, while the projection may also
    lift zeroed ones; the projection is the closer point.)

    Parameters
    ----------
    z : array_like (..., k)
        The points to project, along the last axis.
    total : float or array_like (...,)
        The sum each projection must have (>= 0).

    Returns
    -------
    numpy.ndarray
        float64 (..., k).
    """
    z = np.asarray(z, dtype=np.float64)
    if z.ndim == 0 or z.shape[-1] == 0:
        raise EstimationError(f"norm_sub needs a non-empty vector, got shape {z.shape}")
    if not np.all(np.isfinite(z)):
        raise EstimationError("norm_sub got non-finite entries; check the estimate it projects")
    total = np.asarray(total, dtype=np.float64)
    if np.any(total < 0) or not np.all(np.isfinite(total)):
        raise EstimationError(f"norm_sub total must be finite and >= 0, got {total!r}")
    total = np.broadcast_to(total, z.shape[:-1])[..., None]
    u = -np.sort(-z, axis=-1)
    css = np.cumsum(u, axis=-1) - total
    j = np.arange(1, z.shape[-1] + 1, dtype=np.float64)
    cond = u - css / j > 0
    # the condition holds for a prefix of j; rho = its length (at least 1)
    rho = np.maximum(cond.sum(axis=-1, keepdims=True), 1)
    tau = np.take_along_axis(css, rho - 1, axis=-1) / rho
    return np.maximum(z - tau, 0.0)


def variance(theta, n, p, q) -> np.ndarray:
    """Exact variance of the inversion estimate of a probability, per cell.

    ``Var(theta_hat_x) = [theta_x p (1 - p) + (1 - theta_x) q (1 - q)] / (n (p - q)^2)``
    (paper 002 eq. 22, general form; docs/design/core.md#inversion-variance): the support indicator
    of value x is Bernoulli(p) for the ``n theta_x`` reports whose true value is x and Bernoulli(q)
    for the others, independently across reports. Exact for every pure oracle with those marginal
    indicator probabilities (GRR, subset, OUE, RAPPOR; OLH up to the uniformity of its hash).
    Multiply by ``n**2`` for the variance of the counts.

    Parameters
    ----------
    theta : array_like (..., k)
        True probabilities.
    n : float or array_like
        Number of reports (> 0; an array broadcasts against ``theta``).
    p : float
        The oracle's probability of supporting the true value (``Mechanism.p_support``).
    q : float
        Its probability of supporting any other value (``Mechanism.q_support``), with
        ``0 <= q < p <= 1``.

    Returns
    -------
    numpy.ndarray
        float64, ``theta``'s shape (broadcast with ``n``): the variance of each cell's estimated
        probability.

    Raises
    ------
    EstimationError
        ``p`` and ``q`` violate ``0 <= q < p <= 1``, or ``n <= 0``.
    """
    p, q = _check_pq(p, q)
    theta = np.asarray(theta, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    if np.any(n <= 0):
        raise EstimationError(f"variance needs n > 0 reports, got {n!r}")
    return (theta * p * (1 - p) + (1 - theta) * q * (1 - q)) / (n * (p - q) ** 2)


# ---------------------------------------------------------------------------------------------
# shrinkage toward uniform
# ---------------------------------------------------------------------------------------------
def shrink_toward_uniform(probs, departure, noise, target=None) -> tuple[np.ndarray, float]:
    """Positive-part James-Stein shrinkage of a distribution toward the uniform one.

    The weight is ``lam = max(0, 1 - noise / ||d||^2)`` (James and Stein 1961, positive part), and
    ``probs`` keeps that share of its departure: ``u + lam (probs - u)``. Convex in ``probs`` and
    ``u``, so the result stays a distribution.

    Parameters
    ----------
    probs : array_like
        A table of probabilities summing to 1, any shape (all its cells form the distribution).
    departure : array_like
        An unbiased estimate's departure from uniform in the sum-zero directions (any shape; only
        ``||departure||^2`` is read).
    noise : float
        The expected ``||departure||^2`` that is noise, i.e. the trace of its covariance in those
        directions (``E||d||^2 = ||signal||^2 + noise``), or ``james_stein_noise``.
    target : array_like, optional
        Another distribution to shrink toward (like ``probs``; then ``departure`` and ``noise``
        are those of the departure from it). ``None``: uniform.

    Returns
    -------
    tuple of (numpy.ndarray, float)
        ``(shrunk probs, lam)``.
    """
    probs = np.asarray(probs, dtype=np.float64)
    lam = shrink_weight(departure, noise)
    u = 1.0 / probs.size if target is None else np.asarray(target, dtype=np.float64)
    return u + lam * (probs - u), lam


def shrink_weight(departure, noise) -> float:
    """The positive-part James-Stein weight of ``shrink_toward_uniform``.

    ``max(0, 1 - noise / ||departure||^2)``, and 0 for a zero departure.

    Parameters
    ----------
    departure : array_like
        The departure from the shrinkage target, any shape (only ``||departure||^2`` is read).
    noise : float
        The expected ``||departure||^2`` that is noise (finite, >= 0), as in
        ``shrink_toward_uniform``.

    Returns
    -------
    float
        The share ``lam`` in [0, 1] of the departure to keep (1 when ``noise`` is 0).

    Raises
    ------
    EstimationError
        ``noise`` is not a finite number >= 0.
    """
    noise = float(noise)
    if not (np.isfinite(noise) and noise >= 0):
        raise EstimationError(f"noise must be a finite number >= 0, got {noise!r}")
    d = np.asarray(departure, dtype=np.float64)
    return float(shrink_shares(np.square(d).reshape(1, -1).sum(axis=1), np.array([noise]))[0])


def shrink_shares(dd, noise) -> np.ndarray:
    """``shrink_weight`` of B departures at once, from their squared norms.

    Parameters
    ----------
    dd : numpy.ndarray (B,)
        Each departure's ``||departure||^2``.
    noise : numpy.ndarray (B,)
        Each departure's noise (finite, >= 0; the caller checks it).

    Returns
    -------
    numpy.ndarray (B,)
        ``max(0, 1 - noise / dd)``, and 0 where ``dd`` is 0.
    """
    dd = np.asarray(dd, dtype=np.float64)
    safe = np.where(dd > 0, dd, 1.0)
    return np.where(dd > 0, np.maximum(0.0, 1.0 - np.asarray(noise, dtype=np.float64) / safe), 0.0)


NULL_SAMPLES = 20
"""Samples of the null bootstrap of ``null_departure``."""
NULL_LEVEL = 0.95
"""Quantile of the null departures that ``null_departure`` returns."""
_NULL_SEED = 20261123


def null_departure(a1: float, q1: float, a2: float, q2: float, f1: int, f2: int, n: float,
                   estimator: str = "em") -> float:
    """How far from uniform an estimator lands on noise alone (its null departure).

    The ``NULL_LEVEL`` quantile of ``||estimate - u||^2`` when the truth IS uniform, for the
    estimator ``"em"`` or ``"norm_sub"``. For an (f1, f2) table (a marginal: ``f2 = 1``,
    ``a2 = 1``, ``q2 = 0``) through the structured channels ``M_i = a_i I + q_i 1 1^T`` from
    ``n`` reports: ``NULL_SAMPLES`` support-count tables are drawn from the normal approximation
    of their law under the uniform truth ``Z = n / (f1 f2)`` (mean ``M_1 Z M_2^T``; each cell a
    sum of independent indicators, variance ``mean - (M_1 o M_1) Z (M_2 o M_2)^T`` with ``o``
    the entrywise square, again a structured channel) and estimated. A parametric bootstrap with
    a fixed seed, so the estimators stay deterministic; cached per channel and n.
    ``default_shrink`` keeps at least the share of a departure beyond it (module doc, "Shrinkage
    toward uniform", weight 3).

    Parameters
    ----------
    a1 : float
        The first attribute's channel ``M_1 = a1 I + q1 1 1^T``: ``a1 = p - q`` of its
        mechanism (> 0).
    q1 : float
        Its ``q``, the probability of supporting a value other than the true one.
    a2 : float
        The second attribute's ``a`` (a marginal: 1).
    q2 : float
        The second attribute's ``q`` (a marginal: 0).
    f1 : int
        The first attribute's domain size, the table's rows.
    f2 : int
        The second attribute's domain size, the table's columns (a marginal: 1).
    n : float
        Number of reports.
    estimator : {"em", "norm_sub"}
        The estimator whose null departure is measured (any other value: ``"em"``).

    Returns
    -------
    float
        The ``NULL_LEVEL`` quantile of the ``NULL_SAMPLES`` departures, in probability units
        squared.
    """
    return float(null_departures(a1, q1, a2, q2, f1, f2, n, estimator)[0])


NULL_CACHE_SIZE = 1 << 16
"""Null departures kept by ``null_departures`` (and ``null_departure``), per channel, shape, n and
estimator, so that fitting the same counts again does not repeat the bootstrap (a few MiB)."""
_NULL_CACHE: dict[tuple, float] = {}
_NULL_LOCK = threading.Lock()

NULL_CELLS = 1 << 20
"""Cells of bootstrap tables that ``null_departures`` estimates in one stack (a few float64
arrays of 8 MiB each in the EM), so a stack of thousands of large tables is done in chunks."""


def null_departures(a1, q1, a2, q2, f1: int, f2: int, n, estimator: str = "em") -> np.ndarray:
    """``null_departure`` of P tables of one shape at once (the front ends: the marginals of one
    domain size).

    Tables with equal channel and ``n`` are bootstrapped once, and not again while their value is
    kept (the last ``NULL_CACHE_SIZE``); the others' ``NULL_SAMPLES`` bootstrap tables are
    estimated as one stack (at most ``NULL_CELLS`` cells at a time). Every
    table of the stack stops on its own rule and the bootstrap draws are the same fixed-seed
    draws for every table, so each value equals ``null_departure`` of that table alone, bit for
    bit.

    Parameters
    ----------
    a1 : float or array_like (P,)
        The first attributes' channel parameters ``a = p - q`` (> 0).
    q1 : float or array_like (P,)
        Their ``q``.
    a2 : float or array_like (P,)
        The second attributes' ``a`` (a marginal: 1).
    q2 : float or array_like (P,)
        Their ``q`` (a marginal: 0).
    f1 : int
        The tables' rows.
    f2 : int
        The tables' columns (a marginal: 1).
    n : float or array_like (P,)
        Each table's number of reports.
    estimator : {"em", "norm_sub"}
        As in ``null_departure``.

    Returns
    -------
    numpy.ndarray (P,)
        Each table's null departure, in probability units squared.
    """
    f1, f2 = int(f1), int(f2)
    estimator = "norm_sub" if estimator == "norm_sub" else "em"
    cols = np.broadcast_arrays(*(np.atleast_1d(np.asarray(x, dtype=np.float64))
                                 for x in (a1, q1, a2, q2, n)))
    keys, where = np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)
    tags = [(*map(float, k), f1, f2, estimator) for k in keys]
    out = np.array([_NULL_CACHE.get(t, np.nan) for t in tags])
    todo = np.flatnonzero(np.isnan(out))
    step = max(1, NULL_CELLS // (NULL_SAMPLES * f1 * f2))
    for s in range(0, len(todo), step):
        chunk = todo[s:s + step]
        k = keys[chunk]
        dep = _null_departures(k[:, 0], k[:, 1], k[:, 2], k[:, 3], f1, f2, k[:, 4], estimator,
                               NULL_SAMPLES)
        out[chunk] = np.quantile(dep, NULL_LEVEL, axis=1)
    with _NULL_LOCK:  # estimates may run in several threads of one worker
        for i in todo.tolist():
            if len(_NULL_CACHE) >= NULL_CACHE_SIZE:
                del _NULL_CACHE[next(iter(_NULL_CACHE))]  # the oldest entry
            _NULL_CACHE[tags[i]] = float(out[i])
    return out[where.reshape(-1)]


def _null_departures(a1, q1, a2, q2, f1, f2, n, estimator, samples: int) -> np.ndarray:
    """The ``samples`` bootstrap departures ``||estimate - u||^2`` of ``null_departure`` for C
    channels at once (parameters and ``n`` as (C,) arrays or scalars for C = 1; fixed seed, the
    same draws for every channel): a (C, samples) array."""
    B = int(samples)
    n = np.atleast_1d(np.asarray(n, dtype=np.float64))
    C = n.size
    Z = np.broadcast_to((n / (f1 * f2))[:, None, None], (C, f1, f2))
    W, ch = _bootstrap_counts(a1, q1, a2, q2, Z, B, _NULL_SEED)
    n = np.repeat(n, B)
    if estimator == "norm_sub":
        est = norm_sub(ch.inverse(W).reshape(C * B, -1), n).reshape(W.shape)
    else:
        est = _em_tables(W, n, ch).estimate
    P = est / est.sum(axis=(1, 2), keepdims=True)
    return np.sum((P - 1.0 / (f1 * f2)) ** 2, axis=(1, 2)).reshape(C, B)


def _bootstrap_counts(a1, q1, a2, q2, Z, samples: int, seed) -> tuple[np.ndarray, _Channels]:
    """``samples`` support-count tables of each of C (f1, f2) tables of true counts ``Z`` (C, f1,
    f2) through the structured channels ``M_i = a_i I + q_i 1 1^T`` (parameters (C,) arrays or
    scalars, the same for every table), drawn from the normal approximation of their law (mean ``M_1 Z M_2^T``,
    each cell a sum of independent indicators with variance ``mean - (M_1 o M_1) Z (M_2 o M_2)^T``,
    ``o`` the entrywise square) with the Generator seeded by ``seed``, the same standard normal
    draws for every table: ``(W, ch)``, the (C * samples, f1, f2) counts (table c's draws at
    ``c * samples ...``) and their stacked channels. The parametric bootstrap of
    ``null_departure`` (``Z`` uniform)."""
    B = int(samples)
    C, f1, f2 = np.shape(Z)
    a1, q1, a2, q2 = (np.repeat(np.broadcast_to(np.asarray(x, dtype=np.float64), (C,)), B)
                      for x in (a1, q1, a2, q2))
    ch = _Channels.structured(a1, q1, a2, q2, f1, f2, C * B)
    p1, p2 = a1 + q1, a2 + q2
    sq = _Channels.structured(p1 * p1 - q1 * q1, q1 * q1, p2 * p2 - q2 * q2, q2 * q2, f1, f2,
                              C * B)
    Zb = np.repeat(np.asarray(Z, dtype=np.float64), B, axis=0)
    mu = ch.forward(Zb)
    sd = np.sqrt(np.maximum(mu - sq.forward(Zb), 0.0))
    draws = np.random.default_rng(seed).standard_normal((B, f1, f2))
    return np.maximum(mu + sd * np.tile(draws, (C, 1, 1)), 0.0), ch


FACE_TOL = 0.02
"""A cell of the EM's (or norm-sub's) estimate counts as on the boundary of the simplex (at zero)
when it is below this many standard errors of one cell (``default_shrink``): the noise rule stops
within about 0.02 standard errors of the maximum-likelihood estimate per direction
(``reidrisk.estimation.em``), so a smaller value cannot be told from zero."""

SURE_SE_MAX = 1.0 / (2.0 * 1.959963984540054)
"""``shrink_weights`` uses the weight of Stein's unbiased risk estimate where its standard error is
at most this, i.e. where its two-sided 95% confidence interval (+-1.96 standard errors) is
narrower than the whole range [0, 1] of weights, so that the data say something about the weight;
elsewhere James and Stein's weight on the inversion. A looser gate keeps more of the skewed truths
at small epsilon but leaves the demo's smallest budget at about the uniform guess's error
(docs/results/em_stop.md, column ``SURE gate 1/2``)."""


def default_shrink(probs, inversion, trace, null=None) -> tuple[np.ndarray, float]:
    """The front ends' shrinkage toward uniform (module doc, "Shrinkage toward uniform").

    ``probs`` keeps the share ``lam`` of its departure from uniform given by ``shrink_weights``
    (one table).

    Parameters
    ----------
    probs : array_like
        The constrained estimate (EM, norm-sub), a table of probabilities (any shape).
    inversion : array_like
        The unbiased inversion of the same counts, a table of the same size.
    trace : float
        The trace of the inversion's covariance in its sum-zero directions
        (``inversion_noise``).
    null : float, optional
        The estimate's null departure (``null_departure``), as in ``shrink_weights``.

    Returns
    -------
    tuple of (numpy.ndarray, float)
        ``(shrunk probs, lam)``.
    """
    probs = np.asarray(probs, dtype=np.float64)
    lam = float(shrink_weights(probs.reshape(1, -1), np.reshape(inversion, (1, -1)),
                               np.array([trace], dtype=np.float64),
                               None if null is None else np.array([null], dtype=np.float64))[0])
    u = 1.0 / probs.size
    return u + lam * (probs - u), lam


def shrink_weights(probs, inversion, trace, null=None) -> np.ndarray:
    """The default shrinkage weights of B tables at once (module doc, "Shrinkage toward uniform").

    With ``F`` cells, ``d = F - 1`` free directions, ``s2 = trace / d`` the inversion's noise per
    direction (near-isotropic at the budgets where shrinkage matters; ``james_stein_noise``),
    ``e = probs - u`` the estimate's departure from uniform and ``y`` the inversion's departure
    (centred), the weight that minimises Stein's unbiased risk estimate (SURE) of ``u + lam e``
    is ``lam = (e . y - s2 (df - 2)) / ||e||^2``, with ``df + 1`` the cells of ``probs`` off the
    boundary of the simplex (above ``FACE_TOL`` standard errors of a cell). ``df`` is the divergence
    of the estimate as a function of the counts: the constrained estimate moves with the noise only
    on the face of the simplex it lands on (for a projection onto a polyhedron, Meyer and Woodroofe
    2000), so its noise is ``s2 df``, not the inversion's ``s2 d``; ``- 2`` accounts for the
    weight's own dependence on the data, as in James and Stein's constant, to which the rule
    reduces when no cell is at zero (then ``e = y``). Where the truth is skewed the face is small
    and the EM far more accurate than the inversion, and this weight keeps it (the inversion's
    James-Stein weight over-shrinks such estimates: docs/results/em_stop.md).

    The weight's standard error is about ``sqrt(s2 ||e||^2 + 2 s2^2 df) / ||e||^2``
    (``Var(e . y)``: the noise along ``e``, plus that of ``e`` itself, which follows the noise on
    its face). Where it exceeds ``SURE_SE_MAX`` the data do not determine the weight (its 95%
    interval is wider than [0, 1]), the face may be chosen by noise rather than by the truth, and
    the weight is James and Stein's on the inversion, ``max(0, 1 - (d - 2) s2 / ||y||^2)``,
    which does not depend on the face (the previous default's first weight). Clipped to [0, 1];
    1 (no shrinkage) for ``d <= 2``, where no shrinkage estimator dominates.

    Parameters
    ----------
    probs : array_like (B, F)
        The constrained estimates (each row sums to 1).
    inversion : array_like (B, F)
        The unbiased inversions of the same counts (probabilities).
    trace : array_like (B,)
        Each inversion's noise trace in its sum-zero directions (``inversion_noise``).
    null : array_like (B,), optional
        Each estimate's null departure (``null_departure``); when given, the weight is at least
        ``1 - null / ||e||^2``.

    Returns
    -------
    numpy.ndarray (B,)
        The weights ``lam``.
    """
    P, Y, trace = _weight_inputs("shrink_weights", probs, inversion, trace, 2,
                                 "(B, F) estimates and inversions and (B,) traces", "trace")
    F = P.shape[1]
    d = F - 1
    if d <= 2:
        return np.ones(P.shape[0])
    s2 = trace / d
    e = P - 1.0 / F
    y = Y - Y.mean(axis=1, keepdims=True)
    ee = np.sum(e * e, axis=1)
    yy = np.sum(y * y, axis=1)
    free = np.sum(P > FACE_TOL * np.sqrt(s2)[:, None], axis=1)
    safe_ee = np.where(ee > 0, ee, 1.0)
    sure = (np.sum(e * y, axis=1) - s2 * np.maximum(free - 3, 0)) / safe_ee
    # Var(e . y) ~ s2 ||e||^2 (the noise along e) + 2 s2^2 df (e follows the noise on its face)
    se = np.sqrt(s2 * ee + 2.0 * s2 * s2 * np.maximum(free - 1, 0)) / safe_ee
    js = 1.0 - (d - 2) * s2 / np.where(yy > 0, yy, 1.0)
    js = np.where(yy > 0, js, 0.0)
    lam = np.where(se <= SURE_SE_MAX, sure, js)
    if null is not None:
        lam = np.maximum(lam, 1.0 - np.asarray(null, dtype=np.float64) / safe_ee)
    return np.where(ee > 0, np.clip(lam, 0.0, 1.0), 0.0)


def _weight_inputs(name: str, estimates, inversions, noise, ndim: int, layout: str,
                   noise_name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The inputs of a batch of shrinkage weights (``shrink_weights``,
    ``reidrisk.estimation.pairs.interaction_weights``) as float64 arrays: ``estimates`` with
    ``ndim`` axes, ``inversions`` of the same shape and one ``noise`` per estimate, finite and
    >= 0; otherwise ``EstimationError`` naming the function ``name`` and the expected ``layout``,
    or ``noise_name`` and its value."""
    E = np.asarray(estimates, dtype=np.float64)
    Y = np.asarray(inversions, dtype=np.float64)
    v = np.asarray(noise, dtype=np.float64)
    if E.ndim != ndim or Y.shape != E.shape or v.shape != E.shape[:1]:
        raise EstimationError(f"{name} needs {layout}, got {E.shape}, {Y.shape} and {v.shape}")
    if not (np.all(np.isfinite(v)) and np.all(v >= 0)):
        raise EstimationError(f"{noise_name} must be finite and >= 0, got {v!r}")
    return E, Y, v


def james_stein_noise(trace, dims: int) -> float:
    """James and Stein's constant ``(dims - 2) sigma^2``: the ``noise`` of their estimator.

    For a departure with ``dims`` free directions and covariance trace ``trace`` (isotropic
    approximation ``sigma^2 = trace / dims``), the ``noise`` with which ``shrink_toward_uniform``
    is the positive-part James-Stein estimator, whose risk is below the unbiased estimate's for
    every signal when ``dims >= 3`` (for Gaussian noise; James and Stein 1961, Baranchik 1964).
    ``dims <= 2``: 0 (no shrinkage; none dominates there). The pure oracles' covariance in the
    sum-zero directions is close to isotropic where shrinkage matters (small budgets: every
    cell's variance is dominated by ``q (1 - q)``).

    Parameters
    ----------
    trace : float
        Trace of the departure's covariance (e.g. ``inversion_noise``).
    dims : int
        Number of free directions of the departure (cells - 1 for a distribution).

    Returns
    -------
    float
        ``trace (dims - 2) / dims``, or 0 for ``dims <= 2``.
    """
    dims = int(dims)
    return float(trace) * (dims - 2) / dims if dims > 2 else 0.0


def _per_report_noise(mech, total_known: bool = True) -> tuple[float, float]:
    """``(t, v)``: ``t = sum_x Var(b_x | true value)`` and ``v = Var(sum_x b_x | true value)`` of
    one report's inversion vector ``b`` through a pure oracle's channel ``M = a I + q 1 1^T``
    (``a = p - q``, support indicators ``B``, support size ``|S| = sum B``).

    Every oracle supports the true value with probability p and each other value with probability
    q, whatever the true value is, so ``E|S| = mu = p + (k - 1) q`` and, where the values are
    supported independently (unary encodings; local hashing, whose other values' memberships are
    pairwise independent given the true one), ``Var|S| = s2 = p (1 - p) + (k - 1) q (1 - q)``;
    where every report supports the same number of values (GRR, subset) ``s2 = 0``. (Another
    oracle is treated as fixed-size: that overstates ``t`` and so shrinks more, never less.)

    * ``total_known`` (``invert``, eq. 6, which uses the number of reports): ``b = (B - q) / a``,
      ``t = s2_0 / a^2`` with ``s2_0 = p (1 - p) + (k - 1) q (1 - q)`` (the sum of ``variance``'s
      cells times n), ``v = s2 / a^2``;
    * otherwise (``M^{-1} B``, the pair tables' inversion): ``b = (B - c |S| 1) / a`` with
      ``c = q / mu``; ``a^2 ||b||^2 = |S| - (2 c - k c^2) |S|^2`` gives
      ``t = (mu - (2 c - k c^2)(s2 + mu^2)) / a^2 - 1`` and ``sum b = |S| / mu``, ``v = s2 / mu^2``
      (equal to the first form for fixed-size oracles).
    """

    p_arr, q_arr = _check_pq(mech.p_support, mech.q_support)
    p, q, k = float(p_arr), float(q_arr), mech.k
    a = p - q
    s2_0 = p * (1 - p) + (k - 1) * q * (1 - q)
    s2 = s2_0 if mech.independent_support else 0.0
    if total_known:
        return s2_0 / a ** 2, s2 / a ** 2
    mu = p + (k - 1) * q
    c = q / mu
    return (mu - (2 * c - k * c * c) * (s2 + mu * mu)) / a ** 2 - 1.0, s2 / mu ** 2


def inversion_noise(n, mech, mech2=None) -> float:
    """Trace of the inversion estimate's covariance in its sum-zero directions.

    The covariance given the true values of the ``n`` reports; the trace is the ``noise`` of
    ``shrink_toward_uniform``. One attribute (``mech``; the inversion
    ``theta = (w / n - q) / (p - q)`` of eq. 6): ``(t - v / k) / n`` with ``(t, v)`` from
    ``_per_report_noise``: ``tr Cov = t / n`` less the part along the constant vector,
    ``Var(sum theta) / k = v / (k n)``. A pair (``mech``, ``mech2``; the table
    ``M_1^{-1} W M_2^{-T} / n`` of eq. 12-13): the report's vector is ``b_1 (x) b_2`` with
    ``b_1``, ``b_2`` independent given the true values, ``E b_i`` the true value's indicator and
    ``E||b_i||^2 = 1 + t_i``, ``E (sum b_i)^2 = 1 + v_i``, so the trace is
    ``((1 + t_1)(1 + t_2) - 1) / n`` less ``((1 + v_1)(1 + v_2) - 1) / (f_1 f_2 n)``. Exact for the
    fixed database the reports came from (the estimand of the frequency estimators); the sampling
    noise of the database itself is not counted.

    Parameters
    ----------
    n : float
        Number of reports (> 0).
    mech : Mechanism
        The attribute's mechanism.
    mech2 : Mechanism, optional
        The second attribute's mechanism, for a pair table; ``None``: one attribute.

    Returns
    -------
    float
        The trace, on the scale of probabilities (of the table's cells for a pair).

    Raises
    ------
    EstimationError
        ``n <= 0``, or a mechanism's support probabilities violate ``0 <= q < p <= 1``.
    """
    n = float(n)
    if not n > 0:
        raise EstimationError(f"inversion_noise needs n > 0 reports, got {n}")
    if mech2 is None:
        t1, v1 = _per_report_noise(mech)
        return (t1 - v1 / mech.k) / n
    t1, v1 = _per_report_noise(mech, total_known=False)
    t2, v2 = _per_report_noise(mech2, total_known=False)
    return _pair_noise(t1, v1, t2, v2, mech.k * mech2.k, n)


def _pair_noise(t1, v1, t2, v2, cells, n):
    """The pair trace of ``inversion_noise`` from the two attributes' ``_per_report_noise(...,
    total_known=False)`` terms ``(t_1, v_1)``, ``(t_2, v_2)`` (floats or arrays). The pair
    shrinkage charges only the part of it in the interaction directions
    (``reidrisk.estimation.pairs.interaction_noise``)."""
    return (((1 + t1) * (1 + t2) - 1) - ((1 + v1) * (1 + v2) - 1) / cells) / n


# ---------------------------------------------------------------------------------------------
# count-based EM
# ---------------------------------------------------------------------------------------------
def em_counts(w, n, M, stop="noise", max_iter: int = DEFAULT_MAX_ITER, init=None) -> EMResult:
    """Count-based EM of paper 004 eq. 8-11, corrected.

    The correction: docs/design/core.md#count-em-correction. Multiplicative maximum-likelihood EM
    for Poisson counts ``w ~ Poisson(M z)`` (Shepp-Vardi / Richardson-Lucy)::

        D = w / (M z)                         (eq. 10, with the expected count M z)
        z <- z * (M^T D) / colsum(M)          (eq. 8)

    For the subset channel (``M`` = p on the diagonal, q elsewhere, every column sums to h) this is
    ``z_k <- z_k (p D_k + q (E - D_k)) / h`` with ``D_k = w_k / (p z_k + q (n - z_k))`` and
    ``E = sum D`` (eq. 11). Relation to the printed paper: eq. 10 prints the denominator as
    ``p z_k + q (h n - z_k)`` and eq. 8 omits the ``1/h``. Started from counts that sum to ``h n``,
    the printed iteration produces exactly ``h`` times the iterates above (the denominators agree
    because ``sum z = h n``, and the missing ``1/h`` keeps the sum at ``h n``), so after normalising
    both have the same iterates and fixed point (docs/design/core.md#count-em-correction).

    Each step keeps ``sum(M z) = sum(w)``: for a channel whose columns all sum to ``c`` the total is
    ``sum z = sum(w) / c`` after the first step, which is exactly ``n`` for GRR/subset (every report
    supports h values) and ``n`` in expectation for OUE/RAPPOR/OLH. The shape ``z / sum z`` is what
    estimates the distribution. An interior fixed point solves ``M z = w``, i.e. it equals the
    inversion; EM differs where the inversion leaves the simplex.

    Parameters
    ----------
    w : array_like (k,)
        Support counts.
    n : float
        Number of present reports (scale of the default uniform start and of ``init``).
    M : array_like (k, k)
        The channel, ``M[v, x] = P(v supported | x)``.
    stop : str, tuple, float or None
        The stopping rule of the one engine (``reidrisk.estimation.em.parse_stop``): ``"noise"``
        (default, SQUAREM-accelerated to the noise rule), ``("noise", threshold)``,
        ``"discrepancy"``, a float tolerance on the probabilities (plain steps) or ``None``
        (exactly ``max_iter`` plain steps).
    max_iter : int
        The largest number of EM steps (>= 1).
    init : array_like (k,), optional
        Positive start, any scale (rescaled to sum n); zeros stay zero under multiplicative
        updates, so they are lifted to 1e-12 of the mean.

    Returns
    -------
    EMResult
        ``estimate`` = z (k,), ``iterations``, ``converged``. Float64 throughout.

    Raises
    ------
    EstimationError
        Counts or channel of the wrong shape, negative or not finite; ``n <= 0``; a channel
        column summing to 0; a bad ``stop``, ``max_iter`` or ``init``.
    """
    w = np.asarray(w, dtype=np.float64)
    M = np.asarray(M, dtype=np.float64)
    if w.ndim != 1 or M.shape != (w.size, w.size):
        raise EstimationError(
            f"em_counts needs counts w of shape (k,) and a (k, k) channel, got {w.shape} and "
            f"{M.shape}"
        )
    if np.any(w < 0) or not np.all(np.isfinite(w)):
        raise EstimationError("support counts w must be finite and >= 0")
    if np.any(M < 0) or not np.all(np.isfinite(M)):
        raise EstimationError("channel M must be finite and >= 0")
    n = float(n)
    if not n > 0:
        raise EstimationError(f"em_counts needs n > 0 present reports, got {n}")
    if np.any(M.sum(axis=0) <= 0):
        raise EstimationError("every column of the channel M must have a positive sum")
    k = w.size
    init1 = None if init is None else np.asarray(init, dtype=np.float64).reshape(1, -1, 1) \
        if np.size(init) == k else init
    fit = _em_tables(w[None, :, None], n, _Channels.dense(M[None], np.ones((1, 1, 1))),
                     stop=stop, max_iter=max_iter, init=init1)
    return EMResult(fit.estimate[0, :, 0], int(np.asarray(fit.iterations)[0]),
                    bool(np.asarray(fit.converged)[0]))


# ---------------------------------------------------------------------------------------------
# report-level EM
# ---------------------------------------------------------------------------------------------
def em_reports(log_prob, stop="noise", max_iter: int = DEFAULT_MAX_ITER, init=None) -> EMResult:
    """Exact maximum-likelihood EM over whole reports (docs/design/core.md#exact-em).

    ``log_prob`` (n, k): ``log P(y_i | X = x)`` for each report i (``Mechanism.log_prob``). The
    likelihood is ``prod_i sum_x theta_x P(y_i | x)``; EM iterates
    ``theta <- mean_i posterior_i`` with ``posterior_i(x) ∝ theta_x P(y_i | x)``
    (``reidrisk.estimation.em.ReportMixture``).

    Reports with identical rows (GRR: at most k distinct rows; subset: at most C(k, h)) are grouped
    once with ``np.unique`` and weighted by their multiplicity, so a step costs O(U k) for U
    distinct rows (<= n). Rows that are constant across x (missing or uninformative reports) do
    not change the maximiser and are dropped. Each row is shifted by its maximum before
    exponentiation (the posterior is invariant to a per-row factor). For GRR the step is identical
    to ``em_counts`` on the GRR channel.

    Parameters
    ----------
    log_prob : array_like (n, k)
        ``log P(y_i | X = x)`` for each report i (``Mechanism.log_prob``).
    stop : str, tuple, float or None
        The stopping rule, as in ``em_counts`` (but not ``"discrepancy"``, which needs support
        counts).
    max_iter : int
        The largest number of EM steps (>= 1).
    init : array_like (k,), optional
        Start probabilities, as in ``em_counts`` (rescaled to sum 1; default uniform).

    Returns
    -------
    EMResult
        ``estimate`` = theta (k,), ``iterations``, ``converged``.

    Raises
    ------
    EstimationError
        ``log_prob`` is not (n, k), holds NaN or +inf, or has a report impossible under every
        value; a bad ``stop``, ``max_iter`` or ``init``.
    """
    lp = np.asarray(log_prob, dtype=np.float64)
    if lp.ndim != 2 or lp.shape[1] < 1:
        raise EstimationError(f"log_prob must be an (n, k) array, got shape {lp.shape}")
    if np.any(np.isnan(lp)) or np.any(lp == np.inf):
        raise EstimationError("log_prob must not contain NaN or +inf")
    parse_stop(stop)
    check_max_iter(max_iter)
    k = lp.shape[1]
    theta = positive_start(init, 1.0, (1, k))
    rowmax = lp.max(axis=1, keepdims=True)
    if np.any(~np.isfinite(rowmax)):
        raise EstimationError("a report has probability 0 under every input value; check reports")
    informative = np.ptp(lp, axis=1) > 0
    lp = lp[informative] - rowmax[informative]
    if lp.shape[0] == 0:
        return EMResult(theta[0], 0, True)
    uniq, counts = np.unique(lp, axis=0, return_counts=True)
    L = np.exp(uniq)  # (U, k), max entry of each row = 1
    problem = ReportMixture(lambda t: L @ t, lambda r: L.T @ r, counts, max(k - 1, 1))
    return engine.run(problem, theta, stop=stop, max_iter=max_iter)[0]


# ---------------------------------------------------------------------------------------------
# stacks of two-sided channels Z -> M_1 Z M_2^T (pair tables; marginals with M_2 = [1])
# ---------------------------------------------------------------------------------------------
def _col(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64).reshape(-1, 1, 1)


@dataclass(frozen=True)
class _MechChannel:
    """A mechanism's support channel: ``M`` (k, k); ``structured`` when M = a I + q 1 1^T."""

    structured: bool
    a: float
    q: float
    M: np.ndarray


def _mech_channel(mech) -> _MechChannel:
    p, q = float(mech.p_support), float(mech.q_support)
    M = np.asarray(mech.support_matrix(), dtype=np.float64)
    k = mech.k
    if M.shape != (k, k) or np.any(M < 0) or not np.all(np.isfinite(M)) or np.any(M.sum(0) <= 0):
        raise EstimationError(
            f"mechanism {mech!r}: support_matrix() must be a finite non-negative ({k}, {k}) matrix "
            "with positive column sums"
        )
    # M == p I + q (1 1^T - I) entrywise to np.allclose(rtol=1e-12, atol=1e-15), checked without
    # allclose's k x k temporaries (they dominate the inversion's cost at k ~ 1000)
    structured = bool(0 <= q < p <= 1)
    if structured:
        off = M - q
        np.fill_diagonal(off, 0.0)
        structured = bool(np.abs(off).max() <= 1e-15 + 1e-12 * abs(q)
                          and np.abs(np.diagonal(M) - p).max() <= 1e-15 + 1e-12 * abs(p))
    return _MechChannel(structured, p - q, q, M)


class _Channels:
    """P two-sided channels ``Z -> M_1 Z M_2^T`` stacked on a leading axis.

    Structured (``M_i = a_i I + q_i 1 1^T``, every pure oracle here): parameters as (P, 1, 1)
    columns and O(f1 f2) products. Dense (any channel): matrices (P, f1, f1), (P, f2, f2) and
    batched matrix products. ``colsum``: product of the column sums, broadcastable to (P, f1, f2)
    (the channel protocol of ``reidrisk.estimation.em.PoissonCounts``).
    """

    def __init__(self, *, params=None, mats=None):
        self.params, self.mats = params, mats
        if params is not None:
            a1, q1, a2, q2, f1, f2 = params
            self.colsum = (a1 + f1 * q1) * (a2 + f2 * q2)
            self._coef = (a1 * a2, q1 * a2, a1 * q2, q1 * q2)
        else:
            M1, M2 = mats
            self.colsum = M1.sum(axis=1)[:, :, None] * M2.sum(axis=1)[:, None, :]

    @classmethod
    def structured(cls, a1, q1, a2, q2, f1: int, f2: int, P: int) -> _Channels:
        cols = [_col(np.broadcast_to(np.asarray(x, dtype=np.float64), (P,)))
                for x in (a1, q1, a2, q2)]
        return cls(params=(*cols, f1, f2))

    @classmethod
    def dense(cls, M1, M2) -> _Channels:
        return cls(mats=(np.asarray(M1, dtype=np.float64), np.asarray(M2, dtype=np.float64)))

    @classmethod
    def of_pairs(cls, first: Sequence[_MechChannel], second: Sequence[_MechChannel], f1: int,
                 f2: int, structured: bool) -> _Channels:
        """The stacked channels of P pairs of one shape from their attributes' channels
        (``_mech_channel``): the closed form when every channel is ``a I + q 1 1^T``
        (``structured``), the matrices otherwise."""
        if structured:
            return cls.structured([c.a for c in first], [c.q for c in first],
                                  [c.a for c in second], [c.q for c in second], f1, f2,
                                  len(first))
        return cls.dense(np.stack([c.M for c in first]), np.stack([c.M for c in second]))

    def _structured(self, Z):
        """M_1 Z M_2^T for structured M_i = a_i I + q_i 1 1^T, in O(f1 f2) per table (the M_i
        are symmetric, so this is also M_1^T Z M_2): ``a1 a2 Z + q1 a2 colsums + a1 q2 rowsums
        + q1 q2 total``, with the coefficient products computed once."""
        c0, c1, c2, c3 = self._coef
        cs = Z.sum(axis=1, keepdims=True)
        out = c0 * Z
        out += c1 * cs
        out += c2 * Z.sum(axis=2, keepdims=True)
        out += c3 * cs.sum(axis=2, keepdims=True)
        return out

    def forward(self, Z):
        if self.params is not None:
            return self._structured(Z)
        M1, M2 = self.mats
        return M1 @ Z @ np.swapaxes(M2, 1, 2)

    def adjoint(self, D):
        if self.params is not None:
            return self._structured(D)
        M1, M2 = self.mats
        return np.swapaxes(M1, 1, 2) @ D @ M2

    def inverse(self, W):
        """M_1^{-1} W M_2^{-T}; structured: M^{-1} X = (X - q/(a + f q) 1 1^T X) / a."""
        if self.params is not None:
            a1, q1, a2, q2, f1, f2 = self.params
            Y = (W - (q1 / (a1 + f1 * q1)) * W.sum(axis=1, keepdims=True)) / a1
            return (Y - (q2 / (a2 + f2 * q2)) * Y.sum(axis=2, keepdims=True)) / a2
        M1, M2 = self.mats
        Y = np.linalg.solve(M1, W)
        return np.swapaxes(np.linalg.solve(M2, np.swapaxes(Y, 1, 2)), 1, 2)

    def take(self, keep) -> _Channels:
        if self.params is not None:
            a1, q1, a2, q2, f1, f2 = self.params
            return _Channels(params=(a1[keep], q1[keep], a2[keep], q2[keep], f1, f2))
        M1, M2 = self.mats
        return _Channels(mats=(M1[keep], M2[keep]))

def _em_tables(W3, n, ch: _Channels, stop="noise", max_iter: int = DEFAULT_MAX_ITER,
               init=None) -> EMResult:
    """Count EM (``em_counts``) on P tables at once through the channels ``ch``, by the one
    engine (``reidrisk.estimation.em.run`` on ``PoissonCounts``).

    ``W3`` (P, f1, f2) counts, ``n`` (P,) scales of the start, ``init`` (P, f1, f2) or None
    (uniform). Each table stops on its own rule (``f1 f2 - 1`` free parameters) and then leaves
    the batch. Returns a batch ``EMResult`` (estimate (P, f1, f2), iterations and converged (P,)).
    """
    W3 = np.asarray(W3, dtype=np.float64)
    if W3.ndim != 3 or np.any(W3 < 0) or not np.all(np.isfinite(W3)):
        raise EstimationError("counts W must be a finite non-negative (P, f1, f2) array")
    P, f1, f2 = W3.shape
    n = np.broadcast_to(np.asarray(n, dtype=np.float64), (P,)).copy()
    if np.any(n <= 0) or not np.all(np.isfinite(n)):
        raise EstimationError("every table needs n > 0 reports")
    Z = positive_start(init, n, W3.shape)
    problem = PoissonCounts(W3, ch, max(f1 * f2 - 1, 1))
    return engine.run(problem, Z, stop=stop, max_iter=max_iter, n_reports=n)


# ---------------------------------------------------------------------------------------------
# per-attribute front ends
# ---------------------------------------------------------------------------------------------
@renamed_keywords(method="estimator")
def marginals_from_counts(mechs: Sequence[Mechanism], ws, ns, estimator: str = "em", *,
                          names: Sequence[str | None] | None = None, stop="noise",
                          max_iter: int = DEFAULT_MAX_ITER, inits=None, shrink: bool = True
                          ) -> list[FrequencyEstimate]:
    """Several attributes' estimates from their support counts.

    ``estimate_marginals`` without the counting. EM attributes with equal domain size are
    iterated as one batch.

    Parameters
    ----------
    mechs : sequence of Mechanism
        One mechanism per attribute.
    ws : sequence of array_like
        ``ws[j]``: attribute j's support counts (k_j,).
    ns : sequence of int
        ``ns[j]``: attribute j's number of present reports.
    estimator : {"em", "inversion", "norm_sub"}
        As in ``estimate_marginal`` (``"exact_em"`` needs the reports, not counts; formerly
        ``method``).
    names : sequence of str or None, optional
        The attributes' names, used in error messages.
    stop : str, tuple, float or None
        The EM's stopping rule, as in ``em_counts``.
    max_iter : int
        The largest number of EM steps (>= 1).
    inits : sequence of array_like or None, optional
        ``inits[j]``: attribute j's EM start ((k_j,) finite, non-negative, a positive sum, any
        scale; None: uniform).
    shrink : bool
        Shrink each estimate toward uniform, as in ``estimate_marginal``.

    Returns
    -------
    list of FrequencyEstimate
        One estimate per attribute, in the order of ``mechs``.

    Raises
    ------
    EstimationError
        An unknown ``estimator``, an attribute without present reports (named), or a bad start.
    """
    method = _check_method(estimator, METHODS[:3])
    names = [None] * len(mechs) if names is None else list(names)
    return _marginals_from_counts([np.asarray(w, dtype=np.float64).ravel() for w in ws],
                                  [int(n) for n in ns], list(mechs), names, method, stop=stop,
                                  max_iter=max_iter, inits=inits, shrink=shrink)


def _from_counts(w, n_present, mech, method, name=None, *, stop="noise",
                 max_iter=DEFAULT_MAX_ITER, init=None, shrink: bool = True) -> FrequencyEstimate:
    """One attribute's estimate from its support counts ``w`` (k,) and ``n_present`` reports."""
    if method in ("inversion", "norm_sub"):
        ch = _mech_channel(mech)
        if ch.structured:
            z = invert(w, n_present, mech.p_support, mech.q_support)
        else:  # a channel not of the p/q form: E[w] = M z, so M^{-1} w is unbiased
            z = np.linalg.solve(ch.M, np.asarray(w, dtype=np.float64))
        if method == "norm_sub":
            z = norm_sub(z, n_present)
        est = FrequencyEstimate(z / n_present, z, n_present, method, name=name)
        return _shrunk(est, w, mech, ch) if shrink else est
    if method == "em":
        return _marginals_from_counts([w], [n_present], [mech], [name], method, stop=stop,
                                      max_iter=max_iter, inits=[init], shrink=shrink)[0]
    raise EstimationError(f"unknown method {method!r}; choose one of {list(METHODS)}")


def _check_method(method: str, allowed: Sequence[str] = METHODS) -> str:
    if method not in allowed:
        raise EstimationError(f"unknown method {method!r}; choose one of {list(allowed)}")
    return method


def _no_reports(name) -> EstimationError:
    what = f"attribute {name!r}" if name is not None else "this attribute"
    return EstimationError(
        f"{what} has no present reports, so its distribution cannot be estimated; drop the "
        "attribute from the schema or collect reports that include it"
    )


@renamed_keywords(method="estimator")
def estimate_marginal(mech: Mechanism, reports, estimator: str = "em", *,
                      name: str | None = None,
                      stop="noise", max_iter: int = DEFAULT_MAX_ITER, init=None,
                      shrink: bool = True) -> FrequencyEstimate:
    """Estimate one attribute's distribution from its reports (paper 004 Section 4.2.1).

    Design: docs/design/core.md#frequency-estimation. An attribute without present reports raises
    ``EstimationError`` naming it rather than returning an arbitrary distribution.

    Parameters
    ----------
    mech : Mechanism
        The attribute's mechanism.
    reports : array_like
        Its report array; missing rows are allowed, only the ``n_present`` present reports are used.
    estimator : {"em", "inversion", "norm_sub", "exact_em"}
        (formerly ``method``)

        * ``"em"`` (default): ``em_counts`` on the support counts (eq. 8-11, corrected);
        * ``"inversion"``: the raw unbiased ``invert`` (may be negative; ``probs`` sums to 1
          exactly for GRR/subset, in expectation otherwise);
        * ``"norm_sub"``: the inversion projected onto the simplex (``norm_sub``);
        * ``"exact_em"``: ``em_reports`` on the exact report likelihood (O(n k) per step).
    name : str, optional
        The attribute's name, used in error messages.
    stop : str, tuple, float or None
        The EMs' stopping rule (``"em"``: as in ``em_counts``; ``"exact_em"``: as in
        ``em_reports``); unused by the closed forms.
    max_iter : int
        The largest number of EM steps (>= 1); unused by the closed forms.
    init : array_like (k,), optional
        The EM's start (finite, non-negative, a positive sum, any scale; default uniform);
        unused by the closed forms.
    shrink : bool
        ``True`` (default; module doc, "Shrinkage toward uniform"): the estimate of every method
        but ``"inversion"`` keeps only a share of its departure from uniform (``default_shrink``:
        Stein's unbiased risk estimate's weight with the estimate's own noise, or James and
        Stein's weight on the inversion where that is too uncertain); the share is
        ``FrequencyEstimate.shrink``. ``False``: the estimator as it is (for ``"em"`` the
        maximum-likelihood estimate).

    Returns
    -------
    FrequencyEstimate
        The estimated distribution, its counts on the scale of the present reports, the EM's
        steps and convergence, and the share kept by the shrinkage.

    Raises
    ------
    EstimationError
        An unknown ``estimator``, no present reports (naming the attribute), or a bad ``stop``,
        ``max_iter`` or ``init``.
    """
    method = _check_method(estimator)
    missing = np.asarray(mech.is_missing(reports), dtype=bool)
    n_present = int((~missing).sum())
    if n_present == 0:
        raise _no_reports(name)
    if method == "exact_em":
        rep = np.asarray(reports)[~missing]
        fit = em_reports(mech.log_prob(rep), stop=stop, max_iter=max_iter, init=init)
        est = FrequencyEstimate(fit.estimate, fit.estimate * n_present, n_present, method,
                                int(fit.iterations), bool(fit.converged), name)
        if not shrink:
            return est
        w = np.asarray(mech.support_counts(reports)[0], dtype=np.float64).ravel()
        return _shrunk(est, w, mech)
    w = np.asarray(mech.support_counts(reports)[0], dtype=np.float64).ravel()
    return _from_counts(w, n_present, mech, method, name, stop=stop, max_iter=max_iter, init=init,
                        shrink=shrink)


def _marginals_from_counts(ws, ns, mechs, names, method, *, stop="noise",
                           max_iter: int = DEFAULT_MAX_ITER, channels=None, inits=None,
                           shrink: bool = True) -> list[FrequencyEstimate]:
    """Estimates of several attributes from their support counts ``ws[j]`` and ``ns[j]`` present
    reports. For ``"em"`` attributes with equal domain size are iterated together as one batch
    (``_em_tables`` with ``M_2 = [1]``: the same EM as ``em_counts``, one attribute per table),
    each from ``inits[j]`` (None: ``_default_start``); ``shrink``: ``_shrunk`` on each result."""
    for j, nj in enumerate(ns):
        if nj == 0:
            raise _no_reports(names[j])
    if method != "em":
        return [_from_counts(np.asarray(w, dtype=np.float64), int(nj), m, method, nm,
                             shrink=shrink)
                for w, nj, m, nm in zip(ws, ns, mechs, names)]
    chans = channels if channels is not None else [_mech_channel(m) for m in mechs]
    inits = [None] * len(mechs) if inits is None else list(inits)
    out: list = [None] * len(mechs)
    groups: dict[tuple[int, bool], list[int]] = {}
    for j, (m, c) in enumerate(zip(mechs, chans)):
        groups.setdefault((m.k, c.structured), []).append(j)
    for (f, structured), J in groups.items():
        W = np.stack([np.asarray(ws[j], dtype=np.float64) for j in J])[:, :, None]
        nJ = np.array([ns[j] for j in J], dtype=np.float64)
        if structured:
            ch = _Channels.structured([chans[j].a for j in J], [chans[j].q for j in J], 1.0, 0.0,
                                      f, 1, len(J))
        else:
            ch = _Channels.dense(np.stack([chans[j].M for j in J]), np.ones((len(J), 1, 1)))
        start = np.stack([_start_of(inits[j], ws[j], ns[j], mechs[j], chans[j]) for j in J])
        fit = _em_tables(W, nJ, ch, stop=stop, max_iter=max_iter, init=start[:, :, None])
        # the null departures of the group's attributes in one stack (as null_departure of each)
        nulls = null_departures([chans[j].a for j in J], [chans[j].q for j in J], 1.0, 0.0, f, 1,
                                [float(int(ns[j])) for j in J]) if shrink and structured else None
        for i, j in enumerate(J):
            z = fit.estimate[i, :, 0]
            probs = z / z.sum()
            out[j] = FrequencyEstimate(probs, probs * ns[j], int(ns[j]), "em",
                                       int(np.asarray(fit.iterations)[i]),
                                       bool(np.asarray(fit.converged)[i]), names[j])
            if shrink:
                out[j] = _shrunk(out[j], ws[j], mechs[j], chans[j],
                                 None if nulls is None else float(nulls[i]))
    return out


def _shrunk(est: FrequencyEstimate, w, mech, chan: _MechChannel | None = None,
            null: float | None = None) -> FrequencyEstimate:
    """``est`` shrunk toward uniform by ``default_shrink``, with the inversion of its support counts
    ``w``, that inversion's exact noise trace (``inversion_noise``) and the estimate's
    ``null_departure`` (``null``: computed here when not given). The raw
    inversion (whose contract is unbiasedness) and channels not of the p/q form (whose inversion
    noise is not the oracles' closed form) are returned as they are."""
    chan = _mech_channel(mech) if chan is None else chan
    if est.estimator == "inversion" or not chan.structured:
        return est
    n = est.n_present
    theta = invert(w, n, mech.p_support, mech.q_support) / n
    if null is None:
        null = null_departure(chan.a, chan.q, 1.0, 0.0, mech.k, 1, float(n),
                              "norm_sub" if est.estimator == "norm_sub" else "em")
    probs, lam = default_shrink(est.probs, theta, inversion_noise(n, mech), null)
    return replace(est, probs=probs, counts=probs * n, shrink=lam)


def _start_of(init, w, n, mech, chan) -> np.ndarray:
    """The EM start of one attribute: ``init`` when given (checked), else ``_default_start``."""
    k = mech.k
    if init is None:
        return _default_start(np.asarray(w, dtype=np.float64), float(n), mech, chan)
    z = np.array(init, dtype=np.float64)
    if z.shape != (k,) or np.any(z < 0) or not np.all(np.isfinite(z)) or z.sum() <= 0:
        raise EstimationError(
            f"init must be {(k,)} finite non-negative numbers with a positive sum, got {init!r}"
        )
    return z


def _default_start(w, n, mech, chan) -> np.ndarray:
    """Default EM start: uniform."""
    return np.full(mech.k, 1.0 / mech.k)


@renamed_keywords(method="estimator")
def estimate_marginals(record_reports: RecordReports, estimator: str = "em", *, stop="noise",
                       max_iter: int = DEFAULT_MAX_ITER, shrink: bool = True
                       ) -> list[FrequencyEstimate]:
    """Estimate every attribute's distribution from a ``RecordReports``, in schema order.

    For ``"em"`` the attributes with equal domain size are iterated together in one batch (each
    stops on its own rule), which gives the same estimates as ``estimate_marginal`` up to rounding.

    Parameters
    ----------
    record_reports : RecordReports
        The reports of every attribute, with their mechanisms.
    estimator : {"em", "inversion", "norm_sub", "exact_em"}
        The estimator of every attribute, as in ``estimate_marginal`` (formerly ``method``).
    stop : str, tuple, float or None
        The EMs' stopping rule, as in ``estimate_marginal``.
    max_iter : int
        The largest number of EM steps (>= 1).
    shrink : bool
        Shrink each estimate toward uniform, as in ``estimate_marginal``.

    Returns
    -------
    list of FrequencyEstimate
        One estimate per attribute of ``record_reports.schema``, in schema order, each named.

    Raises
    ------
    EstimationError
        An unknown ``estimator``, or an attribute without present reports (naming it).
    """
    method = _check_method(estimator)
    names = [a.name for a in record_reports.schema]
    mechs = record_reports.mechanisms
    if method == "exact_em":
        return [estimate_marginal(m, r, method, name=nm, stop=stop, max_iter=max_iter,
                                  shrink=shrink)
                for nm, m, r in zip(names, mechs, record_reports.reports)]
    ws, ns = zip(*(m.support_counts(r) for m, r in zip(mechs, record_reports.reports)))
    return _marginals_from_counts(ws, ns, mechs, names, method, stop=stop, max_iter=max_iter,
                                  shrink=shrink)
