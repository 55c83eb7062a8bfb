"""Floors on the cell probability q: the person exists, so q cannot be tiny (paper 000 eq. 9-14).

A record's values come from a real person, so at least one person in the population has them. The
paper raises a model probability ``q`` to the smallest value for which the chance that someone in a
population of ``N`` has the values reaches a target ``alpha`` (the paper's alpha-hat), approximating
X ~ Binomial(N, q) by Poisson(N q). Two readings are offered (docs/design/uniqueness.md#floor-on-q):

``"lambertw"`` (paper fidelity, eq. 13-14)
    approximate P(X >= 1) by P(X = 1): ``N q e^{-N q} = alpha``, whose smaller root is
    ``q = -W0(-alpha) / N`` (W0 = principal branch of Lambert W). Eq. 14 prints ``n`` where the
    population size ``N`` is meant. Real only for ``alpha <= 1/e``; at ``alpha = 1/e`` the root is
    exactly ``q = 1 / N``.
``"poisson"`` (exact Poisson, eq. 9 without the eq. 12-13 approximation)
    ``P(X >= 1) = 1 - e^{-N q} >= alpha``  =>  ``q >= -ln(1 - alpha) / N``; any ``alpha`` in [0, 1).
``"none"``
    q is returned unchanged.

The floored value is ``max(q, bound)``: a q already above the bound is kept.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import lambertw

from reidrisk.errors import ReidriskError

FLOORS: tuple[str, ...] = ("lambertw", "poisson", "none")
"""Names accepted by ``floor_q``."""

INV_E: float = math.exp(-1.0)
"""1/e = 0.36787944117144233..., the largest alpha for which the Lambert-W floor is real."""

DEFAULT_FLOOR: str = "lambertw"
"""Paper fidelity. Provisional: to be settled by the Section V accuracy benchmark."""

DEFAULT_ALPHA: float = 0.1
"""Provisional target P(at least one person has the values); paper 000 leaves alpha-hat open."""

# alpha within this many ulps of 1/e is treated as exactly 1/e (W0(-1/e) = -1 exactly).
_BRANCH_ULPS = 4


class FloorError(ReidriskError, ValueError):
    """Bad floor parameter. The message names the parameter, its value and the fix."""


def _check_floor(floor: str) -> str:
    name = str(floor).lower()
    if name not in FLOORS:
        raise FloorError(f"unknown floor {floor!r}; choose one of {list(FLOORS)}")
    return name


def _check_alpha(alpha: float, floor: str) -> float:
    try:
        a = float(alpha)
    except (TypeError, ValueError):
        raise FloorError(f"alpha must be a number, got {alpha!r}") from None
    if not math.isfinite(a) or a < 0.0:
        raise FloorError(f"alpha must be finite and >= 0, got {alpha!r}")
    if floor == "lambertw" and a > INV_E + _BRANCH_ULPS * math.ulp(INV_E):
        raise FloorError(
            f"alpha = {a!r} > 1/e = {INV_E!r}: N q e^(-N q) = alpha has no real solution "
            "(Lambert W0 is real only on [-1/e, inf)). Use alpha <= 0.36787944117144233, or "
            'floor="poisson", which accepts any alpha in [0, 1)'
        )
    if floor == "poisson" and a >= 1.0:
        raise FloorError(
            f"alpha = {a!r} >= 1: P(X >= 1) = 1 - exp(-N q) never reaches it; use alpha in [0, 1)"
        )
    return a


def floor_bound(N: float | np.ndarray, alpha: float, floor: str = DEFAULT_FLOOR) -> np.ndarray:
    """The lower bound on q for a population of size ``N``.

    Parameters
    ----------
    N : float or numpy.ndarray
        Population size (finite, >= 1; an array is broadcast).
    alpha : float
        The floor's level (finite, >= 0): at most 1/e for ``"lambertw"``, below 1 for
        ``"poisson"``.
    floor : {"lambertw", "poisson", "none"}
        ``"lambertw"``: ``-W0(-alpha) / N`` (paper 000 eq. 14 with N for n), exactly ``1/N`` at
        ``alpha = 1/e``; ``"poisson"``: ``-log1p(-alpha) / N``; ``"none"``: 0.

    Returns
    -------
    numpy.ndarray
        The bound, float64 of the shape of ``N`` (0 for ``"none"`` or ``alpha = 0``).

    Raises
    ------
    FloorError
        For an unknown floor, an alpha out of the floor's range, or N not finite and >= 1.
    """
    floor = _check_floor(floor)
    a = _check_alpha(alpha, floor)
    n = np.asarray(N, dtype=np.float64)
    if np.any(~np.isfinite(n)) or np.any(n < 1):
        raise FloorError(f"population size N must be finite and >= 1, got {N!r}")
    if floor == "none" or a == 0.0:
        return np.zeros_like(n)
    if floor == "poisson":
        lam = -math.log1p(-a)
    elif abs(a - INV_E) <= _BRANCH_ULPS * math.ulp(INV_E):
        lam = 1.0  # the branch point: W0(-1/e) = -1 exactly
    else:
        lam = float(-lambertw(-a, 0).real)
    return lam / n


def floor_q(
    q: np.ndarray | float,
    N: float | np.ndarray,
    alpha: float = DEFAULT_ALPHA,
    floor: str = DEFAULT_FLOOR,
) -> np.ndarray:
    """Raise cell probabilities to the existence floor (paper 000 eq. 9-14).

    Parameters
    ----------
    q : array (r,) or scalar
        Probability of each record's cell under the population model, in [0, 1].
    N : int or array broadcastable to q
        Population size (>= 1).
    alpha : float
        Target probability that at least one person has the values (alpha-hat of the paper).
        ``"lambertw"`` needs ``alpha <= 1/e``; ``"poisson"`` needs ``alpha < 1``.
    floor : {"lambertw", "poisson", "none"}
        The reading of the floor (module doc); default ``DEFAULT_FLOOR``.

    Returns
    -------
    numpy.ndarray
        ``max(q, bound)`` (never above 1), float64 of the broadcast shape of ``q`` and ``N``.

    Raises
    ------
    FloorError
        For a q that is not a probability in [0, 1] (naming its index), or a bad ``N``,
        ``alpha`` or ``floor`` (as in ``floor_bound``).
    """
    qa = np.asarray(q, dtype=np.float64)
    if np.any(~np.isfinite(qa)) or np.any((qa < 0.0) | (qa > 1.0)):
        bad = np.flatnonzero(~np.isfinite(qa.ravel()) | (qa.ravel() < 0) | (qa.ravel() > 1))[0]
        raise FloorError(f"q[{bad}] = {qa.ravel()[bad]!r} is not a probability in [0, 1]")
    bound = floor_bound(N, alpha, floor)
    return np.minimum(np.maximum(qa, bound), 1.0)
