"""reidrisk.mechanisms.baselines: the negative survey and Laplace-on-the-index clients."""

import math

import numpy as np
import pytest

from reidrisk.collect.baselines import mechanisms as former_home
from reidrisk.mechanisms import MechanismError
from reidrisk.mechanisms.baselines import LOCAL_MECHANISMS, LaplaceIndex, NegativeSurvey


def test_negative_survey_probabilities():
    # r = 1 / (1 + (k - 1) e^eps), s = e^eps r; k = 2, eps = ln 3: r = 1/4, s = 3/4
    m = NegativeSurvey(math.log(3.0), 2)
    assert (m.p_support, m.q_support) == pytest.approx((0.75, 0.25), abs=1e-15)
    assert m.max_log_ratio() == pytest.approx(math.log(3.0), abs=1e-12)
    # a report y supports every value but y
    np.testing.assert_array_equal(np.asarray(m.support(np.array([0, 1]))).astype(int),
                                  [[0, 1], [1, 0]])


def test_laplace_index_density_and_no_support_set():
    m = LaplaceIndex(2.0, 3)  # scale (k - 1) / eps = 1
    assert m.scale == 1.0
    # y = 0.5: density exp(-|y - x| / b) / (2 b) for x = 0, 1, 2
    lp = m.log_prob(np.array([0.5]))
    np.testing.assert_allclose(lp, [[math.log(0.5) - 0.5, math.log(0.5) - 0.5,
                                     math.log(0.5) - 1.5]], atol=1e-12)
    with pytest.raises(MechanismError, match="no support set"):
        _ = m.p_support


def test_registry_names():
    assert LOCAL_MECHANISMS["negative"] is NegativeSurvey
    assert LOCAL_MECHANISMS["laplace_index"] is LaplaceIndex


def test_the_former_import_path_keeps_the_names():
    assert former_home.LOCAL_MECHANISMS is LOCAL_MECHANISMS
    assert (former_home.LaplaceIndex, former_home.NegativeSurvey) == (LaplaceIndex, NegativeSurvey)
