"""Latent class model: a mixture of K products of categorical distributions.

Design: docs/design/core.md#latent-class-model.

p(x) = sum_h w_h prod_a theta_{h,a}[x_a]  (Manrique-Vallier & Reiter, JASA 2012, eq. 1: the model
behind the Bayesian disclosure-risk estimators; Goodman 1974 for the latent class model itself).

Fitted by MAP-EM (Dempster, Laird & Rubin 1977, Section 3; the MAP variant adds the log prior to
the objective) with a Dirichlet prior on the class weights and on every class's category
probabilities, on raw records or on LDP reports. A report r_a of attribute a has likelihood
(M_a theta_{h,a})[r_a] = sum_x P(r_a | x) theta_{h,a}[x] under class h, with P(r_a | x) the exact
channel of its mechanism (``Mechanism.log_prob``); a report is then a record seen through a known
channel, so the EM needs no enumeration of the joint domain. Raw records are the identity channel.
A missing value (or an attribute the client was not asked, attribute-sampled reports) is left out
of the likelihood.

Vectorization. Each attribute's reports are mapped to distinct-report ids with a likelihood table
L_a (distinct reports x f_a); the records are grouped into distinct id patterns with counts. The
E-step is a sum over attributes of lookups log (L_a theta_a^T)[id] (patterns x K); the M-step
folds the channel back: expected counts of class h and value x are
theta_{h,a}[x] * sum_p c_p R[p, h] L_a[id_p, x] / (L_a theta_a^T)[id_p, h], a sparse product.
No Python loop over records.

Objective (maximized, never decreases across EM steps):
    sum_p c_p log sum_h w_h prod_a (L_a theta_{h,a})[id_pa]
    + alpha_w sum_h log w_h + sum_{h,a,x} beta_a log theta_{h,a}[x],
i.e. the log posterior under w ~ Dirichlet(1 + alpha_w), theta_{h,a} ~ Dirichlet(1 + beta_a), up
to constants (the reports' likelihood rows are scaled by a per-report constant).

Prior strength (documented rule, not tuned to one table): ``weight_prior`` = 1 pseudo-record per
class on the weights and ``category_prior`` = 1 pseudo-record per class and attribute spread evenly
over its categories (beta_a = 1 / f_a per category): enough to keep every probability positive
and the EM away from the boundary, negligible against classes of tens of records.

Choice of K (``n_classes="auto"``): held-out log-likelihood. The records are split at random
80 / 20; K runs over ``K_GRID`` (capped so that every class has on average at least
``MIN_RECORDS_PER_CLASS`` training records); each K is fitted on the 80 % (best of ``n_starts``
random starts) and scored on the 20 %; the grid stops when the held-out likelihood has not improved
for two consecutive K. The chosen K is refitted on all records, started from its training fit.
Above ``SELECTION_SAMPLE`` (20,000) records, K is chosen on a random subsample of that size.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from reidrisk.errors import ReidriskError
from reidrisk.mechanisms.base import as_generator
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
    """log sum exp along ``axis`` (max-shifted)."""
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

    n_classes: K; objective: final MAP objective (log posterior up to constants); loglik: its
    log-likelihood part; bic: -2 loglik + n_params log n; n_params: free parameters;
    n_records, n_patterns: records and distinct report patterns fitted; n_iter: EM steps of the
    final fit; converged: the objective gain per record fell below ``tol``;
    selection: ((K, held-out log-likelihood per record), ...) when K was chosen, else ();
    seconds: fitting time.
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
        d = dict(self.__dict__)
        d["selection"] = [list(s) for s in self.selection]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> LatentFit:
        d = dict(d)
        d["selection"] = tuple(tuple(s) for s in d.get("selection", ()))
        return cls(**d)


# ---------------------------------------------------------------------------------------------
# data: distinct reports per attribute, distinct patterns of them
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Attr:
    L: np.ndarray  # (n_ids, f) likelihood of each distinct report (rows scaled to max 1)


@dataclass(frozen=True)
class _Data:
    ids: np.ndarray  # (P, g) distinct report id per attribute, n_ids_a for missing
    counts: np.ndarray  # (P,) records per pattern
    L: tuple  # per attribute (n_ids_a + 1, f_a): last row all ones (missing)
    present: np.ndarray  # (P, g) bool
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


def _prepare(sources: Sequence, schema: Schema, rows: Sequence[np.ndarray | None] | None = None) -> _Data:
    g = len(schema)
    per_attr_ids: list[list[np.ndarray]] = [[] for _ in range(g)]
    per_attr_L: list[list[np.ndarray]] = [[] for _ in range(g)]
    offsets = np.zeros(g, dtype=np.int64)
    n_total = 0
    for s_i, src in enumerate(sources):
        cols, n = _source_columns(src, schema)
        sel = None if rows is None else rows[s_i]
        for a, (ids, L) in enumerate(cols):
            if sel is not None:
                ids = ids[sel]
            per_attr_ids[a].append(np.where(ids >= 0, ids + offsets[a], -1))
            per_attr_L[a].append(L)
            offsets[a] += L.shape[0]
        n_total += n if sel is None else len(sel)
    if n_total == 0:
        raise LatentError("no records to fit; pass at least one record or report")
    ids = np.empty((n_total, g), dtype=np.int64)
    Ls = []
    for a in range(g):
        col = np.concatenate(per_attr_ids[a])
        L = np.vstack(per_attr_L[a] + [np.ones((1, int(schema.sizes[a])))])
        ids[:, a] = np.where(col >= 0, col, L.shape[0] - 1)
        Ls.append(L)
    # distinct patterns: a mixed-radix key, recompressed before it could overflow
    key = np.zeros(n_total, dtype=np.int64)
    span = 1
    for a in range(g):
        base = Ls[a].shape[0]
        if span * base >= 2**62:
            _, key = np.unique(key, return_inverse=True)
            key = key.ravel().astype(np.int64)
            span = int(key.max()) + 1
        key = key * base + ids[:, a]
        span *= base
    _, first, inv, cnt = np.unique(key, return_index=True, return_inverse=True, return_counts=True)
    pid = ids[first]
    present = np.column_stack([pid[:, a] < Ls[a].shape[0] - 1 for a in range(g)])
    return _Data(pid, cnt.astype(np.float64), tuple(Ls), present, float(n_total))


def _subset(data: _Data, weights: np.ndarray) -> _Data:
    keep = weights > 0
    return _Data(data.ids[keep], weights[keep], data.L, data.present[keep], float(weights.sum()))


# ---------------------------------------------------------------------------------------------
# EM
# ---------------------------------------------------------------------------------------------
class _EM:
    """MAP-EM on grouped patterns; state (log w (K,), theta: list of (K, f_a))."""

    def __init__(self, data: _Data, sizes: np.ndarray, weight_prior: float, category_prior: float):
        self.d = data
        self.sizes = sizes
        self.aw = float(weight_prior)
        self.beta = [category_prior / float(f) for f in sizes]
        P = data.ids.shape[0]
        self.A = [sp.csr_matrix((np.ones(P), (data.ids[:, a], np.arange(P))), shape=(data.L[a].shape[0], P))
                  for a in range(len(sizes))]

    def _loglik_terms(self, logw, theta):
        ll = np.broadcast_to(logw, (self.d.ids.shape[0], logw.size)).copy()
        Lts = []
        for a, L in enumerate(self.d.L):
            Lt = L @ theta[a].T  # (n_ids + 1, K)
            Lt = np.maximum(Lt, 1e-300)
            Lts.append(Lt)
            ll += np.take(np.log(Lt), self.d.ids[:, a], axis=0)
        return ll, Lts

    def objective(self, logw, theta, ll=None) -> tuple[float, float]:
        if ll is None:
            ll, _ = self._loglik_terms(logw, theta)
        lik = float(self.d.counts @ logsumexp(ll, axis=1))
        prior = self.aw * float(logw.sum()) + sum(b * float(np.log(np.maximum(t, 1e-300)).sum())
                                                 for b, t in zip(self.beta, theta))
        return lik + prior, lik

    def step(self, logw, theta):
        """One EM step; returns (new state, objective and log-likelihood at the *old* state)."""
        ll, Lts = self._loglik_terms(logw, theta)
        lse = logsumexp(ll, axis=1, keepdims=True)
        R = np.exp(ll - lse) * self.d.counts[:, None]  # (P, K)
        lik = float(self.d.counts @ lse[:, 0])
        prior = self.aw * float(logw.sum()) + sum(b * float(np.log(np.maximum(t, 1e-300)).sum())
                                                 for b, t in zip(self.beta, theta))
        Nk = R.sum(axis=0)
        w = Nk + self.aw
        new_logw = np.log(w / w.sum())
        new_theta = []
        for a, L in enumerate(self.d.L):
            S = self.A[a] @ R  # (n_ids + 1, K): responsibilities summed per distinct report
            S = S[:-1] / Lts[a][:-1]
            cnt = theta[a] * (S.T @ L[:-1])  # (K, f): expected counts of the true values
            t = cnt + self.beta[a]
            new_theta.append(t / t.sum(axis=1, keepdims=True))
        return (new_logw, new_theta), lik + prior, lik

    def run(self, state, max_iter: int, tol: float, trace: list | None = None):
        prev = -np.inf
        obj = lik = -np.inf
        it = 0
        converged = False
        for it in range(1, max_iter + 1):
            new, obj, lik = self.step(*state)
            if trace is not None:
                trace.append(obj)
            if obj - prev < tol * self.d.n and it > 1:
                converged = True
                break
            prev = obj
            state = new
        else:
            obj, lik = self.objective(*state)
            if trace is not None:
                trace.append(obj)
        return state, obj, lik, it, converged

    def start(self, K: int, gen: np.random.Generator):
        """A random start: weights ~ Dirichlet(1), class probabilities = the pooled distribution of
        the reports' likelihood rows times Gamma(1) noise."""
        w = gen.dirichlet(np.ones(K))
        if not hasattr(self, "_bases"):
            self._bases = []
            for a, L in enumerate(self.d.L):
                # pooled likelihood rows of the distinct reports, weighted by their records
                n_id = np.bincount(self.d.ids[:, a], weights=self.d.counts, minlength=L.shape[0])[:-1]
                Lr = L[:-1] / np.maximum(L[:-1].sum(axis=1, keepdims=True), 1e-300)
                base = n_id @ Lr if n_id.sum() > 0 else np.ones(L.shape[1])
                self._bases.append(base / base.sum() + 1.0 / L.shape[1])
        theta = []
        for a, L in enumerate(self.d.L):
            base = self._bases[a]
            t = base[None, :] * gen.gamma(1.0, size=(K, L.shape[1])) + 1e-3
            theta.append(t / t.sum(axis=1, keepdims=True))
        return np.log(w), theta


def _split(state, K: int, gen: np.random.Generator):
    """K classes from a fit with fewer: the heaviest classes are copied with Gamma(20)-perturbed
    probabilities (coefficient of variation 0.22) and their weights halved."""
    logw, theta = state
    w = np.exp(logw)
    k0 = w.size
    src = np.argsort(-w)[np.arange(K - k0) % k0]
    w_new = np.concatenate([w, np.zeros(K - k0)])
    for i, c in enumerate(src):
        w_new[k0 + i] = w_new[c] / 2.0
        w_new[c] /= 2.0
    out = []
    for t in theta:
        t2 = np.vstack([t, t[src]]) * gen.gamma(20.0, 1.0 / 20.0, size=(K, t.shape[1]))
        out.append(t2 / t2.sum(axis=1, keepdims=True))
    return np.log(w_new / w_new.sum()), out


def _heldout(em: _EM, data: _Data, state) -> float:
    ll, _ = _EM(data, em.sizes, em.aw, 0.0)._loglik_terms(*state)
    return float(data.counts @ logsumexp(ll, axis=1))


# ---------------------------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------------------------
class LatentClassModel:
    """Mixture of K products of categorical distributions over a schema's attributes.

    Parameters
    ----------
    n_classes : K, or "auto" (held-out log-likelihood over ``K_GRID``; see the module docstring),
        or a sequence of candidate K.
    weight_prior, category_prior : Dirichlet prior strengths in pseudo-records per class (and per
        attribute for the categories); MAP-EM.
    n_starts : random starts per K (each run ``_START_ITER`` steps, the best is continued).
    max_iter, tol : EM limits; stop when the objective gains less than ``tol`` per record.
    rng : seed or Generator (starts, the held-out split).

    Learned: ``schema_``, ``weights_`` (K,), ``probs_`` (tuple of (K, f_a)), ``fit_`` (LatentFit),
    ``trace_`` (objective after every EM step of the final fit).
    """

    # set by fit
    schema_: Schema
    weights_: np.ndarray
    probs_: tuple[np.ndarray, ...]

    def __init__(self, n_classes: int | str | Sequence[int] = "auto", *, weight_prior: float = 1.0,
                 category_prior: float = 1.0, n_starts: int = 3, max_iter: int = 200,
                 tol: float = 1e-5, rng: np.random.Generator | int | None = 0) -> None:
        if isinstance(n_classes, str):
            if n_classes != "auto":
                raise LatentError(f"n_classes must be a positive integer, a list of them or 'auto', got {n_classes!r}")
        else:
            ks = list(np.atleast_1d(n_classes))
            if not ks or any(int(k) != k or int(k) < 1 for k in ks):
                raise LatentError(f"n_classes must be >= 1 (whole numbers), got {n_classes!r}")
        for name, v in (("weight_prior", weight_prior), ("category_prior", category_prior)):
            if not (np.isfinite(v) and v >= 0):
                raise LatentError(f"{name} must be a finite number >= 0, got {v!r}")
        if int(n_starts) < 1:
            raise LatentError(f"n_starts must be >= 1, got {n_starts!r}")
        if int(max_iter) < 1:
            raise LatentError(f"max_iter must be >= 1, got {max_iter!r}")
        self.n_classes: Any = n_classes  # an int, 'auto' or a list of ints (checked above)
        self.weight_prior = float(weight_prior)
        self.category_prior = float(category_prior)
        self.n_starts = int(n_starts)
        self.max_iter = int(max_iter)
        self.tol = float(tol)
        self.rng = rng

    # ---- fitting -------------------------------------------------------------------------------
    def fit(self, data, schema: Schema | None = None, init: LatentClassModel | None = None
            ) -> LatentClassModel:
        """Fit on raw records (encoded (n, g) array, ``MISSING`` skipped; ``schema`` required),
        on ``RecordReports`` (any registered mechanism, through its exact channel), or on a list of
        them (pooled; every source must share the schema). ``init``: a fitted model to start from
        (its K; no random starts, no selection)."""
        t0 = time.perf_counter()
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
            state = (np.log(np.maximum(init.weights_, 1e-300)), [np.array(t) for t in init.probs_])
            selection = ()
        elif isinstance(self.n_classes, str) or np.ndim(self.n_classes) > 0:
            grid = list(K_GRID) if isinstance(self.n_classes, str) else sorted(int(k) for k in self.n_classes)
            K, state, selection = self._select(full, sizes, grid, gen)
        else:
            K, state, selection = int(self.n_classes), None, ()
        em = _EM(full, sizes, self.weight_prior, self.category_prior)
        if state is None:
            state = self._best_start(em, K, gen)
        trace: list[float] = []
        state, obj, lik, it, conv = em.run(state, self.max_iter, self.tol, trace)
        logw, theta = state
        n_params = int(K - 1 + K * int((sizes - 1).sum()))
        self.schema_ = schema
        self.weights_ = np.exp(logw)
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
            starts[0] = _split(previous, K, gen)
        for st0 in starts:
            st, obj, _, _, _ = em.run(st0, _START_ITER, 0.0)
            if obj > best_obj:
                best, best_obj = st, obj
        return best

    def _select(self, full: _Data, sizes, grid, gen):
        counts = full.counts
        if full.n > SELECTION_SAMPLE:  # choose K on a subsample of records
            counts = gen.multivariate_hypergeometric(counts.astype(np.int64), SELECTION_SAMPLE).astype(np.float64)
        test = gen.binomial(counts.astype(np.int64), HOLDOUT_SHARE).astype(np.float64)
        train = _subset(full, counts - test)
        hold = _subset(full, test)
        em = _EM(train, sizes, self.weight_prior, self.category_prior)
        cap = max(1, int(train.n // MIN_RECORDS_PER_CLASS))
        grid = [k for k in grid if k <= cap] or [1]
        results, best, best_score, worse = [], None, -np.inf, 0
        prev = None
        for K in grid:
            st = self._best_start(em, K, gen, prev)
            st, _, _, _, _ = em.run(st, min(self.max_iter, _SELECT_ITER), self.tol)
            score = _heldout(em, hold, st) / max(hold.n, 1.0)
            results.append((K, score))
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
        """log p(x) of each record (r,); a ``MISSING`` value is marginalized out."""
        self._check_fitted()
        rec = self._records(records)
        ll = np.broadcast_to(np.log(self.weights_), (rec.shape[0], self.weights_.size)).copy()
        for a, t in enumerate(self.probs_):
            lt = np.log(np.vstack([t.T, np.ones((1, t.shape[0]))]))  # last row: missing
            col = np.where(rec[:, a] == MISSING, t.shape[1], rec[:, a])
            ll += lt[col]
        return logsumexp(ll, axis=1)

    def prob(self, records) -> np.ndarray:
        """p(x) of each record (r,)."""
        return np.exp(self.log_prob(records))

    def table(self, cols: Sequence[int | str]) -> np.ndarray:
        """The c-way table of the attributes ``cols`` (exact: sum_h w_h outer(theta_{h,a}))."""
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
        letters = "abcdefghijklmnopqrstuvwxyz"
        spec = ",".join(["k"] + [f"k{letters[i]}" for i in range(len(idx))]) + "->" + letters[:len(idx)]
        return np.einsum(spec, self.weights_, *[self.probs_[a] for a in idx], optimize=True)

    def sample(self, n: int, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """n records (n, g) drawn from the mixture."""
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
        """The versioned JSON object (format ``reidrisk-latent-model``, version 1)."""
        from reidrisk import __version__

        self._check_fitted()
        return {
            "format": LATENT_FORMAT, "version": LATENT_VERSION, "reidrisk": __version__,
            "schema": self.schema_.to_dict(),
            "weights": [float(x) for x in self.weights_],
            "probs": [[[float(x) for x in row] for row in t] for t in self.probs_],
            "fit": self.fit_.to_dict(),
            "settings": {"weight_prior": self.weight_prior, "category_prior": self.category_prior,
                         "n_starts": self.n_starts, "max_iter": self.max_iter, "tol": self.tol},
        }

    @classmethod
    def from_dict(cls, d: dict, source: str = "model") -> LatentClassModel:
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
        """Write the model as versioned JSON, atomically."""
        from reidrisk.collect.reports_io import atomic_write

        path = Path(path)
        text = json.dumps(self.to_dict())
        atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
        return path

    @classmethod
    def load(cls, path: str | Path) -> LatentClassModel:
        path = Path(path)
        try:
            d = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise LatentError(f"{path}: no such file") from None
        except json.JSONDecodeError as exc:
            raise LatentError(f"{path}: not valid JSON ({exc})") from None
        return cls.from_dict(d, str(path))


__all__ = ["K_GRID", "LATENT_FORMAT", "LATENT_VERSION", "LatentClassModel", "LatentError", "LatentFit"]
