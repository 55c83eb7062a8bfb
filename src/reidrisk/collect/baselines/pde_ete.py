"""PDE/ETE baseline (Sei and Ohsuga, Sensors 2020; paper 004 ref. [5])."""

from __future__ import annotations

from reidrisk.collect.baselines.complete_case import CompleteCase


class PDEETECompleteCase(CompleteCase):
    """PDE/ETE with complete-case c-way estimation.

    The paper's full text is not available to us; this is the closest reading we can defend.
    Paper 004 says only that "PDE/ETE does not transform the numerical values into categorical
    values". PDE (the participants' side) perturbs the sensed number itself; ETE (the server) then
    estimates the distribution of the true values by an EM that deconvolves the known noise (and
    the sensing error, zero here). We treat the category index as that number: the client is
    ``reidrisk.mechanisms.baselines.LaplaceIndex`` (Laplace noise of scale (f - 1) / eps,
    epsilon-LDP), and the server runs the report-level EM with the exact Laplace likelihood over
    the c-way table of the complete reports. Nominal categories are treated as ordered, as a
    method that does not categorize must.

    Parameters
    ----------
    estimator : {"norm_sub", "em", "exact_em"}, optional
        How the c-way table is estimated (``CompleteCase``); ``None`` (default): the class's own
        (``"exact_em"`` here).
    stop : str, tuple, float or None
        EM stopping rule (``reidrisk.collect._tensor.check_stop``; default ``"noise"``).
    max_iter : int
        EM iteration cap.
    """

    name = "pde_ete"
    label = "PDE/ETE"
    mechanism = "laplace_index"
    estimator = "exact_em"
