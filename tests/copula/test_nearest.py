"""reidrisk.copula.nearest: the nearest correlation matrix."""

from __future__ import annotations

import numpy as np
import pytest

from reidrisk.copula import (
    CopulaError,
    is_correlation_matrix,
    nearest_correlation,
)

from .copula_checks import _random_corr


def test_nearest_correlation_higham_example():
    """Higham (2002), Section 5: A = [[1,1,0],[1,1,1],[0,1,1]] has the nearest correlation matrix
    with off-diagonals 0.7607 (twice) and 0.1573 (to the printed 4 digits)."""
    a = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 1.0, 1.0]])
    rng = np.random.default_rng(3)
    others = [_random_corr(3, rng, spread=0.5) for _ in range(200)]
    for method in ("higham", "dual"):
        x = nearest_correlation(a, projection=method, min_eigenvalue=1e-8)
        assert is_correlation_matrix(x, 1e-9)
        np.testing.assert_allclose([x[0, 1], x[1, 2], x[0, 2]], [0.7607, 0.7607, 0.1573], atol=5e-5)
        # Optimality over the convex set of correlation matrices: <X - A, Y - X> >= 0 for all Y.
        assert min(np.sum((x - a) * (y - x)) for y in others) > -1e-6


def test_nearest_correlation_properties():
    rng = np.random.default_rng(8)
    valid = _random_corr(12, rng)
    assert np.array_equal(nearest_correlation(valid), valid)
    noisy = valid + rng.normal(scale=0.3, size=valid.shape)
    noisy = np.clip(0.5 * (noisy + noisy.T), -1, 1)
    np.fill_diagonal(noisy, 1.0)
    assert not is_correlation_matrix(noisy)
    out = {}
    for method in ("dual", "higham", "clip"):
        x = out[method] = nearest_correlation(noisy, projection=method)
        assert is_correlation_matrix(x, 1e-7)
        np.testing.assert_array_equal(np.diag(x), 1.0)
        np.linalg.cholesky(x)
    # The two exact methods agree; both are at least as near as clip-and-rescale.
    np.testing.assert_allclose(out["dual"], out["higham"], atol=1e-6)
    dist = {k: np.linalg.norm(x - noisy) for k, x in out.items()}
    assert dist["dual"] <= dist["clip"] + 1e-9 and dist["higham"] <= dist["clip"] + 1e-9
    with pytest.raises(CopulaError):
        nearest_correlation(np.ones((2, 3)))

