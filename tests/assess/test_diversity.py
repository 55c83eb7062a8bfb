"""Sensitive-attribute measures: hand-worked tables, the papers' examples and a brute-force check."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from reidrisk.assess.classes import MISSING, AssessError
from reidrisk.assess.diversity import diversity, record_diversity, table_counts


def test_hand_worked_nominal_table():
    # class A holds the values 0, 1, 2 once each; class B holds 0, 0, 1; table p = (1/2, 1/3, 1/6)
    codes = np.array([[0], [0], [0], [1], [1], [1]])
    d = diversity(codes, np.array([0, 1, 2, 0, 0, 1]), 3)
    np.testing.assert_array_equal(d.distinct_l, [3, 3, 3, 2, 2, 2])
    b_entropy = -(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3))
    np.testing.assert_allclose(d.entropy_l, [3] * 3 + [math.exp(b_entropy)] * 3)
    # EMD with equal distance: half the L1 distance, 1/6 for both classes
    np.testing.assert_allclose(d.t_closeness, [1 / 6] * 6)
    # delta: A's worst value is 2 (1/3 against 1/6), B's is 0 (2/3 against 1/2); B lacks 2
    np.testing.assert_allclose(d.delta, [math.log(2)] * 3 + [math.log(4 / 3)] * 3)
    np.testing.assert_allclose(d.beta, [1.0] * 3 + [1 / 3] * 3)
    # (c,2): A 1 / (1 + 1), B 2 / (1 + 0)
    np.testing.assert_allclose(d.recursive_ratio(2), [0.5] * 3 + [2.0] * 3)
    np.testing.assert_array_equal(d.recursive_l(2), [3] * 3 + [1] * 3)
    np.testing.assert_array_equal(d.recursive_holds(2, 2), [True] * 3 + [False] * 3)
    s = d.summary()
    assert (s.distinct_l, s.recursive_l, s.recursive_c) == (2, 2, 3.0)
    assert s.entropy_l == pytest.approx(math.exp(b_entropy))
    assert s.delta_disclosure == pytest.approx(math.log(2))
    assert s.basic_beta == pytest.approx(1.0)
    # pycanon's enhanced beta: min(basic beta, -ln of the rarest value's share 1/6)
    assert s.enhanced_beta == pytest.approx(min(1.0, math.log(6)))
    assert (s.records, s.records_without_sensitive) == (6, 0)


def test_li_li_venkatasubramanian_salary_example():
    # Li, Li & Venkatasubramanian 2007, Sect. 4: salaries 3k..11k once each; the class {3k, 4k,
    # 5k} is at ordered distance 0.375 from the table, {6k, 8k, 11k} at 0.167
    codes = np.array([[0], [0], [0], [1], [1], [1], [2], [2], [2]])
    salary = np.array([0, 1, 2, 3, 5, 8, 4, 6, 7])
    d = diversity(codes, salary, 9, ordered=True)
    np.testing.assert_allclose(d.t_closeness[[0, 3]], [0.375, 1 / 6])
    # with equal distance both are 1 - 3/9
    e = diversity(codes, salary, 9, ordered=False)
    np.testing.assert_allclose(e.t_closeness, [2 / 3] * 9)


def test_values_the_table_never_holds_take_no_part():
    codes = np.array([[0], [0], [1], [1]])
    sa = np.array([0, 2, 2, 2])
    with_gap = diversity(codes, sa, 5, ordered=True)
    packed = diversity(codes, np.array([0, 1, 1, 1]), 2, ordered=True)
    for field in ("distinct_l", "entropy_l", "t_closeness", "delta", "beta"):
        np.testing.assert_allclose(getattr(with_gap, field), getattr(packed, field))


def test_a_class_without_an_observed_sensitive_value_is_left_out():
    codes = np.array([[0], [0], [1], [1], [1]])
    sa = np.array([MISSING, MISSING, 0, 1, 1])
    d = diversity(codes, sa, 2)
    np.testing.assert_array_equal(d.observed, [False, False, True, True, True])
    np.testing.assert_array_equal(d.distinct_l, [0, 0, 2, 2, 2])
    for field in ("entropy_l", "t_closeness", "delta", "beta"):
        assert np.isnan(getattr(d, field)[:2]).all()
    assert np.isnan(d.recursive_ratio(1)[:2]).all()
    np.testing.assert_array_equal(d.recursive_l(3)[:2], [0, 0])
    s = d.summary()
    assert (s.distinct_l, s.records, s.records_without_sensitive) == (2, 3, 2)
    with pytest.raises(AssessError, match="no record's class"):
        d.summary(where=np.array([True, True, False, False, False]))


def test_missing_qi_values_widen_the_class():
    # [0, ?] matches both [0, 0] and [0, 1]: its class holds both sensitive values
    codes = np.array([[0, 0], [0, 1], [0, MISSING], [1, 1]])
    sa = np.array([0, 1, 1, 0])
    wild = diversity(codes, sa, 2)
    np.testing.assert_array_equal(wild.distinct_l, [2, 1, 2, 1])
    value = diversity(codes, sa, 2, missing="value")
    np.testing.assert_array_equal(value.distinct_l, [1, 1, 1, 1])
    complete = (codes != MISSING).all(axis=1)
    assert value.summary(where=complete).records == 3


def brute_force(codes, sa, size, ordered, missing):
    """Every measure record by record: pairwise matches, then scipy's entropy and Wasserstein
    distance (the EMD with ground distance |i - j| / (m - 1) on the values' ranks)."""
    n = codes.shape[0]
    present = np.unique(sa[sa != MISSING])
    m = present.size
    p = np.array([(sa == v).sum() for v in present]) / (sa != MISSING).sum()
    out = {k: np.full(n, np.nan) for k in ("distinct_l", "entropy_l", "t", "delta", "beta")}
    ratio2 = np.full(n, np.nan)
    for r in range(n):
        if missing == "wildcard":
            match = [all(a == b or a == MISSING or b == MISSING for a, b in zip(codes[r], codes[o]))
                     for o in range(n)]
        else:
            match = [list(codes[r]) == list(codes[o]) for o in range(n)]
        vals = [sa[o] for o in range(n) if match[o] and sa[o] != MISSING]
        if not vals:
            out["distinct_l"][r] = 0
            continue
        cnt = np.array([vals.count(v) for v in present], dtype=float)
        q = cnt / cnt.sum()
        out["distinct_l"][r] = (cnt > 0).sum()
        out["entropy_l"][r] = math.exp(stats.entropy(q))
        if ordered:
            ranks = np.arange(m) / max(m - 1, 1)
            out["t"][r] = stats.wasserstein_distance(ranks, ranks, q, p)
        else:
            out["t"][r] = sum(max(qi - pi, 0.0) for qi, pi in zip(q, p))
        out["delta"][r] = max(abs(math.log(qi / pi)) for qi, pi in zip(q, p) if qi > 0)
        out["beta"][r] = max((qi - pi) / pi for qi, pi in zip(q, p))
        desc = sorted(cnt, reverse=True)
        ratio2[r] = desc[0] / sum(desc[1:]) if sum(desc[1:]) > 0 else math.inf
    return out, ratio2


@pytest.mark.parametrize("missing", ["wildcard", "value"])
@pytest.mark.parametrize("ordered", [False, True])
@pytest.mark.parametrize("seed, sizes", [(0, (2, 3, 2)), (1, (2, 3, 2)), (2, (6, 7, 5))])
def test_equal_to_brute_force(seed, sizes, ordered, missing):
    # sizes (6, 7, 5): most classes hold one record, hence one value (the per-value path)
    rng = np.random.default_rng(seed)
    n = 120
    codes = np.column_stack([rng.integers(0, s, n) for s in sizes])
    codes[rng.random(codes.shape) < 0.1] = MISSING
    sa = rng.choice(6, n, p=[0.4, 0.25, 0.15, 0.1, 0.1, 0.0])
    sa[rng.random(n) < 0.1] = MISSING
    d = diversity(codes, sa, 6, ordered=ordered, missing=missing)
    want, ratio2 = brute_force(codes, sa, 6, ordered, missing)
    np.testing.assert_array_equal(d.distinct_l, want["distinct_l"])
    for ours, theirs in (("entropy_l", "entropy_l"), ("t_closeness", "t"), ("delta", "delta"),
                         ("beta", "beta")):
        np.testing.assert_allclose(getattr(d, ours), want[theirs], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(d.recursive_ratio(2), ratio2, rtol=1e-12)


def test_bad_input_is_refused():
    codes = np.zeros((3, 1), dtype=int)
    with pytest.raises(AssessError, match="outside"):
        diversity(codes, np.array([0, 1, 5]), 3)
    with pytest.raises(AssessError, match="integer"):
        diversity(codes, np.array([0.0, 1.0, 2.0]), 3)
    with pytest.raises(AssessError, match="same rows"):
        diversity(codes, np.array([0, 1]), 3)
    with pytest.raises(AssessError, match="no observed value"):
        diversity(codes, np.full(3, MISSING), 3)
    with pytest.raises(AssessError, match="more records"):
        record_diversity(np.array([[2.0, 0.0]]), np.array([1.0, 1.0]))
    with pytest.raises(AssessError, match="one column per"):
        record_diversity(np.ones((2, 3)), np.ones(2))
    d = diversity(codes, np.array([0, 1, 2]), 3)
    with pytest.raises(AssessError, match="l >= 1"):
        d.recursive_ratio(0)
    with pytest.raises(AssessError, match="c > 0"):
        d.recursive_l(0.0)
    np.testing.assert_array_equal(table_counts(np.array([0, MISSING, 2, 2]), 4), [1, 0, 2, 0])
