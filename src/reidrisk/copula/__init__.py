"""Gaussian copula over categorical marginals (paper 004 Section 4.2.3-4.2.5, eq. 15-24 and
Algorithm 2; docs/design/core.md#gaussian-copula).

Fit per-pair correlations from estimated marginals and pair tables (all pairs in one batch),
assemble Sigma, project it to the nearest correlation matrix when needed, then generate records
or compute cell probabilities and contingency tables.
"""

from reidrisk.copula.bvn import bivariate_table, bvn_cdf, bvn_pdf
from reidrisk.copula.marginals import CopulaError, check_marginal, thresholds
from reidrisk.copula.matrix import CorrelationFit, fit_correlation, fit_correlation_matrix
from reidrisk.copula.model import GaussianCopula, MonteCarloProbability
from reidrisk.copula.mvn import RectangleProbability, rectangle_probability
from reidrisk.copula.nearest import is_correlation_matrix, nearest_correlation
from reidrisk.copula.pairs import (
    RHO_MAX,
    PairBatch,
    PairFit,
    PairFits,
    fit_pair_correlation,
    fit_pair_correlations,
)

__all__ = [
    "CopulaError", "CorrelationFit", "GaussianCopula", "MonteCarloProbability", "PairBatch",
    "PairFit", "PairFits", "RHO_MAX", "RectangleProbability", "bivariate_table", "bvn_cdf",
    "bvn_pdf", "check_marginal", "fit_correlation", "fit_correlation_matrix",
    "fit_pair_correlation", "fit_pair_correlations", "is_correlation_matrix",
    "nearest_correlation", "rectangle_probability", "thresholds",
]
