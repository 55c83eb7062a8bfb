"""The registry of mechanisms by name: ``MECHANISMS`` and ``make_mechanism``.

A record randomizer (``reidrisk.mechanisms.record``), a collection protocol and the command line
name a mechanism by a string ("grr", "oue", ...); this module maps the name to its class. It sits
above the mechanism modules and below ``record``; ``reidrisk.mechanisms`` re-exports both names.
"""

from __future__ import annotations

from reidrisk.mechanisms.base import Mechanism, MechanismError
from reidrisk.mechanisms.glh import GLH, OLH
from reidrisk.mechanisms.grr import GRR
from reidrisk.mechanisms.oue import OUE
from reidrisk.mechanisms.rappor import ORappor
from reidrisk.mechanisms.subset import Subset

__all__ = ["MECHANISMS", "make_mechanism"]

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
