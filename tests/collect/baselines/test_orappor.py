"""reidrisk.collect.baselines.orappor: O-RAPPOR, unary-encoding clients, complete-case decoding."""

import numpy as np

from reidrisk.collect.baselines import ORapporCompleteCase
from reidrisk.mechanisms import ORappor

from .conftest import HAND_SCHEMA, TRUE_PAIR, near_truth_reports


def test_client_is_symmetric_unary_encoding():
    m = ORapporCompleteCase()
    assert m.estimator == "norm_sub"
    mechs = m.protocol(4.0).mechanisms(HAND_SCHEMA)
    assert all(type(x) is ORappor and x.epsilon == 2.0 for x in mechs)


def test_recovers_the_complete_case_table_without_noise():
    m = ORapporCompleteCase()
    m.fit(near_truth_reports(m))
    np.testing.assert_allclose(m.table([0, 1]), TRUE_PAIR, atol=1e-9)
