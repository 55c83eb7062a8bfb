"""SUDA: minimal sample uniques against hand-worked tables and a brute-force search."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pytest

from reidrisk.assess.classes import MISSING, AssessError, sample_frequencies
from reidrisk.assess.suda import dis_scores, sample_uniques, score_weights, suda

# Three records, three QIs (a, b, c):
#   r0 = (2, 0, 0): a = 2 occurs once -> MSU {a}; b = 0 and c = 0 are shared with r2, and
#        {b, c} = (0, 0) too, so {a} is its only MSU.
#   r1 = (1, 3, 6): b = 3 and c = 6 occur once -> MSUs {b}, {c}; a = 1 is shared with r2.
#   r2 = (1, 0, 0): no single value is unique; (a, b) = (1, 0) and (a, c) = (1, 0) are -> two
#        MSUs of size 2; (b, c) = (0, 0) is shared with r0.
# Weights (q - k)! with q = 3: size 1 -> 2, size 2 -> 1. Scores: r0 2, r1 4, r2 2 (total 8).
# Contributions: a: r0's 2 + r2's 1 + 1 = 4 -> 50 %; b: r1's 2 + r2's 1 = 3 -> 37.5 %; c: 37.5 %.
# (The same table and percentages as the example of sdcMicro's suda2 tests.)
TABLE = np.array([[2, 0, 0], [1, 3, 6], [1, 0, 0]])


def test_hand_worked_msus_scores_and_contributions():
    r = suda(TABLE, 3)
    np.testing.assert_array_equal(r.msu_counts, [[1, 0, 0], [2, 0, 0], [0, 2, 0]])
    np.testing.assert_array_equal(r.score, [2.0, 4.0, 2.0])
    np.testing.assert_array_equal(r.attribute_counts, [[1, 0, 0], [0, 1, 1], [2, 1, 1]])
    np.testing.assert_allclose(r.contribution, [50.0, 37.5, 37.5])
    # U = 3 uniques on all QIs, P = 0 records in pairs -> D = 1 and every scored record's DIS-SUDA
    # score is 1 / (1 + 0) = 1
    assert r.dis == 1.0
    np.testing.assert_array_equal(r.dis_score, [1.0, 1.0, 1.0])


def test_hand_worked_dis_score_with_a_pair():
    # the table above plus the pair (4, 7, 8) twice, whose values occur nowhere else: the three
    # records keep their MSUs and scores (2, 4, 2); the pair scores 0.
    codes = np.vstack([TABLE, [[4, 7, 8], [4, 7, 8]]])
    r = suda(codes, 3, dis_fraction=0.1)
    np.testing.assert_array_equal(r.score, [2.0, 4.0, 2.0, 0.0, 0.0])
    # U = 3, P = 2, pi = 0.1: D = 0.3 / (0.3 + 1.8) = 1/7.
    # Q = 1 + (8 - 3)/20 = 1.25; A = 2 * 2^-1.25 + 4^-1.25 = 0.840896 + 0.176777 = 1.017673;
    # U/D - U = 21 - 3 = 18.
    # score 2: 1 / (1 + 18 / (2^1.25 * A)) = 1 / (1 + 18 / 2.420449) = 0.118531
    # score 4: 1 / (1 + 18 / (4^1.25 * A)) = 1 / (1 + 18 / 5.756865) = 0.242324
    assert r.dis == pytest.approx(1 / 7)
    np.testing.assert_allclose(r.dis_score, [0.118531, 0.242324, 0.118531, 0.0, 0.0], atol=2e-6)


def test_missing_values_as_wildcards_and_as_values():
    # r0 = (0, 0), r1 = (0, 1), r2 = (1, ?).
    # wildcard: r2's a = 1 is unique -> {a}; b = 0 (r0) and b = 1 (r1) each match r2's missing b,
    #   so neither is unique on {b}; on {a, b} r0 and r1 differ from each other and from r2's
    #   a = 1 -> one MSU of size 2 each. r2's {a, b} is not minimal ({a} is unique).
    codes = np.array([[0, 0], [0, 1], [1, MISSING]])
    r = suda(codes, 2)
    np.testing.assert_array_equal(r.msu_counts, [[0, 1], [0, 1], [1, 0]])
    np.testing.assert_array_equal(r.attribute_counts, [[1, 1], [1, 1], [1, 0]])
    # value: missing is a value of its own, so b = 0, b = 1 and b = ? each occur once ->
    #   r0 {b}, r1 {b}, r2 {a} and {b}.
    v = suda(codes, 2, missing="value")
    np.testing.assert_array_equal(v.msu_counts, [[1, 0], [1, 0], [2, 0]])


def test_a_record_missing_everything_matches_everyone():
    codes = np.array([[0, 0], [1, 1], [MISSING, MISSING]])
    r = suda(codes, 2)
    # r2 matches both others on every subset, so nobody is unique anywhere
    np.testing.assert_array_equal(r.msu_counts, np.zeros((3, 2)))
    assert r.dis == 0.0 and not r.dis_score.any() and not r.contribution.any()


# ---- brute force ---------------------------------------------------------------------------------
def brute_unique(codes: np.ndarray, cols: tuple[int, ...], missing: str) -> np.ndarray:
    """(n,) bool: record i matches no other record on ``cols`` (pairwise, test-only)."""
    sub = codes[:, list(cols)]
    a, b = sub[:, None, :], sub[None, :, :]
    if missing == "value":
        match = (a == b).all(axis=2)
    else:
        match = ((a == b) | (a == MISSING) | (b == MISSING)).all(axis=2)
    return match.sum(axis=1) == 1


def brute_suda(codes: np.ndarray, max_size: int, missing: str):
    """MSU counts by size, attribute counts and scores by the definition: unique on S and on no
    proper non-empty subset of S (every subset checked, not only the immediate ones)."""
    n, q = codes.shape
    uniq = {s: brute_unique(codes, s, missing)
            for k in range(1, max_size + 1) for s in combinations(range(q), k)}
    counts = np.zeros((n, max_size), dtype=int)
    attrs = np.zeros((n, q), dtype=int)
    score = np.zeros(n)
    for s, u in uniq.items():
        proper = [t for k in range(1, len(s)) for t in combinations(s, k)]
        is_msu = u & ~np.any([uniq[t] for t in proper], axis=0) if proper else u
        counts[:, len(s) - 1] += is_msu
        attrs[:, list(s)] += is_msu[:, None]
        score += is_msu * math.factorial(q - len(s))
    return uniq, counts, attrs, score


def random_table(rng, n, sizes, p_missing):
    codes = np.column_stack([rng.integers(0, s, n) for s in sizes])
    codes[rng.random(codes.shape) < p_missing] = MISSING
    return codes


@pytest.mark.parametrize("missing", ["wildcard", "value"])
@pytest.mark.parametrize("seed,p_missing", [(0, 0.0), (1, 0.0), (2, 0.1), (3, 0.25), (4, 0.1)])
def test_msus_equal_brute_force_on_random_tables(seed, p_missing, missing):
    rng = np.random.default_rng(seed)
    sizes = (2, 3, 4, 3, 5)[: 4 + seed % 2]
    codes = random_table(rng, 60, sizes, p_missing)
    codes[5] = codes[6]  # at least one repeated row
    q = codes.shape[1]
    for max_size in (1, 3, q):
        uniq, counts, attrs, score = brute_suda(codes, max_size, missing)
        r = suda(codes, max_size, missing=missing)
        np.testing.assert_array_equal(r.msu_counts, counts)
        np.testing.assert_array_equal(r.attribute_counts, attrs)
        np.testing.assert_array_equal(r.score, score)
        su = sample_uniques(codes, max_size, missing=missing)
        for s, u in uniq.items():
            assert not u[np.setdiff1d(np.arange(len(codes)), su.records)].any()
            np.testing.assert_array_equal(su.unique[su.subsets.index(s)], u[su.records])


def test_contribution_and_dis_follow_their_definitions_on_a_random_table():
    rng = np.random.default_rng(7)
    codes = random_table(rng, 80, (2, 3, 4, 3), 0.1)
    q = codes.shape[1]
    r = suda(codes, q, dis_fraction=0.05)
    _, _, _, score = brute_suda(codes, q, "wildcard")
    # contribution: each MSU's weight credited to each of its QIs, in percent of the total score
    credited = np.zeros(q)
    for k in range(1, q + 1):
        for s in combinations(range(q), k):
            uniq, _, _, _ = brute_suda(codes[:, list(s)], k, "wildcard")
            is_msu = uniq[tuple(range(k))] & ~np.any(
                [uniq[t] for j in range(1, k) for t in combinations(range(k), j)], axis=0
            ) if k > 1 else uniq[(0,)]
            credited[list(s)] += is_msu.sum() * math.factorial(q - k)
    np.testing.assert_allclose(r.contribution, 100 * credited / score.sum())
    fk, _ = sample_frequencies(codes)
    want, dis = dis_scores(score, q, int((fk == 1).sum()), int((fk == 2).sum()), 0.05)
    np.testing.assert_allclose(r.dis_score, want)
    assert r.dis == dis and 0 < dis < 1
    # a larger score never has a smaller DIS-SUDA score
    order = np.argsort(score)
    assert np.all(np.diff(r.dis_score[order]) >= -1e-15)


def test_a_smaller_max_size_keeps_the_smaller_msus():
    rng = np.random.default_rng(11)
    codes = random_table(rng, 200, (3, 4, 5, 3, 2, 4), 0.05)
    full = suda(codes, 6)
    for m in (1, 2, 4):
        part = suda(codes, m)
        np.testing.assert_array_equal(part.msu_counts, full.msu_counts[:, :m])
        np.testing.assert_array_equal(part.score, full.msu_counts[:, :m] @ score_weights(6, m))


def test_repeated_rows_and_a_table_of_one_record():
    codes = np.array([[0, 1], [0, 1]])
    assert not suda(codes, 2).msu_counts.any()
    # one record is unique on each single QI
    one = suda(np.array([[3, MISSING, 1]]), 2)
    np.testing.assert_array_equal(one.msu_counts, [[3, 0]])


def test_fk_passed_in_gives_the_same_result():
    rng = np.random.default_rng(3)
    codes = random_table(rng, 100, (3, 3, 4), 0.1)
    fk, _ = sample_frequencies(codes)
    a, b = suda(codes, 2), suda(codes, 2, fk=fk)
    np.testing.assert_array_equal(a.dis_score, b.dis_score)


@pytest.mark.parametrize(
    "codes,kwargs,words",
    [
        (TABLE, {"max_size": 0}, "max_size 0"),
        (TABLE, {"max_size": 4}, "1..3"),
        (TABLE, {"max_size": 2.0}, "integer"),
        (TABLE.astype(float), {}, "dtype float64"),
        (np.array([[0, -2, 1]]), {}, "column 1 holds the code -2"),
        (np.array([1, 2, 3]), {}, "2-D"),
        (np.zeros((0, 3), dtype=int), {}, "no record"),
        (TABLE, {"missing": "drop"}, "missing rule"),
        (TABLE, {"dis_fraction": 1.0}, "dis_fraction"),
        (TABLE, {"dis_fraction": 0}, "dis_fraction"),
        (TABLE, {"fk": np.ones(2)}, "fk has shape"),
    ],
)
def test_bad_input_is_refused_with_the_reason(codes, kwargs, words):
    args = {"max_size": 2, **kwargs}
    with pytest.raises(AssessError, match=words):
        suda(codes, **args)


def test_sorted_and_counted_keys_agree(monkeypatch):
    """Subsets whose keys span far more than the rows are ranked by sorting: same MSUs."""
    import reidrisk.assess.suda as mod

    rng = np.random.default_rng(5)
    codes = random_table(rng, 60, (3, 4, 3, 5), 0.1)
    _, counts, _, score = brute_suda(codes, 4, "wildcard")
    monkeypatch.setattr(mod, "_DENSE_FACTOR", 0)
    r = suda(codes, 4)
    np.testing.assert_array_equal(r.msu_counts, counts)
    np.testing.assert_array_equal(r.score, score)


def test_large_and_sparse_codes_give_the_same_msus():
    rng = np.random.default_rng(9)
    codes = random_table(rng, 80, (3, 4, 3, 5), 0.1)
    big = np.where(codes == MISSING, MISSING, codes * 10**17 + 7)
    for missing in ("wildcard", "value"):
        np.testing.assert_array_equal(suda(big, 4, missing=missing).msu_counts,
                                      suda(codes, 4, missing=missing).msu_counts)
