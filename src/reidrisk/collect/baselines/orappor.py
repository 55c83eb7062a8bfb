"""O-RAPPOR baseline (Kairouz, Bonawitz and Ramage, ICML 2016; paper 004 ref. [3])."""

from __future__ import annotations

from reidrisk.collect.baselines.complete_case import CompleteCase


class ORapporCompleteCase(CompleteCase):
    """O-RAPPOR with complete-case c-way estimation.

    Client: ``reidrisk.mechanisms.ORappor`` per attribute (one-hot RAPPOR, each bit flipped with
    probability 1 / (1 + e^{eps/2})). O-RAPPOR adds hashing into cohorts for open alphabets; our
    domains are declared and small, so no hashing is needed and O-RAPPOR is exactly this symmetric
    unary encoding. Server: Kairouz et al. decode by inverting the channel and projecting onto the
    simplex; over c attributes the channel is the Kronecker product of the c bit channels (inverted
    axis by axis), using only the reports complete on the c attributes (paper 004 Section 5.4).

    Parameters
    ----------
    estimator : {"norm_sub", "em", "exact_em"}, optional
        How the c-way table is estimated (``CompleteCase``); ``None`` (default): the class's own
        (``"norm_sub"`` here).
    stop : str, tuple, float or None
        EM stopping rule (``reidrisk.collect._tensor.check_stop``; default ``"noise"``).
    max_iter : int
        EM iteration cap.
    """

    name = "orappor"
    label = "O-RAPPOR"
    mechanism = "rappor"
    estimator = "norm_sub"
