"""The fitted model of a survey, cached and refitted lazily when reports have arrived since.

``ModelCache.get(survey)`` returns the ``CollectModel`` fitted by ``CollectPipeline()`` (the
defaults of ``reidrisk collect fit``) on the survey's stored reports. The model is refitted only on
a query and only when the survey's count tables have changed since the last fit (their version,
bumped by every ingestion and withdrawal); ingestion never
fits. Fits of one survey are serialized by a lock, so concurrent queries share one fit.

A refit reads the survey's count tables, not its reports: ingestion folds every new report into
the Gram matrix of report memberships and the presence Gram (``Storage.ingest``; equal to
``reidrisk.estimation.pairs.pair_counts`` of all stored reports), which are sufficient for every
step of the default pipeline (``CollectPipeline.fit_counts``), so a refit reads one row whatever
the number of reports (its cost is the count EMs', whose steps do not depend on it) and equals
``reidrisk collect fit`` on the same reports. Only a pipeline that
reads individual reports (``needs_reports``: the report-level EM) decodes the stored reports.
"""

from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass

import numpy as np

from reidrisk.collect.model_io import CollectModel
from reidrisk.collect.pipeline import CollectPipeline, CollectWarning
from reidrisk.collect.reports_io import CollectedReports
from reidrisk.errors import ReidriskError
from reidrisk.estimation.pairs import PairCounts
from reidrisk.service.storage import Storage, Survey


class NoReports(ReidriskError, LookupError):
    """The survey has no reports yet: nothing to fit."""


class EmptyAttributes(NoReports):
    """Some attributes have no reports yet (no report answers them): nothing to fit for them.

    Parameters
    ----------
    message : str
        What is empty and the fix.
    names : tuple of str
        The attributes without reports.
    """

    def __init__(self, message: str, names: tuple[str, ...]) -> None:
        super().__init__(message)
        self.names = names


def check_present(survey: Survey, counts: PairCounts) -> None:
    """Refuse a fit while an attribute has no reports (the estimators need every attribute).

    Parameters
    ----------
    survey : Survey
        The survey.
    counts : PairCounts
        Its count tables (``Storage.counts``): the diagonal of ``n_pair`` is the number of
        reports holding each attribute.

    Raises
    ------
    NoReports
        When the survey has no reports at all.
    EmptyAttributes
        Naming every attribute no report holds yet.
    """
    if counts.n == 0:
        raise NoReports(f"survey {survey.id!r} has no reports yet; nothing to estimate")
    names = tuple(n for n, k in zip(survey.spec.schema.names, np.diag(counts.n_pair)) if k == 0)
    if names:
        raise EmptyAttributes(
            f"survey {survey.id!r}: attribute(s) {list(names)} have no reports yet (none of the "
            f"{counts.n} stored reports answers them), so nothing can be estimated; query again "
            "once reports holding them have arrived", names)


@dataclass(frozen=True)
class Fitted:
    """A survey's fitted model and what it was fitted on (the cache's key to staleness).

    Parameters
    ----------
    model : CollectModel
        The fitted model.
    n_reports : int
        Number of reports it was fitted on.
    revision : int
        The survey's revision at the fit (``Survey.revision``).
    counts_version : int
        The version of the count tables at the fit (``Survey.counts_version``).
    """

    model: CollectModel
    n_reports: int
    revision: int
    counts_version: int = 0


def collected_reports(storage: Storage, survey: Survey) -> CollectedReports:
    """The survey's stored reports, decoded and validated, in arrival order.

    Parameters
    ----------
    storage : Storage
        The service's database.
    survey : Survey
        The survey whose reports are read.

    Returns
    -------
    CollectedReports
        The reports with the survey's protocol.
    """
    _, cells = storage.report_cells(survey.id)
    rr = survey.spec.decode(cells)
    return CollectedReports(rr, survey.spec.protocol)


def fit_model(collected: CollectedReports) -> CollectModel:
    """``reidrisk collect fit``'s model (its defaults) on these reports.

    Parameters
    ----------
    collected : CollectedReports
        The reports and their protocol.

    Returns
    -------
    CollectModel
        ``CollectPipeline().fit(collected)``, its ``CollectWarning`` kept in the model's notes.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollectWarning)  # the model's notes say it
        return CollectPipeline().fit(collected)


def refit(storage: Storage, survey: Survey,
          pipeline: CollectPipeline | None = None) -> tuple[CollectModel, int]:
    """Fit a survey's model from its count tables, or from its reports when the fit needs them.

    The decoded reports are read only when ``pipeline`` reads individual reports
    (``needs_reports``; module doc).

    Parameters
    ----------
    storage : Storage
        The service's database.
    survey : Survey
        The survey to fit.
    pipeline : CollectPipeline, optional
        The fit; ``None`` (default): ``CollectPipeline()``, ``reidrisk collect fit``'s defaults.

    Returns
    -------
    model : CollectModel
        The fitted model (``CollectWarning`` kept in its notes, not raised).
    n : int
        Number of reports it was fitted on.

    Raises
    ------
    NoReports
        When the survey has no reports, or ``EmptyAttributes`` when an attribute has none.
    """
    pipeline = CollectPipeline() if pipeline is None else pipeline
    counts = storage.counts(survey)
    check_present(survey, counts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollectWarning)  # the model's notes say it
        if pipeline.needs_reports:
            collected = collected_reports(storage, survey)
            return pipeline.fit(collected), collected.n
        spec = survey.spec
        return pipeline.fit_counts(counts, spec.schema, spec.mechanisms, spec.protocol), counts.n


class ModelCache:
    """Lazily refitted models, one per survey (module doc).

    Parameters
    ----------
    storage : Storage
        The service's database. ``fits`` counts the fits made so far.
    """

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self._models: dict[str, Fitted] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self.fits = 0

    def _lock(self, sid: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(sid, threading.Lock())

    def get(self, survey: Survey) -> Fitted:
        """The survey's model, refitted first if reports arrived or the survey changed since.

        Parameters
        ----------
        survey : Survey
            The survey (re-read from storage under its lock, so a stale copy is fine).

        Returns
        -------
        Fitted
            The model and the report count and revision it was fitted on.

        Raises
        ------
        NoReports
            When the survey has no reports yet, or ``EmptyAttributes`` when an attribute has
            none.
        """
        with self._lock(survey.id):
            survey = self.storage.survey(survey.id)
            cur = self._models.get(survey.id)
            if cur is not None and cur.counts_version == survey.counts_version \
                    and cur.n_reports == survey.n_reports and cur.revision == survey.revision:
                return cur
            if survey.n_reports == 0:
                raise NoReports(f"survey {survey.id!r} has no reports yet; nothing to estimate")
            model, n = refit(self.storage, survey)
            fitted = Fitted(model, n, survey.revision, survey.counts_version)
            self._models[survey.id] = fitted
            self.fits += 1
            return fitted
