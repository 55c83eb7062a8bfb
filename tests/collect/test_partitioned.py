"""Partitioned Parquet reports: lossless layout, chunked counting equal to counting at once, URLs,
and the errors at the boundary."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from reidrisk.collect.partitioned import (
    PartitionWriter,
    count_reports,
    describe,
    fit_partitioned,
    iter_reports,
    partitions,
    simulate_partitioned,
    write_partitioned,
)
from reidrisk.collect.pipeline import CollectPipeline
from reidrisk.collect.protocol import Protocol
from reidrisk.collect.reports_io import ReportsFileError, read_reports, write_reports
from reidrisk.estimation import EstimationError
from reidrisk.estimation.pairs import PairCounts, pair_counts
from reidrisk.schema import MISSING, Attribute, Schema

SCHEMA = Schema((
    Attribute("color", ("red", "green", "blue")),
    Attribute("size", ("S", "M", "L", "XL", "XXL", "3XL")),
    Attribute("flag", ("no", "yes")),
    Attribute("grade", tuple("abcdefghij")),  # 10 bits: a packed report has padding bits
))
MECHANISMS = ["subset", "grr", "rappor", "oue", "olh", "negative", "laplace_index"]


@pytest.fixture(scope="module")
def codes():
    rng = np.random.default_rng(0)
    c = np.column_stack([rng.integers(0, f, 2_000) for f in SCHEMA.sizes]).astype(np.int32)
    c[rng.random(c.shape) < 0.3] = MISSING
    return c


def _collect(codes, mechanism, k=3):
    proto = Protocol(3.0, attributes_per_person=k, mechanism=mechanism)
    return proto, proto.randomize(SCHEMA, codes, rng=1)


def assert_counts_equal(a: PairCounts, b: PairCounts) -> None:
    assert a.gram.dtype == b.gram.dtype == np.int64
    np.testing.assert_array_equal(a.gram, b.gram)
    np.testing.assert_array_equal(a.n_pair, b.n_pair)
    np.testing.assert_array_equal(a.offsets, b.offsets)
    assert a.n == b.n


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_partitions_round_trip_losslessly_in_chunks(tmp_path, codes, mechanism):
    proto, rr = _collect(codes, mechanism)
    files = write_partitioned(tmp_path / "parts", rr, proto, rows_per_partition=700)
    assert [p.rows for p in partitions(tmp_path / "parts")] == [700, 700, 600]
    assert [p.url for p in partitions(tmp_path / "parts")] == files
    chunks = list(iter_reports(tmp_path / "parts", chunk_rows=256))
    assert [c.n for c in chunks] == [256, 256, 188] * 2 + [256, 256, 88]
    for j, rep in enumerate(rr.reports):
        back = np.concatenate([np.asarray(c.reports[j]) for c in chunks])
        np.testing.assert_array_equal(back, np.asarray(rep))
        assert back.dtype == np.asarray(rep).dtype
    # each partition describes itself: the one-file reader reads it too
    one = read_reports(files[1])
    assert one.protocol == proto and one.n == 700
    for a, b in zip(one.reports.reports, rr.reports):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b)[700:1400])


def test_text_layout_parquet_files_are_read_too(tmp_path, codes):
    """A directory of files written by write_reports (text cells) is a partitioned source."""
    proto, rr = _collect(codes, "subset")
    write_reports(tmp_path / "a.parquet", rr.take(np.arange(1_000)), proto)
    write_reports(tmp_path / "b.parquet", rr.take(np.arange(1_000, 2_000)), proto)
    assert_counts_equal(count_reports(tmp_path, chunk_rows=300, progress=False), pair_counts(rr))


def test_counts_add_exactly_and_refuse_other_domains(codes):
    proto, rr = _collect(codes, "grr")
    a, b = pair_counts(rr.take(np.arange(500))), pair_counts(rr.take(np.arange(500, 2_000)))
    assert_counts_equal(a + b, pair_counts(rr))
    assert_counts_equal(PairCounts.zeros(SCHEMA.sizes) + a, a)
    with pytest.raises(EstimationError, match=r"domains \[3, 6, 2, 10\] and \[3, 6\]"):
        a + PairCounts.zeros([3, 6])


def test_fit_from_partitions_equals_fit_of_the_file(tmp_path):
    rng = np.random.default_rng(5)
    color = rng.integers(0, 3, 3_000)
    dependent = np.column_stack([color, (2 * color + rng.integers(0, 2, 3_000)) % 6,
                                 color % 2, (3 * color + rng.integers(0, 3, 3_000)) % 10])
    proto = Protocol(12.0, attributes_per_person=None, mechanism="subset")
    rr = proto.randomize(SCHEMA, dependent.astype(np.int32), rng=1)
    write_partitioned(tmp_path / "p", rr, proto, rows_per_partition=500)
    write_reports(tmp_path / "all.parquet", rr, proto)
    pipe = CollectPipeline()
    ours = fit_partitioned(tmp_path / "p", pipe, chunk_rows=128, progress=False)
    ref = pipe.fit(read_reports(tmp_path / "all.parquet"))
    for a, b in zip(ours.marginals, ref.marginals):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours.correlation, ref.correlation, rtol=0, atol=1e-12)
    assert ours.report.n == ref.report.n == 3_000
    assert ours.fallback == ref.fallback == "none" and abs(ours.correlation[0, 1]) > 0.5


@pytest.mark.parametrize("url", ["memory://reidrisk-test/reports", "file://{tmp}/reports"])
def test_fsspec_urls(tmp_path, codes, url):
    pytest.importorskip("fsspec")
    url = url.format(tmp=tmp_path)
    proto, rr = _collect(codes, "oue")
    files = write_partitioned(url, rr, proto, rows_per_partition=800)
    assert all(f.startswith(url.split("://")[0] + "://") for f in files)
    parts = partitions(url)
    assert [p.url for p in parts] == files and [p.rows for p in parts] == [800, 800, 400]
    assert_counts_equal(count_reports(url, chunk_rows=333, progress=False), pair_counts(rr))
    if url.startswith("memory://"):
        import fsspec

        fsspec.filesystem("memory").rm("/reidrisk-test", recursive=True)


def test_simulated_unary_partitions_are_packed_on_disk(tmp_path):
    schema = Schema((Attribute("v", tuple(str(i) for i in range(64))),))
    files = simulate_partitioned(tmp_path, schema, Protocol(1.0, None, "oue"), 3_000,
                                 rows_per_partition=1_000, missing_rate=0.2, rng=3)
    col = pq.read_table(files[0]).column("v")
    assert col.type == pa.binary(8)  # 64 bits in 8 bytes a report
    assert 0.15 < col.null_count / 1_000 < 0.25
    counts = count_reports(tmp_path, progress=False)
    assert counts.n == 3_000 and counts.n_present(0) == 3_000 - sum(
        pq.read_table(f).column("v").null_count for f in files)


# ---- errors ------------------------------------------------------------------------------------
def test_partitions_of_another_collection_are_refused(tmp_path, codes):
    proto, rr = _collect(codes, "grr")
    write_partitioned(tmp_path, rr, proto, rows_per_partition=1_000)
    other = Protocol(2.0, attributes_per_person=3, mechanism="grr")
    mechs = other.mechanisms(SCHEMA)
    PartitionWriter(tmp_path, SCHEMA, mechs, other, start=7).write(
        [m.perturb(np.full(10, MISSING), rng=0) for m in mechs])
    with pytest.raises(ReportsFileError, match=r"part-00007.parquet.*another schema, protocol"):
        describe(tmp_path)
    with pytest.raises(ReportsFileError, match="another schema, protocol"):
        count_reports(tmp_path, progress=False)


def test_missing_and_empty_sources_are_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="do not exist"):
        partitions(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ReportsFileError, match="holds no Parquet files"):
        partitions(tmp_path / "empty")
    (tmp_path / "empty" / "notes.parquet").write_text("not Parquet")
    with pytest.raises(ReportsFileError, match="notes.parquet' is not a readable Parquet file"):
        partitions(tmp_path / "empty")
    pd.DataFrame({"a": [1, 2]}).to_parquet(tmp_path / "raw.parquet")
    with pytest.raises(ReportsFileError, match="carries no reidrisk reports metadata"):
        count_reports(tmp_path / "raw.parquet", progress=False)


def _rewrite_column(path, name, array):
    t = pq.read_table(path)
    meta = t.schema.metadata
    t = t.set_column(t.schema.get_field_index(name), name, array).replace_schema_metadata(meta)
    pq.write_table(t, path)


def test_bad_packed_and_native_cells_name_column_and_row(tmp_path, codes):
    proto, rr = _collect(codes, "oue")
    (f,) = write_partitioned(tmp_path / "oue", rr, proto, rows_per_partition=2_000)
    cells = pq.read_table(f).column("grade").to_pylist()
    row = next(i for i, c in enumerate(cells) if c is not None)
    cells[row] = cells[row] + b"\x00"
    _rewrite_column(f, "grade", pa.array(cells, type=pa.binary()))
    with pytest.raises(ReportsFileError, match=rf"column 'grade', row {row}: a packed report must "
                                               r"hold 2 bytes"):
        count_reports(tmp_path / "oue", progress=False)
    cells[row] = b"\xff\xff"  # bits 10..15 are padding
    _rewrite_column(f, "grade", pa.array(cells, type=pa.binary(2)))
    with pytest.raises(ReportsFileError, match=rf"row {row}: the packed report sets a bit past k"):
        read_reports(f)

    proto, rr = _collect(codes, "grr")
    (f,) = write_partitioned(tmp_path / "grr", rr, proto, rows_per_partition=2_000)
    vals = pq.read_table(f).column("size").to_pylist()
    row = next(i for i, c in enumerate(vals) if c is not None and i >= 300)
    vals[row] = 6  # outside 0..5
    _rewrite_column(f, "size", pa.array(vals, type=pa.int64()))
    with pytest.raises(ReportsFileError, match="column 'size'"):
        count_reports(tmp_path / "grr", progress=False)
    chunk = 256 * (row // 256)  # a later chunk names where it starts in the partition
    with pytest.raises(ReportsFileError, match=rf"report\[{row - chunk}\] = 6.*chunk starting "
                                               rf"at row {chunk} of"):
        count_reports(tmp_path / "grr", chunk_rows=256, progress=False)


def test_truncated_partition_is_refused(tmp_path, codes):
    proto, rr = _collect(codes, "grr")
    (f,) = write_partitioned(tmp_path, rr, proto, rows_per_partition=2_000)
    t = pq.read_table(f)
    pq.write_table(t.slice(0, 1_500).replace_schema_metadata(t.schema.metadata), f)
    with pytest.raises(ReportsFileError, match="1500 rows but its metadata declares n = 2000"):
        count_reports(tmp_path, progress=False)


def test_corrupt_partition_is_named(tmp_path, codes):
    proto, rr = _collect(codes, "grr")
    files = write_partitioned(tmp_path, rr, proto, rows_per_partition=500)
    assert len(files) >= 2
    bad = sorted(files)[1]
    raw = bytearray(open(bad, "rb").read())
    raw[8:400] = b"\xff" * 392  # the first data pages; the footer stays readable
    open(bad, "wb").write(bytes(raw))
    with pytest.raises(ReportsFileError, match=r"part-00001\.parquet' is corrupt: the rows from "
                                               r"row 0 \(counted from 0\) cannot be read"):
        count_reports(tmp_path, progress=False)


def test_partition_writer_refuses_reports_breaking_the_protocol(tmp_path, codes):
    proto = Protocol(3.0, attributes_per_person=1, mechanism="grr")
    mechs = proto.mechanisms(SCHEMA)
    with pytest.raises(Exception, match="more than the protocol's k = 1"):
        PartitionWriter(tmp_path, SCHEMA, mechs, proto).write([np.zeros(3, np.int64)] * 4)
    assert not list(tmp_path.glob("*.parquet"))



# ---- command line ------------------------------------------------------------------------------
def test_collect_fit_reads_a_directory_of_partitions(tmp_path):
    from click.testing import CliRunner

    from reidrisk.cli import cli
    from reidrisk.collect.model_io import load_model

    rng = np.random.default_rng(8)
    color = rng.integers(0, 3, 2_000)
    codes = np.column_stack([color, (2 * color) % 6, color % 2, 3 * color]).astype(np.int32)
    proto = Protocol(12.0, attributes_per_person=None, mechanism="grr")
    rr = proto.randomize(SCHEMA, codes, rng=9)
    write_partitioned(tmp_path / "parts", rr, proto, rows_per_partition=600)
    write_reports(tmp_path / "all.parquet", rr, proto)
    r = CliRunner().invoke(cli, ["collect", "fit", str(tmp_path / "parts"), "-o", str(tmp_path / "p.json"),
                                 "--chunk-rows", "250"])
    assert r.exit_code == 0, r.output
    assert "from 2000 reports" in r.output
    r = CliRunner().invoke(cli, ["collect", "fit", str(tmp_path / "all.parquet"),
                                 str(tmp_path / "f.json")])
    assert r.exit_code == 0, r.output
    a, b = load_model(tmp_path / "p.json"), load_model(tmp_path / "f.json")
    np.testing.assert_allclose(a.correlation, b.correlation, rtol=0, atol=1e-12)
    for x, y in zip(a.marginals, b.marginals):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-12)
    # user errors: one line, exit code 2, no traceback
    for args, msg in [
        ([str(tmp_path / "parts"), str(tmp_path / "m.json"), "--exact-em", "all"], "drop --exact-em"),
        ([str(tmp_path / "all.parquet"), str(tmp_path / "m.json"), "--chunk-rows", "9"],
         "apply to partitioned reports"),
        ([str(tmp_path / "nope"), str(tmp_path / "m.json")], "does not exist"),
    ]:
        r = CliRunner().invoke(cli, ["collect", "fit", *args])
        assert r.exit_code == 2 and msg in r.output and "Traceback" not in r.output, r.output
