"""reidrisk.copula.marginals: validation, cumulative tails and normal-scale thresholds of a marginal."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import ndtr

from reidrisk.copula import CopulaError, thresholds
from reidrisk.copula.marginals import check_marginal, check_marginals, cumulative


def test_thresholds():
    t = thresholds([0.0, 0.3, 0.7, 0.0])
    assert t[0] == -np.inf and t[-1] == np.inf
    assert np.all(np.isfinite(t[1:-1])) and np.all(np.diff(t) >= 0)
    np.testing.assert_allclose(ndtr(t[1:-1]), [0.0, 0.3, 1.0], atol=1e-15)


def test_cumulative_tails_by_hand():
    lower, upper = cumulative(np.array([0.2, 0.5, 0.3]))
    np.testing.assert_allclose(lower, [0.0, 0.2, 0.7, 1.0], atol=1e-15)
    np.testing.assert_allclose(upper, [1.0, 0.8, 0.3, 0.0], atol=1e-15)
    # a tiny end category keeps its own relative precision in the upper tail
    _, up = cumulative(np.array([1 - 1e-17, 1e-17]))
    assert up[1] == 1e-17


@pytest.mark.parametrize("bad, match", [
    ([1.0], "at least|>= 2 categories"),
    ([0.5, np.nan], "non-finite"),
    ([1.2, -0.2], "negative entries"),
    ([2.0, 3.0], "sums to 5, not 1; pass probabilities, not counts"),
])
def test_check_marginal_names_the_attribute_and_the_fix(bad, match):
    with pytest.raises(CopulaError, match=match) as info:
        check_marginal(bad, "age")
    assert "attribute age" in str(info.value)


def test_check_marginals_renormalizes_within_tolerance():
    (p,) = check_marginals([[0.3, 0.7 + 1e-9]])
    assert p.sum() == 1.0
    with pytest.raises(CopulaError, match="at least one marginal"):
        check_marginals([])
