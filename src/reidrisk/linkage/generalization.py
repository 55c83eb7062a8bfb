"""Released QI values read as the original values they cover: generalization as releases write it.

A released QI value that the original column never holds (compared in ``_keys.canonical``
spelling) is read as a generalization label (docs/design/linkage.md#generalized-releases):

- a range of numbers: ``30-39`` (both ends included), ``[30,40)``, ``(30,40]``, ``[30,40]``,
  ``(30,40)`` (an empty end is unbounded: ``[90,)``);
- a top or bottom code: ``90+``, ``>=90``, ``>90``, ``<20``, ``<=20``;
- a set: ``a|b|c``, each element a value or one of the above;
- suppression: ``*`` (any value, also ``**``...).

Any other value is a plain value and covers only itself. A released row then matches an original
row when, on every QI column, its value covers the original's. Codes that carry no notation
(a decade floor ``30`` for 30-39, a quintile index, merged categories) need the publisher's
recode map (``RecodeMap``: original value or label -> released code), applied to the original
first.

Matching stays exact-key matching (``_keys``): the labels of a column are put in layers so that
no two labels of a layer cover the same original value (global recoding needs one layer;
suppression ``*`` or a label overlapping another, as local recoding writes, adds one); each
original value gets, per layer, the code of the label covering it. Released rows with the same
layer on every column form a group whose rows and original rows are keyed on one code book.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from reidrisk.data.io import read_table
from reidrisk.linkage._keys import canonical, canonical_codes, combine
from reidrisk.linkage.release import LinkageError

_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_DASH = re.compile(rf"^({_NUM})\s*-\s*({_NUM})$")
_BRACKET = re.compile(rf"^([\[(])\s*({_NUM}|-inf)?\s*[,;]\s*({_NUM}|\+?inf)?\s*([\])])$")
_TOP = re.compile(rf"^({_NUM})\s*\+$")
_COMPARE = re.compile(rf"^(>=|<=|>|<|≥|≤)\s*({_NUM})$")
_ANY = re.compile(r"^\*+$")


@dataclass(frozen=True)
class Label:
    """One released value read as the set of original values it covers.

    Parameters
    ----------
    kind : str
        ``"value"`` (covers the value ``text``), ``"range"`` (numbers between ``lo`` and ``hi``),
        ``"set"`` (the union of ``parts``) or ``"any"`` (suppression: everything).
    text : str
        The label as published (canonical spelling).
    lo, hi : float
        The range's ends (``-inf`` / ``inf`` when unbounded).
    lo_closed, hi_closed : bool
        Whether each end is included.
    parts : tuple of Label
        The elements of a set.
    """

    kind: str
    text: str
    lo: float = -np.inf
    hi: float = np.inf
    lo_closed: bool = True
    hi_closed: bool = True
    parts: tuple[Label, ...] = ()

    def covers(self, values: np.ndarray, numbers: np.ndarray) -> np.ndarray:
        """Which of the original column's distinct values the label covers.

        Parameters
        ----------
        values : numpy.ndarray of object
            Distinct original values, canonical spelling.
        numbers : numpy.ndarray float64
            The same values as numbers (NaN where not a number).

        Returns
        -------
        numpy.ndarray bool
            One flag per value.
        """
        if self.kind == "any":
            return np.ones(len(values), dtype=bool)
        if self.kind == "value":
            return values == self.text
        if self.kind == "set":
            out = np.zeros(len(values), dtype=bool)
            for part in self.parts:
                out |= part.covers(values, numbers)
            return out
        with np.errstate(invalid="ignore"):
            above = numbers >= self.lo if self.lo_closed else numbers > self.lo
            below = numbers <= self.hi if self.hi_closed else numbers < self.hi
        return above & below


def _number(text: str | None, default: float) -> float:
    return default if text is None else float(text)


def parse_label(value) -> Label | None:
    """The generalization ``value`` is written in, or ``None`` for a plain value (module docstring).

    Parameters
    ----------
    value : object
        One released QI value.

    Returns
    -------
    Label or None
        The label; ``None`` when ``value`` is no range, top/bottom code, set or suppression (a
        range whose low end exceeds its high end is no range: ``2020-01`` stays a value).
    """
    if not isinstance(value, str):
        return None
    text = value.strip()
    if "|" in text:
        parts = tuple(parse_label(p) or Label("value", canonical(p)) for p in text.split("|"))
        return Label("set", text, parts=parts)
    if _ANY.match(text):
        return Label("any", text)
    m = _DASH.match(text)
    if m:
        lo, hi = float(m.group(1)), float(m.group(2))
        return Label("range", text, lo, hi) if lo <= hi else None
    m = _BRACKET.match(text)
    if m:
        lo, hi = _number(m.group(2), -np.inf), _number(m.group(3), np.inf)
        if lo > hi:
            return None
        return Label("range", text, lo, hi, m.group(1) == "[", m.group(4) == "]")
    m = _TOP.match(text)
    if m:
        return Label("range", text, float(m.group(1)), np.inf)
    m = _COMPARE.match(text)
    if m:
        op, bound = m.group(1), float(m.group(2))
        if op in (">=", ">", "≥"):
            return Label("range", text, bound, np.inf, lo_closed=op != ">")
        return Label("range", text, -np.inf, bound, hi_closed=op != "<")
    return None


def _numbers(values: np.ndarray) -> np.ndarray:
    return pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(np.float64)


@dataclass(frozen=True, eq=False)
class _Column:
    """One QI column: codes of X's and Y's distinct values and, per layer, the Y value covering
    each X value (-1: none)."""

    xcodes: np.ndarray          # (n,) code of each X row's canonical value
    ycodes: np.ndarray          # (m,) code of each Y row's canonical value
    owners: np.ndarray          # (layers, distinct X values) Y code covering it, -1 none
    layer: np.ndarray           # (distinct Y values,) layer of each Y value
    uncovered: np.ndarray       # (distinct Y values,) bool: covers no X value
    yvalues: np.ndarray         # distinct Y values (canonical)


def _read_column(xcol, ycol, read_labels: bool) -> _Column:
    xcodes, xu = canonical_codes(xcol)
    ycodes, yu = canonical_codes(ycol)
    index = {v: i for i, v in enumerate(xu) if not pd.isna(v)}
    missing = np.flatnonzero(pd.isna(pd.Series(xu, dtype=object)).to_numpy())
    numbers = _numbers(xu) if read_labels else np.zeros(0)
    layers = [np.full(len(xu), -1, dtype=np.int64)]
    layer = np.zeros(len(yu), dtype=np.int64)
    uncovered = np.zeros(len(yu), dtype=bool)
    for j, v in enumerate(yu):             # one step per distinct released value, not per row
        if pd.isna(v):
            covered = missing
        elif v in index:
            covered = np.array([index[v]])
        else:
            label = parse_label(v) if read_labels else None
            covered = (np.flatnonzero(label.covers(xu, numbers)) if label is not None
                       else np.zeros(0, dtype=np.int64))
        if not len(covered):
            uncovered[j] = True
            continue
        k = next((i for i, owner in enumerate(layers) if (owner[covered] < 0).all()), len(layers))
        if k == len(layers):
            layers.append(np.full(len(xu), -1, dtype=np.int64))
        layers[k][covered] = j
        layer[j] = k
    return _Column(xcodes, ycodes, np.vstack(layers), layer, uncovered, yu)


@dataclass(frozen=True, eq=False)
class QIMatch:
    """Released QI vectors read against the original rows (module docstring).

    Parameters
    ----------
    groups : tuple of (rows, kx, ky)
        Released rows read on one layer per column (``rows``, int64), the key of every original
        row (``kx``, (n,)) and of each of those released rows (``ky``): a released row matches an
        original row exactly when their keys are equal.
    unmatched : numpy.ndarray bool (m,)
        Released rows no original row matches.
    columns : tuple
        Per QI column, the codes and layers (for ``mismatches``).
    qi : tuple of str
        The QI columns, in the order of ``columns``.
    """

    groups: tuple[tuple[np.ndarray, np.ndarray, np.ndarray], ...]
    unmatched: np.ndarray
    columns: tuple[_Column, ...]
    qi: tuple[str, ...]

    @property
    def unmatched_share(self) -> float:
        """Share of the released rows that no original row matches."""
        return float(self.unmatched.mean()) if len(self.unmatched) else 0.0

    def mismatches(self, yrows: np.ndarray, xrows: np.ndarray) -> np.ndarray:
        """For pairs (released row, original row), the number of QI columns whose released value
        does not cover the original's.

        Parameters
        ----------
        yrows, xrows : numpy.ndarray int
            Row positions of the release and of the original, broadcast against each other.

        Returns
        -------
        numpy.ndarray int64
            The counts, of the broadcast shape.
        """
        yrows, xrows = np.broadcast_arrays(np.asarray(yrows), np.asarray(xrows))
        out = np.zeros(yrows.shape, dtype=np.int64)
        for col in self.columns:
            yc = col.ycodes[yrows]
            out += col.owners[col.layer[yc], col.xcodes[xrows]] != yc
        return out

    def as_released(self, original: pd.DataFrame) -> pd.DataFrame:
        """``original`` with each QI value replaced by the released value of the first layer that
        covers it (the value itself when none does): the original tabulated in the release's
        categories, for the scores by QI value (U2, U3).

        Parameters
        ----------
        original : pandas.DataFrame
            The original table this match was read against.

        Returns
        -------
        pandas.DataFrame
            The copy.
        """
        out = original.copy()
        for name, col in zip(self.qi, self.columns):
            owner = col.owners[0][col.xcodes]
            hit = owner >= 0
            if hit.any():
                values = original[name].astype(object).to_numpy(copy=True)
                values[hit] = col.yvalues[owner[hit]]
                out[name] = values
        return out

    def note(self) -> str | None:
        """A warning when some released rows match no original row.

        Returns
        -------
        str or None
            One sentence with their share and the released values that cover nothing; ``None``
            when every row matches.
        """
        k = int(self.unmatched.sum())
        if not k:
            return None
        bad = []
        for name, col in zip(self.qi, self.columns):
            values = [str(v) for v in col.yvalues[col.uncovered]]
            if values:
                bad.append(f"{name}: {', '.join(repr(v) for v in values[:3])}"
                           f"{' ...' if len(values) > 3 else ''}")
        where = (f"; released values that cover no original value: {'; '.join(bad)}" if bad
                 else " (each value matches, but no original row has the combination)")
        return (f"{k} of {len(self.unmatched)} released rows ({self.unmatched_share:.1%}) match no "
                f"original row on their QI values{where}. E1, E2 and EUC1 give up on them and EUC2 "
                "searches every row; if the release writes codes (a decade floor, a quintile "
                "index, merged categories), give the recode map (--recode)")


def read_release(original: pd.DataFrame, release: pd.DataFrame, qi: Sequence[str], *,
                 read_labels: bool = True) -> QIMatch:
    """Read the release's QI values against the original's (module docstring).

    Parameters
    ----------
    original, release : pandas.DataFrame
        X and Y, holding the ``qi`` columns.
    qi : sequence of str
        The QI columns.
    read_labels : bool
        Read ranges, sets, top/bottom codes and ``*`` (default); ``False``: a released value
        matches only the same value.

    Returns
    -------
    QIMatch
        The groups of released rows with their keys, and the rows that match nothing.
    """
    n, m = len(original), len(release)
    cols = tuple(_read_column(original[c], release[c], read_labels) for c in qi)
    if not cols:
        zero_x, zero_y = np.zeros(n, dtype=np.int64), np.zeros(m, dtype=np.int64)
        return QIMatch(((np.arange(m), zero_x, zero_y),), np.zeros(m, dtype=bool), (), ())
    pattern = np.stack([c.layer[c.ycodes] for c in cols], axis=1)
    if pattern.any():
        pid, kinds = pd.factorize(combine(list(pattern.T), [c.owners.shape[0] for c in cols], m))
        members = [np.flatnonzero(pid == p) for p in range(len(kinds))]
    else:
        members = [np.arange(m)]
    groups = []
    unmatched = np.zeros(m, dtype=bool)
    for rows in members:
        lay = pattern[rows[0]] if len(rows) else np.zeros(len(cols), dtype=np.int64)
        xc, yc, sizes = [], [], []
        for c, k in zip(cols, lay):
            owner = c.owners[k][c.xcodes]
            size = len(c.yvalues) + 1
            xc.append(np.where(owner < 0, size - 1, owner))
            yc.append(c.ycodes[rows])
            sizes.append(size)
        key = combine([np.concatenate((a, b)) for a, b in zip(xc, yc)], sizes, n + len(rows))
        key = pd.factorize(key)[0].astype(np.int64)
        kx, ky = key[:n], key[n:]
        unmatched[rows] = ~np.isin(ky, kx)
        groups.append((rows, kx, ky))
    return QIMatch(tuple(groups), unmatched, cols, tuple(qi))


@dataclass(frozen=True)
class RecodeMap:
    """A publisher's recoding of QI values: for each column, original values (or labels of the
    module docstring covering them: ``[30,40)``, ``a|b``) -> the released code.

    Parameters
    ----------
    columns : dict of str to tuple of (str, str)
        Column -> (source, code) pairs, canonical spelling.
    source : str
        Where the map was read from, for messages.
    """

    columns: dict[str, tuple[tuple[str, str], ...]]
    source: str = "the recode map"

    @classmethod
    def from_file(cls, path: str | Path) -> RecodeMap:
        """Read a map from TOML (a table per column: ``[age]`` then ``"[30,40)" = 30``) or CSV
        (columns ``column,value,code``).

        Parameters
        ----------
        path : str or Path
            The file (``.toml`` or a table ``read_table`` reads).

        Returns
        -------
        RecodeMap
            The map.
        """
        path = Path(path)
        where = repr(str(path))
        pairs: dict[str, list[tuple[str, str]]] = {}
        if path.suffix.lower() == ".toml":
            try:
                doc = tomllib.loads(path.read_text(encoding="utf-8"))
            except (OSError, tomllib.TOMLDecodeError) as exc:
                raise LinkageError(f"{where} is not a readable TOML recode map: {exc}") from None
            for column, table in doc.items():
                if not isinstance(table, dict) or any(isinstance(v, (dict, list))
                                                      for v in table.values()):
                    raise LinkageError(f"{where}: {column!r} must be a table of value = code "
                                       "pairs, e.g. [age] then \"[30,40)\" = 30")
                pairs[column] = [(str(k), str(v)) for k, v in table.items()]
        else:
            frame = read_table(path)
            need = ["column", "value", "code"]
            if [c for c in need if c not in frame.columns]:
                raise LinkageError(f"{where} has columns {list(frame.columns)}; a recode map "
                                   "table has the columns column,value,code (one row per "
                                   "original value or label and its released code)")
            for column, value, code in frame[need].itertuples(index=False):
                pairs.setdefault(str(column), []).append((str(value), str(code)))
        return cls({c: tuple(p) for c, p in pairs.items()}, where)

    def apply(self, frame: pd.DataFrame, qi: Sequence[str] | None = None) -> pd.DataFrame:
        """``frame`` (the original) with each mapped column's values replaced by their codes;
        values no source covers are kept.

        Parameters
        ----------
        frame : pandas.DataFrame
            The original table (not modified).
        qi : sequence of str, optional
            The QI columns; a mapped column outside them (or absent) is a ``LinkageError``.

        Returns
        -------
        pandas.DataFrame
            The recoded copy.
        """
        allowed = list(frame.columns) if qi is None else list(qi)
        stray = [c for c in self.columns if c not in allowed or c not in frame.columns]
        if stray:
            raise LinkageError(f"{self.source} maps the column(s) {stray}, which are not QI "
                               f"columns of the table ({allowed}); map QI columns only")
        out = frame.copy()
        for column, pairs in self.columns.items():
            codes, values = canonical_codes(frame[column])
            numbers = _numbers(values)
            mapped = np.full(len(values), None, dtype=object)
            for source, code in pairs:
                label = parse_label(source) or Label("value", canonical(source))
                hit = label.covers(values, numbers)
                clash = hit & (mapped != None) & (mapped != canonical(code))  # noqa: E711
                if clash.any():
                    v = values[np.flatnonzero(clash)[0]]
                    raise LinkageError(f"{self.source}, column {column!r}: value {v!r} is mapped to "
                                       f"both {mapped[np.flatnonzero(clash)[0]]!r} and {code!r}; "
                                       "give each original value one code")
                mapped[hit] = canonical(code)
            keep = np.array([v is None for v in mapped])
            mapped[keep] = values[keep]
            out[column] = mapped[codes]
        return out


__all__ = ["Label", "QIMatch", "RecodeMap", "parse_label", "read_release"]
