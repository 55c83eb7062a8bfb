"""reidrisk.collect.baselines.dfcopula: DF+Copula, the copula fitted to the raw report frequencies."""

import numpy as np

from reidrisk.collect.baselines import DFCopula

from .conftest import TRUE_A, TRUE_B


def test_marginals_are_the_raw_report_frequencies(hand_reports):
    # the hand reports are the true values, so their frequencies are (3/4, 1/4) and (1/3, 2/3),
    # not the inverted (1, 0) and (1/6, 5/6) of the proposed method
    m = DFCopula().fit(hand_reports)
    np.testing.assert_allclose(m.table([0]), TRUE_A, atol=1e-12)
    np.testing.assert_allclose(m.table([1]), TRUE_B, atol=1e-12)
    s = m.pipeline.settings()
    assert (s["estimator"], s["shrink"], s["fallback"]) == ("raw", None, False)
