"""A table read a chunk at a time: one CSV or Parquet file, a directory of Parquet partitions, or an
fsspec URL of either (``s3://bucket/table/``, ``memory://``...).

Memory is bounded by one chunk whatever the table's size. Parquet is read through
``pyarrow.dataset`` (row groups, the chosen columns only); CSV through pandas' chunked reader, every
value as text, as ``reidrisk.data.io.read_table`` reads it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from reidrisk.data.io import TableError

DEFAULT_CHUNK_ROWS = 1_000_000
"""Rows a chunk holds unless told otherwise."""


def is_url(source) -> bool:
    """Whether ``source`` is an fsspec URL rather than a local path.

    Parameters
    ----------
    source : object
        A path or URL.

    Returns
    -------
    bool
        True for a string of the form ``protocol://...``.
    """
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

    Raises
    ------
    TableError
        When a URL is given and fsspec is not installed.
    """
    import pyarrow.fs as pafs

    if is_url(source):
        try:
            import fsspec
        except ImportError:  # pragma: no cover - fsspec comes with dask and pandas' io extras
            raise TableError(f"reading {source!r} needs fsspec: pip install fsspec "
                             "(or reidrisk[dask])") from None
        fs, path = fsspec.core.url_to_fs(str(source), **(storage_options or {}))
        return pafs.PyFileSystem(pafs.FSSpecHandler(fs)), path
    return pafs.LocalFileSystem(), str(Path(source).expanduser().resolve())


def _kind(source, storage_options) -> tuple[str, Any, str]:
    import pyarrow.fs as pafs

    fs, path = filesystem(source, storage_options)
    info = fs.get_file_info(path)
    if info.type == pafs.FileType.NotFound:
        raise FileNotFoundError(f"table {str(source)!r} does not exist; check the path or URL")
    if info.type == pafs.FileType.Directory:
        return "dataset", fs, path
    name = path.lower()
    if name.endswith((".csv", ".tsv", ".txt")):
        return "csv", fs, path
    if name.endswith((".parquet", ".pq")):
        return "dataset", fs, path
    raise TableError(f"{str(source)!r}: a table is a .csv, .tsv or .parquet file, or a directory of "
                     "Parquet files")


def table_columns(source, storage_options: dict | None = None) -> list[str]:
    """The column names of a chunked table, as its header writes them (repeats kept).

    Parameters
    ----------
    source : str or Path
        As in ``table_chunks``.
    storage_options : dict, optional
        Passed to fsspec for URLs.

    Returns
    -------
    list of str
        The names.
    """
    import csv
    import io

    import pyarrow.dataset as pads

    kind, fs, path = _kind(source, storage_options)
    if kind == "csv":
        with fs.open_input_stream(path) as raw:
            first = raw.read(1 << 20).decode("utf-8", errors="replace").splitlines()[:1]
        sep = "\t" if path.lower().endswith(".tsv") else ","
        return [c.strip() for c in next(csv.reader(io.StringIO(first[0] if first else ""),
                                                   delimiter=sep), [])]
    return list(pads.dataset(path, filesystem=fs, format="parquet").schema.names)


def table_chunks(source, columns: Sequence[str] | None = None, chunk_rows: int = DEFAULT_CHUNK_ROWS,
                 storage_options: dict | None = None) -> Iterator[pd.DataFrame]:
    """The table's rows, ``chunk_rows`` at a time, in file order.

    Parameters
    ----------
    source : str or Path
        A CSV / TSV / Parquet file, a directory of Parquet files (searched recursively; names
        starting with ``.`` or ``_`` skipped), or an fsspec URL of either.
    columns : sequence of str, optional
        Only these columns, in this order (default all).
    chunk_rows : int
        The most rows a chunk holds.
    storage_options : dict, optional
        Passed to fsspec for URLs.

    Yields
    ------
    pandas.DataFrame
        The next chunk (CSV values as text).

    Raises
    ------
    TableError
        For an unknown format, an absent column, or a file no reader can parse.
    """
    import pyarrow.dataset as pads

    if int(chunk_rows) < 1:
        raise TableError(f"chunk_rows must be >= 1, got {chunk_rows!r}")
    kind, fs, path = _kind(source, storage_options)
    available = table_columns(source, storage_options)
    wanted = list(columns) if columns is not None else available
    absent = [c for c in wanted if c not in available]
    if absent:
        raise TableError(f"{str(source)!r} has no column {absent[0]!r}; its columns are "
                         f"{', '.join(available)}")
    if kind == "csv":
        sep = "\t" if path.lower().endswith(".tsv") else ","
        with fs.open_input_stream(path) as raw:
            try:
                reader = pd.read_csv(raw, sep=sep, dtype=str, keep_default_na=False,
                                     na_filter=False, usecols=wanted, chunksize=int(chunk_rows))
                for chunk in reader:
                    yield chunk[wanted]
            except pd.errors.ParserError as exc:
                detail = " ".join(str(exc).split())
                raise TableError(f"{str(source)!r} is not a well-formed table ({detail})") from None
        return
    try:
        dataset = pads.dataset(path, filesystem=fs, format="parquet")
        for batch in dataset.to_batches(columns=wanted, batch_size=int(chunk_rows)):
            if batch.num_rows:
                yield batch.to_pandas()[wanted]
    except OSError as exc:
        raise TableError(f"{str(source)!r}: a Parquet file cannot be read ({exc})") from None


__all__ = ["DEFAULT_CHUNK_ROWS", "filesystem", "is_url", "table_chunks", "table_columns"]
