"""Many pair correlations fitted in one batch equal the same pairs fitted one at a time."""

from __future__ import annotations

import numpy as np
import pytest

from reidrisk.copula.bvn import bivariate_table
from reidrisk.copula.pairs import RHO_MAX, fit_pair_correlation, fit_pair_correlations


def _problem(rng, g=9, noise=0.15):
    """g marginals of 2..6 categories and every pair's table: a copula table at a random rho,
    mixed with noise (so the fits need different numbers of Newton steps), and a few tables with
    an empty corner cell that only |rho| -> RHO_MAX explains (those end by bisection)."""
    sizes = rng.integers(2, 7, g)
    margs = [rng.dirichlet(np.full(f, 2.0)) for f in sizes]
    pairs, tables = [], []
    for j in range(g):
        for k in range(j + 1, g):
            rho = rng.uniform(-0.95, 0.95)
            t = bivariate_table(rho, margs[j], margs[k])
            t = (1 - noise) * t + noise * rng.dirichlet(np.ones(t.size)).reshape(t.shape)
            if (j + k) % 7 == 0:
                t = bivariate_table(0.999 * np.sign(rho), margs[j], margs[k])
            pairs.append((j, k))
            tables.append(t / t.sum())
    return margs, np.array(pairs), tables


@pytest.mark.parametrize("copula_fit", ["table", "mi"])
def test_batch_equals_one_pair_at_a_time(copula_fit):
    """Each pair's iteration reads only its own cells, and converged pairs leave the batch, so the
    batch must reproduce every one-pair fit; 1e-12 allows for nothing but rounding (the solver's
    own tolerance is 1e-10, so a batch that let pairs influence each other's stop would differ by
    about that much)."""
    rng = np.random.default_rng(2024)
    margs, pairs, tables = _problem(rng)
    fits = fit_pair_correlations(margs, pairs, tables, copula_fit, n=500)
    assert fits.converged.all()
    assert np.any(np.abs(fits.rho) > 0.99)  # some pairs ended near the bound (bisection)
    for p, (j, k) in enumerate(pairs):
        one = fit_pair_correlation(tables[p], margs[j], margs[k], copula_fit, n=500)
        assert abs(one.rho - fits.rho[p]) <= 1e-12, (j, k)
        assert abs(one.se - fits.se[p]) <= 1e-9 * max(1.0, one.se), (j, k)
        assert one.converged == bool(fits.converged[p])
    assert np.all(np.abs(fits.rho) <= RHO_MAX)


def test_fixed_rho_cdf_matches_owens_t_form():
    """The bracketing scan's Gauss-Legendre form of Phi2 (one rho for all corners) agrees with the
    Owen's-T form to rounding: 1e-15 absolute is a few ulps of a probability (Genz 2004 reports
    double precision for these rules up to |rho| = 0.925)."""
    from scipy.special import ndtr

    from reidrisk.copula.bvn import FIXED_RHO_MAX, _fixed_rho_cdf, bvn_cdf

    rng = np.random.default_rng(8)
    h, k = rng.uniform(-6, 6, 20_000), rng.uniform(-6, 6, 20_000)
    terms = (ndtr(h), ndtr(k), 0.5 * (h * h + k * k), h * k)
    for rho in (-FIXED_RHO_MAX, -0.8, -0.5, -0.2, 0.0, 0.1, 0.3, 0.31, 0.75, 0.76, FIXED_RHO_MAX):
        exact = bvn_cdf(h, k, rho)
        np.testing.assert_allclose(_fixed_rho_cdf(*terms, rho), exact, rtol=0, atol=1e-15)


@pytest.mark.parametrize("copula_fit", ["table", "mi"])
def test_boundary_pairs_fit_without_floating_point_warnings(copula_fit):
    """Pairs fitted at |rho| = RHO_MAX have cells whose probability rounds to 0 while its slope in
    rho does not; their standard error must come out of finite arithmetic, with no overflow and no
    0 * inf (NaN), so any floating-point warning fails this test. The error is then a positive
    finite number for every pair (the observed or expected information is finite and positive)."""
    import warnings

    rng = np.random.default_rng(2024)
    margs, pairs, tables = _problem(rng)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fits = fit_pair_correlations(margs, pairs, tables, copula_fit, n=500)
    at_bound = np.abs(fits.rho) >= RHO_MAX
    assert at_bound.any()  # the case that used to warn is exercised
    assert np.all(np.isfinite(fits.se)) and np.all(fits.se > 0)
    assert np.all(np.isfinite(fits.kl))


@pytest.mark.parametrize("copula_fit", ["table", "mi"])
def test_fits_in_several_batches_equal_one_batch(monkeypatch, copula_fit):
    """``fit_pair_correlations`` maps ``fit_pair_batch`` over batches of pairs; a pair's fit reads
    only its own cells, so batches of 5 (36 pairs: 8 batches, each with its own bracketing scan
    and its own active set) must reproduce the fit of all pairs in one batch bit for bit, but for
    the iteration count, which is the largest over the batches."""
    from reidrisk import batches

    rng = np.random.default_rng(2024)
    margs, pairs, tables = _problem(rng)
    whole = fit_pair_correlations(margs, pairs, tables, copula_fit, n=500)
    monkeypatch.setattr(batches, "BATCH_PAIRS", 5)
    seen = []
    monkeypatch.setattr(batches, "local_map",
                        lambda fn, shared, bs: seen.append(len(bs)) or [fn(shared, b) for b in bs])
    split = fit_pair_correlations(margs, pairs, tables, copula_fit, n=500)
    assert seen == [8]
    np.testing.assert_array_equal(split.pairs, whole.pairs)
    for name in ("rho", "se", "kl", "mutual_information", "converged"):
        np.testing.assert_array_equal(getattr(split, name), getattr(whole, name), err_msg=name)
    assert split.iterations == whole.iterations
