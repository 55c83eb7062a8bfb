"""reidrisk.copula.bvn: the bivariate normal CDF and the pair tables it gives (paper 004 eq. 15-17)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import ndtr

from reidrisk.copula import (
    CopulaError,
    bivariate_table,
    bvn_cdf,
    thresholds,
)

from .copula_checks import MARGINALS, SHAPES


def _quad_bvn(h: float, k: float, rho: float) -> float:
    """Reference Phi2 by 1-D quadrature: int_{-inf}^h phi(x) Phi((k - rho x) / s) dx."""
    s = np.sqrt(1 - rho * rho)
    return integrate.quad(
        lambda x: stats.norm.pdf(x) * ndtr((k - rho * x) / s), -np.inf, h,
        epsabs=1e-14, epsrel=1e-12,
    )[0]


def test_bvn_cdf_matches_quadrature_and_closed_forms():
    rng = np.random.default_rng(11)
    h = rng.normal(scale=2, size=60)
    k = rng.normal(scale=2, size=60)
    rho = rng.uniform(-0.999, 0.999, size=60)
    h[:8] = 0.0
    k[4:12] = 0.0
    got = bvn_cdf(h, k, rho)
    want = np.array([_quad_bvn(a, b, r) for a, b, r in zip(h, k, rho)])
    np.testing.assert_allclose(got, want, atol=1e-12, rtol=0)
    # Phi2(0, 0; rho) = 1/4 + arcsin(rho) / (2 pi).
    r = np.linspace(-0.99, 0.99, 7)
    np.testing.assert_allclose(bvn_cdf(0, 0, r), 0.25 + np.arcsin(r) / (2 * np.pi), atol=1e-15)
    # Infinite limits and degenerate correlations.
    assert bvn_cdf(np.inf, 0.3, 0.5) == pytest.approx(ndtr(0.3), abs=1e-16)
    assert bvn_cdf(-np.inf, 0.3, 0.5) == 0.0
    assert bvn_cdf(np.inf, np.inf, -0.2) == 1.0
    assert bvn_cdf(0.2, 0.7, 1.0) == pytest.approx(ndtr(0.2), abs=1e-16)
    assert bvn_cdf(0.2, 0.7, -1.0) == pytest.approx(ndtr(0.2) - ndtr(-0.7), abs=1e-16)
    with pytest.raises(CopulaError):
        bvn_cdf(0.0, 0.0, 1.5)


def test_bvn_cdf_matches_scipy():
    pts = np.array([[0.3, -0.4], [1.2, 2.0], [-1.0, -2.0], [-2.5, 0.1], [0.0, 0.0]])
    for rho in (-0.7, 0.1, 0.85):
        cov = [[1, rho], [rho, 1]]
        want = stats.multivariate_normal.cdf(pts, cov=cov, abseps=1e-11, releps=0, rng=0)
        np.testing.assert_allclose(bvn_cdf(pts[:, 0], pts[:, 1], rho), want, atol=1e-7, rtol=0)


@pytest.mark.parametrize("rho", [-0.8, 0.0, 0.6])
@pytest.mark.parametrize("names", SHAPES)
def test_bivariate_table(rho, names):
    pa, pb = MARGINALS[names[0]], MARGINALS[names[1]]
    table = bivariate_table(rho, pa, pb)
    assert table.shape == (pa.size, pb.size)
    assert np.all(table >= 0)
    assert table.sum() == pytest.approx(1.0, abs=1e-14)
    np.testing.assert_allclose(table.sum(axis=1), pa, atol=1e-14)
    np.testing.assert_allclose(table.sum(axis=0), pb, atol=1e-14)
    # Rectangle probabilities from scipy's bivariate normal CDF.
    ta, tb = thresholds(pa), thresholds(pb)
    big = 40.0
    ca, cb = np.clip(ta, -big, big), np.clip(tb, -big, big)
    grid = np.array([[a, b] for a in ca for b in cb])
    cdf = stats.multivariate_normal.cdf(
        grid, cov=[[1, rho], [rho, 1]], abseps=1e-11, releps=0, rng=0
    ).reshape(ca.size, cb.size)
    want = np.diff(np.diff(cdf, axis=0), axis=1)
    np.testing.assert_allclose(table, want, atol=1e-7, rtol=0)


def test_independence_table_is_outer_product():
    pa, pb = MARGINALS["five"], MARGINALS["nine"]
    np.testing.assert_allclose(bivariate_table(0.0, pa, pb), np.outer(pa, pb), atol=1e-15)

