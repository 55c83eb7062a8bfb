"""Uniform baseline: no information at all."""

from __future__ import annotations

import numpy as np

from reidrisk.collect.baselines.base import Method
from reidrisk.collect.pipeline import unpack


class Uniform(Method):
    """Every c-way table is uniform over its cells.

    Not in paper 004: the floor any method must beat to have learned something from the reports.
    ``fit`` only reads the schema.
    """

    name = "uniform"
    label = "Uniform"
    mechanism = "subset"

    def fit(self, reports) -> Uniform:
        """Read the schema of the reports (nothing else is learned).

        Parameters
        ----------
        reports : RecordReports or CollectedReports
            The randomized reports (only their schema is used).

        Returns
        -------
        Uniform
            This method, fitted (``schema_``).
        """
        rr, _ = unpack(reports)
        self.schema_ = rr.schema
        return self

    def fit_truth(self, schema, codes) -> Uniform:
        """Read the schema (the true data are not used).

        Parameters
        ----------
        schema : Schema
            The attributes.
        codes : numpy.ndarray (n, g)
            The true records (ignored).

        Returns
        -------
        Uniform
            This method, fitted (``schema_``).
        """
        self.schema_ = schema
        return self

    def _table(self, cols):
        shape = tuple(int(self.schema_.sizes[j]) for j in cols)
        return np.full(shape, 1.0 / np.prod(shape))
