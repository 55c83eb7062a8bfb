"""MDN baseline: multidimensional negative surveys (Groat et al., Pervasive Mob. Comput. 2013;
paper 004 ref. [23])."""

from __future__ import annotations

from reidrisk.collect.baselines.complete_case import CompleteCase


class MDNCompleteCase(CompleteCase):
    """MDN with complete-case c-way estimation.

    The paper is not available to us; this is our reading. Client: a negative survey per attribute
    (each person reports a category that is probably *not* theirs), in its epsilon-LDP form
    ``reidrisk.mechanisms.baselines.NegativeSurvey`` (the true category with probability
    1 / (1 + (f - 1) e^eps), each other one e^eps times as likely). Server: a multidimensional
    negative survey reconstructs the joint distribution of the dimensions by inverting the
    negative-survey matrix on every dimension; here that is the Kronecker inversion over the c
    attributes of the complete reports, projected onto the simplex.

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

    name = "mdn"
    label = "MDN"
    mechanism = "negative"
    estimator = "norm_sub"
