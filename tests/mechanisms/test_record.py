"""reidrisk.mechanisms.record: budgets of whole records and what a set of record reports spends."""

import numpy as np
import pytest

from reidrisk.mechanisms import GRR, MechanismError, RecordRandomizer, split_budget
from reidrisk.mechanisms.record import RecordReports
from reidrisk.schema import MISSING, Attribute, Schema

SCHEMA = Schema((Attribute("a", ("x", "y")), Attribute("b", ("u", "v", "w"))))


def test_split_budget_even_and_weighted():
    np.testing.assert_allclose(split_budget(3.0, 3), [1.0, 1.0, 1.0])
    np.testing.assert_allclose(split_budget(3.0, 2, [1, 2]), [1.0, 2.0])
    with pytest.raises(MechanismError, match="positive finite"):
        split_budget(3.0, 2, [1, 0])


def test_spent_and_privacy_loss_of_hand_reports():
    # attribute a at epsilon 1, b at 2: a row reporting both spends 3, b only 2, neither 0
    rr = RecordReports(SCHEMA, (GRR(1.0, 2), GRR(2.0, 3)),
                       (np.array([0, MISSING, MISSING]), np.array([2, 1, MISSING])))
    np.testing.assert_array_equal(rr.present(), [[True, True], [False, True], [False, False]])
    np.testing.assert_allclose(rr.spent(), [3.0, 2.0, 0.0], atol=1e-12)
    assert rr.privacy_loss == pytest.approx(3.0, abs=1e-12) and rr.epsilon == rr.privacy_loss
    sub = rr.take(np.array([1, 2]))
    assert sub.n == 2 and sub.privacy_loss == pytest.approx(2.0, abs=1e-12)


def test_mismatched_mechanism_domain_is_refused():
    with pytest.raises(MechanismError, match="has 3 categories but its mechanism has k=2"):
        RecordReports(SCHEMA, (GRR(1.0, 2), GRR(1.0, 2)), (np.zeros(1), np.zeros(1)))


def test_record_randomizer_splits_the_budget():
    rnd = RecordRandomizer(SCHEMA, "grr", 3.0, weights=[1, 2])
    assert [m.epsilon for m in rnd.mechanisms] == pytest.approx([1.0, 2.0])
    rr = rnd.randomize(np.array([[0, 2], [1, MISSING]]), rng=1)
    assert rr.n == 2 and rr.present().tolist() == [[True, True], [True, False]]
