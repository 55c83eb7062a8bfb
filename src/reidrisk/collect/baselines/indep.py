"""Indep baseline: the product of the estimated marginals (no dependence at all)."""

from __future__ import annotations

import numpy as np

from reidrisk.collect.baselines.base import Method, product_table
from reidrisk.collect.pipeline import CollectPipeline, unpack


class Indep(Method):
    """Every c-way table is the product of the c estimated marginals.

    Not in paper 004; it shows how much of a method's accuracy comes from the marginals alone. The
    marginals are the proposed method's (count EM of paper 004 eq. 8-11 on the subset reports, or
    ``estimator``/``stop`` as in ``CollectPipeline``). Learned: ``marginals_`` (g arrays).

    Parameters
    ----------
    estimator : {"em", "norm_sub", "raw"}
        The marginals' estimator, as in ``CollectPipeline`` (default ``"em"``).
    stop : str, tuple, float or None
        EM stopping rule, as in ``CollectPipeline`` (default ``"noise"``).
    """

    name = "indep"
    label = "Indep"
    mechanism = "subset"

    def __init__(self, estimator: str = "em", stop="noise") -> None:
        self.estimator = estimator
        self.stop = stop

    def fit(self, reports) -> Indep:
        """Estimate the g marginals.

        Parameters
        ----------
        reports : RecordReports or CollectedReports
            The randomized subset reports of every person.

        Returns
        -------
        Indep
            This method, fitted (``marginals_``, ``schema_``).
        """
        rr, _ = unpack(reports)
        margs, _ = CollectPipeline(self.estimator, stop=self.stop).estimate_marginals(rr)
        self.marginals_ = tuple(np.asarray(p) for p in margs)
        self.schema_ = rr.schema
        return self

    def _table(self, cols):
        return product_table(self.marginals_, cols)
