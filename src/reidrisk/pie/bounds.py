"""PIE bounds of paper 002: how much a user's identity leaks through one or t LDP releases.

Paper 002 (Murakami & Takahashi, "Toward Evaluating Re-identification Risks in the Local Privacy
Model", TDP 14(3), 2021); every formula as rebuilt in docs/design/pie.md, with its provenance
(docs/design/pie.md#provenance). All information is in bits.

Bounds on the PIE ``I(U;Y)`` (alpha-PIE privacy, Def. 3.1, docs/design/pie.md#pie-and-pie-privacy):

* ``alpha_ldp(epsilon, n, form="min"|"tanh")``  -- any epsilon-LDP mechanism (Prop. 4.1, eq. 14);
* ``alpha_rr(epsilon, n, domain, releases=1)``   -- epsilon-RR (Thm 4.2, eq. 16; Thm 4.3 for t);
* ``alpha_glh(epsilon, n, domain, g, releases=1)`` -- epsilon-GLH (Thm 4.4, eq. 18; Thm 4.5);
* ``alpha(epsilon, n, domain, mechanism="rr"|"glh"|"ldp", g=None, releases=1)`` -- dispatcher;
* ``alpha_composed(epsilons, n, domain, mechanism, g=None)`` -- t releases with different budgets;
* ``lambda_rr(epsilon, domain)``, ``lambda_glh(epsilon, g)`` -- the MI-loss parameters.

Bayes error (the adversary's identification error, docs/design/pie.md#bayes-error):

* ``bayes_error_bound(information, n, max_prior=None)`` -- Prop. 3.7 / Cor. 3.9, eq. 9-12;
* ``bayes_error_bound_hv(information, n, max_prior=None)`` -- the tighter implicit Han-Verdu form;
* ``information_budget(target_error, n, max_prior=None)`` -- the largest alpha meeting a target.

The inverse (docs/design/pie.md#bounds-for-ldp-mechanisms, "choosing the budget"):

* ``calibrate(target_error, n, domain, mechanism, ...) -> Calibration`` -- the largest epsilon
  (for GLH with g=None, also the best integer g) whose bound guarantees the target Bayes error;
* ``certified_alpha(epsilon, n, domain, mechanism, g=None, releases=1)`` -- the smaller of the
  mechanism's theorem and Prop. 4.1 (both valid for RR and GLH).

Exact quantities for small explicit joint distributions, to check every bound: ``output_joint``
(p_{U,Y} from p_{U,X} and a channel Q[y, x]), ``user_information`` (I(U;Y)),
``data_information`` (I(U;X)), ``bayes_error``, ``product_channel`` (t releases); and
``figure4_table``, the Figure-4 reference table (docs/design/pie.md#reference-values). The l2
loss lives in ``reidrisk.pie.loss``, emp / emp+thr in ``reidrisk.pie.utility``, the argument
checks in ``reidrisk.pie.checks``.

Every function accepts epsilon as a scalar or an array (broadcast with the other arguments) and
returns a float for scalar input, else an array. Bad input raises ``BoundError`` (a
``MechanismError``) naming the parameter and the value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from reidrisk.estimation.information import mutual_information
from reidrisk.pie.checks import (  # BoundError, MECHANISMS and LDP_FORMS: re-exported
    LDP_FORMS,
    MECHANISMS,
    BoundError,
    as_output,
    check_count,
    check_counts,
    check_epsilon,
    check_information,
    check_mechanism,
    check_probability,
    shown,
)
from reidrisk.pie.loss import domain_l2_loss_glh

__all__ = [
    "BoundError", "Calibration", "FIGURE4_DOMAIN", "FIGURE4_EPSILONS", "FIGURE4_N", "Figure4Row",
    "LDP_FORMS", "LOG2E", "MECHANISMS", "alpha", "alpha_composed", "alpha_glh", "alpha_ldp",
    "alpha_rr", "bayes_error", "bayes_error_bound", "bayes_error_bound_hv", "calibrate",
    "certified_alpha", "data_information", "figure4_table", "information_budget", "lambda_glh",
    "lambda_rr", "output_joint", "product_channel", "user_information",
]

LOG2E: float = 1.0 / math.log(2.0)
"""log2(e): nats to bits."""

FIGURE4_N: int = 1_370_637
"""Users of the paper's LT experiment (docs/design/pie.md#reference-values, [CODE])."""
FIGURE4_DOMAIN: int = 10_500_393
"""POIs of the paper's LT experiment (docs/design/pie.md#reference-values, [CODE])."""
FIGURE4_EPSILONS: tuple[float, ...] = (0.1, 1.0, 5.0, 10.0, 15.0, 20.0)
"""The epsilons of the Figure-4 reference table (docs/design/pie.md#reference-values)."""

def _cap(n: int, domain: int) -> float:
    """min{log n, log |X|} in bits: the largest possible I(U;X) (Prop. 3.10, eq. 13)."""
    return min(math.log2(n), math.log2(domain))


# ---------------------------------------------------------------------------------------------
# MI-loss parameters and alpha
# ---------------------------------------------------------------------------------------------
def lambda_rr(epsilon, domain: int) -> np.ndarray | float:
    """MI-loss parameter of epsilon-RR: ``lambda_RR = (e^eps - 1) / (|X| + e^eps - 1)``.

    Paper 002 Thm 4.2, eq. 15; docs/design/pie.md#bounds-for-ldp-mechanisms [DER].
    ``I(U;Y) <= lambda_RR I(U;X)``, and the constant is the best possible. Computed as
    ``1 / (1 + |X| / (e^eps - 1))`` so large epsilons give 1, not nan.

    Parameters
    ----------
    epsilon : float or array_like
        The budget (> 0).
    domain : int
        |X|, the size of the data domain (>= 2).

    Returns
    -------
    float or numpy.ndarray
        lambda_RR (a float for scalar inputs, else the broadcast shape).
    """
    e = check_epsilon(epsilon)
    k = check_count(domain, "domain size |X|")
    with np.errstate(over="ignore"):
        lam = 1.0 / (1.0 + k / np.expm1(e))
    return as_output(lam, epsilon)


def lambda_glh(epsilon, g) -> np.ndarray | float:
    """MI-loss parameter of epsilon-GLH: ``lambda_GLH = (e^eps - 1) / (g + e^eps - 1)``.

    Paper 002 Thm 4.4, eq. 17; docs/design/pie.md#bounds-for-ldp-mechanisms [DER]. Independent of
    |X|.

    Parameters
    ----------
    epsilon : float or array_like
        The budget (> 0).
    g : int or array_like
        The hash range (integer >= 2); an array is broadcast with ``epsilon``.

    Returns
    -------
    float or numpy.ndarray
        lambda_GLH (a float for scalar inputs, else the broadcast shape).
    """
    e = check_epsilon(epsilon)
    gg = check_counts(g, "hash range g")
    with np.errstate(over="ignore"):
        lam = 1.0 / (1.0 + gg / np.expm1(e))
    return as_output(lam, epsilon, g)


def alpha_ldp(epsilon, n: int, form: str = "min") -> np.ndarray | float:
    """PIE bound (bits) of any epsilon-LDP mechanism (paper 002 Prop. 4.1, eq. 14).

    docs/design/pie.md#bounds-for-ldp-mechanisms.

    Parameters
    ----------
    epsilon : float or array_like
        The LDP budget (> 0).
    n : int
        Number of users (>= 2).
    form : {"min", "tanh"}
        ``"min"``: ``min{eps log e, eps^2 log e, log n}`` [REC] (the paper's printed form is
        uncertain; the ``log n`` cap is certain). ``"tanh"``: ``min{eps tanh(eps/2) log e, log n}``,
        the tighter bound from Lemma B.2's proof [DER, verified]; never above the min form.

    Returns
    -------
    float or numpy.ndarray
        alpha in bits (a float for scalar inputs, else the broadcast shape).
    """
    e = check_epsilon(epsilon)
    n = check_count(n, "number of users n")
    f = str(form).lower()
    if f == "min":
        a = e * np.minimum(e, 1.0) * LOG2E  # min(e, e^2), without squaring a huge e
    elif f == "tanh":
        a = e * np.tanh(e / 2.0) * LOG2E
    else:
        raise BoundError(f"form must be one of {list(LDP_FORMS)}, got {form!r}")
    return as_output(np.minimum(a, math.log2(n)), epsilon)


def alpha_rr(epsilon, n: int, domain: int, releases: int = 1) -> np.ndarray | float:
    """PIE bound (bits) of epsilon-RR: ``alpha_RR = t lambda_RR min{log n, log |X|}``.

    Paper 002 Thm 4.2, eq. 16 (one release, t = 1) and Thm 4.3 (t releases of arbitrarily
    correlated data, each with fresh coins); docs/design/pie.md#bounds-for-ldp-mechanisms [DER].
    For different budgets per release use ``alpha_composed``.

    Parameters
    ----------
    epsilon : float or array_like
        The budget of one release (> 0).
    n : int
        Number of users (>= 2).
    domain : int
        |X|, the size of the data domain (>= 2).
    releases : int
        t, the number of releases (>= 1).

    Returns
    -------
    float or numpy.ndarray
        alpha in bits (a float for scalar inputs, else the broadcast shape).
    """
    n = check_count(n, "number of users n")
    k = check_count(domain, "domain size |X|")
    t = check_count(releases, "number of releases t", low=1)
    return as_output(t * np.asarray(lambda_rr(epsilon, k)) * _cap(n, k), epsilon)


def alpha_glh(epsilon, n: int, domain: int, g, releases: int = 1) -> np.ndarray | float:
    """PIE bound (bits) of epsilon-GLH: ``alpha_GLH = t lambda_GLH min{log n, log |X|}``.

    Paper 002 Thm 4.4, eq. 18 (one release) and Thm 4.5 (t releases, each with an independent
    hash); docs/design/pie.md#bounds-for-ldp-mechanisms [DER]. The extra valid cap
    ``lambda_GLH log g`` (not in the paper) is not applied.

    Parameters
    ----------
    epsilon, n, domain, releases
        As in ``alpha_rr``.
    g : int or array_like
        Hash range (integer >= 2).

    Returns
    -------
    float or numpy.ndarray
        alpha in bits (a float for scalar inputs, else the broadcast shape).
    """
    n = check_count(n, "number of users n")
    k = check_count(domain, "domain size |X|")
    t = check_count(releases, "number of releases t", low=1)
    return as_output(t * np.asarray(lambda_glh(epsilon, g)) * _cap(n, k), epsilon, g)


def alpha(epsilon, n: int, domain: int, mechanism: str = "rr", g=None, releases: int = 1,
          form: str = "min") -> np.ndarray | float:
    """The PIE bound alpha (bits) of ``mechanism`` over t = ``releases`` releases.

    docs/design/pie.md#bounds-for-ldp-mechanisms.

    Parameters
    ----------
    epsilon, n, domain, releases
        As in ``alpha_rr``.
    mechanism : {"rr", "glh", "ldp"}
        ``"ldp"``: any epsilon-LDP mechanism, Prop. 4.1 (eq. 14); over t releases the composed
        mechanism is (t eps)-LDP, so eps is replaced by t eps (sequential composition of LDP; the
        log n cap still holds). ``"rr"``: Thm 4.2/4.3. ``"glh"``: Thm 4.4/4.5.
    g : int, optional
        Hash range, required for ``"glh"``.
    form : {"min", "tanh"}
        As in ``alpha_ldp`` (``"ldp"`` only).

    Returns
    -------
    float or numpy.ndarray
        alpha in bits (a float for scalar inputs, else the broadcast shape).
    """
    m = check_mechanism(mechanism)
    if m == "rr":
        return alpha_rr(epsilon, n, domain, releases)
    if m == "glh":
        if g is None:
            raise BoundError("mechanism 'glh' needs the hash range g (an integer >= 2)")
        return alpha_glh(epsilon, n, domain, g, releases)
    check_count(domain, "domain size |X|")
    t = check_count(releases, "number of releases t", low=1)
    return as_output(np.asarray(alpha_ldp(np.asarray(check_epsilon(epsilon)) * t, n, form)), epsilon)


def alpha_composed(epsilons: Sequence[float], n: int, domain: int, mechanism: str = "rr",
                   g=None) -> float:
    """PIE bound (bits) of t releases with budgets ``epsilons`` (one per release).

    RR: ``sum_i lambda_RR(eps_i) min{log n, log |X|}`` (Thm 4.3,
    docs/design/pie.md#bounds-for-ldp-mechanisms [DER]); GLH: the same with ``lambda_GLH(eps_i,
    g_i)`` (Thm 4.5); LDP: Prop. 4.1 at ``sum_i eps_i``. Any correlation between the t data is
    allowed.

    Parameters
    ----------
    epsilons : sequence of float
        One budget per release (1-D, each > 0).
    n, domain
        As in ``alpha_rr``.
    mechanism : {"rr", "glh", "ldp"}
        The bound to sum, as in ``alpha``.
    g : int or sequence of int, optional
        Hash range, required for ``"glh"``: a scalar or one per release.

    Returns
    -------
    float
        alpha in bits.
    """
    e = check_epsilon(epsilons, "epsilons")
    if e.ndim != 1:
        raise BoundError(f"epsilons must be a 1-D sequence of budgets, got shape {e.shape}")
    m = check_mechanism(mechanism)
    n = check_count(n, "number of users n")
    k = check_count(domain, "domain size |X|")
    if m == "ldp":
        return float(alpha_ldp(float(e.sum()), n))
    if m == "rr":
        lam = np.asarray(lambda_rr(e, k))
    else:
        if g is None:
            raise BoundError("mechanism 'glh' needs the hash range g (an integer >= 2)")
        lam = np.asarray(lambda_glh(e, np.broadcast_to(np.asarray(g), e.shape)))
    return float(lam.sum() * _cap(n, k))


# ---------------------------------------------------------------------------------------------
# Bayes error
# ---------------------------------------------------------------------------------------------
def _prior_bits(n, max_prior) -> np.ndarray:
    """log(1 / (1 - beta*)) = log(1 / max_u p_U(u)) in bits (log n for a uniform prior)."""
    if max_prior is None:
        if n is None:
            raise BoundError("pass the number of users n (uniform prior) or max_prior")
        return np.asarray(math.log2(check_count(n, "number of users n")))
    mp = check_probability(max_prior, "max_prior", open_low=True)
    if n is not None:
        nn = check_count(n, "number of users n")
        low = mp < 1.0 / nn * (1 - 1e-12)
        if low.any():
            raise BoundError(
                f"max_prior must be >= 1/n = {1.0 / nn:.6g} (the largest of n prior probabilities "
                f"is at least their mean), got {shown(mp[low][:1])}"
            )
    return -np.log2(mp)


def bayes_error_bound(information, n: int | None = None, max_prior=None) -> np.ndarray | float:
    """Lower bound on the adversary's Bayes error: ``beta >= 1 - (I + 1) / log(1 / (1 - beta*))``.

    Paper 002 Prop. 3.7 (eqs. 9, 10) with ``I = I(U;S)`` or ``I(U;Y)``, and Cor. 3.9 (eqs. 11,
    12) with ``I = alpha``; docs/design/pie.md#bayes-error [DER] (generalised Fano inequality of Han
    & Verdu). The bound may be negative (vacuous); it is returned as computed so the caller can
    tell how far from useful it is.

    Parameters
    ----------
    information : float or array_like
        ``I(U;S)``, ``I(U;Y)`` or alpha, in bits.
    n : int, optional
        Number of users; with ``max_prior=None`` the prior is uniform over them
        (``log(1/(1 - beta*)) = log n``, eq. 10/12).
    max_prior : float, optional
        ``max_u p_U(u) = 1 - beta*`` (eq. 9/11).

    Returns
    -------
    float or numpy.ndarray
        The lower bound on the Bayes error (a float for scalar inputs, else the broadcast shape).
    """
    i = check_information(information)
    bits = _prior_bits(n, max_prior)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(bits > 0, 1.0 - (i + 1.0) / np.where(bits > 0, bits, 1.0), -np.inf)
    return as_output(out, information, max_prior)


def _binary_kl(a, b) -> np.ndarray:
    """d(a || b) in bits, elementwise (0 log 0 = 0)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = np.where(a > 0, a * np.log2(np.where(a > 0, a, 1.0) / b), 0.0)
        t2 = np.where(a < 1, (1 - a) * np.log2(np.where(a < 1, 1 - a, 1.0) / (1 - b)), 0.0)
    return t1 + t2


def bayes_error_bound_hv(information, n: int | None = None, max_prior=None) -> np.ndarray | float:
    """The implicit Han-Verdu lower bound: ``beta >= 1 - a*``, ``a* = max{a >= 1 - beta* :
    d(a || 1 - beta*) <= I}``.

    docs/design/pie.md#bayes-error, "optional tighter implicit form" [DER, verified]; never below
    ``bayes_error_bound`` (which relaxes ``d(a||b) >= a log(1/b) - 1``). Solved by bisection on
    the increasing ``a -> d(a || b)`` over [b, 1], vectorized; accurate to 1e-12.

    Parameters
    ----------
    information, n, max_prior
        As in ``bayes_error_bound``.

    Returns
    -------
    float or numpy.ndarray
        The lower bound on the Bayes error (a float for scalar inputs, else the broadcast shape).
    """
    i = check_information(information)
    bits = _prior_bits(n, max_prior)
    b = np.broadcast_to(2.0 ** (-bits), np.broadcast_shapes(i.shape, bits.shape)).astype(float)
    ii = np.broadcast_to(i, b.shape)
    lo, hi = b.copy(), np.ones_like(b)
    full = _binary_kl(hi, b) <= ii  # even certainty is within the budget
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        ok = _binary_kl(mid, b) <= ii
        lo = np.where(ok, mid, lo)
        hi = np.where(ok, hi, mid)
    a = np.where(full, 1.0, lo)
    return as_output(1.0 - a, information, max_prior)


def information_budget(target_error: float, n: int | None = None, max_prior=None) -> float:
    """The largest alpha (bits) for which Cor. 3.9 guarantees ``beta >= target_error``:
    ``alpha = (1 - target) log(1 / (1 - beta*)) - 1`` (eq. 11/12 solved for alpha;
    docs/design/pie.md#bayes-error, "design rule" [DER]). Negative when no mechanism can be
    certified (n too small: for a uniform prior the target needs ``n >= 2^(1/(1 - target))``).

    Parameters
    ----------
    target_error : float
        The Bayes error to guarantee, in [0, 1).
    n, max_prior
        As in ``bayes_error_bound``.

    Returns
    -------
    float
        alpha in bits (negative when no alpha >= 0 reaches the target).
    """
    t = float(check_probability(target_error, "target_error", open_high=True))
    bits = float(_prior_bits(n, max_prior))
    return (1.0 - t) * bits - 1.0


# ---------------------------------------------------------------------------------------------
# the inverse: the largest epsilon for a target Bayes error
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Calibration:
    """Result of ``calibrate``.

    Parameters
    ----------
    mechanism : {"rr", "glh", "ldp"}
        The mechanism calibrated.
    target_error, n, domain, releases
        As passed to ``calibrate``.
    epsilon : float
        The largest per-release budget whose bound guarantees the target (``inf`` when every
        budget does).
    g : int or None
        The hash range (GLH only, else None).
    mi_loss : float or None
        lambda at that budget (RR/GLH; None for "ldp").
    alpha : float
        The PIE bound there (bits; the smaller of the mechanism's theorem and Prop. 4.1 when both
        are used).
    error_bound : float
        The Bayes-error lower bound there (the target up to rounding, never below it, unless
        epsilon is inf).
    certified_by : {"ldp", "rr", "glh"}
        Which bound certifies it ("ldp" = Prop. 4.1, "rr" = Thm 4.2/4.3, "glh" = Thm 4.4/4.5).
    alpha_budget : float
        The largest alpha the target allows.
    max_prior : float or None
        The prior used (None = uniform over n).
    """

    mechanism: str
    target_error: float
    n: int
    domain: int
    releases: int
    epsilon: float
    g: int | None
    mi_loss: float | None
    alpha: float
    error_bound: float
    certified_by: str
    alpha_budget: float
    max_prior: float | None = None

    def to_dict(self) -> dict:
        """The calibration as plain JSON-ready data.

        Returns
        -------
        dict
            Field name to value.
        """
        from dataclasses import asdict

        return asdict(self)


def certified_alpha(epsilon, n: int, domain: int, mechanism: str = "rr", g=None,
                    releases: int = 1, form: str = "min") -> np.ndarray | float:
    """The smallest valid PIE bound of ``mechanism``: ``min(alpha(mechanism), alpha("ldp"))``.

    RR and GLH are epsilon-LDP, so Prop. 4.1 bounds them too; it is the smaller bound when the
    domain or the hash range is small and epsilon is small (e.g. GLH with g = 2 at eps < 1).
    docs/design/pie.md#bounds-for-ldp-mechanisms. For ``"ldp"`` this is ``alpha_ldp`` itself.

    Parameters
    ----------
    epsilon, n, domain, mechanism, g, releases, form
        As in ``alpha``.

    Returns
    -------
    float or numpy.ndarray
        alpha in bits (a float for scalar inputs, else the broadcast shape).
    """
    a = np.asarray(alpha(epsilon, n, domain, mechanism, g=g, releases=releases, form=form))
    ldp = np.asarray(alpha(epsilon, n, domain, "ldp", releases=releases, form=form))
    return as_output(np.minimum(a, ldp), epsilon, g)


def calibrate(target_error: float, n: int, domain: int, mechanism: str = "rr", *, g=None,
              g_max: int | None = None, releases: int = 1, max_prior=None,
              form: str = "min", use_ldp_bound: bool = True) -> Calibration:
    """The largest epsilon whose PIE bound guarantees a Bayes error >= ``target_error``.

    Inverts Cor. 3.9 (eq. 11/12) composed with Prop. 4.1 (``"ldp"``), Thm 4.2/4.3 (``"rr"``) or
    Thm 4.4/4.5 (``"glh"``); docs/design/pie.md#bayes-error and
    docs/design/pie.md#bounds-for-ldp-mechanisms ("choosing the budget", [DER]). Each bound is
    increasing in epsilon, so each budget is the root of ``bayes_error_bound(alpha(eps)) = target``,
    found by ``scipy.optimize.brentq`` on log epsilon (to a relative 1e-13, then moved to the safe
    side of the root). RR and GLH are also epsilon-LDP, so with ``use_ldp_bound`` (default) Prop.
    4.1 may certify them too: the answer is the larger of the two budgets (``certified_by`` says
    which bound gave it).

    GLH: with ``g`` given, the largest epsilon for that g. With ``g=None`` the integer g in
    ``2..g_max`` (default ``g_max = min(domain, 2^31 - 1)``, the core GLH's limit) is chosen
    that minimises the expected l2 loss over the whole domain at its largest budget (``sum_x``
    of eq. 23, which does not depend on the distribution: ``|X| A + B``;
    ``reidrisk.pie.loss.domain_l2_loss_glh``). Under Thm 4.4
    alone the budget is ``eps = ln(1 + lambda g / (1 - lambda))`` at the same lambda for every g
    and the loss falls with g (Thm 4.8), so the search is capped: beyond ``|X|`` the hash no
    longer compresses the report and GLH is RR with more communication.

    Parameters
    ----------
    target_error : float
        The Bayes error to guarantee, in [0, 1).
    n : int
        Number of users (>= 2).
    domain : int
        |X|, the size of the data domain (>= 2).
    mechanism : {"rr", "glh", "ldp"}
        The mechanism whose bound is inverted.
    g : int, optional
        GLH's hash range; ``None`` chooses it (above).
    g_max : int, optional
        Largest hash range searched when ``g=None``.
    releases : int
        t, the number of releases (>= 1).
    max_prior : float, optional
        ``max_u p_U(u)``; ``None``: the uniform prior over ``n`` users.
    form : {"min", "tanh"}
        Form of Prop. 4.1 (as in ``alpha_ldp``).
    use_ldp_bound : bool
        Let Prop. 4.1 certify RR and GLH too (default).

    Returns
    -------
    Calibration
        The budget, the bound that certified it (``certified_by``) and, for GLH, the hash range.

    Raises
    ------
    BoundError
        When the target cannot be certified at any epsilon (``n`` too small).
    """
    m = check_mechanism(mechanism)
    n = check_count(n, "number of users n")
    k = check_count(domain, "domain size |X|")
    t = check_count(releases, "number of releases t", low=1)
    target = float(check_probability(target_error, "target_error", open_high=True))
    mp = None if max_prior is None else float(check_probability(max_prior, "max_prior", open_low=True))
    budget = information_budget(target, n, mp)
    if budget < 0:
        need = 2.0 ** (1.0 / (1.0 - target))
        raise BoundError(
            f"no epsilon can guarantee a Bayes error of {target:g} for n={n} users: even alpha = 0 "
            f"only guarantees {float(bayes_error_bound(0.0, n, mp)):.4g} (for a uniform prior the "
            f"target needs n >= 2^(1/(1 - target)) = {need:.6g}); lower --target-error"
        )

    eps_ldp = (_largest_budget("ldp", None, n, k, t, form, mp, target)
               if (use_ldp_bound or m == "ldp") else 0.0)
    gg = None
    if m == "glh":
        gg = (check_count(g, "hash range g") if g is not None
              else _glh_range(budget, n, k, t, g_max, eps_ldp))
    eps_mech = eps_ldp if m == "ldp" else _largest_budget(m, gg, n, k, t, form, mp, target)
    if eps_mech >= eps_ldp:
        eps, by = eps_mech, m
    else:
        eps, by = eps_ldp, "ldp"
    return _calibration(m, target, n, k, t, float(eps), gg, by, budget, mp, form, use_ldp_bound)


def _largest_budget(mech: str, gg, n: int, k: int, t: int, form: str, mp, target: float) -> float:
    """The largest epsilon at which ``mech``'s bound still guarantees ``target``: the root of
    ``bayes_error_bound(alpha(eps)) = target`` on the log-epsilon scale (``inf`` when the bound
    holds at every budget)."""
    from scipy.optimize import brentq

    def f(le: float) -> float:  # on the log-epsilon scale
        a = alpha(math.exp(le), n, k, mech, g=gg, releases=t, form=form)
        return float(bayes_error_bound(a, n, mp)) - target

    lo, hi = math.log(1e-12), 0.0
    if f(lo) < 0:  # cannot happen for budget >= 0, kept as a guard
        raise BoundError(f"no epsilon > 1e-12 meets the target {target:g}")
    while f(hi) >= 0:
        if hi > math.log(1e4):
            return math.inf  # the bound holds at every budget
        hi += math.log(2.0)
    root = brentq(f, lo, hi, xtol=1e-14, rtol=1e-13, maxiter=500)
    step = 1e-13 * max(1.0, abs(root))
    for _ in range(64):  # the root may sit a rounding error on the wrong side: step inside
        if f(root) >= 0:
            break
        root -= step
        step *= 2.0
    return math.exp(root)


def _glh_range(budget: float, n: int, k: int, t: int, g_max, eps_ldp: float) -> int:
    """The GLH hash range of ``calibrate`` with ``g=None``: the g in 2..g_max whose largest
    budget has the least expected l2 loss over the whole domain (``calibrate``'s docstring)."""
    gmax = min(k, _G_LIMIT) if g_max is None else check_count(g_max, "g_max")
    grid = _g_grid(gmax)
    lam = budget / (t * _cap(n, k))  # Thm 4.4 allows the same lambda at every g
    with np.errstate(divide="ignore"):
        eps_g = np.log1p(lam * grid / (1.0 - lam)) if lam < 1 else np.full_like(grid, 700.)
    eps_g = np.minimum(np.maximum(eps_g, eps_ldp), 700.0)
    loss = np.asarray(domain_l2_loss_glh(eps_g, n, k, grid))
    return int(grid[int(np.argmin(loss))])


def _calibration(m: str, target: float, n: int, k: int, t: int, eps: float, gg, by: str,
                 budget: float, mp, form: str, use_ldp_bound: bool) -> Calibration:
    """The ``Calibration`` of budget ``eps``: the alpha it certifies, its error bound and, for RR
    and GLH, the mutual-information loss lambda."""
    e_eval = min(eps, 700.0)
    a = float(certified_alpha(e_eval, n, k, m, g=gg, releases=t, form=form)) if use_ldp_bound \
        else float(alpha(e_eval, n, k, m, g=gg, releases=t, form=form))
    lam_out = None
    if m == "rr":
        lam_out = float(lambda_rr(e_eval, k))
    elif m == "glh":
        lam_out = float(lambda_glh(e_eval, gg))
    return Calibration(
        mechanism=m, target_error=target, n=n, domain=k, releases=t, epsilon=eps, g=gg,
        mi_loss=lam_out, alpha=a, error_bound=float(bayes_error_bound(a, n, mp)),
        certified_by=by, alpha_budget=budget, max_prior=mp,
    )


_G_LIMIT: int = 2_147_483_647
"""The largest hash range the core GLH supports (``reidrisk.mechanisms.glh.DEFAULT_PRIME``)."""


def _g_grid(g_max: int) -> np.ndarray:
    """Every integer 2..g_max when there are at most 2^20 of them, else a geometric grid of
    integers plus g_max."""
    if g_max - 1 <= 1 << 20:
        return np.arange(2, g_max + 1, dtype=np.float64)
    grid = np.unique(np.round(np.geomspace(2.0, float(g_max), 4096)))
    return np.union1d(grid, [float(g_max)])


# ---------------------------------------------------------------------------------------------
# exact quantities for small explicit distributions
# ---------------------------------------------------------------------------------------------
def _joint(p_ux, name: str = "p_ux") -> np.ndarray:
    p = np.asarray(p_ux, dtype=np.float64)
    if p.ndim != 2 or 0 in p.shape:
        raise BoundError(
            f"{name} must be a non-empty (n, |X|) joint distribution, got shape {p.shape}")
    bad = ~np.isfinite(p) | (p < 0) | (p > 1)
    if bad.any():
        raise BoundError(
            f"{name} entries must be probabilities in [0, 1], got {shown(p[bad][:1])}")
    s = p.sum()
    if abs(s - 1.0) > 1e-9:
        raise BoundError(f"{name} must sum to 1 (a joint distribution), got sum {s:.12g}")
    return p


def output_joint(p_ux, channel) -> np.ndarray:
    """``p_{U,Y}(u, y) = sum_x p_{U,X}(u, x) Q(y|x)`` for the Markov chain U -> X -> Y.

    Parameters
    ----------
    p_ux : array_like, shape (n, |X|)
        Joint distribution of user and datum (non-negative, sums to 1).
    channel : array_like, shape (|Y|, |X|)
        ``channel[y, x] = Q(y|x)``, each column summing to 1 (the orientation of
        ``reidrisk.mechanisms.Mechanism.channel()``).

    Returns
    -------
    numpy.ndarray, shape (n, |Y|)
    """
    p = _joint(p_ux)
    q = np.asarray(channel, dtype=np.float64)
    if q.ndim != 2 or q.shape[1] != p.shape[1]:
        raise BoundError(
            f"channel must have shape (|Y|, |X| = {p.shape[1]}) with channel[y, x] = Q(y|x), got "
            f"{q.shape}"
        )
    bad = ~np.isfinite(q) | (q < 0) | (q > 1)
    if bad.any():
        raise BoundError(
            f"channel entries must be probabilities in [0, 1], got {shown(q[bad][:1])}")
    cols = q.sum(axis=0)
    if np.any(np.abs(cols - 1.0) > 1e-9):
        raise BoundError(
            f"channel column {int(np.argmax(np.abs(cols - 1.0)))} sums to "
            f"{cols[np.argmax(np.abs(cols - 1.0))]:.12g}, not 1; pass Q[y, x] = P(Y = y | X = x)"
        )
    return p @ q.T


def user_information(p_ux, channel) -> float:
    """Exact PIE ``I(U;Y)`` in bits (paper 002 eq. 4, docs/design/pie.md#pie-and-pie-privacy [DER]);
    via ``reidrisk.estimation.information``.

    Parameters
    ----------
    p_ux, channel
        As in ``output_joint``.

    Returns
    -------
    float
        I(U;Y) in bits.
    """

    return float(mutual_information(output_joint(p_ux, channel), base=2))


def data_information(p_ux) -> float:
    """Exact ``I(U;X)`` in bits (the no-obfuscation PIE, eq. 13).

    Parameters
    ----------
    p_ux : array_like, shape (n, |X|)
        Joint distribution of user and datum (non-negative, sums to 1).

    Returns
    -------
    float
        I(U;X) in bits.
    """

    return float(mutual_information(_joint(p_ux), base=2))


def bayes_error(p_uy) -> float:
    """Exact Bayes error of identifying U from Y: ``1 - sum_y max_u p(u, y)``
    (docs/design/pie.md#bayes-error).

    Parameters
    ----------
    p_uy : array_like, shape (n, |Y|)
        Joint distribution of user and output (e.g. from ``output_joint``).

    Returns
    -------
    float
        The Bayes error.
    """
    p = _joint(p_uy, "p_uy")
    return float(max(0.0, 1.0 - p.max(axis=0).sum()))


def product_channel(*channels) -> np.ndarray:
    """The channel of t independent releases of t data: ``Q(y_1..y_t | x_1..x_t) = prod_i
    Q_i(y_i|x_i)`` as one (prod |Y_i|, prod |X_i|) matrix (Kronecker product, row-major order of
    the tuples). Pair it with a joint p_{U, X^(1..t)} reshaped to (n, prod |X_i|) to check the
    composition theorems 4.3 and 4.5 exactly.

    Parameters
    ----------
    *channels : array_like, shape (|Y_i|, |X_i|)
        One or more channels ``Q_i[y, x]``, in release order.

    Returns
    -------
    numpy.ndarray (prod |Y_i|, prod |X_i|)
        The joint channel.
    """
    if not channels:
        raise BoundError("product_channel needs at least one channel")
    out: np.ndarray = np.asarray(channels[0], dtype=np.float64)
    for c in channels[1:]:
        out = np.kron(out, np.asarray(c, dtype=np.float64))
    return out


# ---------------------------------------------------------------------------------------------
# Figure 4
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Figure4Row:
    """One epsilon of the Figure-4 table (docs/design/pie.md#reference-values); all alphas in bits.

    Parameters
    ----------
    epsilon, n, domain
        The point (as in ``figure4_table``).
    alpha_ldp_min, alpha_ldp_tanh : float
        alpha of Prop. 4.1 in the min form [REC] and the tanh form [DER].
    lambda_rr, alpha_rr : float
        lambda_RR and alpha_RR of Thm 4.2 [DER].
    g : int
        The LDP-optimal hash range max(2, round(e^eps + 1)).
    alpha_glh : float
        Thm 4.4 at that g (not in the paper's table).
    """

    epsilon: float
    n: int
    domain: int
    alpha_ldp_min: float
    alpha_ldp_tanh: float
    lambda_rr: float
    alpha_rr: float
    g: int
    alpha_glh: float


def figure4_table(epsilons: Sequence[float] = FIGURE4_EPSILONS, n: int = FIGURE4_N,
                  domain: int = FIGURE4_DOMAIN) -> tuple[Figure4Row, ...]:
    """alpha vs epsilon for the three bounds (paper 002 Fig. 4): one ``Figure4Row`` per epsilon.

    Defaults: the reference table of docs/design/pie.md#reference-values. GLH uses
    g = max(2, round(e^eps + 1)) (OLH's choice).

    Parameters
    ----------
    epsilons : sequence of float
        The budgets (> 0); default {0.1, 1, 5, 10, 15, 20}.
    n : int
        Number of users (>= 2); default 1,370,637.
    domain : int
        |X| (>= 2); default 10,500,393 POIs.

    Returns
    -------
    tuple of Figure4Row
        One row per epsilon.
    """
    e = check_epsilon(epsilons, "epsilons").ravel()
    n = check_count(n, "number of users n")
    k = check_count(domain, "domain size |X|")
    g = np.maximum(2.0, np.round(np.exp(np.minimum(e, 700.0)) + 1.0))
    cols = (alpha_ldp(e, n, "min"), alpha_ldp(e, n, "tanh"), lambda_rr(e, k), alpha_rr(e, n, k),
            alpha_glh(e, n, k, g))
    a_min, a_tanh, lam, a_rr, a_glh = (np.atleast_1d(c) for c in cols)
    return tuple(
        Figure4Row(float(e[i]), n, k, float(a_min[i]), float(a_tanh[i]), float(lam[i]),
                   float(a_rr[i]), int(g[i]), float(a_glh[i]))
        for i in range(e.size)
    )
