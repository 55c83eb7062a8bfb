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

from reidrisk.assess.classes import AssessError, row_keys
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



def _bin_labels(values: pd.Series, width: float, name: str, source: str) -> np.ndarray:
    nums = pd.to_numeric(values, errors="coerce").to_numpy(np.float64)
    bad = np.isnan(nums)
    if bad.any():
        raise AssessError(f"{source}: --bin {name}={width:g} needs numbers, but column {name!r} "
                          f"holds {str(values.iloc[int(np.flatnonzero(bad)[0])])!r}; mark such "
                          "values missing (--na) or drop the bin")
    lo = np.floor(nums / width) * width
    return np.array([f"[{a:g}, {a + width:g})" for a in lo], dtype=object)


class Vocabulary:
    """The labels of each column seen so far, each with a fixed id (ids grow as chunks arrive).

    Parameters
    ----------
    columns : sequence of str
        The columns, in order; id 0 of each is the missing value (``""``).
    """

    def __init__(self, columns: Sequence[str]) -> None:
        self.columns = list(columns)
        self.ids: list[dict[str, int]] = [{"": 0} for _ in self.columns]  # id 0: missing

    def labels(self, j: int) -> np.ndarray:
        """Column j's labels in id order.

        Parameters
        ----------
        j : int
            The column's position.

        Returns
        -------
        numpy.ndarray of object
            Its labels, ``labels[id]`` the label of an id.
        """
        return np.array(list(self.ids[j]), dtype=object)

    def encode(self, chunk: pd.DataFrame, bins: Mapping[str, float], na_values: Sequence[str],
               source: str, grow: bool = True) -> np.ndarray:
        """The chunk as a matrix of label ids.

        Each column is factorized first, so the text work is done once per distinct value.

        Parameters
        ----------
        chunk : pandas.DataFrame
            Rows holding the vocabulary's columns.
        bins : mapping of str to float
            Equal-width bins of numeric columns.
        na_values : sequence of str
            Further texts that mean "missing".
        source : str
            For messages.
        grow : bool
            Give new labels new ids (else an unseen label gets -1).

        Returns
        -------
        numpy.ndarray (rows, columns) int64
            The ids.
        """
        out = np.empty((len(chunk), len(self.columns)), dtype=np.int64)
        for j, name in enumerate(self.columns):
            codes, uniques = pd.factorize(chunk[name], use_na_sentinel=True)
            labels = np.full(len(uniques) + 1, "", dtype=object)  # the last: pandas' NA sentinel
            if len(uniques):
                distinct = pd.Series(np.asarray(uniques, dtype=object))
                miss = missing_mask(distinct, na_values)
                present = distinct[~miss]
                if len(present):
                    labels[:-1][~miss] = (_bin_labels(present, bins[name], name, source)
                                          if name in bins else labels_of(present))
            table = self.ids[j]
            if grow:
                for label in labels:
                    table.setdefault(label, len(table))
            ids = np.array([table.get(label, -1) for label in labels], dtype=np.int64)
            out[:, j] = ids[codes]
        return out


def _distinct(matrix: np.ndarray, counts: np.ndarray, weights: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct rows of ``matrix`` with their counts and weights summed."""
    keys = row_keys(matrix)
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    size = first.size
    return (matrix[first], np.bincount(inverse, weights=counts, minlength=size),
            np.bincount(inverse, weights=weights, minlength=size))


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
        One row per distinct row: the label columns (``""`` for missing), ``__records`` and
        ``__weight``.
    """
    keys = list(qi) + list(sa)
    bins = dict(bins or {})
    vocab = Vocabulary(keys)
    rows = np.zeros((0, len(keys)), dtype=np.int64)
    counts = np.zeros(0)
    weights = np.zeros(0)
    seen = 0
    for chunk in chunks:
        ids = vocab.encode(chunk, bins, na_values, source)
        w = _weights_of(chunk, weight, source, seen) if weight else np.ones(len(chunk))
        rows, counts, weights = _distinct(np.concatenate([rows, ids]),
                                          np.concatenate([counts, np.ones(len(chunk))]),
                                          np.concatenate([weights, w]))
        seen += len(chunk)
        if progress is not None:
            progress(seen)
    if seen == 0:
        raise AssessError(f"{source}: the table has a header but no rows; nothing to assess")
    out = pd.DataFrame({name: vocab.labels(j)[rows[:, j]] for j, name in enumerate(keys)})
    out[COUNT] = np.rint(counts).astype(np.int64)
    out[WEIGHT] = weights
    return out


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
    """The aggregated table back to one row per record (rows repeated by their counts).

    Parameters
    ----------
    table : PreparedTable
        With ``counts`` (without: returned as it is).

    Returns
    -------
    PreparedTable
        One row per record, each record's weight its row's mean weight.
    """
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

    Parameters
    ----------
    source : str or Path
        A CSV or Parquet file, a directory of Parquet files, or an fsspec URL.
    qi, sa : sequence of str or str
        The columns (repeatable, comma lists).
    weight : str, optional
        The survey-weight column.
    bins : mapping, optional
        Equal-width bins (``{"age": 10}``).
    na_values : sequence of str
        Further texts that mean "missing".
    chunk_rows : int
        Rows read at a time.
    storage_options : dict, optional
        Passed to fsspec for URLs.
    progress : callable, optional
        Called with the records read so far.

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
    vocab = Vocabulary(keys)
    vocab.ids = [{label: i for i, label in enumerate(pd.unique(labels[c].astype(object)))}
                 for c in keys]
    distinct = np.column_stack([labels[c].map(vocab.ids[j]).to_numpy(np.int64)
                                for j, c in enumerate(keys)])
    radices = [len(t) for t in vocab.ids]
    per_row = per_row.reset_index(drop=True)
    writer = None
    try:
        first = True
        for chunk in table_chunks(source, keys, chunk_rows, storage_options):
            ids = vocab.encode(chunk, dict(bins or {}), na_values, str(source), grow=False)
            out = per_row.iloc[_locate(distinct, ids, radices)].reset_index(drop=True)
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


def _locate(distinct: np.ndarray, rows: np.ndarray, radices: Sequence[int]) -> np.ndarray:
    """The index in ``distinct`` of each row of ``rows`` (every row is one of them)."""
    if float(np.prod(np.asarray(radices, dtype=np.float64))) < 2.0**62:
        weights = np.cumprod([1] + list(radices[:0:-1]))[::-1].astype(np.int64)
        table_keys, row_keys_ = distinct @ weights, rows @ weights
        order = np.argsort(table_keys, kind="stable")
        return order[np.searchsorted(table_keys, row_keys_, sorter=order)]
    both = row_keys(np.concatenate([distinct, rows]))
    _, inverse = np.unique(both, return_inverse=True)
    inverse = inverse.ravel()
    where = np.empty(inverse[: len(distinct)].max() + 1, dtype=np.int64)
    where[inverse[: len(distinct)]] = np.arange(len(distinct))
    return where[inverse[len(distinct):]]


def first_rows(table: PreparedTable) -> np.ndarray:
    """The index, in ``expand(table)``, of each aggregated row's first record.

    Parameters
    ----------
    table : PreparedTable
        The aggregated table.

    Returns
    -------
    numpy.ndarray (rows,) int64
        The positions.
    """
    if table.counts is None:
        return np.arange(table.rows)
    return np.cumsum(table.counts) - table.counts


__all__ = ["RECORD_LIMIT", "Vocabulary", "aggregate", "expand", "first_rows",
           "prepare_aggregate", "read_aggregate", "write_records"]
