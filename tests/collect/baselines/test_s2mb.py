"""reidrisk.collect.baselines.s2mb: S2Mb, the subset client with the complete-case count EM."""

import numpy as np

from reidrisk.collect.baselines import S2MbCompleteCase

from .conftest import PROJECTED_PAIR, TRUE_PAIR, near_truth_reports


def test_client_and_estimator():
    m = S2MbCompleteCase()
    assert m.mechanism == "subset" and m.estimator == "em"


def test_norm_sub_variant_gives_the_hand_table(hand_reports):
    m = S2MbCompleteCase(estimator="norm_sub").fit(hand_reports)
    np.testing.assert_allclose(m.table([0, 1]), PROJECTED_PAIR, atol=1e-12)


def test_em_recovers_the_complete_case_table_without_noise():
    m = S2MbCompleteCase()
    m.fit(near_truth_reports(m))
    np.testing.assert_allclose(m.table([0, 1]), TRUE_PAIR, atol=1e-6)
