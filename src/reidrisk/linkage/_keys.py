"""Integer keys for QI tuples: equal keys if and only if equal QI vectors (one hash index)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd


def column_codes(values: pd.Series | np.ndarray) -> tuple[np.ndarray, int]:
    """Codes 0..c-1 of a column's values (missing values form a value of their own).

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
    codes, uniques = pd.factorize(np.asarray(values, dtype=object) if _mixed(values) else values,
                                  use_na_sentinel=False)
    return codes.astype(np.int64, copy=False), len(uniques)


def _mixed(values) -> bool:
    return isinstance(values, pd.Series) and values.dtype == object


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
