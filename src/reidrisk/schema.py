"""Categorical schemas with missing values: attributes, domains, binning, encode/decode.

Every capability works on an *encoded* integer matrix of shape (n, g): column j holds the index of
the record's category in ``schema.attributes[j].categories`` (declared order), or ``MISSING`` (-1)
where the value is absent. A missing value is a state of its own, never a category: it is not
randomized and not counted (spec/README.md, Conventions).

Numeric columns are binned first, by declared edges or by quantiles; the bins become ordered
categories labelled ``"[lo, hi)"``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

MISSING: int = -1
"""Code of a missing value in an encoded matrix."""

SCHEMA_FORMAT_VERSION = 1


class SchemaError(ValueError):
    """Data does not fit the declared schema. The message names the column, the value and the fix."""


def _is_missing(values: pd.Series) -> np.ndarray:
    missing = values.isna().to_numpy()
    if values.dtype == object or pd.api.types.is_string_dtype(values.dtype):
        stripped = values.astype("string").str.strip()
        missing |= stripped.isin(["", "?", "NA", "nan", "NaN"]).fillna(True).to_numpy()
    return missing


@dataclass(frozen=True)
class Attribute:
    """One categorical attribute with a fixed, declared domain.

    ``categories`` are labels in declared order (the order matters for the copula's CDFs).
    ``edges`` is set for a binned numeric attribute: ``len(edges) == len(categories) + 1``, bins are
    half-open ``[edges[i], edges[i+1])`` except the last, which is closed.
    """

    name: str
    categories: tuple[str, ...]
    edges: tuple[float, ...] | None = None

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

    @property
    def size(self) -> int:
        """Domain size f."""
        return len(self.categories)

    @property
    def is_numeric(self) -> bool:
        return self.edges is not None

    @classmethod
    def binned(cls, name: str, edges: Sequence[float]) -> "Attribute":
        """A numeric attribute binned at declared ``edges`` (ascending; outer edges included)."""
        edges = [float(e) for e in edges]
        labels = [f"[{_fmt(lo)}, {_fmt(hi)})" for lo, hi in zip(edges[:-1], edges[1:])]
        if labels:
            labels[-1] = labels[-1][:-1] + "]"
        return cls(name, tuple(labels), tuple(edges))

    @classmethod
    def quantile_binned(cls, name: str, values: Iterable[float], bins: int) -> "Attribute":
        """A numeric attribute binned at the empirical quantiles of ``values`` (ties merged)."""
        arr = pd.to_numeric(pd.Series(list(values)), errors="coerce").dropna().to_numpy(float)
        if arr.size == 0:
            raise SchemaError(f"attribute {name!r}: no numeric values to take quantiles from")
        edges = np.unique(np.quantile(arr, np.linspace(0.0, 1.0, bins + 1)))
        if edges.size < 3:
            edges = np.array([arr.min(), np.median(arr), arr.max() + 1.0])
            if edges[0] == edges[1]:
                edges[1] = edges[0] + 0.5
        return cls.binned(name, edges)

    def encode(self, values: Iterable | pd.Series) -> np.ndarray:
        """Map raw values to codes (int32, ``MISSING`` for absent values).

        Raises ``SchemaError`` naming the first unknown value and how to fix it.
        """
        series = values if isinstance(values, pd.Series) else pd.Series(list(values), dtype=object)
        missing = _is_missing(series)
        codes = np.full(len(series), MISSING, dtype=np.int32)
        present = ~missing
        if self.edges is not None:
            nums = pd.to_numeric(series[present], errors="coerce").to_numpy(float)
            bad = np.isnan(nums) | (nums < self.edges[0]) | (nums > self.edges[-1])
            if bad.any():
                raw = series[present].to_numpy()[np.flatnonzero(bad)[0]]
                raise SchemaError(
                    f"column {self.name!r}: value {raw!r} is outside the binned range "
                    f"[{_fmt(self.edges[0])}, {_fmt(self.edges[-1])}]; widen the outer edges or "
                    "mark the value missing"
                )
            idx = np.searchsorted(self.edges, nums, side="right") - 1
            codes[present] = np.clip(idx, 0, self.size - 1)
            return codes
        labels = series[present].astype(str).str.strip().to_numpy()
        lookup = {c: i for i, c in enumerate(self.categories)}
        uniq, inv = np.unique(labels, return_inverse=True)
        mapped = np.array([lookup.get(u, MISSING) for u in uniq], dtype=np.int32)
        if (mapped == MISSING).any():
            unknown = uniq[mapped == MISSING][0]
            raise SchemaError(
                f"column {self.name!r}: unknown category {unknown!r}; the schema declares "
                f"{list(self.categories)[:10]}{'...' if self.size > 10 else ''}. Add it to the "
                "schema or map it to a declared category"
            )
        codes[present] = mapped[inv]
        return codes

    def decode(self, codes: np.ndarray) -> np.ndarray:
        """Map codes back to labels (object array, ``None`` where missing)."""
        codes = np.asarray(codes)
        out = np.empty(codes.shape, dtype=object)
        present = codes != MISSING
        out[present] = np.asarray(self.categories, dtype=object)[codes[present]]
        out[~present] = None
        return out

    def to_dict(self) -> dict:
        d: dict = {"name": self.name, "categories": list(self.categories)}
        if self.edges is not None:
            d["edges"] = list(self.edges)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Attribute":
        try:
            return cls(d["name"], tuple(d["categories"]), tuple(d["edges"]) if d.get("edges") else None)
        except KeyError as exc:
            raise SchemaError(f"schema entry {d!r} lacks the key {exc.args[0]!r}") from None


@dataclass(frozen=True)
class Schema:
    """An ordered list of categorical attributes."""

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

    def select(self, names: Sequence[str]) -> "Schema":
        return Schema(tuple(self[n] for n in names))

    # ---- encode / decode -------------------------------------------------------------------
    def encode(self, frame: pd.DataFrame) -> np.ndarray:
        """Encode a DataFrame into an int32 matrix (n, g) with ``MISSING`` = -1.

        Columns are matched by name; extra columns are ignored, absent ones are an error.
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
        """Decode an (n, g) code matrix into a DataFrame of labels (None where missing)."""
        codes = self.validate_codes(codes)
        return pd.DataFrame({a.name: a.decode(codes[:, j]) for j, a in enumerate(self.attributes)})

    def validate_codes(self, codes: np.ndarray) -> np.ndarray:
        """Check an encoded matrix against the schema; return it as int32 (n, g)."""
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
    ) -> "Schema":
        """Infer a schema: numeric columns with more than ``numeric_bins`` distinct values are
        binned at quantiles, others become categorical with categories in sorted order."""
        attrs = []
        for name in columns or frame.columns:
            col = frame[name]
            present = col[~_is_missing(col)]
            numeric = pd.to_numeric(present, errors="coerce")
            if numeric.notna().all() and present.nunique() > numeric_bins:
                attrs.append(Attribute.quantile_binned(str(name), numeric, numeric_bins))
                continue
            labels = sorted(present.astype(str).str.strip().unique(), key=_natural_key)
            if len(labels) > max_categories:
                raise SchemaError(
                    f"column {name!r} has {len(labels)} distinct values (> max_categories="
                    f"{max_categories}); declare bins for it or raise max_categories"
                )
            attrs.append(Attribute(str(name), tuple(labels)))
        return cls(tuple(attrs))

    def to_dict(self) -> dict:
        return {"format": "reidrisk-schema", "version": SCHEMA_FORMAT_VERSION,
                "attributes": [a.to_dict() for a in self.attributes]}

    @classmethod
    def from_dict(cls, d: dict) -> "Schema":
        if d.get("format") != "reidrisk-schema":
            raise SchemaError("not a reidrisk schema: the key 'format' must be 'reidrisk-schema'")
        if d.get("version") != SCHEMA_FORMAT_VERSION:
            raise SchemaError(
                f"schema file version {d.get('version')!r} is not supported (expected "
                f"{SCHEMA_FORMAT_VERSION})"
            )
        return cls(tuple(Attribute.from_dict(a) for a in d["attributes"]))

    def save(self, path: str | Path) -> None:
        path = Path(path)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=2))
        tmp.replace(path)

    @classmethod
    def load(cls, path: str | Path) -> "Schema":
        try:
            return cls.from_dict(json.loads(Path(path).read_text()))
        except json.JSONDecodeError as exc:
            raise SchemaError(f"schema file {str(path)!r} is not valid JSON: {exc}") from None


def _fmt(x: float) -> str:
    return f"{x:g}"


def _natural_key(s: str):
    try:
        return (0, float(s), s)
    except ValueError:
        return (1, 0.0, s)
