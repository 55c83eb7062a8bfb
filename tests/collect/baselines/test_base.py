"""reidrisk.collect.baselines.base: the shared life cycle of a compared method."""

import numpy as np
import pytest

from reidrisk.collect.baselines.base import Method, NotFittedError, product_table
from reidrisk.schema import SchemaError

from .conftest import HAND_SCHEMA


class _Fixed(Method):
    """A method answering every query with one fixed, partly negative table."""

    name = label = "fixed"
    mechanism = None

    def fit(self, reports):
        self.schema_ = HAND_SCHEMA
        return self

    def _table(self, cols):
        return np.array([[-1.0, 1.0], [1.0, 2.0]]) if len(cols) == 2 else np.zeros(2)


def test_product_table_is_the_outer_product():
    t = product_table([np.array([0.25, 0.75]), np.array([0.5, 0.5]), np.array([1.0])], [1, 0])
    np.testing.assert_allclose(t, [[0.25, 0.75], [0.25, 0.75]] * np.array([[0.5], [0.5]]))
    assert t.shape == (2, 2)


def test_table_clips_normalizes_and_falls_back_to_uniform():
    m = _Fixed()
    with pytest.raises(NotFittedError, match="call fit"):
        m.table([0, 1])
    m.fit(None)
    # negative cells clipped: (0, 1, 1, 2) / 4
    np.testing.assert_allclose(m.table(["A", "B"]), [[0.0, 0.25], [0.25, 0.5]])
    np.testing.assert_allclose(m.table([1]), [0.5, 0.5])  # all zero: uniform
    with pytest.raises(SchemaError, match="distinct attributes"):
        m.table([0, 0])


def test_a_method_without_a_client_has_no_protocol():
    with pytest.raises(NotImplementedError, match="no client of its own"):
        _Fixed().protocol(1.0)
