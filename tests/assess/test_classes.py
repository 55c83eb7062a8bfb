"""Class sizes with missing values as wildcards, against a brute-force pairwise check."""

from __future__ import annotations

import numpy as np
import pytest

from reidrisk.assess.classes import (
    MISSING,
    AssessError,
    class_distributions,
    match_sums,
    row_keys,
    sample_frequencies,
)


def brute_matches(codes: np.ndarray, missing: str = "wildcard") -> np.ndarray:
    """(n, n) bool: record i matches record j."""
    a, b = codes[:, None, :], codes[None, :, :]
    if missing == "value":
        return (a == b).all(axis=2)
    return ((a == b) | (a == MISSING) | (b == MISSING)).all(axis=2)


def random_codes(rng, n=300, q=4, sizes=(2, 3, 4, 2), p_missing=0.15):
    codes = np.column_stack([rng.integers(0, s, n) for s in sizes[:q]])
    codes[rng.random(codes.shape) < p_missing] = MISSING
    return codes


@pytest.mark.parametrize("missing", ["wildcard", "value"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_match_sums_equal_brute_force(seed, missing):
    rng = np.random.default_rng(seed)
    codes = random_codes(rng)
    values = rng.random((codes.shape[0], 3))
    want = brute_matches(codes, missing).astype(float) @ values
    np.testing.assert_allclose(match_sums(codes, values, missing), want)


def test_frequencies_without_missing_are_class_sizes():
    rng = np.random.default_rng(5)
    codes = random_codes(rng, p_missing=0.0)
    w = rng.uniform(1, 5, codes.shape[0])
    fk, Fk = sample_frequencies(codes, w)
    _, inv, counts = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(fk, counts[inv.ravel()])
    np.testing.assert_allclose(Fk, np.bincount(inv.ravel(), weights=w)[inv.ravel()])


def test_a_missing_value_matches_any_value():
    codes = np.array([[0, 1], [0, MISSING], [1, 1], [0, 0]])
    fk, _ = sample_frequencies(codes)
    # [0, 1] matches itself and [0, ?]; [0, ?] matches [0, 1], itself and [0, 0]
    np.testing.assert_array_equal(fk, [2, 3, 1, 2])
    fk_value, _ = sample_frequencies(codes, missing="value")
    np.testing.assert_array_equal(fk_value, [1, 1, 1, 1])


def test_class_distributions_skip_missing_sensitive_values():
    codes = np.array([[0], [0], [0], [1]])
    sa = np.array([1, 0, MISSING, 1])
    np.testing.assert_array_equal(class_distributions(codes, sa, 2),
                                  [[1, 1], [1, 1], [1, 1], [0, 1]])


def test_row_keys_are_exact_beyond_64_bits():
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 10**6, (500, 5))
    codes[250:] = codes[:250]
    keys = row_keys(codes)
    assert (keys[250:] == keys[:250]).all()
    assert np.unique(keys[:250]).size == np.unique(codes[:250], axis=0).shape[0]


def test_bad_rule_and_shapes_are_refused():
    with pytest.raises(AssessError, match="missing rule"):
        match_sums(np.zeros((2, 1), int), np.ones(2), "drop")
    with pytest.raises(AssessError, match="same rows"):
        match_sums(np.zeros((2, 1), int), np.ones(3))
