"""Pair estimates computed in batches of pairs equal the estimates of all pairs at once."""

from __future__ import annotations

import numpy as np
import pytest

from reidrisk import batches
from reidrisk.estimation import EstimationError, estimate_pairs, pair_counts
from reidrisk.estimation.frequency import marginals_from_counts
from reidrisk.estimation.pair_batches import estimate_pairs_batched

from .conftest import correlated_records, randomize

SIZES = [3, 4, 2, 3, 5, 2, 4]  # mixed shapes: a batch boundary splits stacks of equal shape


@pytest.mark.parametrize("shrink", [False, True])
@pytest.mark.parametrize("estimator", ["em", "norm_sub"])
@pytest.mark.parametrize("mechanism", ["grr", "oue"])
def test_batched_estimates_equal_all_pairs_at_once(monkeypatch, estimator, mechanism, shrink):
    """Every pair's EM reads only its own counts and stops on its own rule, so splitting the 21
    pairs into batches of 4 (each shape stack cut at other places) must give the same tables bit
    for bit, with the same steps; a pair influenced by its batch neighbours would differ by about
    the EM's stopping tolerance, far above the last bit. With the default shrinkage each pair's
    weight reads only its own table, inversion and null departure, so the weights and the shrunk
    tables must be equal too."""
    rng = np.random.default_rng(11)
    schema, codes = correlated_records(3_000, SIZES, rng)
    rr = randomize(schema, codes, mechanism, 2.0, rng)
    counts = pair_counts(rr)
    margs = marginals_from_counts(rr.mechanisms, [counts.counts(j) for j in range(counts.g)],
                                  [counts.n_present(j) for j in range(counts.g)], estimator)
    whole = estimate_pairs(rr, estimator, counts=counts, marginals=margs, shrink=shrink)
    monkeypatch.setattr(batches, "BATCH_PAIRS", 4)
    seen = []
    monkeypatch.setattr(batches, "local_map",
                        lambda fn, shared, bs: seen.append(len(bs)) or [fn(shared, b) for b in bs])
    split = estimate_pairs_batched(rr, estimator, reversed(list(whole)), counts=counts,
                                   marginals=margs, shrink=shrink)
    assert seen == [6]  # 21 pairs in 6 batches, mapped in this process
    assert list(split) == list(whole)  # same pairs, same order
    for pr, t in whole.tables.items():
        np.testing.assert_array_equal(split.tables[pr], t)
        assert split.iterations[pr] == whole.iterations[pr]
        assert split.converged[pr] == whole.converged[pr]
        assert split.n_present[pr] == whole.n_present[pr]
    assert split.shrink == whole.shrink
    assert set(whole.shrink) == (set(whole.tables) if shrink else set())


def test_batched_estimates_check_their_inputs():
    rng = np.random.default_rng(12)
    schema, codes = correlated_records(500, SIZES[:3], rng)
    rr = randomize(schema, codes, "grr", 2.0, rng)
    counts = pair_counts(rr)
    with pytest.raises(EstimationError, match="2 marginal estimates for 3 attributes"):
        estimate_pairs_batched(rr, "em", [(0, 1)], counts=counts, marginals=[None, None])
    margs = marginals_from_counts(rr.mechanisms, [counts.counts(j) for j in range(3)],
                                  [counts.n_present(j) for j in range(3)])
    empty = estimate_pairs_batched(rr, "em", [], counts=counts, marginals=margs)
    assert len(empty) == 0
    with pytest.raises(EstimationError, match="two different attributes"):
        estimate_pairs_batched(rr, "em", [(0, 7)], counts=counts, marginals=margs)
