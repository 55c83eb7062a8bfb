"""Integer keys for QI tuples: equal keys if and only if equal QI vectors (one hash index).

QI values are compared in a canonical spelling (``canonical``): surrounding spaces dropped and a
number written one way, so ``20000``, ``20000.0`` and `` 20000`` read from two files are one value.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

_INTEGER = re.compile(r"^[+-]?\d+$")


def canonical(value):
    """One spelling of a QI value: text without surrounding spaces; an integer (or integer text)
    in decimal without sign or leading zeros, exactly; another number (or text that parses as a
    finite number) as the shortest text of its float64 value, integral ones without ``.0``;
    missing values (None, NaN) unchanged.

    Parameters
    ----------
    value : object
        One QI value.

    Returns
    -------
    object
        The canonical value (a str, or the missing value itself).
    """
    if value is None or (isinstance(value, float) and value != value):
        return value
    text = value.strip() if isinstance(value, str) else str(value)
    if isinstance(value, (bool, np.bool_)):
        return text
    if isinstance(value, (int, np.integer)) or _INTEGER.match(text):
        return str(int(text))                  # exact, also beyond 2**53
    try:
        number = float(text)
    except ValueError:
        return text
    if not np.isfinite(number):
        return text
    if number.is_integer() and abs(number) < 2.0**53:
        return str(int(number))
    return repr(number)


def canonical_codes(values: pd.Series | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes of a column's values after ``canonical`` (one call per distinct value).

    Parameters
    ----------
    values : pandas.Series or numpy.ndarray
        One column.

    Returns
    -------
    codes : numpy.ndarray (n,) int64
        The codes, in order of first appearance.
    uniques : numpy.ndarray of object
        The canonical value of each code.
    """
    array = np.asarray(values)
    if array.dtype.kind not in "iufb":
        array = array.astype(object)
    raw_codes, raw = pd.factorize(array, use_na_sentinel=False)
    canon = np.array([canonical(v) for v in raw], dtype=object)
    merged, uniques = pd.factorize(canon, use_na_sentinel=False)
    codes = merged.astype(np.int64)[raw_codes] if len(raw) else raw_codes.astype(np.int64)
    return codes, np.asarray(uniques, dtype=object)


def column_codes(values: pd.Series | np.ndarray) -> tuple[np.ndarray, int]:
    """Codes 0..c-1 of a column's canonical values (``canonical``; missing values form a value of
    their own).

    Parameters
    ----------
    values : pandas.Series or numpy.ndarray
        One column.

    Returns
    -------
    codes : numpy.ndarray (n,) int64
        The codes, in order of first appearance.
    count : int
        The number of distinct values c.
    """
    codes, uniques = canonical_codes(values)
    return codes, len(uniques)


def combine(columns: Sequence[np.ndarray], sizes: Sequence[int], n: int) -> np.ndarray:
    """One int64 key per row from per-column codes (mixed radix, re-factorized when it would
    overflow), so that keys are equal exactly when every column's code is.

    Parameters
    ----------
    columns : sequence of numpy.ndarray (n,)
        Per-column codes, each in 0..size-1.
    sizes : sequence of int
        Each column's number of codes.
    n : int
        Rows.

    Returns
    -------
    numpy.ndarray (n,) int64
        The row keys.
    """
    key = np.zeros(n, dtype=np.int64)
    span = 1
    for codes, size in zip(columns, sizes):
        size = max(int(size), 1)
        if span * size >= 2**62:
            key, uniq = pd.factorize(key)
            key = key.astype(np.int64)
            span = max(len(uniq), 1)
        key = key * size + codes
        span *= size
    return key


def qi_keys(*frames: pd.DataFrame, qi: Sequence[str]) -> list[np.ndarray]:
    """Keys of the QI vectors of several frames on one shared code book (a value spelled the same
    in two frames gets the same code).

    Parameters
    ----------
    *frames : pandas.DataFrame
        The tables.
    qi : sequence of str
        The quasi-identifier columns, present in every frame.

    Returns
    -------
    list of numpy.ndarray
        One int64 key array per frame, one key per row.
    """
    lengths = [len(f) for f in frames]
    total = sum(lengths)
    cols, sizes = [], []
    for c in qi:
        joined = pd.concat([f[c].reset_index(drop=True) for f in frames], ignore_index=True)
        codes, size = column_codes(joined)
        cols.append(codes)
        sizes.append(size)
    key = combine(cols, sizes, total)
    if qi:
        key = pd.factorize(key)[0].astype(np.int64)
    out, start = [], 0
    for length in lengths:
        out.append(key[start:start + length])
        start += length
    return out


def group_ids(frame: pd.DataFrame, qi: Sequence[str]) -> np.ndarray:
    """Equivalence-class id 0..g-1 of each row over the QI columns.

    Parameters
    ----------
    frame : pandas.DataFrame
        The table.
    qi : sequence of str
        The quasi-identifier columns.

    Returns
    -------
    numpy.ndarray (n,) int64
        The class of each row.
    """
    return qi_keys(frame, qi=qi)[0]
