"""reidrisk.uniqueness: how many people share a record's values, and is it unique? (paper 000)

* ``floors``: the existence floor on the model probability q (eq. 9-14).
* ``posterior``: the distribution of the population count X given q and the record's matches in
  sampled databases (eq. 15-19), and the plain match counts c_i.
* ``estimators``: the standard sample-based population-uniqueness estimators (Pitman, Zayatz,
  SNB, Dankar et al.'s decision rule).
* ``baselines``: the comparison methods of the paper's evaluation (Copula, OptMean, OptMode,
  IDUE_OUE / IDUE_RAPPOR, independence).
* ``model``: ``UniquenessModel`` fitted on sampled (optionally randomized) databases; scores any
  records: E[X], P(X = 1), P(X > T). ``preset="paper"`` is eq. 9-19 as printed.
* ``scorer``: the default posterior engine (a fitted count prior and a count likelihood that
  models the randomization).
* ``decisions``: "count > T" decided from the posterior, and the decisions' evaluation
  (balanced accuracy, AUC, reliability).
* ``report``: the demo report's uniqueness section.

Design: docs/design/uniqueness.md (equations, corrections, choices).
"""

from typing import TYPE_CHECKING

from reidrisk._lazy import lazy_exports

if TYPE_CHECKING:  # the names below load on first use (reidrisk._lazy)
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
    from reidrisk.uniqueness.decisions import (
        Classification,
        Reliability,
        classification,
        decide,
        reliability,
        roc_auc,
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
    from reidrisk.uniqueness.model import (
        Database,
        PopulationEstimate,
        UniquenessError,
        UniquenessModel,
        UniquenessScores,
        count_matches,
        estimate_population,
        neighbor_counts,
    )
    from reidrisk.uniqueness.posterior import (
        PosteriorError,
        PosteriorResult,
        match_count_matrix,
        match_counts,
        population_count_posterior,
    )
    from reidrisk.uniqueness.scorer import (
        CountPosterior,
        CountPrior,
        ScoringError,
        count_posterior,
        fit_count_prior,
    )

__all__ = [
    "Classification", "CountPosterior", "CountPrior", "Database", "PopulationEstimate",
    "Reliability", "ScoringError", "UniquenessError", "UniquenessModel", "UniquenessScores",
    "classification", "count_matches", "count_posterior", "decide", "estimate_population",
    "fit_count_prior", "neighbor_counts", "reliability", "roc_auc",
    "CountPrediction", "FloorError", "PosteriorError", "PosteriorResult", "ProductDomainEstimate",
    "ProductDomainTooLarge", "SampleFrequencies", "UniquesEstimate", "accuracy",
    "classify_greater", "copula_baseline", "dankar_uniques", "estimate_population_uniques",
    "flatten_codes", "floor_bound", "floor_q", "group_sizes", "idue_q", "indep_q",
    "majority_rule", "match_count_matrix", "match_counts", "opt_mean", "opt_median", "opt_mode",
    "pitman_uniques", "population_count_posterior", "product_domain_size", "snb_uniques",
    "zayatz_uniques",
]

__getattr__, __dir__ = lazy_exports(__name__)
