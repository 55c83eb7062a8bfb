"""Exact channels of every mechanism: a probability distribution per input, worst-case
log-likelihood ratio *equal* to epsilon, and support probabilities equal to p_support/q_support."""

from __future__ import annotations

import math

import numpy as np
import pytest
from mechanism_checks import NAMES, dense, enumerable
from scipy.special import gammaln, logsumexp

from reidrisk.mechanisms import GLH, GRR, OLH, OUE, ORappor, Subset, make_mechanism
from reidrisk.mechanisms.glh import DEFAULT_PRIME, LinearHashFamily, optimal_g
from reidrisk.mechanisms.subset import subset_size

EPSILONS = (0.1, 1.0, 2.5, 5.0)
SMALL_K = (2, 3, 5, 8)


def _log_ratio_per_output(mech) -> np.ndarray:
    lp = mech.log_prob(mech.enumerate_outputs())
    return lp.max(axis=1) - lp.min(axis=1)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("k", SMALL_K)
@pytest.mark.parametrize("eps", EPSILONS)
def test_exact_channel_is_eps_ldp_with_equality(name, k, eps):
    mech = enumerable(name, eps, k)
    q = mech.channel()
    assert q.shape == (len(mech.enumerate_outputs()), k)
    np.testing.assert_allclose(q.sum(axis=0), 1.0, rtol=1e-12)
    ratios = _log_ratio_per_output(mech)
    assert ratios.max() <= eps * (1 + 1e-12)
    assert np.isclose(ratios.max(), eps, rtol=1e-9, atol=0)
    assert np.isclose(mech.max_log_ratio(), eps, rtol=1e-9, atol=0)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("k", SMALL_K)
@pytest.mark.parametrize("eps", (0.1, 2.5))
def test_support_probabilities_follow_from_channel(name, k, eps):
    """M[v, x] = sum_y Q(y | x) [v in S(y)] equals support_matrix(), p_support, q_support."""
    mech = enumerable(name, eps, k)
    s = dense(mech.support(mech.enumerate_outputs()))
    m = s.T @ mech.channel()
    np.testing.assert_allclose(m, mech.support_matrix(), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(np.diag(m), mech.p_support, rtol=1e-10)
    off = m[~np.eye(k, dtype=bool)]
    np.testing.assert_allclose(off, mech.q_support, rtol=1e-10)


@pytest.mark.parametrize("k", (100, 1024))
@pytest.mark.parametrize("eps", EPSILONS)
def test_subset_closed_form_large_k(k, eps):
    mech = Subset(eps, k)
    h, p = mech.h, mech.p
    assert h == max(math.ceil(k / (1 + math.exp(eps))), 1)
    assert np.isclose(p, math.exp(eps) * h / (k - h + math.exp(eps) * h), rtol=1e-15)

    def log_comb(n, r):
        return gammaln(n + 1) - gammaln(r + 1) - gammaln(n - r + 1)

    # C(k-1, h-1) sets contain x, C(k-1, h) do not: the channel column sums to 1
    total = logsumexp([
        log_comb(k - 1, h - 1) + mech.log_prob_in(),
        log_comb(k - 1, h) + mech.log_prob_out(),
    ])
    assert abs(total) < 1e-10
    assert np.isclose(mech.max_log_ratio(), eps, rtol=1e-9, atol=0)
    # a given other value is in a set containing x w.p. (h-1)/(k-1), else h/(k-1)
    q = p * (h - 1) / (k - 1) + (1 - p) * h / (k - 1)
    assert np.isclose(mech.q_support, q, rtol=1e-12)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("eps", EPSILONS)
def test_large_domain_log_ratio_from_reports(name, eps):
    """At k = 1024 (no enumeration): the log-likelihood ratio of real reports never exceeds eps and
    equals it for reports that support x but not x'."""
    k = 1024
    mech = make_mechanism(name, eps, k)
    reports = mech.perturb(np.arange(200) % k, np.random.default_rng(7))
    lp = mech.log_prob(reports)
    spread = lp.max(axis=1) - lp.min(axis=1)
    assert spread.max() <= eps * (1 + 1e-12)
    assert np.isclose(mech.max_log_ratio(), eps, rtol=1e-9, atol=0)
    s = dense(mech.support(reports))
    mixed = (s.sum(axis=1) > 0) & (s.sum(axis=1) < k)
    assert mixed.any()
    np.testing.assert_allclose(spread[mixed], eps, rtol=1e-9)


@pytest.mark.parametrize("cls", (OUE, ORappor))
@pytest.mark.parametrize("eps", EPSILONS)
def test_unary_closed_form(cls, eps):
    mech = cls(eps, 1024)
    p, q = mech.p_support, mech.q_support
    if cls is OUE:
        assert p == 0.5 and np.isclose(q, 1 / (math.exp(eps) + 1), rtol=1e-15)
    else:
        assert np.isclose(p, math.exp(eps / 2) / (1 + math.exp(eps / 2)), rtol=1e-15)
        assert np.isclose(q, 1 - p, rtol=1e-12)
    assert np.isclose(math.log(p * (1 - q) / (q * (1 - p))), eps, rtol=1e-9)
    # log_prob of one report against its product-of-Bernoullis definition
    y = np.zeros((1, 1024), dtype=np.uint8)
    y[0, [3, 10, 500]] = 1
    lp = mech.log_prob(y)[0]
    direct = 3 * math.log(q) + 1021 * math.log(1 - q)
    assert np.isclose(lp[3], direct - math.log(q) + math.log(p), rtol=1e-12)
    assert np.isclose(lp[4], direct - math.log(1 - q) + math.log(1 - p), rtol=1e-12)
    assert np.isclose(lp[3] - lp[4], eps, rtol=1e-9)


@pytest.mark.parametrize("k,eps", [(2, 1.5), (3, 2.5), (5, 2.5), (8, 2.5), (8, 5.0)])
def test_subset_with_h_one_is_grr(k, eps):
    sub = Subset(eps, k)
    assert sub.h == 1
    grr = GRR(eps, k)
    np.testing.assert_allclose(sub.channel(), grr.channel(), rtol=1e-12)
    assert np.isclose(sub.p_support, grr.p_support) and np.isclose(sub.q_support, grr.q_support)


def test_subset_size_eq3():
    assert [subset_size(e, 8) for e in (0.1, 1.0, 2.5)] == [4, 3, 1]
    assert [subset_size(e, 1024) for e in (0.1, 1.0, 5.0)] == [487, 276, 7]


@pytest.mark.parametrize("prime,g", [(5, 2), (7, 3), (11, 4), (13, 5), (5, 7)])
def test_linear_family_collision_is_exact(prime, g):
    """The closed-form collision probability equals the count over the whole family."""
    fam = LinearHashFamily(prime, prime, g)
    h = fam.hash_all(fam.enumerate())  # (P (P-1), P)
    coll = (h[:, :, None] == h[:, None, :]).mean(axis=0)
    off = coll[~np.eye(prime, dtype=bool)]
    np.testing.assert_allclose(off, float(fam.collision()), rtol=1e-12)


def test_default_linear_family_is_within_1e9_of_universal():
    for eps in (0.1, 1.0, 5.0):
        mech = OLH(eps, 64)
        assert abs(mech.q_support - 1 / mech.g) < 1e-9
        assert mech.params()["prime"] == DEFAULT_PRIME


def test_glh_all_functions_as_tables_is_exactly_universal():
    """The family of all g^k functions collides with probability exactly 1/g: q = 1/g."""
    k, g = 3, 3
    tables = np.array(np.meshgrid(*[np.arange(g)] * k, indexing="ij")).reshape(k, -1).T
    mech = GLH(1.0, k, g=g, tables=tables)
    assert np.isclose(mech.q_support, 1 / g, rtol=1e-12)
    s = dense(mech.support(mech.enumerate_outputs()))
    np.testing.assert_allclose(s.T @ mech.channel(), mech.support_matrix(), rtol=1e-12)
    np.testing.assert_allclose(mech.channel().sum(axis=0), 1.0, rtol=1e-12)
    assert np.isclose(_log_ratio_per_output(mech).max(), 1.0, rtol=1e-9)


@pytest.mark.parametrize("m", (1, 4))
def test_glh_random_tables_support_matrix_is_exact(m):
    mech = GLH.with_random_tables(2.0, 6, m, g=3, rng=5)
    s = dense(mech.support(mech.enumerate_outputs()))
    np.testing.assert_allclose(s.T @ mech.channel(), mech.support_matrix(), rtol=1e-12)
    np.testing.assert_allclose(mech.channel().sum(axis=0), 1.0, rtol=1e-12)
    assert np.isclose(_log_ratio_per_output(mech).max(), 2.0, rtol=1e-9)
    assert mech.params()["m"] == m


def test_olh_range():
    assert [optimal_g(e) for e in (0.1, 1.0, 2.5, 5.0)] == [2, 4, 13, 149]
    assert make_mechanism("olh", 1.0, 10).g == 4
    assert make_mechanism("glh", 1.0, 10, g=7).g == 7
    assert make_mechanism("glh", 1.0, 10).g == 4


def test_params_name_extra_parameters():
    assert make_mechanism("subset", 1.0, 20).params() == {
        "mechanism": "subset", "epsilon": 1.0, "k": 20, "h": 6,
    }
    assert make_mechanism("glh", 1.0, 20, g=3).params()["g"] == 3
    assert make_mechanism("oue", 1.0, 20).params()["mechanism"] == "oue"
