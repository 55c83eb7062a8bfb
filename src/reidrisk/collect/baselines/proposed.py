"""The proposed method of paper 004 as a compared method (a thin wrapper of ``CollectPipeline``)."""

from __future__ import annotations

from reidrisk.collect.baselines.base import Method
from reidrisk.collect.pipeline import CollectPipeline, CollectWarning


class Proposed(Method):
    """Paper 004's method: ``CollectPipeline(**options)`` on subset reports, tables from its copula.

    Learned: ``model_`` (``CollectModel``).

    Parameters
    ----------
    label : str
        The variant's name in result tables.
    exact_table : bool
        Answer queries with the copula's exact cell probabilities (default) or, as the paper does,
        by counting ``n`` synthetic records (``False``).
    seed : int or numpy.random.Generator
        Seed of the synthetic records (``exact_table=False``).
    **options
        Keyword arguments of ``CollectPipeline`` (estimator, stop, shrink, fallback, ...).
    """

    name = "proposed"
    mechanism = "subset"

    def __init__(self, label: str = "proposed", exact_table: bool = True, seed=0, **options) -> None:
        self.label = label
        self.exact_table = bool(exact_table)
        self.seed = seed
        self.pipeline = CollectPipeline(**options)

    def fit(self, reports) -> Proposed:
        """Fit ``CollectPipeline`` on the reports.

        Its fallback warnings are kept in ``model_.report``, not raised.

        Parameters
        ----------
        reports : RecordReports or CollectedReports
            The randomized subset reports of every person.

        Returns
        -------
        Proposed
            This method, fitted (``model_``, ``schema_``).
        """
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CollectWarning)  # the fallback is in model_.report
            self.model_ = self.pipeline.fit(reports)
        self.schema_ = self.model_.schema
        return self

    def _table(self, cols):
        return self.model_.table(cols, exact=self.exact_table, rng=self.seed)

    def __repr__(self) -> str:
        return f"Proposed(label={self.label!r}, {self.pipeline!r})"
