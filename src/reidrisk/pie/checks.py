"""Checks of the arguments of paper 002's formulas, shared by ``reidrisk.pie.bounds``,
``reidrisk.pie.loss``, ``reidrisk.pie.utility`` and ``reidrisk.pie.report``.

Every formula of the package accepts epsilon (and g) as a scalar or an array, broadcast with the
other arguments, and returns a float for scalar input, else an array (``as_output``). Bad input
raises ``BoundError`` (a ``MechanismError``) naming the parameter, the value and the fix.
"""

from __future__ import annotations

import numpy as np

from reidrisk.mechanisms.base import MechanismError

__all__ = ["LDP_FORMS", "MECHANISMS", "BoundError", "as_output", "check_count", "check_counts",
           "check_epsilon", "check_information", "check_mechanism", "check_probability", "shown"]

MECHANISMS: tuple[str, ...] = ("ldp", "rr", "glh")
LDP_FORMS: tuple[str, ...] = ("min", "tanh")


class BoundError(MechanismError):
    """A bad argument of a PIE bound; the message names the parameter, the value and the fix."""


def shown(x: np.ndarray) -> str:
    """A value as an error message shows it: the item of a one-element array, else its list
    (up to 8 values) or the array.

    Parameters
    ----------
    x : array_like
        The offending value(s).

    Returns
    -------
    str
        Its repr.
    """
    x = np.asarray(x)
    return repr(x.item()) if x.size == 1 else repr(x.tolist() if x.size <= 8 else x)


def check_epsilon(epsilon, name: str = "epsilon") -> np.ndarray:
    """A privacy budget, or an array of them: finite and > 0.

    Parameters
    ----------
    epsilon : float or array_like
        The budget(s).
    name : str
        The parameter's name in the message.

    Returns
    -------
    numpy.ndarray
        ``epsilon`` as float64.

    Raises
    ------
    BoundError
        For a non-number, an empty array, or a value that is not finite and > 0.
    """
    try:
        e = np.asarray(epsilon, dtype=np.float64)
    except (TypeError, ValueError):
        raise BoundError(
            f"{name} must be a number or an array of numbers, got {epsilon!r}") from None
    if e.size == 0:
        raise BoundError(f"{name} is empty; pass at least one privacy budget such as 1.0")
    bad = ~np.isfinite(e) | (e <= 0)
    if bad.any():
        raise BoundError(
            f"{name} must be finite and > 0, got {shown(e[bad][:1])}; pass a positive budget "
            "such as 1.0"
        )
    return e


def check_count(value, name: str, low: int = 2, fix: str = "") -> int:
    """A whole number >= ``low`` (n, |X|, t, a scalar g).

    Parameters
    ----------
    value : int or float
        The number (a float must be whole; a bool is refused).
    name : str
        The parameter's name in the message.
    low : int
        The smallest value allowed (default 2).
    fix : str
        Appended to the message (how to fix it).

    Returns
    -------
    int
        ``value``.

    Raises
    ------
    BoundError
        When ``value`` is not a whole number >= ``low``.
    """
    try:
        if isinstance(value, (int, np.integer)):
            ok = not isinstance(value, bool)
        else:
            ok = float(value) == int(value)
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok or int(value) < low:
        raise BoundError(f"{name} must be an integer >= {low}, got {value!r}{fix}")
    return int(value)


def check_counts(value, name: str, low: int = 2) -> np.ndarray:
    """A whole number >= ``low`` that may be an array (g of GLH).

    Parameters
    ----------
    value : int or array_like
        The number(s).
    name : str
        The parameter's name in the message.
    low : int
        The smallest value allowed (default 2).

    Returns
    -------
    numpy.ndarray
        ``value`` as float64.

    Raises
    ------
    BoundError
        For an empty array or a value that is not a finite whole number >= ``low``.
    """
    try:
        a = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise BoundError(f"{name} must be an integer >= {low}, got {value!r}") from None
    bad = ~np.isfinite(a) | (a < low) | (a != np.floor(a))
    if a.size == 0 or bad.any():
        got = shown(a[bad][:1]) if a.size else "an empty array"
        raise BoundError(f"{name} must be an integer >= {low}, got {got}")
    return a


def check_probability(value, name: str, *, open_low: bool = False,
                      open_high: bool = False) -> np.ndarray:
    """A probability, or an array of them, in [0, 1] (either end open on request).

    Parameters
    ----------
    value : float or array_like
        The probability (probabilities).
    name : str
        The parameter's name in the message.
    open_low, open_high : bool
        Exclude 0, exclude 1.

    Returns
    -------
    numpy.ndarray
        ``value`` as float64.

    Raises
    ------
    BoundError
        For a value outside the interval or not finite.
    """
    try:
        a = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise BoundError(f"{name} must be a probability in [0, 1], got {value!r}") from None
    lo = a <= 0 if open_low else a < 0
    hi = a >= 1 if open_high else a > 1
    bad = ~np.isfinite(a) | lo | hi
    if bad.any():
        span = f"{'(' if open_low else '['}0, 1{')' if open_high else ']'}"
        raise BoundError(f"{name} must be a probability in {span}, got {shown(a[bad][:1])}")
    return a


def check_information(value, name: str = "information") -> np.ndarray:
    """An amount of information in bits, or an array of them: >= 0 (``inf`` allowed).

    Parameters
    ----------
    value : float or array_like
        The information.
    name : str
        The parameter's name in the message.

    Returns
    -------
    numpy.ndarray
        ``value`` as float64.

    Raises
    ------
    BoundError
        For NaN or a negative value.
    """
    try:
        a = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise BoundError(f"{name} must be a number of bits >= 0, got {value!r}") from None
    bad = np.isnan(a) | (a < 0)
    if bad.any():
        raise BoundError(f"{name} must be a number of bits >= 0, got {shown(a[bad][:1])}")
    return a


def as_output(x: np.ndarray, *inputs) -> np.ndarray | float:
    """A formula's result as the package returns it: a float when every input was a scalar, else
    the array.

    Parameters
    ----------
    x : array_like
        The result.
    *inputs
        The arguments that may broadcast (epsilon, g, theta...).

    Returns
    -------
    float or numpy.ndarray
        ``x``.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 0 and all(np.ndim(i) == 0 for i in inputs):
        return float(x)
    return x


def check_mechanism(mechanism: str) -> str:
    """A mechanism's name, one of ``MECHANISMS`` (case-insensitive).

    Parameters
    ----------
    mechanism : str
        The name.

    Returns
    -------
    str
        The name in lower case.

    Raises
    ------
    BoundError
        For another name (the message lists the choices).
    """
    m = str(mechanism).lower()
    if m not in MECHANISMS:
        raise BoundError(f"mechanism must be one of {list(MECHANISMS)}, got {mechanism!r}")
    return m
