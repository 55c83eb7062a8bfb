"""Paper 004 end to end: randomized reports with missing values -> fitted model -> synthetic records
and contingency tables over any c attributes (Section 4.2, Algorithm 2;
docs/design/collect.md#pipeline).

``CollectPipeline(...).fit(reports)`` runs, on the reports of n people (missing values allowed):

1. support counts of every attribute and every pair as one Gram matrix (eq. 5, 12-13;
   ``reidrisk.estimation.pairs.pair_counts``);
2. every single-attribute distribution (eq. 4-11): the count EM (default), the exact report-level
   EM, the norm-sub inversion, or the raw report frequencies (the DF+Copula baseline);
3. every pair distribution from the reports having both attributes, through the Kronecker pair
   channel (eq. 12-13), by the count EM started from the product of the two marginals (or the
   exact report-level EM);
4. shrinkage of the marginals toward uniform (``marginal_shrink``: positive-part James-Stein
   ``lambda = max(0, 1 - tr C / ||d||^2)``, then the marginals whose uniformity score test is not
   rejected at false-discovery rate ``MARGINAL_FDR`` set to uniform) and optional shrinkage of the
   pair dependence by its LDP noise (``shrink="eb"`` or ``"js"``, with the pair's effective number
   of raw records ``CollectModel.pair_n_eff``); docs/design/collect.md#shrinkage;
5. the Gaussian copula (eq. 15-24): a correlation per pair matched to its table, projected to the
   nearest correlation matrix (``reidrisk.copula``);
6. the fallback: each marginal tested against uniform and each pair against independence at level
   ``alpha / t`` (Bonferroni over the t = g + g (g - 1) / 2 tests) with the inversion estimate's
   exact noise under the null; with no detectable pair the copula is replaced by independence
   (``fallback="independence"``), with no detectable marginal either by the uniform distribution
   (``fallback="uniform"``), recorded in the model's notes and announced with a ``CollectWarning``
   (docs/design/collect.md#fallback).

``CollectPipeline(model="latent")`` replaces steps 2-6 by a latent class model fitted on the whole
reports through each attribute's channel (``reidrisk.collect.latent_fit``); the result is the same
kind of ``CollectModel``, answering the same queries.

The result is a ``CollectModel``: ``synthesize(n, rng)`` draws complete records (Algorithm 2 lines
24-32) and ``table(cols)`` answers a c-way contingency query (line 33), exactly (multivariate normal
rectangle probabilities) or by counting synthetic records as the paper does.

Defaults: ``exact_em=False``, ``stop="noise"``, ``estimator="em"``, ``shrink=None``,
``marginal_shrink=True``, ``fallback=True``. Why these, and why step 4's weight is not the core's
``shrink_weights``: docs/design/collect.md#measurements.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, replace

import numpy as np
from scipy.stats import chi2, false_discovery_control

from reidrisk._compat import renamed_attribute, renamed_keywords
from reidrisk.collect import _tensor
from reidrisk.collect.latent_fit import fit_latent
from reidrisk.collect.model_io import CollectError, CollectModel, FitReport
from reidrisk.collect.protocol import Protocol, variance_factor
from reidrisk.collect.reports_io import CollectedReports
from reidrisk.copula import GaussianCopula
from reidrisk.estimation.dependence import PairStatistics, pair_statistics
from reidrisk.estimation.em import DEFAULT_MAX_ITER, EstimationError, parse_stop
from reidrisk.estimation.frequency import (
    FrequencyEstimate,
    estimate_marginal,
    marginals_from_counts,
    shrink_toward_uniform,
)
from reidrisk.estimation.pair_batches import estimate_pairs_batched
from reidrisk.estimation.pairs import PairCounts, pair_counts
from reidrisk.mechanisms.record import RecordReports
from reidrisk.schema import Schema

ESTIMATORS = ("em", "norm_sub", "raw")
EXACT_EM = (False, True, "marginals")
SHRINK = (None, "eb", "js")
FALLBACKS = ("none", "independence", "uniform")
MODELS = ("copula", "latent")
DEFAULT_ALPHA = 0.05
MARGINAL_FDR = 0.1
"""False-discovery rate of the marginal selection (module doc, step 4)."""


class CollectWarning(UserWarning):
    """The fitted model fell back to independence or to the uniform distribution."""


# ---------------------------------------------------------------------------------------------
# the pipeline
# ---------------------------------------------------------------------------------------------
def unpack(reports) -> tuple[RecordReports, Protocol | None]:
    """The reports and their protocol from a ``CollectedReports`` or a ``RecordReports``.

    Parameters
    ----------
    reports : RecordReports or CollectedReports
        The randomized reports.

    Returns
    -------
    RecordReports
        The reports.
    Protocol or None
        How they were collected, when known.

    Raises
    ------
    CollectError
        For anything else (raw data must be randomized first).
    """
    if isinstance(reports, CollectedReports):
        return reports.reports, reports.protocol
    if isinstance(reports, RecordReports):
        return reports, None
    raise CollectError(
        f"fit needs RecordReports or CollectedReports (e.g. from read_reports), got "
        f"{type(reports).__name__}; raw data must be randomized first (Protocol.randomize)"
    )


@dataclass(frozen=True)
class _Estimates:
    """Steps 1-3 of the module doc: the marginals and pair tables before shrinkage, with the EM
    steps each took, the reports per pair and the counts they were read from."""

    marginals: list
    tables: dict
    n_pair: dict
    m_iter: list
    p_iter: dict
    counts: PairCounts


class CollectPipeline:
    """The proposed method of paper 004 (module doc): ``fit(reports) -> CollectModel``.

    Design: docs/design/collect.md#pipeline.

    Parameters
    ----------
    estimator : {"em", "norm_sub", "raw"}
        ``"em"`` (default): the count EM of eq. 8-11; ``"norm_sub"``: the inversion projected on
        the simplex; ``"raw"``: the report frequencies, no noise mitigation (DF+Copula).
    stop
        EM stopping rule (``reidrisk.estimation.em``; default ``"noise"``).
    shrink : {None, "eb", "js"}
        Shrinkage of the pair dependence by its LDP noise (module doc; default ``None``: none).
    marginal_shrink : bool
        Shrink each marginal toward uniform by its noise (module doc; default on).
    exact_em : {False, "marginals", True}
        Where to use the report-level EM (exact likelihood of each whole report) instead of the
        count EM: ``False`` (default: nowhere), ``"marginals"``, or ``True`` (marginals and pairs;
        slow with many attributes). Applies to ``estimator="em"`` only.
    fallback : bool
        Apply the independence/uniform fallback (module doc; default on).
    alpha : float
        Family-wise level of the fallback's tests, in (0, 1).
    copula_fit : {"table", "mi"}
        How a pair correlation is matched to its table (formerly ``copula_method``): ``"table"``
        fits the table itself, ``"mi"`` the paper's mutual information with the sign from the
        table.
    max_iter : int
        EM iteration cap.
    model : {"copula", "latent"}
        ``"copula"`` (default): steps 1-6 of the module doc; ``"latent"``: a latent class model
        fitted on the whole reports (``reidrisk.collect.latent_fit``; measured against the copula
        in docs/results/collect_latent.md). Of the options above only ``fallback`` and ``alpha``
        apply to it (the same fallback, decided before the mixture is fitted); the others belong
        to the copula's steps and must keep their defaults.
    """

    @renamed_keywords(copula_method="copula_fit")
    def __init__(self, estimator: str = "em", *, stop="noise", shrink: str | None = None,
                 marginal_shrink: bool = True,
                 exact_em: bool | str = False, fallback: bool = True, alpha: float = DEFAULT_ALPHA,
                 copula_fit: str = "table", max_iter: int = DEFAULT_MAX_ITER,
                 model: str = "copula") -> None:
        if model not in MODELS:
            raise CollectError(f"model must be one of {MODELS}, got {model!r}")
        if estimator not in ESTIMATORS:
            raise CollectError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}")
        if shrink not in SHRINK:
            raise CollectError(f"shrink must be one of {SHRINK}, got {shrink!r}")
        try:
            parse_stop(stop)
        except EstimationError as exc:
            raise CollectError(str(exc)) from None
        if exact_em not in EXACT_EM:
            raise CollectError(f"exact_em must be one of {EXACT_EM}, got {exact_em!r}")
        if exact_em and stop == "discrepancy" and estimator == "em":
            raise CollectError("stop='discrepancy' works on support counts: pass exact_em=False with it")
        if not 0 < float(alpha) < 1:
            raise CollectError(f"alpha must be in (0, 1), got {alpha!r}")
        self.estimator = estimator
        self.stop = stop
        self.shrink = shrink
        self.marginal_shrink = bool(marginal_shrink)
        self.exact_em = exact_em
        self.fallback = bool(fallback)
        self.alpha = float(alpha)
        self.copula_fit = copula_fit
        self.max_iter = int(max_iter)
        self.model = model
        if model == "latent":
            _check_copula_defaults(self.settings())

    def settings(self) -> dict:
        """The pipeline's parameters, as the fit report records them.

        Returns
        -------
        dict
            Parameter name to value.
        """
        return {"estimator": self.estimator, "stop": self.stop, "shrink": self.shrink,
                "marginal_shrink": self.marginal_shrink, "exact_em": self.exact_em,
                "fallback": self.fallback, "alpha": self.alpha,
                "copula_fit": self.copula_fit, "max_iter": self.max_iter, "model": self.model}

    copula_method = renamed_attribute("copula_fit", "copula_method")

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.settings().items())
        return f"CollectPipeline({args})"

    # ---- steps -------------------------------------------------------------------------------
    def estimate_marginals(self, reports, counts=None) -> tuple[list[np.ndarray], list[int]]:
        """Step 2 of the module doc: every attribute's distribution and its EM iterations.

        Parameters
        ----------
        reports : RecordReports or CollectedReports
            The randomized reports.
        counts : PairCounts, optional
            Their counts (``pair_counts``), when already taken.

        Returns
        -------
        list of numpy.ndarray
            Each attribute's distribution.
        list of int
            Each one's EM steps.
        """
        rr, _ = unpack(reports)
        _require_oracles(rr.schema, rr.mechanisms)  # before counting: supports need an oracle
        if counts is None:
            counts = pair_counts(rr)
        return _as_marginals(self._marginal_estimates(rr.schema, rr.mechanisms, counts, rr),
                             counts)

    def _marginal_estimates(self, schema, mechs, counts, rr) -> list[FrequencyEstimate] | None:
        """Step 2 from the counts, as ``reidrisk.estimation`` gives it (``None`` for the raw
        frequencies, which are the counts themselves); ``rr``: the reports, read by the exact EM
        only (``None`` when fitting from counts). The mechanisms are frequency oracles
        (``_require_oracles``, checked by the caller)."""
        npair = counts.n_pair
        for j, a in enumerate(schema):
            if npair[j, j] == 0:
                raise CollectError(
                    f"attribute {a.name!r} has no present reports, so nothing can be estimated for "
                    "it; drop it from the schema or collect reports that include it"
                )
        if self.estimator == "raw":
            return None
        if self.needs_reports:
            return [estimate_marginal(m, rr.reports[j], "exact_em", name=a.name, stop=self.stop,
                                      max_iter=self.max_iter, shrink=False)
                    for j, (a, m) in enumerate(zip(schema, mechs))]
        return marginals_from_counts(mechs, [counts.counts(j) for j in range(len(mechs))],
                                     [npair[j, j] for j in range(len(mechs))],
                                     self.estimator, names=schema.names, stop=self.stop,
                                     max_iter=self.max_iter, shrink=False)

    def estimate(self, reports) -> _Estimates:
        """Steps 1-3 of the module doc: marginals and pair tables (before shrinkage).

        Parameters
        ----------
        reports : RecordReports or CollectedReports
            The randomized reports.

        Returns
        -------
        _Estimates
            The marginals, pair tables, EM steps, reports per pair and counts.
        """
        rr, _ = unpack(reports)
        _require_oracles(rr.schema, rr.mechanisms)  # before counting: supports need an oracle
        return self._estimate(rr.schema, rr.mechanisms, pair_counts(rr), rr)

    def _estimate(self, schema, mechs, counts, rr) -> _Estimates:
        """``estimate`` from the counts (``rr`` as in ``_marginal_estimates``)."""
        g = len(mechs)
        npair = counts.n_pair
        ests = self._marginal_estimates(schema, mechs, counts, rr)
        margs, m_iter = _as_marginals(ests, counts)
        pairs = [(j, k) for j in range(g) for k in range(j + 1, g)]
        together = [pr for pr in pairs if npair[pr] > 0]
        tables, p_iter = {}, {}
        if self.estimator == "raw":
            for j, k in together:
                W = counts.block(j, k).astype(np.float64)
                tables[(j, k)], p_iter[(j, k)] = W / W.sum(), 0
        elif self.estimator == "em" and self.exact_em is True:
            tables, p_iter = self._exact_pairs(rr, margs, together)
        elif together:
            assert ests is not None  # every estimator but "raw" estimates the marginals
            # the pair EM starts from the marginals as the model keeps them (clipped, summing to
            # 1) and reads only the layout (schema, mechanisms) besides the counts
            # in batches of pairs, mapped over a cluster's workers inside a pair_map block
            est = estimate_pairs_batched(_Layout(schema, mechs), self.estimator, together,
                                         stop=self.stop, max_iter=self.max_iter, counts=counts,
                                         marginals=ests, start=margs, shrink=False)
            for pr in together:
                T = np.clip(np.asarray(est.tables[pr], dtype=np.float64), 0.0, None)
                tables[pr], p_iter[pr] = T / T.sum(), int(est.iterations[pr])
        n_pair = {pr: int(npair[pr]) for pr in pairs}
        return _Estimates(margs, tables, n_pair, m_iter, p_iter, counts)

    def _exact_pairs(self, rr: RecordReports, margs, together):
        """Pair tables by the report-level EM on grouped reports (``_tensor.exact_em_grouped``)."""
        present = rr.present()
        groups = []
        for m, rep in zip(rr.mechanisms, rr.reports):
            L = _tensor.likelihoods(m.log_prob(rep))
            uniq, inv = _tensor.group_rows(L)
            groups.append((uniq, inv))
        tables, iters = {}, {}
        for j, k in together:
            sel = present[:, j] & present[:, k]
            (Uj, ij), (Uk, ik) = groups[j], groups[k]
            flat = ij[sel] * Uk.shape[0] + ik[sel]
            shape = (Uj.shape[0], Uk.shape[0])
            C = np.bincount(flat, minlength=shape[0] * shape[1]).reshape(shape)
            rows_j, rows_k = np.flatnonzero(C.sum(axis=1)), np.flatnonzero(C.sum(axis=0))
            fit = _tensor.exact_em_grouped([Uj[rows_j], Uk[rows_k]], C[np.ix_(rows_j, rows_k)],
                                           stop=self.stop, max_iter=self.max_iter,
                                           init=np.outer(margs[j], margs[k]))
            tables[(j, k)], iters[(j, k)] = fit.estimate, fit.iterations
        return tables, iters

    @property
    def needs_reports(self) -> bool:
        """Whether this configuration reads individual reports: only the report-level EM
        (``exact_em``, with ``estimator="em"``) and the latent class model; every other step reads
        the counts alone."""
        return self.model == "latent" or (self.estimator == "em" and bool(self.exact_em))

    def fit(self, reports, progress=None) -> CollectModel:
        """Fit the model (module doc) from ``RecordReports`` or ``CollectedReports``.

        Parameters
        ----------
        reports : RecordReports or CollectedReports
            The randomized reports.
        progress : callable, optional
            With ``model="latent"``, passed to every ``LatentClassModel.fit`` (its
            ``progress(note, done)``), for a progress display; unused by the copula.

        Returns
        -------
        CollectModel
            The fitted model.
        """
        t0 = time.perf_counter()
        rr, protocol = unpack(reports)
        if self.model == "latent":
            _require_present(rr)
            fallback = self._latent_fallback(rr, protocol, t0) if self.fallback else None
            if fallback is not None:
                return fallback
            return fit_latent(rr, protocol, self.settings(), t0, progress=progress)
        _require_oracles(rr.schema, rr.mechanisms)  # before counting: supports need an oracle
        return self._fit(rr.schema, rr.mechanisms, protocol, pair_counts(rr), rr, t0)

    def _latent_fallback(self, rr: RecordReports, protocol: Protocol | None, t0: float
                         ) -> CollectModel | None:
        """With ``model="latent"``: the copula pipeline's fallback model when its tests find no
        dependence (module doc, "Fallback"; ``reidrisk.collect.latent_fit``), else None (the
        mixture is fitted)."""
        try:
            _require_oracles(rr.schema, rr.mechanisms)
        except CollectError:  # not frequency oracles: no tests, the mixture is fitted
            return None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CollectWarning)  # announced below, as the latent model's
            base = CollectPipeline(alpha=self.alpha).fit(
                CollectedReports(rr, protocol) if protocol is not None else rr)
        if base.report.fallback == "none":
            return None
        note = "no latent class model was fitted: " + base.report.notes[-1]
        report = replace(base.report, settings=self.settings(),
                         notes=base.report.notes[:-1] + (note,),
                         seconds=time.perf_counter() - t0)
        warnings.warn(note, CollectWarning, stacklevel=3)
        return replace(base, report=report)

    def fit_counts(self, counts, schema: Schema, mechanisms, protocol: Protocol | None = None
                   ) -> CollectModel:
        """Fit the model (module doc) from its sufficient statistics, without the reports.

        ``counts``: a ``reidrisk.estimation.pairs.PairCounts`` of the reports (the Gram matrix of
        report memberships and the presence Gram, eq. 5, 12-13; ``pair_counts`` or counts folded
        in batch by batch); ``schema`` and ``mechanisms`` (one per attribute): what the reports
        were randomized with; ``protocol``: recorded in the model, as ``fit`` records a
        ``CollectedReports``' protocol. Every step of ``fit`` (count EM of the marginals and
        pairs, norm-sub, raw frequencies, the uniformity and independence tests, both
        shrinkages, the copula) reads only these counts and the numbers of reports per attribute
        and pair, so the model equals ``fit(reports)`` for equal counts. No step reads a report:
        each EM step costs O(f_j f_j') per pair whatever the number of reports n (the number of
        steps taken by ``stop="noise"`` grows with n, as the noise it stops at shrinks). The
        report-level EM (``exact_em``) reads each report and is refused here
        (``needs_reports``): use ``fit``.

        Parameters
        ----------
        counts : PairCounts
            The counts of the reports (``pair_counts`` or counts folded in batch by batch).
        schema : Schema
            The attributes the reports were randomized over.
        mechanisms : sequence of Mechanism
            One mechanism per attribute, as the reports were randomized with.
        protocol : Protocol, optional
            Recorded in the model.

        Returns
        -------
        CollectModel
            The fitted model, equal to ``fit(reports)`` for equal counts.
        """
        t0 = time.perf_counter()
        if self.model == "latent":
            raise CollectError("model='latent' is fitted on the whole reports, which the counts "
                               "do not hold; fit from the reports (fit) or use model='copula'")
        if self.needs_reports:
            raise CollectError(
                f"exact_em={self.exact_em!r} evaluates the likelihood of each report, which the "
                "counts do not hold; fit from the reports (fit) or use exact_em=False"
            )
        if not isinstance(counts, PairCounts):
            raise CollectError(f"fit_counts needs PairCounts (reidrisk.estimation.pair_counts), "
                               f"got {type(counts).__name__}")
        if not isinstance(schema, Schema):
            raise CollectError(f"fit_counts needs a Schema, got {type(schema).__name__}")
        mechs = tuple(mechanisms)
        if len(mechs) != len(schema):
            raise CollectError(f"{len(mechs)} mechanism(s) for {len(schema)} attributes; pass "
                               "one mechanism per attribute, in schema order")
        for a, m in zip(schema, mechs):
            if m.k != a.size:
                raise CollectError(f"attribute {a.name!r} has {a.size} values but its mechanism "
                                   f"{m!r} has a domain of {m.k}")
        if counts.g != len(schema) or [int(f) for f in counts.sizes] != list(schema.sizes):
            raise CollectError(
                f"the counts cover domains {[int(f) for f in counts.sizes]} but the schema's are "
                f"{list(schema.sizes)}; compute the counts (pair_counts) for this schema"
            )
        _require_oracles(schema, mechs)
        return self._fit(schema, mechs, protocol, counts, None, t0)

    def _fit(self, schema, mechs, protocol, counts, rr, t0) -> CollectModel:
        """``fit`` from the counts (``rr``: the reports, read by the report-level EM only), in the
        steps of the module doc: estimate; test the marginals and the pairs; shrink; choose the
        fallback; fit the copula."""
        g = len(schema)
        est = self._estimate(schema, mechs, counts, rr)
        level = self.alpha / (g + g * (g - 1) // 2)  # Bonferroni over all tests
        second = [_second_moment(counts.block(j, j), counts.n_present(j), m)
                  for j, m in enumerate(mechs)]
        m_tests = _test_marginals(mechs, counts, second, level)
        p_tests = _test_pairs(mechs, est, second, level)
        margs, m_shrink, keep, notes = self._shrink_marginals(schema, mechs, est.marginals,
                                                              m_tests)
        tables, n_eff, p_shrink = self._pair_information(mechs, est, p_tests)
        notes += _missing_pairs_notes(schema, est.n_pair)
        fallback, margs, note = self._choose_fallback(mechs, margs, m_tests, p_tests, keep)
        notes += note
        margs = [exact_simplex(p) for p in margs]
        copula = self._fit_copula(margs, tables, n_eff, fallback)
        if fallback != "none":
            warnings.warn(notes[-1], CollectWarning, stacklevel=2)
        report = FitReport(
            settings=self.settings(), n=int(counts.n),
            n_present=tuple(counts.n_present(j) for j in range(g)),
            marginal_iterations=tuple(est.m_iter), pair_iterations=dict(est.p_iter),
            marginal_signal=tuple(m_tests.signal), pair_signal=p_tests.signal,
            pair_shrink=p_shrink, fallback=fallback, notes=tuple(notes),
            seconds=time.perf_counter() - t0, marginal_shrink=tuple(m_shrink),
        )
        return CollectModel(
            schema=schema, protocol=protocol, mechanisms=tuple(m.params() for m in mechs),
            marginals=tuple(np.asarray(p) for p in margs), pair_tables=tables,
            pair_n=dict(est.n_pair), pair_n_eff=n_eff, copula=copula, report=report,
        )

    def _shrink_marginals(self, schema, mechs, marginals, tests: _MarginalTests):
        """Step 4 for the marginals (module doc, "Marginal shrinkage"): each keeps the estimated
        share of its departure from uniform, and those not discovered at false-discovery rate
        ``MARGINAL_FDR`` are uniform. Returns (marginals, factors kept, which were discovered
        (None when not shrunk), notes)."""
        margs = list(marginals)
        if not self.marginal_shrink or self.estimator == "raw":
            return margs, [], None, []
        shrink = []
        for j in range(len(margs)):
            # E||d||^2 = ||signal||^2 + tr(cov): keep the estimated share of signal (module doc)
            margs[j], lam = shrink_toward_uniform(margs[j], tests.departure[j], tests.noise[j])
            shrink.append(lam)
        keep = false_discovery_control(np.asarray(tests.pvalue), method="bh") <= MARGINAL_FDR
        for j in np.flatnonzero(~keep).tolist():
            margs[j] = np.full(mechs[j].k, 1.0 / mechs[j].k)
            shrink[j] = 0.0
        notes = []
        if not keep.all():
            names = [schema.names[j] for j in np.flatnonzero(~keep)]
            more = f" and {len(names) - 3} more" if len(names) > 3 else ""
            notes.append(
                f"{len(names)} of {len(margs)} marginal(s) do not differ detectably from uniform "
                f"(false-discovery rate {MARGINAL_FDR:g}) and are modelled as uniform: "
                f"{', '.join(map(repr, names[:3]))}{more}"
            )
        return margs, shrink, keep, notes

    def _pair_information(self, mechs, est: _Estimates, tests: _PairTests):
        """Each tested pair's information in raw records (``n_eff``, module doc, "Shrinkage
        options") and, with ``shrink="js"``, its table shrunk toward the product of its margins.
        Returns (tables, n_eff, James-Stein factors)."""
        tables = dict(est.tables)
        S = [variance_factor(m) for m in mechs]
        n_eff, p_shrink = {}, {}
        for i, (j, k) in enumerate(tests.pairs):
            npr = est.n_pair[(j, k)]
            T = tables[(j, k)]
            sq = float(np.sum(T ** 2))
            V = ((1 + S[j]) * (1 + S[k]) - sq) / npr
            if self.estimator == "raw":
                n_eff[(j, k)] = float(npr)
            else:
                n_eff[(j, k)] = float(npr * max(1.0 - sq, 1e-12) / max(V * npr, 1e-12))
            if self.shrink == "js" and self.estimator != "raw":
                V_int = float(tests.statistics.noise[i]) / npr
                ind = np.outer(T.sum(axis=1), T.sum(axis=0))
                tables[(j, k)], lam = shrink_toward_uniform(T, tests.statistics.departure[i],
                                                            V_int, target=ind)
                p_shrink[(j, k)] = lam
        return tables, n_eff, p_shrink

    def _choose_fallback(self, mechs, margs, m_tests: _MarginalTests, p_tests: _PairTests,
                         keep) -> tuple[str, list, list[str]]:
        """Step 6 (module doc, "Fallback"): independence when no pair shows dependence, the
        uniform distribution when moreover no marginal differs from uniform. Returns (fallback,
        marginals, notes)."""
        if not self.fallback or self.estimator == "raw":
            return "none", margs, []
        dependent = any(s > 1 for s in p_tests.signal.values())
        informative = (bool(keep.any()) if self.marginal_shrink
                       else any(s > 1 for s in m_tests.signal))
        if not dependent and not informative:
            return "uniform", [np.full(m.k, 1.0 / m.k) for m in mechs], [
                "fallback to the uniform distribution: no marginal differs from uniform and no "
                f"pair shows dependence beyond the LDP noise (family-wise level {self.alpha:g}); "
                "collect more reports or use a larger budget"
            ]
        if not dependent:
            return "independence", margs, [
                "fallback to independence: no pair shows dependence beyond the LDP noise ("
                f"family-wise level {self.alpha:g}); the model is the product of the estimated "
                "marginals"
            ]
        return "none", margs, []

    def _fit_copula(self, margs, tables, n_eff, fallback: str) -> GaussianCopula:
        """Step 5: the copula on the pair tables, or on none (independence) after a fallback."""
        if fallback == "none":
            return fit_copula(margs, tables, n_eff, shrink="eb" if self.shrink == "eb" else None,
                              method=self.copula_fit)
        return fit_copula(margs, {}, {}, shrink=None, method=self.copula_fit)


@dataclass(frozen=True)
class _MarginalTests:
    """Each marginal's score test against the uniform distribution (module doc, "Fallback" and
    "Marginal shrinkage"): statistic over the critical value (``signal``), p-value, the inversion
    estimate's departure from uniform in Helmert coordinates (``departure``, d) and its noise
    ``tr C`` (``noise``)."""

    signal: list[float]
    pvalue: list[float]
    departure: list[np.ndarray]
    noise: list[float]


@dataclass(frozen=True)
class _PairTests:
    """The pairs tested against independence (those reported together), their statistics
    (``reidrisk.estimation.dependence.pair_statistics``) and each one's statistic over its critical
    value (``signal``; module doc, "Fallback")."""

    pairs: list
    statistics: PairStatistics
    signal: dict


def _test_marginals(mechs, counts: PairCounts, second: list, level: float) -> _MarginalTests:
    """Score test of each marginal against uniform at ``level`` (module doc, "Marginal
    shrinkage", step 2)."""
    signal, pvalue, departure, noise = [], [], [], []
    for j, m in enumerate(mechs):
        f = m.k
        nj = counts.n_present(j)
        w = counts.counts(j).astype(np.float64)
        p_inv = (w / nj - m.q_support) / (m.p_support - m.q_support)
        H = _helmert(f)
        cov = H.T @ (second[j] - np.outer(p_inv, p_inv)) @ H / nj
        d = H.T @ (p_inv - 1.0 / f)
        # the test's noise level is the one under the null (a score test): a uniform value
        # makes E[a a^T] invariant under permutations, a I + b 1 1^T, so in the Helmert
        # coordinates the covariance is (a / n) I, with a estimated from the Gram block
        A = second[j]
        off = (A.sum() - np.trace(A)) / (f * (f - 1))
        a0 = max(float(np.trace(A)) / f - off, 1e-300)
        stat = float(nj * (d @ d) / a0)
        signal.append(stat / float(chi2.isf(level, f - 1)))
        pvalue.append(float(chi2.sf(stat, f - 1)))
        departure.append(d)
        # a sample covariance is positive semi-definite: a trace below 0 is rounding (all
        # of an attribute's reports alike, as with one report each at a large budget)
        noise.append(max(float(np.trace(cov)), 0.0))
    return _MarginalTests(signal, pvalue, departure, noise)


def _test_pairs(mechs, est: _Estimates, second: list, level: float) -> _PairTests:
    """Score test of each pair reported together against independence at ``level`` (module
    doc, "Fallback"), batched by table shape."""
    counts = est.counts
    tested = [pr for pr, npr in est.n_pair.items() if npr > 0 and pr in est.tables]
    stats = pair_statistics([counts.block(j, k) for j, k in tested],
                            [est.n_pair[pr] for pr in tested],
                            [(mechs[j], mechs[k]) for j, k in tested],
                            [(second[j], second[k]) for j, k in tested])
    crit = {d: float(chi2.isf(level, d)) for d in np.unique(stats.df).tolist()}
    signal = {pr: float(stats.stat[i]) / crit[int(stats.df[i])] for i, pr in enumerate(tested)}
    return _PairTests(tested, stats, signal)


def _missing_pairs_notes(schema: Schema, n_pair: dict) -> list[str]:
    missing = [pr for pr, npr in n_pair.items() if npr == 0]
    if not missing:
        return []
    names = [(schema.names[a], schema.names[b]) for a, b in missing[:3]]
    return [f"{len(missing)} pair(s) never reported together (e.g. {names}); they are modelled "
            "as independent"]


def _as_marginals(ests: list[FrequencyEstimate] | None, counts: PairCounts
                  ) -> tuple[list[np.ndarray], list[int]]:
    """Probability vectors (clipped at 0, summing to 1) and EM steps from the marginal estimates,
    or the raw report frequencies when there are none (``estimator="raw"``)."""
    margs, m_iter = [], []
    for j in range(counts.g):
        if ests is None:
            w = counts.counts(j).astype(np.float64)
            p, it = w / w.sum(), 0
        else:
            p, it = ests[j].probs, ests[j].iterations
        p = np.clip(np.asarray(p, dtype=np.float64), 0.0, None)
        margs.append(p / p.sum())
        m_iter.append(int(it))
    return margs, m_iter


# ---------------------------------------------------------------------------------------------
# the copula (step 5)
# ---------------------------------------------------------------------------------------------
_UNIT = 2**52


def exact_simplex(p) -> np.ndarray:
    """A probability vector rounded to multiples of 2^-52 that sum to exactly 1.0 in floating point.

    Every entry is an integer multiple of 2^-52 below 2^53 units, so any summation order is exact
    and renormalizing ``p / p.sum()`` (as the copula does on construction) is the identity: a saved
    and loaded model reproduces every table bit for bit. Largest-remainder rounding moves each
    entry by less than 2^-52.

    Parameters
    ----------
    p : array_like (f,)
        A distribution (clipped at 0 and renormalized first).

    Returns
    -------
    numpy.ndarray (f,)
        The rounded distribution.
    """
    p = np.clip(np.asarray(p, dtype=np.float64), 0.0, None)
    p = p / p.sum()
    scaled = p * _UNIT
    units = np.floor(scaled)
    short = int(_UNIT - units.sum())
    if short > 0:
        units[np.argsort(units - scaled, kind="stable")[:short]] += 1
    elif short < 0:
        units[np.argsort(scaled - units, kind="stable")[:-short]] -= 1
    return units / _UNIT


def fit_copula(marginals, pair_tables: dict, pair_n: dict, *, shrink: str | None = None,
               method: str = "table") -> GaussianCopula:
    """A ``reidrisk.copula.GaussianCopula`` fitted to g marginals and the given pair tables.

    Pairs absent from ``pair_tables`` are independent (correlation 0).

    Parameters
    ----------
    marginals : sequence of array_like
        The g marginal distributions.
    pair_tables : dict
        {(j, j'): (f_j, f_j') probability table}.
    pair_n : dict
        Information of each pair in raw records (``CollectModel.pair_n_eff``), used by
        ``shrink="eb"``.
    shrink : {None, "eb"}
        Shrinkage of the pair correlations (``reidrisk.copula.fit_correlation``).
    method : {"table", "mi"}
        The pair fit (the copula's ``copula_fit``).

    Returns
    -------
    GaussianCopula
        The fitted copula.
    """
    margs = [exact_simplex(p) for p in marginals]
    if not pair_tables:
        return GaussianCopula.from_parameters(margs, np.eye(len(margs)), copula_fit=method,
                                              allow_missing_pairs=True)
    model = GaussianCopula(copula_fit=method, shrink=shrink, allow_missing_pairs=True)
    return model.fit(margs, dict(pair_tables), pair_n=dict(pair_n) if pair_n else None)


@dataclass(frozen=True)
class _Layout:
    """What ``estimate_pairs`` reads of its reports when given the counts and the marginals."""

    schema: Schema
    mechanisms: tuple


def _helmert(f: int) -> np.ndarray:
    """An orthonormal basis (f, f - 1) of the vectors that sum to zero."""
    H = np.zeros((f, f - 1))
    for i in range(1, f):
        H[:i, i - 1] = 1.0 / math.sqrt(i * (i + 1))
        H[i, i - 1] = -i / math.sqrt(i * (i + 1))
    return H


def _second_moment(gram: np.ndarray, n: int, mech) -> np.ndarray:
    """``A = E[a a^T]`` (f, f) of the per-report inversion vector ``a = (B - q) / (p - q)``,
    estimated from the Gram block ``G = B^T B`` of the n present reports (w = diag G):
    ``sum_i (B_i - q)(B_i - q)^T = G - q w 1^T - q 1 w^T + n q^2 1 1^T``."""
    p, q = mech.p_support, mech.q_support
    G = np.asarray(gram, dtype=np.float64)
    w = np.diag(G)
    one = np.ones_like(w)
    S = G - q * np.outer(w, one) - q * np.outer(one, w) + n * q * q * np.outer(one, one)
    return S / (n * (p - q) ** 2)


def _check_copula_defaults(settings: dict) -> None:
    """Refuse copula-step options with ``model="latent"``, which does not run those steps."""
    defaults = CollectPipeline().settings()
    changed = [k for k, v in settings.items()  # the fallback applies to both (latent_fit doc)
               if k not in ("model", "fallback", "alpha")
               and (v != defaults[k] or type(v) is not type(defaults[k]))]
    if changed:
        raise CollectError(
            f"model='latent' does not run the copula's steps, so {', '.join(changed)} would be "
            "ignored; drop them or use model='copula'")


def _require_present(rr: RecordReports) -> None:
    """Every attribute needs a present report (as in ``_marginal_estimates``)."""
    n_present = rr.present().sum(axis=0)
    for a, npr in zip(rr.schema, n_present):
        if npr == 0:
            raise CollectError(
                f"attribute {a.name!r} has no present reports, so nothing can be estimated for "
                "it; drop it from the schema or collect reports that include it")


def _require_oracles(schema: Schema, mechs) -> None:
    for a, m in zip(schema, mechs):
        try:
            p, q = float(m.p_support), float(m.q_support)
        except Exception:
            raise CollectError(
                f"attribute {a.name!r} uses {m.name!r}, which is not a frequency oracle (no support "
                "sets); the pipeline needs GRR, subset, OUE, RAPPOR, OLH or the negative survey"
            ) from None
        if not 0 <= q < p <= 1:
            raise CollectError(f"attribute {a.name!r}: mechanism {m!r} needs 0 <= q < p <= 1")


def fit(reports, **options) -> CollectModel:
    """``CollectPipeline(**options).fit(reports)``.

    Parameters
    ----------
    reports : RecordReports or CollectedReports
        The randomized reports.
    **options
        ``CollectPipeline``'s parameters.

    Returns
    -------
    CollectModel
        The fitted model.
    """
    return CollectPipeline(**options).fit(reports)


__all__ = [
    "CollectError", "CollectModel", "CollectPipeline", "CollectWarning", "ESTIMATORS", "FitReport",
    "MODELS", "SHRINK", "fit", "unpack",
]
