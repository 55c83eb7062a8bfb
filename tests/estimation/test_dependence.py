"""Batched Wald statistics of pair independence against a one-pair Kronecker form."""

from __future__ import annotations

import numpy as np

from reidrisk.estimation.dependence import pair_statistics


def _random_pair(rng, f1, f2):
    M1 = np.full((f1, f1), 0.1) + np.diag(rng.uniform(0.3, 0.6, f1))
    M2 = np.full((f2, f2), 0.15) + np.diag(rng.uniform(0.3, 0.6, f2))
    W = rng.integers(5, 60, (f1, f2)).astype(np.int64)
    X1, X2 = rng.standard_normal((f1, f1)), rng.standard_normal((f2, f2))
    A1, A2 = X1 @ X1.T / f1, X2 @ X2.T / f2
    return W, int(W.sum()), (np.linalg.inv(M1), np.linalg.inv(M2)), (A1, A2)


def _kronecker_stat(W, n, inv, second):
    """The same statistic written through vec and Kronecker products, one pair at a time:
    tr(K1^+ D K2^+ D^T) = vec(D)^T (K1 (x) K2)^+ vec(D) (row-major vec, K symmetric)."""
    T = inv[0] @ (W / n) @ inv[1].T
    f1, f2 = T.shape
    L1 = np.eye(f1) - np.outer(T.sum(axis=1), np.ones(f1))
    L2 = np.eye(f2) - np.outer(np.ones(f2), T.sum(axis=0))
    D = L1 @ T @ L2
    K = np.kron(L1 @ second[0] @ L1.T, L2.T @ second[1] @ L2)
    d = D.reshape(-1)
    return n * d @ np.linalg.pinv(K, rcond=1e-12, hermitian=True) @ d


def test_batched_statistics_equal_one_pair_kronecker_form():
    """Pairs of three shapes, interleaved: each batched statistic equals its one-pair Kronecker
    form to 1e-9 relative (two pseudo-inverses of the factors against one of their Kronecker
    product: rounding of well-conditioned 2-5 dimensional factors), and df = (f1 - 1)(f2 - 1)."""
    rng = np.random.default_rng(12)
    shapes = [(2, 3), (4, 4), (3, 2)] * 4
    pairs = [_random_pair(rng, *s) for s in shapes]
    out = pair_statistics([p[0] for p in pairs], [p[1] for p in pairs],
                          [p[2] for p in pairs], [p[3] for p in pairs])
    for i, (W, n, inv, second) in enumerate(pairs):
        ref = _kronecker_stat(W, n, inv, second)
        assert abs(out.stat[i] - ref) <= 1e-9 * abs(ref), (i, out.stat[i], ref)
        assert out.df[i] == (W.shape[0] - 1) * (W.shape[1] - 1)
        assert out.departure[i].shape == W.shape
