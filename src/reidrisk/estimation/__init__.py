"""Server-side estimation from LDP reports (paper 004 Section 4.2).

Design: docs/design/core.md#frequency-estimation, docs/design/core.md#em-engine,
docs/design/core.md#pair-estimation.

* ``em``: the one EM engine (iteration, SQUAREM acceleration, stopping rules) every EM runs on.
* ``frequency``: single-attribute distributions -- inversion, norm-sub, count EM, exact report EM.
* ``pairs``: every pair's counts as one Gram matrix, pair EM / inversion through the pair channel.
* ``information``: entropy, mutual information (eq. 14), KL and Jensen-Shannon divergences.
"""

from reidrisk.estimation.em import EMResult, EstimationError
from reidrisk.estimation.frequency import (
    FrequencyEstimate,
    default_shrink,
    em_counts,
    em_reports,
    estimate_marginal,
    estimate_marginals,
    inversion_noise,
    invert,
    james_stein_noise,
    marginals_from_counts,
    norm_sub,
    null_departure,
    shrink_toward_uniform,
    shrink_weight,
    variance,
)
from reidrisk.estimation.information import (
    entropy,
    js_divergence,
    kl_divergence,
    mutual_information,
)
from reidrisk.estimation.pairs import (
    PairCounts,
    PairEstimates,
    em_tables,
    estimate_pairs,
    invert_tables,
    pair_counts,
)

__all__ = [
    "EMResult", "EstimationError", "FrequencyEstimate", "PairCounts", "PairEstimates",
    "default_shrink", "em_counts", "em_reports", "em_tables", "entropy", "estimate_marginal",
    "estimate_marginals", "estimate_pairs", "inversion_noise", "invert", "invert_tables",
    "james_stein_noise", "js_divergence", "kl_divergence", "marginals_from_counts",
    "mutual_information", "norm_sub", "null_departure", "pair_counts", "shrink_toward_uniform",
    "shrink_weight", "variance",
]
