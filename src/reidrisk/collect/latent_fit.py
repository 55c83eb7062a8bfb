"""The latent class model as the collection model (``CollectPipeline(model="latent")``).

Design: docs/design/collect.md#pipeline; the model: docs/design/core.md#latent-class-model.

Instead of steps 2-5 of the pipeline (marginals, pair tables, the Gaussian copula on them), the
population is modelled as a mixture of K products of categorical distributions (Manrique-Vallier &
Reiter, JASA 2012, eq. 1), fitted by MAP-EM on the whole reports through each attribute's exact
channel (``reidrisk.latent``): a report r_a has likelihood (M_a theta_{h,a})[r_a] under class h, a
missing value -- or an attribute the person was not asked under attribute sampling -- is left out of
the likelihood, and K is chosen by held-out likelihood. Every c-way table is then exact and cheap,
``sum_h w_h outer(theta_{h,a}, ...)``, and synthetic records are drawn from the mixture. Unlike
the copula, the model can represent any joint distribution with enough classes (dependence of
order higher than two included), but each report enters it once, whole, rather than through pair
tables that each use every report having both attributes.

The result is an ordinary ``CollectModel`` whose ``latent`` holds the fitted
``reidrisk.latent.LatentClassModel`` (and whose ``copula`` is ``None``); its ``marginals`` and
``pair_tables`` are the mixture's 1- and 2-way tables, so everything that reads those keeps
working.

Fallback. A model should never be worse than knowing nothing, and a mixture fitted by maximum
likelihood follows the LDP noise where the reports hold no detectable signal (few reports per
attribute, or no dependence at all): measured, docs/results/collect_latent.md. So with
``fallback=True`` (default) the pipeline's own fallback decision comes first: the copula pipeline
is run (its cost is small beside the mixture's), and if its tests find no pair dependence beyond
the LDP noise, its fallback model (independence of the shrunk marginals, or the uniform
distribution; pipeline module doc, "Fallback") is returned and no mixture is fitted; the notes say
so. Only mechanisms that are frequency oracles have those tests; with others the mixture is always
fitted.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import replace

import numpy as np

from reidrisk.collect.model_io import CollectModel, FitReport
from reidrisk.collect.protocol import Protocol
from reidrisk.collect.reports_io import CollectedReports
from reidrisk.latent import LatentClassModel
from reidrisk.mechanisms.record import RecordReports

LATENT_SEED = 0
"""Seed of the latent fit's random starts and held-out split: a fit is a function of its reports,
as the copula pipeline's is."""


def fit_latent(rr: RecordReports, protocol: Protocol | None, settings: dict,
               t0: float | None = None) -> CollectModel:
    """Fit the latent class model on the reports and wrap it as a ``CollectModel``.

    Parameters
    ----------
    rr : RecordReports
        The reports (missing values and attribute-sampled reports allowed); every attribute must
        have at least one present report (checked by the caller).
    protocol : Protocol or None
        How the reports were collected, recorded in the model.
    settings : dict
        The pipeline's settings, recorded in the model's ``FitReport``; its ``fallback`` and
        ``alpha`` choose and set the fallback (module doc).
    t0 : float, optional
        ``time.perf_counter()`` at the start of the fit (default: now).

    Returns
    -------
    CollectModel
        The latent class model (``kind == "latent"``), or the pipeline's fallback model when the
        reports show no dependence (module doc, "Fallback").
    """
    t0 = time.perf_counter() if t0 is None else t0
    if settings.get("fallback", True):
        fallback = _fallback_model(rr, protocol, settings, t0)
        if fallback is not None:
            return fallback
    schema = rr.schema
    g = len(schema)
    latent = LatentClassModel("auto", rng=LATENT_SEED).fit(rr)
    present = rr.present()
    together = present.T.astype(np.int64) @ present.astype(np.int64)  # reports per pair
    margs = tuple(_normalized(latent.table([j])) for j in range(g))
    pairs = [(j, k) for j in range(g) for k in range(j + 1, g)]
    tables = {(j, k): _normalized(latent.table([j, k])) for j, k in pairs}
    pair_n = {(j, k): int(together[j, k]) for j, k in pairs}
    fit = latent.fit_
    chosen = ""
    if fit.selection:
        scores = ", ".join(f"K = {k}: {s:.4f}" for k, s in fit.selection)
        chosen = f" (chosen by held-out log-likelihood per record: {scores})"
    notes = (f"latent class model with K = {fit.n_classes} classes{chosen}, fitted on "
             f"{fit.n_records} reports ({fit.n_patterns} distinct patterns) in {fit.n_iter} EM "
             "steps",)
    report = FitReport(
        settings=dict(settings), n=int(rr.n),
        n_present=tuple(int(x) for x in np.diag(together)),
        marginal_iterations=(), pair_iterations={}, marginal_signal=(), pair_signal={},
        pair_shrink={}, fallback="none", notes=notes, seconds=time.perf_counter() - t0,
    )
    return CollectModel(
        schema=schema, protocol=protocol, mechanisms=tuple(m.params() for m in rr.mechanisms),
        marginals=margs, pair_tables=tables, pair_n=pair_n, pair_n_eff={}, copula=None,
        report=report, latent=latent,
    )


def _fallback_model(rr: RecordReports, protocol: Protocol | None, settings: dict, t0: float
                    ) -> CollectModel | None:
    """The copula pipeline's fallback model when its tests find no dependence (module doc,
    "Fallback"), else None."""
    # the pipeline imports this module, so its names are imported here
    from reidrisk.collect.pipeline import (
        DEFAULT_ALPHA,
        CollectError,
        CollectPipeline,
        CollectWarning,
        _require_oracles,
    )

    try:
        _require_oracles(rr.schema, rr.mechanisms)
    except CollectError:  # not frequency oracles: no tests, the mixture is fitted
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollectWarning)  # announced below, as the latent model's
        base = CollectPipeline(alpha=settings.get("alpha", DEFAULT_ALPHA)).fit(
            CollectedReports(rr, protocol) if protocol is not None else rr)
    if base.report.fallback == "none":
        return None
    note = "no latent class model was fitted: " + base.report.notes[-1]
    report = replace(base.report, settings=dict(settings), notes=base.report.notes[:-1] + (note,),
                     seconds=time.perf_counter() - t0)
    warnings.warn(note, CollectWarning, stacklevel=4)
    return replace(base, report=report)


def _normalized(t: np.ndarray) -> np.ndarray:
    t = np.clip(np.asarray(t, dtype=np.float64), 0.0, None)
    return t / t.sum()


__all__ = ["LATENT_SEED", "fit_latent"]
