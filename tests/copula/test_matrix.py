"""reidrisk.copula.matrix: the correlation matrix from the pair fits."""

from __future__ import annotations

import numpy as np
import pytest

from reidrisk.copula import (
    CopulaError,
    bivariate_table,
    fit_correlation,
    fit_correlation_matrix,
    is_correlation_matrix,
    nearest_correlation,
)

from .copula_checks import MARGINALS, _exact_setup


@pytest.mark.parametrize("method", ["table", "mi"])
def test_fit_correlation_matrix_recovers_sigma(method):
    rng = np.random.default_rng(21)
    margs, corr, tables = _exact_setup(rng, [2, 3, 9, 2, 5, 4])
    # Keys in either order are accepted (the table is transposed).
    tables[(3, 1)] = tables.pop((1, 3)).T
    fit = fit_correlation(margs, tables, copula_fit=method)
    assert not fit.projected
    np.testing.assert_allclose(fit.correlation, corr, atol=1e-6)
    np.testing.assert_allclose(fit_correlation_matrix(margs, tables, method), corr, atol=1e-6)


def test_fit_correlation_projects_when_not_positive_definite():
    margs = [MARGINALS["binary_even"]] * 3
    target = np.array([[1.0, 0.9, -0.9], [0.9, 1.0, 0.9], [-0.9, 0.9, 1.0]])
    tables = {(a, b): bivariate_table(target[a, b], margs[a], margs[b])
              for a, b in [(0, 1), (0, 2), (1, 2)]}
    fit = fit_correlation(margs, tables)
    assert fit.projected
    np.testing.assert_allclose(fit.raw, target, atol=1e-8)
    assert is_correlation_matrix(fit.correlation, 1e-7)
    np.testing.assert_allclose(fit.correlation, nearest_correlation(target), atol=1e-12)


def test_empirical_bayes_shrinkage():
    rng = np.random.default_rng(4)
    margs, corr, exact = _exact_setup(rng, [2, 3, 2, 4, 2])
    n = 400
    tables = {k: rng.multinomial(n, t.ravel()).reshape(t.shape) / n for k, t in exact.items()}
    plain = fit_correlation(margs, tables, n_pairs=n)
    shrunk = fit_correlation(margs, tables, n_pairs=n, shrink="eb")
    rho, se = plain.pair_fits.rho, plain.pair_fits.se
    s = max(np.mean(rho**2) - np.mean(se**2), 0.0)
    assert shrunk.signal_variance == pytest.approx(s, rel=1e-12)
    pairs = plain.pair_fits.pairs
    np.testing.assert_allclose(shrunk.raw[pairs[:, 0], pairs[:, 1]], rho * s / (s + se**2),
                               rtol=1e-12)
    with pytest.raises(CopulaError, match="n_pairs"):
        fit_correlation(margs, tables, shrink="eb")


def test_fit_correlation_validation():
    rng = np.random.default_rng(1)
    margs, _, tables = _exact_setup(rng, [2, 3, 4])
    partial = dict(tables)
    del partial[(0, 2)]
    with pytest.raises(CopulaError, match=r"\(0, 2\) is missing"):
        fit_correlation(margs, partial)
    fit = fit_correlation(margs, partial, allow_missing_pairs=True)
    assert fit.correlation[0, 2] == 0.0
    wrong = dict(tables)
    wrong[(1, 2)] = np.ones((4, 3)) / 12
    with pytest.raises(CopulaError, match=r"pair table \(1, 2\) has shape \(4, 3\)"):
        fit_correlation(margs, wrong)
    both = dict(tables)
    both[(2, 1)] = tables[(1, 2)].T
    with pytest.raises(CopulaError, match="given twice"):
        fit_correlation(margs, both)
    with pytest.raises(CopulaError, match="attribute 1 sums to"):
        fit_correlation([margs[0], margs[1] * 2, margs[2]], tables)

