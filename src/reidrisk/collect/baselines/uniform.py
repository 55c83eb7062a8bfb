"""Uniform baseline: no information at all."""

from __future__ import annotations

import numpy as np

from reidrisk.collect.baselines.base import Method
from reidrisk.collect.pipeline import unpack


class Uniform(Method):
    """Every c-way table is uniform over its cells. Not in paper 004: the floor any method must
    beat to have learned something from the reports. ``fit`` only reads the schema."""

    name = "uniform"
    label = "Uniform"
    mechanism = "subset"

    def fit(self, reports) -> Uniform:
        rr, _ = unpack(reports)
        self.schema_ = rr.schema
        return self

    def fit_truth(self, schema, codes) -> Uniform:
        self.schema_ = schema
        return self

    def _table(self, cols):
        shape = tuple(int(self.schema_.sizes[j]) for j in cols)
        return np.full(shape, 1.0 / np.prod(shape))
