"""Utility of RR and GLH distribution estimates at a given budget (paper 002 Section 4.4).

docs/design/pie.md#distribution-estimation. Each of n users sends one datum; ``theta`` is the
empirical distribution of their (fixed) data; only the mechanism's coins are random.

The expected l2 loss per symbol and over the domain (eq. 22-24: ``l2_loss_rr``, ``l2_loss_glh``,
``l2_loss_glh_lambda``, ``domain_l2_loss_rr``, ``domain_l2_loss_glh``) lives in
``reidrisk.pie.loss``, below ``reidrisk.pie.bounds`` whose ``calibrate`` uses it; this module
re-exports those names.

Estimators (eq. 19, 20 and the significance threshold [CODE]):

* ``bonferroni_z(domain, level=0.05)``, ``threshold(epsilon, n, domain, mechanism, g=None)``;
* ``estimate(support_counts, n, epsilon, domain, mechanism, g=None, thresholded=False)`` -- emp
  or emp+thr from the support counts of the reports (the core's ``Mechanism.support_counts``);
* ``topk_l2(estimate, theta, top_k)``, ``topk_relative_error(estimate, theta, top_k)``.

The benchmark's part (c), LDP-calibrated vs PIE-calibrated epsilon:

* ``utility_comparison(codes, domain, target_error=0.9, top_k=10, repeats=20, rng=0,
  mechanisms=("rr", "glh"), g_max=None) -> tuple[UtilityRow, ...]``: for each mechanism, the
  budget that Prop. 4.1 (LDP) certifies for the target and the budget that Thm 4.2/4.4 (PIE)
  certifies; the users' codes are randomized ``repeats`` times by the core GRR/GLH and both
  estimators are scored on the top-K symbols of the true distribution.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from reidrisk.estimation.frequency import invert
from reidrisk.mechanisms import GLH, GRR
from reidrisk.mechanisms.base import as_generator
from reidrisk.mechanisms.glh import optimal_g
from reidrisk.pie.bounds import BoundError, calibrate
from reidrisk.pie.checks import (
    as_output,
    check_count,
    check_counts,
    check_epsilon,
    check_mechanism,
    check_probability,
)
from reidrisk.pie.loss import (  # re-exported: the expected l2 loss lives in reidrisk.pie.loss
    check_theta,
    domain_l2_loss_glh,
    domain_l2_loss_rr,
    l2_loss_glh,
    l2_loss_glh_lambda,
    l2_loss_rr,
    pq_glh,
    pq_rr,
)

__all__ = [
    "BoundError", "DEFAULT_LEVEL", "UtilityRow", "bonferroni_z", "check_theta",
    "domain_l2_loss_glh", "domain_l2_loss_rr", "estimate", "l2_loss_glh", "l2_loss_glh_lambda",
    "l2_loss_rr", "noise_sd", "pq_glh", "pq_rr", "threshold", "top_symbols", "topk_l2",
    "topk_relative_error", "utility_comparison",
]

DEFAULT_LEVEL: float = 0.05
"""Significance level of emp+thr, Bonferroni-corrected over the domain
(docs/design/pie.md#distribution-estimation [CODE])."""


# ---------------------------------------------------------------------------------------------
# estimators
# ---------------------------------------------------------------------------------------------
def bonferroni_z(domain: int, level: float = DEFAULT_LEVEL) -> float:
    """``z = Phi^-1(1 - level / |X|)``: the one-sided significance threshold, Bonferroni-corrected
    over the domain (docs/design/pie.md#distribution-estimation [CODE]; 5.739005 for |X| =
    10,500,393 and level 0.05).

    Parameters
    ----------
    domain : int
        |X| (>= 2).
    level : float
        The family-wise significance level, in (0, 1); default 0.05.

    Returns
    -------
    float
        z.
    """
    from scipy.stats import norm

    k = check_count(domain, "domain size |X|")
    lv = float(check_probability(level, "level", open_low=True, open_high=True))
    return float(norm.isf(lv / k))


def noise_sd(epsilon, n: int, domain: int, mechanism: str = "rr", g=None) -> np.ndarray | float:
    """sigma: the square root of the theta-free variance term of eq. 22 (RR) or eq. 23 (GLH)
    (docs/design/pie.md#distribution-estimation, emp+thr [CODE]).

    Parameters
    ----------
    epsilon, n, domain
        As in ``l2_loss_rr``.
    mechanism : {"rr", "glh"}
        The mechanism (``"ldp"`` is not accepted).
    g : int, optional
        The hash range, required for ``"glh"``.

    Returns
    -------
    float or numpy.ndarray
        sigma (a float for scalar inputs, else the broadcast shape).
    """
    e = check_epsilon(epsilon)
    n = check_count(n, "number of users n")
    k = check_count(domain, "domain size |X|")
    m = check_mechanism(mechanism)
    em = np.expm1(e)
    if m == "rr":
        s = np.sqrt((k - 2.0 + np.exp(e)) / n) / em
    elif m == "glh":
        if g is None:
            raise BoundError("mechanism 'glh' needs the hash range g (an integer >= 2)")
        gg = check_counts(g, "hash range g")
        s = (np.exp(e) + gg - 1.0) / (em * np.sqrt(n * (gg - 1.0)))
    else:
        raise BoundError("noise_sd is defined for mechanism 'rr' or 'glh', got 'ldp'")
    return as_output(s, epsilon, g)


def threshold(epsilon, n: int, domain: int, mechanism: str = "rr", g=None,
              level: float = DEFAULT_LEVEL) -> np.ndarray | float:
    """The emp+thr threshold ``tau = z sigma`` (docs/design/pie.md#distribution-estimation
    [CODE]).

    Parameters
    ----------
    epsilon, n, domain, mechanism, g
        As in ``noise_sd``.
    level
        As in ``bonferroni_z``.

    Returns
    -------
    float or numpy.ndarray
        tau (a float for scalar inputs, else the broadcast shape).
    """
    sd = np.asarray(noise_sd(epsilon, n, domain, mechanism, g))
    return as_output(bonferroni_z(domain, level) * sd, epsilon, g)


def estimate(support_counts, n: int, epsilon: float, domain: int, mechanism: str = "rr", g=None,
             thresholded: bool = False, level: float = DEFAULT_LEVEL) -> np.ndarray:
    """The empirical estimate ``theta_hat`` (k,) from support counts ``c_x`` (k,) of n reports.

    RR: eq. 19, ``(c_x/n - q_RR) / (p_RR - q_RR)``; GLH: eq. 20, ``(c_x/n - 1/g) / (p_GLH - 1/g)``
    (docs/design/pie.md#distribution-estimation [DER+CODE]), both via the core's
    ``reidrisk.estimation.frequency.invert``.

    Parameters
    ----------
    support_counts : array_like (|X|,)
        What ``GRR/GLH.support_counts`` return.
    n : int
        Number of reports (>= 2).
    epsilon : float
        The budget (> 0).
    domain, mechanism, g
        As in ``noise_sd``.
    thresholded : bool
        emp+thr: entries ``<= tau`` (``threshold``) are set to 0, the rest kept, no
        renormalisation ([CODE]).
    level
        As in ``bonferroni_z`` (used when ``thresholded``).

    Returns
    -------
    numpy.ndarray (k,)
        theta_hat.
    """

    e = float(check_epsilon(epsilon))
    n = check_count(n, "number of users n")
    k = check_count(domain, "domain size |X|")
    m = check_mechanism(mechanism)
    c = np.asarray(support_counts, dtype=np.float64)
    if c.shape != (k,):
        raise BoundError(f"support_counts must have shape (|X|,) = ({k},), got {c.shape}")
    if m == "rr":
        p, q = pq_rr(np.asarray(e), k)
    elif m == "glh":
        if g is None:
            raise BoundError("mechanism 'glh' needs the hash range g (an integer >= 2)")
        p, q = pq_glh(np.asarray(e), float(check_count(g, "hash range g")))
    else:
        raise BoundError("estimate is defined for mechanism 'rr' or 'glh', got 'ldp'")
    theta_hat = invert(c, n, p, q) / n
    if thresholded:
        tau = float(threshold(e, n, k, m, g, level))
        theta_hat = np.where(theta_hat <= tau, 0.0, theta_hat)
    return theta_hat


def top_symbols(theta, top_k: int) -> np.ndarray:
    """Indices of the ``top_k`` largest entries of ``theta`` (ties by index).

    Parameters
    ----------
    theta : array_like (k,)
        The true distribution.
    top_k : int
        How many symbols.

    Returns
    -------
    numpy.ndarray
        The indices, largest first.
    """
    th = check_theta(theta)
    kk = check_count(top_k, "top_k", low=1)
    return np.argsort(-th, kind="stable")[: min(kk, th.size)]


def topk_l2(theta_hat, theta, top_k: int) -> np.ndarray | float:
    """``sum_{x in top-K(theta)} (theta_hat_x - theta_x)^2``
    (docs/design/pie.md#distribution-estimation [CODE]).

    Parameters
    ----------
    theta_hat : array_like (..., k)
        An estimate, or a stack of estimates.
    theta, top_k
        As in ``top_symbols``.

    Returns
    -------
    float or numpy.ndarray
        The loss (a float for scalar inputs, else the broadcast shape).
    """
    th = check_theta(theta)
    idx = top_symbols(th, top_k)
    d = np.asarray(theta_hat, dtype=np.float64)[..., idx] - th[idx]
    return as_output((d * d).sum(axis=-1), theta_hat)


def topk_relative_error(theta_hat, theta, top_k: int) -> np.ndarray | float:
    """Mean over the top-K symbols of ``|theta_hat_x - theta_x| / theta_x`` ([CODE]).

    Parameters
    ----------
    theta_hat, theta, top_k
        As in ``topk_l2``.

    Returns
    -------
    float or numpy.ndarray
        The mean relative error (a float for scalar inputs, else the broadcast shape).
    """
    th = check_theta(theta)
    idx = top_symbols(th, top_k)
    idx = idx[th[idx] > 0]
    d = np.abs(np.asarray(theta_hat, dtype=np.float64)[..., idx] - th[idx]) / th[idx]
    return as_output(d.mean(axis=-1), theta_hat)


# ---------------------------------------------------------------------------------------------
# part (c): LDP-calibrated vs PIE-calibrated budgets
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class UtilityRow:
    """One (mechanism, calibration, estimator) cell of ``utility_comparison``.

    Parameters
    ----------
    mechanism : {"rr", "glh"}
        The mechanism.
    calibration : {"ldp", "pie"}
        ``"ldp"``: the budget Prop. 4.1 certifies for the target; ``"pie"``: the budget
        Thm 4.2/4.4 certifies.
    estimator : {"emp", "emp+thr"}
        The frequency estimator.
    epsilon : float
        The budget.
    g : int or None
        GLH's hash range (None for RR).
    n, domain, top_k : int
        Records, domain size and the K of the top-K.
    target_error : float
        The re-identification error the budget is calibrated for.
    loss, loss_se : float
        Mean and standard error over the repeats of the top-K l2 loss.
    expected_loss : float
        Eq. 22/23 summed over the top-K (emp only, else nan).
    relative_error : float
        Mean top-K relative error.
    repeats : int
        Repeats.
    """

    mechanism: str
    calibration: str
    estimator: str
    epsilon: float
    g: int | None
    n: int
    domain: int
    top_k: int
    target_error: float
    loss: float
    loss_se: float
    expected_loss: float
    relative_error: float
    repeats: int


def utility_comparison(codes, domain: int, target_error: float = 0.9, top_k: int = 10,
                       repeats: int = 20, rng=0, mechanisms: Sequence[str] = ("rr", "glh"),
                       g_max: int | None = None,
                       ldp_form: str = "min") -> tuple[UtilityRow, ...]:
    """Top-K l2 loss of emp and emp+thr at the LDP-calibrated and the PIE-calibrated budget.

    For each mechanism: the LDP budget is ``calibrate(target, n, domain, "ldp", form=ldp_form)``
    (the same for RR and GLH; GLH then uses OLH's g = max(2, round(e^eps + 1))), the PIE budget
    is ``calibrate(target, n, domain, mechanism, g_max=g_max)``.
    docs/design/pie.md#distribution-estimation (the paper's Fig. 10-12 comparison).

    Parameters
    ----------
    codes : array_like (n,)
        Every user's datum in 0..domain-1 (one per user, so the prior is uniform).
    domain : int
        |X|.
    target_error : float
        The Bayes error both budgets must guarantee.
    top_k : int
        How many of the most frequent symbols the losses cover.
    repeats : int
        How many times the codes are randomized with the core ``GRR``/``GLH``.
    rng : numpy.random.Generator or int
        Generator or seed of the randomization (default 0).
    mechanisms : sequence of str
        Among ``"rr"`` and ``"glh"``.
    g_max : int, optional
        Largest hash range the GLH calibration may choose.
    ldp_form : {"min", "tanh"}
        The form of Prop. 4.1 for the LDP budget (as in ``alpha_ldp``).

    Returns
    -------
    tuple of UtilityRow
        One row per mechanism, calibration and estimator.
    """

    k = check_count(domain, "domain size |X|")
    x = np.asarray(codes)
    if x.ndim != 1 or x.size < 2 or not np.issubdtype(x.dtype, np.integer):
        raise BoundError(f"codes must be a 1-D integer array of at least 2 users, got {x.dtype} "
                         f"{x.shape}")
    if x.min() < 0 or x.max() >= k:
        bad = int(x.min() if x.min() < 0 else x.max())
        raise BoundError(f"codes must lie in 0..{k - 1}, got a value {bad}")
    n = x.size
    kk = check_count(top_k, "top_k", low=1)
    reps = check_count(repeats, "repeats", low=1)
    gen = as_generator(rng)
    theta = np.bincount(x, minlength=k) / n
    ldp = calibrate(target_error, n, k, "ldp", form=ldp_form)
    rows: list[UtilityRow] = []
    for mech in mechanisms:
        m = check_mechanism(mech)
        if m == "ldp":
            raise BoundError("utility_comparison mechanisms are 'rr' and/or 'glh'")
        pie = calibrate(target_error, n, k, m, g_max=g_max)
        for label, eps, g in (("ldp", ldp.epsilon, None), ("pie", pie.epsilon, pie.g)):
            if not math.isfinite(eps):
                continue
            if m == "rr":
                mech_obj: GRR | GLH = GRR(eps, k)
            else:
                g = optimal_g(eps) if g is None else g
                mech_obj = GLH(eps, k, g)
            est: dict[str, list] = {"emp": [], "emp+thr": []}
            for _ in range(reps):
                w, n_present = mech_obj.support_counts(mech_obj.perturb(x, gen))
                for name, thr in (("emp", False), ("emp+thr", True)):
                    est[name].append(estimate(w, n_present, eps, k, m, g, thresholded=thr))
            idx = top_symbols(theta, kk)
            if m == "rr":
                exp_emp = float(np.sum(l2_loss_rr(eps, n, k, theta[idx])))
            else:
                exp_emp = float(np.sum(l2_loss_glh(eps, n, g, theta[idx])))
            for name, stack in est.items():
                s = np.asarray(stack)
                losses = np.atleast_1d(topk_l2(s, theta, kk))
                rel = np.atleast_1d(topk_relative_error(s, theta, kk))
                rows.append(UtilityRow(
                    mechanism=m, calibration=label, estimator=name, epsilon=float(eps),
                    g=None if m == "rr" or g is None else int(g), n=n, domain=k, top_k=kk,
                    target_error=float(target_error), loss=float(losses.mean()),
                    loss_se=float(losses.std(ddof=1) / math.sqrt(reps)) if reps > 1 else math.nan,
                    expected_loss=exp_emp if name == "emp" else math.nan,
                    relative_error=float(rel.mean()), repeats=reps,
                ))
    return tuple(rows)
