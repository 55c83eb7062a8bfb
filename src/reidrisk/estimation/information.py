"""Entropy, mutual information and divergences of categorical distributions.

Mutual information of a pair table is paper 004 eq. 14 (natural log by default, as inside the
algorithms; pass ``base=2`` for bits). The Jensen-Shannon divergence is the evaluation metric of
paper 004 Section 5 and is reported in base 2, where it lies in [0, 1]
(docs/design/core.md#conventions).

All functions accept non-negative weights of any scale and normalise them first (over the last axis
for vectors, over the last two axes for tables), so a stack of distributions is handled in one call.
Zero cells follow the conventions ``0 log 0 = 0`` and ``0 log(0/q) = 0``.
"""

from __future__ import annotations

import math

import numpy as np

from reidrisk.estimation.frequency import EstimationError


def _log(base) -> float:
    b = float(base)
    if not np.isfinite(b) or b <= 0 or b == 1:
        raise EstimationError(f"log base must be positive, finite and != 1, got {base!r}")
    return float(np.log(b))


def _normalize(p, axes: tuple[int, ...], what: str) -> np.ndarray:
    p = np.asarray(p, dtype=np.float64)
    if p.ndim < len(axes):
        raise EstimationError(
            f"{what} needs at least {len(axes)} dimension(s), got shape {p.shape}"
        )
    if p.size == 0 or any(p.shape[a] == 0 for a in axes):
        raise EstimationError(f"{what} is empty (shape {p.shape})")
    if not np.all(np.isfinite(p)):
        raise EstimationError(f"{what} has non-finite entries")
    if np.any(p < 0):
        raise EstimationError(
            f"{what} has negative entries (min {p.min():.3g}); project the estimate onto the "
            "simplex first (norm_sub) or use an EM estimate"
        )
    s = p.sum(axis=axes, keepdims=True)
    if np.any(s <= 0):
        raise EstimationError(f"{what} has zero total mass; it is not a distribution")
    return p / s


def _xlogy(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x log y with 0 where x == 0."""
    out = np.zeros(np.broadcast_shapes(x.shape, y.shape))
    np.multiply(x, np.log(y, out=np.full_like(out, -np.inf), where=(y > 0) & (x > 0)),
                out=out, where=x > 0)
    return out


def entropy(p, base=math.e) -> np.ndarray | float:
    """Shannon entropy ``-sum p log p`` over the last axis of ``p`` (..., k), in units of ``base``.

    Returns a float for a 1-D input, else an array of shape ``p.shape[:-1]``.

    Parameters
    ----------
    p : array_like, shape (..., k)
        Non-negative finite weights, normalised over the last axis first. For the joint entropy
        of a table, pass ``table.ravel()``.
    base : float
        Logarithm base (positive, != 1); natural log (nats) by default, 2 for bits.

    Returns
    -------
    float or numpy.ndarray
        The entropy, one per leading index (a float for a single distribution).
    """
    p = _normalize(p, (-1,), "p")
    h = -_xlogy(p, p).sum(axis=-1) / _log(base)
    h = np.maximum(h, 0.0)
    return float(h) if h.ndim == 0 else h


def mutual_information(table, base=math.e) -> np.ndarray | float:
    """Mutual information of a joint table (paper 004 eq. 14).

    ``sum_{k,k'} p(k,k') log[p(k,k') / (p(k) p(k'))]``; zero cells contribute 0. Returns a
    float for a 2-D input, else an array of shape ``table.shape[:-2]``. Always >= 0 (rounding
    is clipped).

    Parameters
    ----------
    table : array_like, shape (..., f1, f2)
        Non-negative finite counts or probabilities, normalised over the last two axes first.
    base : float
        Logarithm base (positive, != 1); natural log by default, 2 for bits.

    Returns
    -------
    float or numpy.ndarray
        The mutual information, in units of ``base`` (a float for one table).
    """
    t = _normalize(table, (-2, -1), "table")
    px = t.sum(axis=-1, keepdims=True)
    py = t.sum(axis=-2, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = t / (px * py)
    mi = _xlogy(t, ratio).sum(axis=(-2, -1)) / _log(base)
    mi = np.maximum(mi, 0.0)
    return float(mi) if mi.ndim == 0 else mi


def _pair(p, q, what: str):
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    if p.shape != q.shape:
        raise EstimationError(
            f"{what}: p and q must have the same shape, got {p.shape} and {q.shape}; compare "
            "distributions over the same domain"
        )
    return _normalize(p, (-1,), "p"), _normalize(q, (-1,), "q")


def kl_divergence(p, q, base=math.e) -> np.ndarray | float:
    """Kullback-Leibler divergence ``sum p log(p / q)`` over the last axis (inf where p > 0 = q).

    Parameters
    ----------
    p, q : array_like, shape (..., k)
        Two distributions of the same shape, each normalised over the last axis first. For
        tables, pass ravelled arrays.
    base : float
        Logarithm base (positive, != 1); natural log by default.

    Returns
    -------
    float or numpy.ndarray
        The divergence, in units of ``base`` (a float for one pair of distributions).
    """
    p, q = _pair(p, q, "kl_divergence")
    with np.errstate(divide="ignore"):
        ratio = np.where(p > 0, p, 1.0) / q
    d = _xlogy(p, ratio).sum(axis=-1)
    d = np.where(np.any((p > 0) & (q == 0), axis=-1), np.inf, d) / _log(base)
    d = np.maximum(d, 0.0)
    return float(d) if d.ndim == 0 else d


def js_divergence(p, q, base=2) -> np.ndarray | float:
    """Jensen-Shannon divergence ``(KL(p||m) + KL(q||m)) / 2`` with ``m = (p + q) / 2``.

    Symmetric, finite, and in [0, 1] in base 2 (the default; paper 004 Section 5 metric) or
    [0, log 2] in nats.

    Parameters
    ----------
    p, q : array_like, shape (..., k)
        Two distributions of the same shape, each normalised over the last axis first; for
        contingency tables pass ravelled arrays.
    base : float
        Logarithm base (positive, != 1); 2 by default.

    Returns
    -------
    float or numpy.ndarray
        The divergence, in units of ``base`` (a float for one pair of distributions).
    """
    p, q = _pair(p, q, "js_divergence")
    with np.errstate(divide="ignore", invalid="ignore"):
        # p / m as 2p / (p + q): m = (p + q) / 2 underflows to 0 for a subnormal p facing q = 0
        s = p + q
        d = 0.5 * (_xlogy(p, 2.0 * p / s).sum(axis=-1) + _xlogy(q, 2.0 * q / s).sum(axis=-1))
    lb = _log(base)
    d = np.clip(d, 0.0, np.log(2.0)) / lb
    return float(d) if d.ndim == 0 else d
