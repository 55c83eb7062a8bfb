"""reidrisk.mechanisms.oue: unary encoding's bit probabilities, exact log-likelihood, packing."""

import math

import numpy as np
import pytest

from reidrisk.mechanisms import MISSING_BITS, OUE
from reidrisk.mechanisms.oue import PackedBits, packed_width


def test_bit_probabilities():
    # OUE: p = 1/2, q = 1 / (e^epsilon + 1); epsilon = ln 3 gives q = 1/4
    m = OUE(math.log(3.0), 3)
    assert (m.p_bit, m.q_bit) == pytest.approx((0.5, 0.25), abs=1e-15)
    # the worst ratio: the true bit set (p vs q) and another bit unset ((1 - q) vs (1 - p))
    # log(p (1 - q) / (q (1 - p))) = log((1/2)(3/4) / ((1/4)(1/2))) = log 3 = epsilon
    assert m.max_log_ratio() == pytest.approx(math.log(3.0), abs=1e-12)


def test_log_prob_of_a_hand_report():
    # report bits (1, 0, 1), epsilon = ln 3 (p = 1/2, q = 1/4):
    #   x = 0: bit 0 set w.p. p, bit 1 unset w.p. 1 - q, bit 2 set w.p. q -> 1/2 * 3/4 * 1/4 = 3/32
    #   x = 1: bit 0 set w.p. q, bit 1 unset w.p. 1 - p, bit 2 set w.p. q -> 1/4 * 1/2 * 1/4 = 1/32
    #   x = 2: bit 0 set w.p. q, bit 1 unset w.p. 1 - q, bit 2 set w.p. p -> 1/4 * 3/4 * 1/2 = 3/32
    lp = OUE(math.log(3.0), 3).log_prob(np.array([[1, 0, 1]], dtype=np.uint8))
    np.testing.assert_allclose(np.exp(lp), [[3 / 32, 1 / 32, 3 / 32]], rtol=1e-12)


def test_support_counts_skip_missing_rows():
    reports = np.array([[1, 0, 1], [0, 0, 1], [MISSING_BITS] * 3], dtype=np.uint8)
    w, n = OUE(1.0, 3).support_counts(reports)
    np.testing.assert_array_equal(w, [1, 0, 2])
    assert n == 2


def test_packed_bits_round_trip():
    m = OUE(1.0, 10)
    reports = m.perturb(np.array([0, 9, -1, 4]), rng=3)
    packed = m.pack(reports)
    assert isinstance(packed, PackedBits) and len(packed) == 4
    assert packed_width(10) == 2  # 10 bits in 2 bytes
    np.testing.assert_array_equal(packed.unpack(), reports)
