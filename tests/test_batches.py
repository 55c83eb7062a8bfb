"""Per-pair work split into batches and mapped here or by an installed mapper."""

from __future__ import annotations

import pytest

from reidrisk import batches
from reidrisk.batches import local_map, map_pairs, pair_map, split


def test_split_covers_every_item_once_in_order():
    parts = split(10, 4)
    assert parts == [slice(0, 4), slice(4, 8), slice(8, 10)]
    assert split(0, 4) == []
    assert [i for s in split(4_001) for i in range(4_001)[s]] == list(range(4_001))
    assert len(split(4_001)) == 3  # BATCH_PAIRS = 2,000
    with pytest.raises(ValueError, match="at least one pair"):
        split(3, 0)


def _add(shared, b):
    return shared + b


def test_a_mapper_runs_only_above_the_threshold_and_inside_its_block():
    calls = []

    def mapper(fn, shared, bs):
        calls.append(len(bs))
        return [fn(shared, b) for b in bs]

    few, many = batches.DISTRIBUTE_PAIRS, batches.DISTRIBUTE_PAIRS + 1
    assert map_pairs(_add, 10, [1, 2], many) == [11, 12]  # no block: here
    with pair_map(mapper):
        assert map_pairs(_add, 10, [1, 2], few) == [11, 12]  # too few pairs: here
        assert map_pairs(_add, 10, [1], many) == [11]  # one batch: here
        assert map_pairs(_add, 10, [1, 2, 3], many) == [11, 12, 13]
        with pair_map(None):  # a nested block without a mapper: here
            assert map_pairs(_add, 10, [1, 2], many) == [11, 12]
    assert calls == [3]
    assert map_pairs(_add, 10, [1, 2], many) == [11, 12]  # the block's end restores
    assert calls == [3]
    assert local_map(_add, 1, [1, 2]) == [2, 3]


def test_a_mapper_that_loses_batches_is_refused():
    with pair_map(lambda fn, shared, bs: [fn(shared, bs[0])]), \
            pytest.raises(RuntimeError, match="1 results for 2 batches"):
        map_pairs(_add, 0, [1, 2], batches.DISTRIBUTE_PAIRS + 1)
