"""Scoring query records: the posterior of a record's population count under a calibrated prior.

Paper 000 (Section IV.C, eq. 15-19) conditions a binomial prior ``X ~ Binomial(N, q)``, truncated to
``X >= 1``, on the records ``c_i`` of each sampled database that equal the query record. This module
is the general form of that step used by ``UniquenessModel``
(docs/design/uniqueness.md#conditioning-on-the-databases; the paper's exact form is
``posterior.population_count_posterior``):

Prior (``CountPrior``)
    The query record belongs to a real person, so ``X = 1 + Y`` with ``Y`` the number of *other*
    people with the same values (the exact form of the paper's existence floor).
    ``Y ~ NegBin(a, mu)`` with mean ``mu`` and dispersion ``a`` (variance ``mu + mu^2 / a``;
    ``a = inf`` is Poisson(mu)), log-linear in the record's features f (log q, and with a raw
    database log(1 + the records differing from it on exactly one attribute))::

        log mu = log(N - 1) + beta . f          log a = alpha_0 + alpha_1 log mu

    fitted by maximum likelihood (``fit_count_prior``) on observed counts (a database's records:
    a binomial thinning of Y) or simulated ones (empirical Bayes: ``1 / a`` absorbs q's error).

Likelihood of the counts (``count_posterior``)
    Database i samples each person with probability ``s_i``. A member of the record's cell in D_i is
    counted with probability ``kappa_i`` (1 for a raw database without missing values; for an LDP
    database prod_j p_j) and other cells' records match by chance, ``NegBin(r, phi_i)`` (0 for raw
    data; Poisson when r = inf)::

        c_i | X = x  ~  Binomial(x, s_i kappa_i) (+) NegBin(r, phi_i)

    With ``kappa_i = 1, phi_i = 0`` this is the paper's eq. 17 factor ``C(x, c_i) s^c (1 - s)^(x - c)``.
    Databases sample independently, so the likelihoods multiply.

Support (``count_grid``)
    Each record's posterior is evaluated on the counts 1..``exact`` one by one and on geometric
    bins over a window around its posterior (no wider than ``ratio`` and than a quarter of the
    posterior's relative spread), the window clipped to the likelihood's support and located by
    coarse-to-fine passes that bound the density over each bin, so no pass drops mass. Its size
    depends on the posterior's spread, not on N (docs/design/uniqueness.md#posterior-support-grid).

The decision rules for "count > T" and their evaluation are in ``reidrisk.uniqueness.decisions``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy import optimize, stats
from scipy.special import digamma, gammaln, logsumexp

from reidrisk._compat import warn_renamed
from reidrisk.uniqueness import decisions
from reidrisk.uniqueness.decisions import ScoringError
from reidrisk.uniqueness.posterior import check_population_size

DEFAULT_EXACT: int = 64
"""Counts 1..DEFAULT_EXACT are held exactly on the posterior grid (every T <= 64 is exact)."""

DEFAULT_RATIO: float = 1.0 / 16.0
"""Largest relative width of the geometric bins above ``DEFAULT_EXACT`` (narrower where the
posterior is narrower: a quarter of its coefficient of variation)."""

DEFAULT_TAIL: float = 1e-12
"""Prior tail mass left outside the initial window of each record."""

LOG_A_RANGE: tuple[float, float] = (-6.0, 12.0)
"""Bounds on log a (a = dispersion); above e^12 the prior is Poisson for every practical purpose."""

_MAX_EXTENSIONS = 8
_MIN_RATIO = 1e-12  # only keeps log1p(ratio) > 0: bins are at least one count wide anyway
_COARSE_RATIO = 1.0 / 16.0  # widest bins of the coarse pass (narrower where the posterior is)
_EDGE_MASS = 1e-9  # a window is widened when one of its edge bins holds more
_WINDOW_NATS = 45.0  # bins below e^-45 of the peak density are outside the window


# ---------------------------------------------------------------------------------------------
# the prior
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CountPrior:
    """Calibrated prior of Y = X - 1, the number of other people sharing a record's values.

    ``Y ~ NegBin(a, mu)`` with ``log mu = log(N - 1) + features @ beta`` and
    ``log a = alpha[0] + alpha[1] * log mu`` (clipped to ``LOG_A_RANGE``).

    Parameters
    ----------
    names : tuple of str
        Feature names, the first is ``"intercept"``.
    beta : numpy.ndarray (k,)
        Coefficients of the log mean.
    alpha : numpy.ndarray (2,)
        Coefficients of the log dispersion.
    source : str
        Where the fitted counts came from (``"databases"`` or ``"simulation"``).
    n_fit : int
        Records the prior was fitted on.
    loglik : float
        Maximized log-likelihood (without the penalty).
    converged : bool
        Whether the optimizer met its tolerance.
    """

    names: tuple[str, ...]
    beta: np.ndarray
    alpha: np.ndarray
    source: str
    n_fit: int
    loglik: float
    converged: bool

    def log_mean(self, features: np.ndarray, N: int) -> np.ndarray:
        """log mu (r,) for a (r, k) feature matrix (first column = 1) and population size N.

        Parameters
        ----------
        features : numpy.ndarray (r, k)
            One feature row per record, the first column 1.
        N : int
            Population size.

        Returns
        -------
        numpy.ndarray (r,)
            log mu.
        """
        F = _check_features(features, len(self.names))
        return np.log(max(int(N) - 1, 1)) + F @ self.beta

    def dispersion(self, log_mu: np.ndarray) -> np.ndarray:
        """The dispersion a (r,) at log mu (r,).

        Parameters
        ----------
        log_mu : numpy.ndarray (r,)
            Log means (``log_mean``).

        Returns
        -------
        numpy.ndarray (r,)
            a, with log a clipped to ``LOG_A_RANGE``.
        """
        return np.exp(np.clip(self.alpha[0] + self.alpha[1] * np.asarray(log_mu), *LOG_A_RANGE))

    def parameters(self, features: np.ndarray, N: int) -> tuple[np.ndarray, np.ndarray]:
        """The negative binomial's mean and dispersion per record.

        Parameters
        ----------
        features : numpy.ndarray (r, k)
            One feature row per record, the first column 1.
        N : int
            Population size.

        Returns
        -------
        mu, a : numpy.ndarray (r,)
            Mean and dispersion.
        """
        lm = self.log_mean(features, N)
        return np.exp(lm), self.dispersion(lm)

    def prob_at_least(self, k: np.ndarray | float, features: np.ndarray, N: int) -> np.ndarray:
        """Prior P(Y >= k) per record, i.e. P(X > k) for the record's count X = 1 + Y.

        Parameters
        ----------
        k : float or numpy.ndarray
            The count (broadcast against the records).
        features : numpy.ndarray (r, k)
            One feature row per record, the first column 1.
        N : int
            Population size.

        Returns
        -------
        numpy.ndarray (r,)
            The probabilities.
        """
        mu, a = self.parameters(features, N)
        return nb_sf(np.asarray(k, dtype=np.float64) - 1.0, a, mu)

    def to_dict(self) -> dict:
        """The prior as plain JSON-ready data.

        Returns
        -------
        dict
            Field name to value (arrays as lists).
        """
        return {"names": list(self.names), "beta": self.beta.tolist(), "alpha": self.alpha.tolist(),
                "source": self.source, "n_fit": self.n_fit, "loglik": self.loglik,
                "converged": self.converged}


def _check_features(F, k: int | None = None) -> np.ndarray:
    F = np.asarray(F, dtype=np.float64)
    if F.ndim != 2 or (k is not None and F.shape[1] != k):
        raise ScoringError(f"features must be an (r, {k}) matrix, got shape {F.shape}")
    if not np.all(np.isfinite(F)):
        i = int(np.argwhere(~np.isfinite(F))[0, 0])
        raise ScoringError(f"features of record {i} are not finite: {F[i].tolist()}")
    return F


def nb_logpmf(y: np.ndarray | float, a: np.ndarray | float, mu: np.ndarray) -> np.ndarray:
    """log NegBin(y; a, mu) (mean mu, variance mu + mu^2/a); y may be non-integer (log-gamma form).

    ``a = inf`` (or above e^30) gives Poisson(mu); ``mu = 0`` puts all mass at y = 0. Broadcasts.

    Parameters
    ----------
    y : float or numpy.ndarray
        The value.
    a : float or numpy.ndarray
        The dispersion.
    mu : numpy.ndarray
        The mean.

    Returns
    -------
    numpy.ndarray
        The log probabilities, of the broadcast shape.
    """
    y, a, mu = np.broadcast_arrays(np.asarray(y, dtype=np.float64), np.asarray(a, dtype=np.float64),
                                   np.asarray(mu, dtype=np.float64))
    pois = a > 1e13
    with np.errstate(divide="ignore", invalid="ignore"):
        lm = np.log(mu)
        yl = np.where(y > 0, y * lm, 0.0)
        p_out = yl - mu - gammaln(y + 1.0)
        ap = np.where(pois, 1.0, a)
        log_apm = np.log(ap + mu)
        nb = (gammaln(y + ap) - gammaln(ap) - gammaln(y + 1.0) + ap * (np.log(ap) - log_apm)
              + np.where(y > 0, y * (lm - log_apm), 0.0))
    out = np.where(pois, p_out, nb)
    out = np.where(mu <= 0, np.where(y == 0, 0.0, -np.inf), out)
    return out


def nb_sf(k: np.ndarray | float, a: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """P(Y > k) for Y ~ NegBin(a, mu) (Poisson where a is infinite), broadcast.

    Parameters
    ----------
    k : float or numpy.ndarray
        The count.
    a : numpy.ndarray
        The dispersion.
    mu : numpy.ndarray
        The mean.

    Returns
    -------
    numpy.ndarray
        The probabilities, of the broadcast shape.
    """
    k, a, mu = np.broadcast_arrays(np.asarray(k, dtype=np.float64), np.asarray(a, dtype=np.float64),
                                   np.asarray(mu, dtype=np.float64))
    pois = a > 1e13
    with np.errstate(divide="ignore", invalid="ignore"):
        ap = np.where(pois, 1.0, a)
        nb = stats.nbinom.sf(k, ap, ap / (ap + mu))
        po = stats.poisson.sf(k, mu)
    out = np.where(pois, po, nb)
    return np.where(mu <= 0, (k < 0).astype(np.float64), out)


def _nb_isf(tail: float, a: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """Upper (1 - tail) quantile of NegBin(a, mu) (Poisson where a is infinite)."""
    pois = a > 1e13
    ap = np.where(pois, 1.0, a)
    with np.errstate(divide="ignore", invalid="ignore"):
        q_nb = stats.nbinom.isf(tail, ap, ap / (ap + mu))
        q_po = stats.poisson.isf(tail, mu)
    out = np.where(pois, q_po, q_nb)
    out = np.where(mu <= 0, 0.0, out)
    return np.nan_to_num(out, nan=0.0, posinf=np.inf)


_PRIOR_SD = 3.0  # sd of the weak Gaussian prior on every coefficient (keeps the fit finite)


def fit_count_prior(
    features: np.ndarray,
    observed: np.ndarray,
    thinning: float | np.ndarray,
    N: int,
    names: Sequence[str],
    source: str,
    start: Sequence[float] | None = None,
) -> CountPrior:
    """Fit ``CountPrior`` by penalized maximum likelihood.

    Parameters
    ----------
    features : (n, k) feature matrix of the fitting records, first column 1.
    observed : (n,) observed counts: ``Binomial(Y, thinning)`` of each record's Y (its other
        matches in a database sampled at rate ``thinning``), or Y itself (``thinning = 1``).
    thinning : scalar or (n,) in (0, 1]. A binomial thinning of NegBin(a, mu) is NegBin(a, t mu).
    N : population size the counts refer to (the offset log(N - 1)).
    names : k feature names.

    ``alpha_1`` is confined to (0, 1) (a logistic transform) so that the prior is stochastically
    increasing in mu: P(X > T) then never falls as q rises. The coefficients (beta, alpha_0 and the
    logit of alpha_1) get a weak N(start, 3^2) prior so that degenerate data (e.g. no record with a
    match) still give finite estimates; with a few hundred records it is negligible. The gradient is
    analytic (d log L / d log m = a (y - m) / (a + m); d / d log a = a [psi(y + a) - psi(a) + log a
    + 1 - log(a + m) - (a + y) / (a + m)]).

    Returns
    -------
    CountPrior
        The fitted prior.
    """
    F = _check_features(features)
    y = np.asarray(observed, dtype=np.float64)
    n, k = F.shape
    if y.shape != (n,) or np.any(y < 0) or np.any(y != np.round(y)):
        raise ScoringError(f"observed must be ({n},) non-negative whole counts, got shape {y.shape}")
    if len(names) != k:
        raise ScoringError(f"names must name the {k} feature columns, got {list(names)}")
    t = np.broadcast_to(np.asarray(thinning, dtype=np.float64), (n,))
    if np.any(~(t > 0)) or np.any(t > 1):
        raise ScoringError("thinning must be in (0, 1]")
    if n < k + 2:
        raise ScoringError(f"need at least {k + 2} records to fit the count prior, got {n}")
    offset = np.log(max(int(N) - 1, 1))
    theta0 = np.zeros(k + 2)
    if start is not None:
        theta0[:] = np.asarray(start, dtype=np.float64)
    else:
        theta0[1] = 1.0 if k > 1 else 0.0  # mu = (N - 1) q when the first feature is log q
    log_t = np.log(t)
    lo_a, hi_a = LOG_A_RANGE

    def unpack(theta):
        # alpha_1 = sigmoid(u) in (0, 1): the prior is then stochastically increasing in mu
        # (Gamma mixing with shape and scale both non-decreasing), so P(X > T) rises with q.
        u = theta[k + 1]
        a1 = 0.5 * (1.0 + np.tanh(0.5 * u))
        return theta[:k], theta[k], a1

    def negloglik(theta):
        beta, a0, a1 = unpack(theta)
        log_mu = offset + F @ beta
        raw = a0 + a1 * log_mu
        la = np.clip(raw, lo_a, hi_a)
        inside = (raw > lo_a) & (raw < hi_a)
        a = np.exp(la)
        log_m = np.clip(log_mu + log_t, -700, 700)
        m = np.exp(log_m)
        log_am = np.logaddexp(la, log_m)
        ll = (gammaln(y + a) - gammaln(a) - gammaln(y + 1.0) + a * (la - log_am)
              + y * (log_m - log_am))
        g_m = a * (y - m) / (a + m)
        g_a = a * (digamma(y + a) - digamma(a) + la + 1.0 - log_am - (a + y) / (a + m))
        g_a = np.where(inside, g_a, 0.0)
        grad_beta = F.T @ (g_m + a1 * g_a)
        grad_al = np.array([g_a.sum(), (g_a * log_mu).sum() * a1 * (1.0 - a1)])
        pen = 0.5 * np.sum((theta - theta0) ** 2) / _PRIOR_SD**2
        grad = -np.concatenate([grad_beta, grad_al]) + (theta - theta0) / _PRIOR_SD**2
        return -ll.sum() + pen, grad

    # BFGS: on this small problem L-BFGS-B's Fortran core is far slower with a threaded BLAS
    res = optimize.minimize(negloglik, theta0, jac=True, method="BFGS",
                            options={"maxiter": 1000, "gtol": 1e-6 * n})
    theta = res.x
    value, grad = negloglik(theta)
    loglik = -(value - 0.5 * np.sum((theta - theta0) ** 2) / _PRIOR_SD**2)
    b, a0, a1 = unpack(theta)
    beta, al = b.copy(), np.array([a0, a1])
    beta.flags.writeable = False
    al.flags.writeable = False
    converged = bool(res.success or np.max(np.abs(grad)) <= 1e-3 * n)
    return CountPrior(tuple(names), beta, al, str(source), int(n), float(loglik), converged)


# ---------------------------------------------------------------------------------------------
# the support
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CountGrid:
    """Bins of counts [lo, hi] (inclusive), ascending and disjoint: width 1 for the counts
    1..``exact``, then geometric bins over a window. ``mid`` = (lo + hi) / 2 is where each bin's
    pmf is evaluated.

    Parameters
    ----------
    lo, hi : numpy.ndarray (L,)
        The bins' first and last counts.
    """

    lo: np.ndarray
    hi: np.ndarray

    @property
    def mid(self) -> np.ndarray:
        return 0.5 * (self.lo + self.hi)

    @property
    def width(self) -> np.ndarray:
        return (self.hi - self.lo + 1).astype(np.float64)

    @property
    def size(self) -> int:
        return int(self.lo.size)


def count_grid(x_max: int, exact: int = DEFAULT_EXACT, ratio: float = DEFAULT_RATIO,
               x_min: int = 1) -> CountGrid:
    """Bins covering 1..min(exact, x_max) one by one (when x_min <= exact) and
    max(exact + 1, x_min)..x_max with bins of relative width ``ratio`` (at least 1 count each).

    Parameters
    ----------
    x_max : int
        The largest count.
    exact : int
        Counts up to this one get a bin each.
    ratio : float
        Relative width of the geometric bins.
    x_min : int
        The smallest count.

    Returns
    -------
    CountGrid
        The bins (read-only arrays).
    """
    lo, hi = _grids(np.array([x_min]), np.array([x_max]), np.array([ratio]), exact)
    keep = hi[0] >= lo[0]
    lo_a, hi_a = lo[0, keep].copy(), hi[0, keep].copy()
    lo_a.flags.writeable = False
    hi_a.flags.writeable = False
    return CountGrid(lo_a, hi_a)


def _grids(x_min: np.ndarray, x_max: np.ndarray, ratio: np.ndarray, exact: int
           ) -> tuple[np.ndarray, np.ndarray]:
    """Per-record bins, padded: (k, L) arrays lo, hi; padding bins have hi < lo.

    Record i gets 1..min(exact, x_max_i) when x_min_i <= exact, then bins from
    s_i = max(exact, x_min_i - 1) + 1 up to x_max_i with widths max(1, ceil(s_i rho (1 + rho)^j)).
    """
    x_min = np.maximum(np.asarray(x_min, dtype=np.int64), 1)
    x_max = np.maximum(np.asarray(x_max, dtype=np.int64), x_min)
    if exact < 1 or np.any(~(ratio > 0)) or np.any(ratio > 1):
        raise ScoringError(f"need exact >= 1 and 0 < ratio <= 1, got exact={exact}")
    k = x_min.size
    has_exact = x_min <= exact
    n_exact = np.where(has_exact, np.minimum(x_max, exact), 0)
    start = np.maximum(exact, x_min - 1)  # the window's bins begin at start + 1
    span = np.maximum(x_max - start, 0)
    # widths ceil(s rho (1 + rho)^j) add up to at least s ((1 + rho)^J - 1): J bins reach x_max
    geo = np.ceil(np.log1p(span / np.maximum(start, 1)) / np.log1p(ratio)) + 1
    n_win = np.where(span > 0, np.minimum(span, geo), 0).astype(np.int64)
    E, W = int(n_exact.max(initial=0)), int(n_win.max(initial=0))
    lo = np.empty((k, E + W), dtype=np.int64)
    hi = np.empty((k, E + W), dtype=np.int64)
    if E:
        j = np.arange(1, E + 1)[None, :]
        lo[:, :E] = j
        hi[:, :E] = np.where(j <= n_exact[:, None], j, 0)
    if W:
        j = np.arange(W)[None, :]
        width = np.maximum(1.0, np.ceil(start[:, None] * ratio[:, None] * (1.0 + ratio[:, None]) ** j))
        edges = start[:, None] + np.cumsum(width, axis=1).astype(np.int64)
        upper = np.minimum(edges, x_max[:, None])
        lower = np.concatenate([start[:, None], upper[:, :-1]], axis=1) + 1
        valid = (lower <= x_max[:, None]) & (span[:, None] > 0)
        lo[:, E:] = np.where(valid, lower, 1)
        hi[:, E:] = np.where(valid, upper, 0)
    return lo, hi


# ---------------------------------------------------------------------------------------------
# the posterior
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CountPosterior:
    """Posterior of the population count X of r records.

    Every record has its own bins (``pmf``); records are evaluated in blocks,
    ``blocks[b] = (rows, lo, hi, probs)`` with (len(rows), L_b) bin bounds (padding bins have
    hi < lo) and posterior masses (None when not kept).

    Parameters
    ----------
    blocks : tuple
        ``(rows, lo, hi, probs)`` per block of records (above).
    expected : numpy.ndarray (r,)
        E[X] (paper 000 eq. 19 under this prior).
    variance : numpy.ndarray (r,)
        Var[X].
    p_unique : numpy.ndarray (r,)
        P(X = 1).
    thresholds : numpy.ndarray (t,)
        The thresholds T asked for at scoring time.
    p_greater : numpy.ndarray (r, t)
        P(X > T).
    edge_mass : numpy.ndarray (r,)
        Posterior mass in the outermost bins of the record's window (an estimate of the mass
        left outside it).
    support_sizes : numpy.ndarray (r,)
        Bins each record was evaluated on (its cost).
    N : int
        Population size.
    """

    blocks: tuple
    expected: np.ndarray
    variance: np.ndarray
    p_unique: np.ndarray
    thresholds: np.ndarray
    p_greater: np.ndarray
    edge_mass: np.ndarray
    support_sizes: np.ndarray
    N: int

    @property
    def n_records(self) -> int:
        return int(self.expected.size)

    @property
    def support_size(self) -> int:
        """Largest number of bins any record was evaluated on."""
        return int(self.support_sizes.max(initial=0))

    def _find(self, i: int):
        i = int(i)
        if not 0 <= i < self.n_records:
            raise IndexError(f"record index {i} outside 0..{self.n_records - 1}")
        for rows, lo, hi, probs in self.blocks:
            hit = np.flatnonzero(rows == i)
            if hit.size:
                return lo, hi, probs, int(hit[0])
        raise IndexError(i)  # pragma: no cover

    def pmf(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Posterior of record i: bins of counts [lo, hi] with non-zero posterior mass.

        Parameters
        ----------
        i : int
            The record.

        Returns
        -------
        lo, hi, mass : numpy.ndarray
            The bins and their posterior masses.

        Raises
        ------
        ScoringError
            When the pmf was not kept (score with ``keep_pmf=True``).
        """
        lo, hi, probs, k = self._find(i)
        if probs is None:
            raise ScoringError("the posterior pmf was not kept; score with keep_pmf=True")
        keep = (hi[k] >= lo[k]) & (probs[k] > 0)
        return lo[k, keep].copy(), hi[k, keep].copy(), probs[k, keep].copy()

    def prob_greater(self, T: float | np.ndarray) -> np.ndarray:
        """P(X > T) per record. Needs the kept pmf unless every T was among ``thresholds``.

        Parameters
        ----------
        T : float or numpy.ndarray (t,)
            One threshold or several.

        Returns
        -------
        numpy.ndarray
            (r,) for a scalar T, (r, t) for an array.
        """
        t = np.atleast_1d(np.asarray(T, dtype=np.float64))
        scalar = np.ndim(T) == 0
        if t.ndim != 1 or np.isnan(t).any():
            raise ScoringError(f"T must be a number or a 1-D array of numbers, got {T!r}")
        known = {float(v): j for j, v in enumerate(self.thresholds)}
        if all(float(v) in known for v in t):
            out = self.p_greater[:, [known[float(v)] for v in t]]
        else:
            out = np.empty((self.n_records, t.size))
            for rows, lo, hi, probs in self.blocks:
                if probs is None:
                    raise ScoringError("the posterior pmf was not kept; score with these T or keep_pmf=True")
                out[rows] = _greater(probs, lo, hi, t)
        out = np.clip(out, 0.0, 1.0)
        return out[:, 0] if scalar else out


def _greater(P: np.ndarray, lo: np.ndarray, hi: np.ndarray, t: np.ndarray) -> np.ndarray:
    """(k, len(t)) P(X > T) from per-record bins (linear within a bin)."""
    width = np.maximum(hi - lo + 1, 1).astype(np.float64)
    out = np.empty((P.shape[0], t.size))
    for j, v in enumerate(np.floor(t)):  # loop over thresholds
        share = np.clip((hi - v) / width, 0.0, 1.0)
        out[:, j] = (P * share).sum(axis=1)
    return out


def _check_rates(rates, m: int) -> np.ndarray:
    s = np.atleast_1d(np.asarray(rates, dtype=np.float64))
    if s.shape != (m,):
        raise ScoringError(f"rates must give one sampling rate per database ({m}), got shape {s.shape}")
    for i, v in enumerate(s):
        if not (np.isfinite(v) and 0.0 < v <= 1.0):
            raise ScoringError(
                f"database {i}: sampling rate s = {v!r} is outside (0, 1]; pass the share of the "
                "population the database holds (its size / N)"
            )
    return s


def _per_db(value, default: float, r: int, m: int, name: str, lo: float, hi: float) -> np.ndarray:
    if value is None:
        return np.full((r, m), default)
    v = np.asarray(value, dtype=np.float64)
    if v.ndim == 1 and v.size == m:
        v = np.broadcast_to(v[None, :], (r, m))
    v = np.broadcast_to(v, (r, m)) if v.ndim == 0 else v
    if v.shape != (r, m):
        raise ScoringError(f"{name} must be a scalar, ({m},) or ({r}, {m}), got shape {v.shape}")
    if np.any(~np.isfinite(v)) or np.any(v < lo) or np.any(v > hi):
        raise ScoringError(f"{name} must lie in [{lo}, {hi}]")
    return np.array(v, dtype=np.float64)


def _log_binom(c: np.ndarray, x: np.ndarray, log_p: np.ndarray, log_1mp: np.ndarray) -> np.ndarray:
    """log Binomial(c; x, p) for real x >= 0 (log-gamma form); -inf where c > x."""
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (gammaln(x + 1.0) - gammaln(c + 1.0) - gammaln(x - c + 1.0)
               + np.where(c > 0, c * log_p, 0.0) + np.where(x - c > 0, (x - c) * log_1mp, 0.0))
    return np.where(c <= x, out, -np.inf)


def _log_likelihood(x: np.ndarray, c: np.ndarray, s: float, kappa: np.ndarray, phi: np.ndarray,
                    r: float = np.inf) -> np.ndarray:
    """log P(c | X = x) for one database: Binomial(x, s kappa) (+) the chance matches.

    The chance matches are NegBin(r, phi) (mean phi, variance phi + phi^2 / r; r = inf: Poisson):
    phi is itself an approximation, and with kappa ~ 1e-5 an excess of one or two counts over a
    Poisson(phi) would be read as a cell of ~1 / (s kappa) people. x (1, L) grid points; c, kappa,
    phi (k, 1). Summed over j = c - k chance matches, j = 0..min(max c, J) with J covering their
    mass (loop over j, not records).
    """
    p = s * kappa
    with np.errstate(divide="ignore"):
        log_p = np.log(p)
        log_1mp = np.log1p(-np.minimum(p, 1.0))  # -inf for a census (p = 1): X = c exactly
    if not np.any(phi > 0):
        return _log_binom(c, x, log_p, log_1mp)
    phi_max = float(phi.max())
    spread = phi_max * (1.0 + 30.0 / r) if np.isfinite(r) else 12.0 * np.sqrt(phi_max)
    J = int(min(c.max(), np.ceil(phi_max + spread + 30.0)))
    terms = []
    for j in range(J + 1):
        cj = c - j
        lp = np.where(phi > 0, nb_logpmf(float(j), r, phi), 0.0 if j == 0 else -np.inf)
        terms.append(np.where(cj >= 0, _log_binom(np.maximum(cj, 0), x, log_p, log_1mp) + lp, -np.inf))
    return logsumexp(np.stack(terms), axis=0)


def count_posterior(
    mu: np.ndarray,
    dispersion: np.ndarray | float,
    N: int,
    rates: Sequence[float] | np.ndarray = (),
    counts: np.ndarray | None = None,
    kappa: np.ndarray | float | None = None,
    false_matches: np.ndarray | float | None = None,
    T: Sequence[float] | np.ndarray | float = (),
    keep_pmf: bool = True,
    exact: int = DEFAULT_EXACT,
    ratio: float = DEFAULT_RATIO,
    tail: float = DEFAULT_TAIL,
    block: int = 256,
    false_dispersion: float = np.inf,
) -> CountPosterior:
    """Posterior of each record's population count X = 1 + Y given its database counts.

    Parameters
    ----------
    mu, dispersion : (r,) prior mean and dispersion a of Y ~ NegBin(a, mu) (``CountPrior``);
        a = inf gives Poisson(mu).
    N : population size; X <= N.
    rates : (m,) sampling rates s_i in (0, 1].
    counts : (r, m) records of database i counted as matching each query record.
    kappa : probability that a member of the record's cell in database i is counted (scalar, (m,) or
        (r, m); default 1: raw data without missing values).
    false_matches : expected chance matches phi_i from other cells (default 0: raw data).
    false_dispersion : r of the chance matches, NegBin(r, phi) (inf = Poisson).
    T : thresholds for ``p_greater``.
    keep_pmf : keep the posterior mass per bin (needed for ``pmf`` and other thresholds).
    block : records evaluated together on one grid.

    Steps (docs/design/uniqueness.md#conditioning-on-the-databases; module doc, "Support"):

    1. ``_check_posterior_inputs``: the prior and the likelihood's parameters, one row per record;
    2. ``_windows``: each record's window [lo, hi] beyond the exact counts: from the prior's
       1 - ``tail`` quantiles and, for informative counts, 10 standard deviations around
       c / (s kappa), clipped to where the likelihood is not zero (a census, s kappa = 1 without
       chance matches, gives the exact point mass at its count);
    3. ``_blocks``: records sorted by their window, in blocks of ``block``;
    4. ``_score_block``: a block's windows located on coarse bins (``_locate``), then its grid
       (1..``exact`` one by one and each record's window in geometric bins no wider than a
       quarter of its posterior's relative spread) evaluated (``_evaluate``); a window whose edge
       bins hold more than 1e-9 is widened and the block redone.

    The cost per record is set by the spread of its posterior, not by N.

    Returns
    -------
    CountPosterior
        The posterior of every record.
    """
    inp = _check_posterior_inputs(mu, dispersion, N, rates, counts, kappa, false_matches,
                                  false_dispersion, T)
    win = _windows(inp.mu, inp.a, inp.s, inp.c, inp.kap, inp.phi, tail, inp.N)
    rho = np.clip(0.25 * win.cv, _MIN_RATIO, ratio)
    # the last coarse pass resolves the posterior too: bins of about two of its standard deviations
    # (8 fine bins; 1/16 at most, the first pass) put the window within a few bins of its mass
    coarse = np.clip(8.0 * rho, rho, _COARSE_RATIO)
    r = inp.mu.size
    expected = np.empty(r)
    variance = np.empty(r)
    p_unique = np.empty(r)
    p_greater = np.empty((r, inp.thresholds.size))
    edge = np.empty(r)
    sizes = np.empty(r, dtype=np.int64)
    blocks: list[tuple] = []
    for rows in _blocks(win, rho, exact, block):
        b = _score_block(rows, inp, win, rho, coarse, exact)
        fit = b.fit
        expected[rows], variance[rows], p_unique[rows] = fit.expected, fit.variance, fit.p_unique
        p_greater[rows] = fit.p_greater
        edge[rows] = b.edge_mass
        sizes[rows] = (b.hi >= b.lo).sum(axis=1)
        if keep_pmf:
            for arr in (b.lo, b.hi, fit.mass):
                arr.flags.writeable = False
            blocks.append((rows, b.lo, b.hi, fit.mass))
        else:
            blocks.append((rows, b.lo, b.hi, None))
    arrays = dict(expected=expected, variance=variance, p_unique=p_unique,
                  thresholds=inp.thresholds, p_greater=np.clip(p_greater, 0.0, 1.0),
                  edge_mass=edge, support_sizes=sizes)
    for v in arrays.values():
        v.flags.writeable = False
    return CountPosterior(blocks=tuple(blocks), N=inp.N, **arrays)


class _Inputs(NamedTuple):
    """``count_posterior``'s inputs, checked: prior (mu, a), population size N, sampling rates s
    (m,), counts c (r, m), detection probabilities kap (r, m), chance matches phi (r, m) and their
    dispersion r_false, thresholds (t,)."""

    mu: np.ndarray
    a: np.ndarray
    N: int
    s: np.ndarray
    c: np.ndarray
    kap: np.ndarray
    phi: np.ndarray
    r_false: float
    thresholds: np.ndarray


def _check_posterior_inputs(mu, dispersion, N, rates, counts, kappa, false_matches,
                            false_dispersion, T) -> _Inputs:
    """The prior and the likelihood's parameters of ``count_posterior``, checked, one row per record
    and one column per database (docs/design/uniqueness.md#conditioning-on-the-databases)."""
    mu = np.atleast_1d(np.asarray(mu, dtype=np.float64))
    r = mu.size
    if mu.ndim != 1 or np.any(~np.isfinite(mu)) or np.any(mu < 0):
        raise ScoringError("mu must be a 1-D array of finite prior means >= 0")
    a = np.broadcast_to(np.asarray(dispersion, dtype=np.float64), (r,)).copy()
    if np.any(np.isnan(a)) or np.any(a <= 0):
        raise ScoringError("dispersion must be > 0 (np.inf for a Poisson prior)")
    Nn = check_population_size(N, ScoringError)
    s = _check_rates(rates, len(np.atleast_1d(rates)) if np.size(rates) else 0)
    m = s.size
    if counts is None:
        if m:
            raise ScoringError(f"counts is required: one column per database ({m} databases)")
        c = np.zeros((r, 0))
    else:
        c = np.asarray(counts)
        if c.ndim == 1 and m == 1:
            c = c[:, None]
        if c.shape != (r, m):
            raise ScoringError(f"counts must have shape (records, databases) = ({r}, {m}), got {c.shape}")
        if c.size and (np.any(c < 0) or np.any(c != np.round(c))):
            raise ScoringError("counts must be whole numbers >= 0")
        c = c.astype(np.float64)
    kap = _per_db(kappa, 1.0, r, m, "kappa", 0.0, 1.0)
    if np.any(kap <= 0):
        raise ScoringError("kappa must be > 0: a database in which no member could ever be counted "
                           "carries no evidence; drop it")
    phi = _per_db(false_matches, 0.0, r, m, "false_matches", 0.0, np.inf)
    r_false = float(false_dispersion)
    if not r_false > 0:
        raise ScoringError(f"false_dispersion must be > 0 (inf for Poisson), got {false_dispersion!r}")
    if m and np.any(c > Nn):
        raise ScoringError(f"a count exceeds the population size N = {Nn}; check N")
    thresholds = np.atleast_1d(np.asarray(T, dtype=np.float64)) if np.size(T) else np.zeros(0)
    return _Inputs(mu, a, Nn, s, c, kap, phi, r_false, thresholds)


def _blocks(win: _Windows, rho: np.ndarray, exact: int, block: int):
    """The records in blocks of ``block``, records with similar windows together (their bins'
    cost: the exact counts they reach and the geometric bins over the rest), so that little
    padding is evaluated (module doc, "Support")."""
    lo, hi = win.lo, win.hi
    cost = np.where(lo <= exact, np.minimum(hi, exact), 0) + np.log1p(np.maximum(hi - np.maximum(lo, exact), 0) / np.maximum(lo, 1)) / rho
    order = np.argsort(cost, kind="stable")
    step = max(int(block), 1)
    for b0 in range(0, order.size, step):
        yield order[b0:b0 + block]


class _Block(NamedTuple):
    """One block of records scored: their (k, L) bins ``lo``/``hi``, the posterior on them and the
    mass left outside each record's window (``CountPosterior.edge_mass``)."""

    lo: np.ndarray
    hi: np.ndarray
    fit: _BinPosterior
    edge_mass: np.ndarray


def _score_block(rows, inp: _Inputs, win: _Windows, rho, coarse, exact) -> _Block:
    """The posterior of the records ``rows`` (docs/design/uniqueness.md#conditioning-on-the-databases;
    module doc, "Support"): their windows located on coarse bins, then evaluated on bins of
    ``rho``, widened while an edge bin holds more than ``_EDGE_MASS``."""
    b_lo, b_hi = win.lo[rows].copy(), win.hi[rows].copy()
    x_lo, x_hi = win.x_lo[rows], win.x_hi[rows]
    args = (inp.mu[rows], inp.a[rows], inp.s, inp.c[rows], inp.kap[rows], inp.phi[rows],
            inp.r_false, inp.thresholds, inp.N)
    if (b_hi > exact).any():
        b_lo, b_hi = _locate(b_lo, b_hi, coarse[rows], exact, args[:-2], inp.N)
    for _ in range(_MAX_EXTENSIONS):
        g_lo, g_hi = _grids(b_lo, b_hi, rho[rows], exact)
        fit = _evaluate(g_lo, g_hi, *args)
        # never beyond the support: past it the likelihood is exactly zero
        widen_hi = (fit.high_edge > _EDGE_MASS) & (b_hi < x_hi)
        widen_lo = (fit.low_edge > _EDGE_MASS) & (b_lo > x_lo)
        if not (widen_hi.any() or widen_lo.any()):
            break
        b_hi = np.where(widen_hi, np.minimum(x_hi, 4 * np.maximum(b_hi, 1)), b_hi)
        b_lo = np.where(widen_lo, np.maximum(x_lo, b_lo // 4), b_lo)
    # nothing is left out past the support (a census's point mass is its own edge bin)
    edge = np.maximum(np.where(b_lo > x_lo, fit.low_edge, 0.0),
                      np.where(b_hi < x_hi, fit.high_edge, 0.0))
    return _Block(g_lo, g_hi, fit, edge)


def _locate(b_lo, b_hi, target, exact, args, N):
    """The windows [b_lo, b_hi] narrowed to where the posterior's mass is, on coarse bins first
    (module doc, "Support"). A posterior narrower than the coarse bins (a nearly complete sample)
    is located level by level, on bins 16 times narrower each time, judged by an upper bound of the
    density over each bin (a bin centre may miss its peak by many standard deviations), down to
    bins of ``target`` relative width."""
    wide = b_hi > exact
    peaked = target < _COARSE_RATIO
    level = _COARSE_RATIO
    active = wide
    while active.any():
        b_lo, b_hi = _narrow(b_lo, b_hi, active, np.maximum(level, target), peaked, exact,
                             args, N)
        active = wide & peaked & (level > target)
        level /= 16.0
    return b_lo, b_hi


def _narrow(b_lo, b_hi, active, ratio, bound, exact, args, N):
    """One coarse pass: the windows [b_lo, b_hi] of the ``active`` records shrunk to their bins of
    relative width ``ratio`` whose density is within e^-45 of the peak, plus one bin each side.

    The density of a bin is read at its centre, or, where ``bound``, as an upper bound over the
    whole bin (``_log_envelope``) against a lower bound of the peak (the largest of the centres'
    densities and of the densities at the prior's and the likelihoods' modes): no bin holding mass
    is dropped however narrow the posterior.
    """
    g_lo, g_hi = _grids(b_lo, b_hi, ratio, exact)
    mu, a, s, c, kap, phi, r_false = args
    dens = _log_density(g_lo, g_hi, mu, a, s, c, kap, phi, r_false, N)
    peak = dens.max(axis=1)
    keep = dens >= peak[:, None] - _WINDOW_NATS
    if bound.any():
        modes = np.column_stack([_prior_mode(mu, a) + 1.0, np.floor(c / (s[None, :] * kap))])
        modes = np.clip(modes, b_lo[:, None], b_hi[:, None])
        peak = np.maximum(peak, _log_density(modes, modes, mu, a, s, c, kap, phi, r_false, N)
                          .max(axis=1))
        env = _log_envelope(g_lo, g_hi, mu, a, s, c, kap, phi, N)
        keep = np.where(bound[:, None], env >= peak[:, None] - _WINDOW_NATS, keep)
    cols = np.arange(keep.shape[1])[None, :]
    first = np.where(keep, cols, keep.shape[1]).min(axis=1)
    last = np.where(keep, cols, -1).max(axis=1)
    ridx = np.arange(b_lo.size)
    # one valid bin of margin on each side; padding bins (hi < lo) can sit between a
    # record's exact bins and its window bins, so look for valid neighbours, not indices
    valid = g_hi >= g_lo
    before = np.where(valid & (cols < first[:, None]), cols, -1).max(axis=1)
    after = np.where(valid & (cols > last[:, None]), cols, keep.shape[1]).min(axis=1)
    new_lo = g_lo[ridx, np.where(before >= 0, before, first)]
    new_hi = g_hi[ridx, np.where(after < keep.shape[1], after, last)]
    b_lo = np.where(active, np.maximum(b_lo, np.where(new_lo <= exact, 1, new_lo)), b_lo)
    b_hi = np.where(active, np.minimum(b_hi, np.maximum(new_hi, 1)), b_hi)
    return b_lo, b_hi


def _prior_mode(mu, a):
    """A mode of NegBin(a, mu) (the other, if any, is next to it): floor((a - 1) mu / a) for
    a > 1, floor(mu) for Poisson, 0 for a <= 1."""
    pois = a > 1e13
    ap = np.where(pois, 1.0, a)
    return np.where(pois, np.floor(mu), np.where(a > 1, np.floor((ap - 1.0) * mu / ap), 0.0))


def _log_envelope(lo, hi, mu, a, s, c, kap, phi, N):
    """An upper bound of the log posterior pmf (unnormalized) over the counts of each bin.

    The prior NegBin(y; a, mu), y = x - 1, is unimodal with its mode at floor((a - 1) mu / a)
    (a > 1; floor(mu) for Poisson; 0 for a <= 1) or next to it, and a binomial likelihood without
    chance matches is unimodal in x with its mode at floor(c / p) (P(c | x + 1) / P(c | x) =
    (x + 1)(1 - p) / (x + 1 - c)): over a bin each is largest at its mode clipped into the bin, so
    the larger of the three counts around the clipped mode bounds it. A likelihood with chance
    matches is bounded by 1.
    """
    valid = hi >= lo
    lo_f = np.where(valid, lo, 1).astype(np.float64)
    hi_f = np.where(valid, hi, 1).astype(np.float64)
    y0 = _prior_mode(mu, a)
    env = np.full(lo.shape, -np.inf)
    for d in (-1.0, 0.0, 1.0):  # loop over the three candidates
        x = np.clip(y0[:, None] + 1.0 + d, lo_f, hi_f)
        env = np.maximum(env, nb_logpmf(x - 1.0, a[:, None], mu[:, None]))
    for i in range(s.size):  # loop over databases
        ci, pi, raw = c[:, i:i + 1], s[i] * kap[:, i:i + 1], phi[:, i:i + 1] <= 0
        with np.errstate(divide="ignore"):
            log_p, log_1mp = np.log(pi), np.log1p(-np.minimum(pi, 1.0))
        m0 = np.floor(ci / pi)
        best = np.full(lo.shape, -np.inf)
        for d in (-1.0, 0.0, 1.0):
            x = np.clip(m0 + d, np.maximum(lo_f, ci), hi_f)
            best = np.maximum(best, _log_binom(ci, x, log_p, log_1mp))
        env = env + np.where(raw, best, 0.0)
    return np.where(valid & (lo <= N), env, -np.inf)


class _Windows(NamedTuple):
    """Per record: the window [lo, hi] beyond the exact counts, the relative spread ``cv`` that
    sets its bin width, and the support [x_lo, x_hi] of the likelihood (``_windows``)."""

    lo: np.ndarray
    hi: np.ndarray
    cv: np.ndarray
    x_lo: np.ndarray
    x_hi: np.ndarray


def _windows(mu, a, s, c, kap, phi, tail, N) -> _Windows:
    """Per record: the window [lo, hi] holding the posterior beyond the exact counts, the relative
    spread (coefficient of variation) that sets the bin width there, and the support [x_lo, x_hi]
    outside which the likelihood is exactly zero.

    Prior: its tail quantiles (and the CV sqrt(1/mu + 1/a)). Counts well above chance (c > phi +
    10 sqrt(phi)) in a database with p = s kappa: c / p +- 10 standard deviations, sd =
    sqrt(c (1 - p) + 1) / p (the binomial spread of x given c, at least 1 / p for the
    discreteness); the posterior lies between the lower of the two lower bounds and the higher of
    the upper ones. The relative spread of the evidence is the combined one, 1 / CV^2 = sum over the
    databases of (centre / sd)^2 = c^2 / (c (1 - p) + 1) (never above the Poisson-limit
    1 / sqrt(sum c)): it shrinks with 1 - p, so a nearly complete sample (p close to 1) gets bins as
    narrow as its likelihood, and a census (p = 1) bins of one count.

    Support: without chance matches (phi = 0) C(x, c) is zero for x < c, so x >= c; in a census
    (p = 1) every member is counted, so x <= c (exactly c when phi = 0: a point mass). The window
    is clipped to the support and never widened beyond it, so the point mass is one bin [c, c].
    """
    pois = a > 1e13
    ap = np.where(pois, 1.0, a)
    with np.errstate(divide="ignore", invalid="ignore"):
        p_hi = np.where(pois, stats.poisson.isf(tail, mu), stats.nbinom.isf(tail, ap, ap / (ap + mu)))
        p_lo = np.where(pois, stats.poisson.ppf(tail, mu), stats.nbinom.ppf(tail, ap, ap / (ap + mu)))
    p_hi = np.where(mu <= 0, 0.0, np.nan_to_num(p_hi, nan=0.0, posinf=N))
    p_lo = np.where(mu <= 0, 0.0, np.nan_to_num(p_lo, nan=0.0))
    lo = 1.0 + np.maximum(p_lo - 1.0, 0.0)
    hi = 1.0 + p_hi
    cv = np.sqrt(1.0 / np.maximum(mu, 1.0) + 1.0 / a)
    if c.size:
        p = s[None, :] * kap
        informative = (c > phi + 10.0 * np.sqrt(phi)) & (c > 0)
        sd = np.sqrt(np.maximum(c, 1.0) * (1.0 - np.minimum(p, 1.0)) + 1.0) / p
        centre = c / p
        l_lo = np.where(informative, np.maximum(c, centre - 10.0 * sd - 10.0), np.inf).min(axis=1)
        l_hi = np.where(informative, centre + 10.0 * sd + 10.0, 0.0).max(axis=1)
        lo = np.minimum(lo, l_lo)
        hi = np.maximum(np.maximum(hi, l_hi), c.max(axis=1))
        strong = informative & (p > 1e-3)
        n_inf = np.where(strong, c, 0.0).sum(axis=1)
        cv = np.where(n_inf > 0, np.minimum(cv, 1.0 / np.sqrt(np.maximum(n_inf, 1.0))), cv)
        precision = np.where(strong, c * c / (c * (1.0 - np.minimum(p, 1.0)) + 1.0), 0.0).sum(axis=1)
        cv = np.where(precision > 0, np.minimum(cv, 1.0 / np.sqrt(np.maximum(precision, 1e-300))), cv)
        x_lo = np.maximum(np.where(phi <= 0, c, 0.0).max(axis=1), 1.0)
        x_hi = np.minimum(np.where(p >= 1.0, c, np.inf).min(axis=1), N)
    else:
        x_lo, x_hi = np.ones(mu.size), np.full(mu.size, float(N))
    hi = np.minimum(np.maximum(np.ceil(hi), 1.0), N)
    lo = np.clip(np.floor(lo), 1.0, hi)
    # contradictory support (x_lo > x_hi) keeps a one-count window, where the evaluation finds
    # zero probability and says so
    x_hi = np.maximum(x_hi, x_lo)
    lo = np.clip(lo, x_lo, x_hi)
    hi = np.clip(hi, lo, x_hi)
    return _Windows(lo.astype(np.int64), hi.astype(np.int64), cv, x_lo.astype(np.int64),
                    x_hi.astype(np.int64))


def _log_density(lo, hi, mu, a, s, c, kap, phi, r_false, N):
    """log posterior pmf (unnormalized, per count) at the bin centres; -inf on padding bins."""
    valid = hi >= lo
    x = np.where(valid, 0.5 * (lo + hi), 1.0)
    lp = nb_logpmf(x - 1.0, a[:, None], mu[:, None])
    for i in range(s.size):  # loop over databases
        lp = lp + _log_likelihood(x, c[:, i:i + 1], s[i], kap[:, i:i + 1], phi[:, i:i + 1], r_false)
    return np.where(valid & (x <= N), lp, -np.inf)


class _BinPosterior(NamedTuple):
    """The posterior of k records on their bins (``_evaluate``): E[X], Var[X], P(X = 1), P(X > T)
    (k, t), the mass per bin (k, L), and the mass in the window's first bin (when counts below
    it were left out) and in its last bin (when counts above it were)."""

    expected: np.ndarray
    variance: np.ndarray
    p_unique: np.ndarray
    p_greater: np.ndarray
    mass: np.ndarray
    low_edge: np.ndarray
    high_edge: np.ndarray


def _evaluate(lo, hi, mu, a, s, c, kap, phi, r_false, thresholds, N) -> _BinPosterior:
    """Posterior of k records on their (k, L) bins: summaries, the mass per bin, and the mass in
    the window's first bin (when counts below it were left out) and in its last bin."""
    valid = hi >= lo
    width = np.where(valid, hi - lo + 1, 1).astype(np.float64)
    x = np.where(valid, 0.5 * (lo + hi), 1.0)
    lp = _log_density(lo, hi, mu, a, s, c, kap, phi, r_false, N) + np.log(width)
    mx = lp.max(axis=1, keepdims=True)
    if np.any(~np.isfinite(mx)):
        raise ScoringError(
            f"a record's counts are impossible under the model (every count from 1 to N = {N} has "
            "zero probability); check the counts, the rates and N"
        )
    P = np.exp(lp - mx)
    P /= P.sum(axis=1, keepdims=True)
    e = (P * x).sum(axis=1)
    # P is the midpoint rule (width x pmf at the centre), not the bins' exact masses: its moments
    # are already those of the pmf (the rule's error, (width^2 - 1) / 24 times the second
    # derivative of x^k pmf(x), sums to nearly zero over smooth bins). Adding the spread within a
    # bin, (width^2 - 1) / 12, would count it twice (Sheppard's correction, of the wrong sign here).
    v = np.maximum((P * (x - e[:, None]) ** 2).sum(axis=1), 0.0)
    p1 = np.where(lo[:, 0] == 1, P[:, 0], 0.0)
    pg = _greater(P, lo, hi, thresholds)
    rows = np.arange(P.shape[0])
    first = np.argmax(valid, axis=1)
    low_edge = np.where(lo[rows, first] > 1, P[rows, first], 0.0)
    last = valid.shape[1] - 1 - np.argmax(valid[:, ::-1], axis=1)
    high_edge = np.where(hi[rows, last] < N, P[rows, last], 0.0)
    return _BinPosterior(e, v, p1, pg, P, low_edge, high_edge)


# ---------------------------------------------------------------------------------------------
# former home of the decisions and their evaluation (reidrisk.uniqueness.decisions)
# ---------------------------------------------------------------------------------------------
_MOVED = ("RULES", "Classification", "Reliability", "classification", "decide", "reliability",
          "roc_auc")


def __getattr__(name: str):
    if name in _MOVED:
        warn_renamed("import path", f"reidrisk.uniqueness.scorer.{name}",
                     f"reidrisk.uniqueness.decisions.{name}")
        return getattr(decisions, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CountGrid", "CountPosterior", "CountPrior", "DEFAULT_EXACT", "DEFAULT_RATIO", "DEFAULT_TAIL",
    "ScoringError", "count_grid", "count_posterior", "fit_count_prior", "nb_logpmf", "nb_sf",
]
