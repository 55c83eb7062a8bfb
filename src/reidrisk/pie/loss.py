"""Expected l2 loss of RR and GLH distribution estimates (paper 002 Section 4.4, eq. 22-24).

docs/design/pie.md#distribution-estimation. Each of n users sends one datum; ``theta`` is the
empirical distribution of their (fixed) data; only the mechanism's coins are random. The loss per
symbol is the variance of the unbiased empirical estimator (eq. 21/43):

* ``l2_loss_rr(epsilon, n, domain, theta)``      -- Prop. 4.6, eq. 22 [DER];
* ``l2_loss_glh(epsilon, n, g, theta)``          -- Prop. 4.7, eq. 23 [DER];
* ``l2_loss_glh_lambda(mi_loss, n, g, theta)``   -- Thm 4.8, eq. 51 at a fixed lambda (g = inf:
  the limit eq. 24) [DER];
* ``domain_l2_loss_rr / domain_l2_loss_glh``     -- the sum over the whole domain (no theta needed);
* ``pq_rr``, ``pq_glh``                          -- the channels' p and q (eq. 19, 20).

Below ``reidrisk.pie.bounds`` (whose ``calibrate`` chooses GLH's g by ``domain_l2_loss_glh``) and
``reidrisk.pie.utility`` (the estimators, which re-exports these names).
"""

from __future__ import annotations

import numpy as np

from reidrisk.estimation.frequency import variance
from reidrisk.pie.checks import (
    BoundError,
    as_output,
    check_count,
    check_counts,
    check_epsilon,
    check_probability,
)

__all__ = ["check_theta", "domain_l2_loss_glh", "domain_l2_loss_rr", "l2_loss_glh", "l2_loss_glh_lambda",
           "l2_loss_rr", "pq_glh", "pq_rr"]


def check_theta(theta) -> np.ndarray:
    """The true probability of a symbol (or of several), in [0, 1].

    Parameters
    ----------
    theta : float or array_like
        theta_x.

    Returns
    -------
    numpy.ndarray
        ``theta`` as float64.

    Raises
    ------
    BoundError
        For a value outside [0, 1].
    """
    return check_probability(theta, "theta")


def pq_rr(e: np.ndarray, k: int):
    """RR's channel on |X| = k symbols at budget e: p = P(report x | x), q = P(report y | x), y != x
    (eq. 19: p = e^eps / (|X| - 1 + e^eps), q = 1 / (|X| - 1 + e^eps)).

    Parameters
    ----------
    e : numpy.ndarray
        The budget(s) (> 0, checked by the caller).
    k : int
        |X|.

    Returns
    -------
    tuple of numpy.ndarray
        (p, q).
    """
    ee = np.exp(e)
    return ee / (k + ee - 1.0), 1.0 / (k + ee - 1.0)


def pq_glh(e: np.ndarray, g: np.ndarray | float):
    """GLH's support probabilities at budget e and hash range g (eq. 20): p = e^eps / (g - 1 +
    e^eps) that the report supports the true symbol, q = 1 / g that it supports another one.

    Parameters
    ----------
    e : numpy.ndarray
        The budget(s) (> 0, checked by the caller).
    g : float or numpy.ndarray
        The hash range(s).

    Returns
    -------
    tuple of numpy.ndarray
        (p, q).
    """
    ee = np.exp(e)
    return ee / (g + ee - 1.0), 1.0 / g


def l2_loss_rr(epsilon, n: int, domain: int, theta) -> np.ndarray | float:
    """Expected l2 loss ``E[(theta_hat_x - theta_x)^2]`` of the RR empirical estimator (eq. 19):

    ``(|X| - 2 + e^eps) / (n (e^eps - 1)^2) + theta_x (|X| - 2) / (n (e^eps - 1))``

    Paper 002 Prop. 4.6, eq. 22; docs/design/pie.md#distribution-estimation [DER, Monte-Carlo
    verified]. Computed by the core's general form ``reidrisk.estimation.frequency.variance`` with p
    = p_RR, q = q_RR.

    Parameters
    ----------
    epsilon : float or array_like
        The budget (> 0); broadcast with ``theta``.
    n : int
        Number of users (>= 2).
    domain : int
        |X| (>= 2).
    theta : float or array_like
        The true probability theta_x of the symbol(s), in [0, 1].

    Returns
    -------
    float or numpy.ndarray
        The expected loss (a float for scalar inputs, else the broadcast shape).
    """

    e = check_epsilon(epsilon)
    n = check_count(n, "number of users n")
    k = check_count(domain, "domain size |X|")
    p, q = pq_rr(e, k)
    return as_output(variance(check_theta(theta), n, p, q), epsilon, theta)


def l2_loss_glh(epsilon, n: int, g, theta) -> np.ndarray | float:
    """Expected l2 loss of the GLH empirical estimator (eq. 20):

    ``(e^eps + g - 1)^2 / (n (e^eps - 1)^2 (g - 1)) + theta_x ((g - 1)^2 - e^eps) / (n (e^eps - 1)
    (g - 1))``

    Paper 002 Prop. 4.7, eq. 23; docs/design/pie.md#distribution-estimation [DER, Monte-Carlo
    verified] (hash collisions at exactly 1/g). The core's ``variance`` with p = p_GLH, q = 1/g.

    Parameters
    ----------
    epsilon, n, theta
        As in ``l2_loss_rr``.
    g : int or array_like
        The hash range (integer >= 2).

    Returns
    -------
    float or numpy.ndarray
        The expected loss (a float for scalar inputs, else the broadcast shape).
    """

    e = check_epsilon(epsilon)
    n = check_count(n, "number of users n")
    gg = check_counts(g, "hash range g")
    p, q = pq_glh(e, gg)
    return as_output(variance(check_theta(theta), n, p, q), epsilon, g, theta)


def l2_loss_glh_lambda(mi_loss, n: int, g, theta) -> np.ndarray | float:
    """Expected l2 loss of GLH at a fixed MI-loss parameter lambda (PIE-calibrated):

    ``(1 - lambda theta_x) / (n lambda^2 (g - 1)) + theta_x (1 - lambda) / (n lambda)``

    Paper 002 Thm 4.8, eq. 51; ``g = inf`` gives the limit eq. 24, ``theta_x (1 - lambda) /
    (n lambda)``. docs/design/pie.md#distribution-estimation [DER]. Strictly decreasing in g.

    Parameters
    ----------
    mi_loss : float or array_like
        lambda, in (0, 1).
    n, theta
        As in ``l2_loss_rr``.
    g : int, float or array_like
        The hash range (integer >= 2, or ``inf``).

    Returns
    -------
    float or numpy.ndarray
        The expected loss (a float for scalar inputs, else the broadcast shape).
    """
    lam = check_probability(mi_loss, "mi_loss (lambda)", open_low=True, open_high=True)
    n = check_count(n, "number of users n")
    gg = np.asarray(g, dtype=np.float64)
    if np.any(np.isnan(gg) | (gg < 2)) or np.any(np.isfinite(gg) & (gg != np.floor(gg))):
        raise BoundError(f"hash range g must be an integer >= 2 or inf, got {g!r}")
    th = check_theta(theta)
    with np.errstate(divide="ignore"):
        first = np.where(np.isinf(gg), 0.0, (1.0 - lam * th) / (n * lam**2 * (gg - 1.0)))
    return as_output(first + th * (1.0 - lam) / (n * lam), mi_loss, g, theta)


def domain_l2_loss_rr(epsilon, n: int, domain: int) -> np.ndarray | float:
    """``sum_x`` of eq. 22 over the whole domain (``sum_x theta_x = 1``):
    ``|X| (|X| - 2 + e^eps) / (n (e^eps - 1)^2) + (|X| - 2) / (n (e^eps - 1))``.

    Parameters
    ----------
    epsilon, n, domain
        As in ``l2_loss_rr``.

    Returns
    -------
    float or numpy.ndarray
        The expected loss summed over the domain (a float for scalar inputs, else the broadcast shape).
    """
    e = check_epsilon(epsilon)
    n = check_count(n, "number of users n")
    k = check_count(domain, "domain size |X|")
    em = np.expm1(e)
    return as_output(k * (k - 1.0 + np.exp(e) - 1.0) / (n * em**2) + (k - 2.0) / (n * em), epsilon)


def domain_l2_loss_glh(epsilon, n: int, domain: int, g) -> np.ndarray | float:
    """``sum_x`` of eq. 23 over the whole domain: ``|X| A + B`` with A, B the two coefficients.

    Parameters
    ----------
    epsilon, n, domain
        As in ``l2_loss_rr``.
    g
        As in ``l2_loss_glh``.

    Returns
    -------
    float or numpy.ndarray
        The expected loss summed over the domain (a float for scalar inputs, else the broadcast shape).
    """
    e = check_epsilon(epsilon)
    n = check_count(n, "number of users n")
    k = check_count(domain, "domain size |X|")
    gg = check_counts(g, "hash range g")
    ee, em = np.exp(e), np.expm1(e)
    a = (ee + gg - 1.0) ** 2 / (n * em**2 * (gg - 1.0))
    b = ((gg - 1.0) ** 2 - ee) / (n * em * (gg - 1.0))
    return as_output(k * a + b, epsilon, g)
