"""Tables larger than memory: assessed from their distinct rows, read a chunk at a time.

Every class-based measure of a record depends only on its QI (and SA) values, so a table is first
reduced to its distinct rows and how many records each stands for (``aggregate``, one pass over the
chunks of ``reidrisk.data.chunks``, memory bounded by one chunk plus the distinct rows), assessed
there (``PreparedTable.counts``), and the per-record file is written by a second pass that looks each
record's row up (``write_records``). The same reduction runs on a Dask cluster with ``client``.

Paper 000's model and SUDA read records: for a table of at most ``RECORD_LIMIT`` records they run on
the distinct rows expanded back to records (identical records have identical answers); beyond it
they are skipped and the summary says so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from reidrisk.assess.classes import AssessError
from reidrisk.assess.table import (
    PreparedTable,
    check_columns,
    labels_of,
    missing_mask,
    prepare_table,
    split_names,
)
from reidrisk.data.chunks import DEFAULT_CHUNK_ROWS, table_chunks, table_columns

RECORD_LIMIT = 2_000_000
"""The most records for which the model and SUDA run on a table read in chunks."""

COUNT = "__records"
WEIGHT = "__weight"

REGROUP_EVERY = 8
"""Chunks between two reductions of the accumulated distinct rows."""


def _bin_labels(values: pd.Series, width: float, name: str, source: str) -> np.ndarray:
    nums = pd.to_numeric(values, errors="coerce").to_numpy(np.float64)
    bad = np.isnan(nums)
    if bad.any():
        raise AssessError(f"{source}: --bin {name}={width:g} needs numbers, but column {name!r} "
                          f"holds {str(values.iloc[int(np.flatnonzero(bad)[0])])!r}; mark such "
                          "values missing (--na) or drop the bin")
    lo = np.floor(nums / width) * width
    return np.array([f"[{a:g}, {a + width:g})" for a in lo], dtype=object)


def normalize(chunk: pd.DataFrame, columns: Sequence[str], bins: Mapping[str, float],
              na_values: Sequence[str], source: str) -> pd.DataFrame:
    """The chunk's columns as the labels the assessment reads: text, ``""`` for missing, numbers
    binned to ``[lo, hi)`` labels (edges at multiples of the width) where ``bins`` says.

    Each column is factorized first, so the text work is done once per distinct value.
    """
    out = {}
    for name in columns:
        codes, uniques = pd.factorize(chunk[name], use_na_sentinel=True)
        distinct = pd.Series(np.asarray(uniques, dtype=object))
        miss = missing_mask(distinct, na_values)
        labels = np.full(len(distinct) + 1, "", dtype=object)  # the last: pandas' NA sentinel
        present = distinct[~miss]
        if len(present):
            labels[:-1][~miss] = (_bin_labels(present, bins[name], name, source) if name in bins
                                  else labels_of(present))
        out[name] = labels[codes]
    return pd.DataFrame(out, index=chunk.index)


def _weights_of(chunk: pd.DataFrame, name: str, source: str, offset: int) -> np.ndarray:
    nums = pd.to_numeric(chunk[name], errors="coerce").to_numpy(np.float64)
    bad = ~np.isfinite(nums) | (nums <= 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise AssessError(
            f"{source}: weight column {name!r}, row {offset + i + 1} holds "
            f"{str(chunk[name].iloc[i])!r}: a survey weight is the number of people a record "
            "stands for, a positive number. Fix or drop those rows, or leave --weight out")
    return nums


def _reduce(parts: list[pd.DataFrame], keys: list[str]) -> pd.DataFrame:
    whole = pd.concat(parts, ignore_index=True)
    return whole.groupby(keys, sort=False, dropna=False, as_index=False)[[COUNT, WEIGHT]].sum()


def aggregate(chunks: Iterable[pd.DataFrame], qi: Sequence[str], sa: Sequence[str] = (),
              weight: str | None = None, bins: Mapping[str, float] | None = None,
              na_values: Sequence[str] = (), source: str = "the table",
              progress: Callable[[int], None] | None = None) -> pd.DataFrame:
    """The distinct rows of the QI and SA labels, with their record counts and weight sums.

    Parameters
    ----------
    chunks : iterable of pandas.DataFrame
        The table, a chunk at a time.
    qi, sa : sequence of str
        The columns.
    weight : str, optional
        The survey-weight column (checked positive and finite in every chunk).
    bins : mapping, optional
        Equal-width bins (``{"age": 10}``), applied chunk by chunk on fixed edges (multiples of the
        width).
    na_values : sequence of str
        Further texts that mean "missing".
    source : str
        For messages.
    progress : callable, optional
        Called with the number of records read so far after each chunk.

    Returns
    -------
    pandas.DataFrame
        One row per distinct row: the label columns, ``__records`` and ``__weight``.
    """
    keys = list(qi) + list(sa)
    bins = dict(bins or {})
    parts: list[pd.DataFrame] = []
    seen = 0
    for i, chunk in enumerate(chunks):
        labels = normalize(chunk, keys, bins, na_values, source)
        labels[COUNT] = 1
        labels[WEIGHT] = _weights_of(chunk, weight, source, seen) if weight else 1.0
        parts.append(labels.groupby(keys, sort=False, dropna=False, as_index=False)
                     [[COUNT, WEIGHT]].sum())
        seen += len(chunk)
        if (i + 1) % REGROUP_EVERY == 0:
            parts = [_reduce(parts, keys)]
        if progress is not None:
            progress(seen)
    if not parts or seen == 0:
        raise AssessError(f"{source}: the table has a header but no rows; nothing to assess")
    return _reduce(parts, keys)


def prepare_aggregate(agg: pd.DataFrame, qi: Sequence[str], sa: Sequence[str] = (),
                      weighted: bool = False, source: str = "the table") -> PreparedTable:
    """The aggregated table as a ``PreparedTable`` with ``counts`` (refusals as ``prepare_table``).

    Parameters
    ----------
    agg : pandas.DataFrame
        From ``aggregate``.
    qi, sa : sequence of str
        The columns.
    weighted : bool
        Whether survey weights were read (else the weights are left to the population size).
    source : str
        For messages.

    Returns
    -------
    PreparedTable
        Its rows are the distinct rows, ``counts`` their records.
    """
    table = prepare_table(agg, list(qi), list(sa), WEIGHT if weighted else None, source=source)
    return PreparedTable(table.source, table.schema, table.codes, table.sensitive, table.weights,
                         agg[COUNT].to_numpy(np.int64))


def expand(table: PreparedTable) -> PreparedTable:
    """The aggregated table back to one row per record (rows repeated by their counts)."""
    if table.counts is None:
        return table
    rep = np.repeat(np.arange(table.rows), table.counts)
    weights = None if table.weights is None else np.repeat(table.weights / table.counts,
                                                           table.counts)
    sens = tuple(type(s)(s.name, s.categories, s.codes[rep], s.ordered) for s in table.sensitive)
    return PreparedTable(table.source, table.schema, table.codes[rep], sens, weights)


def read_aggregate(source, qi, sa=(), weight: str | None = None, bins=None, na_values=(),
                   chunk_rows: int = DEFAULT_CHUNK_ROWS, storage_options: dict | None = None,
                   progress: Callable[[int], None] | None = None) -> tuple[PreparedTable, pd.DataFrame]:
    """Read ``source`` in chunks and aggregate it (``aggregate``, ``prepare_aggregate``).

    Returns
    -------
    table : PreparedTable
        The aggregated table.
    labels : pandas.DataFrame
        Its distinct rows' label columns, aligned with the table's rows (the key of
        ``write_records``).
    """
    name = str(source)
    check_columns(table_columns(source, storage_options), name)
    qi, sa = split_names(qi), split_names(sa)
    if not qi:
        raise AssessError(f"{name}: name the quasi-identifiers with --qi")
    columns = list(dict.fromkeys(qi + sa + ([weight] if weight else [])))
    agg = aggregate(table_chunks(source, columns, chunk_rows, storage_options), qi, sa, weight,
                    bins, na_values, name, progress)
    table = prepare_aggregate(agg, qi, sa, weight is not None, name)
    return table, agg[qi + sa].reset_index(drop=True)


def write_records(source, labels: pd.DataFrame, per_row: pd.DataFrame, path: str | Path,
                  record_format: str = "csv", bins=None, na_values=(),
                  chunk_rows: int = DEFAULT_CHUNK_ROWS, storage_options: dict | None = None) -> Path:
    """Write one output row per input record, in input order, by a second pass over ``source``.

    Parameters
    ----------
    source : str or Path
        The table read by ``read_aggregate``.
    labels : pandas.DataFrame
        The distinct rows' labels (``read_aggregate``'s second result).
    per_row : pandas.DataFrame
        The per-distinct-row measures (``Assessment.records()``), aligned with ``labels``.
    path : str or Path
        The file (the caller makes the write atomic: ``reidrisk.assess.report.write_outputs``).
    record_format : {"csv", "parquet"}
        Its format.
    bins, na_values, chunk_rows, storage_options
        As given to ``read_aggregate``.

    Returns
    -------
    Path
        ``path``.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    keys = list(labels.columns)
    lookup = pd.concat([labels.reset_index(drop=True), per_row.reset_index(drop=True)], axis=1)
    writer = None
    try:
        first = True
        for chunk in table_chunks(source, keys, chunk_rows, storage_options):
            lab = normalize(chunk, keys, dict(bins or {}), na_values, str(source))
            out = lab.merge(lookup, on=keys, how="left", sort=False)[list(per_row.columns)]
            if record_format == "parquet":
                arrow = pa.Table.from_pandas(out, preserve_index=False)
                if writer is None:
                    writer = pq.ParquetWriter(path, arrow.schema)
                writer.write_table(arrow)
            else:
                out.to_csv(path, mode="w" if first else "a", header=first, index=False)
            first = False
    finally:
        if writer is not None:
            writer.close()
    return path


def first_rows(table: PreparedTable) -> np.ndarray:
    """The index, in ``expand(table)``, of each aggregated row's first record."""
    if table.counts is None:
        return np.arange(table.rows)
    return np.cumsum(table.counts) - table.counts


__all__ = ["RECORD_LIMIT", "aggregate", "expand", "first_rows", "normalize",
           "prepare_aggregate", "read_aggregate", "write_records"]
