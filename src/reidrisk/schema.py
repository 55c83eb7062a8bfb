"""Categorical schemas with missing values: attributes, domains, binning, encode/decode.

Every capability works on an *encoded* integer matrix of shape (n, g): column j holds the index of
the record's category in ``schema.attributes[j].categories`` (declared order), or ``MISSING`` (-1)
where the value is absent. A missing value is a state of its own, never a category: it is not
randomized and not counted (docs/design/core.md#conventions).

Numeric columns are binned first, by declared edges or by quantiles; the bins become ordered
categories labelled ``"[lo, hi)"``. A categorical attribute may also merge raw values into fewer
declared categories (``Attribute.grouped``), as paper 004 does to bring Adult to 2..9 categories.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from reidrisk._files import atomic_write
from reidrisk.errors import ReidriskError

MISSING: int = -1
"""Code of a missing value in an encoded matrix."""

SCHEMA_FORMAT_VERSION = 1


class SchemaError(ReidriskError, ValueError):
    """Data does not fit the declared schema. The message names the column, the value and the fix."""


MISSING_MARKERS: tuple[str, ...] = ("", "?", "NA", "nan", "NaN")
"""Raw text values read as missing (after stripping surrounding blanks)."""


def _is_missing(values: pd.Series) -> np.ndarray:
    missing = values.isna().to_numpy().copy()
    if values.dtype == object or pd.api.types.is_string_dtype(values.dtype):
        stripped = values.astype("string").str.strip()
        missing |= stripped.isin(list(MISSING_MARKERS)).fillna(True).to_numpy(bool)
    return missing


def _labels(values: pd.Series) -> np.ndarray:
    """Present raw values as stripped text labels (object array).

    Whole floats print without the ``.0`` (``3.0`` -> ``"3"``): an integer column that picked up a
    NaN is still matched against the labels ``"0", "1", ...``.
    """
    if pd.api.types.is_float_dtype(values.dtype):
        arr = values.to_numpy(float)
        whole = np.isfinite(arr) & (arr == np.round(arr))
        out = values.astype(str).to_numpy(object)
        out[whole] = arr[whole].astype(np.int64).astype(str)
        return out
    return values.astype(str).str.strip().to_numpy(object)


@dataclass(frozen=True)
class Attribute:
    """One categorical attribute with a fixed, declared domain.

    Parameters
    ----------
    name : str
        The column name.
    categories : tuple of str
        Labels in declared order (the order matters for the copula's CDFs).
    edges : tuple of float, optional
        Set for a binned numeric attribute: ``len(edges) == len(categories) + 1``, bins are
        half-open ``[edges[i], edges[i+1])`` except the last, which is closed.
    aliases : tuple of (str, str)
        Further raw labels mapped onto declared categories, as ``(raw, category)`` pairs (see
        ``grouped``); decoding always yields the declared category.
    """

    name: str
    categories: tuple[str, ...]
    edges: tuple[float, ...] | None = None
    aliases: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if not self.name:
            raise SchemaError("an attribute needs a non-empty name")
        cats = tuple(str(c) for c in self.categories)
        object.__setattr__(self, "categories", cats)
        if len(cats) < 2:
            raise SchemaError(
                f"attribute {self.name!r} has {len(cats)} categories; a domain needs at least 2 "
                "(drop a constant column or declare its other values)"
            )
        if len(set(cats)) != len(cats):
            dupes = sorted({c for c in cats if cats.count(c) > 1})
            raise SchemaError(f"attribute {self.name!r} declares duplicate categories {dupes}")
        if self.edges is not None:
            edges = tuple(float(e) for e in self.edges)
            object.__setattr__(self, "edges", edges)
            if len(edges) != len(cats) + 1 or np.any(np.diff(edges) <= 0):
                raise SchemaError(
                    f"attribute {self.name!r}: edges must be strictly increasing with one more "
                    f"entry than categories ({len(cats) + 1}), got {len(edges)}"
                )
        aliases = tuple((str(raw), str(cat)) for raw, cat in dict(self.aliases).items())
        object.__setattr__(self, "aliases", aliases)
        for raw, cat in aliases:
            if cat not in cats:
                raise SchemaError(
                    f"attribute {self.name!r}: alias {raw!r} points to {cat!r}, which is not a "
                    f"declared category {list(cats)}"
                )
            if raw in cats and raw != cat:
                raise SchemaError(
                    f"attribute {self.name!r}: {raw!r} is both a category and an alias of {cat!r}"
                )

    @property
    def size(self) -> int:
        """Domain size f."""
        return len(self.categories)

    @property
    def is_numeric(self) -> bool:
        return self.edges is not None

    @classmethod
    def binned(cls, name: str, edges: Sequence[float] | np.ndarray) -> Attribute:
        """A numeric attribute binned at declared ``edges``.

        Parameters
        ----------
        name : str
            The column name.
        edges : sequence of float
            Bin edges, ascending; the outer edges are included.

        Returns
        -------
        Attribute
            The attribute.
        """
        edges = [float(e) for e in edges]
        labels = [f"[{_fmt(lo)}, {_fmt(hi)})" for lo, hi in zip(edges[:-1], edges[1:])]
        if labels:
            labels[-1] = labels[-1][:-1] + "]"
        return cls(name, tuple(labels), tuple(edges))

    @classmethod
    def grouped(cls, name: str, groups: Mapping[str, Sequence[str]]) -> Attribute:
        """A categorical attribute whose categories merge raw values.

        Parameters
        ----------
        name : str
            The column name.
        groups : mapping of str to sequence of str
            Each category (in declared order) and the raw labels it absorbs, e.g.
            ``{"School": ["9th", "10th"], "HS-grad": ["HS-grad"]}``. A raw label may appear in
            only one group.

        Returns
        -------
        Attribute
            The attribute.
        """
        aliases: dict[str, str] = {}
        for cat, raws in groups.items():
            if isinstance(raws, str):
                raws = [raws]
            for raw in raws:
                if raw in aliases and aliases[raw] != cat:
                    raise SchemaError(
                        f"attribute {name!r}: raw value {raw!r} is put in both {aliases[raw]!r} "
                        f"and {cat!r}; put it in one group"
                    )
                if raw != cat:
                    aliases[str(raw)] = str(cat)
        return cls(name, tuple(groups), None, tuple(aliases.items()))

    @classmethod
    def quantile_binned(cls, name: str, values: Iterable[float], bins: int) -> Attribute:
        """A numeric attribute binned at the empirical quantiles of ``values``.

        Parameters
        ----------
        name : str
            The column name.
        values : iterable of float
            The observed values.
        bins : int
            Number of bins asked for (ties are merged, so heavily tied columns get fewer, never
            fewer than 2).

        Returns
        -------
        Attribute
            The attribute.
        """
        if isinstance(bins, bool) or int(bins) != bins or bins < 2:
            raise SchemaError(f"attribute {name!r}: bins must be an integer >= 2, got {bins!r}")
        bins = int(bins)
        if not isinstance(values, pd.Series):
            values = pd.Series(values if isinstance(values, np.ndarray) else list(values))
        arr = pd.to_numeric(values, errors="coerce").dropna().to_numpy(float)
        if arr.size == 0:
            raise SchemaError(f"attribute {name!r}: no numeric values to take quantiles from")
        edges = np.unique(np.quantile(arr, np.linspace(0.0, 1.0, bins + 1)))
        if edges.size < 3:
            # Fewer than two distinct quantiles: split once, between distinct observed values.
            distinct = np.unique(arr)
            if distinct.size == 1:
                v = distinct[0]
                edges = np.array([v, v + 0.5, v + 1.0])
            else:
                med = float(np.median(arr))
                if med <= distinct[0]:
                    cut = 0.5 * (distinct[0] + distinct[1])
                elif med >= distinct[-1]:
                    cut = 0.5 * (distinct[-2] + distinct[-1])
                else:
                    cut = med
                edges = np.array([distinct[0], cut, distinct[-1]])
        return cls.binned(name, edges)

    def encode(self, values: Iterable | pd.Series) -> np.ndarray:
        """Map raw values to codes (int32, ``MISSING`` for absent values).

        Raises ``SchemaError`` naming the first unknown value and how to fix it.

        Parameters
        ----------
        values : iterable or pandas.Series
            Raw values (labels, numbers binned by ``edges``, or aliases); None/NaN for absent ones.

        Returns
        -------
        numpy.ndarray (n,) int32
            The codes.
        """
        if isinstance(values, pd.Series):
            series = values.reset_index(drop=True)
        else:
            arr = values if isinstance(values, np.ndarray) else list(values)
            series = pd.Series(arr, dtype=None if isinstance(arr, np.ndarray) else object)
        missing = _is_missing(series)
        codes = np.full(len(series), MISSING, dtype=np.int32)
        present = ~missing
        if self.edges is not None:
            raw_present = series[present]
            nums = pd.to_numeric(raw_present, errors="coerce").to_numpy(float)
            # A bin's own label ("[17, 25)") encodes to that bin, so decode -> encode round-trips.
            as_label = np.full(nums.shape, MISSING, dtype=np.int32)
            if np.isnan(nums).any():
                label_idx = {c: i for i, c in enumerate(self.categories)}
                text = raw_present.astype(str).str.strip().to_numpy(object)
                nan_rows = np.flatnonzero(np.isnan(nums))
                as_label[nan_rows] = (pd.Series(text[nan_rows]).map(label_idx)
                                      .fillna(MISSING).to_numpy(np.int32))
            is_label = as_label != MISSING
            bad = ~is_label & (np.isnan(nums) | (nums < self.edges[0]) | (nums > self.edges[-1]))
            if bad.any():
                first = np.flatnonzero(bad)[0]
                raw = raw_present.to_numpy()[first]
                raw = raw.item() if isinstance(raw, np.generic) else raw
                if np.isnan(nums[first]):
                    raise SchemaError(
                        f"column {self.name!r}: value {raw!r} is neither a number nor one of the "
                        f"bin labels {list(self.categories)}; fix the value or mark it missing"
                    )
                raise SchemaError(
                    f"column {self.name!r}: value {raw!r} is outside the binned range "
                    f"[{_fmt(self.edges[0])}, {_fmt(self.edges[-1])}]; widen the outer edges or "
                    "mark the value missing"
                )
            idx = np.searchsorted(self.edges, np.where(is_label, self.edges[0], nums),
                                  side="right") - 1
            codes[present] = np.where(is_label, as_label, np.clip(idx, 0, self.size - 1))
            return codes
        labels = _labels(series[present])
        lookup = {c: i for i, c in enumerate(self.categories)}
        lookup.update({raw: lookup[cat] for raw, cat in self.aliases})
        uniq, inv = np.unique(labels.astype(str), return_inverse=True)
        mapped = np.array([lookup.get(u, MISSING) for u in uniq], dtype=np.int32)
        if (mapped == MISSING).any():
            unknown = str(uniq[mapped == MISSING][0])
            raise SchemaError(
                f"column {self.name!r}: unknown category {unknown!r}; the schema declares "
                f"{list(self.categories)[:10]}{'...' if self.size > 10 else ''}. Add it to the "
                "schema or map it to a declared category"
            )
        codes[present] = mapped[inv]
        return codes

    def decode(self, codes: np.ndarray) -> np.ndarray:
        """Map codes back to labels (object array, ``None`` where missing).

        Parameters
        ----------
        codes : numpy.ndarray (n,)
            Codes of this attribute, ``MISSING`` where absent.

        Returns
        -------
        numpy.ndarray (n,) of object
            The labels.
        """
        codes = np.asarray(codes)
        out = np.empty(codes.shape, dtype=object)
        present = codes != MISSING
        out[present] = np.asarray(self.categories, dtype=object)[codes[present]]
        out[~present] = None
        return out

    def to_dict(self) -> dict:
        """The attribute as plain JSON-ready data (``from_dict`` reads it).

        Returns
        -------
        dict
            ``name``, ``categories`` and, when set, ``edges`` and ``aliases``.
        """
        d: dict = {"name": self.name, "categories": list(self.categories)}
        if self.edges is not None:
            d["edges"] = list(self.edges)
        if self.aliases:
            d["aliases"] = dict(self.aliases)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Attribute:
        """An attribute from its ``to_dict`` form.

        Parameters
        ----------
        d : dict
            ``name``, ``categories`` and optionally ``edges`` and ``aliases``.

        Returns
        -------
        Attribute
            The attribute.

        Raises
        ------
        SchemaError
            Naming the key the entry lacks.
        """
        try:
            return cls(
                d["name"],
                tuple(d["categories"]),
                tuple(d["edges"]) if d.get("edges") else None,
                tuple(dict(d.get("aliases") or {}).items()),
            )
        except KeyError as exc:
            raise SchemaError(f"schema entry {d!r} lacks the key {exc.args[0]!r}") from None


@dataclass(frozen=True)
class Schema:
    """An ordered list of categorical attributes.

    Parameters
    ----------
    attributes : tuple of Attribute
        The attributes, in column order.
    """

    attributes: tuple[Attribute, ...]
    _index: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        attrs = tuple(self.attributes)
        object.__setattr__(self, "attributes", attrs)
        if not attrs:
            raise SchemaError("a schema needs at least one attribute")
        names = [a.name for a in attrs]
        if len(set(names)) != len(names):
            raise SchemaError(f"duplicate attribute names in schema: {names}")
        object.__setattr__(self, "_index", {n: i for i, n in enumerate(names)})

    def __len__(self) -> int:
        return len(self.attributes)

    def __iter__(self):
        return iter(self.attributes)

    def __getitem__(self, key: int | str) -> Attribute:
        if isinstance(key, str):
            return self.attributes[self.index(key)]
        return self.attributes[key]

    def index(self, name: str) -> int:
        """Position of the attribute called ``name``.

        Parameters
        ----------
        name : str
            An attribute's name.

        Returns
        -------
        int
            Its column in encoded matrices.

        Raises
        ------
        SchemaError
            When the schema has no such attribute (the message lists those it has).
        """
        try:
            return self._index[name]
        except KeyError:
            raise SchemaError(f"no attribute {name!r}; the schema has {self.names}") from None

    @property
    def names(self) -> list[str]:
        return [a.name for a in self.attributes]

    @property
    def sizes(self) -> np.ndarray:
        """Domain sizes f_j as an int array of shape (g,)."""
        return np.array([a.size for a in self.attributes], dtype=np.int64)

    def select(self, names: Sequence[str]) -> Schema:
        """The schema of some attributes, in the order given.

        Parameters
        ----------
        names : sequence of str
            Attribute names.

        Returns
        -------
        Schema
            Those attributes.
        """
        return Schema(tuple(self[n] for n in names))

    # ---- encode / decode -------------------------------------------------------------------
    def encode(self, frame: pd.DataFrame) -> np.ndarray:
        """Encode a DataFrame into an int32 matrix (n, g) with ``MISSING`` = -1.

        Columns are matched by name; extra columns are ignored, absent ones are an error.

        Parameters
        ----------
        frame : pandas.DataFrame
            Raw records, one column per attribute.

        Returns
        -------
        numpy.ndarray (n, g) int32
            The codes.
        """
        if len(frame) == 0:
            raise SchemaError("the data has no rows; nothing to encode")
        absent = [n for n in self.names if n not in frame.columns]
        if absent:
            raise SchemaError(
                f"the data lacks the schema's column(s) {absent}; its columns are "
                f"{list(frame.columns)}. Fix the header or the schema"
            )
        return np.column_stack([a.encode(frame[a.name]) for a in self.attributes]).astype(np.int32)

    def decode(self, codes: np.ndarray) -> pd.DataFrame:
        """Decode an (n, g) code matrix into a DataFrame of labels (missing as None/NaN).

        Parameters
        ----------
        codes : numpy.ndarray (n, g)
            Encoded records.

        Returns
        -------
        pandas.DataFrame
            One column of labels per attribute.
        """
        codes = self.validate_codes(codes)
        return pd.DataFrame({a.name: a.decode(codes[:, j]) for j, a in enumerate(self.attributes)})

    def validate_codes(self, codes: np.ndarray) -> np.ndarray:
        """Check an encoded matrix against the schema; return it as int32 (n, g).

        Parameters
        ----------
        codes : array_like (n, g)
            Encoded records.

        Returns
        -------
        numpy.ndarray (n, g) int32
            The codes.

        Raises
        ------
        SchemaError
            Naming the first column and value outside its domain.
        """
        codes = np.asarray(codes)
        if codes.ndim != 2 or codes.shape[1] != len(self):
            raise SchemaError(
                f"encoded data must have shape (n, {len(self)}) for this schema, got {codes.shape}"
            )
        if codes.shape[0] == 0:
            raise SchemaError("the data has no rows")
        if not np.issubdtype(codes.dtype, np.integer):
            raise SchemaError(f"encoded data must be integers, got dtype {codes.dtype}")
        too_big = codes >= self.sizes[None, :]
        too_small = codes < MISSING
        if too_big.any() or too_small.any():
            r, c = np.argwhere(too_big | too_small)[0]
            raise SchemaError(
                f"column {self.names[c]!r}, row {r}: code {codes[r, c]} is outside the domain "
                f"0..{self.sizes[c] - 1} (or {MISSING} for missing)"
            )
        return codes.astype(np.int32, copy=False)

    # ---- inference and files -------------------------------------------------------------
    @classmethod
    def infer(
        cls,
        frame: pd.DataFrame,
        numeric_bins: int = 8,
        max_categories: int = 64,
        columns: Sequence[str] | None = None,
    ) -> Schema:
        """Infer a schema: numeric columns with more than ``numeric_bins`` distinct values are
        binned at quantiles, others become categorical with categories in sorted order.

        Parameters
        ----------
        frame : pandas.DataFrame
            The data.
        numeric_bins : int
            Quantile bins of a numeric column, and the distinct values above which it is binned.
        max_categories : int
            Most distinct values of a categorical column (more is a ``SchemaError``).
        columns : sequence of str, optional
            The columns to describe (default: all).

        Returns
        -------
        Schema
            The inferred schema.
        """
        attrs = []
        for name in columns or frame.columns:
            col = frame[name]
            present = col[~_is_missing(col)]
            numeric = pd.to_numeric(present, errors="coerce")
            if numeric.notna().all() and present.nunique() > numeric_bins:
                attrs.append(Attribute.quantile_binned(str(name), numeric, numeric_bins))
                continue
            labels = sorted(set(_labels(present)), key=_natural_key)
            if len(labels) > max_categories:
                raise SchemaError(
                    f"column {name!r} has {len(labels)} distinct values (> max_categories="
                    f"{max_categories}); declare bins for it or raise max_categories"
                )
            attrs.append(Attribute(str(name), tuple(labels)))
        return cls(tuple(attrs))

    def to_dict(self) -> dict:
        """The schema as plain JSON-ready data (``from_dict`` reads it; ``save`` writes it).

        Returns
        -------
        dict
            ``format``, ``version`` and the ``attributes`` list.
        """
        return {"format": "reidrisk-schema", "version": SCHEMA_FORMAT_VERSION,
                "attributes": [a.to_dict() for a in self.attributes]}

    @classmethod
    def from_dict(cls, d: dict) -> Schema:
        """A schema from its ``to_dict`` form (the JSON of ``save``).

        Parameters
        ----------
        d : dict
            ``format``, ``version`` and the ``attributes`` list.

        Returns
        -------
        Schema
            The schema.

        Raises
        ------
        SchemaError
            When ``d`` is not a schema of this format version.
        """
        if d.get("format") != "reidrisk-schema":
            raise SchemaError("not a reidrisk schema: the key 'format' must be 'reidrisk-schema'")
        if d.get("version") != SCHEMA_FORMAT_VERSION:
            raise SchemaError(
                f"schema file version {d.get('version')!r} is not supported (expected "
                f"{SCHEMA_FORMAT_VERSION})"
            )
        if not isinstance(d.get("attributes"), list):
            raise SchemaError("schema has no 'attributes' list; see Schema.to_dict for the format")
        return cls(tuple(Attribute.from_dict(a) for a in d["attributes"]))

    def save(self, path: str | Path) -> None:
        """Write the schema as JSON, atomically (``reidrisk._files.atomic_write``: a temporary
        file in the same folder, then rename): a failed save leaves any previous file untouched
        and its error names ``path``.

        Parameters
        ----------
        path : str or Path
            The JSON file.
        """
        text = json.dumps(self.to_dict(), indent=2)
        atomic_write(Path(path), lambda tmp: tmp.write_text(text))

    @classmethod
    def load(cls, path: str | Path) -> Schema:
        """Read a schema written by ``save``.

        Parameters
        ----------
        path : str or Path
            The JSON file.

        Returns
        -------
        Schema
            The schema.

        Raises
        ------
        FileNotFoundError
            When there is no such file.
        SchemaError
            When it is not valid JSON or not a schema.
        """
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(
                f"schema file {str(path)!r} does not exist; write one with Schema.save or check "
                "the path"
            )
        try:
            return cls.from_dict(json.loads(path.read_text()))
        except json.JSONDecodeError as exc:
            raise SchemaError(f"schema file {str(path)!r} is not valid JSON: {exc}") from None


def _fmt(x: float) -> str:
    return f"{x:.10g}"


def _natural_key(s: str):
    try:
        return (0, float(s), s)
    except ValueError:
        return (1, 0.0, s)
