"""TruePairsCopula reference: the copula fitted on the *true* marginals and pair tables."""

from __future__ import annotations

import numpy as np

from reidrisk._compat import renamed_attribute, renamed_keywords
from reidrisk.collect.baselines.base import Method
from reidrisk.collect.pipeline import fit_copula
from reidrisk.data.tables import contingency


class TruePairsCopula(Method):
    """A reference, not a method: the copula fitted to the true marginals and pair tables.

    It reads the true data: the Gaussian copula of paper 004 eq. 15-24 fitted to the exact
    marginals and pair tables of the data, with no LDP noise. Its error is the model's own
    floor: what a perfect estimation of every pair would still miss because the population is not
    a Gaussian copula. Marginals and pairs are counted over the rows that have them (available
    cases), with their row counts as sample sizes; no shrinkage. Fit with ``fit_truth``.
    Learned: ``model_`` (the copula), ``schema_``.

    Parameters
    ----------
    copula_fit : {"table", "mi"}
        How a pair correlation is matched to its table (formerly ``method``), as in
        ``CollectPipeline``.
    """

    name = "true_pairs_copula"
    label = "TruePairsCopula"
    mechanism = None
    needs_truth = True

    @renamed_keywords(method="copula_fit")
    def __init__(self, copula_fit: str = "table") -> None:
        self.copula_fit = copula_fit

    method = renamed_attribute("copula_fit", "method")

    def fit(self, reports):
        """Not available: this reference reads the true data (use ``fit_truth``).

        Parameters
        ----------
        reports : RecordReports or CollectedReports
            Ignored.

        Raises
        ------
        NotImplementedError
            Always.
        """
        raise NotImplementedError("TruePairsCopula needs the true data: use fit_truth(schema, codes)")

    def fit_truth(self, schema, codes) -> TruePairsCopula:
        """Fit the copula to the exact marginals and pair tables of the true data.

        Parameters
        ----------
        schema : Schema
            The attributes of ``codes``.
        codes : array_like (n, g)
            The true records as integer codes, ``MISSING`` where a value is missing (checked by
            ``schema.validate_codes``).

        Returns
        -------
        TruePairsCopula
            This reference, fitted (``model_``, ``schema_``).
        """
        codes = schema.validate_codes(codes)
        sizes = schema.sizes
        g = len(schema)
        margs = [contingency(codes, sizes, [j]) for j in range(g)]
        tables, n = {}, {}
        present = codes >= 0
        for j in range(g):
            for k in range(j + 1, g):
                both = int((present[:, j] & present[:, k]).sum())
                if both:
                    tables[(j, k)] = contingency(codes, sizes, [j, k])
                    n[(j, k)] = float(both)
        self.model_ = fit_copula(margs, tables, n, shrink=None, method=self.copula_fit)
        self.schema_ = schema
        return self

    def _table(self, cols):
        return np.asarray(self.model_.contingency_table(list(cols)))
