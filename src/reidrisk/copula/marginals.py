"""Categorical marginals of the Gaussian copula: validation, CDFs and normal-scale thresholds.

Paper 004, Section 4.2.3-4.2.4 (eq. 15-18; docs/design/core.md#marginals): attribute j with
categories 0..f_j-1 in declared order and probabilities p_j has the CDF F_j(a) = p_j[0] + ... +
p_j[a]. A latent standard normal X_j falls in category a exactly when t_j[a] <= X_j < t_j[a+1],
with thresholds t_j[a] = Phi^{-1}(F_j(a-1)), t_j[0] = -inf and t_j[f_j] = +inf.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.special import ndtri

from reidrisk.errors import ReidriskError

SUM_TOLERANCE = 1e-6
"""How far from 1 a probability vector or table may sum before it is rejected."""

TAIL_FLOOR = 1e-300
"""Smallest tail probability made into a threshold: interior thresholds stay finite (|t| <= 37)."""


class CopulaError(ReidriskError, ValueError):
    """Bad input to the copula. The message names the attribute or pair and how to fix it."""


def check_marginal(p, j: int | str = "?") -> np.ndarray:
    """Validate one marginal: 1-D, >= 2 categories, finite, non-negative, sums to 1 (within 1e-6).

    Returns a float64 copy renormalised to sum exactly to 1.

    Parameters
    ----------
    p : array_like (f,)
        The marginal distribution.
    j : int or str
        The attribute, named in the error message.

    Returns
    -------
    numpy.ndarray (f,)
        The checked float64 copy.

    Raises
    ------
    CopulaError
        Naming the attribute and what is wrong.
    """
    arr = np.asarray(p, dtype=np.float64)
    if arr.ndim != 1 or arr.size < 2:
        raise CopulaError(
            f"marginal of attribute {j} must be a 1-D probability vector with >= 2 categories, "
            f"got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)):
        raise CopulaError(f"marginal of attribute {j} has non-finite entries: {arr.tolist()}")
    if np.any(arr < 0):
        raise CopulaError(
            f"marginal of attribute {j} has negative entries (min {arr.min():.3g}); project the "
            "estimate onto the simplex first (e.g. norm-sub)"
        )
    total = arr.sum()
    if abs(total - 1.0) > SUM_TOLERANCE:
        raise CopulaError(
            f"marginal of attribute {j} sums to {total:.8g}, not 1; pass probabilities, not counts "
            "(divide by the total)"
        )
    return arr / total


def check_marginals(marginals: Sequence) -> list[np.ndarray]:
    """Validate a list of g marginals (see ``check_marginal``).

    Parameters
    ----------
    marginals : sequence of array_like, or numpy.ndarray (g, f)
        One distribution per attribute.

    Returns
    -------
    list of numpy.ndarray
        The checked marginals (see ``check_marginal``).
    """
    if isinstance(marginals, np.ndarray) and marginals.ndim == 2:
        marginals = list(marginals)
    margs = [check_marginal(p, j) for j, p in enumerate(marginals)]
    if not margs:
        raise CopulaError("need at least one marginal")
    return margs


def cumulative(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper cumulative probabilities at the f+1 cut points of a marginal.

    ``lower[a] = P(category < a)`` and ``upper[a] = P(category >= a)`` for a = 0..f, both computed
    by summation (not as 1 - the other) so that either tail keeps full relative precision.

    Parameters
    ----------
    p : numpy.ndarray (f,)
        A marginal distribution.

    Returns
    -------
    lower, upper : numpy.ndarray (f + 1,)
        ``P(category < a)`` and ``P(category >= a)``.
    """
    p = np.asarray(p, dtype=np.float64)
    lower = np.concatenate(([0.0], np.cumsum(p)))
    upper = np.concatenate((np.cumsum(p[::-1])[::-1], [0.0]))
    lower[-1] = 1.0
    upper[0] = 1.0
    return lower, upper


def thresholds(p) -> np.ndarray:
    """Normal-scale cut points t (shape (f+1,)) of a marginal p: t[0] = -inf, t[f] = +inf.

    Interior t[a] = Phi^{-1}(F(a-1)); the lower-tail probability is used below the median and the
    upper tail above it (Phi^{-1}(u) = -Phi^{-1}(1-u)), each floored at ``TAIL_FLOOR`` so that a
    zero-probability end category gives a finite threshold near +-37 instead of an infinite one.

    Parameters
    ----------
    p : array_like (f,)
        A marginal distribution.

    Returns
    -------
    numpy.ndarray (f + 1,)
        The cut points, ascending.
    """
    lower, upper = cumulative(p)
    lo = np.maximum(lower[1:-1], TAIL_FLOOR)
    up = np.maximum(upper[1:-1], TAIL_FLOOR)
    inner = np.where(lo <= 0.5, ndtri(lo), -ndtri(up))
    return np.concatenate(([-np.inf], inner, [np.inf]))
