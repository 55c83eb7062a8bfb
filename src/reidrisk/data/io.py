"""Reading and writing tables (CSV or Parquet, chosen by the file suffix).

CSV files are read as text, every column kept as strings and nothing turned into NaN: ``"?"``
and ``""`` stay as they are and the schema (``reidrisk.schema``) decides that they are missing.
This keeps a read -> write round trip lossless and leaves one place (the schema) that defines
"missing".
Writes are atomic: the table goes to a temporary file in the target folder, which then replaces the
target, so a failed write never leaves a half-written file behind.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from reidrisk._files import (  # re-exported: the table writers' atomic writes and path checks
    atomic_write,
    atomic_write_files,
    check_output_path,
    file_mode,
    user_path_in_errors,
)
from reidrisk.errors import ReidriskError
from reidrisk.schema import Schema

__all__ = [
    "CSV_SUFFIXES", "PARQUET_SUFFIXES", "EncodedData", "TableError", "atomic_write",
    "atomic_write_files", "check_output_path", "file_mode", "read_encoded", "read_table",
    "table_format", "user_path_in_errors", "write_encoded", "write_table",
]

CSV_SUFFIXES = (".csv", ".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zst", ".tsv", ".txt")
PARQUET_SUFFIXES = (".parquet", ".pq")


class TableError(ReidriskError, ValueError):
    """A table file cannot be read or written as asked. The message names the file and the fix."""


@dataclass(frozen=True, eq=False)
class EncodedData:
    """A schema and the data encoded with it.

    Unpacks as ``schema, codes = encoded``.

    Parameters
    ----------
    schema : Schema
        The attributes, in column order.
    codes : numpy.ndarray
        int32 matrix of shape (n, g), ``MISSING`` (-1) where a value is absent.
    """

    schema: Schema
    codes: np.ndarray

    def __iter__(self) -> Iterator:
        return iter((self.schema, self.codes))

    @property
    def n(self) -> int:
        return int(self.codes.shape[0])

    def complete_rows(self) -> np.ndarray:
        """Boolean mask (n,) of the rows with no missing value.

        Returns
        -------
        numpy.ndarray (n,) of bool
            True where the record is complete.
        """
        return np.asarray((self.codes >= 0).all(axis=1))


def table_format(path: str | Path) -> str:
    """``"csv"`` or ``"parquet"`` from the file name; ``TableError`` for anything else.

    Parameters
    ----------
    path : str or Path
        The file name.

    Returns
    -------
    str
        ``"csv"`` or ``"parquet"``.
    """
    name = Path(path).name.lower()
    if name.endswith(PARQUET_SUFFIXES):
        return "parquet"
    if name.endswith(CSV_SUFFIXES):
        return "csv"
    raise TableError(
        f"{str(path)!r}: unsupported file type; use one of "
        f"{', '.join(CSV_SUFFIXES + PARQUET_SUFFIXES)}"
    )


def read_table(path: str | Path, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Read a CSV (header row, all columns as text) or Parquet file into a DataFrame.

    Parameters
    ----------
    path : str or Path
        A ``.csv`` or ``.parquet`` file.
    columns : sequence of str, optional
        Selects and orders columns; naming an absent column is a ``TableError`` that lists the
        file's columns. ``None``: all columns.

    Returns
    -------
    pandas.DataFrame
        The table.

    Raises
    ------
    FileNotFoundError
        If the file is missing.
    TableError
        If the file is empty, of another format, or lacks a named column.
    """
    path = Path(path)
    fmt = table_format(path)
    if not path.is_file():
        raise FileNotFoundError(f"table file {str(path)!r} does not exist; check the path")
    if path.stat().st_size == 0:
        raise TableError(f"table file {str(path)!r} is empty (0 bytes); nothing to read")
    if fmt == "parquet":
        import pyarrow.parquet as pq

        try:
            available = pq.read_schema(path).names
        except Exception as exc:  # pyarrow raises several types for a corrupt file
            raise TableError(f"{str(path)!r} is not a readable Parquet file: {exc}") from None
        _check_columns(path, available, columns)
        _check_unique(path, available)
        return pd.read_parquet(path, columns=list(columns) if columns is not None else None)
    sep = "\t" if path.name.lower().endswith(".tsv") else ","
    try:
        header = pd.read_csv(path, sep=sep, nrows=0, dtype=str, keep_default_na=False)
        _check_columns(path, list(header.columns), columns)
        _check_unique(path, _raw_header(path, sep))
        return pd.read_csv(
            path,
            sep=sep,
            dtype=str,
            keep_default_na=False,
            na_filter=False,
            usecols=list(columns) if columns is not None else None,
        )[list(columns) if columns is not None else list(header.columns)]
    except pd.errors.EmptyDataError:
        raise TableError(f"table file {str(path)!r} has no header row; nothing to read") from None
    except UnicodeDecodeError as exc:
        raise TableError(
            f"{str(path)!r} is not a UTF-8 text table (byte {exc.object[exc.start:exc.start + 1]!r} at "
            f"offset {exc.start} cannot be decoded); is it a binary file? Export the data as UTF-8 CSV "
            "or Parquet"
        ) from None
    except pd.errors.ParserError as exc:
        detail = " ".join(str(exc).split()).removeprefix("Error tokenizing data. C error: ")
        raise TableError(
            f"{str(path)!r} is not a well-formed {'TSV' if sep == chr(9) else 'CSV'} table ({detail}); "
            "every row must have as many fields as the header (quote fields that contain the "
            "separator)"
        ) from None


def table_header(path: str | Path) -> list[str]:
    """The column names of a CSV or Parquet file exactly as written (a CSV reader would rename a
    repeated name; this keeps it, so a caller can refuse it).

    Parameters
    ----------
    path : str or Path
        A ``.csv``, ``.tsv`` or ``.parquet`` file.

    Returns
    -------
    list of str
        The header's names, in order; empty for an empty file.
    """
    path = Path(path)
    fmt = table_format(path)
    if not path.is_file():
        raise FileNotFoundError(f"table file {str(path)!r} does not exist; check the path")
    if fmt == "parquet":
        import pyarrow.parquet as pq

        try:
            return list(pq.read_schema(path).names)
        except Exception as exc:  # pyarrow raises several types for a corrupt file
            raise TableError(f"{str(path)!r} is not a readable Parquet file: {exc}") from None
    sep = "\t" if path.name.lower().endswith(".tsv") else ","
    try:
        return [name.strip() for name in _raw_header(path, sep)]
    except UnicodeDecodeError:
        return []  # read_table names the undecodable byte


def _check_columns(path: Path, available: Sequence[str], wanted: Sequence[str] | None) -> None:
    if wanted is None:
        return
    absent = [c for c in wanted if c not in set(available)]
    if absent:
        raise TableError(
            f"{str(path)!r} lacks the column(s) {absent}; its columns are {list(available)}"
        )


def _raw_header(path: Path, sep: str) -> list[str]:
    """The header's names as written (pandas renames a repeated ``a`` to ``a.1``)."""

    from pandas.io.common import get_handle

    with get_handle(path, "r", compression="infer", encoding="utf-8") as handle:
        return next(csv.reader(handle.handle, delimiter=sep), [])


def _check_unique(path: Path, names: Sequence[str]) -> None:
    names = list(names)
    twice = [c for i, c in enumerate(names) if c in names[:i]]
    if twice:
        raise TableError(
            f"{str(path)!r} names the column(s) {sorted(set(twice))} more than once; give each "
            "column a distinct name (a repeated column would be read as another one)"
        )


def write_table(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write ``frame`` to ``path`` as CSV (no index; missing values as empty fields) or Parquet,
    atomically: a temporary file in the same folder replaces the target only once complete.

    Parameters
    ----------
    frame : pandas.DataFrame
        The table to write.
    path : str or Path
        The target; its suffix (``.csv`` or ``.parquet``) chooses the format.

    Returns
    -------
    Path
        ``path``.
    """
    path = Path(path)
    fmt = table_format(path)
    if not isinstance(frame, pd.DataFrame):
        raise TableError(f"write_table needs a pandas DataFrame, got {type(frame).__name__}")

    def write(tmp: Path) -> None:
        if fmt == "parquet":
            frame.to_parquet(tmp, index=False)
        else:
            compression = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zst": "zstd"}.get(
                path.suffix.lower())
            sep = "\t" if path.name.lower().endswith(".tsv") else ","
            frame.to_csv(tmp, index=False, sep=sep, compression=compression)

    atomic_write(path, write)
    return path


def read_encoded(path: str | Path, schema: Schema) -> np.ndarray:
    """Read a table and encode it with ``schema``: int32 codes (n, g), ``MISSING`` where absent.

    Parameters
    ----------
    path : str or Path
        A ``.csv`` or ``.parquet`` file; only the schema's columns are read, and a column the file
        lacks is a ``TableError`` naming it.
    schema : Schema
        The attributes to encode with.

    Returns
    -------
    numpy.ndarray (n, g) int32
        The codes.
    """
    frame = read_table(path, columns=schema.names)
    if len(frame) == 0:
        raise TableError(f"table file {str(path)!r} has a header but no rows; nothing to encode")
    return schema.encode(frame)


def write_encoded(codes: np.ndarray, schema: Schema, path: str | Path) -> Path:
    """Decode ``codes`` (n, g) with ``schema`` and write the labels (missing as empty) atomically.

    ``read_encoded(path, schema)`` gives the same codes back (binned attributes re-encode from their
    bin labels).

    Parameters
    ----------
    codes : numpy.ndarray (n, g)
        Integer codes, ``MISSING`` where absent.
    schema : Schema
        The attributes the codes belong to.
    path : str or Path
        The target, ``.csv`` or ``.parquet``.

    Returns
    -------
    Path
        ``path``.
    """
    return write_table(schema.decode(codes), path)


__all__ = [
    "EncodedData", "TableError", "check_output_path", "read_encoded", "read_table", "table_format",
    "table_header",
    "user_path_in_errors", "write_encoded", "write_table",
]
