"""Shared inputs of the copula tests (marginals, random correlation matrices, exact tables)."""

from __future__ import annotations

import numpy as np
from scipy import stats

from reidrisk.copula import PairBatch

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


def _exact_setup(rng, sizes, spread=2.0):
    margs = [rng.dirichlet(np.full(f, 3.0)) for f in sizes]
    corr = _random_corr(len(sizes), rng, spread)
    iu = np.triu_indices(len(sizes), 1)
    pairs = np.column_stack(iu)
    tables = PairBatch(margs, pairs).tables(corr[iu])
    return margs, corr, {(int(a), int(b)): t for (a, b), t in zip(pairs, tables)}

