"""reidrisk.collect.baselines.truepairs: the copula on the true pair tables (a reference)."""

import numpy as np
import pytest

from reidrisk.collect.baselines import TruePairsCopula

from .conftest import HAND_CODES, HAND_SCHEMA, TRUE_A, TRUE_B


def test_needs_the_true_data(hand_reports):
    m = TruePairsCopula()
    assert m.needs_truth and m.mechanism is None
    with pytest.raises(NotImplementedError, match="needs the true data"):
        m.fit(hand_reports)


def test_one_way_tables_are_the_true_marginals():
    m = TruePairsCopula().fit_truth(HAND_SCHEMA, HAND_CODES)
    np.testing.assert_allclose(m.table([0]), TRUE_A, atol=1e-12)
    np.testing.assert_allclose(m.table([1]), TRUE_B, atol=1e-12)
