"""Shared helpers of the estimation tests: mechanisms by registry name, repeated randomization,
small record sets with dependence and missing values."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from reidrisk.mechanisms import MECHANISMS, RecordRandomizer, make_mechanism
from reidrisk.schema import MISSING, Attribute, Schema

ALL_MECHANISMS = sorted(MECHANISMS)
# pure oracles whose reports all support the same number of values: sum(w) = h n exactly
FIXED_SIZE = {"grr", "subset"}


@pytest.fixture(params=ALL_MECHANISMS)
def mech_name(request) -> str:
    return request.param


def mech(name: str, epsilon: float, k: int):
    return make_mechanism(name, epsilon, k)


def exact_codes(theta: np.ndarray, n: int) -> np.ndarray:
    """n codes with counts as close to n * theta as rounding allows (a fixed true dataset)."""
    counts = np.floor(np.asarray(theta) * n).astype(int)
    counts[np.argmax(theta)] += n - counts.sum()
    return np.repeat(np.arange(len(theta)), counts).astype(np.int64)


def repeated_counts(m, x: np.ndarray, reps: int, rng) -> np.ndarray:
    """Support counts (reps, k) of ``reps`` independent randomizations of the same data ``x``.

    All repetitions are randomized in one call on the tiled data and summed per repetition with
    one sparse product (no Python loop over repetitions or records).
    """
    n = x.size
    s = m.support(m.perturb(np.tile(x, reps), rng))
    if sp.issparse(s):
        rows = np.repeat(np.arange(reps), n)
        group = sp.csr_matrix((np.ones(reps * n), (rows, np.arange(reps * n))),
                              shape=(reps, reps * n))
        return np.asarray((group @ s.astype(np.float64)).todense())
    return np.asarray(s, dtype=np.float64).reshape(reps, n, -1).sum(axis=1)


def correlated_records(n: int, sizes, rng, missing: float = 0.3) -> tuple[Schema, np.ndarray]:
    """(schema, codes): n records over attributes of the given domain sizes, dependent through one
    latent normal factor (so pair tables are far from independence), with values missing
    completely at random at rate ``missing``."""
    latent = rng.standard_normal(n)
    cols = []
    for f in sizes:
        v = 0.8 * latent + 0.6 * rng.standard_normal(n)
        cuts = np.quantile(v, np.linspace(0, 1, f + 1)[1:-1] ** 1.3)  # unequal category sizes
        cols.append(np.searchsorted(cuts, v))
    codes = np.column_stack(cols).astype(np.int32)
    codes[rng.random(codes.shape) < missing] = MISSING
    schema = Schema(tuple(
        Attribute(f"a{j}", tuple(f"v{i}" for i in range(f))) for j, f in enumerate(sizes)
    ))
    return schema, codes


def randomize(schema, codes, name: str, epsilon: float, rng):
    return RecordRandomizer(schema, name, epsilon).randomize(codes, rng)
