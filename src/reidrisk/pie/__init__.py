"""reidrisk.pie: information-theoretic re-identification risk in the local model (paper 002).

* ``reidrisk.pie.bounds``  -- PIE bounds alpha (Prop. 4.1, Thms 4.2-4.5), Bayes-error lower bounds
  (Prop. 3.7, Cor. 3.9), ``calibrate`` (the largest epsilon for a target error), exact I(U;Y) for
  small joint distributions, and ``figure4_table``;
* ``reidrisk.pie.utility`` -- expected l2 loss of RR/GLH estimates (eq. 22-24), emp and emp+thr,
  and ``utility_comparison`` (LDP- vs PIE-calibrated budgets);
* ``reidrisk.pie.pse``     -- the k-NN KL estimator of the PSE, DET curves, identification error;
* ``reidrisk.pie.traces``  -- Markov-chain matching of traces and rating histories;
* ``reidrisk.pie.report``  -- the demo report's pie section.

Formulas as rebuilt in docs/design/pie.md (provenance of each: docs/design/pie.md#provenance).
"""

from typing import TYPE_CHECKING

from reidrisk._lazy import lazy_exports

if TYPE_CHECKING:  # the names below load on first use (reidrisk._lazy)
    from reidrisk.pie.bounds import (
        BoundError,
        Calibration,
        Figure4Row,
        alpha,
        alpha_composed,
        alpha_glh,
        alpha_ldp,
        alpha_rr,
        bayes_error,
        bayes_error_bound,
        bayes_error_bound_hv,
        calibrate,
        certified_alpha,
        data_information,
        figure4_table,
        information_budget,
        lambda_glh,
        lambda_rr,
        output_joint,
        product_channel,
        user_information,
    )

__all__ = [
    "BoundError", "Calibration", "Figure4Row", "alpha", "alpha_composed", "alpha_glh",
    "alpha_ldp", "alpha_rr", "bayes_error", "bayes_error_bound", "bayes_error_bound_hv",
    "calibrate", "certified_alpha", "data_information", "figure4_table", "information_budget",
    "lambda_glh", "lambda_rr", "output_joint", "product_channel", "user_information",
]

__getattr__, __dir__ = lazy_exports(__name__)
