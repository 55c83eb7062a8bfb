import itertools

import numpy as np
import pytest
from scipy.stats import chi2

from reidrisk.data.synthetic import (
    latent_correlation,
    make_binary_population,
    make_population,
    thresholds,
)
from reidrisk.data.tables import contingency

ALPHA = 1e-3  # family-wise false-alarm rate of each statistical check


def mutual_information(table: np.ndarray) -> float:
    """Plug-in mutual information (nats) of a normalized 2-way table."""
    outer = table.sum(1, keepdims=True) * table.sum(0, keepdims=True)
    nz = table > 0
    return float((table[nz] * np.log(table[nz] / outer[nz])).sum())


def independence_bound(n: int, fj: int, fk: int, tests: int) -> float:
    """Under independence the G statistic 2 n MI_hat is asymptotically chi2((fj-1)(fk-1)); the
    Bonferroni bound over ``tests`` pairs keeps the family-wise false-alarm rate at ALPHA."""
    return chi2.ppf(1 - ALPHA / tests, (fj - 1) * (fk - 1)) / (2 * n)


SIZES = [2, 3, 4, 5]
N = 20_000
PAIRS = list(itertools.combinations(range(len(SIZES)), 2))


def test_dependence_zero_gives_independent_pairs():
    pop = make_population(N, SIZES, dependence=0.0, rng=11)
    np.testing.assert_array_equal(pop.correlation, np.eye(len(SIZES)))
    for j, k in PAIRS:
        mi = mutual_information(pop.table([j, k]))
        assert mi <= independence_bound(N, SIZES[j], SIZES[k], len(PAIRS)), (j, k, mi)


def test_positive_dependence_gives_dependent_pairs():
    pop = make_population(N, SIZES, dependence=0.5, rng=12, marginals="uniform")
    r = pop.correlation
    np.testing.assert_allclose(np.abs(r[np.triu_indices(len(SIZES), 1)]), 0.5)
    for j, k in PAIRS:
        mi = mutual_information(pop.table([j, k]))
        assert mi > independence_bound(N, SIZES[j], SIZES[k], len(PAIRS)), (j, k, mi)


def test_binary_agreement_follows_the_latent_correlation():
    # For median cuts, P(x_j == x_k) = 1/2 + arcsin(rho_jk) / pi (orthant probability).
    g = 6
    pop = make_population(N, [2] * g, dependence=0.7, rng=13, marginals="uniform",
                          structure="random")
    rho = pop.correlation
    assert len({round(abs(v), 6) for v in rho[np.triu_indices(g, 1)]}) > 1  # heterogeneous
    for j, k in itertools.combinations(range(g), 2):
        p = 0.5 + np.arcsin(rho[j, k]) / np.pi
        agree = np.mean(pop.codes[:, j] == pop.codes[:, k])
        assert abs(agree - p) <= 4 * np.sqrt(p * (1 - p) / N), (j, k)


@pytest.mark.parametrize("marginals", ["random", "uniform", "list"])
def test_marginals_match_requested(marginals):
    if marginals == "list":
        marginals = [[0.1, 0.9], [0.2, 0.0, 0.8], [0.25] * 4, [0.5, 0.2, 0.1, 0.1, 0.1]]
    pop = make_population(N, SIZES, dependence=0.4, rng=14, marginals=marginals)
    if not isinstance(marginals, str):
        for p, want in zip(pop.marginals, marginals):
            np.testing.assert_allclose(p, want)
    for j, p in enumerate(pop.marginals):
        counts = np.bincount(pop.codes[:, j], minlength=SIZES[j])
        assert counts[p == 0].sum() == 0
        expected = N * p[p > 0]
        stat = ((counts[p > 0] - expected) ** 2 / expected).sum()
        assert stat <= chi2.ppf(1 - ALPHA / len(SIZES), (p > 0).sum() - 1), (j, stat)
        np.testing.assert_array_equal(pop.table([j]), counts / N)


def test_explicit_correlation_matrix_and_validation():
    r = np.array([[1.0, 0.3, 0.0], [0.3, 1.0, -0.2], [0.0, -0.2, 1.0]])
    pop = make_population(1_000, [2, 2, 3], dependence=r, rng=1)
    np.testing.assert_array_equal(pop.correlation, r)
    with pytest.raises(ValueError, match="positive definite"):
        make_population(10, [2, 2], dependence=np.array([[1.0, 1.0], [1.0, 1.0]]))
    with pytest.raises(ValueError, match=r"dependence must be in \[0, 1\)"):
        make_population(10, [2, 2], dependence=1.0)
    with pytest.raises(ValueError, match="domain size must be an integer >= 2"):
        make_population(10, [2, 1])
    with pytest.raises(ValueError, match=r"marginals\[1\] must be 3 non-negative"):
        make_population(10, [2, 3], marginals=[[0.5, 0.5], [0.5, 0.6, -0.1]])
    with pytest.raises(ValueError, match="structure must be one of"):
        make_population(10, [2, 3], structure="tree")
    with pytest.raises(ValueError, match="n must be a positive integer"):
        make_population(0, [2, 3])


def test_correlation_is_positive_definite_and_reproducible():
    for structure in ("factor", "random"):
        r = latent_correlation(30, 0.9, rng=5, structure=structure)
        np.testing.assert_allclose(np.diag(r), 1.0)
        assert np.linalg.eigvalsh(r).min() >= 0.1 - 1e-9  # >= 1 - d
    a = make_population(500, SIZES, rng=7)
    b = make_population(500, SIZES, rng=7)
    np.testing.assert_array_equal(a.codes, b.codes)
    np.testing.assert_allclose(thresholds(np.array([0.5, 0.5])), [0.0])


def test_binary_population_like_paper_004():
    pop = make_binary_population(50, rng=3)
    assert pop.codes.shape == (10_000, 50) and (pop.sizes == 2).all()
    assert pop.schema.names[:2] == ["A1", "A2"] and pop.codes.dtype == np.int32
    np.testing.assert_array_equal(pop.correlation, np.eye(50))
    # fair coins: the number of ones over all 500,000 cells is Binomial(500,000, 1/2)
    cells = pop.codes.size
    assert abs(pop.codes.sum() - cells / 2) <= 4 * np.sqrt(cells / 4)
    assert contingency(pop.codes, pop.sizes, [0, 1, 2]).shape == (2, 2, 2)
