"""An anonymized release and the hidden true mapping to the original table (paper 001, Section 2.3).

Every anonymization of ``reidrisk.linkage.anonymize`` takes the original table X (a DataFrame) or a
previous ``Release`` and returns a ``Release``: the anonymized table Y and, for each row of Y, the
row position in X it descends from. The mapping is what the evaluator knows and the attacks never
see; composing anonymizations composes the mappings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from reidrisk.errors import ReidriskError
from reidrisk.linkage._keys import qi_keys


class LinkageError(ReidriskError, ValueError):
    """Bad input to the linkage tools (a missing column, a non-numeric SA column, a release longer
    than the original, an unknown pipeline step, ...). The message names the column or parameter
    and the fix."""


@dataclass(frozen=True, eq=False)
class Release:
    """The anonymized table and its hidden link to the original.

    Parameters
    ----------
    data : pandas.DataFrame
        The anonymized table Y (index 0..len-1, the columns of X).
    truth : numpy.ndarray int64 (len(data),)
        For each row of Y the row position in X it descends from.
    steps : tuple of str
        Names of the anonymizations applied, in order.
    details : tuple of dict
        One dict per step with its parameters and what it changed (e.g. the recoding of each
        generalized QI column and the number of suppressed rows for ``k_anonymize``).
    """

    data: pd.DataFrame
    truth: np.ndarray
    steps: tuple[str, ...] = ()
    details: tuple[dict, ...] = field(default=())

    def __post_init__(self) -> None:
        truth = np.asarray(self.truth, dtype=np.int64)
        if truth.shape != (len(self.data),):
            raise LinkageError(
                f"the true mapping has {truth.shape[0] if truth.ndim else 0} entries but the release "
                f"has {len(self.data)} rows; give one original row position per released row")
        truth.setflags(write=False)
        object.__setattr__(self, "truth", truth)
        object.__setattr__(self, "steps", tuple(self.steps))
        object.__setattr__(self, "details", tuple(self.details))

    @property
    def n(self) -> int:
        return len(self.data)


def as_release(table: pd.DataFrame | Release) -> Release:
    """``table`` as a ``Release`` (a DataFrame is the identity release of itself).

    Parameters
    ----------
    table : pandas.DataFrame or Release
        The original table or a previous release.

    Returns
    -------
    Release
        The release.
    """
    if isinstance(table, Release):
        return table
    if not isinstance(table, pd.DataFrame):
        raise LinkageError(f"expected a pandas DataFrame or a Release, got {type(table).__name__}")
    return Release(table.reset_index(drop=True), np.arange(len(table), dtype=np.int64))


def derive(previous: Release, data: pd.DataFrame, rows: np.ndarray | None, step: str,
           detail: dict[str, Any]) -> Release:
    """A new release from ``previous``; the truth composes.

    Parameters
    ----------
    previous : Release
        The release the step was applied to.
    data : pandas.DataFrame
        The new table (its index is reset).
    rows : numpy.ndarray, optional
        ``rows[i]`` is the row of ``previous.data`` that row i of ``data`` comes from (``None``:
        the same rows in the same order).
    step : str
        The step's name, appended to ``steps``.
    detail : dict
        The step's parameters and what it changed, appended to ``details``.

    Returns
    -------
    Release
        The new release.
    """
    truth = previous.truth if rows is None else previous.truth[np.asarray(rows, dtype=np.int64)]
    return Release(data.reset_index(drop=True), truth, previous.steps + (step,),
                   previous.details + ({"step": step, **detail},))


def check_columns(frame: pd.DataFrame, columns: Sequence[str], role: str, where: str = "the table"
                  ) -> list[str]:
    """The ``columns`` as a list; ``LinkageError`` naming any absent one and the available ones.

    Parameters
    ----------
    frame : pandas.DataFrame
        The table that must hold the columns.
    columns : sequence of str
        The column names.
    role : str
        What the columns are (e.g. "QI", "SA"), for the message.
    where : str
        Which table, for the message.

    Returns
    -------
    list of str
        The columns.
    """
    if isinstance(columns, str):
        columns = [columns]
    columns = list(columns)
    absent = [c for c in columns if c not in frame.columns]
    if absent:
        raise LinkageError(f"{where} lacks the {role} column(s) {absent}; its columns are "
                           f"{list(frame.columns)}")
    if len(set(columns)) != len(columns):
        raise LinkageError(f"the {role} columns {columns} name a column twice; list each once")
    return columns


def numeric_matrix(frame: pd.DataFrame, columns: Sequence[str], where: str = "the table"
                   ) -> np.ndarray:
    """The SA ``columns`` as a float64 matrix (n, s); a column that is not numeric (text that does
    not parse as a number, or a missing value) is a ``LinkageError`` naming it and a bad value.

    Parameters
    ----------
    frame : pandas.DataFrame
        The table.
    columns : sequence of str
        The SA columns.
    where : str
        Which table, for the message.

    Returns
    -------
    numpy.ndarray (n, s) float64
        The values.
    """
    out = np.empty((len(frame), len(columns)), dtype=np.float64)
    for j, c in enumerate(columns):
        col = frame[c]
        if pd.api.types.is_bool_dtype(col) or not pd.api.types.is_numeric_dtype(col):
            parsed = pd.to_numeric(col, errors="coerce")
        else:
            parsed = col
        values = np.asarray(parsed, dtype=np.float64)
        bad = ~np.isfinite(values)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise LinkageError(
                f"{where}: sensitive (SA) column {c!r} must be numeric, but row {i + 1} holds "
                f"{col.iloc[i]!r}; give SA columns as numbers or list {c!r} as a QI column")
        out[:, j] = values
    return out


def check_truth(original: pd.DataFrame, release: pd.DataFrame, truth: np.ndarray, *,
                qi: Sequence[str], sa: Sequence[str], where: str = "the true mapping"
                ) -> np.ndarray:
    """``truth`` as int64 row positions after the checks that catch a wrong mapping file, each a
    ``LinkageError`` naming ``where`` and the fix.

    Refused: a length other than |Y|; a position outside 0..|X|-1 (1-based positions, 1..|X|, are
    named as such); one original row given for two released rows (each released row descends from
    a distinct original row); and a mapping that is 1-based on a subset of X: with every position
    >= 1, the mapping shifted by one agrees with the data clearly better than the given one
    (released rows equal to their mapped original on all QI values for at least half the rows more,
    or a median standardized SA difference at most half as large, without fewer QI agreements).

    Parameters
    ----------
    original, release : pandas.DataFrame
        X and Y.
    truth : numpy.ndarray
        The claimed original row position of each released row.
    qi, sa : sequence of str
        The columns compared for the 1-based check.
    where : str
        The mapping's name for the message (e.g. the file).

    Returns
    -------
    numpy.ndarray (len(release),) int64
        The mapping.
    """
    truth = np.asarray(truth)
    m, n = len(release), len(original)
    if truth.shape != (m,):
        raise LinkageError(f"{where} has {truth.shape[0] if truth.ndim else 0} rows but the release "
                           f"has {m}; give one original row position per released row")
    truth = truth.astype(np.int64)
    if not m:
        return truth
    lo, hi = int(truth.min()), int(truth.max())
    if lo < 0 or hi >= n:
        hint = (" (it looks 1-based: subtract 1 from every position)" if lo >= 1 and hi == n
                else "")
        raise LinkageError(f"{where} holds row positions outside 0..{n - 1}{hint}; give 0-based "
                           "row positions of the original")
    order = np.argsort(truth, kind="stable")
    same = np.flatnonzero(truth[order][1:] == truth[order][:-1])
    if len(same):
        a, b = sorted(order[same[0]:same[0] + 2])
        raise LinkageError(f"{where} maps released rows {a} and {b} (0-based) both to original row "
                           f"{truth[a]}; each released row descends from a distinct original row — "
                           "fix the mapping")
    if lo >= 1:
        given, shifted = _agreement(original, release, truth, qi, sa), \
            _agreement(original, release, truth - 1, qi, sa)
        if (shifted[0] >= given[0] + 0.5
                or (shifted[0] >= given[0] and shifted[1] <= 0.5 * given[1])):
            raise LinkageError(
                f"{where} looks 1-based: with every position minus 1, {shifted[0]:.0%} of the "
                f"released rows equal their original on all QI (against {given[0]:.0%}) and the "
                f"median SA difference is {shifted[1]:.3g} sd (against {given[1]:.3g}); give "
                "0-based row positions (subtract 1)")
    return truth


def _agreement(x: pd.DataFrame, y: pd.DataFrame, truth: np.ndarray, qi: Sequence[str],
               sa: Sequence[str]) -> tuple[float, float]:
    """(share of rows equal on every QI column, median mean |SA difference| in sd of X)."""
    qi_share = 0.0
    if qi:
        kx, ky = qi_keys(x, y, qi=list(qi))
        qi_share = float((kx[truth] == ky).mean())
    sa_gap = float("inf")
    if sa:
        xs, ys = numeric_matrix(x, sa, "the original"), numeric_matrix(y, sa, "the release")
        sd = xs.std(axis=0) if len(xs) > 1 else np.ones(xs.shape[1])
        sd = np.where(np.isfinite(sd) & (sd > 0), sd, 1.0)
        sa_gap = float(np.median((np.abs(xs[truth] - ys) / sd).mean(axis=1)))
    return qi_share, sa_gap


__all__ = ["LinkageError", "Release", "as_release", "check_columns", "check_truth", "derive",
           "numeric_matrix"]
