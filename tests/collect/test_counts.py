"""reidrisk.collect.counts: counting a chunk, a partition or a whole batch at a time gives exactly
the counts of all the reports at once."""

from __future__ import annotations

import numpy as np
import pytest

from reidrisk.collect.counts import count_columns, count_partition, count_reports, sum_counts
from reidrisk.collect.partitioned import write_partitioned
from reidrisk.collect.protocol import Protocol
from reidrisk.collect.reports_io import partitions
from reidrisk.estimation.pairs import PairCounts, pair_counts
from reidrisk.mechanisms.oue import OUE
from reidrisk.mechanisms.record import RecordReports
from reidrisk.schema import MISSING, Attribute, Schema

SCHEMA = Schema((Attribute("a", ("x", "y", "z")), Attribute("b", tuple("pqrstu")),
                 Attribute("c", tuple("0123456789"))))


def _identical(a: PairCounts, b: PairCounts) -> bool:
    """Integer for integer: the Gram matrix, the pair presence counts, the layout and n."""
    return (a.gram.dtype == b.gram.dtype == np.int64 and a.n == b.n
            and all(np.array_equal(getattr(a, f), getattr(b, f))
                    for f in ("gram", "n_pair", "offsets")))


@pytest.mark.parametrize("mechanism", ["subset", "grr", "oue", "olh"])
@pytest.mark.parametrize("chunk_rows", [None, 97])
def test_chunks_and_partitions_add_up_to_the_counts_of_all_reports(tmp_path, mechanism,
                                                                     chunk_rows):
    rng = np.random.default_rng(5)
    codes = np.column_stack([rng.integers(0, f, 1_500) for f in SCHEMA.sizes]).astype(np.int32)
    codes[rng.random(codes.shape) < 0.3] = MISSING
    proto = Protocol(3.0, attributes_per_person=2, mechanism=mechanism)
    rr = proto.randomize(SCHEMA, codes, rng=1)
    write_partitioned(tmp_path, rr, proto, rows_per_partition=600)
    whole = pair_counts(rr)
    assert _identical(count_reports(tmp_path, chunk_rows=chunk_rows, progress=False), whole)
    parts = [count_partition(p, chunk_rows=chunk_rows) for p in partitions(tmp_path)]
    assert len(parts) == 3 and _identical(sum_counts(*parts), whole)


@pytest.mark.parametrize("k", [2, 7, 8, 13, 64])
def test_packed_columns_count_as_unpacked_ones(k):
    schema = Schema((Attribute("x", tuple(str(i) for i in range(k))),
                     Attribute("y", ("a", "b", "c"))))
    rng = np.random.default_rng(k)
    x = rng.integers(0, k, 5_000)
    x[rng.random(5_000) < 0.25] = MISSING
    y = rng.integers(0, 3, 5_000)
    mx, my = OUE(1.0, k), OUE(2.0, 3)
    px, py = mx.perturb_packed(x, rng=1), my.perturb_packed(y, rng=2)
    assert px.bits.shape == (5_000, -(-k // 8))
    ref = pair_counts(RecordReports(schema, (mx, my), (mx.perturb(x, rng=1), my.perturb(y, rng=2))))
    assert _identical(count_columns(schema, (mx, my), (px, py), chunk_rows=333), ref)
    assert ref.n_present(0) == int((x != MISSING).sum())


def test_sum_counts_needs_a_table():
    with pytest.raises(ValueError, match="at least one PairCounts"):
        sum_counts()
