"""Counting partitioned reports on a Dask cluster (the ``reidrisk[dask]`` extra).

The count tables of a collection are sums over reports (``reidrisk.collect.counts``), so a
cluster computes them as a map and a reduction: each worker runs ``count_partition`` (the same
function, the same ``pair_counts`` kernel as the single-machine chunked reader) on the partitions
it is given, reading them itself from the shared storage (a path every worker sees, or any fsspec
URL), and the scheduler sums the (F x F) tables in a tree of fan-in ``split_every``, so neither
the client nor any worker ever holds more than ``split_every`` tables. Only the small tables
travel; the reports stay in storage. The result is the same integers as ``count_reports`` on one
machine.

The fit (``CollectPipeline.fit_counts``) reads only the counts (O(F^2), independent of the
number of reports). Its per-pair work, the pair EMs and the copula's pair correlations, is split
into batches of pairs by ``reidrisk.batches``; ``dask_pair_map(client)`` maps those batches over
the workers (``client.map`` of the same batch function the single-machine fit maps in its own
process), when there are more than ``reidrisk.batches.DISTRIBUTE_PAIRS`` pairs.
``fit_partitioned(source, client=client)`` does both: counts and per-pair fits on the cluster.

    from distributed import Client, LocalCluster
    from reidrisk.collect.dask_counts import count_dask

    with LocalCluster(n_workers=2, threads_per_worker=1) as cluster, Client(cluster) as client:
        counts = count_dask("s3://bucket/reports/", client=client)
"""

from __future__ import annotations

import uuid

from reidrisk.collect.counts import count_partition, sum_counts
from reidrisk.collect.reports_io import Partition, partitions
from reidrisk.estimation.pairs import PairCounts

SPLIT_EVERY = 8
"""Fan-in of the reduction tree: tables summed per task."""


def _require_dask():
    try:
        import dask
    except ImportError:  # pragma: no cover - exercised only without the extra
        raise ImportError("counting on Dask needs the dask extra: pip install 'reidrisk[dask]'"
                          ) from None
    return dask


def count_graph(parts: list[Partition], *, chunk_rows: int | None = None,
                split_every: int = SPLIT_EVERY):
    """The Dask graph (one ``dask.delayed``) of the counts of ``parts``: one ``count_partition``
    task per partition, then ``sum_counts`` tasks of ``split_every`` inputs each, level by level,
    down to one table.

    Parameters
    ----------
    parts : list of Partition
        The partitions (``reidrisk.collect.partitioned.partitions``).
    chunk_rows : int, optional
        Rows per chunk within a partition (default ``default_chunk_rows``).
    split_every : int
        Inputs of one summing task.

    Returns
    -------
    dask.delayed.Delayed
        The graph's last sum: computing it gives the ``PairCounts`` of all ``parts``.
    """
    dask = _require_dask()
    if not parts:
        raise ValueError("no partitions to count")
    if int(split_every) < 2:
        raise ValueError(f"split_every must be at least 2, got {split_every}")
    # keys unique to this graph: files may change between two runs over the same paths
    run = uuid.uuid4().hex[:12]
    count = dask.delayed(count_partition, pure=False)
    add = dask.delayed(sum_counts, pure=False)
    level = [count(p, chunk_rows=chunk_rows, dask_key_name=f"count-partition-{run}-{i}")
             for i, p in enumerate(parts)]
    depth = 0
    while len(level) > 1:
        depth += 1
        level = [add(*level[i:i + split_every], dask_key_name=f"sum-counts-{run}-{depth}-{i}")
                 for i in range(0, len(level), split_every)]
    return level[0]


def dask_pair_map(client):
    """A ``reidrisk.batches`` mapper running the batches of per-pair work on the workers of
    ``client``: the inputs every batch shares are scattered to each worker once, then one task per
    batch (``client.map``, results gathered in order). Use it as
    ``with reidrisk.batches.pair_map(dask_pair_map(client)): pipeline.fit_counts(...)``.

    Parameters
    ----------
    client : distributed.Client
        The cluster's client.

    Returns
    -------
    callable
        ``mapper(fn, shared, batches) -> list`` for ``reidrisk.batches.pair_map``.
    """
    def mapper(fn, shared, batches):
        # broadcast: every worker gets the shared inputs (the counts, the marginals) once
        future = client.scatter(shared, broadcast=True, hash=False)
        run = uuid.uuid4().hex[:12]
        futures = client.map(fn, [future] * len(batches), list(batches), pure=False,
                             key=[f"pair-batch-{fn.__name__}-{run}-{i}"
                                  for i in range(len(batches))])
        try:
            return client.gather(futures)
        finally:
            client.cancel([*futures, future])

    return mapper


def count_dask(source, client=None, *, chunk_rows: int | None = None,
               storage_options: dict | None = None, split_every: int = SPLIT_EVERY) -> PairCounts:
    """The count tables of every report of ``source`` computed on Dask: the partitions are
    counted on the workers (``count_partition``) and summed by the scheduler's tree reduction
    (``count_graph``). Equal, integer for integer, to ``count_reports(source)``.

    Parameters
    ----------
    source : str, Path or list of Partition
        A directory or URL every worker can read, or the list of ``partitions(...)``.
    client : distributed.Client, optional
        Default: the current one, else Dask's default scheduler.
    chunk_rows, split_every
        As in ``count_graph``.
    storage_options : dict, optional
        Passed to fsspec for a URL.

    Returns
    -------
    PairCounts
        The count tables of every report of ``source``.
    """
    _require_dask()
    parts = partitions(source, storage_options)
    graph = count_graph(parts, chunk_rows=chunk_rows, split_every=split_every)
    if client is not None:
        return client.compute(graph).result()
    return graph.compute()


__all__ = ["SPLIT_EVERY", "count_dask", "count_graph", "dask_pair_map"]
