import numpy as np
import pytest
from scipy.special import gammaln

from reidrisk.uniqueness.floors import floor_q
from reidrisk.uniqueness.posterior import (
    PosteriorError,
    match_count_matrix,
    match_counts,
    population_count_posterior,
)


def brute_force(q, N, rates, counts):
    """Eq. 16-18 enumerated over x = 1..N (numerators normalized directly)."""
    x = np.arange(1, N + 1, dtype=float)
    lw = gammaln(N + 1) - gammaln(x + 1) - gammaln(N - x + 1) + x * np.log(q) + (N - x) * np.log1p(-q)
    lw -= np.log(-np.expm1(N * np.log1p(-q)))  # eq. 16 truncation (a constant)
    ok = np.ones(N, dtype=bool)
    for s, c in zip(rates, counts):
        ok &= x >= c
        with np.errstate(invalid="ignore"):
            lw = lw + gammaln(x + 1) - gammaln(x - c + 1) + c * np.log(s) + (x - c) * np.log1p(-s)
    lw = np.where(ok, lw, -np.inf)
    p = np.exp(lw - lw.max())
    return x, p / p.sum()


@pytest.mark.parametrize("N", [50, 173, 500])
@pytest.mark.parametrize("m", [0, 1, 2, 3])
def test_matches_brute_force(N, m):
    rng = np.random.default_rng(N * 10 + m)
    rates = rng.uniform(0.05, 0.95, m)
    q = np.array([1e-5, 0.002, 0.02, 0.1, 0.45, 0.93])
    counts = rng.integers(0, 7, (q.size, m))
    if m:
        counts[0] = 0
        counts[1, 0] = 3
    res = population_count_posterior(q, N, rates, counts if m else None, floor="none")
    T = np.array([0, 1, 2, 5, 10, 40])
    pg = res.prob_greater(T)
    for i in range(q.size):
        x, p = brute_force(q[i], N, rates, counts[i])
        xs, ps = res.pmf(i)
        full = np.zeros(N)
        full[xs - 1] = ps
        np.testing.assert_allclose(full, p, rtol=0, atol=1e-10)
        assert res.expected[i] == pytest.approx(np.sum(x * p), rel=1e-10)
        assert res.p_unique[i] == pytest.approx(p[0], abs=1e-10)
        var = np.sum((x - np.sum(x * p)) ** 2 * p)
        assert res.variance[i] == pytest.approx(var, rel=1e-8, abs=1e-10)
        for k, t in enumerate(T):
            assert pg[i, k] == pytest.approx(p[x > t].sum(), abs=1e-10)
        assert xs[0] >= max(1, counts[i].max() if m else 1)
    assert np.all(res.tail_bound <= 1e-12)
    np.testing.assert_allclose(res.prob_greater(5), pg[:, 3])


def test_floor_is_applied_before_the_posterior():
    N = 200
    q = np.array([1e-9, 0.05])
    res = population_count_posterior(q, N, [0.3], [[0], [1]], alpha=0.3, floor="lambertw")
    qf = floor_q(q, N, 0.3, "lambertw")
    np.testing.assert_array_equal(res.q, qf)
    x, p = brute_force(qf[0], N, [0.3], [0])
    assert res.expected[0] == pytest.approx(np.sum(x * p), rel=1e-10)


def test_matches_in_a_database_move_mass_upward():
    N, q = 100_000, 2e-5  # N q = 2
    c = np.arange(0, 8)
    res = population_count_posterior(np.full(c.size, q), N, [0.1], c[:, None], floor="none")
    assert np.all(np.diff(res.expected) > 0)
    assert np.all(np.diff(res.p_unique) <= 0)
    # c records seen at rate s: E[X] ~ c + (N - c) q (1 - s) / (1 - q s) for c >= 1 (exact thinning)
    expected = c[1:] + (N - c[1:]) * q * 0.9 / (1 - q * 0.1)
    np.testing.assert_allclose(res.expected[1:], expected, rtol=1e-9)


def test_more_databases_without_matches_pull_toward_one():
    N, q = 50_000, 1e-4  # N q = 5
    res = population_count_posterior(np.full(3, q), N, [0.2, 0.2], [[0, 0], [1, 0], [1, 1]], floor="none")
    one = population_count_posterior([q], N, [], None, floor="none")
    assert res.expected[0] < one.expected[0]


def test_census_pins_the_count():
    res = population_count_posterior([1e-6, 0.3, 0.9], 1000, [0.2, 1.0], [[0, 4], [3, 3], [1, 7]])
    np.testing.assert_array_equal(res.width, 1)
    np.testing.assert_array_equal(res.expected, [4, 3, 7])
    np.testing.assert_array_equal(res.prob_greater(3), [1.0, 0.0, 1.0])
    np.testing.assert_array_equal(res.p_unique, [0.0, 0.0, 0.0])
    one = population_count_posterior([0.01], 1000, [1.0], [[1]])
    assert one.p_unique[0] == 1.0


def test_contradictory_census_is_refused():
    with pytest.raises(PosteriorError, match="record 0.*census"):
        population_count_posterior([0.01], 1000, [1.0], [[0]])
    with pytest.raises(PosteriorError, match="record 1"):
        population_count_posterior([0.01, 0.01], 1000, [1.0, 0.5], [[2, 1], [2, 3]])
    with pytest.raises(PosteriorError, match="record 0"):
        population_count_posterior([0.01], 1000, [1.0, 1.0], [[2, 3]])


def test_degenerate_q():
    res = population_count_posterior([0.0, 0.0, 1.0], 40, [0.5], [[0], [5], [2]], floor="none")
    np.testing.assert_array_equal(res.start, [1, 5, 40])
    np.testing.assert_array_equal(res.expected, [1, 5, 40])


@pytest.mark.parametrize("lam", [1e-3, 0.5, 3.0, 25.0, 400.0])
def test_window_does_not_grow_with_N(lam):
    counts = np.array([[0, 0], [1, 0], [2, 3]])
    out = {}
    for N in (30_000, 10_000_000):
        res = population_count_posterior(np.full(3, lam / N), N, [0.1, 0.05], counts, floor="none")
        assert np.all(np.isfinite(res.expected)) and np.all(np.isfinite(res.probs))
        assert np.all(res.tail_bound <= 1e-12)
        out[N] = res
    # the posterior depends on N only through N q when N q << N: widths and answers agree
    w_small, w_big = out[30_000].width, out[10_000_000].width
    assert np.all(np.abs(w_big - w_small) <= np.maximum(2, 0.1 * w_small))
    # binomial vs Poisson and the (N - c) factors differ by O((N q + c) / N) relative
    np.testing.assert_allclose(out[10_000_000].expected, out[30_000].expected, rtol=(lam + 5) / 30_000)
    # a window the width of a few standard deviations, far below N
    sd = np.sqrt(out[10_000_000].variance)
    assert np.all(out[10_000_000].width <= 20 * sd + 40)


def test_dense_and_pmf_agree():
    res = population_count_posterior([0.001, 0.01, 0.2], 2000, [0.1], [[0], [2], [30]], floor="none")
    start, P = res.dense()
    np.testing.assert_array_equal(start, res.start)
    assert P.shape == (3, res.width.max())
    for i in range(3):
        x, p = res.pmf(i)
        np.testing.assert_array_equal(P[i, : p.size], p)
        assert P[i, p.size:].sum() == 0
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)
    with pytest.raises(ValueError):
        res.probs[0] = 1.0  # results are read-only


def test_bad_inputs_name_the_problem():
    with pytest.raises(PosteriorError, match="database 1.*1.5"):
        population_count_posterior([0.1], 100, [0.1, 1.5], [[0, 0]])
    with pytest.raises(PosteriorError, match="database 0.*0.0"):
        population_count_posterior([0.1], 100, [0.0], [[0]])
    with pytest.raises(PosteriorError, match=r"counts\[0, 1\] = -1"):
        population_count_posterior([0.1], 100, [0.1, 0.1], [[0, -1]])
    with pytest.raises(PosteriorError, match="exceeds the population size"):
        population_count_posterior([0.1], 100, [0.1], [[101]])
    with pytest.raises(PosteriorError, match="database 0 holds 500"):
        population_count_posterior([0.1], 100, [0.1], [[1]], sizes=[500])
    with pytest.raises(PosteriorError, match="size 3 of database 0"):
        population_count_posterior([0.1], 100, [0.1], [[5]], sizes=[3])
    with pytest.raises(PosteriorError, match=r"q\[1\]"):
        population_count_posterior([0.1, 1.2], 100, [0.1], [[0], [0]])
    with pytest.raises(PosteriorError, match="N must be an integer >= 1"):
        population_count_posterior([0.1], 0, [0.1], [[0]])
    with pytest.raises(PosteriorError, match="N must be an integer"):
        population_count_posterior([0.1], 10.5, [0.1], [[0]])
    with pytest.raises(PosteriorError, match="shape"):
        population_count_posterior([0.1, 0.2], 100, [0.1], [[0, 0]])


# --------------------------------------------------------------------------------- match counts
def brute_counts(records, db):
    out = []
    for r in records:
        if (r < 0).any():
            out.append(0)
            continue
        out.append(int(sum(1 for d in db if (d >= 0).all() and np.array_equal(d, r))))
    return np.array(out)


def test_match_counts_brute_force_with_missing():
    rng = np.random.default_rng(7)
    db = rng.integers(0, 3, (400, 4))
    db[rng.random(db.shape) < 0.05] = -1
    records = np.concatenate([db[:30], rng.integers(0, 3, (30, 4))])
    records[5, 2] = -1
    got = match_counts(records, db)
    np.testing.assert_array_equal(got, brute_counts(records, db))
    assert got[5] == 0
    assert got.dtype == np.int64


def test_match_counts_huge_product_domain():
    # 40 attributes with 1000 values: the product domain (1e120) cannot be one int64 key
    rng = np.random.default_rng(3)
    base = rng.integers(0, 1000, (50, 40))
    db = base[rng.integers(0, 50, 300)]
    db[::7, 39] = 999 - db[::7, 39] // 2  # some rows differ on the last attribute only
    records = np.concatenate([base, rng.integers(0, 1000, (5, 40))])
    np.testing.assert_array_equal(match_counts(records, db), brute_counts(records, db))


def test_match_count_matrix_and_errors():
    db1 = np.array([[0, 1], [0, 1], [1, 1]])
    db2 = np.array([[0, 1], [-1, 1]])
    rec = np.array([[0, 1], [1, 1], [1, 0]])
    np.testing.assert_array_equal(match_count_matrix(rec, [db1, db2]), [[2, 1], [1, 0], [0, 0]])
    with pytest.raises(PosteriorError, match="attributes"):
        match_counts(rec, np.zeros((2, 3), dtype=int))
    with pytest.raises(PosteriorError, match="integer"):
        match_counts(rec.astype(float), db1)
