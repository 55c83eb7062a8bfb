"""reidrisk.copula.marginals: normal-scale thresholds of a marginal."""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr

from reidrisk.copula import thresholds


def test_thresholds():
    t = thresholds([0.0, 0.3, 0.7, 0.0])
    assert t[0] == -np.inf and t[-1] == np.inf
    assert np.all(np.isfinite(t[1:-1])) and np.all(np.diff(t) >= 0)
    np.testing.assert_allclose(ndtr(t[1:-1]), [0.0, 0.3, 1.0], atol=1e-15)

