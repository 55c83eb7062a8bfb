"""reidrisk.mechanisms.grr: k-RR's probabilities, channel and server-side counts, by hand."""

import math

import numpy as np
import pytest

from reidrisk.mechanisms import GRR, MechanismError
from reidrisk.schema import MISSING


def test_probabilities_are_the_closed_forms():
    # epsilon = ln 3, k = 2: p = 3 / (3 + 1) = 3/4, q = 1/4
    m = GRR(math.log(3.0), 2)
    assert m.p_support == pytest.approx(0.75, abs=1e-15)
    assert m.q_support == pytest.approx(0.25, abs=1e-15)
    # epsilon = ln 4, k = 4: p = 4 / (4 + 3) = 4/7, q = 1/7; p / q = e^epsilon
    m = GRR(math.log(4.0), 4)
    assert (m.p_support, m.q_support) == pytest.approx((4 / 7, 1 / 7), abs=1e-15)
    assert m.max_log_ratio() == pytest.approx(math.log(4.0), abs=1e-12)


def test_log_prob_of_hand_reports():
    # epsilon = ln 2, k = 3: p = 2/4 = 1/2, q = 1/4; a missing report has log-probability 0
    lp = GRR(math.log(2.0), 3).log_prob(np.array([1, MISSING]))
    np.testing.assert_allclose(lp, np.log([[0.25, 0.5, 0.25], [1.0, 1.0, 1.0]]), atol=1e-15)


def test_support_counts_and_missing():
    m = GRR(1.0, 3)
    w, n = m.support_counts(np.array([0, 2, 2, MISSING]))
    np.testing.assert_array_equal(w, [1, 0, 2])
    assert n == 3
    np.testing.assert_array_equal(m.is_missing(np.array([0, MISSING])), [False, True])
    np.testing.assert_array_equal(m.support(np.array([2, MISSING, 0])).toarray(),
                                  [[0, 0, 1], [0, 0, 0], [1, 0, 0]])


def test_perturb_keeps_missing_and_truth_at_a_huge_budget():
    # at epsilon = 60 the probability of a lie is 2 e^-60 per value: none among 1000
    x = np.array([0, 1, 2, MISSING] * 250)
    np.testing.assert_array_equal(GRR(60.0, 3).perturb(x, rng=1), x)


def test_reports_outside_the_domain_are_refused():
    with pytest.raises(MechanismError, match="report"):
        GRR(1.0, 3).validate_reports(np.array([0, 3]))
