import itertools

import numpy as np
import pytest

from reidrisk.data.tables import contingency
from reidrisk.schema import MISSING


def brute_force(codes, sizes, cols):
    table = np.zeros([sizes[c] for c in cols])
    for row in codes:
        values = [row[c] for c in cols]
        if all(v != MISSING for v in values):
            table[tuple(values)] += 1
    return table


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(5)
    sizes = [2, 3, 4, 5]
    codes = np.column_stack([rng.integers(0, f, 400) for f in sizes])
    codes[rng.random(codes.shape) < 0.3] = MISSING
    return codes, sizes


@pytest.mark.parametrize("c", [1, 2, 3, 4])
def test_contingency_equals_brute_force(data, c):
    codes, sizes = data
    for cols in itertools.permutations(range(4), c):
        want = brute_force(codes, sizes, cols)
        got = contingency(codes, sizes, cols, normalize=False)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_allclose(contingency(codes, sizes, cols), want / want.sum())


def test_contingency_errors(data):
    codes, sizes = data
    with pytest.raises(ValueError, match="repeats a column"):
        contingency(codes, sizes, [1, 1])
    with pytest.raises(ValueError, match="out of range"):
        contingency(codes, sizes, [4])
    with pytest.raises(ValueError, match="one domain size per column"):
        contingency(codes, sizes[:3], [0])
    with pytest.raises(ValueError, match="code 7 is outside the domain 0..1"):
        contingency(np.array([[7, 0]]), [2, 2], [0, 1])
    empty = np.full((3, 2), MISSING)
    with pytest.raises(ValueError, match="no row has all of the columns"):
        contingency(empty, [2, 2], [0, 1])
    np.testing.assert_array_equal(contingency(empty, [2, 2], [0, 1], normalize=False), 0)
