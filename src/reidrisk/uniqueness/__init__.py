"""reidrisk.uniqueness: how many people share a record's values, and is it unique? (paper 000)

* ``floors``: the existence floor on the model probability q (eq. 9-14).
* ``posterior``: the distribution of the population count X given q and the record's matches in
  sampled databases (eq. 15-19), and the plain match counts c_i.
* ``estimators``: the standard sample-based population-uniqueness estimators (Pitman, Zayatz,
  SNB, Dankar et al.'s decision rule).
* ``baselines``: the comparison methods of the paper's evaluation (Copula, OptMean, OptMode,
  IDUE_OUE / IDUE_RAPPOR, independence).

See spec/uniqueness.md.
"""

from reidrisk.uniqueness.baselines import (
    CountPrediction,
    ProductDomainEstimate,
    ProductDomainTooLarge,
    accuracy,
    classify_greater,
    copula_baseline,
    flatten_codes,
    group_sizes,
    idue_q,
    indep_q,
    majority_rule,
    opt_mean,
    opt_median,
    opt_mode,
    product_domain_size,
)
from reidrisk.uniqueness.estimators import (
    SampleFrequencies,
    UniquesEstimate,
    dankar_uniques,
    estimate_population_uniques,
    pitman_uniques,
    snb_uniques,
    zayatz_uniques,
)
from reidrisk.uniqueness.floors import FloorError, floor_bound, floor_q
from reidrisk.uniqueness.posterior import (
    PosteriorError,
    PosteriorResult,
    match_count_matrix,
    match_counts,
    population_count_posterior,
)

__all__ = [
    "CountPrediction", "FloorError", "PosteriorError", "PosteriorResult", "ProductDomainEstimate",
    "ProductDomainTooLarge", "SampleFrequencies", "UniquesEstimate", "accuracy",
    "classify_greater", "copula_baseline", "dankar_uniques", "estimate_population_uniques",
    "flatten_codes", "floor_bound", "floor_q", "group_sizes", "idue_q", "indep_q",
    "majority_rule", "match_count_matrix", "match_counts", "opt_mean", "opt_median", "opt_mode",
    "pitman_uniques", "population_count_posterior", "product_domain_size", "snb_uniques",
    "zayatz_uniques",
]
