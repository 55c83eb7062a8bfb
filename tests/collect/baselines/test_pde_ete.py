"""reidrisk.collect.baselines.pde_ete: PDE/ETE, Laplace noise on the index, report-level EM."""

import numpy as np

from reidrisk.collect.baselines import PDEETECompleteCase
from reidrisk.mechanisms.baselines import LaplaceIndex

from .conftest import HAND_SCHEMA, TRUE_PAIR, near_truth_reports


def test_client_is_laplace_on_the_index():
    m = PDEETECompleteCase()
    assert m.estimator == "exact_em"
    assert all(type(x) is LaplaceIndex for x in m.protocol(4.0).mechanisms(HAND_SCHEMA))


def test_recovers_the_complete_case_table_with_tiny_noise():
    # Laplace scale (k - 1) / eps = 1/60: each report is within 0.3 of its index with probability
    # 1 - e^-18, so the exact likelihood separates the two categories and the EM finds the
    # empirical table of the three complete rows
    m = PDEETECompleteCase()
    m.fit(near_truth_reports(m))
    np.testing.assert_allclose(m.table([0, 1]), TRUE_PAIR, atol=1e-6)
