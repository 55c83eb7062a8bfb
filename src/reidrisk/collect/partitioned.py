"""Reports in partitioned Parquet: counted a chunk at a time, on one machine or on Dask.

Every estimator of ``reidrisk.collect`` reads the reports only through their count tables
(``reidrisk.estimation.pairs.PairCounts``: the Gram matrix ``B^T B`` of report memberships, the
presence Gram ``P^T P`` and n; paper 004 eq. 5, 12-13). Each is a sum over reports, so the counts of
a batch are the sums of the counts of its parts, exactly (integers). A batch too large for memory is
therefore stored as a directory of Parquet files (*partitions*, each describing itself with the
reports metadata of ``reidrisk.collect.reports_io``), read one row group chunk at a time,
counted chunk by chunk with ``pair_counts`` and the counts summed; the model is then fitted from the
counts alone (``CollectPipeline.fit_counts``). Memory is bounded by one chunk plus the count tables
(F x F int64, F the total number of categories), whatever the number of reports.

The same ``count_partition`` is the unit of work on a cluster: ``reidrisk.collect.dask_counts``
maps it over the partitions on Dask workers and sums the tables by a tree reduction.

API (stable):

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

import contextlib
import functools
import json
import operator
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from reidrisk.batches import pair_map
from reidrisk.collect.pipeline import CollectPipeline
from reidrisk.collect.reports_io import (
    PARQUET_KEY,
    PARTITION_ROW_GROUP,
    CollectedReports,
    ReportsFileError,
    ReportsHeader,
    _parse_meta,
    decode_frame,
    read_header,
    write_partition,
)
from reidrisk.estimation.pairs import PairCounts, pair_counts
from reidrisk.mechanisms.base import as_generator
from reidrisk.mechanisms.oue import PackedBits, UnaryEncoding
from reidrisk.mechanisms.record import RecordReports
from reidrisk.schema import MISSING

if TYPE_CHECKING:  # pragma: no cover
    from reidrisk.collect.pipeline import CollectModel, CollectPipeline
    from reidrisk.collect.protocol import Protocol
    from reidrisk.schema import Schema

CHUNK_CELLS = 1 << 22
"""Default chunk size in report-matrix cells (rows x total categories F): a chunk's float32
support matrix is then at most 16 MiB, so the reader's memory does not grow with n."""

_SAME_KEYS = ("schema", "protocol", "attributes")


def default_chunk_rows(sizes: Iterable[int]) -> int:
    """Rows per chunk for attributes of domain sizes ``sizes``.

    ``CHUNK_CELLS / F``, between 1,024 and 65,536 (one Parquet row group of ``write_partition``).

    Parameters
    ----------
    sizes : iterable of int
        The attributes' domain sizes (F their sum).

    Returns
    -------
    int
        Rows per chunk: ``CHUNK_CELLS // F`` clipped to [1024, ``PARTITION_ROW_GROUP``].
    """
    F = max(1, int(sum(int(f) for f in sizes)))
    return int(min(PARTITION_ROW_GROUP, max(1024, CHUNK_CELLS // F)))


# ---------------------------------------------------------------------------------------------
# where the partitions are
# ---------------------------------------------------------------------------------------------
def _is_url(source) -> bool:
    return isinstance(source, str) and "://" in source


def filesystem(source, storage_options: dict | None = None):
    """``(pyarrow filesystem, path)`` of a local path or an fsspec URL.

    Parameters
    ----------
    source : str or Path
        A local path or an fsspec URL (fsspec resolves it: any protocol it knows).
    storage_options : dict, optional
        Passed to fsspec, such as credentials or endpoints.

    Returns
    -------
    tuple
        ``(pyarrow.fs.FileSystem, str)``: the filesystem and the path inside it.
    """
    import pyarrow.fs as pafs

    if _is_url(source):
        try:
            import fsspec
        except ImportError:  # pragma: no cover - fsspec comes with dask and pandas' io extras
            raise ReportsFileError(
                f"reading {source!r} needs fsspec: pip install fsspec (or reidrisk[dask])") from None
        fs, path = fsspec.core.url_to_fs(source, **(storage_options or {}))
        return pafs.PyFileSystem(pafs.FSSpecHandler(fs)), path
    return pafs.LocalFileSystem(), str(Path(source).expanduser().resolve())


@dataclass(frozen=True)
class Partition:
    """One Parquet file of reports, small and picklable: what is sent to a worker.

    Parameters
    ----------
    url : str
        Local path or fsspec URL of the file.
    rows : int
        Number of reports in it, from its Parquet footer.
    storage_options : dict, optional
        Passed to fsspec for the URL (credentials, endpoints); not compared by ``==``.
    """

    url: str
    rows: int
    storage_options: dict | None = field(default=None, compare=False)

    @property
    def name(self) -> str:
        """The file name, the last component of ``url``."""
        return self.url.rstrip("/").rsplit("/", 1)[-1]


def _join(source: str, path: str, root: str) -> str:
    """The URL of ``path`` (inside the filesystem of ``source``, whose own path is ``root``)."""
    if not _is_url(source):
        return path
    return source.rstrip("/") + path[len(root.rstrip("/")):]


def partitions(source, storage_options: dict | None = None) -> list[Partition]:
    """The partitions of ``source``, sorted by path so that every run sees the same order.

    A directory is searched recursively; files and folders whose name starts with ``.`` or ``_``
    are skipped, as by ``pyarrow.dataset``.

    Parameters
    ----------
    source : str, Path or list
        A directory, one file, or a list of either (or of ``Partition``); local or an fsspec URL.
    storage_options : dict, optional
        Passed to fsspec (credentials, endpoints) for URLs.

    Returns
    -------
    list of Partition
        The partitions, sorted by path.
    """
    import pyarrow.fs as pafs

    if isinstance(source, Partition):
        return [source]
    if isinstance(source, (list, tuple)):
        return [p for s in source for p in partitions(s, storage_options)]
    source = str(source)
    fs, root = filesystem(source, storage_options)
    info = fs.get_file_info(root)
    if info.type == pafs.FileType.NotFound:
        raise FileNotFoundError(f"reports {source!r} do not exist; check the path or URL")
    if info.type == pafs.FileType.File:
        files = [root]
    else:
        base = root.rstrip("/")
        files = sorted(
            i.path for i in fs.get_file_info(pafs.FileSelector(root, recursive=True))
            if i.type == pafs.FileType.File and not any(
                part.startswith((".", "_")) for part in i.path[len(base):].split("/")))
        if not files:
            raise ReportsFileError(f"{source!r} holds no Parquet files of reports")
    out = []
    for f in files:
        url = source if info.type == pafs.FileType.File else _join(source, f, root)
        out.append(Partition(url, _footer(fs, f, url).num_rows, storage_options))
    return out


def _footer(fs, path: str, url: str):
    import pyarrow.parquet as pq

    try:
        with fs.open_input_file(path) as fh:
            return pq.ParquetFile(fh).metadata
    except Exception as exc:  # noqa: BLE001 - any unreadable file: name it
        raise ReportsFileError(f"{url!r} is not a readable Parquet file: {exc}") from None


@contextlib.contextmanager
def _open(partition: Partition):
    """The partition as a ``pyarrow.parquet.ParquetFile``, its file closed on leaving."""
    import pyarrow.parquet as pq

    fs, path = filesystem(partition.url, partition.storage_options)
    try:
        handle = fs.open_input_file(path)
    except Exception as exc:  # noqa: BLE001 - any unreadable file: name it
        raise ReportsFileError(f"cannot open {partition.url!r}: {exc}") from None
    with handle:
        try:
            pfile = pq.ParquetFile(handle)
        except Exception as exc:  # noqa: BLE001
            raise ReportsFileError(
                f"{partition.url!r} is not a readable Parquet file: {exc}") from None
        yield pfile


def _header_of(partition: Partition, pfile) -> ReportsHeader:
    raw = (pfile.schema_arrow.metadata or {}).get(PARQUET_KEY)
    if raw is None:
        raise ReportsFileError(
            f"{partition.url!r} carries no reidrisk reports metadata; every partition must be "
            "written with it (reidrisk.collect.partitioned.write_partitioned)")
    meta = _parse_meta(Path(partition.name), raw)
    if "n" in meta and int(meta["n"]) != pfile.metadata.num_rows:
        raise ReportsFileError(
            f"{partition.url!r} has {pfile.metadata.num_rows} rows but its metadata declares "
            f"n = {meta['n']}; the file is truncated or was edited")
    return read_header(partition.url, meta)


def read_partition_header(partition: Partition | str, storage_options: dict | None = None
                          ) -> ReportsHeader:
    """The metadata of one partition (schema, protocol, rebuilt mechanisms, codecs).

    Parameters
    ----------
    partition : Partition or str
        The partition, or its path or URL.
    storage_options : dict, optional
        Passed to fsspec (credentials, endpoints) for URLs.

    Returns
    -------
    ReportsHeader
        The partition's schema, protocol, mechanisms and codecs.
    """
    if not isinstance(partition, Partition):
        partition = partitions(partition, storage_options)[0]
    with _open(partition) as pfile:
        return _header_of(partition, pfile)


def _same(a: ReportsHeader, b: ReportsHeader) -> bool:
    return all(json.dumps(a.meta[k], sort_keys=True) == json.dumps(b.meta[k], sort_keys=True)
               for k in _SAME_KEYS)


def describe(source, storage_options: dict | None = None) -> ReportsHeader:
    """The header shared by every partition of ``source``.

    Partitions that disagree on the schema, protocol or mechanisms are refused (their counts
    could not be added).

    Parameters
    ----------
    source : str, Path or list
        A directory, one file, or a list of either (or of ``Partition``); local or an fsspec URL.
    storage_options : dict, optional
        Passed to fsspec (credentials, endpoints) for URLs.

    Returns
    -------
    ReportsHeader
        The header every partition shares (read from the first).

    Raises
    ------
    ReportsFileError
        Naming the first partition written with another schema, protocol or mechanisms.
    """
    parts = partitions(source, storage_options)
    first = read_partition_header(parts[0])
    for p in parts[1:]:
        if not _same(first, read_partition_header(p)):
            raise ReportsFileError(
                f"partition {p.url!r} was written with another schema, protocol or mechanisms than "
                f"{parts[0].url!r}; counts can only be summed over one collection")
    return first


# ---------------------------------------------------------------------------------------------
# reading and counting
# ---------------------------------------------------------------------------------------------
def _iter_partition(partition: Partition, chunk_rows: int | None,
                    header: ReportsHeader | None = None) -> Iterator[CollectedReports]:
    with _open(partition) as pfile:
        own = _header_of(partition, pfile)
        if header is not None and not _same(header, own):
            raise ReportsFileError(f"partition {partition.url!r} was written with another schema, "
                                   "protocol or mechanisms than the first partition")
        rows = chunk_rows or default_chunk_rows(own.schema.sizes)
        start = 0
        for batch in pfile.iter_batches(batch_size=int(rows)):
            try:
                chunk = decode_frame(partition.name, own, batch.to_pandas())
            except ReportsFileError as exc:
                if not start:
                    raise
                raise ReportsFileError(f"{exc} (rows of the chunk starting at row {start} of "
                                       f"{partition.url!r}, counted from 0)") from None
            start += batch.num_rows
            yield chunk


def iter_reports(source, *, chunk_rows: int | None = None, storage_options: dict | None = None
                 ) -> Iterator[RecordReports]:
    """The reports of every partition of ``source``, one chunk of rows at a time.

    Each chunk is decoded and validated by ``reports_io.decode_frame`` (every cell, every report,
    the protocol, the declared privacy loss). A row in an error message counts from the start of
    its chunk, whose first row in the partition the message names. Memory: one chunk.

    Parameters
    ----------
    source : str, Path or list
        A directory, one file, or a list of either (or of ``Partition``); local or an fsspec URL.
    chunk_rows : int, optional
        Rows per chunk (default ``default_chunk_rows`` of the schema's domain sizes).
    storage_options : dict, optional
        Passed to fsspec (credentials, endpoints) for URLs.

    Yields
    ------
    RecordReports
        The decoded, validated reports of one chunk.
    """
    parts = partitions(source, storage_options)
    header = read_partition_header(parts[0])
    for p in parts:
        for chunk in _iter_partition(p, chunk_rows, header):
            yield chunk.reports


def count_partition(partition: Partition | str, *, chunk_rows: int | None = None,
                    storage_options: dict | None = None) -> PairCounts:
    """The count tables (``pair_counts``) of one partition, summed over its chunks.

    Exactly the counts of all its reports at once. The unit of work of the chunked reader and of
    the Dask path (``reidrisk.collect.dask_counts``).

    Parameters
    ----------
    partition : Partition or str
        The partition, or the path or URL of one file.
    chunk_rows : int, optional
        Rows per chunk (default ``default_chunk_rows`` of the schema's domain sizes).
    storage_options : dict, optional
        Passed to fsspec (credentials, endpoints) for URLs.

    Returns
    -------
    PairCounts
        The count tables of all the partition's reports.
    """
    if not isinstance(partition, Partition):
        (partition,) = partitions(partition, storage_options)
    total = None
    for chunk in _iter_partition(partition, chunk_rows):
        c = pair_counts(chunk.reports)
        total = c if total is None else total + c
    if total is None:  # no rows
        total = PairCounts.zeros(read_partition_header(partition).schema.sizes)
    return total


def count_columns(schema: Schema, mechanisms, columns, *, chunk_rows: int | None = None
                  ) -> PairCounts:
    """The count tables of reports held in memory, counted one chunk of rows at a time.

    A ``PackedBits`` column (a unary encoding) is unpacked a chunk at a time, so an (n, k) bit
    matrix is never formed. Equal to ``pair_counts`` of the whole.

    Parameters
    ----------
    schema : Schema
        The attributes.
    mechanisms : sequence of Mechanism
        One per attribute.
    columns : sequence of numpy.ndarray or PackedBits
        One report array (or ``PackedBits``) per attribute, in schema order.
    chunk_rows : int, optional
        Rows per chunk (default ``default_chunk_rows`` of the schema's domain sizes).

    Returns
    -------
    PairCounts
        The count tables of all the reports.
    """

    mechs, cols = tuple(mechanisms), list(columns)
    n = len(cols[0]) if cols else 0
    rows = int(chunk_rows or default_chunk_rows(schema.sizes))
    total = PairCounts.zeros(schema.sizes)
    for s in range(0, n, rows):
        part = tuple(c.unpack(s, s + rows) if isinstance(c, PackedBits) else c[s:s + rows]
                     for c in cols)
        total = total + pair_counts(RecordReports(schema, mechs, part))
    return total


def sum_counts(*counts: PairCounts) -> PairCounts:
    """The exact sum of count tables of disjoint sets of reports (``PairCounts.__add__``).

    Parameters
    ----------
    *counts : PairCounts
        At least one table, all over the same attributes.

    Returns
    -------
    PairCounts
        The sum of ``counts``.
    """
    if not counts:
        raise ValueError("sum_counts needs at least one PairCounts")
    return functools.reduce(operator.add, counts)


def count_reports(source, *, chunk_rows: int | None = None, storage_options: dict | None = None,
                  progress: bool = True) -> PairCounts:
    """The count tables of every report of ``source``, counted a chunk at a time on this machine.

    ``source`` is partitioned Parquet, local or an fsspec URL; a progress bar runs over the
    reports (``reidrisk.report.progress``). Equal, integer for integer, to ``pair_counts`` of all
    the reports at once and to the Dask path's result.

    Parameters
    ----------
    source : str, Path or list
        A directory, one file, or a list of either (or of ``Partition``); local or an fsspec URL.
    chunk_rows : int, optional
        Rows per chunk (default ``default_chunk_rows`` of the schema's domain sizes).
    storage_options : dict, optional
        Passed to fsspec (credentials, endpoints) for URLs.
    progress : bool
        Show the progress bar.

    Returns
    -------
    PairCounts
        The count tables of every report of ``source``.
    """
    # jinja2 (reidrisk.report): loaded only when a report or progress bar is used
    from reidrisk.report.progress import Progress

    parts = partitions(source, storage_options)
    header = describe(parts)
    total = PairCounts.zeros(header.schema.sizes)
    with Progress(sum(p.rows for p in parts), "counting reports", unit="reports",
                  enabled=progress) as bar:
        for p in parts:
            for chunk in _iter_partition(p, chunk_rows, header):
                total = total + pair_counts(chunk.reports)
                bar.update(chunk.n, note=p.name)
    return total


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
        # the dask extra, used only with a cluster client (and dask_counts imports this module)
        from reidrisk.collect.dask_counts import count_dask, dask_pair_map

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
        self._local = not _is_url(self.directory)
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
    "iter_reports", "partitions", "read_partition_header", "simulate_partitioned", "sum_counts",
    "write_partitioned",
]
