"""Batched Wald statistics of pair independence against a one-pair Kronecker form."""

from __future__ import annotations

import numpy as np

from reidrisk.estimation.dependence import pair_statistics
from reidrisk.mechanisms import GLH, GRR, OUE


def _random_pair(rng, f1, f2):
    """A pair as the pipeline has it: two mechanisms (GRR, OUE and table-hash GLH, whose support
    matrix is not of the form ``a I + q 1 1^T``, so both ways of inverting a channel are used),
    counts, the inverses of their support matrices (for the reference form), and second moments
    ``E[a a^T]`` of random per-report inversion vectors (positive definite)."""
    def mechanism(f):
        kind = rng.integers(3)
        eps = rng.uniform(0.5, 2.0)
        if kind == 0:
            return GRR(eps, f)
        if kind == 1:
            return OUE(eps, f)
        return GLH.with_random_tables(eps, f, m=4, g=2, rng=int(rng.integers(1 << 30)))

    def second(f):
        X = rng.standard_normal((50, f)) + 1.0 / f
        return X.T @ X / 50

    W = rng.integers(5, 60, (f1, f2)).astype(np.int64)
    mechs = (mechanism(f1), mechanism(f2))
    inv = tuple(np.linalg.inv(m.support_matrix()) for m in mechs)
    return W, int(W.sum()), mechs, inv, (second(f1), second(f2))


def _kronecker_stat(W, n, inv, second):
    """The same statistic written through vec and Kronecker products, one pair at a time:
    tr(K1^+ D K2^+ D^T) = vec(D)^T (K1 (x) K2)^+ vec(D) (row-major vec, K symmetric). Also
    returns cond(K1) cond(K2), the condition number of the Kronecker product, the departure D and
    the noise tr(K1) tr(K2) = tr(K1 (x) K2)."""
    T = inv[0] @ (W / n) @ inv[1].T
    f1, f2 = T.shape
    L1 = np.eye(f1) - np.outer(T.sum(axis=1), np.ones(f1))
    L2 = np.eye(f2) - np.outer(np.ones(f2), T.sum(axis=0))
    D = L1 @ T @ L2
    K1, K2 = L1 @ second[0] @ L1.T, L2.T @ second[1] @ L2
    d = D.reshape(-1)
    stat = n * d @ np.linalg.pinv(np.kron(K1, K2), rcond=1e-12, hermitian=True) @ d
    return stat, np.linalg.cond(K1) * np.linalg.cond(K2), D, np.trace(np.kron(K1, K2))


def test_batched_statistics_equal_one_pair_kronecker_form():
    """Pairs of three shapes, interleaved: each batched statistic equals its one-pair Kronecker
    form to the rounding of a pseudo-inverse, relative 64 eps times the condition number of
    K1 (x) K2 (the two forms invert different matrices, so their rounding differs by that much;
    here 1e-13 to 6e-7), and df = (f1 - 1)(f2 - 1). The departure and the noise are the same
    products in both forms (no inversion), so they agree to a few ulps of their entries (1e-12
    absolute: the entries are O(1), products of three or four f <= 4 matrices)."""
    rng = np.random.default_rng(12)
    shapes = [(2, 3), (4, 4), (3, 2)] * 4
    pairs = [_random_pair(rng, *s) for s in shapes]
    out = pair_statistics([p[0] for p in pairs], [p[1] for p in pairs],
                          [p[2] for p in pairs], [p[4] for p in pairs])
    eps = np.finfo(np.float64).eps
    for i, (W, n, _, inv, second) in enumerate(pairs):
        ref, cond, D, noise = _kronecker_stat(W, n, inv, second)
        assert abs(out.stat[i] - ref) <= 64 * eps * cond * abs(ref), (i, out.stat[i], ref)
        assert out.df[i] == (W.shape[0] - 1) * (W.shape[1] - 1)
        assert out.departure[i].shape == W.shape
        np.testing.assert_allclose(out.departure[i], D, rtol=0, atol=1e-12)
        assert abs(out.noise[i] - noise) <= 1e-12 * abs(noise), (i, out.noise[i], noise)
