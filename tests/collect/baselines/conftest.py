"""The 4-row fixture of the baseline tests (the same table as tests/collect/test_pipeline_steps.py).

Two binary attributes A and B; true values (and, where a test writes reports by hand, reports):

    row   A   B
     0    0   0
     1    0   1
     2    1   1
     3    0   -      (B missing)

Complete-case table of (A, B) (rows 0-2): [[1/3, 1/3], [0, 1/3]]; marginals over the present
values: A (3/4, 1/4), B (1/3, 2/3). With the subset mechanism at epsilon = ln 3 on k = 2 (h = 1,
i.e. k-RR with p = 3/4, q = 1/4) and these as the reports, the unbiased inversion gives
pi_A = (1, 0), pi_B = (1/6, 5/6) and the pair table [[7/12, 1/4], [-5/12, 7/12]], projected onto
the simplex as [[4/9, 1/9], [0, 4/9]] (worked out in tests/collect/test_pipeline_steps.py).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from reidrisk.mechanisms import Subset
from reidrisk.mechanisms.record import RecordReports
from reidrisk.schema import MISSING, Attribute, Schema

HAND_SCHEMA = Schema((Attribute("A", ("a0", "a1")), Attribute("B", ("b0", "b1"))))
HAND_CODES = np.array([[0, 0], [0, 1], [1, 1], [0, MISSING]], dtype=np.int32)
TRUE_PAIR = np.array([[1 / 3, 1 / 3], [0.0, 1 / 3]])
TRUE_A, TRUE_B = np.array([0.75, 0.25]), np.array([1 / 3, 2 / 3])
INVERTED_A, INVERTED_B = np.array([1.0, 0.0]), np.array([1 / 6, 5 / 6])
PROJECTED_PAIR = np.array([[4 / 9, 1 / 9], [0.0, 4 / 9]])


@pytest.fixture()
def hand_reports() -> RecordReports:
    """The table above as subset reports (h = 1) at epsilon = ln 3 per attribute, by hand."""
    mechs = (Subset(math.log(3.0), 2), Subset(math.log(3.0), 2))
    assert all(m.h == 1 for m in mechs)
    return RecordReports(HAND_SCHEMA, mechs, tuple(HAND_CODES[:, [j]] for j in range(2)))


def near_truth_reports(method, epsilon_per_attribute: float = 60.0, rng=0):
    """The table randomized by ``method``'s own client at a budget so large that no report lies
    (a lie has probability of order e^-60 per value)."""
    protocol = method.protocol(2 * epsilon_per_attribute)
    return protocol.randomize(HAND_SCHEMA, HAND_CODES, rng)
