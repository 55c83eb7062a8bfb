"""Sensitive-attribute measures of a table: l-diversity, t-closeness, δ-disclosure, β-likeness.

Every measure here is a function of two distributions of one sensitive attribute (SA): the
*class's* (the counts of each sensitive value among the records a record matches on the
quasi-identifiers, ``classes.class_distributions``) and the *table's* (the counts over every
record whose sensitive value is observed). With no missing QI value the class is the record's
equivalence class and every measure is its classical definition; with missing QI values read as
wildcards (``missing="wildcard"``, the default of ``reidrisk.assess``) the class is the record's
neighbourhood, the records it cannot be told apart from.

Notation, for one record: ``r`` the class's counts of the m sensitive values that occur in the
table, ``N = sum(r)``, ``q = r / N`` the class's distribution, ``p`` the table's.

- distinct l-diversity: the number of values with ``r_s > 0`` (Machanavajjhala et al. 2007,
  Sect. 4.1); table: the minimum.
- entropy l-diversity: ``exp(-sum_s q_s ln q_s)`` (Machanavajjhala et al. 2007, Def. 4.2: a class
  is entropy l-diverse when its entropy is at least ``ln l``); table: the minimum.
- recursive (c,l)-diversity: with ``r_(1) >= r_(2) >= ... >= r_(m)`` the counts sorted in
  descending order, a class is (c,l)-diverse when ``r_(1) < c (r_(l) + ... + r_(m))``
  (Machanavajjhala et al. 2007, Def. 4.4).
- t-closeness: the earth mover's distance between ``q`` and ``p`` (Li, Li & Venkatasubramanian
  2007, Sect. 4.2): with equal distance (nominal values) ``(1/2) sum_s |q_s - p_s|``; with ordered
  distance (ordinal or numeric values, in code order) ``1/(m-1) sum_i |sum_{j<=i} (q_j - p_j)|``;
  table: the maximum.
- δ-disclosure: ``max_s |ln(q_s / p_s)|`` over the values present in the class (Brickell &
  Shmatikov 2008, Def. 4); table: the maximum.
- β-likeness: basic ``max_s (q_s - p_s) / p_s`` (Cao & Karras 2012, Def. 2); table: the maximum.

The m values are those that occur in the table (a value of the domain that no record holds takes
no part, as in pycanon); for the ordered distance they keep their code order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reidrisk.assess.classes import (
    MISSING,
    MISSING_RULES,
    AssessError,
    DistinctRows,
    distinct_match_sums,
)

__all__ = [
    "RecordDiversity",
    "TableDiversity",
    "diversity",
    "record_diversity",
    "table_counts",
]


@dataclass(frozen=True)
class TableDiversity:
    """The table's sensitive-attribute measures (the worst record over the records aggregated).

    Parameters
    ----------
    distinct_l : int
        Distinct l-diversity: the fewest distinct sensitive values in a record's class.
    entropy_l : float
        Entropy l-diversity: the smallest ``exp(entropy)`` of a record's class (pycanon reports
        its integer part).
    recursive_l : int
        The l of the recursive (c,l) pair, the table's distinct l (pycanon's pair).
    recursive_c : float
        The smallest integer c for which every class is recursive (c, ``recursive_l``)-diverse:
        ``floor(max ratio) + 1`` with ratio ``r_(1) / (r_(l) + ... + r_(m))``.
    t_closeness : float
        The largest EMD between a class's distribution and the table's.
    ordered : bool
        Whether the EMD used the ordered distance (else the equal distance).
    delta_disclosure : float
        The largest δ of a class.
    basic_beta : float
        The largest basic β of a class.
    enhanced_beta : float
        pycanon's enhanced β: ``max_s min(basic_beta, -ln p_s) = min(basic_beta, -ln min_s p_s)``.
    records : int
        The records aggregated (those whose class holds an observed sensitive value).
    records_without_sensitive : int
        Records left out because their class holds no observed sensitive value.
    """

    distinct_l: int
    entropy_l: float
    recursive_l: int
    recursive_c: float
    t_closeness: float
    ordered: bool
    delta_disclosure: float
    basic_beta: float
    enhanced_beta: float
    records: int
    records_without_sensitive: int


@dataclass(frozen=True)
class RecordDiversity:
    """Per-record sensitive-attribute measures of one sensitive attribute.

    A record whose class holds no observed sensitive value discloses none: its ``distinct_l`` is
    0, its other measures NaN, and ``observed`` is False; the table's measures leave it out.

    Parameters
    ----------
    class_counts : numpy.ndarray (u, m) float64
        Row i: the counts of each sensitive value (those occurring in the table) in the i-th
        distinct class.
    class_of : numpy.ndarray (n,) int64
        The row of ``class_counts`` that is each record's class.
    table : numpy.ndarray (m,) float64
        The table's counts of the same values (all > 0).
    ordered : bool
        Whether ``t_closeness`` uses the ordered distance.
    observed : numpy.ndarray (n,) bool
        The record's class holds at least one observed sensitive value.
    distinct_l, entropy_l, t_closeness, delta, beta : numpy.ndarray (n,)
        The measures of each record's class (module docstring).
    """

    class_counts: np.ndarray
    class_of: np.ndarray
    table: np.ndarray
    ordered: bool
    observed: np.ndarray
    distinct_l: np.ndarray
    entropy_l: np.ndarray
    t_closeness: np.ndarray
    delta: np.ndarray
    beta: np.ndarray

    @property
    def counts(self) -> np.ndarray:
        """(n, m): each record's class counts (``class_counts[class_of]``)."""
        return self.class_counts[self.class_of]

    def _sorted_desc(self) -> np.ndarray:
        return -np.sort(-self.class_counts, axis=1)

    def recursive_ratio(self, l: int) -> np.ndarray:  # noqa: E741  (the papers' name)
        """Per record, ``r_(1) / (r_(l) + ... + r_(m))``: the class is recursive (c,l)-diverse
        exactly when c exceeds it (Machanavajjhala et al. 2007, Def. 4.4).

        Parameters
        ----------
        l : int
            The l of (c,l), >= 1.

        Returns
        -------
        numpy.ndarray (n,) float64
            The ratio; ``inf`` where the class holds fewer than l distinct values, NaN where it
            holds none.

        Raises
        ------
        AssessError
            When l < 1.
        """
        if int(l) != l or l < 1:
            raise AssessError(f"recursive (c,l)-diversity needs an integer l >= 1, got l={l}")
        r = self._sorted_desc()
        tail = r[:, int(l) - 1:].sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(tail > 0, r[:, 0] / np.where(tail > 0, tail, 1.0), np.inf)
        return np.where(self.observed, ratio[self.class_of], np.nan)

    def recursive_l(self, c: float) -> np.ndarray:
        """Per record, the largest l for which its class is recursive (c,l)-diverse, 0 if none.

        The tail sum ``r_(l) + ... + r_(m)`` falls as l grows, so the l that hold are 1..L.

        Parameters
        ----------
        c : float
            The c of (c,l), > 0.

        Returns
        -------
        numpy.ndarray (n,) int64
            L per record (0 also where the class holds no observed value).
        """
        if not np.isfinite(c) or c <= 0:
            raise AssessError(f"recursive (c,l)-diversity needs a finite c > 0, got c={c}")
        r = self._sorted_desc()
        tails = np.cumsum(r[:, ::-1], axis=1)[:, ::-1]  # tails[:, j] = r_(j+1) + ... + r_(m)
        holds = r[:, :1] < c * tails
        return holds.sum(axis=1).astype(np.int64)[self.class_of]

    def recursive_holds(self, c: float, l: int) -> np.ndarray:  # noqa: E741
        """Per record, whether its class is recursive (c,l)-diverse.

        Parameters
        ----------
        c : float
            The c of (c,l).
        l : int
            The l of (c,l), >= 1.

        Returns
        -------
        numpy.ndarray (n,) bool
            ``r_(1) < c (r_(l) + ... + r_(m))``; False where the class holds no observed value.
        """
        return self.recursive_ratio(l) < c

    def summary(self, where: np.ndarray | None = None) -> TableDiversity:
        """The table's measures: the worst record over ``where`` (default: every record).

        Records whose class holds no observed sensitive value are left out (counted in
        ``records_without_sensitive``).

        Parameters
        ----------
        where : numpy.ndarray (n,) bool, optional
            The records to aggregate over (e.g. those with every QI observed, pycanon's classes).

        Returns
        -------
        TableDiversity

        Raises
        ------
        AssessError
            When no record in ``where`` has a class with an observed sensitive value.
        """
        keep = self.observed.copy()
        if where is not None:
            where = np.asarray(where, dtype=bool)
            if where.shape != keep.shape:
                raise AssessError(f"where has shape {where.shape}, expected {keep.shape}")
            keep &= where
        left_out = int((~self.observed if where is None else (~self.observed & where)).sum())
        if not keep.any():
            raise AssessError("no record's class holds an observed sensitive value: "
                              "the sensitive attribute is missing everywhere it is needed")
        l_min = int(self.distinct_l[keep].min())
        ratio = float(self.recursive_ratio(l_min)[keep].max())
        beta = float(self.beta[keep].max())
        p = self.table / self.table.sum()
        return TableDiversity(
            distinct_l=l_min,
            entropy_l=float(self.entropy_l[keep].min()),
            recursive_l=l_min,
            recursive_c=float(np.floor(ratio) + 1.0),
            t_closeness=float(self.t_closeness[keep].max()),
            ordered=self.ordered,
            delta_disclosure=float(self.delta[keep].max()),
            basic_beta=beta,
            enhanced_beta=float(min(beta, -np.log(p.min()))),
            records=int(keep.sum()),
            records_without_sensitive=left_out,
        )


def table_counts(sensitive: np.ndarray, size: int) -> np.ndarray:
    """The table's counts of each sensitive value (missing values left out).

    Parameters
    ----------
    sensitive : numpy.ndarray (n,) int
        Codes in ``[0, size)``, ``MISSING`` when missing.
    size : int
        The number of sensitive values.

    Returns
    -------
    numpy.ndarray (size,) float64
    """
    sa = _check_sensitive(sensitive, size)
    return np.bincount(sa[sa != MISSING], minlength=size).astype(np.float64)


def _check_sensitive(sensitive: np.ndarray, size: int) -> np.ndarray:
    sa = np.asarray(sensitive)
    if sa.ndim != 1 or not np.issubdtype(sa.dtype, np.integer):
        raise AssessError(f"sensitive codes must be a 1-d integer array, got {sa.dtype} {sa.shape}")
    bad = (sa != MISSING) & ((sa < 0) | (sa >= size))
    if bad.any():
        raise AssessError(f"sensitive code {int(sa[bad][0])} is outside [0, {size}) "
                          f"(missing is {MISSING}); encode the column with its full domain")
    return sa


def record_diversity(counts: np.ndarray, table: np.ndarray, ordered: bool = False,
                     class_of: np.ndarray | None = None) -> RecordDiversity:
    """Every record's sensitive-attribute measures from its class's counts and the table's.

    Parameters
    ----------
    counts : numpy.ndarray (u, size)
        Row i: the counts of each sensitive value in a class (``classes.class_distributions``
        gives one row per record).
    table : numpy.ndarray (size,)
        The table's counts (``table_counts``); every class count must be at most the table's.
    ordered : bool
        True for an ordinal or numeric sensitive attribute (codes in value order): t-closeness
        with the ordered distance; False for a nominal one: the equal distance.
    class_of : numpy.ndarray (n,) int, optional
        Each record's row of ``counts``; None: row r is record r's class.

    Returns
    -------
    RecordDiversity
        Values the table never holds are dropped from ``counts`` and ``table``.

    Raises
    ------
    AssessError
        On mismatched shapes, negative counts, a class holding more of a value than the table,
        or a table with no observed sensitive value.
    """
    H = np.asarray(counts, dtype=np.float64)
    T = np.asarray(table, dtype=np.float64)
    if H.ndim != 2 or T.ndim != 1 or H.shape[1] != T.size:
        raise AssessError(f"class counts {H.shape} and table counts {T.shape} must have one "
                          "column per sensitive value")
    if (H < 0).any() or (T < 0).any() or not (np.isfinite(H).all() and np.isfinite(T).all()):
        raise AssessError("class and table counts must be finite and >= 0")
    if (H > T * (1 + 1e-9) + 1e-9).any():
        raise AssessError("a class holds more records of a sensitive value than the table: "
                          "compute the table counts from the same records")
    if not (T > 0).any():
        raise AssessError("the sensitive attribute has no observed value in the table")
    return _record_diversity(H, T, ordered, class_of)


def _record_diversity(H: np.ndarray, T: np.ndarray, ordered: bool,
                      class_of: np.ndarray | None) -> RecordDiversity:
    """``record_diversity`` on counts known to be valid."""
    present = T > 0
    if not present.all():
        H, T = H[:, present], T[present]
    idx = np.arange(H.shape[0]) if class_of is None else np.asarray(class_of, dtype=np.int64)
    per_class = _class_measures(H, T / T.sum(), ordered)
    return RecordDiversity(class_counts=H, class_of=idx, table=T, ordered=bool(ordered),
                           **{k: v[idx] for k, v in per_class.items()})


def _class_measures(H: np.ndarray, p: np.ndarray, ordered: bool) -> dict[str, np.ndarray]:
    """The measures of each class (row of H): classes holding one value take them from a table
    per value (their distribution is a unit vector), the others are computed in full."""
    u, m = H.shape
    held = H > 0
    distinct = held.sum(axis=1)
    out = {"observed": distinct > 0, "distinct_l": distinct.astype(np.int64)}
    for key in ("entropy_l", "t_closeness", "delta", "beta"):
        out[key] = np.full(u, np.nan)
    one = np.flatnonzero(distinct == 1)
    unit = _measures(np.eye(m), p, ordered)  # the measures of each unit vector
    value = held[one].argmax(axis=1)
    for key, per_value in unit.items():
        out[key][one] = per_value[value]
    many = np.flatnonzero(distinct > 1)
    for key, val in _measures(H[many], p, ordered).items():
        out[key][many] = val
    return out


def _measures(H: np.ndarray, p: np.ndarray, ordered: bool) -> dict[str, np.ndarray]:
    """Entropy l, t-closeness, delta and basic beta of classes that each hold a value."""
    m = p.size
    q = H / H.sum(axis=1, keepdims=True)
    held = q > 0
    logq = np.log(np.where(held, q, 1.0))
    diff = q - p
    if not ordered:
        emd = 0.5 * np.abs(diff).sum(axis=1)
    elif m > 1:
        emd = np.abs(np.cumsum(diff, axis=1)).sum(axis=1) / (m - 1)
    else:
        emd = np.zeros(H.shape[0])
    return {"entropy_l": np.exp(-(q * logq).sum(axis=1)), "t_closeness": emd,
            "delta": np.where(held, np.abs(logq - np.log(p)), 0.0).max(axis=1),
            "beta": (diff / p).max(axis=1)}


def diversity(codes: np.ndarray, sensitive: np.ndarray, size: int, ordered: bool = False,
              missing: str = "wildcard", distinct: DistinctRows | None = None) -> RecordDiversity:
    """Every record's sensitive-attribute measures of a table, from its QI and SA codes.

    The counts are summed once per distinct QI row and the measures computed once per class.

    Parameters
    ----------
    codes : numpy.ndarray (n, q) of int
        The QI codes, ``MISSING`` for a missing value.
    sensitive : numpy.ndarray (n,) of int
        The sensitive attribute's codes in ``[0, size)`` (value order when ``ordered``),
        ``MISSING`` when missing; a record with a missing sensitive value still has a class but
        adds nothing to any class's or the table's counts.
    size : int
        The number of sensitive values.
    ordered : bool
        Ordered (True) or equal (False) distance for t-closeness.
    missing : {"wildcard", "value"}
        The missing-value rule for the QIs (``classes.match_sums``).
    distinct : DistinctRows, optional
        ``DistinctRows.of(codes)`` when the caller already has it (shared with
        ``classes.sample_frequencies`` and other sensitive attributes).

    Returns
    -------
    RecordDiversity

    Raises
    ------
    AssessError
        On codes outside the domain, mismatched rows, a bad rule, or no observed sensitive value.
    """
    sa = _check_sensitive(sensitive, size)
    codes = np.asarray(codes)
    if codes.ndim != 2 or codes.shape[0] != sa.size:
        raise AssessError(f"QI codes {codes.shape} and sensitive codes {sa.shape} must have "
                          "the same rows")
    if missing not in MISSING_RULES:
        raise AssessError(f"missing rule {missing!r} is not one of {', '.join(MISSING_RULES)}")
    table = table_counts(sa, size)
    if table.sum() == 0:
        raise AssessError("the sensitive attribute has no observed value in the table")
    distinct = DistinctRows.of(codes) if distinct is None else distinct
    u = distinct.rows.shape[0]
    seen = sa != MISSING
    # each distinct row's counts of each value: one bincount over (row, value) pairs
    totals = np.bincount(distinct.inverse[seen] * size + sa[seen],
                         minlength=u * size).reshape(u, size).astype(np.float64)
    counts = distinct_match_sums(distinct, totals, missing)
    return _record_diversity(counts, table, ordered, distinct.inverse)
