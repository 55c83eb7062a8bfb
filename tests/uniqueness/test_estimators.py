import math

import numpy as np
import pytest
from scipy.stats import binom, nbinom

from reidrisk.uniqueness.estimators import (
    METHODS,
    EstimatorError,
    SampleFrequencies,
    _pitman_loglik,
    _snb_log_moments,
    _snb_solve,
    dankar_uniques,
    estimate_population_uniques,
    pitman_expected_uniques,
    pitman_uniques,
    shlosser_classes,
    snb_uniques,
    zayatz_uniques,
)


def test_frequencies_from_codes():
    codes = np.array([[0, 1], [0, 1], [2, 2], [3, -1], [3, -1], [3, -1], [1, 0]])
    fr = SampleFrequencies.from_codes(codes)
    assert fr.n == 7 and fr.u == 4 and fr.n1 == 2 and fr.n2 == 1 and fr.count(3) == 1
    np.testing.assert_array_equal(fr.record_class_size, [2, 2, 1, 3, 3, 3, 1])
    fr2 = SampleFrequencies.from_class_sizes(np.array([2, 1, 3, 1]))
    np.testing.assert_array_equal(fr2.sizes, fr.sizes)
    np.testing.assert_array_equal(fr2.classes, fr.classes)


def test_zayatz_hand_computed():
    # sample classes of sizes 1, 1, 2: n = 4, u = 3, N = 10, pi = 0.4.
    # h(k) = P(a population class of size k shows once in the sample) = Hypergeom(1; 10, k, 4):
    # h(1) = 4/10, h(2) = C(2,1) C(8,3) / C(10,4) = 112/210 = 8/15.
    # P(1 | sample unique) = (2/3)(2/5) / [(2/3)(2/5) + (1/3)(8/15)] = (4/15) / (4/9) = 3/5
    # U = f_1 * 3/5 / pi = 2 * 0.6 / 0.4 = 3
    codes = np.array([[0], [1], [2], [2]])
    est = zayatz_uniques(codes, 10)
    assert est.unique_given_sample_unique == pytest.approx(0.6, rel=1e-12)
    assert est.population_uniques == pytest.approx(3.0, rel=1e-12)
    assert est.proportion == pytest.approx(0.3, rel=1e-12)
    np.testing.assert_allclose(est.record_risk, [0.6, 0.6, 0.0, 0.0])


def test_pitman_likelihood_derivatives():
    fr = SampleFrequencies.from_class_sizes(np.array([1] * 30 + [2] * 10 + [3] * 4 + [7, 12]))
    i = np.arange(1, fr.u, dtype=float)
    t, a, e = 8.0, 0.4, 1e-5
    _, g, H = _pitman_loglik(t, a, fr, i)

    def ll(tt, aa):
        return _pitman_loglik(tt, aa, fr, i)[0]

    num_g = [(ll(t + e, a) - ll(t - e, a)) / (2 * e), (ll(t, a + e) - ll(t, a - e)) / (2 * e)]
    np.testing.assert_allclose(g, num_g, rtol=1e-6)

    def gr(tt, aa):
        return _pitman_loglik(tt, aa, fr, i)[1]

    num_H = np.column_stack([(gr(t + e, a) - gr(t - e, a)) / (2 * e), (gr(t, a + e) - gr(t, a - e)) / (2 * e)])
    np.testing.assert_allclose(H, num_H, rtol=1e-5)


def test_pitman_expected_uniques_ewens_limit():
    # alpha = 0 (Ewens): E[singletons] = N theta / (theta + N - 1)
    for theta, N in [(0.5, 10), (20.0, 1000), (300.0, 10**6)]:
        assert pitman_expected_uniques(theta, 0.0, N) == pytest.approx(N * theta / (theta + N - 1), rel=1e-9)
    # large N: Hoshino's Gamma(theta+1)/Gamma(theta+alpha) N^alpha
    theta, alpha, N = 5.0, 0.6, 10**9
    asym = math.exp(math.lgamma(theta + 1) - math.lgamma(theta + alpha)) * N**alpha
    assert pitman_expected_uniques(theta, alpha, N) == pytest.approx(asym, rel=1e-4)


def crp_class_sizes(theta, alpha, n, rng):
    """Class sizes of a Pitman(theta, alpha) partition of n (Chinese restaurant, exact)."""
    sizes = [1]
    owner = [0]  # table of each seated customer
    for t in range(1, n):
        if rng.random() < (theta + alpha * len(sizes)) / (theta + t):
            sizes.append(1)
            owner.append(len(sizes) - 1)
            continue
        while True:  # propose a table with prob n_j / t, accept with (n_j - alpha) / n_j
            j = owner[int(rng.integers(t))]
            if rng.random() < 1.0 - alpha / sizes[j]:
                break
        sizes[j] += 1
        owner.append(j)
    return np.array(sizes)


def test_pitman_ml_recovers_the_model():
    # a sample from the Pitman model itself: ML estimates within 4 standard errors of the truth
    # (observed information; asymptotic normality gives a two-sided miss rate of 6e-5)
    rng = np.random.default_rng(11)
    theta, alpha = 40.0, 0.55
    fr = SampleFrequencies.from_class_sizes(crp_class_sizes(theta, alpha, 6000, rng))
    est = pitman_uniques(fr, 60_000)
    assert est.converged and est.valid
    p = est.params
    assert abs(p["alpha"] - alpha) <= 4 * p["se_alpha"]
    assert abs(p["theta"] - theta) <= 4 * p["se_theta"]
    assert 0 < p["se_alpha"] < 0.05
    assert est.population_uniques == pytest.approx(pitman_expected_uniques(p["theta"], p["alpha"], 60_000))
    # a sample unique stays unique through N - n further draws with probability ~ pi^(1 - alpha)
    assert est.unique_given_sample_unique == pytest.approx(0.1 ** (1 - p["alpha"]), rel=0.05)


def test_snb_moments_match_direct_summation():
    for a, b, f in [(0.5, 0.2, 0.1), (2.0, 0.05, 0.3), (0.1, 0.7, 0.05)]:
        j = np.arange(1, 40_000)
        pF = nbinom.pmf(j - 1, a, b)  # 1 + NegBin(a, b)
        e1 = np.sum(pF * binom.pmf(1, j, f))
        e2 = np.sum(pF * binom.pmf(2, j, f))
        l1, l2 = _snb_log_moments(a, b, f, 1.0)
        assert math.exp(l1) == pytest.approx(e1, rel=1e-10)
        assert math.exp(l2) == pytest.approx(e2, rel=1e-10)


def test_snb_solver_recovers_parameters():
    K, f = 5000.0, 0.2
    for a, b in [(0.3, 0.4), (1.5, 0.1)]:
        l1, l2 = _snb_log_moments(a, b, f, K)
        got = _snb_solve(math.exp(l1), math.exp(l2), f, K)
        assert got is not None and got[2] < 1e-20
        assert got[0] == pytest.approx(a, rel=1e-6) and got[1] == pytest.approx(b, rel=1e-6)


def test_shlosser_counts_unseen_classes():
    fr = SampleFrequencies.from_class_sizes(np.array([1] * 50 + [2] * 10 + [5] * 3))
    assert shlosser_classes(fr, 1.0 - 1e-12) == pytest.approx(fr.u, rel=1e-6)
    assert shlosser_classes(fr, 0.1) > fr.u


@pytest.fixture(scope="module")
def zipf_population():
    """N = 100,000 people over 200,000 cells with Zipf(1.1) probabilities, a 10% sample."""
    rng = np.random.default_rng(2012)
    N, cells = 100_000, 200_000
    p = 1.0 / np.arange(1, cells + 1) ** 1.1
    pop = rng.choice(cells, size=N, p=p / p.sum())
    _, inverse, counts = np.unique(pop, return_inverse=True, return_counts=True)
    sample = rng.choice(N, N // 10, replace=False)
    return N, pop[sample][:, None], int((counts == 1).sum()), counts[inverse][sample]


def test_estimators_on_a_skewed_population(zipf_population):
    N, sample, truth, pop_size_of_sampled = zipf_population
    fr = SampleFrequencies.from_codes(sample)
    naive_scaled = fr.n1 / 0.1  # every sample unique taken as 1/pi population uniques
    naive = fr.n1  # sample uniques taken as the population uniques
    # The population is outside every model (a finite Zipf law), so no variance formula bounds
    # the error: 40% guards against gross failure only (these estimators are known to be biased
    # by tens of percent at pi = 0.1). The discriminating check is against the naive answers,
    # which are off by ~ +90% (f_1 / pi) and ~ -80% (f_1) here.
    for m in METHODS:
        est = estimate_population_uniques(fr, N, m)
        assert est.valid, m
        rel = abs(est.population_uniques / truth - 1)
        assert rel <= 0.4, (m, est.population_uniques, truth)
        assert abs(est.population_uniques - truth) < abs(naive_scaled - truth), m
        assert abs(est.population_uniques - truth) < abs(naive - truth), m
        # per-record risk: 0 outside sample uniques; summed over sample uniques it estimates how
        # many of them are population uniques (same 40% guard)
        risk = est.record_risk
        assert risk.shape == (fr.n,) and np.all(risk[fr.record_class_size > 1] == 0)
        assert np.all((risk >= 0) & (risk <= 1))
        actual = int(np.sum((fr.record_class_size == 1) & (pop_size_of_sampled == 1)))
        assert abs(risk.sum() / actual - 1) <= 0.4, m
    # Dankar's rule at pi = 0.1 is Pitman
    d = dankar_uniques(fr, N)
    assert d.estimator == "pitman" and d.rule == "dankar"
    assert d.population_uniques == pitman_uniques(fr, N).population_uniques


def test_dankar_rule_above_ten_percent(zipf_population):
    N, sample, _, _ = zipf_population
    N_small = 3 * sample.shape[0]  # pi = 1/3
    z, s = zayatz_uniques(sample, N_small), snb_uniques(sample, N_small)
    d = dankar_uniques(sample, N_small)
    assert d.population_uniques == min(z.population_uniques, s.population_uniques)
    assert d.estimator in ("zayatz", "snb")


def test_edge_cases():
    no_uniques = np.array([[0], [0], [1], [1]])
    for m in METHODS:
        est = estimate_population_uniques(no_uniques, 100, m)
        assert est.population_uniques == 0.0 and est.valid
    all_unique = np.arange(50)[:, None]
    p = pitman_uniques(all_unique, 1000)
    assert not p.valid and math.isnan(p.population_uniques)
    d = dankar_uniques(all_unique, 1000)
    assert d.estimator == "zayatz" and d.valid  # the rule falls back when Pitman has no estimate
    census = np.array([[0], [1], [1], [2]])
    for m in METHODS:
        assert estimate_population_uniques(census, 4, m).population_uniques == 2.0
    with pytest.raises(EstimatorError, match="N"):
        zayatz_uniques(census, 3)
    with pytest.raises(EstimatorError, match="unknown estimator"):
        estimate_population_uniques(census, 10, "chao")
    with pytest.raises(EstimatorError, match="integer codes"):
        SampleFrequencies.from_codes(np.array([[0.5]]))


def test_pitman_on_the_ewens_boundary_converges():
    """Classes of even sizes put the ML estimate on the boundary alpha = 0: the estimator fits
    Ewens's theta there (its score equation holds) instead of reporting a failure."""
    from scipy.special import digamma

    from reidrisk.uniqueness.estimators import SampleFrequencies, pitman_uniques

    freq = SampleFrequencies.from_class_sizes(np.array([1] * 20 + [2] * 200 + [3] * 100))
    est = pitman_uniques(freq, 100_000)
    assert est.valid and est.params["alpha"] == 0.0
    theta = est.params["theta"]
    assert theta * (digamma(theta + freq.n) - digamma(theta)) == pytest.approx(freq.u, rel=1e-9)
    assert 0 < est.population_uniques < 100_000
