"""reidrisk.collect.baselines.proposed: the pipeline wrapped as a compared method."""

import numpy as np

from reidrisk.collect.baselines import Proposed

from .conftest import INVERTED_A, INVERTED_B


def test_one_way_tables_are_the_pipeline_marginals(hand_reports):
    m = Proposed("p", estimator="norm_sub", marginal_shrink=False, fallback=False)
    m.fit(hand_reports)
    np.testing.assert_allclose(m.table([0]), INVERTED_A, atol=1e-12)
    np.testing.assert_allclose(m.table([1]), INVERTED_B, atol=1e-12)
    assert m.label == "p" and "estimator='norm_sub'" in repr(m)
