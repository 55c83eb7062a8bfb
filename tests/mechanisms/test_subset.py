"""reidrisk.mechanisms.subset: paper 004's subset mechanism (eq. 2-3), worked by hand."""

import math

import numpy as np
import pytest

from reidrisk.mechanisms import MechanismError, Subset
from reidrisk.mechanisms.subset import subset_size
from reidrisk.schema import MISSING


def test_size_and_probabilities_of_eq_3():
    # epsilon = ln 3, k = 8: h = ceil(8 / (1 + 3)) = 2; p = e^eps h / (k - h + e^eps h)
    # = 6 / 12 = 1/2; q = (h - p) / (k - 1) = (3/2) / 7 = 3/14
    assert subset_size(math.log(3.0), 8) == 2
    m = Subset(math.log(3.0), 8)
    assert m.h == 2
    assert (m.p, m.q_support) == pytest.approx((0.5, 3 / 14), abs=1e-15)
    # P(S | x in S) = p / C(7, 1) = 1/14; P(S | x not in S) = (1 - p) / C(7, 2) = 1/42
    assert math.exp(m.log_prob_in()) == pytest.approx(1 / 14, rel=1e-12)
    assert math.exp(m.log_prob_out()) == pytest.approx(1 / 42, rel=1e-12)
    assert m.max_log_ratio() == pytest.approx(math.log(3.0), abs=1e-12)


def test_enumerated_outputs_and_channel():
    m = Subset(math.log(3.0), 4, h=2)
    out = m.enumerate_outputs()
    np.testing.assert_array_equal(out, [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]])
    q = m.channel()  # (6 subsets, 4 inputs): each column is a distribution
    np.testing.assert_allclose(q.sum(axis=0), 1.0, atol=1e-12)


def test_reports_are_sorted_subsets_holding_the_truth_at_a_huge_budget():
    m = Subset(60.0, 6, h=2)
    x = np.array([0, 5, 3, MISSING])
    r = m.perturb(x, rng=2)
    assert r.shape == (4, 2)
    np.testing.assert_array_equal(r[3], [MISSING, MISSING])
    for row, v in zip(r[:3], x[:3]):
        assert row[0] < row[1] and v in row  # lies have probability ~ e^-60


def test_h_outside_1_to_k_minus_1_is_refused():
    with pytest.raises(MechanismError, match="subset size h"):
        Subset(1.0, 4, h=4)


def test_former_sampler_keyword_method_warns_and_draws_the_same():
    m = Subset(1.0, 40)
    x = np.arange(200) % 40
    new = m.perturb(x, rng=5, sampler="keys")
    with pytest.warns(DeprecationWarning, match="'method' is deprecated; use 'sampler'"):
        np.testing.assert_array_equal(m.perturb(x, rng=5, method="keys"), new)
