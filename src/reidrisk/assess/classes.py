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


def _sum_by_key(target_keys, source_keys, values) -> np.ndarray:
    """For each target key, the sum of the ``values`` rows whose source key equals it."""
    allk = np.concatenate([source_keys, target_keys])
    inv, uniq = pd.factorize(allk)  # hashing: no sort needed
    src, tgt = inv[: source_keys.size], inv[source_keys.size:]
    out = np.empty((target_keys.size, values.shape[1]), dtype=values.dtype)
    for c in range(values.shape[1]):
        out[:, c] = np.bincount(src, weights=values[:, c], minlength=uniq.size)[tgt]
    return out


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
    columns."""
    observed = rows != MISSING
    q = rows.shape[1]
    pattern = row_keys(observed.astype(np.int64)) if q else np.zeros(rows.shape[0], np.int64)
    ids, members = np.unique(pattern, return_inverse=True)
    members = members.ravel()
    groups = [np.flatnonzero(members == g) for g in range(ids.size)]
    masks = [observed[g[0]] for g in groups]
    out = np.zeros_like(totals)
    for a, rows_a in enumerate(groups):
        for b, rows_b in enumerate(groups):
            common = np.flatnonzero(masks[a] & masks[b])
            if common.size == 0:
                out[rows_a] += totals[rows_b].sum(axis=0)
                continue
            if a == b:
                out[rows_a] += totals[rows_a]  # distinct rows of one pattern match only themselves
                continue
            both = row_keys(np.concatenate([rows[rows_b][:, common], rows[rows_a][:, common]]))
            out[rows_a] += _sum_by_key(both[rows_b.size:], both[: rows_b.size], totals[rows_b])
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
