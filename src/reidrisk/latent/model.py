"""Latent class model: a mixture of K products of categorical distributions.

p(x) = sum_h w_h prod_a theta_{h,a}[x_a]  (Manrique-Vallier & Reiter, JASA 2012, eq. 1; Goodman
1974 for the latent class model itself). Design: docs/design/core.md#latent-class-model.

Fitted by MAP-EM (Dempster, Laird & Rubin 1977, Section 3) with a Dirichlet prior on the class
weights and on every class's category probabilities, on raw records or on LDP reports. A report
r_a of attribute a has likelihood (M_a theta_{h,a})[r_a] = sum_x P(r_a | x) theta_{h,a}[x] under
class h, with P(r_a | x) the exact channel of its mechanism (``Mechanism.log_prob``), so the EM
needs no enumeration of the joint domain. Raw records are the identity channel; a missing value
(or an attribute not asked) is left out of the likelihood.

Vectorization. Each attribute's reports are mapped to distinct-report ids with a likelihood table
L_a (distinct reports x f_a); records are grouped into distinct id patterns with counts c_p. With
O (patterns x T) the one-hot encoding of the patterns' distinct reports, one EM step is two sparse
products: the E-step's log joint O @ log(L theta^T) and the M-step's O^T @ R, folded back through
each channel: the expected counts of class h and value x are
theta_{h,a}[x] * sum_j S_a[j, h] L_a[j, x] / (L_a theta_a^T)[j, h]. No loop over records or cells.

Objective (maximized, never decreases across EM steps):
    sum_p c_p log sum_h w_h prod_a (L_a theta_{h,a})[id_pa]
    + alpha_w sum_h log w_h + sum_{h,a,x} beta_a log theta_{h,a}[x],
i.e. the log posterior under w ~ Dirichlet(1 + alpha_w), theta_{h,a} ~ Dirichlet(1 + beta_a).
``weight_prior`` = 1 pseudo-record per class, ``category_prior`` = 1 per class and attribute
spread evenly over its categories (beta_a = 1 / f_a); ``category_prior=0`` removes the pull toward
uniform that dominates strongly randomized reports.

Fitting path: ``_START_ITER`` EM steps per random start; each candidate K and the final fit stop
when one step gains less than ``tol`` per record, at most ``max_iter`` steps, on the one EM engine
(``_EM``, rule ``("gain", tol)``); ``accelerate=True`` runs SQUAREM to the engine's ``"noise"``
rule instead. Why the plain path is the default: docs/design/core.md#latent-class-fitting-path.

Choice of K (``n_classes="auto"``): held-out log-likelihood on a random 80 / 20 split, K over
``K_GRID`` (at least ``MIN_RECORDS_PER_CLASS`` training records per class), best of ``n_starts``
starts, stopping after two K without improvement; the chosen K is refitted on all records from its
training fit, on a subsample of ``SELECTION_SAMPLE`` records above that size.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from reidrisk import __version__
from reidrisk.data.io import atomic_write
from reidrisk.errors import ReidriskError
from reidrisk.estimation import em as em_engine
from reidrisk.mechanisms.base import MechanismError, as_generator, check_integer
from reidrisk.mechanisms.record import RecordReports
from reidrisk.schema import MISSING, Schema, SchemaError

LATENT_FORMAT = "reidrisk-latent-model"
LATENT_VERSION = 1

K_GRID: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)
"""Candidate numbers of classes for ``n_classes="auto"``."""
MIN_RECORDS_PER_CLASS = 50
SELECTION_SAMPLE = 20_000
HOLDOUT_SHARE = 0.2
_START_ITER = 10  # EM steps of every random start before the best one is continued
_SELECT_ITER = 100  # EM steps of each candidate K after its start (selection only)


def logsumexp(a: np.ndarray, axis: int = 1, keepdims: bool = False) -> np.ndarray:
    """log sum exp along ``axis`` (max-shifted).

    Parameters
    ----------
    a : numpy.ndarray
        The values.
    axis : int
        The axis summed over (default 1).
    keepdims : bool
        Keep the summed axis with length 1.

    Returns
    -------
    numpy.ndarray
        ``log(sum(exp(a), axis))``: ``a``'s shape without ``axis`` (with it as length 1 when
        ``keepdims``).
    """
    mx = a.max(axis=axis, keepdims=True)
    out = np.log(np.exp(a - mx).sum(axis=axis, keepdims=True)) + mx
    return out if keepdims else np.squeeze(out, axis=axis)


class LatentError(ReidriskError, ValueError):
    """Bad input to the latent class model. The message names the parameter/attribute and the fix."""


# ---------------------------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LatentFit:
    """How a latent class model was fitted.

    Parameters
    ----------
    n_classes : int
        K.
    objective : float
        Final MAP objective (log posterior up to constants).
    loglik : float
        Its log-likelihood part.
    bic : float
        -2 loglik + n_params log n.
    n_params : int
        Free parameters.
    n_records : int
        Records (or reports) fitted.
    n_patterns : int
        Distinct report patterns among them (each fitted once, weighted by its count).
    n_iter : int
        EM steps of the final fit.
    converged : bool
        The objective gain per record fell below ``tol``.
    selection : tuple
        ((K, held-out log-likelihood per record), ...) when K was chosen, else ().
    seconds : float
        Fitting time.
    """

    n_classes: int
    objective: float
    loglik: float
    bic: float
    n_params: int
    n_records: int
    n_patterns: int
    n_iter: int
    converged: bool
    selection: tuple
    seconds: float

    def to_dict(self) -> dict:
        """The fit's fields as a JSON-ready dict (the ``"fit"`` object of a model file).

        Returns
        -------
        dict
            One entry per field; ``selection`` as a list of ``[K, score]`` lists.
        """
        d = dict(self.__dict__)
        d["selection"] = [list(s) for s in self.selection]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> LatentFit:
        """The fit written by ``to_dict``.

        Parameters
        ----------
        d : dict
            One entry per field of ``LatentFit`` (``selection`` optional, default none); not
            modified.

        Returns
        -------
        LatentFit
            The fit, ``selection`` back as a tuple of ``(K, score)`` tuples.

        Raises
        ------
        TypeError
            ``d`` lacks a field or has one ``LatentFit`` does not know.
        """
        d = dict(d)
        d["selection"] = tuple(tuple(s) for s in d.get("selection", ()))
        return cls(**d)


# ---------------------------------------------------------------------------------------------
# data: distinct reports per attribute, distinct patterns of them
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Data:
    ids: np.ndarray  # (P, g) distinct report id per attribute, -1 for missing
    counts: np.ndarray  # (P,) records per pattern
    L: tuple  # per attribute (n_ids_a, f_a): likelihood of each distinct report
    n: float


def _source_columns(src, schema: Schema):
    """Per attribute: (ids (n,), L (n_ids, f)) with ids = -1 for missing."""
    out = []
    if isinstance(src, RecordReports):
        if list(src.schema.sizes) != list(schema.sizes):
            raise LatentError("the reports' schema does not match the model's schema (domain sizes differ)")
        for a, (m, rep) in enumerate(zip(src.mechanisms, src.reports)):
            rep = np.asarray(rep)
            miss = np.asarray(m.is_missing(rep))
            if rep.ndim == 1:
                uniq, inv = np.unique(rep[~miss], return_inverse=True)
            else:
                uniq, inv = np.unique(rep[~miss], axis=0, return_inverse=True)
            ids = np.full(rep.shape[0], -1, dtype=np.int64)
            ids[~miss] = inv.ravel()
            lp = np.asarray(m.log_prob(uniq), dtype=np.float64).reshape(len(uniq), schema.sizes[a])
            L = np.exp(lp - lp.max(axis=1, keepdims=True)) if len(uniq) else np.zeros((0, schema.sizes[a]))
            out.append((ids, L))
        return out, src.n
    codes = np.asarray(src)
    if codes.ndim != 2 or codes.shape[1] != len(schema):
        raise LatentError(
            f"records must be an encoded (n, {len(schema)}) array (one column per attribute), "
            f"got shape {codes.shape}"
        )
    try:
        codes = schema.validate_codes(codes)
    except SchemaError as exc:
        raise LatentError(f"records: {exc}") from None
    for a, f in enumerate(schema.sizes):
        out.append((codes[:, a].astype(np.int64), np.eye(int(f))))
    return out, codes.shape[0]


def _prepare(sources: Sequence, schema: Schema) -> _Data:
    g = len(schema)
    per_attr_ids: list[list[np.ndarray]] = [[] for _ in range(g)]
    per_attr_L: list[list[np.ndarray]] = [[] for _ in range(g)]
    offsets = np.zeros(g, dtype=np.int64)
    n_total = 0
    for src in sources:
        cols, n = _source_columns(src, schema)
        for a, (ids, L) in enumerate(cols):
            per_attr_ids[a].append(np.where(ids >= 0, ids + offsets[a], -1))
            per_attr_L[a].append(L)
            offsets[a] += L.shape[0]
        n_total += n
    if n_total == 0:
        raise LatentError("no records to fit; pass at least one record or report")
    ids = np.empty((n_total, g), dtype=np.int64)
    Ls = []
    for a in range(g):
        col = np.concatenate(per_attr_ids[a])
        L = np.vstack(per_attr_L[a])
        ids[:, a] = np.where(col >= 0, col, L.shape[0])  # missing: one id past the reports
        Ls.append(L)
    # distinct patterns: a mixed-radix key, recompressed before it could overflow
    key = np.zeros(n_total, dtype=np.int64)
    span = 1
    for a in range(g):
        base = Ls[a].shape[0] + 1
        if span * base >= 2**62:
            _, key = np.unique(key, return_inverse=True)
            key = key.ravel().astype(np.int64)
            span = int(key.max()) + 1
        key = key * base + ids[:, a]
        span *= base
    _, first, cnt = np.unique(key, return_index=True, return_counts=True)
    pid = ids[first]
    for a in range(g):
        pid[pid[:, a] == Ls[a].shape[0], a] = -1
    return _Data(pid, cnt.astype(np.float64), tuple(Ls), float(n_total))


def _subset(data: _Data, weights: np.ndarray) -> _Data:
    keep = weights > 0
    return _Data(data.ids[keep], weights[keep], data.L, float(weights.sum()))


# ---------------------------------------------------------------------------------------------
# EM: the MAP-EM map as a problem of the one EM engine
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _EStep:
    objective: float  # MAP objective (log posterior up to constants)
    loglik: float  # its log-likelihood part
    R: np.ndarray  # (P, K) responsibilities times the pattern counts
    probs: list  # the normalized class probabilities it was computed at (K, f_a) ...
    tables: np.ndarray  # ... and their (T, K) table of L_a theta_a^T, for the M-step


class _EM:
    """MAP-EM of the latent class model on grouped patterns, written as a problem of
    ``reidrisk.estimation.em`` (one problem, batch axis of length 1), which ``run`` hands to the
    engine: plain steps under its ``("gain", tol)`` rule, or SQUAREM with ``accelerate``.

    Parameters ``theta`` (1, K (1 + sum_a f_a)): the class weights, then each attribute's (K, f_a)
    class probabilities, row-major; every block is renormalized on use (an extrapolated point sums
    to one only up to rounding). ``forward(theta)`` is the E-step: ``mu`` is a (1,) object array
    holding an ``_EStep`` (objective, its log-likelihood part, the responsibilities times the
    pattern counts (P, K)); the engine only selects and indexes ``mu``, so R is never copied.
    ``update(theta, mu)`` is the M-step; ``gain`` the objective's gain (the engine's deviance is
    twice it). The two sparse products of a step: module doc, "Vectorization".
    """

    def __init__(self, data: _Data, sizes: np.ndarray, weight_prior: float, category_prior: float):
        self.d = data
        self.sizes = [int(f) for f in sizes]
        self.aw = float(weight_prior)
        self.beta = [category_prior / float(f) for f in self.sizes]
        self.width = 1 + sum(self.sizes)  # parameters per class
        n_ids = np.array([L.shape[0] for L in data.L], dtype=np.int64)
        self.rows = np.concatenate([[0], np.cumsum(n_ids)])  # attribute a: rows[a]:rows[a+1] of T
        P, g = data.ids.shape
        present = data.ids >= 0
        cols = (data.ids + self.rows[:-1])[present]  # row-major: each pattern's columns ascending
        indptr = np.concatenate([[0], np.cumsum(present.sum(axis=1))])
        self.O = sp.csr_matrix((np.ones(cols.size), cols, indptr), shape=(P, int(self.rows[-1])))
        self.OT = self.O.T  # CSC: the M-step's product streams over the patterns once
        self.total = np.array([data.n])
        self.dof = np.array([1.0])

    # ---- parameter layout --------------------------------------------------------------------
    def n_classes(self, theta: np.ndarray) -> int:
        return theta.shape[-1] // self.width

    @staticmethod
    def pack(w: np.ndarray, probs: Sequence[np.ndarray]) -> np.ndarray:
        return np.concatenate([np.asarray(w, dtype=np.float64).ravel()] + [np.ravel(t) for t in probs])[None]

    def unpack(self, theta: np.ndarray):
        """(w (K,), [theta_a (K, f_a)]), every block normalized."""
        v = theta.reshape(-1)
        K = v.size // self.width
        w = v[:K] / v[:K].sum()
        probs, at = [], K
        for f in self.sizes:
            t = v[at:at + K * f].reshape(K, f)
            probs.append(t / t.sum(axis=1, keepdims=True))
            at += K * f
        return w, probs

    def set_classes(self, K: int) -> None:
        self.dof = np.array([float(K - 1 + K * sum(f - 1 for f in self.sizes))])

    # ---- the engine's problem protocol -----------------------------------------------------------
    def _tables(self, probs):
        """L_a theta_a^T of every attribute stacked (T, K), floored at 1e-300."""
        K = probs[0].shape[0]
        if not self.d.L or self.rows[-1] == 0:
            return np.zeros((0, K))
        return np.maximum(np.vstack([L @ t.T for L, t in zip(self.d.L, probs)]), 1e-300)

    def prior(self, w, probs) -> float:
        return self.aw * float(np.log(np.maximum(w, 1e-300)).sum()) + sum(
            b * float(np.log(np.maximum(t, 1e-300)).sum()) for b, t in zip(self.beta, probs))

    def forward(self, theta):
        w, probs = self.unpack(theta)
        tables = self._tables(probs)
        ll = self.O @ np.log(tables)  # (P, K) log prod_a (L_a theta_{h,a})[r_a]
        ll += np.log(np.maximum(w, 1e-300))
        K = w.size
        mx = ll[:, 0].copy()  # row maxima by a loop over the K classes (a reduction over a short
        for k in range(1, K):  # last axis is slow in NumPy), vectorized over the patterns
            np.maximum(mx, ll[:, k], out=mx)
        ll -= mx[:, None]
        np.exp(ll, out=ll)
        s = ll @ np.ones(K)
        lik = float(self.d.counts @ (np.log(s) + mx))
        ll *= (self.d.counts / s)[:, None]  # responsibilities times the pattern counts
        mu = np.empty(1, dtype=object)  # the engine only selects and indexes mu: no copy of R
        mu[0] = _EStep(lik + self.prior(w, probs), lik, ll, probs, tables)
        return mu

    def update(self, theta, mu):
        e = mu[0]  # the engine passes mu = forward(theta): its parameters and tables are theta's
        R, probs = e.R, e.probs
        nw = np.ones(R.shape[0]) @ R + self.aw
        S = self.OT @ R  # (T, K): responsibilities summed per distinct report
        S /= e.tables
        out = [nw / nw.sum()]
        for a, (L, t) in enumerate(zip(self.d.L, probs)):
            cnt = t * (S[self.rows[a]:self.rows[a + 1]].T @ L) + self.beta[a]  # (K, f) expected counts
            out.append(cnt / cnt.sum(axis=1, keepdims=True))
        return self.pack(out[0], out[1:])

    def gain(self, mu_old, mu_new):
        return np.array([mu_new[0].objective - mu_old[0].objective])

    def take(self, keep):
        return self

    # ---- runs ---------------------------------------------------------------------------------
    def run(self, theta, max_iter: int, tol: float, trace: list | None = None, accelerate: bool = False,
            on_step: Callable[[int], None] | None = None):
        """MAP-EM from ``theta`` by the one EM engine. Returns (theta, objective, log-likelihood,
        EM steps, converged).

        Plain (default): the engine's ``("gain", tol)`` rule, EM steps until one gains less than
        ``tol`` per record (``tol = 0``: exactly ``max_iter`` steps, unless the objective falls);
        the fit is that step's iterate. ``accelerate``: SQUAREM by the engine to its ``"noise"``
        rule (``tol = 0``: exactly ``max_iter`` EM steps). ``trace`` receives the objective at
        the start and after every EM step (with ``accelerate``, after every accepted plain step
        or SQUAREM cycle); its last entry is the returned objective. ``on_step(t)`` is called
        after every such step or cycle, ``t`` counting them."""
        self.set_classes(self.n_classes(theta))
        last: dict = {"t": -1}  # the latest means seen, and the steps or cycles since the start

        def seen(idx, th, mu):
            last["mu"], last["t"] = mu, last["t"] + 1
            if trace is not None:
                trace.append(mu[0].objective)
            if on_step is not None and last["t"]:
                on_step(last["t"])

        if accelerate:
            stop: Any = "noise" if tol > 0 else None
        else:
            stop = ("gain", tol)
        res = em_engine.run(self, theta, stop=stop, max_iter=max_iter, accelerate=accelerate,
                            callback=seen)
        e = last["mu"][0]  # the means of the returned iterate (the callback sees every accepted one)
        return (res.estimate, e.objective, e.loglik, int(np.asarray(res.iterations)[0]),
                bool(np.asarray(res.converged)[0]))

    def start(self, K: int, gen: np.random.Generator):
        """A random start: weights ~ Dirichlet(1), class probabilities = the pooled distribution of
        the reports' likelihood rows times Gamma(1) noise."""
        w = gen.dirichlet(np.ones(K))
        if not hasattr(self, "_bases"):
            self._bases = []
            for a, L in enumerate(self.d.L):
                # pooled likelihood rows of the distinct reports, weighted by their records
                ids = self.d.ids[:, a]
                ok = ids >= 0
                n_id = np.bincount(ids[ok], weights=self.d.counts[ok], minlength=L.shape[0])
                Lr = L / np.maximum(L.sum(axis=1, keepdims=True), 1e-300)
                base = n_id @ Lr if n_id.sum() > 0 else np.ones(L.shape[1])
                self._bases.append(base / base.sum() + 1.0 / L.shape[1])
        probs = []
        for base in self._bases:
            t = base[None, :] * gen.gamma(1.0, size=(K, base.size)) + 1e-3
            probs.append(t / t.sum(axis=1, keepdims=True))
        return self.pack(w, probs)

    def loglik(self, theta) -> float:
        """The log-likelihood of this data at ``theta`` (held-out scoring)."""
        return self.forward(theta)[0].loglik


def _split(em: _EM, theta, K: int, gen: np.random.Generator):
    """K classes from a fit with fewer: the heaviest classes are copied with Gamma(20)-perturbed
    probabilities (coefficient of variation 0.22) and their weights halved."""
    w, probs = em.unpack(theta)
    k0 = w.size
    src = np.argsort(-w)[np.arange(K - k0) % k0]
    w_new = np.concatenate([w, np.zeros(K - k0)])
    for i, c in enumerate(src):
        w_new[k0 + i] = w_new[c] / 2.0
        w_new[c] /= 2.0
    out = []
    for t in probs:
        t2 = np.vstack([t, t[src]]) * gen.gamma(20.0, 1.0 / 20.0, size=(K, t.shape[1]))
        out.append(t2 / t2.sum(axis=1, keepdims=True))
    return em.pack(w_new / w_new.sum(), out)


# ---------------------------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------------------------
_TABLE_AXES = "abcdefghijlmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
"""One einsum axis per attribute of ``LatentClassModel.table``; "k" indexes the classes."""


class LatentClassModel:
    """Mixture of K products of categorical distributions over a schema's attributes.

    Parameters
    ----------
    n_classes : int, "auto" or sequence of int
        K; "auto" chooses it by held-out log-likelihood over ``K_GRID`` (see the module
        docstring); a sequence gives the candidate K.
    weight_prior : float
        Dirichlet prior strength (>= 0) on the class weights, in pseudo-records per class
        (``alpha_w`` of the objective, module doc); MAP-EM.
    category_prior : float
        Dirichlet prior strength (>= 0) on each class's category probabilities, in
        pseudo-records per class and attribute spread evenly over the attribute's categories
        (``beta_a = category_prior / f_a``); 0 removes its pull toward uniform.
    n_starts : int
        Random starts per K (each run ``_START_ITER`` steps, the best is continued).
    max_iter : int
        EM step limit.
    tol : float
        Stop when the objective gains less than ``tol`` per record in one EM step (an early stop
        along the plain EM path; see "Fitting path" in the module doc).
    accelerate : bool
        Run every fit to the fixed point instead, SQUAREM-accelerated by
        ``reidrisk.estimation.em`` under its ``"noise"`` rule (``tol = 0``: exactly ``max_iter``
        EM steps); not the default, see the module doc for what it changes.
    rng : numpy.random.Generator or int
        Seed or Generator of the starts and the held-out split (default 0).

    Raises
    ------
    LatentError
        A setting out of its range (named with its value and the fix): checked here and again
        by ``fit``.

    Attributes
    ----------
    schema_ : Schema
        The schema fitted on.
    weights_ : numpy.ndarray
        (K,) class weights.
    probs_ : tuple of numpy.ndarray
        Per attribute, the (K, f_a) class probabilities of its values.
    fit_ : LatentFit
        How the model was fitted.
    trace_ : numpy.ndarray
        The objective at the start and after every EM step of the final fit (with
        ``accelerate``, after every accepted plain step or SQUAREM cycle); its last entry is
        ``fit_.objective``.
    """

    # set by fit
    schema_: Schema
    weights_: np.ndarray
    probs_: tuple[np.ndarray, ...]

    def __init__(self, n_classes: int | str | Sequence[int] = "auto", *, weight_prior: float = 1.0,
                 category_prior: float = 1.0, n_starts: int = 3, max_iter: int = 200,
                 tol: float = 1e-5, accelerate: bool = False,
                 rng: np.random.Generator | int | None = 0) -> None:
        self.n_classes: Any = n_classes  # an int, 'auto' or a list of ints (checked below)
        self.weight_prior = weight_prior
        self.category_prior = category_prior
        self.n_starts = n_starts
        self.max_iter = max_iter
        self.tol = tol
        self.accelerate = accelerate
        self.rng = rng
        self._check_settings()

    def _check_settings(self) -> None:
        """Check the settings (at construction and again at ``fit``, in case one was set since)
        and normalize them; ``LatentError`` naming the parameter, its value and the fix."""
        k = self.n_classes
        if isinstance(k, str):
            if k != "auto":
                raise LatentError(f"n_classes must be 'auto', a whole number >= 1 or a list of "
                                  f"them, got {k!r}; pass e.g. n_classes=4 or n_classes='auto'")
        else:
            many = np.ndim(k) > 0
            ks = list(k) if many else [k]
            try:
                ks = [check_integer(v, "n_classes", 1) for v in ks]
            except MechanismError:
                ks = []
            if not ks:
                raise LatentError(f"n_classes must be 'auto', a whole number >= 1 or a list of "
                                  f"them, got {k!r}; pass e.g. n_classes=4 or n_classes='auto'")
            self.n_classes = ks if many else ks[0]
        for name in ("weight_prior", "category_prior"):
            v = getattr(self, name)
            if isinstance(v, (bool, np.bool_, str)) or not isinstance(v, (int, float, np.number)) \
                    or not (math.isfinite(v) and v >= 0):
                raise LatentError(f"{name} must be a finite number >= 0 (pseudo-records per "
                                  f"class), got {v!r}; the default is 1.0")
            setattr(self, name, float(v))
        try:
            self.n_starts = check_integer(self.n_starts, "n_starts", 1)
        except MechanismError as exc:
            raise LatentError(f"{exc}; pass a whole number of random starts per K, such as 3 "
                              "(the default)") from None
        try:
            self.max_iter = em_engine.check_max_iter(self.max_iter)
        except em_engine.EstimationError as exc:
            raise LatentError(f"{exc}; the default is 200") from None
        try:  # the tolerance of the engine's ("gain", tol) rule, checked by the engine's parser
            self.tol = em_engine.parse_stop(("gain", self.tol)).threshold
        except em_engine.EstimationError:
            raise LatentError(f"tol must be a finite number >= 0 (the least objective gain per "
                              f"record of one EM step; 0 runs max_iter steps), got {self.tol!r}; "
                              "the default is 1e-5") from None
        if not isinstance(self.accelerate, (bool, np.bool_)):
            raise LatentError(f"accelerate must be True or False, got {self.accelerate!r}")
        self.accelerate = bool(self.accelerate)

    # ---- fitting -------------------------------------------------------------------------------
    def fit(self, data, schema: Schema | None = None, init: LatentClassModel | None = None,
            progress: Callable[[str, bool], None] | None = None) -> LatentClassModel:
        """Fit on raw records, on randomized reports, or on a list of them (pooled).

        Parameters
        ----------
        data : numpy.ndarray, RecordReports or list of them
            Raw records (encoded (n, g) array, ``MISSING`` skipped), ``RecordReports`` (any
            registered mechanism, through its exact channel), or a list of them (every source
            must share the schema).
        schema : Schema, optional
            Required for raw records.
        init : LatentClassModel, optional
            A fitted model to start from (its K; no random starts, no selection).
        progress : callable, optional
            ``progress(note, done)``, for a progress display of long fits: called with a
            one-line ``note`` and ``done=False`` after each candidate K of the selection is
            scored and after every EM step of the final fit, and once with ``done=True`` when
            the fit is over (a function call per EM step: no cost beside the step).

        Returns
        -------
        LatentClassModel
            This model, fitted: ``schema_``, ``weights_``, ``probs_``, ``trace_`` and ``fit_``
            set.

        Raises
        ------
        LatentError
            No data; raw records without ``schema`` or not an encoded (n, g) array of the
            schema's codes; reports or ``init`` whose schema's domain sizes differ from
            ``schema``'s; a setting out of its range (as at construction); a ``progress`` that
            is not callable (before any work).
        """
        t0 = time.perf_counter()
        self._check_settings()
        if progress is not None and not callable(progress):
            raise LatentError(f"progress must be a function progress(note, done) or None, got "
                              f"{progress!r}")
        sources = list(data) if isinstance(data, (list, tuple)) else [data]
        if not sources:
            raise LatentError("no data given; pass raw records or RecordReports")
        if schema is None:
            found = [s.schema for s in sources if isinstance(s, RecordReports)]
            if not found:
                raise LatentError("raw records need the schema: fit(records, schema=schema)")
            schema = found[0]
        sizes = np.asarray(schema.sizes, dtype=np.int64)
        gen = as_generator(self.rng)
        full = _prepare(sources, schema)
        if init is not None:
            init._check_fitted()
            if list(init.schema_.sizes) != list(schema.sizes):
                raise LatentError("init: the starting model's schema does not match the data's")
            K = init.n_classes_
            state = _EM.pack(init.weights_, init.probs_)
            selection = ()
        elif isinstance(self.n_classes, str) or np.ndim(self.n_classes) > 0:
            grid = list(K_GRID) if isinstance(self.n_classes, str) else sorted(int(k) for k in self.n_classes)
            K, state, selection = self._select(full, sizes, grid, gen, progress)
        else:
            K, state, selection = int(self.n_classes), None, ()
        em = _EM(full, sizes, self.weight_prior, self.category_prior)
        if state is None:
            state = self._best_start(em, K, gen)
        trace: list[float] = []
        on_step = None
        if progress is not None:
            def on_step(t: int) -> None:
                progress(f"K = {K} on all {int(full.n):,} records: EM step {t}", False)
        state, obj, lik, it, conv = em.run(state, self.max_iter, self.tol, trace, self.accelerate,
                                           on_step)
        if progress is not None:
            progress(f"K = {K}: {it} EM steps", True)
        w, theta = em.unpack(state)
        n_params = int(K - 1 + K * int((sizes - 1).sum()))
        self.schema_ = schema
        self.weights_ = w
        self.probs_ = tuple(theta)
        self.trace_ = np.asarray(trace)
        self.fit_ = LatentFit(K, obj, lik, -2.0 * lik + n_params * math.log(full.n), n_params,
                              int(full.n), int(full.ids.shape[0]), it, conv, tuple(selection),
                              time.perf_counter() - t0)
        return self

    def _best_start(self, em: _EM, K: int, gen, previous=None):
        """Best of ``n_starts`` starts after ``_START_ITER`` steps each; with a fit of fewer classes
        (``previous``), one of the starts splits its heaviest classes (perturbed copies)."""
        best, best_obj = None, -np.inf
        starts = [em.start(K, gen) for _ in range(self.n_starts if K > 1 else 1)]
        if previous is not None and K > 1:
            starts[0] = _split(em, previous, K, gen)
        for st0 in starts:
            st, obj, _, _, _ = em.run(st0, _START_ITER, 0.0, accelerate=self.accelerate)
            if obj > best_obj:
                best, best_obj = st, obj
        return best

    def _select(self, full: _Data, sizes, grid, gen, progress=None):
        counts = full.counts
        if full.n > SELECTION_SAMPLE:  # choose K on a subsample of records
            counts = gen.multivariate_hypergeometric(counts.astype(np.int64), SELECTION_SAMPLE).astype(np.float64)
        test = gen.binomial(counts.astype(np.int64), HOLDOUT_SHARE).astype(np.float64)
        train = _subset(full, counts - test)
        hold = _subset(full, test)
        em = _EM(train, sizes, self.weight_prior, self.category_prior)
        hold_em = _EM(hold, sizes, self.weight_prior, self.category_prior)
        cap = max(1, int(train.n // MIN_RECORDS_PER_CLASS))
        grid = [k for k in grid if k <= cap] or [1]
        results, best, best_score, worse = [], None, -np.inf, 0
        prev = None
        for K in grid:
            st = self._best_start(em, K, gen, prev)
            st, _, _, _, _ = em.run(st, min(self.max_iter, _SELECT_ITER), self.tol, accelerate=self.accelerate)
            score = hold_em.loglik(st) / max(hold.n, 1.0)
            results.append((K, score))
            if progress is not None:
                progress(f"choosing K: K = {K} scores {score:.4f} per held-out record", False)
            prev = st
            if score > best_score:
                best, best_score, worse = (K, st), score, 0
            else:
                worse += 1
                if worse >= 2:
                    break
        assert best is not None  # the grid is not empty
        return best[0], best[1], results

    # ---- using the model -----------------------------------------------------------------------
    def _check_fitted(self) -> None:
        if not hasattr(self, "weights_"):
            raise LatentError("this LatentClassModel is not fitted; call fit(data) first")

    @property
    def n_classes_(self) -> int:
        """K, the number of classes of the fitted model (``LatentError`` if not fitted)."""
        self._check_fitted()
        return int(self.weights_.size)

    def _records(self, records) -> np.ndarray:
        rec = np.asarray(records)
        g = len(self.schema_)
        if rec.ndim == 1 and rec.size == g:
            rec = rec[None, :]
        if rec.ndim != 2 or rec.shape[1] != g:
            raise LatentError(f"records must be an encoded (r, {g}) array, got shape {rec.shape}")
        try:
            return self.schema_.validate_codes(rec).astype(np.int64)
        except SchemaError as exc:
            raise LatentError(f"records: {exc}") from None

    def log_prob(self, records) -> np.ndarray:
        """log p(x) of each record (r,); a ``MISSING`` value is marginalized out.

        Parameters
        ----------
        records : numpy.ndarray (r, g)
            Encoded records (one record may be given as a (g,) array).

        Returns
        -------
        numpy.ndarray
            (r,) natural-log probabilities of the records under the fitted mixture.

        Raises
        ------
        LatentError
            The model is not fitted, or ``records`` is not an encoded (r, g) array of the
            schema's codes.
        """
        self._check_fitted()
        rec = self._records(records)
        ll = np.broadcast_to(np.log(self.weights_), (rec.shape[0], self.weights_.size)).copy()
        for a, t in enumerate(self.probs_):
            lt = np.log(np.vstack([t.T, np.ones((1, t.shape[0]))]))  # last row: missing
            col = np.where(rec[:, a] == MISSING, t.shape[1], rec[:, a])
            ll += lt[col]
        return logsumexp(ll, axis=1)

    def prob(self, records) -> np.ndarray:
        """p(x) of each record (r,).

        Parameters
        ----------
        records : numpy.ndarray (r, g)
            Encoded records, as in ``log_prob``.

        Returns
        -------
        numpy.ndarray
            (r,) probabilities, ``exp(log_prob(records))``.
        """
        return np.exp(self.log_prob(records))

    def table(self, cols: Sequence[int | str]) -> np.ndarray:
        """The c-way table of the attributes ``cols`` (exact: sum_h w_h outer(theta_{h,a})).

        Parameters
        ----------
        cols : sequence of int or str
            Indices or names of the attributes, in the table's axis order.

        Returns
        -------
        numpy.ndarray
            (f_a1, ..., f_ac) joint probabilities of the attributes' values (sums to one).

        Raises
        ------
        LatentError
            The model is not fitted, an attribute is unknown or out of range, or ``cols`` is
            empty, repeats an attribute or names more than 51 (a table of at least 2^51 cells).
        """
        self._check_fitted()
        idx = []
        for c in cols:
            if isinstance(c, str):
                try:
                    idx.append(self.schema_.index(c))
                except Exception:
                    raise LatentError(f"unknown attribute {c!r}; the schema has {self.schema_.names}") from None
            else:
                if not 0 <= int(c) < len(self.schema_):
                    raise LatentError(f"attribute index {c} is outside 0..{len(self.schema_) - 1}")
                idx.append(int(c))
        if not idx or len(set(idx)) != len(idx):
            raise LatentError(f"cols must name distinct attributes, got {list(cols)!r}")
        if len(idx) > len(_TABLE_AXES):
            raise LatentError(f"a table of {len(idx)} attributes has one einsum axis each, at most "
                              f"{len(_TABLE_AXES)}; ask for fewer attributes")
        ax = _TABLE_AXES[:len(idx)]
        spec = ",".join(["k"] + [f"k{x}" for x in ax]) + "->" + ax
        return np.einsum(spec, self.weights_, *[self.probs_[a] for a in idx], optimize=True)

    def sample(self, n: int, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """n records (n, g) drawn from the mixture.

        Parameters
        ----------
        n : int
            Number of records (>= 0).
        rng : numpy.random.Generator or int, optional
            Generator or seed (``None``: a fresh cryptographic generator).

        Returns
        -------
        numpy.ndarray
            (n, g) int64 codes, one record a row (no ``MISSING``).

        Raises
        ------
        LatentError
            The model is not fitted, or ``n`` is not a whole number >= 0.
        """
        self._check_fitted()
        if int(n) != n or n < 0:
            raise LatentError(f"n must be a whole number >= 0, got {n!r}")
        gen = as_generator(rng)
        h = gen.choice(self.weights_.size, size=int(n), p=self.weights_ / self.weights_.sum())
        out = np.empty((int(n), len(self.probs_)), dtype=np.int64)
        order = np.argsort(h, kind="stable")
        bounds = np.searchsorted(h[order], np.arange(self.weights_.size + 1))
        for a, t in enumerate(self.probs_):
            cum = np.cumsum(t, axis=1)
            cum[:, -1] = 1.0
            u = gen.random(int(n))
            res = np.empty(int(n), dtype=np.int64)
            for k in range(t.shape[0]):  # inverse CDF; loop over classes, vectorized over records
                rows = order[bounds[k]:bounds[k + 1]]
                res[rows] = np.searchsorted(cum[k], u[rows], side="right")
            out[:, a] = np.minimum(res, t.shape[1] - 1)
        return out

    # ---- files ---------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The versioned JSON object (format ``reidrisk-latent-model``, version 1).

        Returns
        -------
        dict
            ``format``, ``version``, the writing ``reidrisk`` version, the ``schema``, the class
            ``weights`` and ``probs`` as lists, the ``fit`` (``LatentFit.to_dict``) and the
            constructor ``settings``.

        Raises
        ------
        LatentError
            The model is not fitted.
        """
        self._check_fitted()
        return {
            "format": LATENT_FORMAT, "version": LATENT_VERSION, "reidrisk": __version__,
            "schema": self.schema_.to_dict(),
            "weights": [float(x) for x in self.weights_],
            "probs": [[[float(x) for x in row] for row in t] for t in self.probs_],
            "fit": self.fit_.to_dict(),
            "settings": {"weight_prior": self.weight_prior, "category_prior": self.category_prior,
                         "n_starts": self.n_starts, "max_iter": self.max_iter, "tol": self.tol,
                         "accelerate": self.accelerate},
        }

    @classmethod
    def from_dict(cls, d: dict, source: str = "model") -> LatentClassModel:
        """A fitted model from the object ``to_dict`` writes.

        Parameters
        ----------
        d : dict
            A ``reidrisk-latent-model`` object, version 1.
        source : str
            Where ``d`` came from (a file name), the prefix of every error message.

        Returns
        -------
        LatentClassModel
            The model, fitted, with its settings; ``trace_`` is empty (not saved).

        Raises
        ------
        LatentError
            ``d`` is not of that format or version, is malformed, or its class probabilities do
            not match the schema's domain sizes.
        """
        if not isinstance(d, dict) or d.get("format") != LATENT_FORMAT:
            found = d.get("format") if isinstance(d, dict) else type(d).__name__
            raise LatentError(f"{source}: not a latent class model file (format {found!r}, expected {LATENT_FORMAT!r})")
        if d.get("version") != LATENT_VERSION:
            raise LatentError(f"{source}: latent model version {d.get('version')!r} is not supported "
                              f"(this reidrisk reads version {LATENT_VERSION})")
        try:
            m = cls(d["fit"]["n_classes"], **d.get("settings", {}))
            m.schema_ = Schema.from_dict(d["schema"])
            m.weights_ = np.asarray(d["weights"], dtype=np.float64)
            m.probs_ = tuple(np.asarray(t, dtype=np.float64) for t in d["probs"])
            m.fit_ = LatentFit.from_dict(d["fit"])
        except (KeyError, TypeError, ValueError) as exc:
            raise LatentError(f"{source}: malformed latent model file ({exc})") from None
        if len(m.probs_) != len(m.schema_) or any(
                t.shape != (m.weights_.size, int(f)) for t, f in zip(m.probs_, m.schema_.sizes)):
            raise LatentError(f"{source}: class probabilities do not match the schema's domain sizes")
        m.trace_ = np.zeros(0)
        return m

    def save(self, path: str | Path) -> Path:
        """Write the model as versioned JSON, atomically.

        Parameters
        ----------
        path : str or Path
            The target file (replaced if it exists).

        Returns
        -------
        Path
            ``path``.

        Raises
        ------
        LatentError
            The model is not fitted.
        """
        path = Path(path)
        text = json.dumps(self.to_dict())
        atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
        return path

    @classmethod
    def load(cls, path: str | Path) -> LatentClassModel:
        """Read a model written by ``save``, or the one a collect model file holds.

        A collect model file (``reidrisk collect fit --model latent``,
        ``CollectPipeline(model="latent")``) keeps its latent class model under ``"latent"`` in
        this same format; that model is read.

        Parameters
        ----------
        path : str or Path
            The model file (JSON).

        Returns
        -------
        LatentClassModel
            The fitted model (``from_dict``).

        Raises
        ------
        LatentError
            No such file, not valid JSON, a collect model file of another model, or not a valid
            model object (``from_dict``).
        """
        path = Path(path)
        try:
            d = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise LatentError(f"{path}: no such file") from None
        except json.JSONDecodeError as exc:
            raise LatentError(f"{path}: not valid JSON ({exc})") from None
        if isinstance(d, dict) and d.get("format") == _COLLECT_MODEL_FORMAT:
            if not isinstance(d.get("latent"), dict):
                raise LatentError(
                    f"{path}: a collect model file of the {d.get('model', 'copula')} model, which "
                    "holds no latent class model; fit one with `reidrisk collect fit --model latent`")
            d = d["latent"]
        return cls.from_dict(d, str(path))


_COLLECT_MODEL_FORMAT = "reidrisk-collect-model"
"""``reidrisk.collect.model_io.MODEL_FORMAT`` (not imported: reidrisk.collect imports this module;
``tests/latent/test_model.py`` checks the two agree)."""


__all__ = ["K_GRID", "LATENT_FORMAT", "LATENT_VERSION", "LatentClassModel", "LatentError", "LatentFit"]
