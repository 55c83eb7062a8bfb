"""Tests of reidrisk.copula (paper 004 eq. 15-24, Algorithm 2;
docs/design/core.md#gaussian-copula)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import ndtr

from reidrisk.copula import (
    CopulaError,
    GaussianCopula,
    PairBatch,
    bivariate_table,
    bvn_cdf,
    fit_correlation,
    fit_correlation_matrix,
    fit_pair_correlation,
    fit_pair_correlations,
    is_correlation_matrix,
    nearest_correlation,
    rectangle_probability,
    thresholds,
)

MARGINALS = {
    "binary_skewed": np.array([0.15, 0.85]),
    "binary_even": np.array([0.5, 0.5]),
    "three": np.array([0.2, 0.5, 0.3]),
    "five": np.array([0.05, 0.25, 0.3, 0.25, 0.15]),
    "nine": np.array([0.02, 0.08, 0.15, 0.2, 0.1, 0.05, 0.2, 0.12, 0.08]),
}
SHAPES = [
    ("binary_skewed", "binary_even"),
    ("binary_skewed", "nine"),
    ("nine", "five"),
    ("three", "nine"),
]


def _quad_bvn(h: float, k: float, rho: float) -> float:
    """Reference Phi2 by 1-D quadrature: int_{-inf}^h phi(x) Phi((k - rho x) / s) dx."""
    s = np.sqrt(1 - rho * rho)
    return integrate.quad(
        lambda x: stats.norm.pdf(x) * ndtr((k - rho * x) / s), -np.inf, h,
        epsabs=1e-14, epsrel=1e-12,
    )[0]


def _random_corr(g: int, rng: np.random.Generator, spread: float = 2.0) -> np.ndarray:
    b = rng.normal(size=(g, int(spread * g) + 2))
    return np.corrcoef(b)


def _pooled_chisquare(observed: np.ndarray, expected_prob: np.ndarray) -> float:
    """Chi-square p-value, cells with expected count < 5 pooled into one."""
    observed = observed.ravel().astype(float)
    expected = expected_prob.ravel() * observed.sum()
    small = expected < 5
    obs = np.append(observed[~small], observed[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    keep = exp > 0
    obs, exp = obs[keep], exp[keep]
    return stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue


# ---- bivariate normal CDF and tables --------------------------------------------------------


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


def test_thresholds():
    t = thresholds([0.0, 0.3, 0.7, 0.0])
    assert t[0] == -np.inf and t[-1] == np.inf
    assert np.all(np.isfinite(t[1:-1])) and np.all(np.diff(t) >= 0)
    np.testing.assert_allclose(ndtr(t[1:-1]), [0.0, 0.3, 1.0], atol=1e-15)


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


# ---- pair correlation fit -------------------------------------------------------------------


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


# ---- nearest correlation matrix -------------------------------------------------------------


def test_nearest_correlation_higham_example():
    """Higham (2002), Section 5: A = [[1,1,0],[1,1,1],[0,1,1]] has the nearest correlation matrix
    with off-diagonals 0.7607 (twice) and 0.1573 (to the printed 4 digits)."""
    a = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 1.0, 1.0]])
    rng = np.random.default_rng(3)
    others = [_random_corr(3, rng, spread=0.5) for _ in range(200)]
    for method in ("higham", "dual"):
        x = nearest_correlation(a, method=method, min_eigenvalue=1e-8)
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
        x = out[method] = nearest_correlation(noisy, method=method)
        assert is_correlation_matrix(x, 1e-7)
        np.testing.assert_array_equal(np.diag(x), 1.0)
        np.linalg.cholesky(x)
    # The two exact methods agree; both are at least as near as clip-and-rescale.
    np.testing.assert_allclose(out["dual"], out["higham"], atol=1e-6)
    dist = {k: np.linalg.norm(x - noisy) for k, x in out.items()}
    assert dist["dual"] <= dist["clip"] + 1e-9 and dist["higham"] <= dist["clip"] + 1e-9
    with pytest.raises(CopulaError):
        nearest_correlation(np.ones((2, 3)))


# ---- correlation matrix ---------------------------------------------------------------------


def _exact_setup(rng, sizes, spread=2.0):
    margs = [rng.dirichlet(np.full(f, 3.0)) for f in sizes]
    corr = _random_corr(len(sizes), rng, spread)
    iu = np.triu_indices(len(sizes), 1)
    pairs = np.column_stack(iu)
    tables = PairBatch(margs, pairs).tables(corr[iu])
    return margs, corr, {(int(a), int(b)): t for (a, b), t in zip(pairs, tables)}


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


# ---- the model ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model():
    margs, _, tables = _exact_setup(np.random.default_rng(77), [2, 3, 4, 2, 5, 3])
    return GaussianCopula().fit(margs, tables)


@pytest.fixture(scope="module")
def big_sample(model):
    return model.sample(200_000, rng=1)


def test_fit_sets_attributes(model):
    assert len(model.marginals_) == 6 and model.correlation_.shape == (6, 6)
    assert [t.size for t in model.thresholds_] == [3, 4, 5, 3, 6, 4]
    assert model.fit_result_ is not None and not model.fit_result_.projected
    # the fixture fitted exact tables of a known copula: the fit recovers it
    margs, corr, tables = _exact_setup(np.random.default_rng(77), [2, 3, 4, 2, 5, 3])
    for fitted, p in zip(model.marginals_, margs):
        np.testing.assert_allclose(fitted, p, rtol=1e-12)
    np.testing.assert_allclose(model.correlation_, corr, atol=1e-6)
    # thresholds: Phi^-1 of the cumulative marginal, computed here with scipy's norm.ppf
    for t, p in zip(model.thresholds_, margs):
        assert t[0] == -np.inf and t[-1] == np.inf
        np.testing.assert_allclose(t[1:-1], stats.norm.ppf(np.cumsum(p)[:-1]), rtol=1e-9)
    # and gives back the pair tables it was fitted on
    for (a, b), table in tables.items():
        np.testing.assert_allclose(model.contingency_table([a, b]), table, atol=1e-6)


def test_sample_shape_and_marginals(model, big_sample):
    assert big_sample.shape == (200_000, 6) and big_sample.dtype == np.int32
    for j, p in enumerate(model.marginals_):
        counts = np.bincount(big_sample[:, j], minlength=p.size)
        assert _pooled_chisquare(counts, p) > 1e-3
    sub = model.sample(10, rng=0, cols=[4, 1])
    assert sub.shape == (10, 2)


@pytest.mark.parametrize("cols", [(0, 1), (2, 4), (1, 5), (0, 2, 4), (1, 3, 5), (2, 4, 5)])
def test_sampling_matches_exact_tables(model, big_sample, cols):
    exact = model.contingency_table(list(cols), rtol=1e-5)
    assert exact.sum() == pytest.approx(1.0, abs=1e-12)
    keys = np.ravel_multi_index(big_sample[:, list(cols)].T, exact.shape)
    observed = np.bincount(keys, minlength=exact.size)
    assert _pooled_chisquare(observed, exact) > 1e-3


def test_sampled_contingency_table(model):
    table = model.contingency_table([0, 2], n_samples=50_000, rng=3)
    exact = model.contingency_table([0, 2])
    assert table.shape == exact.shape and table.sum() == pytest.approx(1.0)
    assert _pooled_chisquare(np.round(table * 50_000), exact) > 1e-3


def test_two_way_table_equals_bivariate_table(model):
    a, b = 1, 4
    np.testing.assert_allclose(
        model.contingency_table([a, b]),
        bivariate_table(model.correlation_[a, b], model.marginals_[a], model.marginals_[b]),
        atol=1e-15,
    )


def test_cell_probability_closed_forms_and_missing(model):
    cells1 = np.array([[0], [2], [1]])
    np.testing.assert_allclose(model.cell_probability(cells1, [2]), model.marginals_[2][[0, 2, 1]])
    table = model.contingency_table([0, 4])
    cells2 = np.array([[0, 3], [1, 0], [1, 4]])
    np.testing.assert_allclose(
        model.cell_probability(cells2, [0, 4]), table[cells2[:, 0], cells2[:, 1]], atol=1e-15
    )
    # A MISSING code leaves that attribute free: P(v0, *, v4) = P(v0, v4).
    three = model.cell_probability(np.array([[0, -1, 3], [1, -1, 0]]), [0, 2, 4])
    np.testing.assert_allclose(three, table[[0, 1], [3, 0]], rtol=1e-3)
    with pytest.raises(CopulaError, match="attribute 2 with 4 categories"):
        model.cell_probability(np.array([[0, 4]]), [0, 2])
    with pytest.raises(CopulaError, match=r"shape \(m, 2\)"):
        model.cell_probability(np.array([[0, 1, 1]]), [0, 2])


def test_rectangle_probability_three_and_four_dims():
    corr = np.array([[1, .5, .3, .2], [.5, 1, -.4, .1], [.3, -.4, 1, .25], [.2, .1, .25, 1]])
    lo = np.array([[-0.5, -1.0, 0.2, -0.3], [0.3, -0.2, -1.5, -1.0], [-2.0, -2.0, -2.0, -2.0]])
    up = lo + np.array([[1.0, 0.8, 1.5, 2.0], [0.4, 2.0, 1.0, 3.0], [0.3, 0.5, 0.7, 4.0]])
    for c in (3, 4):
        got = rectangle_probability(lo[:, :c], up[:, :c], corr[:c, :c], rtol=1e-5)
        want = np.array([
            stats.multivariate_normal.cdf(up[i, :c], cov=corr[:c, :c], lower_limit=lo[i, :c],
                                          abseps=1e-9, releps=0, rng=0)
            for i in range(3)
        ])
        # QMC error within 4 reported se, plus the reference's own tolerance.
        assert np.all(np.abs(got.prob - want) <= 4 * got.se + 1e-8)
    # Independent third variable: the probability factorizes into exact 2-D and 1-D pieces.
    block = np.eye(3)
    block[0, 1] = block[1, 0] = 0.6
    got = rectangle_probability(lo[:, :3], up[:, :3], block, rtol=1e-6)
    r2 = rectangle_probability(lo[:, :2], up[:, :2], block[:2, :2]).prob
    r1 = ndtr(up[:, 2]) - ndtr(lo[:, 2])
    np.testing.assert_allclose(got.prob, r2 * r1, rtol=1e-5)


def test_monte_carlo_cell_probability_within_4_se(model):
    cols = [0, 2, 4, 5]
    cells = model.sample(12, rng=99, cols=cols)
    exact = model.cell_probability(cells, cols, rtol=1e-5)
    for qmc in (False, True):
        mc = model.cell_probability_mc(cells, cols, n_samples=100_000, rng=7, qmc=qmc)
        assert mc.prob.shape == (12,)
        assert np.all(np.abs(mc.prob - exact) <= 4 * mc.se + 1e-12)
    with pytest.raises(CopulaError, match="MISSING"):
        model.cell_probability_mc(np.array([[0, -1, 0, 0]]), cols)


def test_round_trip_json(model):
    payload = json.loads(json.dumps(model.to_dict()))
    back = GaussianCopula.from_dict(payload)
    np.testing.assert_array_equal(back.correlation_, model.correlation_)
    for p, q in zip(back.marginals_, model.marginals_):
        np.testing.assert_array_equal(p, q)
    np.testing.assert_array_equal(back.sample(1000, rng=5), model.sample(1000, rng=5))
    assert back.copula_fit == model.copula_fit
    with pytest.raises(CopulaError, match="version"):
        GaussianCopula.from_dict({**payload, "version": 99})
    with pytest.raises(CopulaError, match="format"):
        GaussianCopula.from_dict({"format": "something else"})


def test_model_validation():
    with pytest.raises(CopulaError, match="not fitted"):
        GaussianCopula().sample(3)
    with pytest.raises(CopulaError, match="copula_fit"):
        GaussianCopula(copula_fit="spearman")
    with pytest.raises(CopulaError, match="positive-definite"):
        GaussianCopula.from_parameters([[0.5, 0.5]] * 2, [[1.0, 1.2], [1.2, 1.0]])
