"""Decisions "count > T" and their evaluation (reidrisk.uniqueness.decisions), on hand-computed
cases: every expectation is worked out from the definitions."""

from __future__ import annotations

import numpy as np
import pytest

from reidrisk.uniqueness import scorer
from reidrisk.uniqueness.decisions import classification, decide, reliability, roc_auc
from reidrisk.uniqueness.scorer import ScoringError


def test_decision_rules():
    P = np.array([[0.3], [0.6], [0.9]])
    np.testing.assert_array_equal(decide("probability", P)[:, 0], [False, True, True])
    np.testing.assert_array_equal(decide("balanced", P, base_rates=np.array([0.7]))[:, 0], [False, False, True])
    E = np.array([1.4, 1.5, 3.0])
    np.testing.assert_array_equal(decide("expected", P, E, np.array([1.0]))[:, 0], [False, True, True])
    with pytest.raises(ScoringError, match="base rates"):
        decide("balanced", P)
    with pytest.raises(ScoringError, match="unknown"):
        decide("vote", P)


def test_roc_auc_equals_pairwise_definition():
    rng = np.random.default_rng(1)
    score = rng.integers(0, 5, 200).astype(float)  # many ties
    label = rng.random(200) < 0.3
    pos, neg = score[label], score[~label]
    pairs = (pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean()
    assert np.isclose(roc_auc(score, label), pairs)
    assert np.isnan(roc_auc(score, np.zeros(200, bool)))


def test_classification_and_reliability():
    truth = np.array([1, 1, 2, 5, 20, 1])
    c = classification(np.array([False, True, True, True, True, False]), truth, 1)
    assert np.isclose(c.accuracy, 5 / 6) and np.isclose(c.balanced_accuracy, (1.0 + 2 / 3) / 2)
    const = classification(True, truth, 1)
    assert const.balanced_accuracy == 0.5
    p = np.repeat([0.1, 0.5, 0.9], 100)
    y = np.concatenate([np.arange(100) < 10, np.arange(100) < 50, np.arange(100) < 90])
    rel = reliability(p, y)
    assert rel.max_gap(50) < 1e-12
    assert rel.count.sum() == 300


def test_former_import_path_warns_and_forwards():
    with pytest.warns(DeprecationWarning, match="reidrisk.uniqueness.decisions.decide"):
        assert scorer.decide is decide
