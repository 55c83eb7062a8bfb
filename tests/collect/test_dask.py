"""Counting on a real Dask cluster (worker processes) equals counting on one machine: the integer
count tables exactly, the fitted model to 1e-9."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")

from reidrisk.collect.dask_counts import count_dask, count_graph  # noqa: E402
from reidrisk.collect.partitioned import (  # noqa: E402
    count_reports,
    fit_partitioned,
    partitions,
    write_partitioned,
)
from reidrisk.collect.pipeline import CollectPipeline  # noqa: E402
from reidrisk.collect.protocol import Protocol  # noqa: E402
from reidrisk.estimation.pairs import pair_counts  # noqa: E402
from reidrisk.schema import MISSING, Attribute, Schema  # noqa: E402

SCHEMA = Schema((
    Attribute("color", ("red", "green", "blue")),
    Attribute("size", ("S", "M", "L", "XL", "XXL", "3XL")),
    Attribute("flag", ("no", "yes")),
    Attribute("grade", tuple("abcdefghij")),
))


@pytest.fixture(scope="module")
def client():
    """Two worker processes of one thread each: the counts travel between processes (pickled)."""
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, memory_limit="1GiB")
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def _codes(n, seed):
    rng = np.random.default_rng(seed)
    color = rng.integers(0, 3, n)
    c = np.column_stack([color, (2 * color + rng.integers(0, 2, n)) % 6, color % 2,
                         (3 * color + rng.integers(0, 3, n)) % 10]).astype(np.int32)
    c[rng.random(c.shape) < 0.2] = MISSING
    return c


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", ["subset", "oue", "grr"])
def test_dask_counts_equal_single_machine_counts_exactly(tmp_path, client, mechanism):
    proto = Protocol(8.0, attributes_per_person=None, mechanism=mechanism)
    rr = proto.randomize(SCHEMA, _codes(6_000, 1), rng=2)
    write_partitioned(tmp_path, rr, proto, rows_per_partition=500)  # 12 partitions
    local = count_reports(tmp_path, chunk_rows=200, progress=False)
    on_dask = count_dask(tmp_path, client=client, chunk_rows=200, split_every=3)
    for c in (local, on_dask):
        assert c.gram.dtype == np.int64
        np.testing.assert_array_equal(c.gram, pair_counts(rr).gram)
        np.testing.assert_array_equal(c.n_pair, pair_counts(rr).n_pair)
        assert c.n == 6_000
    assert len(client.scheduler_info()["workers"]) == 2  # two worker processes


@pytest.mark.slow
def test_dask_fit_equals_single_machine_fit(tmp_path, client):
    proto = Protocol(12.0, attributes_per_person=None, mechanism="subset")
    rr = proto.randomize(SCHEMA, _codes(5_000, 3), rng=4)
    write_partitioned(tmp_path, rr, proto, rows_per_partition=700)
    pipe = CollectPipeline()
    local = fit_partitioned(tmp_path, pipe, progress=False)
    on_dask = fit_partitioned(tmp_path, pipe, client=client)
    assert local.fallback == "none"  # a model with dependence, not the uniform fallback
    for a, b in zip(local.marginals, on_dask.marginals):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-9)
    for key, t in local.pair_tables.items():
        np.testing.assert_allclose(on_dask.pair_tables[key], t, rtol=0, atol=1e-9)
    np.testing.assert_allclose(on_dask.correlation, local.correlation, rtol=0, atol=1e-9)


def test_count_graph_is_a_tree_of_the_given_fan_in(tmp_path):
    proto = Protocol(8.0, attributes_per_person=None, mechanism="grr")
    rr = proto.randomize(SCHEMA, _codes(1_000, 5), rng=6)
    write_partitioned(tmp_path, rr, proto, rows_per_partition=100)  # 10 partitions
    graph = count_graph(partitions(tmp_path), split_every=3)
    keys = set(dict(graph.__dask_graph__()))
    assert sum(k.startswith("count-partition-") for k in keys) == 10
    # 10 -> 4 -> 2 -> 1 sums: level and first input in each key's last two fields
    sums = sorted(tuple(k.split("-")[-2:]) for k in keys if k.startswith("sum-counts-"))
    assert sums == [("1", "0"), ("1", "3"), ("1", "6"), ("1", "9"), ("2", "0"), ("2", "3"),
                    ("3", "0")]
    assert count_graph(partitions(tmp_path)).key != count_graph(partitions(tmp_path)).key
    # Dask's default (threaded) scheduler without a cluster gives the same integers
    np.testing.assert_array_equal(graph.compute(scheduler="sync").gram, pair_counts(rr).gram)
    with pytest.raises(ValueError, match="split_every must be at least 2"):
        count_graph(partitions(tmp_path), split_every=1)


@pytest.mark.slow
def test_collect_fit_counts_on_a_scheduler_address(tmp_path, client):
    from click.testing import CliRunner

    from reidrisk.cli import cli
    from reidrisk.collect.model_io import load_model

    proto = Protocol(12.0, attributes_per_person=None, mechanism="grr")
    rr = proto.randomize(SCHEMA, _codes(3_000, 7), rng=8)
    write_partitioned(tmp_path / "parts", rr, proto, rows_per_partition=400)
    address = client.scheduler.address
    r = CliRunner().invoke(cli, ["collect", "fit", str(tmp_path / "parts"), "-o", str(tmp_path / "d.json"),
                                 "--scheduler", address])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(cli, ["collect", "fit", str(tmp_path / "parts"), "-o", str(tmp_path / "l.json")])
    assert r.exit_code == 0, r.output
    a, b = load_model(tmp_path / "d.json"), load_model(tmp_path / "l.json")
    np.testing.assert_allclose(a.correlation, b.correlation, rtol=0, atol=1e-9)
    r = CliRunner().invoke(cli, ["collect", "fit", str(tmp_path / "parts"), "-o", str(tmp_path / "x.json"),
                                 "--scheduler", "tcp://127.0.0.1:9"])
    assert r.exit_code == 2 and "cannot reach the Dask scheduler" in r.output, r.output


@pytest.mark.slow
def test_dask_pair_fits_spread_over_workers_equal_the_local_fit(tmp_path, client, monkeypatch):
    """With more pairs than DISTRIBUTE_PAIRS, the pair EMs and the copula's pair correlations run
    in batches on the workers (the same batch functions the local fit maps in its process). The
    thresholds are lowered so that 12 attributes (66 pairs) make 10 batches of 7; the model must
    equal the single-machine fit bit for bit (each pair's fit reads only its own cells, and the
    counts are the same integers), and the batches must have run on both worker processes."""
    from distributed import get_task_stream

    from reidrisk import batches

    monkeypatch.setattr(batches, "BATCH_PAIRS", 7)
    monkeypatch.setattr(batches, "DISTRIBUTE_PAIRS", 10)
    schema = Schema(tuple(Attribute(f"a{j}", tuple("abcd"[:2 + j % 3])) for j in range(12)))
    rng = np.random.default_rng(9)
    latent = rng.integers(0, 2, 4_000)
    codes = np.column_stack([(latent + (rng.random(4_000) < 0.2)) % (2 + j % 3)
                             for j in range(12)]).astype(np.int32)
    proto = Protocol(24.0, attributes_per_person=None, mechanism="grr")
    rr = proto.randomize(schema, codes, rng=10)
    write_partitioned(tmp_path, rr, proto, rows_per_partition=1_000)
    pipe = CollectPipeline(shrink="eb")
    local = fit_partitioned(tmp_path, pipe, progress=False)
    with get_task_stream(client) as stream:
        on_dask = fit_partitioned(tmp_path, pipe, client=client)
    ran = {}
    for task in stream.data:
        name = task["key"] if isinstance(task["key"], str) else task["key"][0]
        if name.startswith("pair-batch-"):
            ran.setdefault(name.split("-")[2], set()).add(task["worker"])
    assert set(ran) == {"estimate_pair_batch", "fit_pair_batch"}
    assert all(len(workers) == 2 for workers in ran.values()), ran
    assert local.fallback == "none"
    for a, b in zip(local.marginals, on_dask.marginals):
        np.testing.assert_array_equal(a, b)
    assert local.pair_tables.keys() == on_dask.pair_tables.keys()
    for key, t in local.pair_tables.items():
        np.testing.assert_array_equal(on_dask.pair_tables[key], t)
    assert local.report.pair_iterations == on_dask.report.pair_iterations
    np.testing.assert_array_equal(on_dask.correlation, local.correlation)
