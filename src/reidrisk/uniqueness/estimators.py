"""Population-uniqueness estimators on a raw (non-private) sample: Pitman, Zayatz, SNB, Dankar.

Design: docs/design/uniqueness.md#the-two-configurations.

The field's standard estimators of how many population members are unique on their
quasi-identifiers, computed from a simple random sample of ``n`` records drawn from a population
of ``N`` (sampling fraction ``pi = n / N``). All of them use only the sample's
*frequency of frequencies*: ``f_k`` = number of sample equivalence classes (distinct value
combinations) holding exactly ``k`` records; ``u = sum_k f_k`` classes, ``f_1`` sample uniques.
They are the baselines the population-count posterior of paper 000 is compared with.

Each estimator returns a ``UniquesEstimate``: the estimated number and proportion of population
uniques, and per sample record the probability that its values are unique in the population
(0 for records in sample classes of size >= 2, which cannot be population uniques).

Equivalence classes are formed from the encoded rows as they are: ``MISSING`` (-1) is grouped as
a value of its own (two records missing the same attribute with equal other values form a class).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

import numpy as np
from scipy import optimize
from scipy.special import digamma, expit, gammaln, polygamma
from scipy.stats import hypergeom

from reidrisk._compat import renamed_attribute, renamed_keywords
from reidrisk.errors import ReidriskError

METHODS: tuple[str, ...] = ("pitman", "zayatz", "snb", "dankar")

DANKAR_THRESHOLD: float = 0.1
"""Dankar et al. (2012): Pitman when pi <= 0.1, else the smaller of the Zayatz and SNB estimates."""


class EstimatorError(ReidriskError, ValueError):
    """Bad estimator input. The message names the parameter, its value and the fix."""


# ---------------------------------------------------------------------------------------------
# the sample summary
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SampleFrequencies:
    """Frequency of frequencies of a sample.

    Parameters
    ----------
    n : int
        Sample size.
    sizes : numpy.ndarray (K,) int64
        Distinct sample class sizes k, ascending.
    classes : numpy.ndarray (K,) int64
        f_k, the number of sample classes of size k.
    record_class_size : numpy.ndarray (n,) int64, optional
        Size of the sample class each record belongs to (None when built from class sizes).
    """

    n: int
    sizes: np.ndarray
    classes: np.ndarray
    record_class_size: np.ndarray | None = None

    @property
    def u(self) -> int:
        """Number of sample classes."""
        return int(self.classes.sum())

    def count(self, k: int) -> int:
        """f_k: number of sample classes of size k.

        Parameters
        ----------
        k : int
            The class size.

        Returns
        -------
        int
            f_k (0 when no class has that size).
        """
        hit = self.sizes == k
        return int(self.classes[hit].sum())

    @property
    def n1(self) -> int:
        """f_1: the number of sample uniques (classes of size 1)."""
        return self.count(1)

    @property
    def n2(self) -> int:
        """f_2: the number of sample classes of size 2."""
        return self.count(2)

    @classmethod
    def from_class_sizes(cls, class_sizes: np.ndarray) -> SampleFrequencies:
        """From the sizes of the sample's classes.

        Parameters
        ----------
        class_sizes : numpy.ndarray
            One entry per class, each >= 1.

        Returns
        -------
        SampleFrequencies
            With n the sum of the sizes and no ``record_class_size`` (no per-record risk).

        Raises
        ------
        EstimatorError
            When ``class_sizes`` is not a non-empty 1-D array of integers >= 1.
        """
        s = np.asarray(class_sizes)
        if s.ndim != 1 or s.size == 0:
            raise EstimatorError(f"class_sizes must be a non-empty 1-D array, got shape {s.shape}")
        if not np.issubdtype(s.dtype, np.integer) or (s < 1).any():
            raise EstimatorError("class_sizes must be integers >= 1 (one size per sample class)")
        sizes, classes = np.unique(s.astype(np.int64), return_counts=True)
        return cls(int(s.sum()), sizes, classes.astype(np.int64), None)

    @classmethod
    def from_codes(cls, codes: np.ndarray) -> SampleFrequencies:
        """From an encoded sample matrix: classes are identical rows (MISSING a value).

        Parameters
        ----------
        codes : numpy.ndarray (n, g)
            The sample's integer codes.

        Returns
        -------
        SampleFrequencies
            With ``record_class_size``, the size of each record's class.

        Raises
        ------
        EstimatorError
            When ``codes`` is not a non-empty 2-D integer array.
        """
        a = np.asarray(codes)
        if a.ndim != 2 or a.shape[0] == 0:
            raise EstimatorError(f"the sample must be a non-empty (n, g) code matrix, got shape {a.shape}")
        if not np.issubdtype(a.dtype, np.integer):
            raise EstimatorError(f"the sample must hold integer codes, got dtype {a.dtype}")
        _, inverse, counts = np.unique(a, axis=0, return_inverse=True, return_counts=True)
        per_record = counts[inverse.ravel()].astype(np.int64)
        sizes, classes = np.unique(counts.astype(np.int64), return_counts=True)
        return cls(int(a.shape[0]), sizes, classes.astype(np.int64), per_record)


def _as_frequencies(sample) -> SampleFrequencies:
    if isinstance(sample, SampleFrequencies):
        return sample
    return SampleFrequencies.from_codes(sample)


def _check_N(N, n: int) -> int:
    try:
        Nn = int(N)
        ok = Nn == N
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok or Nn < n:
        raise EstimatorError(
            f"population size N = {N!r} must be an integer >= the sample size n = {n}"
        )
    return Nn


# ---------------------------------------------------------------------------------------------
# result
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class UniquesEstimate:
    """Estimated population uniques from a sample.

    Parameters
    ----------
    estimator : str
        "pitman", "zayatz", "snb" (for "dankar": the model the rule chose); formerly ``method``.
    N, n : int
        Population and sample sizes.
    population_uniques : float
        Estimated number of population uniques (NaN if the model failed).
    proportion : float
        population_uniques / N.
    sample_uniques : int
        f_1.
    unique_given_sample_unique : float
        Estimated P(a sample unique is a population unique).
    record_risk : numpy.ndarray (n,) float64 or None
        Per sample record P(its values are unique in the population); None when the sample was
        given as class sizes only.
    converged : bool
        Whether the model's parameters were found.
    params : mapping
        Fitted parameters and diagnostics.
    rule : str
        "dankar" when chosen by the decision rule, else the estimator.
    """

    estimator: str
    N: int
    n: int
    population_uniques: float
    proportion: float
    sample_uniques: int
    unique_given_sample_unique: float
    record_risk: np.ndarray | None
    converged: bool
    params: Mapping[str, float] = field(default_factory=dict)
    rule: str = ""

    method = renamed_attribute("estimator", "method")

    @property
    def valid(self) -> bool:
        """A finite, converged estimate."""
        return bool(self.converged and math.isfinite(self.population_uniques))


def _result(method, freq, N, uniques, cond, converged, params, rule=None) -> UniquesEstimate:
    risk = None
    if freq.record_class_size is not None:
        risk = np.where(freq.record_class_size == 1, cond, 0.0)
        risk.flags.writeable = False
    uniques = float(uniques)
    return UniquesEstimate(
        estimator=method,
        N=N,
        n=freq.n,
        population_uniques=uniques,
        proportion=uniques / N,
        sample_uniques=freq.n1,
        unique_given_sample_unique=float(cond),
        record_risk=risk,
        converged=bool(converged),
        params=MappingProxyType(dict(params)),
        rule=rule or method,
    )


def _no_sample_uniques(method, freq, N) -> UniquesEstimate:
    """With f_1 = 0 every model's estimate tends to 0 (the fitted uniques parameter vanishes)."""
    return _result(method, freq, N, 0.0, 0.0, True, {})


def _shortcut(method, freq, N) -> UniquesEstimate | None:
    """No sample uniques -> 0; a complete census (n = N) -> the sample uniques themselves."""
    if freq.n1 == 0:
        return _no_sample_uniques(method, freq, N)
    if freq.n == N:
        return _result(method, freq, N, float(freq.n1), 1.0, True, {"pi": 1.0})
    return None


# ---------------------------------------------------------------------------------------------
# Zayatz (1991)
# ---------------------------------------------------------------------------------------------
def zayatz_uniques(sample, N: int) -> UniquesEstimate:
    """Zayatz (1991): the sample's class-size distribution stands in for the population's.

    With ``h(k) = Hypergeometric(1; N, k, n)`` the probability that a population class of size
    ``k`` appears in the sample exactly once (population N, the class's k members, n draws),
    the probability that a sample unique is a population unique is::

        P(1 | sample unique) = (f_1 / u) h(1) / sum_k (f_k / u) h(k)

    and the population uniques are the sample uniques that are population uniques, scaled up by
    the sampling fraction: ``U = f_1 P(1 | sample unique) / pi``.

    Parameters
    ----------
    sample : numpy.ndarray (n, g) or SampleFrequencies
        The sample's integer codes (classes are identical rows, ``MISSING`` a value of its own),
        or its frequency of frequencies.
    N : int
        Population size, an integer >= the sample size n.

    Returns
    -------
    UniquesEstimate
        ``estimator = "zayatz"``, always converged; ``params["pi"]`` the sampling fraction.
        With no sample uniques the estimate is 0; for a complete census (n = N) it is f_1.

    Raises
    ------
    EstimatorError
        When ``sample`` is not a non-empty (n, g) integer matrix or ``SampleFrequencies``, or
        ``N`` is not an integer >= n.
    """
    freq = _as_frequencies(sample)
    Nn = _check_N(N, freq.n)
    if (short := _shortcut("zayatz", freq, Nn)) is not None:
        return short
    pi = freq.n / Nn
    h = hypergeom.pmf(1, Nn, freq.sizes, freq.n)
    weights = freq.classes / freq.u
    cond = (freq.n1 / freq.u) * hypergeom.pmf(1, Nn, 1, freq.n) / float(np.sum(weights * h))
    uniques = freq.n1 * cond / pi
    return _result("zayatz", freq, Nn, uniques, cond, True, {"pi": pi})


# ---------------------------------------------------------------------------------------------
# Pitman (Hoshino 2001)
# ---------------------------------------------------------------------------------------------
def _pitman_loglik(theta, alpha, freq: SampleFrequencies, i: np.ndarray):
    """Log-likelihood of the Pitman sampling formula, its gradient and Hessian in (theta, alpha).

    P(partition) = prod_{i=1}^{u-1} (theta + i alpha) / prod_{i=1}^{n-1} (theta + i)
                   * prod_k [ Gamma(k - alpha) / Gamma(1 - alpha) ]^{f_k}
    """
    n = freq.n
    k, fk = freq.sizes.astype(np.float64), freq.classes.astype(np.float64)
    z = theta + i * alpha  # i = 1..u-1
    inv = 1.0 / z
    ll = (
        np.sum(np.log(z))
        - (gammaln(theta + n) - gammaln(theta + 1.0))
        + np.sum(fk * (gammaln(k - alpha) - gammaln(1.0 - alpha)))
    )
    g_t = np.sum(inv) - (digamma(theta + n) - digamma(theta + 1.0))
    g_a = np.sum(i * inv) - np.sum(fk * (digamma(k - alpha) - digamma(1.0 - alpha)))
    inv2 = inv * inv
    h_tt = -np.sum(inv2) + (polygamma(1, theta + 1.0) - polygamma(1, theta + n))
    h_ta = -np.sum(i * inv2)
    h_aa = -np.sum(i * i * inv2) + np.sum(fk * (polygamma(1, k - alpha) - polygamma(1, 1.0 - alpha)))
    return ll, np.array([g_t, g_a]), np.array([[h_tt, h_ta], [h_ta, h_aa]])


def _pitman_fit(freq: SampleFrequencies):
    """ML (theta, alpha) with 0 < alpha < 1, theta > -alpha (scipy.optimize on free coordinates)."""
    i = np.arange(1, freq.u, dtype=np.float64)

    def unpack(v):
        alpha = float(expit(v[0]))
        theta = math.exp(v[1]) - alpha
        return theta, alpha

    def negll(v):
        theta, alpha = unpack(v)
        with np.errstate(all="ignore"):
            ll, g, _ = _pitman_loglik(theta, alpha, freq, i)
        if not np.isfinite(ll):
            return 1e300, np.zeros(2)
        da = alpha * (1.0 - alpha)
        # theta = exp(v1) - alpha: d theta / d v0 = -da, d theta / d v1 = exp(v1)
        grad = np.array([g[1] * da - g[0] * da, g[0] * math.exp(v[1])])
        return -ll, -grad

    best = None
    for a0 in (0.2, 0.5, 0.8):
        for t0 in (1.0, math.sqrt(freq.u), float(freq.u)):
            v0 = np.array([math.log(a0 / (1 - a0)), math.log(t0 + a0)])
            f0 = negll(v0)[0]
            if best is None or f0 < best[0]:
                best = (f0, v0)
    assert best is not None  # the grid above is not empty
    res = optimize.minimize(negll, best[1], jac=True, method="L-BFGS-B",
                            options={"maxiter": 500, "gtol": 1e-9, "ftol": 1e-14})
    theta, alpha = unpack(res.x)
    ll, g, H = _pitman_loglik(theta, alpha, freq, i)
    # converged: finite, interior (not run off to theta -> inf / alpha -> 0 or 1), small score
    scale = np.abs(np.diag(H)) ** 0.5
    interior = 1e-8 < alpha < 1 - 1e-8 and theta < 1e12
    ok = bool(np.isfinite(ll) and interior and np.all(np.abs(g) <= 1e-3 * np.maximum(scale, 1.0)))
    if not ok and alpha <= 1e-8 and np.isfinite(ll) and theta < 1e12:
        return (*_ewens_fit(freq), H, True)
    return theta, alpha, H, ok


def _ewens_fit(freq: SampleFrequencies) -> tuple[float, float]:
    """(theta, 0): the ML estimate on the boundary alpha = 0, Ewens's one-parameter partition.

    The likelihood's score in theta there is sum_{i<n} theta / (theta + i) - u = theta (psi(theta +
    n) - psi(theta)) - u, increasing in theta from 1 - u to n - u, so its root is found by bisection
    (Ewens 1972; the alpha = 0 case of Pitman's formula).
    """
    n, u = float(freq.n), float(freq.u)

    def score(log_theta: float) -> float:
        t = math.exp(log_theta)
        return float(t * (digamma(t + n) - digamma(t))) - u

    root = optimize.brentq(score, -30.0, 30.0, xtol=1e-12)
    return math.exp(root), 0.0


def pitman_expected_uniques(theta: float, alpha: float, N: int) -> float:
    """E[number of singletons among N] under the Pitman partition structure (theta, alpha).

    ``N (theta + alpha)_{N-1} / (theta + 1)_{N-1}`` (rising factorials); for large N this is
    Hoshino's ``Gamma(theta + 1) / Gamma(theta + alpha) * N^alpha``.

    Parameters
    ----------
    theta : float
        Concentration, > -alpha.
    alpha : float
        Discount, in (0, 1).
    N : int
        Population size.

    Returns
    -------
    float
        The expected number of classes of size 1 among N draws.
    """
    return float(
        math.exp(
            math.log(N) + gammaln(theta + 1.0) + gammaln(theta + alpha + N - 1.0)
            - gammaln(theta + alpha) - gammaln(theta + N)
        )
    )


def pitman_uniques(sample, N: int) -> UniquesEstimate:
    """Hoshino (2001): Pitman's sampling formula fitted to the sample by maximum likelihood.

    The population's partition into equivalence classes is modelled by the two-parameter
    Ewens-Pitman partition structure (theta, alpha), which is consistent under simple random
    subsampling, so (theta, alpha) are estimated by ML from the sample partition (the Pitman
    sampling formula above, maximized with scipy.optimize over 0 < alpha < 1, theta > -alpha).
    The estimated population uniques are the model's expected number of singletons in a
    population of N (``pitman_expected_uniques``; Hoshino's large-N form
    ``Gamma(theta+1)/Gamma(theta+alpha) N^alpha`` is reported as ``params["asymptotic"]``).

    Per-record risk: by exchangeability the sample is the first n draws of the Chinese-restaurant
    construction, so a sample unique stays unique through the other N - n draws with probability
    ``prod_{t=n}^{N-1} (theta + alpha - 1 + t) / (theta + t)``.

    ``params["se"]`` is the delta-method standard error of the estimate from the observed
    information (the inverse negative Hessian of the log-likelihood). When the likelihood is
    largest on the boundary alpha = 0 the fit is Ewens's one-parameter model there (``alpha = 0``,
    theta its ML estimate), a valid estimate rather than a failure.

    Parameters
    ----------
    sample : numpy.ndarray (n, g) or SampleFrequencies
        The sample's integer codes (classes are identical rows, ``MISSING`` a value of its own),
        or its frequency of frequencies.
    N : int
        Population size, an integer >= the sample size n.

    Returns
    -------
    UniquesEstimate
        ``estimator = "pitman"``; ``params``: ``theta``, ``alpha``, their standard errors
        ``se_theta`` and ``se_alpha``, ``se``, ``asymptotic`` and ``pi``. NaN and not converged
        when every sample record is unique or all fall in one class (no interior ML estimate),
        or when the fit does not converge. With no sample uniques the estimate is 0; for a
        complete census (n = N) it is f_1.

    Raises
    ------
    EstimatorError
        When ``sample`` is not a non-empty (n, g) integer matrix or ``SampleFrequencies``, or
        ``N`` is not an integer >= n.
    """
    freq = _as_frequencies(sample)
    Nn = _check_N(N, freq.n)
    if (short := _shortcut("pitman", freq, Nn)) is not None:
        return short
    if freq.u == freq.n or freq.u < 2:
        # all records unique (theta -> inf) or a single class: no interior ML estimate
        return _result("pitman", freq, Nn, math.nan, math.nan, False, {})
    theta, alpha, H, ok = _pitman_fit(freq)
    uniques = pitman_expected_uniques(theta, alpha, Nn)
    n = freq.n
    cond = math.exp(
        gammaln(theta + alpha - 1.0 + Nn) - gammaln(theta + alpha - 1.0 + n)
        - gammaln(theta + Nn) + gammaln(theta + n)
    )
    # delta method: d log U / d theta, d log U / d alpha
    d_t = digamma(theta + 1.0) + digamma(theta + alpha + Nn - 1.0) - digamma(theta + alpha) - digamma(theta + Nn)
    d_a = digamma(theta + alpha + Nn - 1.0) - digamma(theta + alpha)
    grad = uniques * np.array([d_t, d_a])
    try:
        cov = np.linalg.inv(-H)
        se = float(math.sqrt(max(float(grad @ cov @ grad), 0.0)))
        se_t, se_a = (float(math.sqrt(max(v, 0.0))) for v in np.diag(cov))
    except np.linalg.LinAlgError:
        se = se_t = se_a = math.nan
    asym = math.exp(gammaln(theta + 1.0) - gammaln(theta + alpha) + alpha * math.log(Nn))
    params = {"theta": theta, "alpha": alpha, "se": se, "se_theta": se_t, "se_alpha": se_a,
              "asymptotic": asym, "pi": n / Nn}
    return _result("pitman", freq, Nn, uniques if ok else math.nan, cond, ok, params)


# ---------------------------------------------------------------------------------------------
# SNB (Chen & Keller-McNulty 1998)
# ---------------------------------------------------------------------------------------------
def shlosser_classes(freq: SampleFrequencies, pi: float) -> float:
    """Shlosser's estimate of the number K of non-empty population classes (Haas et al. 1995).

    ``K = u + f_1 sum_k (1-pi)^k f_k / sum_k k pi (1-pi)^(k-1) f_k``.

    Parameters
    ----------
    freq : SampleFrequencies
        The sample's frequency of frequencies (u distinct classes).
    pi : float
        The sampling fraction n / N, in (0, 1].

    Returns
    -------
    float
        The estimated K (u when pi = 1).
    """
    k, fk = freq.sizes.astype(np.float64), freq.classes.astype(np.float64)
    num = np.sum(np.exp(k * math.log1p(-pi)) * fk) if pi < 1 else 0.0
    den = np.sum(k * pi * np.exp((k - 1.0) * math.log1p(-pi)) * fk) if pi < 1 else 1.0
    return float(freq.u + freq.n1 * num / den)


def _snb_log_moments(a, b, f, K):
    """log E[f_1], log E[f_2] under the SNB model with Bernoulli(f) sampling.

    Population class sizes F with F - 1 ~ NegBin(a, b), i.e. P(F = j) = C(j+a-2, j-1) b^a (1-b)^(j-1);
    a class's sample count is Binomial(F, f). With d = (1 - f)(1 - b) the probability generating
    function gives
        P(size 1) = f (b / (1-d))^a (1 + a d / (1-d))
        P(size 2) = a b^a f^2 (1-b) (2 - (1-a) d) / (2 (1-d)^(a+2)).
    """
    d = (1.0 - f) * (1.0 - b)
    e = 1.0 - d
    l1 = math.log(K) + math.log(f) + a * (math.log(b) - math.log(e)) + math.log1p(a * d / e)
    l2 = (math.log(K) + math.log(a) + a * math.log(b) + 2.0 * math.log(f) + math.log1p(-b)
          - math.log(2.0) - (a + 2.0) * math.log(e) + math.log(2.0 - (1.0 - a) * d))
    return l1, l2


def _snb_solve(n1: float, n2: float, f: float, K: float):
    """(a, b, squared log residual) solving E[f_1] = n1, E[f_2] = n2; None if no start converged."""

    def resid(v):
        a, b = math.exp(v[0]), float(expit(v[1]))
        l1, l2 = _snb_log_moments(a, b, f, K)
        return np.array([l1 - math.log(n1), l2 - math.log(n2)])

    best = None
    for a0 in (0.05, 0.3, 1.0, 3.0):
        for b0 in (0.01, 0.1, 0.5, 0.9):
            v0 = np.array([math.log(a0), math.log(b0 / (1 - b0))])
            try:
                with np.errstate(all="ignore"):
                    sol = optimize.least_squares(resid, v0, method="lm", xtol=1e-14, ftol=1e-14)
            except (ValueError, OverflowError, FloatingPointError):
                continue
            cost = float(np.sum(sol.fun ** 2))
            if np.isfinite(cost) and (best is None or cost < best[2]):
                best = (math.exp(sol.x[0]), float(expit(sol.x[1])), cost)
    return best


def snb_uniques(sample, N: int) -> UniquesEstimate:
    """Chen & Keller-McNulty (1998): the slide (shifted) negative binomial model.

    The sizes of the K non-empty population classes are ``1 + NegBin(a, b)``; K is estimated by
    Shlosser's estimator (``shlosser_classes``); (a, b) solve the two moment equations
    ``E[f_1] = f_1`` and ``E[f_2] = f_2`` (``_snb_log_moments``, derived from the model's
    generating function) with scipy.optimize.least_squares in log space. The population uniques
    are ``K P(F = 1) = K b^a``; a sample unique is a population unique with probability
    ``P(F=1 | size 1) = (1-d)^a / (1 + a d / (1-d))``.

    Parameters
    ----------
    sample : numpy.ndarray (n, g) or SampleFrequencies
        The sample's integer codes (classes are identical rows, ``MISSING`` a value of its own),
        or its frequency of frequencies.
    N : int
        Population size, an integer >= the sample size n.

    Returns
    -------
    UniquesEstimate
        ``estimator = "snb"``; ``params``: ``a``, ``b``, ``K``, ``pi`` and the squared log
        ``residual`` of the moment equations. NaN and not converged when the sample has no
        class of size 2, or the equations have no solution (residual >= 1e-12). With no sample
        uniques the estimate is 0; for a complete census (n = N) it is f_1.

    Raises
    ------
    EstimatorError
        When ``sample`` is not a non-empty (n, g) integer matrix or ``SampleFrequencies``, or
        ``N`` is not an integer >= n.
    """
    freq = _as_frequencies(sample)
    Nn = _check_N(N, freq.n)
    if (short := _shortcut("snb", freq, Nn)) is not None:
        return short
    f = freq.n / Nn
    n1, n2 = freq.n1, freq.n2
    if n2 == 0:
        return _result("snb", freq, Nn, math.nan, math.nan, False, {"pi": f})
    K = shlosser_classes(freq, f)
    sol = _snb_solve(n1, n2, f, K)
    if sol is None:
        return _result("snb", freq, Nn, math.nan, math.nan, False, {"pi": f, "K": K})
    a, b, cost = sol
    ok = cost < 1e-12
    d = (1.0 - f) * (1.0 - b)
    cond = math.exp(a * math.log1p(-d) - math.log1p(a * d / (1.0 - d)))
    uniques = K * math.exp(a * math.log(b))
    params = {"a": a, "b": b, "K": K, "pi": f, "residual": cost}
    return _result("snb", freq, Nn, uniques if ok else math.nan, cond, ok, params)


# ---------------------------------------------------------------------------------------------
# Dankar et al. (2012)
# ---------------------------------------------------------------------------------------------
def dankar_uniques(sample, N: int) -> UniquesEstimate:
    """Dankar, El Emam, Neisa & Roffey (2012): choose among the estimators by sampling fraction.

    ``pi <= 0.1``: Pitman (Zayatz if the Pitman fit fails); ``pi > 0.1``: the smaller of the
    Zayatz and SNB estimates (Zayatz if SNB fails). The result carries the chosen model in
    ``estimator`` and ``rule = "dankar"``.

    Parameters
    ----------
    sample : numpy.ndarray (n, g) or SampleFrequencies
        The sample's integer codes (classes are identical rows, ``MISSING`` a value of its own),
        or its frequency of frequencies.
    N : int
        Population size, an integer >= the sample size n.

    Returns
    -------
    UniquesEstimate
        The chosen estimator's estimate, with ``rule = "dankar"``.

    Raises
    ------
    EstimatorError
        When ``sample`` is not a non-empty (n, g) integer matrix or ``SampleFrequencies``, or
        ``N`` is not an integer >= n.
    """
    freq = _as_frequencies(sample)
    Nn = _check_N(N, freq.n)
    pi = freq.n / Nn
    if pi <= DANKAR_THRESHOLD:
        est = pitman_uniques(freq, Nn)
        if not est.valid:
            est = zayatz_uniques(freq, Nn)
    else:
        z = zayatz_uniques(freq, Nn)
        s = snb_uniques(freq, Nn)
        est = s if s.valid and s.population_uniques < z.population_uniques else z
    return _with_rule(est, "dankar")


def _with_rule(est: UniquesEstimate, rule: str) -> UniquesEstimate:
    return replace(est, rule=rule)


_ESTIMATORS = {"pitman": pitman_uniques, "zayatz": zayatz_uniques, "snb": snb_uniques,
               "dankar": dankar_uniques}


@renamed_keywords(method="estimator")
def estimate_population_uniques(sample, N: int, estimator: str = "dankar") -> UniquesEstimate:
    """Estimate population uniques from a sample.

    Parameters
    ----------
    sample : numpy.ndarray (n, g) or SampleFrequencies
        The sample's codes, or its frequency of frequencies.
    N : int
        Population size (an integer >= the sample size n).
    estimator : {"pitman", "zayatz", "snb", "dankar"}
        The estimator (formerly ``method``), one of ``METHODS``, case-insensitive; default
        ``"dankar"``.

    Returns
    -------
    UniquesEstimate
        The estimator's result (``pitman_uniques``, ``zayatz_uniques``, ``snb_uniques``,
        ``dankar_uniques``).

    Raises
    ------
    EstimatorError
        For an unknown estimator, or a bad sample or population size.
    """
    try:
        fn = _ESTIMATORS[str(estimator).lower()]
    except KeyError:
        raise EstimatorError(
            f"unknown estimator {estimator!r}; choose one of {list(METHODS)}") from None
    return fn(sample, N)
