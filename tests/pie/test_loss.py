"""reidrisk.pie.loss: eq. 22-24 against their closed forms, the domain sums, the channels' p and q."""

import math

import numpy as np
import pytest

from reidrisk.mechanisms import GRR
from reidrisk.pie import loss as u
from reidrisk.pie import utility

THETA = np.array([0.4, 0.25, 0.15, 0.1, 0.05, 0.03, 0.02, 0.0])


def eq22(eps, n, k, theta):
    e = math.exp(eps)
    return (k - 2 + e) / (n * (e - 1) ** 2) + theta * (k - 2) / (n * (e - 1))


def eq23(eps, n, g, theta):
    e = math.exp(eps)
    return (e + g - 1) ** 2 / (n * (e - 1) ** 2 * (g - 1)) + \
        theta * ((g - 1) ** 2 - e) / (n * (e - 1) * (g - 1))


@pytest.mark.parametrize("eps", [0.1, 1.0, 4.0])
def test_closed_forms_22_23_equal_the_general_form(eps):
    for k in (2, 8, 1000):
        assert u.l2_loss_rr(eps, 500, k, THETA) == pytest.approx(eq22(eps, 500, k, THETA),
                                                                rel=1e-12)
    for g in (2, 5, 64):
        assert u.l2_loss_glh(eps, 500, g, THETA) == pytest.approx(eq23(eps, 500, g, THETA),
                                                                 rel=1e-12)


def test_thm48_fixed_lambda_form_and_limit():
    lam, n = 0.05, 1000
    g = np.array([2, 3, 10, 100, 10**4, 10**6], dtype=float)
    eps = np.log1p(lam * g / (1 - lam))  # the budget with lambda_GLH = lam at each g
    for th in (0.0, 0.01, 0.3):
        a = u.l2_loss_glh(eps, n, g, th)
        assert np.allclose(a, u.l2_loss_glh_lambda(lam, n, g, th), rtol=1e-9)  # eq. 51
        assert np.all(np.diff(a) < 0)  # strictly decreasing in g
        limit = u.l2_loss_glh_lambda(lam, n, np.inf, th)
        assert limit == pytest.approx(th * (1 - lam) / (n * lam))  # eq. 24
        assert np.all(a >= limit)


def test_domain_sums():
    k, n = 50, 300
    theta = np.random.default_rng(0).dirichlet(np.ones(k))
    assert u.domain_l2_loss_rr(1.3, n, k) == pytest.approx(u.l2_loss_rr(1.3, n, k, theta).sum())
    assert u.domain_l2_loss_glh(1.3, n, k, 7) == pytest.approx(
        u.l2_loss_glh(1.3, n, 7, theta).sum())


def test_pq_are_the_channels_of_rr_and_glh():
    e = np.array([0.5, 2.0])
    p, q = u.pq_rr(e, 6)
    np.testing.assert_allclose(p / q, np.exp(e))  # the LDP ratio, attained
    np.testing.assert_allclose(p + 5 * q, 1.0)  # a row of the channel
    grr = GRR(2.0, 6).channel()
    assert grr[0, 0] == pytest.approx(p[1]) and grr[1, 0] == pytest.approx(q[1])
    p, q = u.pq_glh(e, 4.0)
    np.testing.assert_allclose(p, np.exp(e) / (3.0 + np.exp(e)))
    np.testing.assert_allclose(q, 0.25)


def test_utility_keeps_the_names():
    for name in u.__all__:
        assert getattr(utility, name) is getattr(u, name)
