"""reidrisk.mechanisms.rappor: symmetric unary encoding (basic one-time RAPPOR)."""

import math

import numpy as np
import pytest

from reidrisk.mechanisms import ORappor


def test_bit_probabilities_split_the_budget_over_two_bits():
    # epsilon = 2 ln 3: p = 1 / (1 + e^-(epsilon/2)) = 3/4 and q = 1 - p = 1/4
    m = ORappor(2 * math.log(3.0), 4)
    assert (m.p_bit, m.q_bit) == pytest.approx((0.75, 0.25), abs=1e-15)
    assert m.p_bit + m.q_bit == pytest.approx(1.0, abs=1e-15)
    # two bits differ between neighbouring inputs, each with ratio p / q = 3: 2 ln 3 = epsilon
    assert m.max_log_ratio() == pytest.approx(2 * math.log(3.0), abs=1e-12)


def test_log_prob_is_symmetric_in_the_bits():
    # with q = 1 - p, P(report | x) = p^(agreements) q^(disagreements): for report (1, 0, 0, 1)
    # x = 0 agrees on bits 0, 1, 2 -> p^3 q; x = 1 agrees on bit 2 only -> p q^3
    m = ORappor(2 * math.log(3.0), 4)
    lp = m.log_prob(np.array([[1, 0, 0, 1]], dtype=np.uint8))
    p, q = 0.75, 0.25
    np.testing.assert_allclose(np.exp(lp), [[p**3 * q, p * q**3, p * q**3, p**3 * q]],
                               rtol=1e-12)
