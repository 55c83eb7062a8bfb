"""Multivariate normal rectangle probabilities, vectorized over many rectangles.

The exact cell probability of the copula (docs/design/core.md#rectangle-probabilities; the paper
estimates it by sampling; docs/design/uniqueness.md#model) is P(a < X < b) for X ~ N(0, R), R a
correlation matrix (c, c):

* c = 1: Phi(b) - Phi(a); c = 2: four corners of the exact bivariate CDF (``bvn_cdf``).
* c >= 3: Genz's separation of variables (A. Genz, "Numerical computation of multivariate normal
  probabilities", J. Comput. Graph. Stat. 1 (1992)): with R = L L^T the probability is the mean
  over w in [0, 1]^(c-1) of prod_i (e_i - d_i), d_i = Phi((a_i - sum_{j<i} L_ij y_j) / L_ii),
  e_i likewise with b_i, y_j = Phi^{-1}(d_j + w_j (e_j - d_j)). The integral is estimated with
  independently scrambled Sobol' point sets (randomized QMC); their spread gives the standard
  error. Variables are reordered per rectangle, narrowest interval first, which shrinks the error.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr, ndtri
from scipy.stats import qmc

from reidrisk.copula.bvn import bvn_cdf
from reidrisk.copula.marginals import CopulaError
from reidrisk.mechanisms.base import as_generator

_CHUNK_ELEMENTS = 2**22


@dataclass(frozen=True)
class RectangleProbability:
    """Probabilities of normal rectangles with their numerical error.

    Parameters
    ----------
    prob : numpy.ndarray (m,)
        The probabilities.
    se : numpy.ndarray (m,)
        Their standard errors (0 where exact).
    n_points : int
        The most QMC points used for any rectangle (0 when every probability is exact).
    """

    prob: np.ndarray
    se: np.ndarray
    n_points: int


def _interval(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Phi(b) - Phi(a), computed in the tail where it keeps its relative precision."""
    upper = a > 0
    return np.where(upper, ndtr(-a) - ndtr(-b), ndtr(b) - ndtr(a))


def rectangle_probability(
    lower,
    upper,
    corr,
    rtol: float = 1e-3,
    atol: float = 1e-13,
    max_points: int = 2**15,
    n_replicates: int = 8,
    rng: np.random.Generator | int | None = 0,
) -> RectangleProbability:
    """P(lower < X < upper) for X ~ N(0, corr), for m rectangles at once.

    For c >= 3 the randomized-QMC estimate (``n_replicates`` independent scrambles) starts at 512
    points per rectangle and is redone with 4 times more points for the rectangles whose standard
    error exceeds max(rtol * prob, atol), up to ``max_points``
    (docs/design/core.md#rectangle-probabilities).

    Parameters
    ----------
    lower, upper : array_like (m, c)
        Bounds of the m rectangles (+-inf allowed).
    corr : array_like (c, c)
        Positive-definite correlation matrix.
    rtol, atol : float
        Target standard error: max(rtol * prob, atol) per rectangle.
    max_points : int
        Most QMC points per rectangle and scramble.
    n_replicates : int
        Independent scrambles; their spread gives the standard error.
    rng : numpy.random.Generator or int, optional
        Seeds the scrambling (fixed by default, so results are reproducible).

    Returns
    -------
    RectangleProbability
        The probabilities (m,), their standard errors and the QMC points used.
    """
    lo = np.atleast_2d(np.asarray(lower, dtype=np.float64))
    up = np.atleast_2d(np.asarray(upper, dtype=np.float64))
    corr = np.asarray(corr, dtype=np.float64)
    if lo.shape != up.shape:
        raise CopulaError(f"lower and upper bounds differ in shape: {lo.shape} vs {up.shape}")
    m, c = lo.shape
    if corr.shape != (c, c):
        raise CopulaError(
            f"correlation must be ({c}, {c}) for {c}-dimensional rectangles, got {corr.shape}"
        )
    if np.any(np.isnan(lo)) or np.any(np.isnan(up)):
        raise CopulaError("rectangle bounds must not be nan")
    empty = np.any(up <= lo, axis=1)
    if c == 1:
        prob = np.maximum(_interval(lo[:, 0], up[:, 0]), 0.0)
        return RectangleProbability(np.where(empty, 0.0, prob), np.zeros(m), 0)
    if c == 2:
        r = corr[0, 1]
        prob = (bvn_cdf(up[:, 0], up[:, 1], r) - bvn_cdf(lo[:, 0], up[:, 1], r)
                - bvn_cdf(up[:, 0], lo[:, 1], r) + bvn_cdf(lo[:, 0], lo[:, 1], r))
        return RectangleProbability(np.where(empty, 0.0, np.maximum(prob, 0.0)), np.zeros(m), 0)
    if n_replicates < 2:
        raise CopulaError(f"n_replicates must be >= 2, got {n_replicates}")
    gen = as_generator(rng)

    # Reorder each rectangle's variables, narrowest marginal interval first.
    order = np.argsort(_interval(lo, up), axis=1, kind="stable")
    rows = np.arange(m)[:, None]
    lo_p, up_p = lo[rows, order], up[rows, order]
    chol = np.linalg.cholesky(corr[order[:, :, None], order[:, None, :]])  # (m, c, c)

    prob = np.zeros(m)
    se = np.zeros(m)
    active = np.flatnonzero(~empty)
    per = 64
    used = 0
    while active.size:
        w = np.concatenate([
            qmc.Sobol(d=c - 1, scramble=True, seed=gen).random(per) for _ in range(n_replicates)
        ])  # (R * per, c - 1)
        chunk = max(1, _CHUNK_ELEMENTS // (w.shape[0] * c))
        for s in range(0, active.size, chunk):
            idx = active[s:s + chunk]
            vals = _sov(lo_p[idx], up_p[idx], chol[idx], w)
            reps = vals.reshape(-1, n_replicates, per).mean(axis=2)
            prob[idx] = reps.mean(axis=1)
            se[idx] = reps.std(axis=1, ddof=1) / np.sqrt(n_replicates)
        used = per * n_replicates
        if 4 * used > max_points:
            break
        active = active[se[active] > np.maximum(rtol * prob[active], atol)]
        per *= 4
    return RectangleProbability(np.clip(prob, 0.0, 1.0), se, used)


def _sov(lo: np.ndarray, up: np.ndarray, chol: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Genz's separation-of-variables integrand at points w (N, c-1) for k rectangles -> (k, N).

    Each interval is handled in the tail nearer to it (s = -1 above 0: Phi(b) - Phi(a) =
    Phi(-a) - Phi(-b) and y = -Phi^{-1}(Phi(-a) - w width)), which keeps small probabilities and
    extreme y accurate.
    """
    k, c = lo.shape
    n = w.shape[0]
    diag = chol[:, np.arange(c), np.arange(c)]  # (k, c)
    ys = np.empty((c - 1, k, n))
    a = np.broadcast_to((lo[:, 0] / diag[:, 0])[:, None], (k, n))
    b = np.broadcast_to((up[:, 0] / diag[:, 0])[:, None], (k, n))
    f = None
    for i in range(c):
        if i > 0:
            shift = np.einsum("kj,jkn->kn", chol[:, i, :i], ys[:i])
            a = (lo[:, i, None] - shift) / diag[:, i, None]
            b = (up[:, i, None] - shift) / diag[:, i, None]
        sgn = np.where(a > 0, -1.0, 1.0)
        base = ndtr(sgn * a)
        width = np.maximum(sgn * (ndtr(sgn * b) - base), 0.0)
        f = width.copy() if f is None else f * width
        if i < c - 1:
            u = np.clip(base + sgn * w[None, :, i] * width, 1e-300, 1.0 - 1e-16)
            ys[i] = sgn * ndtri(u)
    assert f is not None  # c >= 1 factors
    return f
