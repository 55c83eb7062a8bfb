"""LDP mechanisms: one module per mechanism over a small base (see ``base.Mechanism``).

Design: docs/design/core.md#mechanisms.
"""

from __future__ import annotations

from reidrisk.mechanisms.base import Mechanism, MechanismError, check_epsilon
from reidrisk.mechanisms.glh import GLH, OLH
from reidrisk.mechanisms.grr import GRR
from reidrisk.mechanisms.oue import MISSING_BITS, OUE, UnaryEncoding
from reidrisk.mechanisms.randomness import is_secure, random_bytes, secure_generator
from reidrisk.mechanisms.rappor import ORappor
from reidrisk.mechanisms.record import RecordRandomizer, RecordReports, split_budget
from reidrisk.mechanisms.subset import Subset

MECHANISMS: dict[str, type[Mechanism]] = {
    "grr": GRR,
    "subset": Subset,
    "oue": OUE,
    "rappor": ORappor,
    "glh": GLH,
    "olh": OLH,
}


def make_mechanism(name: str, epsilon: float, k: int, **kwargs) -> Mechanism:
    """Build a mechanism by registry name (see ``MECHANISMS``).

    Parameters
    ----------
    name : str
        One of "grr", "subset", "oue", "rappor", "glh", "olh" (case-insensitive).
    epsilon : float
        The privacy budget (finite, > 0).
    k : int
        Domain size (integer >= 2).
    **kwargs
        Passed to the constructor, e.g. ``h`` for "subset", ``g``/``prime``/``tables`` for "glh".

    Returns
    -------
    Mechanism
        The mechanism.

    Raises
    ------
    MechanismError
        For an unknown name (the message lists the choices) or a bad parameter.
    """
    try:
        cls = MECHANISMS[name.lower()]
    except (KeyError, AttributeError):
        raise MechanismError(
            f"unknown mechanism {name!r}; choose one of {sorted(MECHANISMS)}"
        ) from None
    return cls(epsilon, k, **kwargs)


__all__ = [
    "GLH", "GRR", "MECHANISMS", "MISSING_BITS", "Mechanism", "MechanismError", "OLH", "ORappor",
    "OUE", "RecordRandomizer", "RecordReports", "Subset", "UnaryEncoding", "check_epsilon",
    "is_secure", "make_mechanism", "random_bytes", "secure_generator", "split_budget",
]
