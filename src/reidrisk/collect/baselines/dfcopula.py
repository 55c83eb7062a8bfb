"""DF+Copula baseline (paper 004 Section 5.1): the copula fitted on the raw randomized reports."""

from __future__ import annotations

from reidrisk.collect.baselines.proposed import Proposed


class DFCopula(Proposed):
    """DF+Copula: the copula fitted to the raw randomized reports, with no noise mitigation.

    "The simple combination of the differentially private technique at the client side and the
    copula technique at the server side" (paper 004 Section 5.1).

    Client: the subset mechanism, as for the proposed method. Server: the marginals are the
    normalized support frequencies ``w / sum w`` of the reports and each pair table the normalized
    pair support counts ``W / sum W`` (the empirical distributions of the randomized reports, not
    inverted); the copula is fitted to them exactly as in the proposed method, with the raw counts
    of reports as the pairs' sample sizes, no shrinkage and no fallback.

    Parameters
    ----------
    label : str
        The variant's name in result tables.
    exact_table : bool
        As in ``Proposed``: the copula's exact cell probabilities (default) or counts of synthetic
        records.
    seed : int or numpy.random.Generator
        Seed of the synthetic records (``exact_table=False``).
    """

    name = "df_copula"

    def __init__(self, label: str = "DF+Copula", exact_table: bool = True, seed=0) -> None:
        super().__init__(label, exact_table, seed, estimator="raw", shrink=None, fallback=False)
