"""Privacy loss read off the channel: each mechanism's ``privacy_loss`` is the worst-case log ratio
of its exact channel, and a set of record reports states the largest loss one record spends."""

from __future__ import annotations

import math

import numpy as np
import pytest
from mechanism_checks import NAMES, enumerable

from reidrisk.collect.protocol import Protocol, resolve_mechanism
from reidrisk.mechanisms import GLH, GRR, RecordRandomizer, RecordReports, Subset, make_mechanism
from reidrisk.mechanisms.baselines import LaplaceIndex, NegativeSurvey
from reidrisk.schema import MISSING, Attribute, Schema

EPSILONS = (0.1, 1.0, 2.5, 5.0)
SMALL_K = (2, 3, 5, 8)
# closed forms and the enumerated channel differ only by the rounding of a few logs and exps
RTOL = 1e-9


def _channel_log_ratio(mech) -> float:
    """max_y max_{x, x'} log Q(y|x) / Q(y|x') of the enumerated exact channel."""
    q = np.log(mech.channel())
    return float(np.max(q.max(axis=1) - q.min(axis=1)))


def _small_mechanisms(eps, k):
    yield from (enumerable(name, eps, k) for name in NAMES)
    yield NegativeSurvey(eps, k)
    yield from (Subset(eps, k, h) for h in range(1, k))
    yield GLH.with_random_tables(eps, k, 3, g=3, rng=11)


@pytest.mark.parametrize("k", SMALL_K)
@pytest.mark.parametrize("eps", EPSILONS)
def test_privacy_loss_is_the_exact_channels_worst_log_ratio(eps, k):
    for mech in _small_mechanisms(eps, k):
        exact = _channel_log_ratio(mech)
        assert math.isclose(mech.privacy_loss, exact, rel_tol=RTOL), mech
        assert math.isclose(mech.privacy_loss, eps, rel_tol=RTOL), mech


@pytest.mark.parametrize("k", SMALL_K)
@pytest.mark.parametrize("eps", EPSILONS)
def test_laplace_index_loss_is_the_densitys_worst_log_ratio(eps, k):
    """A continuous channel: the density ratio is largest (e^eps) for reports outside [0, k-1]; a
    grid through and beyond the range attains it and never exceeds it."""
    mech = LaplaceIndex(eps, k)
    y = np.linspace(-3.0, k + 2.0, 2001)
    lp = mech.log_prob(y)
    spread = lp.max(axis=1) - lp.min(axis=1)
    assert spread.max() <= mech.privacy_loss * (1 + RTOL)
    assert math.isclose(spread.max(), mech.privacy_loss, rel_tol=RTOL)
    assert math.isclose(mech.privacy_loss, eps, rel_tol=RTOL)


@pytest.mark.parametrize("name", (*NAMES, "negative", "laplace_index"))
def test_privacy_loss_in_closed_form_where_the_channel_is_too_large(name):
    mech = resolve_mechanism(name, 2.5, 1024)
    if name in ("subset", "oue", "rappor", "glh", "olh"):
        with pytest.raises(NotImplementedError):
            mech.enumerate_outputs()
    assert math.isclose(mech.privacy_loss, 2.5, rel_tol=RTOL)


def test_loss_is_read_from_the_channel_probabilities():
    mech = GRR(1.0, 4)
    assert math.isclose(mech.privacy_loss, math.log(mech.p_support / mech.q_support), rel_tol=1e-15)


SCHEMA5 = Schema(tuple(Attribute(f"a{j}", tuple("abcd")) for j in range(5)))


def test_attribute_sampling_spends_epsilon_not_the_sum_of_budgets():
    """Protocol(4.0, attributes_per_person=2) over g = 5: each attribute at 2.0, each person
    reports 2 of them."""
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 4, (500, 5)).astype(np.int32)
    rr = Protocol(4.0, attributes_per_person=2).randomize(SCHEMA5, codes, rng)
    assert math.isclose(sum(m.epsilon for m in rr.mechanisms), 10.0)  # the old, summed value
    assert math.isclose(rr.epsilon, 4.0, rel_tol=RTOL)
    assert math.isclose(rr.privacy_loss, 4.0, rel_tol=RTOL)
    np.testing.assert_allclose(rr.spent(), 4.0, rtol=RTOL)


def test_loss_is_the_largest_over_records_of_what_each_reported():
    """Hand-built reports: row 0 reports 1 attribute, row 1 three, row 2 none."""
    mechs = tuple(GRR(e, 4) for e in (0.5, 1.0, 2.0, 4.0, 8.0))
    sent = np.array([
        [0, MISSING, MISSING, MISSING, MISSING],
        [1, MISSING, 2, 3, MISSING],
        [MISSING] * 5,
    ], dtype=np.int32)
    reps = tuple(m.perturb(sent[:, j], rng=0) for j, m in enumerate(mechs))
    rr = RecordReports(SCHEMA5, mechs, reps)
    np.testing.assert_allclose(rr.spent(), [0.5, 6.5, 0.0], rtol=RTOL)
    assert math.isclose(rr.epsilon, 6.5, rel_tol=RTOL)
    assert math.isclose(rr.take(np.array([0, 2])).epsilon, 0.5, rel_tol=RTOL)
    assert rr.take(np.array([2])).epsilon == 0.0
    assert rr.take(np.zeros(0, dtype=np.int64)).epsilon == 0.0


def test_record_randomizer_without_missing_values_spends_its_budget():
    rng = np.random.default_rng(4)
    codes = rng.integers(0, 4, (50, 5)).astype(np.int32)
    rr = RecordRandomizer(SCHEMA5, "subset", 3.0).randomize(codes, rng)
    assert math.isclose(rr.epsilon, 3.0, rel_tol=RTOL)
    assert math.isclose(make_mechanism("subset", 0.6, 4).privacy_loss, 0.6, rel_tol=RTOL)
