"""reidrisk.collect.baselines.complete_case: c-way tables from the complete reports only."""

import numpy as np
import pytest

from reidrisk.collect.baselines.complete_case import CompleteCase
from reidrisk.mechanisms.record import RecordReports
from reidrisk.schema import MISSING

from .conftest import INVERTED_B, PROJECTED_PAIR


def test_norm_sub_tables_of_the_hand_reports(hand_reports):
    m = CompleteCase(estimator="norm_sub").fit(hand_reports)
    # rows 0-2 are complete on (A, B): inversion then projection (conftest)
    np.testing.assert_allclose(m.table([0, 1]), PROJECTED_PAIR, atol=1e-12)
    # one attribute: its three present reports, inverted; already on the simplex
    np.testing.assert_allclose(m.table([1]), INVERTED_B, atol=1e-12)


def test_a_query_without_complete_reports_is_uniform(hand_reports):
    a, b = hand_reports.reports
    b = np.full_like(b, MISSING)
    b[3] = 1  # the only B report is in the row without A
    a = a.copy()
    a[3] = MISSING
    rr = RecordReports(hand_reports.schema, hand_reports.mechanisms, (a, b))
    np.testing.assert_array_equal(CompleteCase().fit(rr).table([0, 1]), np.full((2, 2), 0.25))


def test_unknown_estimator_is_refused():
    with pytest.raises(ValueError, match="estimator must be one of"):
        CompleteCase(estimator="magic")
