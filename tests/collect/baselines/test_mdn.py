"""reidrisk.collect.baselines.mdn: MDN, negative-survey clients, complete-case inversion."""

import numpy as np

from reidrisk.collect.baselines import MDNCompleteCase
from reidrisk.mechanisms.baselines import NegativeSurvey

from .conftest import HAND_CODES, HAND_SCHEMA, TRUE_PAIR, near_truth_reports


def test_client_is_the_negative_survey():
    m = MDNCompleteCase()
    assert m.estimator == "norm_sub"
    assert all(type(x) is NegativeSurvey for x in m.protocol(4.0).mechanisms(HAND_SCHEMA))


def test_recovers_the_complete_case_table_from_near_pure_negative_reports():
    m = MDNCompleteCase()
    rr = near_truth_reports(m)
    # on two categories a near-pure negative survey reports the other value
    present = HAND_CODES[:, 0] >= 0
    np.testing.assert_array_equal(rr.reports[0][present], 1 - HAND_CODES[present, 0])
    m.fit(rr)
    np.testing.assert_allclose(m.table([0, 1]), TRUE_PAIR, atol=1e-9)
