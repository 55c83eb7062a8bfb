"""reidrisk.mechanisms.glh: general local hashing (paper 002 eq. 3) and its hash families."""

import math

import numpy as np
import pytest

from reidrisk.mechanisms import GLH, MechanismError
from reidrisk.mechanisms.glh import optimal_g


def test_optimal_range_and_keep_probability():
    # OLH's g = max(2, round(e^eps + 1)): epsilon = ln 3 -> 4; a tiny budget still gets 2
    assert optimal_g(math.log(3.0)) == 4
    assert optimal_g(0.01) == 2
    # p' = e^eps / (e^eps + g - 1) = 3 / 6
    assert GLH(math.log(3.0), 10).p_support == pytest.approx(0.5, abs=1e-15)


def test_table_family_support_matrix_by_hand():
    # two tables over k = 3 values into g = 2 buckets: values 0 and 1 collide in table 0 only,
    # 0 and 2 in table 1 only, 1 and 2 never -> collision probabilities 1/2, 1/2, 0.
    tables = np.array([[0, 0, 1], [0, 1, 0]])
    m = GLH(math.log(3.0), 3, 2, tables=tables)
    p = 3 / 4  # e^eps / (e^eps + g - 1)
    lie = 1 / 4  # each wrong bucket
    c = np.array([[1, .5, .5], [.5, 1, 0], [.5, 0, 1]])
    np.testing.assert_allclose(m.support_matrix(), c * p + (1 - c) * lie, atol=1e-15)


def test_tables_and_prime_together_are_refused():
    with pytest.raises(MechanismError, match="either prime"):
        GLH(1.0, 3, 2, prime=7, tables=np.zeros((1, 3), dtype=int))
