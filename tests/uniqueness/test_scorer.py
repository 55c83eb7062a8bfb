"""The posterior engine and the calibrated prior of reidrisk.uniqueness.scorer.

Every expectation is exact (a closed form or a brute-force sum over every count 1..N) or a
statistical check with a tolerance derived from the estimator's standard error.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from reidrisk.uniqueness.posterior import population_count_posterior
from reidrisk.uniqueness.scorer import (
    DEFAULT_EXACT,
    DEFAULT_RATIO,
    CountPrior,
    ScoringError,
    count_grid,
    count_posterior,
    fit_count_prior,
    nb_logpmf,
    nb_sf,
)


def brute_force(mu, a, N, rates, counts, kappa=None, phi=None, r=np.inf):
    """Posterior over x = 1..N by direct summation (paper 000 eq. 17-19 with the NegBin prior)."""
    x = np.arange(1, N + 1, dtype=np.float64)
    lp = nb_logpmf(x - 1, a, mu)
    for i, s in enumerate(rates):
        c = counts[i]
        k = 1.0 if kappa is None else kappa[i]
        f = 0.0 if phi is None else phi[i]
        chance = (lambda j: stats.poisson.pmf(j, f)) if np.isinf(r) else (lambda j: stats.nbinom.pmf(j, r, r / (r + f)))
        terms = [stats.binom.pmf(c - j, x, s * k) * (chance(j) if f > 0 else float(j == 0))
                 for j in range(c + 1)]
        with np.errstate(divide="ignore"):
            lp = lp + np.log(np.sum(terms, axis=0))
    p = np.exp(lp - lp.max())
    return x, p / p.sum()


# ---- the negative binomial -------------------------------------------------------------------
def test_nb_logpmf_matches_scipy_and_limits():
    y = np.arange(0, 60)
    for a, mu in [(0.3, 4.0), (2.0, 0.5), (50.0, 20.0)]:
        np.testing.assert_allclose(nb_logpmf(y, a, mu), stats.nbinom.logpmf(y, a, a / (a + mu)),
                                   rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(nb_logpmf(y, np.inf, 3.0), stats.poisson.logpmf(y, 3.0), rtol=1e-12)
    assert nb_logpmf(0, 1.0, 0.0) == 0.0 and nb_logpmf(2, 1.0, 0.0) == -np.inf
    np.testing.assert_allclose(nb_sf(3, 0.7, 5.0), stats.nbinom.sf(3, 0.7, 0.7 / 5.7))
    np.testing.assert_allclose(nb_sf(3, np.inf, 5.0), stats.poisson.sf(3, 5.0))


# ---- the grid ----------------------------------------------------------------------------------
def test_grid_of_a_window_far_from_one():
    g = count_grid(10**6, x_min=5000, ratio=0.01)
    assert g.lo[0] == 5000 and g.hi[-1] == 10**6
    np.testing.assert_array_equal(g.lo[1:], g.hi[:-1] + 1)
    assert np.all(g.width <= np.maximum(1, np.ceil(0.011 * g.hi)))


def test_grid_covers_every_count_once():
    for x_max in (1, 7, DEFAULT_EXACT, DEFAULT_EXACT + 1, 10**7):
        g = count_grid(x_max)
        assert g.lo[0] == 1 and g.hi[-1] == x_max
        np.testing.assert_array_equal(g.lo[1:], g.hi[:-1] + 1)  # contiguous, no overlap
        assert np.all(g.hi >= g.lo)
        exact = g.width == 1
        assert np.all(exact[: min(x_max, DEFAULT_EXACT)])
        # geometric part: at most ~ratio relative width, so the size grows like log(x_max)
        bound = min(x_max, DEFAULT_EXACT) + np.log(max(x_max / DEFAULT_EXACT, 1)) / np.log1p(DEFAULT_RATIO) + 3
        assert g.size <= bound


# ---- the posterior -------------------------------------------------------------------------------
def test_prior_only_is_one_plus_the_prior():
    """Without databases X = 1 + Y: E[X] = 1 + mu and P(X = 1) = P(Y = 0). Exact (1e-9) while the
    mass lies on the exact counts 1..64; beyond, bins of relative width rho <= 1/16 and the midpoint
    rule: relative error of order rho^2 / 24 times x^2 |f''| / f (about 1 / CV^2 <= 10 here), so
    below 3e-3."""
    mu = np.array([0.01, 0.7, 3.0])
    a = np.array([np.inf, 0.5, 2.0])
    post = count_posterior(mu, a, 10**6, T=[1, 5])
    np.testing.assert_allclose(post.expected, 1 + mu, rtol=1e-9)
    np.testing.assert_allclose(post.p_unique, np.exp(nb_logpmf(0, a, mu)), rtol=1e-9)
    np.testing.assert_allclose(post.p_greater[:, 1], nb_sf(4, a, mu), rtol=1e-7, atol=1e-12)
    wide = count_posterior(np.array([40.0, 300.0]), np.array([10.0, 0.7]), 10**6, T=[1, 50, 1000])
    np.testing.assert_allclose(wide.expected, [41.0, 301.0], rtol=3e-3)
    np.testing.assert_allclose(wide.p_greater, [[1 - np.exp(nb_logpmf(0, 10.0, 40.0)), nb_sf(49, 10.0, 40.0), nb_sf(999, 10.0, 40.0)],
                                                [1 - np.exp(nb_logpmf(0, 0.7, 300.0)), nb_sf(49, 0.7, 300.0), nb_sf(999, 0.7, 300.0)]],
                               rtol=3e-3, atol=1e-12)
    big = count_posterior(np.array([2e4]), np.inf, 10**7)
    assert abs(big.expected[0] - (1 + 2e4)) / 2e4 < 1e-4
    assert abs(big.variance[0] - 2e4) / 2e4 < 1e-2


@pytest.mark.parametrize("case", range(4))
def test_matches_brute_force(case):
    """Against the sum over every count 1..N. The counts above 64 sit in geometric bins, whose
    midpoint-rule error (relative, of order rho^2 / 24 with rho <= 1/16, times the small posterior
    mass there) stays below 1e-6."""
    N = 1500
    rng = np.random.default_rng(case)
    m = 1 + case % 3
    rates = rng.uniform(0.05, 0.6, m)
    mu = rng.uniform(0.1, 60.0)
    a = [np.inf, 0.4, 3.0, 25.0][case]
    counts = rng.integers(0, 6, m) * (case % 2)
    post = count_posterior([mu], a, N, rates, counts[None, :], T=[1, 3, 40])
    x, p = brute_force(mu, a, N, rates, counts)
    np.testing.assert_allclose(post.expected[0], p @ x, rtol=1e-6)
    np.testing.assert_allclose(post.p_unique[0], p[0], rtol=1e-6, atol=1e-14)
    np.testing.assert_allclose(post.p_greater[0], [p[x > t].sum() for t in (1, 3, 40)], rtol=1e-6, atol=1e-13)


def test_channel_likelihood_matches_brute_force():
    """c | x ~ Binomial(x, s kappa) (+) Poisson(phi): the randomized-count likelihood."""
    N = 800
    rates, counts = [0.2, 0.1], np.array([2, 1])
    kappa, phi = [0.3, 1e-3], [0.4, 0.05]
    post = count_posterior([5.0], 1.5, N, rates, counts[None, :], kappa=np.array(kappa),
                           false_matches=np.array(phi), T=[1, 10])
    x, p = brute_force(5.0, 1.5, N, rates, counts, kappa, phi)
    np.testing.assert_allclose(post.expected[0], p @ x, rtol=1e-6)
    np.testing.assert_allclose(post.p_greater[0], [p[x > 1].sum(), p[x > 10].sum()], rtol=1e-6)
    # overdispersed chance matches, NegBin(r, phi)
    post = count_posterior([5.0], 1.5, N, rates, counts[None, :], kappa=np.array(kappa),
                           false_matches=np.array(phi), T=[1, 10], false_dispersion=0.7)
    x, p = brute_force(5.0, 1.5, N, rates, counts, kappa, phi, r=0.7)
    np.testing.assert_allclose(post.expected[0], p @ x, rtol=1e-6)
    np.testing.assert_allclose(post.p_greater[0], [p[x > 1].sum(), p[x > 10].sum()], rtol=1e-6)


def test_uninformative_counts_leave_the_prior():
    """With kappa ~ 1e-6 (every randomized value must survive) a count of 0 barely moves the prior:
    the posterior odds change by at most (1 - s kappa)^x, here < 1e-4 relative, where the paper's
    plain count would multiply them by (1 - s)^x."""
    mu, a = np.array([3.0]), 1.0
    prior = count_posterior(mu, a, 30000, T=[1, 10])
    chan = count_posterior(mu, a, 30000, [0.1], np.zeros((1, 1)), kappa=1e-6, false_matches=1e-3, T=[1, 10])
    plain = count_posterior(mu, a, 30000, [0.1], np.zeros((1, 1)), T=[1, 10])
    np.testing.assert_allclose(chan.p_greater, prior.p_greater, rtol=1e-4)
    assert plain.p_greater[0, 0] < prior.p_greater[0, 0] - 0.05


def test_census_pins_the_count_and_duplicates_exclude_uniqueness():
    post = count_posterior([2.0, 2.0], 1.0, 1000, [1.0], np.array([[7], [1]]), T=[1])
    np.testing.assert_allclose(post.expected, [7.0, 1.0])
    np.testing.assert_allclose(post.p_unique, [0.0, 1.0])
    two = count_posterior([0.01], np.inf, 1000, [0.1], np.array([[2]]))
    assert two.p_unique[0] == 0.0 and two.expected[0] >= 2.0


def test_census_above_the_exact_counts_is_a_point_mass():
    """A census (s = 1, raw: kappa = 1, no chance matches) counts every member of the cell, so
    P(c | X = x) = [x = c] and the posterior is the point mass at c whatever the prior: also above
    the counts 1..64 held one by one (a bin centre can miss c) and where a bin of relative width
    1/8192 would span 122 counts (c = 10^6). Exact, no tolerance: E[X] = c, Var[X] = 0,
    P(X = 1) = [c = 1], P(X > T) = [c > T]."""
    c = np.array([1, 7, 64, 65, 110, 500, 4097, 10**6])
    mu = np.array([0.3, 2.0, 80.0, 1.0, 110.0, 5.0, 4000.0, 1e6])  # priors that agree and that do not
    a = np.array([0.5, np.inf, 3.0, 1.0, np.inf, 0.8, 20.0, 2.0])
    T = [1, 64, 109, 110, 500, 10**6]
    post = count_posterior(mu, a, 10**7, [1.0], c[:, None], T=T)
    np.testing.assert_array_equal(post.expected, c)
    np.testing.assert_array_equal(post.variance, 0.0)
    np.testing.assert_array_equal(post.p_unique, (c == 1).astype(float))
    np.testing.assert_array_equal(post.p_greater, (c[:, None] > np.array(T)[None, :]).astype(float))
    for i in range(c.size):
        lo, hi, mass = post.pmf(i)
        assert (lo.tolist(), hi.tolist(), mass.tolist()) == ([c[i]], [c[i]], [1.0])
    # a sample beside the census does not move it; two censuses that disagree are impossible
    both = count_posterior(mu, a, 10**7, [1.0, 0.3], np.column_stack([c, c // 3]), T=[1])
    np.testing.assert_array_equal(both.expected, c)
    np.testing.assert_array_equal(both.variance, 0.0)
    with pytest.raises(ScoringError, match="impossible"):
        count_posterior([5.0], 1.0, 1000, [1.0, 1.0], np.array([[100, 101]]))


def test_nearly_complete_sample_matches_the_exact_posterior():
    """s = 0.95, c = 500: the likelihood is sd = sqrt(c (1 - s) + 1) / s = 5.4 counts wide around
    c / s = 526, the posterior (with the prior 1 + Poisson(400)) sigma = 4.5. The exact reference is
    paper 000 eq. 15-19 enumerated over every count of its window (population_count_posterior,
    mass outside below 1e-12), reweighted from the paper's prior Binomial(x; N, q) to this one.

    Tolerances. Bins are at most a quarter of sigma, rounded up to whole counts: w <= 2. A bin's
    mass is the midpoint rule, off by (w^2 - 1) / 24 f'' per bin; summed, with the renormalization
    doubling it, the total variation is at most 2 (w^2 - 1) / 24 * int |f''| = 4 phi(1) / sigma^2
    (a Gaussian's) = 0.012. P(X > T) adds the linear split of the bin holding T: at most
    max |f'| / 2 = phi(1) / (2 sigma^2). For E[X] and Var[X] the first-order term cancels (it sums
    to the derivative of x^k f at the window's ends, where f vanishes); the next is of order
    ((w^2 - 1) / (24 sigma^2))^2 = 4e-5 relative to sigma and sigma^2: 1e-3 allows 25 times that
    for the skew of the posterior, which is cut off at x = c."""
    N, q, s, c = 20_000, 0.02, 0.95, 500
    paper = population_count_posterior([q], N, [s], np.array([[c]]))
    x, pp = paper.pmf(0)
    mu = (N - 1) * paper.q[0]
    lw = np.log(pp) + nb_logpmf(x - 1.0, np.inf, mu) - stats.binom.logpmf(x, N, paper.q[0])
    f = np.exp(lw - lw.max())
    f /= f.sum()
    E = f @ x
    V = f @ (x - E) ** 2
    sigma = np.sqrt(V)
    T = [510, 520, 530, 540]
    post = count_posterior([mu], np.inf, N, [s], np.array([[c]]), T=T)
    lo, hi, mass = post.pmf(0)
    width = hi - lo + 1
    assert np.all(width[mass > 1e-9] <= np.ceil(sigma / 4)), width[mass > 1e-9]
    cdf = np.concatenate([[0.0], np.cumsum(f)])
    exact = cdf[np.searchsorted(x, hi, side="right")] - cdf[np.searchsorted(x, lo)]
    phi1 = stats.norm.pdf(1.0)
    tv = np.abs(exact - mass).sum() + (1.0 - exact.sum())
    assert tv <= 2 * (2**2 - 1) / 24 * 4 * phi1 / V, tv
    np.testing.assert_allclose(post.p_greater[0], [f[x > t].sum() for t in T],
                               atol=2 * (2**2 - 1) / 24 * 4 * phi1 / V + phi1 / (2 * V))
    assert abs(post.expected[0] - E) <= 1e-3 * sigma
    assert abs(post.variance[0] - V) <= 1e-3 * V


@pytest.mark.parametrize("s, mu, a", [(0.999, 1e6, 1.0), (0.9999, 5.0, 1.0), (0.9999, 1e6, 0.5)])
def test_large_cell_in_a_nearly_complete_sample(s, mu, a):
    """c = 10^6 in a sample at s = 0.999 / 0.9999: the posterior is 10-32 counts wide, 10^-5 of
    its count, far inside a prior window of millions (and pulled 17 counts from c / s = 10^6 +
    100 by a prior that disagrees, mu = 5). The reference enumerates every count from c to c +
    20,000 (the likelihood beyond is below e^-700 of its peak). Tolerances as in
    test_nearly_complete_sample_matches_the_exact_posterior (bins of at most 2 counts below
    sigma / 4 rounded up, the first-order midpoint error cancelling in E and Var). The window is
    found on bins of about two standard deviations, and the posterior then evaluated on at most
    (20 sigma + 4 sigma of margin) / (sigma / 4) ~ 100 bins: the prior's width does not count."""
    N, c = 10**7, 10**6
    x = np.arange(c, c + 20_000, dtype=np.float64)
    lp = nb_logpmf(x - 1.0, a, mu) + stats.binom.logpmf(c, x, s)
    f = np.exp(lp - lp.max())
    f /= f.sum()
    E = f @ x
    V = f @ (x - E) ** 2
    T = [c + 50, c + 100]
    post = count_posterior([mu], a, N, [s], np.array([[c]]), T=T)
    assert abs(post.expected[0] - E) <= 1e-3 * np.sqrt(V)
    assert abs(post.variance[0] - V) <= 1e-3 * V
    phi1 = stats.norm.pdf(1.0)
    np.testing.assert_allclose(post.p_greater[0], [f[x > t].sum() for t in T],
                               atol=2 * (2**2 - 1) / 24 * 4 * phi1 / V + phi1 / (2 * V))
    assert post.edge_mass[0] < 1e-9
    assert post.support_size <= 150


def test_cost_does_not_grow_with_N_for_the_same_evidence():
    """The support is set by the prior mean and the counts, never by N: the same records at
    N = 30,000 and N = 10 million use the same grid."""
    mu = np.array([0.5, 4.0, 30.0])
    a = np.array([0.8, 2.0, 5.0])
    c = np.array([[0], [1], [4]])
    small = count_posterior(mu, a, 30_000, [0.1], c, T=[1])
    large = count_posterior(mu, a, 10_000_000, [0.1], c, T=[1])
    assert small.support_size == large.support_size
    np.testing.assert_allclose(small.expected, large.expected, rtol=1e-12)


def test_prob_greater_from_pmf_and_pmf_bins():
    post = count_posterior([3.0, 50.0], [1.0, 4.0], 5000, T=[2])
    np.testing.assert_allclose(post.prob_greater(2), post.p_greater[:, 0])
    direct = post.prob_greater([0, 7])
    np.testing.assert_allclose(direct[:, 0], 1.0)
    np.testing.assert_allclose(direct[:, 1], nb_sf(6, [1.0, 4.0], [3.0, 50.0]), rtol=1e-5)  # normalization error of the geometric bins above 64 (see above)
    lo, hi, mass = post.pmf(0)
    assert lo[0] == 1 and np.isclose(mass.sum(), 1.0)
    light = count_posterior([3.0], 1.0, 5000, T=[2], keep_pmf=False)
    with pytest.raises(ScoringError, match="keep_pmf"):
        light.prob_greater(5)


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(rates=[1.5], counts=np.zeros((1, 1))), "outside"),
    (dict(rates=[0.0], counts=np.zeros((1, 1))), "outside"),
    (dict(rates=[0.1]), "counts is required"),
    (dict(rates=[0.1], counts=np.array([[-1]])), "whole numbers"),
    (dict(rates=[0.1], counts=np.array([[2, 3]])), "shape"),
    (dict(rates=[0.1], counts=np.array([[99999]])), "exceeds the population"),
])
def test_bad_input(kwargs, fragment):
    with pytest.raises(ScoringError, match=fragment):
        count_posterior([1.0], 1.0, 1000, **kwargs)


def test_bad_prior_input():
    with pytest.raises(ScoringError, match="mu"):
        count_posterior([-1.0], 1.0, 100)
    with pytest.raises(ScoringError, match="dispersion"):
        count_posterior([1.0], 0.0, 100)
    with pytest.raises(ScoringError, match="population size"):
        count_posterior([1.0], 1.0, 0)


# ---- the calibrated prior --------------------------------------------------------------------
def test_fit_count_prior_recovers_simulated_parameters():
    """Simulate Y ~ NegBin(a(mu), mu) with log mu = log(N-1) + b0 + b1 x, thin it at t, fit, and
    compare with the truth within 4 standard errors from the observed information (numerical
    Hessian of the log-likelihood at the estimate)."""
    rng = np.random.default_rng(7)
    n, N, t = 4000, 50_000, 0.2
    x = rng.normal(-10.0, 1.5, n)
    beta, alpha = np.array([0.3, 0.8]), np.array([-0.5, 0.4])
    log_mu = np.log(N - 1) + beta[0] + beta[1] * x
    a = np.exp(alpha[0] + alpha[1] * log_mu)
    y = rng.negative_binomial(a, a / (a + t * np.exp(log_mu)))
    F = np.column_stack([np.ones(n), x])
    prior = fit_count_prior(F, y, t, N, ["intercept", "x"], "test")
    assert prior.converged

    def loglik(theta):
        lm = np.log(N - 1) + F @ theta[:2]
        aa = np.exp(theta[2] + theta[3] * lm)
        return nb_logpmf(y, aa, t * np.exp(lm)).sum()

    est = np.concatenate([prior.beta, prior.alpha])
    h = 1e-4
    H = np.empty((4, 4))
    for i in range(4):
        for j in range(4):
            e_i, e_j = np.eye(4)[i] * h, np.eye(4)[j] * h
            H[i, j] = (loglik(est + e_i + e_j) - loglik(est + e_i - e_j)
                       - loglik(est - e_i + e_j) + loglik(est - e_i - e_j)) / (4 * h * h)
    se = np.sqrt(np.diag(np.linalg.inv(-H)))
    truth = np.concatenate([beta, alpha])
    assert np.all(np.abs(est - truth) <= 4 * se), (est, truth, se)
    assert prior.loglik >= loglik(truth) - 1e-6  # the maximum is at least the truth's


def test_count_prior_is_monotone_in_q():
    prior = CountPrior(("intercept", "log_q"), np.array([0.5, 0.7]), np.array([-1.0, 0.6]), "x", 1, 0.0, True)
    lq = np.linspace(-15, -2, 50)
    F = np.column_stack([np.ones_like(lq), lq])
    for T in (1, 5, 30):
        p = prior.prob_at_least(T, F, 30_000)
        assert np.all(np.diff(p) >= -1e-12)


def test_fit_count_prior_rejects_bad_input():
    F = np.column_stack([np.ones(10), np.arange(10.0)])
    with pytest.raises(ScoringError, match="whole counts"):
        fit_count_prior(F, np.full(10, 0.5), 0.1, 100, ["i", "x"], "t")
    with pytest.raises(ScoringError, match="thinning"):
        fit_count_prior(F, np.zeros(10), 1.5, 100, ["i", "x"], "t")
    with pytest.raises(ScoringError, match="not finite"):
        fit_count_prior(np.column_stack([np.ones(10), np.full(10, np.nan)]), np.zeros(10), 0.1, 100, ["i", "x"], "t")
