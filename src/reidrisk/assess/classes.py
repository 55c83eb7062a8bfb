"""Who matches whom on the quasi-identifiers: sample frequencies with missing values as wildcards.

A record's *class* is the set of records that match it on every quasi-identifier (QI). Missing
values follow one rule throughout ``reidrisk.assess`` (as ``reidrisk.uniqueness`` reads them): a
missing QI value matches any value, so two records match when they agree on every QI that both
have. With no missing value this is the usual partition into equivalence classes; with missing
values it is the neighbourhood sdcMicro's ``freqCalc`` counts with its default ``alpha = 1``
(every wildcard match counted in full). ARX instead treats a missing value as a value of its own
(``missing="value"`` here).

Every measure of a record's class is a sum over the records it matches of a per-record vector
(1 for fk, the survey weight for Fk, an indicator of the sensitive value for a class's
distribution), so one routine, ``match_sums``, serves them all. It works on the distinct rows:
rows with the same observed pattern are matched by exact keys, and each pair of patterns is
matched on the QIs both observe.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from reidrisk.errors import ReidriskError

MISSING = -1
"""The code of a missing value."""

MISSING_RULES = ("wildcard", "value")
"""``wildcard``: a missing value matches any value (the default); ``value``: missing is a value of
its own (ARX's reading)."""


class AssessError(ReidriskError, ValueError):
    """Bad input to the risk assessment; the message names the file, column or value and the fix."""


def row_keys(codes: np.ndarray) -> np.ndarray:
    """Exact integer keys of the rows of a non-negative code matrix (equal rows, equal keys).

    Columns are combined in mixed radix; whenever the next column would overflow 63 bits the
    partial key is first replaced by its rank among the distinct partial keys, so the keys are
    exact for any number of columns and any domain sizes.

    Parameters
    ----------
    codes : numpy.ndarray (n, p) of int
        Codes >= 0.

    Returns
    -------
    numpy.ndarray (n,) int64
        Keys; ``p = 0`` gives all zeros (every row equal).
    """
    codes = np.asarray(codes)
    n, p = codes.shape
    key = np.zeros(n, dtype=np.int64)
    if p == 0 or n == 0:
        return key
    top = 1  # keys lie in [0, top)
    for j in range(p):
        col = codes[:, j].astype(np.int64, copy=False)
        size = int(col.max()) + 1
        if top * size >= 2**62:
            _, key = np.unique(key, return_inverse=True)
            key = key.astype(np.int64).ravel()
            top = int(key.max()) + 1
        key = key * size + col
        top *= size
    return key


def _pair_keys(targets: np.ndarray, sources: np.ndarray, common: np.ndarray,
               sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keys of the rows of two int64 code matrices on the ``common`` columns, equal where the rows
    agree there: mixed radix by the columns' sizes where that fits 62 bits (a product with weights
    zero outside ``common``, so no column is copied), else ``row_keys`` of both together."""
    if float(np.prod(sizes[common].astype(np.float64))) < 2.0**62:
        radix = np.zeros(sizes.size, dtype=np.int64)
        radix[common] = np.cumprod(np.concatenate([[1], sizes[common][:0:-1]]))[::-1]
        return targets @ radix, sources @ radix
    both = row_keys(np.concatenate([sources[:, common], targets[:, common]]))
    return both[sources.shape[0]:], both[: sources.shape[0]]


def _matched_sums(target_keys: np.ndarray, source_keys: np.ndarray, values: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The targets some source matches, and for each the sum of the matching sources' ``values``.

    Only the sources whose key a target holds are grouped (a large source side is first reduced
    to those), and only the targets that are hit are returned: a small group matched against a
    large one costs a pass over the large one, not a sort of it.
    """
    if source_keys.size > target_keys.size:
        keep = np.isin(source_keys, target_keys)
        source_keys, values = source_keys[keep], values[keep]
    if source_keys.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros((0, values.shape[1]))
    uniq, inverse = np.unique(source_keys, return_inverse=True)
    inverse = inverse.ravel()
    sums = np.column_stack([np.bincount(inverse, weights=values[:, c], minlength=uniq.size)
                            for c in range(values.shape[1])])
    pos = np.searchsorted(uniq, target_keys)
    pos[pos == uniq.size] = 0
    hit = np.flatnonzero(uniq[pos] == target_keys)
    return hit, sums[pos[hit]]


@dataclass(frozen=True)
class DistinctRows:
    """The distinct rows of a code matrix and where each record went.

    Parameters
    ----------
    rows : numpy.ndarray (u, q) int
        The distinct rows (``MISSING`` kept as -1).
    inverse : numpy.ndarray (n,) int64
        ``rows[inverse]`` is the original matrix.
    """

    rows: np.ndarray
    inverse: np.ndarray

    @classmethod
    def of(cls, codes: np.ndarray) -> DistinctRows:
        """The distinct rows of ``codes``.

        Parameters
        ----------
        codes : numpy.ndarray (n, q) of int
            The QI codes, ``MISSING`` for a missing value.

        Returns
        -------
        DistinctRows
            The distinct rows in order of first appearance, and each record's row.
        """
        codes = np.asarray(codes)
        keys = row_keys(codes + 1)
        # hashing (pandas.factorize) instead of sorting: ids in order of first appearance, so
        # a row is a first appearance exactly where the running maximum of the ids grows
        inverse = pd.factorize(keys)[0].astype(np.int64)
        first = np.flatnonzero(np.diff(np.maximum.accumulate(inverse), prepend=-1) > 0)
        return cls(codes[first], inverse)

    def totals(self, values: np.ndarray) -> np.ndarray:
        """Per distinct row, the sum of ``values`` over its records.

        Parameters
        ----------
        values : numpy.ndarray (n, p)
            One vector per record.

        Returns
        -------
        numpy.ndarray (u, p) float64
            Row i: the sum over the records of distinct row i.
        """
        u = self.rows.shape[0]
        out = np.empty((u, values.shape[1]), dtype=np.float64)
        for c in range(values.shape[1]):
            out[:, c] = np.bincount(self.inverse, weights=values[:, c], minlength=u)
        return out


def match_sums(codes: np.ndarray, values: np.ndarray, missing: str = "wildcard",
               distinct: DistinctRows | None = None) -> np.ndarray:
    """For every record, the sum of ``values`` over the records that match it (itself included).

    Two records match when they agree on every column where both are observed (``missing =
    "wildcard"``) or on every column, missing being a value of its own (``"value"``).

    Parameters
    ----------
    codes : numpy.ndarray (n, q) of int
        The QI codes, ``MISSING`` (-1) for a missing value.
    values : numpy.ndarray (n,) or (n, p)
        The per-record vectors to sum (ones for fk, weights for Fk, one-hot sensitive values for a
        class's distribution).
    missing : {"wildcard", "value"}
        The missing-value rule.
    distinct : DistinctRows, optional
        ``DistinctRows.of(codes)`` when the caller already has it (it is not recomputed).

    Returns
    -------
    numpy.ndarray (n,) or (n, p) float64
        The sums, in the shape of ``values``.

    Raises
    ------
    AssessError
        On a bad rule or mismatched shapes.
    """
    codes = np.asarray(codes)
    vals = np.asarray(values, dtype=np.float64)
    flat = vals.ndim == 1
    if flat:
        vals = vals[:, None]
    if missing not in MISSING_RULES:
        raise AssessError(f"missing rule {missing!r} is not one of {', '.join(MISSING_RULES)}")
    if codes.ndim != 2 or vals.shape[0] != codes.shape[0]:
        raise AssessError(f"codes {codes.shape} and values {vals.shape} must have the same rows")
    distinct = DistinctRows.of(codes) if distinct is None else distinct
    out = distinct_match_sums(distinct, distinct.totals(vals), missing)[distinct.inverse]
    return out[:, 0] if flat else out


def distinct_match_sums(distinct: DistinctRows, totals: np.ndarray,
                        missing: str = "wildcard") -> np.ndarray:
    """``match_sums`` on the distinct rows: for each distinct row, the sum of the ``totals`` of
    the distinct rows that match it.

    Parameters
    ----------
    distinct : DistinctRows
        The distinct QI rows.
    totals : numpy.ndarray (u, p)
        Per distinct row, the sum of the per-record vectors over its records
        (``distinct.totals``).
    missing : {"wildcard", "value"}
        The missing-value rule.

    Returns
    -------
    numpy.ndarray (u, p) float64
        Row i: the sum over the records matching distinct row i (index by ``distinct.inverse``
        for every record's).
    """
    if missing not in MISSING_RULES:
        raise AssessError(f"missing rule {missing!r} is not one of {', '.join(MISSING_RULES)}")
    if missing == "value" or not (distinct.rows == MISSING).any():
        return np.asarray(totals, dtype=np.float64)
    return _wildcard_sums(distinct.rows, np.asarray(totals, dtype=np.float64))


def _wildcard_sums(rows: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """``match_sums`` on distinct rows under the wildcard rule: for each pair of observed-column
    patterns (A, B), rows of A collect the totals of rows of B that agree on A's and B's common
    columns (distinct rows of one pattern match only themselves)."""
    observed = rows != MISSING
    q = rows.shape[1]
    pattern = row_keys(observed.astype(np.int64)) if q else np.zeros(rows.shape[0], np.int64)
    order = np.argsort(pattern, kind="stable")
    _, starts = np.unique(pattern[order], return_index=True)
    groups = np.split(order, starts[1:])
    masks = [observed[g[0]] for g in groups]
    sizes = rows.max(axis=0).astype(np.int64) + 1
    members = [rows[g].astype(np.int64) for g in groups]
    parts = [totals[g] for g in groups]
    out = np.array(totals, dtype=np.float64)
    for a, rows_a in enumerate(groups):
        for b in range(len(groups)):
            if a == b:
                continue
            common = np.flatnonzero(masks[a] & masks[b])
            if common.size == 0:
                out[rows_a] += parts[b].sum(axis=0)
                continue
            kt, ks = _pair_keys(members[a], members[b], common, sizes)
            hit, sums = _matched_sums(kt, ks, parts[b])
            out[rows_a[hit]] += sums
    return out


def sample_frequencies(codes: np.ndarray, weights: np.ndarray | None = None,
                       missing: str = "wildcard",
                       distinct: DistinctRows | None = None) -> tuple[np.ndarray, np.ndarray]:
    """fk and Fk of every record (sdcMicro's ``freqCalc``).

    Parameters
    ----------
    codes : numpy.ndarray (n, q) of int
        The QI codes, ``MISSING`` for a missing value.
    weights : numpy.ndarray (n,), optional
        Survey weights (each record stands for that many people); None: every weight 1.
    missing : {"wildcard", "value"}
        The missing-value rule.
    distinct : DistinctRows, optional
        ``DistinctRows.of(codes)`` when the caller already has it.

    Returns
    -------
    fk : numpy.ndarray (n,) int64
        The number of sample records matching the record (itself included).
    Fk : numpy.ndarray (n,) float64
        The sum of their weights: the estimated population frequency of the record's key.
    """
    n = np.asarray(codes).shape[0]
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    sums = match_sums(codes, np.column_stack([np.ones(n), w]), missing, distinct)
    return np.rint(sums[:, 0]).astype(np.int64), sums[:, 1]


def class_distributions(codes: np.ndarray, sensitive: np.ndarray, size: int,
                        missing: str = "wildcard") -> np.ndarray:
    """The counts of each sensitive value among the records matching each record.

    Records whose sensitive value is missing contribute nothing (they disclose no value).

    Parameters
    ----------
    codes : numpy.ndarray (n, q) of int
        The QI codes.
    sensitive : numpy.ndarray (n,) of int
        The sensitive attribute's codes in ``[0, size)``, ``MISSING`` when missing.
    size : int
        The number of sensitive values.
    missing : {"wildcard", "value"}
        The missing-value rule for the QIs.

    Returns
    -------
    numpy.ndarray (n, size) float64
        Row r: how many records of r's class hold each sensitive value.
    """
    sa = np.asarray(sensitive)
    onehot = np.zeros((sa.size, size), dtype=np.float64)
    seen = sa != MISSING
    onehot[np.flatnonzero(seen), sa[seen]] = 1.0
    return match_sums(codes, onehot, missing)


__all__ = [
    "AssessError",
    "DistinctRows",
    "MISSING",
    "MISSING_RULES",
    "class_distributions",
    "distinct_match_sums",
    "match_sums",
    "row_keys",
    "sample_frequencies",
]
