import math

import numpy as np
import pytest
from scipy.stats import binom, chi2

from reidrisk.uniqueness.baselines import (
    BaselineError,
    ProductDomainTooLarge,
    accuracy,
    classify_greater,
    copula_baseline,
    flatten_codes,
    group_sizes,
    idue_q,
    indep_q,
    majority_rule,
    opt_mean,
    opt_median,
    opt_mode,
    product_domain_size,
)


def test_copula_baseline_is_untruncated_binomial():
    N = 30_162
    q = np.array([0.0, 1e-7, 1e-5, 3e-4, 0.01])
    pred = copula_baseline(q, N)
    np.testing.assert_allclose(pred.expected, N * q)
    np.testing.assert_allclose(pred.p_unique, N * q * (1 - q) ** (N - 1), rtol=1e-10)
    np.testing.assert_allclose(pred.prob_greater(10), binom.sf(10, N, q))
    assert pred.prob_greater(np.array([1, 10])).shape == (5, 2)
    assert pred.p_unique[0] == 0.0  # no truncation at X >= 1: q = 0 means nobody
    with pytest.raises(BaselineError):
        copula_baseline([1.5], N)


@pytest.fixture
def toy_population():
    # groups A x1, B x1, C x2, D x4 over two attributes
    rows = [(0, 0), (0, 1), (1, 0), (1, 0), (1, 1), (1, 1), (1, 1), (1, 1)]
    return np.array(rows)


def test_group_sizes_and_constant_predictors(toy_population):
    sizes = group_sizes(toy_population)
    np.testing.assert_array_equal(sizes, [1, 1, 2, 2, 4, 4, 4, 4])
    # per record (paper 000 Table 2), not per group: the per-group mean would be 8 / 4 = 2
    assert opt_mean(sizes) == pytest.approx(22 / 8)
    assert opt_mode(sizes) == 4  # per group the most common size would be 1
    assert opt_median(sizes) == 3.0
    assert opt_mode(np.array([1, 2, 2, 1])) == 1  # ties: the smaller size


def test_majority_rule_and_accuracy(toy_population):
    sizes = group_sizes(toy_population)
    assert majority_rule(sizes, 1) is True  # 6 of 8 records are in groups larger than 1
    assert majority_rule(sizes, 3) is False  # 4 of 8: a tie answers False
    pred = classify_greater(opt_mean(sizes), 2)
    assert accuracy(pred, sizes, 2) == pytest.approx(4 / 8)
    assert accuracy(classify_greater(sizes, 1), sizes, 1) == 1.0
    with pytest.raises(BaselineError):
        opt_mean(np.array([0, 1]))


def test_indep_q_product_of_marginals():
    m = [np.array([0.2, 0.8]), np.array([0.5, 0.3, 0.2])]
    rec = np.array([[0, 0], [1, 2], [-1, 1], [1, -1]])
    np.testing.assert_allclose(indep_q(m, rec), [0.1, 0.16, 0.3, 0.8])
    with pytest.raises(BaselineError, match=r"records\[0, 1\] = 3"):
        indep_q(m, np.array([[0, 3]]))


def test_product_domain_refusal():
    census_like = [50] * 13 + [2] * 10  # far beyond int64 and any bit vector
    assert product_domain_size(census_like) == 50**13 * 2**10
    with pytest.raises(ProductDomainTooLarge, match="max_cells") as info:
        idue_q(np.zeros((5, 23), dtype=int), np.zeros((1, 23), dtype=int), census_like)
    assert info.value.cells == 50**13 * 2**10
    assert isinstance(info.value, ValueError)
    with pytest.raises(ProductDomainTooLarge):
        flatten_codes(np.zeros((1, 2), dtype=int), [3000, 3000])
    codes = np.array([[0, 0], [2, 1], [-1, 0]])
    np.testing.assert_array_equal(flatten_codes(codes, [3, 2]), [0, 5, -1])


@pytest.mark.parametrize("mechanism", ["oue", "rappor"])
@pytest.mark.parametrize("simulate", ["aggregate", "reports"])
def test_idue_is_unbiased_with_the_unary_variance(mechanism, simulate):
    from reidrisk.mechanisms import make_mechanism

    rng = np.random.default_rng(5)
    sizes = [3, 4, 5]
    n = 4000
    probs = rng.dirichlet(np.full(60, 0.7))
    cells = rng.choice(60, size=n, p=probs)
    db = np.column_stack(np.unravel_index(cells, sizes))
    grid = np.column_stack(np.unravel_index(np.arange(60), sizes))
    eps = 2.0
    est = idue_q(db, grid, sizes, mechanism, eps, rng=rng, simulate=simulate)
    assert est.cells == 60 and est.n == n
    mech = make_mechanism(mechanism, eps, 60)
    p, q = mech.p_support, mech.q_support
    n_v = np.bincount(cells, minlength=60)
    # w_v = Binomial(n_v, p) + Binomial(n - n_v, q), independent over cells
    var = (n_v * p * (1 - p) + (n - n_v) * q * (1 - q)) / (n * (p - q)) ** 2
    z = (est.raw - n_v / n) / np.sqrt(var)
    assert np.sum(z**2) <= chi2.ppf(0.999, 60)
    np.testing.assert_array_equal(est.q, np.clip(est.raw, 0, 1))


def test_idue_missing_and_errors():
    db = np.array([[0, 1], [1, 1], [-1, 0]])
    est = idue_q(db, np.array([[0, 1], [-1, 1]]), [2, 2], "oue", 1.0, rng=0)
    assert est.n == 2 and math.isnan(est.raw[1])
    with pytest.raises(BaselineError, match="unary"):
        idue_q(db, db, [2, 2], "grr")
