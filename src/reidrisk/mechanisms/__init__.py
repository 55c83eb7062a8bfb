"""LDP mechanisms: one module per mechanism over a small base (see ``base.Mechanism``)."""

from __future__ import annotations

from reidrisk.mechanisms.base import Mechanism, MechanismError, check_epsilon
from reidrisk.mechanisms.grr import GRR
from reidrisk.mechanisms.record import RecordRandomizer, RecordReports, split_budget

MECHANISMS: dict[str, type[Mechanism]] = {"grr": GRR}


def make_mechanism(name: str, epsilon: float, k: int, **kwargs) -> Mechanism:
    """Build a mechanism by registry name (see ``MECHANISMS``)."""
    try:
        cls = MECHANISMS[name.lower()]
    except KeyError:
        raise MechanismError(
            f"unknown mechanism {name!r}; choose one of {sorted(MECHANISMS)}"
        ) from None
    return cls(epsilon, k, **kwargs)


__all__ = [
    "GRR", "MECHANISMS", "Mechanism", "MechanismError", "RecordRandomizer", "RecordReports",
    "check_epsilon", "make_mechanism", "split_budget",
]
