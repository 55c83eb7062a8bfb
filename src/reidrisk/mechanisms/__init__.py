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
from reidrisk.mechanisms.registry import MECHANISMS, make_mechanism
from reidrisk.mechanisms.subset import Subset

__all__ = [
    "GLH", "GRR", "MECHANISMS", "MISSING_BITS", "Mechanism", "MechanismError", "OLH", "ORappor",
    "OUE", "RecordRandomizer", "RecordReports", "Subset", "UnaryEncoding", "check_epsilon",
    "is_secure", "make_mechanism", "random_bytes", "secure_generator", "split_budget",
]
