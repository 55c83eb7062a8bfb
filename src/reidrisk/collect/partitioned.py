"""Reports in partitioned Parquet: written, counted a chunk at a time, and fitted.

A batch too large for memory is stored as a directory of Parquet files (*partitions*, each
describing itself with the reports metadata of ``reidrisk.collect.reports_io``). The model is fitted
from its count tables alone (``CollectPipeline.fit_counts``; paper 004 eq. 5, 12-13), which are
sums over reports: counted chunk by chunk on this machine (``reidrisk.collect.counts``) or on a Dask
cluster (``reidrisk.collect.dask_counts``). Memory is bounded by one chunk plus the count tables
(F x F int64, F the total number of categories), whatever the number of reports.

The layers, bottom up: reading partitions (``reports_io``: ``partitions``, ``iter_reports``...),
counting them (``counts``, ``dask_counts``), fitting (``pipeline``), and this module on top. It
re-exports the names of the two lower ones, so its API stays as it was:

* ``partitions(source, storage_options=None) -> list[Partition]``: the files of a directory (or
  one file), local or any fsspec URL (``s3://bucket/reports/``, ``gs://``, ``memory://``...);
* ``read_partition_header(partition) -> ReportsHeader``: schema, protocol, mechanisms of a file;
* ``iter_reports(source, chunk_rows=None) -> Iterator[RecordReports]``: decoded, validated chunks;
* ``count_partition(partition, chunk_rows=None) -> PairCounts``;
* ``count_reports(source, chunk_rows=None, progress=True) -> PairCounts``: all partitions;
* ``fit_partitioned(source, pipeline=None, client=None) -> CollectModel``;
* ``write_partitioned(directory, reports, protocol, rows_per_partition)`` and
  ``PartitionWriter`` (one partition per ``write``, for batches produced a chunk at a time).

Files are decoded by the one reader of reports cells (``reports_io.decode_frame``); partitions
written here use its compact layout (``reports_io.write_partition``: numbers, and unary reports
bit-packed), and text-layout Parquet files written by ``write_reports`` are read as well.
"""

from __future__ import annotations

import numpy as np

from reidrisk.batches import pair_map
from reidrisk.collect.counts import (  # re-exported: counting partitions
    count_columns,
    count_partition,
    count_reports,
    sum_counts,
)
from reidrisk.collect.dask_counts import count_dask, dask_pair_map
from reidrisk.collect.model_io import CollectModel
from reidrisk.collect.pipeline import CollectPipeline
from reidrisk.collect.protocol import Protocol
from reidrisk.collect.reports_io import (  # re-exported: reading partitions
    CHUNK_CELLS,
    CollectedReports,
    Partition,
    ReportsFileError,
    default_chunk_rows,
    describe,
    filesystem,
    is_url,
    iter_partition,
    iter_reports,
    partitions,
    read_partition_header,
    write_partition,
)
from reidrisk.mechanisms.base import as_generator
from reidrisk.mechanisms.oue import UnaryEncoding
from reidrisk.mechanisms.record import RecordReports
from reidrisk.schema import MISSING, Schema


def fit_partitioned(source, pipeline: CollectPipeline | None = None, *,
                    chunk_rows: int | None = None, storage_options: dict | None = None,
                    client=None, progress: bool = True) -> CollectModel:
    """Fit the collection model from partitioned reports.

    First the counts (on this machine by ``count_reports``, or on the Dask cluster of ``client``
    by ``dask_counts.count_dask``), then ``pipeline.fit_counts``. The fit reads only the count
    tables (O(F^2) memory), so it does not grow with the number of reports; with a ``client``,
    its per-pair work (pair EMs, copula pair correlations) runs in batches on the workers when
    there are more than ``reidrisk.batches.DISTRIBUTE_PAIRS`` pairs
    (``dask_counts.dask_pair_map``).

    Parameters
    ----------
    source : str, Path or list
        A directory, one file, or a list of either (or of ``Partition``); local or an fsspec URL.
    pipeline : CollectPipeline, optional
        The fit's settings (default ``CollectPipeline()``).
    chunk_rows : int, optional
        Rows per chunk (default ``default_chunk_rows`` of the schema's domain sizes).
    storage_options : dict, optional
        Passed to fsspec (credentials, endpoints) for URLs.
    client : dask.distributed.Client, optional
        Count on this Dask cluster instead of on this machine.
    progress : bool
        Show the progress bar of the local count (not used with ``client``).

    Returns
    -------
    CollectModel
        The fitted collection model.
    """

    pipeline = CollectPipeline() if pipeline is None else pipeline
    parts = partitions(source, storage_options)
    header = describe(parts)
    mapper = None
    if client is not None:
        counts = count_dask(parts, client=client, chunk_rows=chunk_rows)
        mapper = dask_pair_map(client)
    else:
        counts = count_reports(parts, chunk_rows=chunk_rows, progress=progress)
    with pair_map(mapper):
        return pipeline.fit_counts(counts, header.schema, header.mechanisms, header.protocol)


# ---------------------------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------------------------
class PartitionWriter:
    """Writes a collection as numbered Parquet partitions, one per ``write(columns)``.

    The partitions are ``part-00000.parquet``, ``part-00001.parquet``... in ``directory``; each
    call writes one report array per attribute, or a ``PackedBits`` for unary encodings (see
    ``reports_io.write_partition``). For batches produced a chunk at a time with bounded memory.
    The paths or URLs written so far are in ``written``.

    Parameters
    ----------
    directory : str or Path
        The target folder, local or an fsspec URL; created if absent.
    schema : Schema
        The attributes of the reports.
    mechanisms : sequence of Mechanism
        One per attribute, in schema order (stored in each partition's metadata).
    protocol : Protocol
        The protocol the reports follow (stored in each partition's metadata).
    storage_options : dict, optional
        Passed to fsspec (credentials, endpoints) for a URL.
    start : int
        Number of the first partition written (to append to an existing collection).
    """

    def __init__(self, directory, schema: Schema, mechanisms, protocol: Protocol, *,
                 storage_options: dict | None = None, start: int = 0) -> None:
        self.directory = str(directory)
        self.schema, self.mechanisms, self.protocol = schema, tuple(mechanisms), protocol
        self._fs, self._root = filesystem(self.directory, storage_options)
        self._fs.create_dir(self._root, recursive=True)
        self._local = not is_url(self.directory)
        self.index = int(start)
        self.written: list[str] = []

    def write(self, columns) -> str:
        """Write the next partition.

        Parameters
        ----------
        columns : sequence of numpy.ndarray or PackedBits
            One report array per attribute (or a ``PackedBits`` for a unary encoding), in schema
            order, as in ``reports_io.write_partition``.

        Returns
        -------
        str
            The path or URL of the partition written.
        """
        name = f"part-{self.index:05d}.parquet"
        self.index += 1
        path = f"{self._root.rstrip('/')}/{name}"
        write_partition(path, self.schema, self.mechanisms, columns, self.protocol,
                        filesystem=None if self._local else self._fs)
        url = path if self._local else f"{self.directory.rstrip('/')}/{name}"
        self.written.append(url)
        return url

    def __enter__(self) -> PartitionWriter:
        return self

    def __exit__(self, *exc) -> None:
        return None


def write_partitioned(directory, reports: RecordReports | CollectedReports,
                      protocol: Protocol | None = None, *, rows_per_partition: int = 1_000_000,
                      storage_options: dict | None = None) -> list[str]:
    """Write ``reports`` as partitions of at most ``rows_per_partition`` rows in ``directory``.

    Written by a ``PartitionWriter``; an empty collection still gets one (empty) partition.

    Parameters
    ----------
    directory : str or Path
        The target folder, local or an fsspec URL; created if absent.
    reports : RecordReports or CollectedReports
        The reports; a ``CollectedReports`` brings its protocol.
    protocol : Protocol, optional
        The protocol the reports follow; required for ``RecordReports``, and overrides the one
        of a ``CollectedReports``.
    rows_per_partition : int
        Largest number of rows of one partition (at least 1).
    storage_options : dict, optional
        Passed to fsspec (credentials, endpoints) for URLs.

    Returns
    -------
    list of str
        The partitions' paths or URLs, in order.
    """
    if isinstance(reports, CollectedReports):
        protocol = reports.protocol if protocol is None else protocol
        reports = reports.reports
    if protocol is None:
        raise ReportsFileError("write_partitioned needs the protocol the reports follow")
    if int(rows_per_partition) < 1:
        raise ReportsFileError(f"rows_per_partition must be at least 1, got {rows_per_partition}")
    w = PartitionWriter(directory, reports.schema, reports.mechanisms, protocol,
                        storage_options=storage_options)
    for s in range(0, max(reports.n, 1), int(rows_per_partition)):
        w.write([np.asarray(r)[s:s + int(rows_per_partition)] for r in reports.reports])
    return w.written


def simulate_partitioned(directory, schema: Schema, protocol: Protocol, n: int, *,
                         rows_per_partition: int = 1_000_000, missing_rate: float = 0.0,
                         rng=None, storage_options: dict | None = None) -> list[str]:
    """A simulated collection of ``n`` people written as partitions, for tests and benchmarks.

    Per partition, uniform codes with MCAR ``missing_rate`` randomized as ``protocol.randomize``
    does, except that unary encodings (OUE, RAPPOR) draw their reports packed
    (``perturb_packed``), so memory is one partition's packed reports, never n x k bits.

    Parameters
    ----------
    directory : str or Path
        The target folder, local or an fsspec URL; created if absent.
    schema : Schema
        The attributes.
    protocol : Protocol
        The collection protocol.
    n : int
        Number of people.
    rows_per_partition : int
        Largest number of rows of one partition.
    missing_rate : float
        MCAR probability that a value is missing.
    rng : numpy.random.Generator or int, optional
        Generator or seed (``None``: a fresh cryptographic generator).
    storage_options : dict, optional
        Passed to fsspec (credentials, endpoints) for URLs.

    Returns
    -------
    list of str
        The partitions' paths or URLs, in order.
    """

    rng = as_generator(rng)
    mechs = protocol.mechanisms(schema)
    rows = int(rows_per_partition)
    w = PartitionWriter(directory, schema, mechs, protocol, storage_options=storage_options)
    for s in range(0, max(int(n), 1), rows):
        m = min(rows, int(n) - s)
        codes = np.column_stack([rng.integers(0, f, m) for f in schema.sizes]).astype(np.int32)
        if missing_rate > 0:
            codes[rng.random(codes.shape) < missing_rate] = MISSING
        sent = np.where(protocol.select(codes != MISSING, rng), codes, MISSING).astype(np.int32)
        del codes
        w.write([mech.perturb_packed(sent[:, j], rng) if isinstance(mech, UnaryEncoding)
                 else mech.perturb(sent[:, j], rng) for j, mech in enumerate(mechs)])
    return w.written


__all__ = [
    "CHUNK_CELLS", "Partition", "PartitionWriter", "count_partition", "count_reports",
    "count_columns", "default_chunk_rows", "describe", "filesystem", "fit_partitioned",
    "iter_partition", "iter_reports", "partitions", "read_partition_header",
    "simulate_partitioned", "sum_counts", "write_partitioned",
]
