"""reidrisk.collect.baselines.indep: the product of the estimated marginals."""

import numpy as np

from reidrisk.collect.baselines import Indep

from .conftest import INVERTED_A, INVERTED_B


def test_indep_is_the_product_of_the_hand_marginals(hand_reports):
    m = Indep(estimator="norm_sub").fit(hand_reports)
    np.testing.assert_allclose(m.marginals_[0], INVERTED_A, atol=1e-12)
    np.testing.assert_allclose(m.marginals_[1], INVERTED_B, atol=1e-12)
    # outer((1, 0), (1/6, 5/6))
    np.testing.assert_allclose(m.table([0, 1]), [[1 / 6, 5 / 6], [0.0, 0.0]], atol=1e-12)
    np.testing.assert_allclose(m.table([1, 0]), [[1 / 6, 0.0], [5 / 6, 0.0]], atol=1e-12)
