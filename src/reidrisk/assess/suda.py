"""SUDA: minimal sample uniques and the SUDA and DIS-SUDA scores of every record.

A record's *minimal sample uniques* (MSUs) are the sets S of quasi-identifiers (QIs) on which it is
unique in the sample (fk = 1 on the columns S) while it is unique on no proper subset of S (Elliot,
Manning & Ford 2002). Uniqueness is monotone (a record unique on S is unique on every superset),
so S is minimal exactly when the record is unique on none of the ``|S| - 1``-subsets of S, and only
records unique on all q QIs can have an MSU at all.

The search here is the exhaustive one that the recursive SUDA2 search of Manning, Haglin & Keane
(2008) speeds up: every subset of at most ``max_size`` QIs is counted once, vectorized over the
records (a dense label per subset, refined one column at a time from the label of its prefix), and
a subset is an MSU of the records unique on it and on none of its immediate subsets. Missing values
follow ``reidrisk.assess.classes``: under ``missing="wildcard"`` a missing value matches any value,
so a record never has an MSU containing a QI it is missing (that QI adds no constraint); under
``missing="value"`` missing is a value of its own.

Scores follow sdcMicro's ``suda2`` with its default ``original_scores = TRUE`` (the weights of
Elliot et al.); docs/design/assess.md#suda states the equations and where they differ from
sdcMicro and from the PyPI ``suda`` package.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from reidrisk.assess.classes import (
    MISSING,
    MISSING_RULES,
    AssessError,
    row_keys,
    sample_frequencies,
)

MAX_QIS = 170
"""The largest number of QIs: the size-1 weight (q - 1)! overflows float64 beyond it."""

_DENSE_FACTOR = 8
"""A subset's raw keys are counted with ``bincount`` when they span at most this many times the
number of rows (else they are ranked by sorting)."""


@dataclass(frozen=True)
class SudaResult:
    """Minimal sample uniques and SUDA scores of every record of a table.

    Parameters
    ----------
    max_size : int
        The largest MSU size searched (MSUs of more QIs are not found and do not score).
    msu_counts : numpy.ndarray (n, max_size) int64
        Column k - 1: the number of MSUs of size k of each record.
    score : numpy.ndarray (n,) float64
        The SUDA score: sum over the record's MSUs of (q - |MSU|)! (sdcMicro ``suda2``'s
        ``score`` with ``original_scores = TRUE``; q the number of QIs).
    dis_score : numpy.ndarray (n,) float64
        The DIS-SUDA score (sdcMicro ``suda2``'s ``disScore``): the score turned into a
        probability that a unique match on the record is correct; 0 where the score is 0.
    attribute_counts : numpy.ndarray (n, q) int64
        Column j: how many of the record's MSUs contain QI j.
    contribution : numpy.ndarray (q,) float64
        Each QI's contribution to the table's total score, **in percent** (sdcMicro ``suda2``'s
        ``attribute_contributions``): 100 x (sum over all MSUs containing the QI of their
        weight) / (total score). An MSU of several QIs counts for each, so the column can add up
        to more than 100; all zeros when no record scores.
    dis : float
        The file-level DIS probability D (Skinner & Elliot 2002) behind ``dis_score``: the
        estimated probability that a sample unique on all q QIs is a population unique.
    """

    max_size: int
    msu_counts: np.ndarray
    score: np.ndarray
    dis_score: np.ndarray
    attribute_counts: np.ndarray
    contribution: np.ndarray
    dis: float


@dataclass(frozen=True)
class SampleUniques:
    """Which records are unique on which subsets of QIs (the counting step of ``suda``).

    Parameters
    ----------
    subsets : tuple of tuple of int
        Every subset of at most ``max_size`` of the q QIs, by size, then in lexicographic order.
    records : numpy.ndarray (c,) int64
        The records whose row of QI codes occurs once (the only ones that can be unique on a
        subset), ascending.
    unique : numpy.ndarray (len(subsets), c) bool
        ``unique[s, i]``: record ``records[i]`` is unique in the sample on the QIs ``subsets[s]``.
    """

    subsets: tuple[tuple[int, ...], ...]
    records: np.ndarray
    unique: np.ndarray


def score_weights(q: int, max_size: int) -> np.ndarray:
    """The SUDA weight of an MSU of each size k = 1..max_size: (q - k)!.

    This is sdcMicro ``suda2``'s weight with ``original_scores = TRUE``, the product
    prod_{i=k}^{q-1} (q - i) of Elliot et al. with the largest MSU size taken as q - 1.

    Parameters
    ----------
    q : int
        The number of QIs.
    max_size : int
        The largest MSU size.

    Returns
    -------
    numpy.ndarray (max_size,) float64
    """
    return np.array([float(math.factorial(q - k)) for k in range(1, max_size + 1)])


def _check(codes: np.ndarray, max_size: int, missing: str, dis_fraction: float) -> np.ndarray:
    arr = np.asarray(codes)
    if arr.ndim != 2:
        raise AssessError(f"codes must be a 2-D (records x QIs) array, got shape {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise AssessError(
            f"codes must be integer category codes, got dtype {arr.dtype}; encode the QIs first "
            "(bin continuous columns) with -1 for a missing value"
        )
    n, q = arr.shape
    if n == 0 or q == 0:
        raise AssessError(f"codes of shape {arr.shape} hold no record or no QI; pass a non-empty table")
    if q > MAX_QIS:
        raise AssessError(f"{q} QIs are more than SUDA's {MAX_QIS}; choose fewer QIs")
    if arr.min() < MISSING:
        bad = int(arr.min())
        col = int(np.flatnonzero((arr == bad).any(axis=0))[0])
        raise AssessError(f"QI column {col} holds the code {bad}; codes are >= 0, and -1 for missing")
    if isinstance(max_size, bool) or not isinstance(max_size, (int, np.integer)):
        raise AssessError(f"max_size must be an integer, got {max_size!r}")
    if not 1 <= max_size <= q:
        raise AssessError(f"max_size {max_size} must lie in 1..{q} (the number of QIs)")
    if missing not in MISSING_RULES:
        raise AssessError(f"missing rule {missing!r} is not one of {', '.join(MISSING_RULES)}")
    if not (isinstance(dis_fraction, (int, float, np.floating)) and 0.0 < dis_fraction < 1.0):
        raise AssessError(f"dis_fraction {dis_fraction!r} must be a sampling fraction in (0, 1)")
    return arr.astype(np.int64, copy=False)


def _refine(labels: np.ndarray, n_labels: int, col: np.ndarray, size: int,
            mult: np.ndarray | None, need_labels: bool) -> tuple[np.ndarray, np.ndarray | None, int]:
    """Split the classes ``labels`` (dense, ``n_labels`` of them) by one more column.

    Returns the per-row class total (sum of ``mult`` over the row's new class), the new dense
    labels (None unless ``need_labels``) and their number.
    """
    key = labels * size + col
    span = n_labels * size
    if span <= _DENSE_FACTOR * key.size:
        counts = np.bincount(key, weights=mult, minlength=span)
        total = counts[key]
        if not need_labels:
            return total, None, 0
        present = counts > 0
        dense = np.cumsum(present) - 1
        return total, dense[key], int(dense[-1]) + 1
    uniq, inv = np.unique(key, return_inverse=True)
    inv = inv.ravel()
    total = np.bincount(inv, weights=mult, minlength=uniq.size)[inv]
    return total, inv, int(uniq.size)


def sample_uniques(codes: np.ndarray, max_size: int = 4, *, missing: str = "wildcard",
                   _checked: bool = False) -> SampleUniques:
    """For every subset of at most ``max_size`` QIs, which records are unique on it.

    A record is unique on S when no other record matches it on the QIs S (fk = 1 on those
    columns, as ``reidrisk.assess.classes.sample_frequencies`` counts with the same missing
    rule). Records are collapsed to their distinct rows first (a repeated row is unique
    nowhere). Each subset S = S' + {j} is counted exactly from the dense labels of S' refined by
    column j, missing being a value of its own. Under the wildcard rule a record r observed on
    all of S is then unique on S when that exact count is 1 and, for each pattern M of missing
    columns that occurs on S, no record missing exactly M agrees with r on S minus M (a lookup in
    the labels of that smaller subset); a record missing some of S is unique on S exactly when
    it is unique on the QIs of S it observes.

    Parameters
    ----------
    codes : numpy.ndarray (n, q) of int
        The QI codes, ``MISSING`` (-1) for a missing value.
    max_size : int
        The largest subset size, 1..q.
    missing : {"wildcard", "value"}
        The missing-value rule.

    Returns
    -------
    SampleUniques

    Raises
    ------
    AssessError
        On codes that are not a non-empty integer matrix with codes >= -1, or a bad max_size or
        missing rule.
    """
    arr = codes if _checked else _check(codes, max_size, missing, 0.5)
    n, q = arr.shape
    keys = row_keys(arr + 1)
    _, first, inverse, mult = np.unique(keys, return_index=True, return_inverse=True,
                                        return_counts=True)
    rows = np.empty((first.size, q), dtype=np.int64)  # distinct rows, each column re-coded
    for j in range(q):  # to 1..d_j in value order, missing to 0, so that keys stay small
        _, dense = np.unique(arr[first, j], return_inverse=True)
        rows[:, j] = dense.ravel() + (0 if arr[first, j].min() == MISSING else 1)
    u = rows.shape[0]
    weights = None if mult.max() == 1 else mult.astype(np.float64)
    wild = missing == "wildcard" and bool((rows == 0).any())
    observed = rows > 0
    has_missing = np.asarray((~observed).any(axis=0)) if wild else np.zeros(q, bool)
    sizes = rows.max(axis=0) + 1

    owner = np.empty(u, dtype=np.int64)  # distinct row -> its (last) record
    owner[inverse.ravel()] = np.arange(n)
    cand = np.flatnonzero(mult == 1)  # a repeated row is unique on no subset
    cand = cand[np.argsort(owner[cand])]  # in record order
    subsets = tuple(s for k in range(1, max_size + 1) for s in combinations(range(q), k))
    column = {s: i for i, s in enumerate(subsets)}
    unique = np.zeros((len(subsets), cand.size), dtype=bool)
    lost = ~observed
    lost_at = [np.flatnonzero(lost[:, j]) for j in range(q)]
    cand_lost = lost[cand]
    cand_lost_at = [np.flatnonzero(cand_lost[:, j]) for j in range(q)]

    labels: dict[tuple[int, ...], tuple[np.ndarray, int]] = {(): (np.zeros(u, np.int64), 1)}
    size = 1
    for s in subsets:
        parent, j = s[:-1], s[-1]
        if not wild and len(s) > size:  # a new size: only its parents' labels are needed
            size = len(s)
            labels = {t: v for t, v in labels.items() if len(t) == size - 1}
        plab, pn = labels[parent]
        keep = len(s) < max_size
        lab: np.ndarray | None
        if pn == u:  # the parent already separates every distinct row
            total, lab, nl = mult.astype(np.float64), plab, u
        else:
            total, lab, nl = _refine(plab, pn, rows[:, j], int(sizes[j]), weights, keep)
        if keep:
            assert lab is not None
            labels[s] = (lab, nl)
        flag: np.ndarray = np.asarray(total[cand] == 1.0)
        if wild and bool(has_missing[list(s)].any()):
            who, pattern = _missing_pattern(s, lost_at, lost)
            flag = _wildcard_unique(flag, s, who, pattern, labels, cand)
            who, pattern = _missing_pattern(s, cand_lost_at, cand_lost)
            _fill_missing(unique, flag, s, who, pattern, column, n)
        unique[column[s]] = flag
    return SampleUniques(subsets, owner[cand], unique)


def _missing_pattern(s: tuple[int, ...], missing_at: list[np.ndarray],
                     missing: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows missing some of the columns ``s`` (from the per-column lists ``missing_at``) and
    their pattern: bit m set when column ``s[m]`` is missing (``missing`` the (rows, q) mask)."""
    hit = np.zeros(missing.shape[0], dtype=bool)
    for c in s:
        hit[missing_at[c]] = True
    who = np.flatnonzero(hit)
    pattern = np.zeros(who.size, dtype=np.int64)
    for m, c in enumerate(s):
        pattern |= missing[who, c].astype(np.int64) << m
    return who, pattern


def _wildcard_unique(flag: np.ndarray, s: tuple[int, ...], who: np.ndarray, pattern: np.ndarray,
                     labels: dict[tuple[int, ...], tuple[np.ndarray, int]],
                     cand: np.ndarray) -> np.ndarray:
    """Drop from ``flag`` (exact uniques on ``s``) the candidates matched by a row ``who`` that is
    missing the columns ``pattern`` of ``s`` and agrees with them on the rest."""
    flag = flag.copy()
    for code in np.unique(pattern):
        rest = tuple(c for m, c in enumerate(s) if not (int(code) >> m) & 1)
        if not rest:  # a record missing all of s matches everyone
            flag[:] = False
            return flag
        live = np.flatnonzero(flag)
        lab, nl = labels[rest]
        mark = np.zeros(nl, dtype=bool)
        mark[lab[who[pattern == code]]] = True
        flag[live[mark[lab[cand[live]]]]] = False
    return flag


def _fill_missing(unique: np.ndarray, flag: np.ndarray, s: tuple[int, ...], who: np.ndarray,
                  pattern: np.ndarray, column: dict[tuple[int, ...], int], n: int) -> None:
    """Set, in place in ``flag``, the candidates ``who`` missing the columns ``pattern`` of ``s``:
    unique on ``s`` exactly when unique on the QIs of ``s`` they observe (already counted)."""
    for code in np.unique(pattern):
        at = who[pattern == code]
        rest = tuple(c for m, c in enumerate(s) if not (int(code) >> m) & 1)
        flag[at] = unique[column[rest], at] if rest else n == 1


def minimal(uniques: SampleUniques, q: int) -> tuple[np.ndarray, np.ndarray]:
    """The MSUs among the sample uniques: per record, MSU counts by size and by size and QI.

    S is an MSU of a record unique on S when the record is unique on none of S's
    ``|S| - 1``-subsets (uniqueness being monotone, on none of its proper subsets).

    Parameters
    ----------
    uniques : SampleUniques
        From ``sample_uniques``.
    q : int
        The number of QIs.

    Returns
    -------
    msu_counts : numpy.ndarray (c, max_size) int64
        Per record of ``uniques.records``, its MSUs of size 1..max_size.
    attribute_counts : numpy.ndarray (c, max_size, q) int64
        Per record and size k, how many of its MSUs of size k contain each QI.
    """
    subsets, unique = uniques.subsets, uniques.unique
    max_size = len(subsets[-1])
    column = {s: i for i, s in enumerate(subsets)}
    c = unique.shape[1]
    counts = np.zeros((c, max_size), dtype=np.int64)
    attrs = np.zeros((c, max_size, q), dtype=np.int64)
    for k in range(1, max_size + 1):
        idx = np.array([i for i, s in enumerate(subsets) if len(s) == k])
        msu = unique[idx]
        for m in range(k if k > 1 else 0):
            msu &= ~unique[[column[subsets[i][:m] + subsets[i][m + 1:]] for i in idx]]
        member = np.zeros((q, idx.size), dtype=np.float32)
        for row, i in enumerate(idx):
            member[list(subsets[i]), row] = 1.0
        counts[:, k - 1] = msu.sum(axis=0)
        attrs[:, k - 1] = np.rint(member @ msu.astype(np.float32)).astype(np.int64).T
    return counts, attrs


def dis_scores(score: np.ndarray, q: int, n_unique: int, n_pair: int,
               dis_fraction: float) -> tuple[np.ndarray, float]:
    """DIS-SUDA scores from SUDA scores (sdcMicro ``suda2``).

    With U the records unique on all q QIs, P the records in a class of exactly two and
    pi = ``dis_fraction``, the file-level DIS probability is (Skinner & Elliot 2002)

        D = U pi / (U pi + P (1 - pi)),

    and with the exponent Q = 1 + (8 - q) / 20 and A = sum over records with s > 0 of s^-Q, a
    record of score s > 0 gets

        dis(s) = 1 / (1 + (U / D - U) / (s^Q A)),

    and 0 when s = 0.

    Parameters
    ----------
    score : numpy.ndarray (n,)
        SUDA scores.
    q : int
        The number of QIs.
    n_unique, n_pair : int
        U and P above.
    dis_fraction : float
        The sampling fraction pi, in (0, 1).

    Returns
    -------
    dis_score : numpy.ndarray (n,) float64
    dis : float
        D (0 when no record is unique on all QIs).
    """
    out = np.zeros(score.shape, dtype=np.float64)
    if n_unique == 0:
        return out, 0.0
    pi = float(dis_fraction)
    dis = n_unique * pi / (n_unique * pi + n_pair * (1.0 - pi))
    pos = score > 0
    if pos.any():
        expo = 1.0 + (8.0 - q) / 20.0
        sq = score[pos] ** expo
        adj = float(np.sum(1.0 / sq))
        out[pos] = 1.0 / (1.0 + (n_unique / dis - n_unique) / (sq * adj))
    return out, float(dis)


def suda(codes: np.ndarray, max_size: int = 4, *, missing: str = "wildcard",
         dis_fraction: float = 0.01, fk: np.ndarray | None = None) -> SudaResult:
    """Minimal sample uniques, SUDA and DIS-SUDA scores of every record (Elliot et al. 2002).

    A minimal sample unique (MSU) of a record is a set S of QIs with fk = 1 on S and fk > 1 on
    every proper subset of S. With q QIs and m_k(r) the number of MSUs of size k of record r
    (k <= ``max_size``), the SUDA score is (sdcMicro ``suda2``, ``original_scores = TRUE``)

        score(r) = sum_k m_k(r) (q - k)!,

    the DIS-SUDA score is ``dis_scores`` of it, and QI j's contribution is
    100 sum_r sum_{MSU S of r, j in S} (q - |S|)! / sum_r score(r) percent. sdcMicro searches
    MSUs of every size; a smaller ``max_size`` leaves larger MSUs out of every output.

    Parameters
    ----------
    codes : numpy.ndarray (n, q) of int
        The QI codes, ``MISSING`` (-1) for a missing value.
    max_size : int
        The largest MSU size searched, 1..q (default 4). The work grows with the number of
        subsets, sum_{k <= max_size} C(q, k).
    missing : {"wildcard", "value"}
        ``wildcard`` (default): a missing value matches any value, so it is never part of an
        MSU and makes its record match every other on that QI; ``value``: missing is a value of
        its own.
    dis_fraction : float
        The sampling fraction pi of the DIS probability, in (0, 1) (sdcMicro's ``DisFraction``,
        default 0.01).
    fk : numpy.ndarray (n,) of int, optional
        The records' sample frequencies on all q QIs under the same missing rule
        (``sample_frequencies(codes, missing=missing)[0]``) when already at hand; they give U and
        P of the DIS probability. None: counted here.

    Returns
    -------
    SudaResult

    Raises
    ------
    AssessError
        On codes that are not a non-empty integer matrix with codes >= -1 (at most 170 QIs),
        max_size outside 1..q, an unknown missing rule, dis_fraction outside (0, 1) or an fk of
        the wrong shape.
    """
    arr = _check(codes, max_size, missing, dis_fraction)
    n, q = arr.shape
    uniques = sample_uniques(arr, max_size, missing=missing, _checked=True)
    counts_c, attrs_c = minimal(uniques, q)
    weights = score_weights(q, max_size)
    msu_counts = np.zeros((n, max_size), dtype=np.int64)
    attribute_counts = np.zeros((n, q), dtype=np.int64)
    msu_counts[uniques.records] = counts_c
    attribute_counts[uniques.records] = attrs_c.sum(axis=1)
    score = msu_counts @ weights
    # each MSU's weight credited to each of its QIs
    weighted = np.einsum("ckq,k->q", attrs_c.astype(np.float64), weights)
    total = float(score.sum())
    contribution = 100.0 * weighted / total if total > 0 else np.zeros(q)

    if fk is None:
        fk = sample_frequencies(arr, missing=missing)[0]
    fk = np.asarray(fk)
    if fk.shape != (n,):
        raise AssessError(f"fk has shape {fk.shape}, not ({n},): pass one frequency per record")
    dis_score, dis = dis_scores(score, q, int(np.sum(fk == 1)), int(np.sum(fk == 2)),
                                dis_fraction)
    return SudaResult(max_size, msu_counts, score, dis_score, attribute_counts, contribution, dis)
