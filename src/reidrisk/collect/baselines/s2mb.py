"""S2Mb baseline (Sei and Ohsuga, IEEE TIFS 2017; paper 004 ref. [4])."""

from __future__ import annotations

from reidrisk.collect.baselines.complete_case import CompleteCase


class S2MbCompleteCase(CompleteCase):
    """S2Mb with complete-case c-way estimation.

    Client: the subset mechanism of paper 004 eq. 2-3 (which paper 004 takes from S2Mb) on every
    attribute. Server: S2Mb's EM-based estimation (paper 004 eq. 8-11 are its count EM), applied to
    the c-way table of the reports complete on the c attributes through the Kronecker product of
    the c subset channels. S2Mb assumed no missing values ("if there were multiple attributes ...
    they were converted into one attribute in advance", paper 004 Section 3.2), which is exactly
    this joint estimation on the complete reports.

    Parameters
    ----------
    estimator : {"norm_sub", "em", "exact_em"}, optional
        How the c-way table is estimated (``CompleteCase``); ``None`` (default): the class's own
        (``"em"`` here).
    stop : str, tuple, float or None
        EM stopping rule (``reidrisk.collect._tensor.check_stop``; default ``"noise"``).
    max_iter : int
        EM iteration cap.
    """

    name = "s2mb"
    label = "S2Mb"
    mechanism = "subset"
    estimator = "em"
