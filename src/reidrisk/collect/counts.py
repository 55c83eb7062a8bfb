"""Counting reports: the count tables of a batch, read a chunk of rows at a time.

Every estimator of ``reidrisk.collect`` reads the reports only through their count tables
(``reidrisk.estimation.pairs.PairCounts``: the Gram matrix ``B^T B`` of report memberships, the
presence Gram ``P^T P`` and n; paper 004 eq. 5, 12-13). Each is a sum over reports, so the counts of
a batch are the sums of the counts of its parts, exactly (integers): a partition is counted chunk by
chunk (``count_partition``), a batch partition by partition (``count_reports``; on a Dask cluster
``reidrisk.collect.dask_counts``), reports in memory chunk by chunk (``count_columns``). Memory is
bounded by one chunk plus the count tables (F x F int64, F the total number of categories).

Below the fit (``reidrisk.collect.partitioned.fit_partitioned`` fits the model from these counts)
and above the reading of partitions (``reidrisk.collect.reports_io``).
"""

from __future__ import annotations

import functools
import operator

from reidrisk.collect.reports_io import (
    Partition,
    default_chunk_rows,
    describe,
    iter_partition,
    partitions,
    read_partition_header,
)
from reidrisk.estimation.pairs import PairCounts, pair_counts
from reidrisk.mechanisms.oue import PackedBits
from reidrisk.mechanisms.record import RecordReports
from reidrisk.schema import Schema

__all__ = ["count_columns", "count_partition", "count_reports", "sum_counts"]


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
    for chunk in iter_partition(partition, chunk_rows):
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
            for chunk in iter_partition(p, chunk_rows, header):
                total = total + pair_counts(chunk.reports)
                bar.update(chunk.n, note=p.name)
    return total
