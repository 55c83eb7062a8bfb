"""reidrisk.copula.pairs: one correlation per pair table (paper 004 Section 4.2.3)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from reidrisk.copula import (
    CopulaError,
    PairBatch,
    bivariate_table,
    fit_pair_correlation,
    fit_pair_correlations,
)

from .copula_checks import MARGINALS, SHAPES


@pytest.mark.parametrize("method", ["table", "mi"])
@pytest.mark.parametrize("rho", [-0.8, -0.3, 0.0, 0.4, 0.9])
@pytest.mark.parametrize("names", SHAPES)
def test_recovers_rho_from_exact_table(method, rho, names):
    pa, pb = MARGINALS[names[0]], MARGINALS[names[1]]
    fit = fit_pair_correlation(bivariate_table(rho, pa, pb), pa, pb, copula_fit=method)
    assert fit.converged
    assert fit.rho == pytest.approx(rho, abs=1e-4)
    assert fit.kl == pytest.approx(0.0, abs=1e-10)
    assert np.isnan(fit.se)


def test_mi_sign_matters_with_asymmetric_marginals():
    """With skewed marginals MI(rho) != MI(-rho); the MI fit still lands on the table's rho."""
    pa, pb = MARGINALS["binary_skewed"], MARGINALS["five"]
    batch = PairBatch([pa, pb], [[0, 1]])
    tables = batch.tables(np.array([-0.5]))[0], batch.tables(np.array([0.5]))[0]

    def mi(t):
        return float(np.sum(t * np.log(t / np.outer(t.sum(1), t.sum(0)))))

    assert abs(mi(tables[0]) - mi(tables[1])) > 1e-4
    assert fit_pair_correlation(tables[0], pa, pb, copula_fit="mi").rho == pytest.approx(-0.5, abs=1e-6)


def test_batched_fit_matches_single_fits_and_mixed_shapes():
    rng = np.random.default_rng(5)
    margs = [MARGINALS[k] for k in ("binary_skewed", "nine", "three", "five", "binary_even")]
    pairs = np.array([[0, 1], [1, 2], [2, 3], [0, 4], [3, 1], [4, 2]])
    rho = rng.uniform(-0.9, 0.9, size=len(pairs))
    tables = PairBatch(margs, pairs).tables(rho)
    fits = fit_pair_correlations(margs, pairs, tables, copula_fit="table")
    np.testing.assert_allclose(fits.rho, rho, atol=1e-8)
    single = [fit_pair_correlation(t, margs[a], margs[b]).rho for (a, b), t in zip(pairs, tables)]
    np.testing.assert_allclose(fits.rho, single, atol=1e-10)


def test_standard_error_matches_tetrachoric_formula_at_zero():
    """At rho = 0 the 2x2 Fisher information per record is phi(t_a)^2 phi(t_b)^2 / (pa qa pb qb)
    (every cell moves by +-phi phi), so se = sqrt(pa qa pb qb) / (phi(t_a) phi(t_b) sqrt(n))."""
    pa, pb = np.array([0.3, 0.7]), np.array([0.6, 0.4])
    n = 5000
    fit = fit_pair_correlation(np.outer(pa, pb), pa, pb, n=n)
    phi_a = stats.norm.pdf(stats.norm.ppf(pa[0]))
    phi_b = stats.norm.pdf(stats.norm.ppf(pb[0]))
    want = np.sqrt(pa[0] * pa[1] * pb[0] * pb[1]) / (phi_a * phi_b * np.sqrt(n))
    assert fit.se == pytest.approx(want, rel=1e-9)


def test_standard_error_matches_sampling_spread():
    """Multinomial tables of n records: the spread of rho_hat over R replicates matches the
    reported se. With R = 400 the sample sd has relative sd 1/sqrt(2 (R - 1)) = 3.5%; 4 of those
    plus 5% for the asymptotic approximation at n = 3000 bound the ratio."""
    rng = np.random.default_rng(2024)
    pa, pb = MARGINALS["three"], MARGINALS["five"]
    truth = bivariate_table(0.5, pa, pb)
    n, reps = 3000, 400
    counts = rng.multinomial(n, truth.ravel(), size=reps).reshape(reps, *truth.shape)
    fits = fit_pair_correlations([pa, pb], np.tile([0, 1], (reps, 1)), list(counts / n), n=n)
    assert fits.converged.all()
    ratio = fits.rho.std(ddof=1) / np.mean(fits.se)
    assert abs(ratio - 1) < 4 / np.sqrt(2 * (reps - 1)) + 0.05
    # rho_hat is consistent: mean within 4 se / sqrt(R) (+ O(1/n) bias) of the truth.
    assert abs(fits.rho.mean() - 0.5) < 4 * np.mean(fits.se) / np.sqrt(reps) + 1.0 / n


def test_pair_fit_validation_names_the_problem():
    pa, pb = MARGINALS["three"], MARGINALS["five"]
    with pytest.raises(CopulaError, match=r"pair table \(0, 1\) has shape \(5, 3\)"):
        fit_pair_correlation(np.ones((5, 3)) / 15, pa, pb)
    with pytest.raises(CopulaError, match="sums to 15"):
        fit_pair_correlation(np.ones((3, 5)), pa, pb)
    with pytest.raises(CopulaError, match="negative"):
        bad = np.outer(pa, pb)
        bad[0, 1] += bad[0, 0] + 0.01
        bad[0, 0] = -0.01
        fit_pair_correlation(bad, pa, pb)
    with pytest.raises(CopulaError, match="marginal of attribute j sums to 1.1"):
        fit_pair_correlation(np.outer(pa, pb), [0.5, 0.6], pb)
    with pytest.raises(CopulaError, match="copula_fit"):
        fit_pair_correlation(np.outer(pa, pb), pa, pb, copula_fit="kendall")


def test_degenerate_marginal_gives_zero_rho():
    pa, pb = np.array([1.0, 0.0]), MARGINALS["three"]
    fit = fit_pair_correlation(np.outer(pa, pb), pa, pb, n=100)
    assert fit.rho == 0.0 and fit.converged

