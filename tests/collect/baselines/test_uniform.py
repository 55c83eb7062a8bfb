"""reidrisk.collect.baselines.uniform: every table uniform, whatever the reports say."""

import numpy as np

from reidrisk.collect.baselines import Uniform

from .conftest import HAND_CODES, HAND_SCHEMA


def test_uniform_tables_of_the_hand_reports(hand_reports):
    u = Uniform().fit(hand_reports)
    np.testing.assert_array_equal(u.table([0, 1]), np.full((2, 2), 0.25))
    np.testing.assert_array_equal(u.table(["B"]), [0.5, 0.5])
    assert u.protocol(1.0).mechanism == "subset"


def test_fit_truth_reads_only_the_schema():
    u = Uniform().fit_truth(HAND_SCHEMA, HAND_CODES)
    np.testing.assert_array_equal(u.table([1, 0]), np.full((2, 2), 0.25))
