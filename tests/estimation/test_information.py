"""Entropy, mutual information (paper 004 eq. 14), KL and Jensen-Shannon divergences."""

from __future__ import annotations

import numpy as np
import pytest

from reidrisk.estimation import (
    EstimationError,
    entropy,
    js_divergence,
    kl_divergence,
    mutual_information,
)


def test_entropy_known_values_and_bases():
    assert entropy(np.ones(8)) == pytest.approx(np.log(8))
    assert entropy(np.ones(8), base=2) == pytest.approx(3.0)
    assert entropy([1, 0, 0]) == 0.0
    assert entropy([3, 1]) == pytest.approx(-(0.75 * np.log(0.75) + 0.25 * np.log(0.25)))
    np.testing.assert_allclose(entropy(np.array([[1, 1], [1, 0]]), base=2), [1.0, 0.0])


def test_mutual_information_of_independent_table_is_zero():
    rng = np.random.default_rng(1)
    for _ in range(20):
        px, py = rng.dirichlet(np.ones(4)), rng.dirichlet(np.ones(5))
        assert mutual_information(np.outer(px, py)) == pytest.approx(0.0, abs=1e-12)


def test_mutual_information_of_a_diagonal_table_is_the_entropy():
    p = np.array([0.5, 0.3, 0.2, 0.0])
    t = np.diag(p)
    assert mutual_information(t) == pytest.approx(entropy(p))
    assert mutual_information(t, base=2) == pytest.approx(entropy(p, base=2))


def test_mutual_information_identities_and_batches():
    rng = np.random.default_rng(2)
    t = rng.dirichlet(np.ones(12)).reshape(3, 4)
    t[0, 1] = 0  # zero cells contribute nothing
    mi = mutual_information(t)
    h = entropy(t.sum(1)) + entropy(t.sum(0)) - entropy(t.ravel())
    assert mi == pytest.approx(h, abs=1e-12)
    assert mutual_information(t.T) == pytest.approx(mi)
    assert mutual_information(100 * t) == pytest.approx(mi)  # counts are normalised
    stack = mutual_information(np.stack([t, np.outer(t.sum(1), t.sum(0))]))
    np.testing.assert_allclose(stack, [mi, 0.0], atol=1e-12)


def test_js_divergence_is_symmetric_and_bounded():
    rng = np.random.default_rng(3)
    p, q = rng.dirichlet(np.ones(6), size=50), rng.dirichlet(np.ones(6), size=50)
    d = js_divergence(p, q)
    np.testing.assert_allclose(d, js_divergence(q, p), atol=1e-15)
    assert np.all((d >= 0) & (d <= 1))
    assert js_divergence([1, 0], [0, 1]) == pytest.approx(1.0)  # disjoint supports: the maximum
    assert js_divergence([1, 0], [0, 1], base=np.e) == pytest.approx(np.log(2))
    assert js_divergence(p[0], p[0]) == pytest.approx(0.0, abs=1e-15)
    m = 0.5 * (p[0] + q[0])
    by_kl = 0.5 * (kl_divergence(p[0], m, base=2) + kl_divergence(q[0], m, base=2))
    assert d[0] == pytest.approx(by_kl)


def test_kl_divergence_values():
    assert kl_divergence([0.5, 0.5], [0.25, 0.75]) == pytest.approx(
        0.5 * np.log(2) + 0.5 * np.log(0.5 / 0.75))
    assert kl_divergence([0.5, 0.5], [1.0, 0.0]) == np.inf
    assert kl_divergence([1.0, 0.0], [0.5, 0.5], base=2) == pytest.approx(1.0)


@pytest.mark.parametrize("bad, match", [
    (([0.5, -0.1, 0.6],), "negative"),
    (([0.0, 0.0],), "zero total"),
    (([0.5, np.nan],), "non-finite"),
])
def test_entropy_rejects_bad_distributions(bad, match):
    with pytest.raises(EstimationError, match=match):
        entropy(*bad)


def test_divergences_reject_shape_mismatch_and_bad_base():
    with pytest.raises(EstimationError, match="same shape"):
        js_divergence([0.5, 0.5], [0.2, 0.3, 0.5])
    with pytest.raises(EstimationError, match="same shape"):
        kl_divergence([0.5, 0.5], [[0.5, 0.5]])
    with pytest.raises(EstimationError, match="base"):
        entropy([0.5, 0.5], base=1)
    with pytest.raises(EstimationError, match="dimension"):
        mutual_information([0.5, 0.5])


def test_js_of_a_subnormal_cell_against_zero_is_tiny():
    """(p + q) / 2 underflows for p = 5e-324, q = 0; the divergence must stay ~0, not 1 bit."""
    from reidrisk.estimation.information import js_divergence

    p = np.array([1.0 - 5e-324, 5e-324])
    q = np.array([1.0, 0.0])
    assert js_divergence(p, q) < 1e-12
