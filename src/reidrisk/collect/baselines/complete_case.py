"""Complete-case estimation of a c-way table through the product channel (the existing methods of
paper 004 Section 5.4: "such methods only use data samples that have all these attribute values").

For a query over c attributes only the reports having all c are used (about ``n (1 - m)^c`` of them
at a missing rate m). The c randomizations are independent given the true values, so the channel
of the c-way table is the Kronecker product of the c single channels; the table is estimated on
that product channel without forming it (``reidrisk.collect._tensor``):

* ``"norm_sub"``: the unbiased inversion ``W x_1 M_1^{-1} ... x_c M_c^{-1} / n`` (per-axis inverses,
  tensor mode products), then the Euclidean projection onto the probability simplex;
* ``"em"``: the count-based EM of paper 004 eq. 8-11 on the product channel;
* ``"exact_em"``: the report-level EM with each report's exact likelihood (needed for mechanisms
  without support sets, e.g. the Laplace reports of PDE/ETE).

A query with no complete report returns the uniform table.

Stopping. On a c-way table the noisy counts put the maximum-likelihood estimate on the boundary of
the simplex, and iterating to convergence fits the noise; a few steps leave it far from the
maximum. The shared "noise" rule (``reidrisk.estimation.frequency``: stop when one step's deviance
gain is statistically invisible) stops in between, so it is the default; ``max_iter`` caps the
steps (docs/design/collect.md#baselines).
"""

from __future__ import annotations

import numpy as np

from reidrisk.collect import _tensor
from reidrisk.collect.baselines.base import Method
from reidrisk.collect.pipeline import unpack

ESTIMATORS = ("norm_sub", "em", "exact_em")


class CompleteCase(Method):
    """A c-way table from the reports complete on the c attributes (module doc).

    Learned: ``schema_``, ``reports_``, ``present_`` (n, g).

    Parameters
    ----------
    estimator : {"norm_sub", "em", "exact_em"}, optional
        How the c-way table is estimated (module doc); ``None`` (default): the class's own
        (``"norm_sub"`` here).
    stop : str, tuple, float or None
        EM stopping rule (``reidrisk.collect._tensor.check_stop``; default ``"noise"``).
    max_iter : int
        EM iteration cap.

    Raises
    ------
    ValueError
        For an unknown ``estimator``.
    """

    name = "complete_case"
    label = "complete case"
    estimator = "norm_sub"

    def __init__(self, estimator: str | None = None, stop="noise",
                 max_iter: int = _tensor.DEFAULT_MAX_ITER) -> None:
        est = estimator or type(self).estimator
        if est not in ESTIMATORS:
            raise ValueError(f"estimator must be one of {ESTIMATORS}, got {est!r}")
        self.estimator = est
        self.stop = _tensor.check_stop(stop)
        self.max_iter = int(max_iter)

    def fit(self, reports) -> CompleteCase:
        """Keep the reports and which attributes each one has (the tables are estimated per query).

        Parameters
        ----------
        reports : RecordReports or CollectedReports
            The randomized reports of every person.

        Returns
        -------
        CompleteCase
            This method, fitted (``schema_``, ``reports_``, ``present_``).
        """
        rr, _ = unpack(reports)
        self.schema_ = rr.schema
        self.reports_ = rr
        self.present_ = rr.present()
        self._supports: dict[int, object] = {}
        return self

    def _support(self, j: int):
        if j not in self._supports:
            m, r = self.reports_.mechanisms[j], self.reports_.reports[j]
            self._supports[j] = m.support(r)
        return self._supports[j]

    def complete_rows(self, cols: list[int]) -> np.ndarray:
        """The reports having every attribute of ``cols``.

        Parameters
        ----------
        cols : list of int
            Attribute indices.

        Returns
        -------
        numpy.ndarray of bool (n,)
            True for the reports complete on ``cols``.
        """
        return np.asarray(self.present_[:, cols].all(axis=1))

    def _table(self, cols: list[int]) -> np.ndarray:
        rows = self.complete_rows(cols)
        n_cc = int(rows.sum())
        shape = tuple(int(self.schema_.sizes[j]) for j in cols)
        if n_cc == 0:
            return np.full(shape, 1.0 / np.prod(shape))
        mechs = [self.reports_.mechanisms[j] for j in cols]
        if self.estimator == "exact_em":
            reps = [np.asarray(self.reports_.reports[j])[rows] for j in cols]
            lps = [m.log_prob(r) for m, r in zip(mechs, reps)]
            discrete = all(np.issubdtype(np.asarray(r).dtype, np.integer) for r in reps)
            return _tensor.exact_em(lps, stop=self.stop, group=discrete,
                                    max_iter=self.max_iter).estimate
        W = _tensor.support_tensor([self._support(j) for j in cols], rows)
        mats = [m.support_matrix() for m in mechs]
        if self.estimator == "em":
            return _tensor.em(W, n_cc, mats, stop=self.stop, max_iter=self.max_iter).estimate
        return _tensor.project_simplex(_tensor.invert(W, n_cc, mats))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(estimator={self.estimator!r})"
