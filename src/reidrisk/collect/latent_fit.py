"""The latent class model as the collection model (``CollectPipeline(model="latent")``).

Design: docs/design/collect.md#pipeline; the model: docs/design/core.md#latent-class-model.

Instead of steps 2-5 of the pipeline (marginals, pair tables, the Gaussian copula on them), the
population is modelled as a mixture of K products of categorical distributions (Manrique-Vallier &
Reiter, JASA 2012, eq. 1), fitted by MAP-EM on the whole reports through each attribute's exact
channel (``reidrisk.latent``): a report r_a has likelihood (M_a theta_{h,a})[r_a] under class h, a
missing value -- or an attribute the person was not asked under attribute sampling -- is left out of
the likelihood, and K is chosen by held-out likelihood. The model is the equal-weight average of
``N_FITS`` (5) such fits, each with its own held-out split and random starts (``average_fits``):
one fit's K and local optimum vary much between seeds of the same reports, and the average of
mixtures is again a mixture. Every c-way table is then exact and cheap,
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

import math
import time
from collections.abc import Callable

import numpy as np

from reidrisk.collect.model_io import CollectError, CollectModel, FitReport
from reidrisk.collect.protocol import Protocol
from reidrisk.latent import LatentClassModel, LatentFit
from reidrisk.latent.model import _EM, HOLDOUT_SHARE, _prepare, _source_columns
from reidrisk.mechanisms.base import MechanismError, check_integer
from reidrisk.mechanisms.record import RecordReports

LATENT_SEED = 0
"""Seed of the latent fit's random starts and held-out split: a fit is a function of its reports,
as the copula pipeline's is."""


N_FITS = int(round(1.0 / HOLDOUT_SHARE))
"""Latent class models averaged by the latent method (``average_fits``): one per held-out share of
the K selection (``reidrisk.latent.model.HOLDOUT_SHARE`` = 0.2, so 5), so that every report is held
out once on average, as in 5-fold cross-validation."""

BLEND_GRID = np.linspace(0.0, 1.0, 11)
"""Candidate weights of the latent model in the blend of the two models (``blend_weight``)."""


def fit_latent(rr: RecordReports, protocol: Protocol | None, settings: dict,
               t0: float | None = None, progress: Callable[[str, bool], None] | None = None
               ) -> CollectModel:
    """Fit the latent class model on the reports and wrap it as a ``CollectModel``.

    Parameters
    ----------
    rr : RecordReports
        The reports (missing values and attribute-sampled reports allowed); every attribute must
        have at least one present report (checked by the caller).
    protocol : Protocol or None
        How the reports were collected, recorded in the model.
    settings : dict
        The pipeline's settings, recorded in the model's ``FitReport``. The fallback (module doc)
        is decided before, by ``CollectPipeline.fit``, which calls this function only when the
        mixture is to be fitted.
    t0 : float, optional
        ``time.perf_counter()`` at the start of the fit (default: now).
    progress : callable, optional
        Passed to every ``LatentClassModel.fit`` (its ``progress``), for a progress display.

    Returns
    -------
    CollectModel
        The latent class model (``kind == "latent"``).
    """
    t0 = time.perf_counter() if t0 is None else t0
    schema = rr.schema
    g = len(schema)
    latent, fits = average_fits(rr, N_FITS, progress=progress)
    present = rr.present()
    together = present.T.astype(np.int64) @ present.astype(np.int64)  # reports per pair
    margs = tuple(_normalized(latent.table([j])) for j in range(g))
    pairs = [(j, k) for j in range(g) for k in range(j + 1, g)]
    tables = {(j, k): _normalized(latent.table([j, k])) for j, k in pairs}
    pair_n = {(j, k): int(together[j, k]) for j, k in pairs}
    fit = latent.fit_
    parts = "; ".join(f"K = {m.n_classes_}" + (
        " of " + ", ".join(f"{k}: {sc:.4f}" for k, sc in m.fit_.selection) if m.fit_.selection
        else "") for m in fits)
    notes = (f"latent class model: the average of {N_FITS} fits with K chosen by held-out "
             f"log-likelihood per record ({parts}), {fit.n_classes} classes in all, fitted on "
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


def average_fits(rr: RecordReports, n_fits: int = N_FITS, seed: int = LATENT_SEED,
                 progress: Callable[[str, bool], None] | None = None
                 ) -> tuple[LatentClassModel, list[LatentClassModel]]:
    """The equal-weight average of ``n_fits`` latent class models fitted on the same reports.

    Fit b is ``LatentClassModel("auto", rng=seed + b)``: its own held-out split (which chooses K)
    and its own random starts. The MAP-EM fit depends on both (a local optimum, a K chosen on one
    random 20 % of the reports), and under LDP noise that dependence is large: on Adult at the
    collection's default point (m = 0.5, epsilon = 5, 2 attributes per person) the chosen K ranges
    over 2-16 between seeds of the same reports. Averaging the fits averages out that part of the
    estimator's variance (bagging over the fit's own randomness, Breiman 1996; the average of
    mixtures is one mixture, ``p(x) = (1/B) sum_b sum_h w_bh prod_a theta_bha[x_a]``, so the result
    is again a ``LatentClassModel`` with the classes of all fits, weights divided by B). Measured:
    docs/results/collect_latent.md.

    Parameters
    ----------
    rr : RecordReports
        The reports.
    n_fits : int
        B, the fits averaged (default ``N_FITS``); 1 gives the single fit of ``seed``.
    seed : int
        Seed of the first fit; fit b uses ``seed + b``.
    progress : callable, optional
        Passed to every ``LatentClassModel.fit`` (its ``progress``), for a progress display.

    Returns
    -------
    model : LatentClassModel
        The averaged model, fitted; its ``fit_`` gives the classes of all fits, their EM steps
        summed and its objective and log-likelihood on ``rr`` (no ``selection``: each fit's is in
        ``fits``).
    fits : list of LatentClassModel
        The fits averaged, in seed order.

    Raises
    ------
    CollectError
        ``n_fits`` is not a whole number >= 1 or ``seed`` not one >= 0.
    """
    try:
        n_fits = check_integer(n_fits, "n_fits", 1)
        seed = check_integer(seed, "seed", 0)
    except MechanismError as exc:
        raise CollectError(f"average_fits: {exc}; the latent method averages N_FITS = {N_FITS} "
                           "fits from seed LATENT_SEED = 0") from None
    t0 = time.perf_counter()
    fits = [LatentClassModel("auto", rng=seed + b).fit(rr, progress=progress)
            for b in range(n_fits)]
    if len(fits) == 1:
        return fits[0], fits
    schema = rr.schema
    w = np.concatenate([m.weights_ for m in fits]) / len(fits)
    probs = [np.vstack([m.probs_[a] for m in fits]) for a in range(len(schema))]
    first = fits[0]
    em = _EM(_prepare([rr], schema), np.asarray(schema.sizes), first.weight_prior,
             first.category_prior)
    e = em.forward(_EM.pack(w, probs))[0]
    K = int(w.size)
    n_params = int(K - 1 + K * int((np.asarray(schema.sizes) - 1).sum()))
    fit = LatentFit(K, float(e.objective), float(e.loglik),
                    -2.0 * float(e.loglik) + n_params * math.log(first.fit_.n_records), n_params,
                    first.fit_.n_records, first.fit_.n_patterns,
                    int(sum(m.fit_.n_iter for m in fits)), all(m.fit_.converged for m in fits),
                    (), time.perf_counter() - t0)
    d = first.to_dict()
    d.update(weights=[float(x) for x in w], probs=[t.tolist() for t in probs], fit=fit.to_dict())
    return LatentClassModel.from_dict(d), fits


def _normalized(t: np.ndarray) -> np.ndarray:
    t = np.clip(np.asarray(t, dtype=np.float64), 0.0, None)
    return t / t.sum()


_AXES = "abcdefghijklmnopqrstuvwxy"  # one einsum axis per attribute; "z" indexes the people


def report_likelihoods(model: CollectModel, rr: RecordReports) -> np.ndarray:
    """The likelihood of each person's reports under a model's table of the attributes they carry.

    A person who reported the attributes S (their present ones, those the protocol asked them
    for) has the likelihood ``sum_x prod_{a in S} M_a[r_a, x_a] T_S[x]``, with ``T_S`` the model's
    table of S (``CollectModel.table``, exact) and ``M_a`` the exact channel of attribute a
    (``Mechanism.log_prob``): only the model's |S|-way tables enter, so any two models that answer
    tables (the copula, the latent class model) are scored on the same footing. Each row of
    ``M_a`` is scaled by a per-report constant (its maximum), the same for every model: ratios of
    likelihoods between models are exact. People are grouped by their set S; one table per set.

    Parameters
    ----------
    model : CollectModel
        The fitted model (either kind).
    rr : RecordReports
        The scored reports (held out from the model's fit), of the model's schema.

    Returns
    -------
    numpy.ndarray (n,)
        The scaled likelihood of each person's reports (1 for a person with no report).

    Raises
    ------
    CollectError
        The reports' attributes or domain sizes differ from the model's, or a person reported
        more than ``len(_AXES)`` = 25 attributes (a table of at least 2^26 cells).
    """
    got = (list(rr.schema.names), [int(f) for f in rr.schema.sizes])
    want = (list(model.schema.names), [int(f) for f in model.schema.sizes])
    if got != want:
        raise CollectError(
            f"report_likelihoods: the reports' attributes {got[0]} (domain sizes {got[1]}) differ "
            f"from the model's {want[0]} ({want[1]}); score reports collected with the model's "
            "schema")
    cols, _ = _source_columns(rr, rr.schema)
    present = rr.present()
    widest = int(present.sum(axis=1).max()) if rr.n else 0
    if widest > len(_AXES):
        raise CollectError(f"report_likelihoods: a person reported {widest} attributes; their "
                           f"table is scored with one einsum axis each, at most {len(_AXES)}")
    out = np.ones(rr.n)
    sets, inverse = np.unique(present, axis=0, return_inverse=True)
    order = np.argsort(inverse.ravel(), kind="stable")  # people grouped by their set
    bounds = np.searchsorted(inverse.ravel()[order], np.arange(len(sets) + 1))
    for s, attrs in enumerate(sets):  # one loop step per distinct set of reported attributes
        idx = np.flatnonzero(attrs)
        if idx.size == 0:
            continue
        rows = order[bounds[s]:bounds[s + 1]]
        rows_l = [cols[a][1][cols[a][0][rows]] for a in idx]  # (people, f_a) channel rows
        t = model.table([int(a) for a in idx])
        ax = _AXES[:idx.size]
        spec = ax + "," + ",".join("z" + x for x in ax) + "->z"
        out[rows] = np.einsum(spec, t, *rows_l, optimize=True)
    return np.maximum(out, 1e-300)


def blend_weight(lik_copula: np.ndarray, lik_latent: np.ndarray,
                 grid: np.ndarray | None = None) -> tuple[float, np.ndarray]:
    """The weight of the latent class model in the blend of the two models' tables that gives
    held-out reports the largest likelihood.

    A person's likelihood is linear in the model's tables, so under the blend
    ``lam T_latent + (1 - lam) T_copula`` it is ``lam l_latent + (1 - lam) l_copula``; the held-out
    log-likelihood ``sum log(lam l_latent + (1 - lam) l_copula)`` (concave in lam) is maximized over
    ``grid`` (stacking, Smyth & Wolpert 1999, on held-out likelihood).

    Parameters
    ----------
    lik_copula, lik_latent : numpy.ndarray (n,)
        ``report_likelihoods`` of the held-out reports under each model.
    grid : numpy.ndarray, optional
        The candidate weights (default ``BLEND_GRID``).

    Returns
    -------
    weight : float
        The best weight of the latent model.
    scores : numpy.ndarray
        The held-out log-likelihood per person at each weight of ``grid``.

    Raises
    ------
    CollectError
        The likelihoods are not two 1-d arrays of one length, finite and >= 0, or ``grid`` is
        empty or has a weight outside [0, 1].
    """
    grid = BLEND_GRID if grid is None else np.asarray(grid, dtype=np.float64)
    lc, ll = np.asarray(lik_copula, dtype=np.float64), np.asarray(lik_latent, dtype=np.float64)
    if lc.ndim != 1 or lc.shape != ll.shape or lc.size == 0:
        raise CollectError(f"blend_weight: the two likelihoods must be 1-d arrays of the same "
                           f"held-out people, got shapes {lc.shape} and {ll.shape}")
    if not (np.all(np.isfinite(lc)) and np.all(np.isfinite(ll)) and lc.min() >= 0 and ll.min() >= 0):
        raise CollectError("blend_weight: the likelihoods must be finite and >= 0 "
                           "(report_likelihoods of the held-out reports)")
    if grid.ndim != 1 or grid.size == 0 or not np.all((grid >= 0) & (grid <= 1)):
        raise CollectError(f"blend_weight: grid must be a non-empty list of weights in [0, 1], "
                           f"got {grid.tolist()!r}")
    mix = grid[:, None] * ll[None, :] + (1.0 - grid[:, None]) * lc[None, :]
    scores = np.log(np.maximum(mix, 1e-300)).mean(axis=1)
    return float(grid[int(np.argmax(scores))]), scores


__all__ = ["BLEND_GRID", "LATENT_SEED", "N_FITS", "average_fits", "blend_weight", "fit_latent",
           "report_likelihoods"]
