"""Injecting missing values into complete encoded data.

Design: docs/design/core.md#schema-and-missing-values.

Paper 004 (Section 5.1 and 6) evaluates with values missing completely at random (MCAR) at rate m:
each cell is removed independently with probability m (``mcar``). Section 6 names missing at
random (MAR), where missingness depends on other observed attributes, as the next case; ``mar``
generates it: the chance that a record's other attributes are missing is a logistic function of
the observed value of one driver attribute, calibrated so the overall rate is still m.

Cells already missing in the input stay missing; the rates below are those of the removal step
(equal to the final missing rate when the input is complete).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit

from reidrisk.mechanisms.base import as_generator
from reidrisk.schema import MISSING


def _check_rate(rate: float) -> float:
    try:
        m = float(rate)
    except (TypeError, ValueError):
        raise ValueError(f"rate must be a number in [0, 1), got {rate!r}") from None
    if not 0.0 <= m < 1.0:
        raise ValueError(
            f"rate must be in [0, 1) (the probability that a value is removed), got {rate!r}"
        )
    return m


def _check_codes(codes: np.ndarray) -> np.ndarray:
    codes = np.asarray(codes)
    if codes.ndim != 2 or not np.issubdtype(codes.dtype, np.integer):
        raise ValueError(f"codes must be an integer matrix (n, g), got {codes.dtype} {codes.shape}")
    return codes


def mcar(
    codes: np.ndarray,
    rate: float,
    rng: np.random.Generator | int | None = None,
    columns: Sequence[int] | None = None,
) -> np.ndarray:
    """Missing completely at random (paper 004, Section 5.1): a copy of ``codes`` with each chosen
    cell set to ``MISSING`` independently with probability ``rate``.

    Parameters
    ----------
    codes : numpy.ndarray (n, g)
        Integer codes (not modified).
    rate : float
        Probability that a value is removed, in [0, 1).
    rng : numpy.random.Generator or int, optional
        Generator or seed (``None``: a fresh cryptographic generator).
    columns : sequence of int, optional
        Column indices to remove values from (default: all).

    Returns
    -------
    numpy.ndarray
        The codes with the removed cells ``MISSING``.
    """
    codes = _check_codes(codes)
    m = _check_rate(rate)
    rng = as_generator(rng)
    out = codes.copy()
    cols = np.arange(codes.shape[1]) if columns is None else np.asarray(columns, dtype=np.int64)
    drop = rng.random((codes.shape[0], cols.size)) < m
    sub = out[:, cols]
    sub[drop] = MISSING
    out[:, cols] = sub
    return out


def mar_probabilities(driver_codes: np.ndarray, rate: float, strength: float = 2.0) -> np.ndarray:
    """Per-record probability (n,) that each non-driver value is removed under ``mar``.

    ``pi_i = expit(a + strength * s_i)`` with ``s_i = 2 k_i / (K - 1) - 1`` in [-1, 1] the position
    of the record's driver code k_i among the codes 0..K-1 (K = largest code + 1; ``s_i = 0`` where
    the driver itself is missing), and ``a`` solved so that ``mean(pi) = rate`` exactly.

    Parameters
    ----------
    driver_codes : numpy.ndarray (n,)
        The driver attribute's codes, ``MISSING`` where absent.
    rate : float
        The mean removal probability, in [0, 1).
    strength : float
        Slope of the logistic in the driver's position (> 0: higher codes lose more values).

    Returns
    -------
    numpy.ndarray (n,)
        The probabilities.
    """
    m = _check_rate(rate)
    driver_codes = np.asarray(driver_codes)
    n = driver_codes.shape[0]
    if m == 0.0:
        return np.zeros(n)
    present = driver_codes != MISSING
    top = int(driver_codes[present].max()) if present.any() else 0
    s = np.zeros(n)
    if top > 0:
        s[present] = 2.0 * driver_codes[present] / top - 1.0
    # Calibrate over the distinct s values only: mean(expit(a + b s)) is increasing in a.
    values, counts = np.unique(s, return_counts=True)
    weights = counts / n
    b = float(strength)

    def gap(a: float) -> float:
        return float(weights @ expit(a + b * values)) - m

    a = brentq(gap, -60.0 - abs(b), 60.0 + abs(b), xtol=1e-13)
    return expit(a + b * s)


def mar(
    codes: np.ndarray,
    rate: float,
    rng: np.random.Generator | int | None = None,
    driver: int = 0,
    strength: float = 2.0,
) -> np.ndarray:
    """Missing at random driven by one attribute: a copy of ``codes`` (n, g) in which the driver
    column is never removed and every other cell of record i is removed independently with
    probability ``pi_i`` (``mar_probabilities``): a logistic function of the driver's observed code,
    increasing for ``strength > 0``, with overall expected rate ``rate`` over the non-driver cells.

    Parameters
    ----------
    codes : numpy.ndarray (n, g)
        Integer codes, at least two columns (not modified).
    rate : float
        Expected share of the non-driver cells removed, in [0, 1).
    rng : numpy.random.Generator or int, optional
        Generator or seed (``None``: a fresh cryptographic generator).
    driver : int
        Column index of the driver attribute (0..g-1).
    strength : float
        As in ``mar_probabilities``.

    Returns
    -------
    numpy.ndarray (n, g)
        The codes with the removed cells ``MISSING``.
    """
    codes = _check_codes(codes)
    m = _check_rate(rate)
    g = codes.shape[1]
    if isinstance(driver, bool) or int(driver) != driver or not 0 <= driver < g:
        raise ValueError(f"driver must be a column index in 0..{g - 1}, got {driver!r}")
    if g < 2:
        raise ValueError("mar needs at least two columns: the driver and one to remove values from")
    rng = as_generator(rng)
    pi = mar_probabilities(codes[:, driver], m, strength)
    others = np.delete(np.arange(g), int(driver))
    drop = rng.random((codes.shape[0], others.size)) < pi[:, None]
    out = codes.copy()
    sub = out[:, others]
    sub[drop] = MISSING
    out[:, others] = sub
    return out


__all__ = ["mar", "mar_probabilities", "mcar"]
