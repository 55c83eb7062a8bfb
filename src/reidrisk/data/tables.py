"""Exact contingency tables of encoded data (the ground truth of paper 004, Section 5).

Paper 004 scores an estimated c-way contingency table against the table of the true data, both
normalized to probability distributions (Section 5.1). A row counts towards a table only if it has
every one of the table's c attributes (missing values are never a cell;
docs/design/core.md#schema-and-missing-values).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from reidrisk.schema import MISSING


def contingency(
    codes: np.ndarray,
    sizes: Sequence[int] | np.ndarray,
    cols: Sequence[int],
    normalize: bool = True,
) -> np.ndarray:
    """The c-way table of ``codes`` over the columns ``cols``.

    One ``np.bincount`` over the raveled cell index; O(n c).

    Parameters
    ----------
    codes : numpy.ndarray (n, g)
        Integer codes, ``MISSING`` = -1.
    sizes : sequence of int
        The domain sizes f_j of all g columns.
    cols : sequence of int
        The c column indices of the table, in the table's axis order, no repeats.
    normalize : bool
        Probabilities summing to 1 (default) or counts (int64).

    Returns
    -------
    numpy.ndarray
        Shape ``(f_cols[0], ..., f_cols[c-1])``, over the rows complete on ``cols`` only.
    """
    codes = np.asarray(codes)
    if codes.ndim != 2:
        raise ValueError(f"codes must be a 2-D (n, g) matrix, got shape {codes.shape}")
    sizes = np.asarray(sizes, dtype=np.int64)
    if sizes.shape != (codes.shape[1],):
        raise ValueError(
            f"sizes must give one domain size per column ({codes.shape[1]}), got {sizes.shape[0]}"
        )
    cols = [int(c) for c in np.atleast_1d(np.asarray(cols))]
    if not cols:
        raise ValueError("cols is empty; name at least one column of the table")
    if len(set(cols)) != len(cols):
        raise ValueError(f"cols {cols} repeats a column; each axis of the table is one column")
    if min(cols) < 0 or max(cols) >= codes.shape[1]:
        raise ValueError(f"cols {cols} out of range for {codes.shape[1]} columns")
    shape = tuple(int(sizes[c]) for c in cols)
    sub = codes[:, cols]
    complete = (sub != MISSING).all(axis=1)
    sub = sub[complete]
    if (sub < 0).any() or (sub >= np.asarray(shape)[None, :]).any():
        r, c = np.argwhere((sub < 0) | (sub >= np.asarray(shape)[None, :]))[0]
        raise ValueError(
            f"column {cols[c]}: code {sub[r, c]} is outside the domain 0..{shape[c] - 1}"
        )
    flat = np.ravel_multi_index(tuple(sub.T), shape) if sub.size else np.zeros(0, np.int64)
    counts = np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape)
    if not normalize:
        return counts.astype(np.int64)
    total = counts.sum()
    if total == 0:
        raise ValueError(
            f"no row has all of the columns {cols}; a normalized table needs at least one complete "
            "row (pass normalize=False for counts)"
        )
    return counts / total


__all__ = ["contingency"]
