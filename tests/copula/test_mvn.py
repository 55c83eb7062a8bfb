"""reidrisk.copula.mvn: rectangle probabilities of the multivariate normal."""

from __future__ import annotations

import numpy as np
from scipy import stats
from scipy.special import ndtr

from reidrisk.copula import rectangle_probability


def test_rectangle_probability_three_and_four_dims():
    corr = np.array([[1, .5, .3, .2], [.5, 1, -.4, .1], [.3, -.4, 1, .25], [.2, .1, .25, 1]])
    lo = np.array([[-0.5, -1.0, 0.2, -0.3], [0.3, -0.2, -1.5, -1.0], [-2.0, -2.0, -2.0, -2.0]])
    up = lo + np.array([[1.0, 0.8, 1.5, 2.0], [0.4, 2.0, 1.0, 3.0], [0.3, 0.5, 0.7, 4.0]])
    for c in (3, 4):
        got = rectangle_probability(lo[:, :c], up[:, :c], corr[:c, :c], rtol=1e-5)
        want = np.array([
            stats.multivariate_normal.cdf(up[i, :c], cov=corr[:c, :c], lower_limit=lo[i, :c],
                                          abseps=1e-9, releps=0, rng=0)
            for i in range(3)
        ])
        # QMC error within 4 reported se, plus the reference's own tolerance.
        assert np.all(np.abs(got.prob - want) <= 4 * got.se + 1e-8)
    # Independent third variable: the probability factorizes into exact 2-D and 1-D pieces.
    block = np.eye(3)
    block[0, 1] = block[1, 0] = 0.6
    got = rectangle_probability(lo[:, :3], up[:, :3], block, rtol=1e-6)
    r2 = rectangle_probability(lo[:, :2], up[:, :2], block[:2, :2]).prob
    r1 = ndtr(up[:, 2]) - ndtr(lo[:, 2])
    np.testing.assert_allclose(got.prob, r2 * r1, rtol=1e-5)

