"""A data holder's table, checked and encoded for the risk assessment.

``prepare_table`` turns a frame and the user's choice of quasi-identifiers (QIs), sensitive
attributes (SAs), survey weights and bins into codes, refusing at once — naming the table, the
column, the value and the fix — what no measure could read rightly: a continuous QI (bin it), a
column with one value, a QI that is also an SA, duplicate column names, bad weights, an empty
table. ``suggest_qis`` proposes QIs for the user to confirm when none are given.

Missing values (empty, ``?``, ``NA``, ``nan``, ``NaN``, and any ``na_values`` given) are coded
``MISSING``; how each measure reads them is stated in ``reidrisk.assess.classes``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from reidrisk.assess.classes import MISSING, AssessError
from reidrisk.schema import MISSING_MARKERS, Attribute, Schema

MAX_CATEGORIES = 50
"""A QI with more distinct values than this is continuous: it must be binned (``bins``)."""

MAX_SENSITIVE_VALUES = 1000
"""A sensitive attribute with more distinct values than this is refused (bin it first)."""

QI_NAME_HINTS = (
    "age", "birth", "dob", "sex", "gender", "race", "ethnic", "marital", "education", "occupation",
    "job", "work", "zip", "postcode", "postal", "country", "region", "state", "county", "city",
    "nationality", "religion", "relationship", "household", "income", "language",
)
"""Words that mark a column as a likely quasi-identifier in ``suggest_qis`` (demographic and
geographic attributes an attacker can know from public sources: Sweeney 2000; El Emam 2013)."""


@dataclass(frozen=True)
class Sensitive:
    """One sensitive attribute, encoded.

    Parameters
    ----------
    name : str
        The column.
    categories : tuple of str
        Its values, in order (numeric values in numeric order).
    codes : numpy.ndarray (n,) int32
        Codes into ``categories``, ``MISSING`` when missing.
    ordered : bool
        Numeric values: t-closeness uses the ordered distance, else the equal distance.
    """

    name: str
    categories: tuple[str, ...]
    codes: np.ndarray
    ordered: bool


@dataclass(frozen=True)
class PreparedTable:
    """A table ready for ``reidrisk.assess.assess``.

    Parameters
    ----------
    source : str
        The file (or a name) the table came from, for messages.
    schema : Schema
        The QIs' domains (bins as given).
    codes : numpy.ndarray (n, q) int32
        QI codes, ``MISSING`` when missing.
    sensitive : tuple of Sensitive
        The sensitive attributes.
    weights : numpy.ndarray (n,) or None
        Survey weights (None: none given); with ``counts``, the sum of the weights of each row's
        records.
    counts : numpy.ndarray (n,) int64 or None
        How many records each row stands for (a table aggregated to its distinct rows,
        ``reidrisk.assess.stream``); None: one record a row.
    """

    source: str
    schema: Schema
    codes: np.ndarray
    sensitive: tuple[Sensitive, ...]
    weights: np.ndarray | None
    counts: np.ndarray | None = None

    @property
    def rows(self) -> int:
        """The rows of ``codes``."""
        return int(self.codes.shape[0])

    @property
    def n(self) -> int:
        """The records the table holds."""
        return self.rows if self.counts is None else int(self.counts.sum())

    @property
    def multiplicity(self) -> np.ndarray:
        """How many records each row stands for (ones without ``counts``)."""
        return np.ones(self.rows) if self.counts is None else self.counts.astype(np.float64)

    @property
    def qis(self) -> list[str]:
        return self.schema.names


def split_names(values: Sequence[str] | str | None) -> list[str]:
    """Column names from repeated options, each also a comma list (``--qi a --qi b,c``).

    Parameters
    ----------
    values : sequence of str, str or None
        The option's values.

    Returns
    -------
    list of str
        The names, stripped, empty ones dropped.
    """
    if values is None:
        return []
    items = [values] if isinstance(values, str) else list(values)
    return [part.strip() for item in items for part in str(item).split(",") if part.strip()]


def parse_bins(values: Sequence[str] | None) -> dict[str, float]:
    """``NAME=WIDTH`` options as ``{name: width}``.

    Parameters
    ----------
    values : sequence of str or None
        The ``--bin`` values.

    Returns
    -------
    dict of str to float
        Column to bin width.

    Raises
    ------
    AssessError
        For a value without ``=`` or a width that is not a positive number.
    """
    out: dict[str, float] = {}
    for item in values or ():
        name, sep, width = str(item).rpartition("=")
        try:
            w = float(width)
        except ValueError:
            w = float("nan")
        if not sep or not name or not np.isfinite(w) or w <= 0:
            raise AssessError(f"--bin {item!r}: write COLUMN=WIDTH with a positive width, e.g. "
                              "--bin age=10 (age in bins 0-9, 10-19, ...)")
        out[name.strip()] = w
    return out


def missing_mask(values: pd.Series, na_values: Sequence[str] = ()) -> np.ndarray:
    """Where a value is missing.

    Parameters
    ----------
    values : pandas.Series
        The values.
    na_values : sequence of str
        Further texts that mean "missing" (beside NaN, None and ``MISSING_MARKERS``).

    Returns
    -------
    numpy.ndarray of bool
        True where missing.
    """
    miss = values.isna().to_numpy().copy()
    if values.dtype == object or pd.api.types.is_string_dtype(values.dtype):
        text = values.astype("string").str.strip()
        miss |= text.isin(list(MISSING_MARKERS) + list(na_values)).fillna(True).to_numpy(bool)
    return miss


def _numbers(values: pd.Series) -> np.ndarray | None:
    """The values as floats when every one is a number, else None."""
    nums = pd.to_numeric(values, errors="coerce")
    return None if nums.isna().any() else nums.to_numpy(np.float64)


def labels_of(values: pd.Series) -> np.ndarray:
    """Present values as the labels the assessment reads.

    Parameters
    ----------
    values : pandas.Series
        Values, none missing.

    Returns
    -------
    numpy.ndarray of object
        Stripped text; when every value is a number, whole numbers without a decimal part
        (``3.0`` -> ``"3"``).
    """
    nums = _numbers(values)
    if nums is not None:
        whole = np.isfinite(nums) & (nums == np.round(nums))
        out = values.astype(str).str.strip().to_numpy(object)
        out[whole] = nums[whole].astype(np.int64).astype(str)
        return out
    return values.astype(str).str.strip().to_numpy(object)


def _ordered_categories(labels: np.ndarray) -> tuple[tuple[str, ...], bool]:
    uniq = np.unique(labels.astype(str))
    nums = pd.to_numeric(pd.Series(uniq), errors="coerce")
    if nums.notna().all():
        return tuple(uniq[np.argsort(nums.to_numpy(), kind="stable")].tolist()), True
    return tuple(sorted(uniq.tolist(), key=_natural_key)), False


def _natural_key(text: str):
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", text)]


def _encode_column(frame: pd.DataFrame, name: str, source: str, na_values: Sequence[str],
                   width: float | None, max_values: int, role: str
                   ) -> tuple[Attribute | None, tuple[str, ...], np.ndarray, bool]:
    col = frame[name]
    miss = missing_mask(col, na_values)
    present = col[~miss]
    codes = np.full(len(col), MISSING, dtype=np.int32)
    if present.empty:
        raise AssessError(f"{source}: column {name!r} ({role}) holds no value; every row is missing. "
                          "Leave it out")
    if width is not None:
        nums = _numbers(present)
        if nums is None:
            bad = present[pd.to_numeric(present, errors="coerce").isna()].iloc[0]
            raise AssessError(f"{source}: --bin {name}={width:g} needs numbers, but column {name!r} "
                              f"holds {str(bad)!r}; mark such values missing (--na) or drop the bin")
        lo = np.floor(nums.min() / width) * width
        hi = (np.floor(nums.max() / width) + 1) * width
        edges = np.arange(lo, hi + width / 2, width)
        attr = Attribute.binned(name, edges)
        codes[~miss] = attr.encode(pd.Series(nums))
        return attr, attr.categories, codes, True
    labels = labels_of(present)
    cats, ordered = _ordered_categories(labels)
    if len(cats) > max_values:
        numeric = _numbers(present) is not None
        fix = (f"bin it, e.g. --bin {name}=10, or leave it out" if numeric else
               "merge its rare values into groups first, or leave it out")
        kind = "numbers" if numeric else "values"
        raise AssessError(f"{source}: column {name!r} ({role}) has {len(cats)} distinct {kind}, more "
                          f"than {max_values}: it is {'continuous' if numeric else 'near-unique'} and "
                          f"would make every record unique; {fix}")
    lookup = {c: i for i, c in enumerate(cats)}
    codes[~miss] = pd.Series(labels).map(lookup).to_numpy(np.int32)
    if role == "QI" and len(cats) < 2:
        raise AssessError(f"{source}: column {name!r} (QI) has the single value {cats[0]!r}; it "
                          "singles out no one. Leave it out of --qi")
    return (Attribute(name, cats) if len(cats) >= 2 else None), cats, codes, ordered


def _check_weights(frame: pd.DataFrame, name: str, source: str) -> np.ndarray:
    raw = frame[name]
    nums = pd.to_numeric(raw, errors="coerce").to_numpy(np.float64)
    bad = ~np.isfinite(nums) | (nums <= 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        value = raw.iloc[i]
        what = "not a number" if not np.isfinite(nums[i]) else "not positive"
        raise AssessError(
            f"{source}: weight column {name!r}, row {i + 1} holds {str(value)!r} ({what}; "
            f"{int(bad.sum())} such rows): a survey weight is the number of people a record stands "
            "for, a positive number. Fix or drop those rows, or leave --weight out")
    return nums


def check_columns(columns: Sequence, source: str) -> None:
    """Refuse duplicate column names (a reader would rename the second one silently).

    Parameters
    ----------
    columns : sequence
        The header's names.
    source : str
        The file, for the message.

    Raises
    ------
    AssessError
        Naming the first repeated name.
    """
    seen: set[str] = set()
    for c in columns:
        if str(c) in seen:
            raise AssessError(f"{source}: the column name {str(c)!r} appears twice in the header; "
                              "rename one of them so that each column has its own name")
        seen.add(str(c))


def prepare_table(frame: pd.DataFrame, qi: Sequence[str], sa: Sequence[str] = (),
                  weight: str | None = None, bins: Mapping[str, float] | None = None,
                  na_values: Sequence[str] = (), source: str = "the table",
                  max_categories: int = MAX_CATEGORIES) -> PreparedTable:
    """Check and encode a table for the assessment.

    Parameters
    ----------
    frame : pandas.DataFrame
        The table (text or typed columns).
    qi : sequence of str
        The quasi-identifiers: what an attacker may know about a person.
    sa : sequence of str
        The sensitive attributes: what must not be learned.
    weight : str, optional
        A survey-weight column (each record stands for that many people; sdcMicro's meaning).
    bins : mapping of str to float, optional
        Equal-width bins for numeric QIs or SAs (``{"age": 10}``).
    na_values : sequence of str
        Further texts that mean "missing".
    source : str
        The file, for messages.
    max_categories : int
        The most distinct values of an unbinned QI.

    Returns
    -------
    PreparedTable
        The encoded table.

    Raises
    ------
    AssessError
        For an empty table, no QI, a column named twice or in two roles, an unknown column, a
        continuous or constant QI, bad weights.
    """
    bins = dict(bins or {})
    check_columns(frame.columns, source)
    qi, sa = split_names(qi), split_names(sa)
    if not qi:
        raise AssessError(f"{source}: name the quasi-identifiers with --qi (what an attacker may "
                          "know, e.g. --qi age,sex,zip); `reidrisk assess FILE` suggests some")
    for role, names in (("--qi", qi), ("--sa", sa)):
        dup = sorted({c for c in names if names.count(c) > 1})
        if dup:
            raise AssessError(f"{source}: {role} names {dup} twice; name each column once")
    both = sorted(set(qi) & set(sa))
    if both:
        raise AssessError(f"{source}: {both} given as both QI and SA; a column is either what the "
                          "attacker knows (--qi) or what must stay hidden (--sa), not both")
    wanted = qi + sa + ([weight] if weight else [])
    absent = [c for c in wanted if c not in frame.columns]
    if absent:
        raise AssessError(f"{source}: no column {absent[0]!r}; the columns are "
                          f"{', '.join(map(str, frame.columns))}")
    if weight and weight in qi + sa:
        raise AssessError(f"{source}: the weight column {weight!r} cannot also be a QI or SA")
    unknown_bins = sorted(set(bins) - set(qi) - set(sa))
    if unknown_bins:
        raise AssessError(f"{source}: --bin names {unknown_bins}, which are not among the QIs or SAs")
    if len(frame) == 0:
        raise AssessError(f"{source}: the table has a header but no rows; nothing to assess")
    attrs, columns = [], []
    for name in qi:
        attr, _, codes, _ = _encode_column(frame, name, source, na_values, bins.get(name),
                                           max_categories, "QI")
        assert attr is not None
        attrs.append(attr)
        columns.append(codes)
    sens = []
    for name in sa:
        _, cats, codes, ordered = _encode_column(frame, name, source, na_values, bins.get(name),
                                                 MAX_SENSITIVE_VALUES, "SA")
        sens.append(Sensitive(name, cats, codes, ordered))
    w = _check_weights(frame, weight, source) if weight else None
    return PreparedTable(source, Schema(tuple(attrs)), np.column_stack(columns).astype(np.int32),
                         tuple(sens), w)


def suggest_qis(frame: pd.DataFrame, na_values: Sequence[str] = (),
                max_categories: int = MAX_CATEGORIES) -> list[tuple[str, str]]:
    """Columns likely to be quasi-identifiers, each with the reason, for the user to confirm.

    The rule: a column is suggested when its name holds a word of ``QI_NAME_HINTS`` (demographic
    or geographic) and it has 2 to ``max_categories`` distinct values, or a numeric column with
    such a name and more values (to be binned). Columns with a distinct value in more than half
    of the rows are direct identifiers or free text, not QIs, and are never suggested.

    Parameters
    ----------
    frame : pandas.DataFrame
        The table.
    na_values : sequence of str
        Further texts that mean "missing".
    max_categories : int
        As in ``prepare_table``.

    Returns
    -------
    list of (str, str)
        The suggested columns and why.
    """
    out = []
    n = max(len(frame), 1)
    for name in frame.columns:
        text = str(name).lower()
        hint = next((h for h in QI_NAME_HINTS if h in re.split(r"[^a-z]+", text) or
                     text.startswith(h)), None)
        if hint is None:
            continue
        col = frame[name]
        present = col[~missing_mask(col, na_values)]
        distinct = present.astype(str).str.strip().nunique()
        if distinct < 2 or distinct > n / 2:
            continue
        if distinct <= max_categories:
            out.append((str(name), f"{hint!r} in its name; {distinct} values"))
        elif _numbers(present) is not None:
            out.append((str(name), f"{hint!r} in its name; numeric, {distinct} values: bin it "
                                   f"(--bin {name}=WIDTH)"))
    return out


__all__ = [
    "MAX_CATEGORIES",
    "MAX_SENSITIVE_VALUES",
    "PreparedTable",
    "QI_NAME_HINTS",
    "Sensitive",
    "check_columns",
    "labels_of",
    "missing_mask",
    "parse_bins",
    "prepare_table",
    "split_names",
    "suggest_qis",
]
