"""The one EM engine of the package: iteration, acceleration and stopping rules.

Every EM in reidrisk is a multiplicative maximum-likelihood iteration ``theta <- F(theta)`` on a
batch of P independent problems (arrays with a leading axis of length P) of one of two kinds:

* ``PoissonCounts``: support counts ``w ~ Poisson(A theta)`` through a linear channel ``A`` (paper
  004 eq. 8-11, corrected as in docs/design/core.md#count-em-correction: Shepp-Vardi /
  Richardson-Lucy),
  ``F(theta) = theta * A^T (w / A theta) / colsum(A)``; used for single attributes (frequency.py),
  pair tables (pairs.py) and c-way tables (collect/_tensor.py);
* ``ReportMixture``: the exact likelihood of grouped reports ``sum_u C_u log s_u`` with
  ``s = L theta`` (``theta`` a probability table), ``F(theta) = theta * L^T (C / s) / N``; used by
  the report-level EMs (``frequency.em_reports``, ``collect._tensor.exact_em``).

``run(problem, start, stop=..., max_iter=...)`` iterates them and returns an ``EMResult``.

Stopping rules (``stop``; why each, docs/design/core.md#em-engine)
------------------------------------------------------------------
``"noise"`` (default) / ``("noise", threshold)``: stop when the deviance ``2 (L* - L_t)`` still to
be gained before the fixed point is below ``threshold`` (default ``NOISE_TOL``) per free parameter.
It is extrapolated from the last two gains, ``g_t rho / (1 - rho)`` with ``rho = g_t / g_{t-1}``
(continuing while ``rho >= 1``); a zero gain, a loss or a gain within rounding (``ROUNDING_GAIN``
times the total count) means the fixed point is reached. Under SQUAREM the gains are those of the
two plain steps inside a cycle, and the rule must hold in two consecutive cycles.
A float: stop when no probability (the estimate divided by its sum) moves by more than that in one
EM step -- an early stop along the plain EM path.
``"discrepancy"`` (``PoissonCounts`` only; Morozov's discrepancy principle): stop at the first
iterate, the start included, with ``X^2 = sum (w - mu)^2 / (mu (1 - mu / n)) <= number of cells``.
``("gain", tol)`` (``tol >= 0``): stop after the first EM step whose objective gain is below
``tol`` times the total count (``tol = 0``: only a loss stops); the latent class model's early stop.
``None``: exactly ``max_iter`` EM steps.

Acceleration: under ``"noise"`` only, SQUAREM (Varadhan & Roland 2008, Scand. J. Statist. 35,
scheme S3): two EM steps give ``r = theta_1 - theta_0``, ``v = theta_2 - 2 theta_1 + theta_0``;
``theta' = theta_0 + 2 a r + a^2 v`` with ``a = ||r|| / ||v||`` (at least 1, at most a step bound
that grows fourfold while it binds) is pulled back toward ``theta_2`` until positive, and one EM
step ends the cycle; a cycle ending below ``theta_2``'s likelihood returns ``theta_2`` and shrinks
the bound. A cycle costs three EM steps; ``iterations`` counts EM steps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from reidrisk.errors import ReidriskError

NOISE_TOL = 1e-4
"""Remaining deviance to the fixed point, per free parameter, below which ``"noise"`` stops."""

DEFAULT_MAX_ITER = 10_000
"""Cap on the EM steps of one fit."""

STOP_RULES = ("noise", "discrepancy")

ROUNDING_GAIN = 64 * np.finfo(np.float64).eps
"""Deviance gains below this times the problem's total count are rounding noise (module doc): the
log-likelihood is a sum over that many counts of terms of order one, each rounded at ``eps``; at a
fixed point the computed gains are a few ``eps`` times the count, of either sign, so 64 leaves a
wide margin and is far below any gain that matters (``NOISE_TOL`` per free parameter)."""

_STEP_MAX_GROWTH = 4.0  # SQUAREM: factor by which the step bound grows while it binds
_BACKTRACKS = 12  # SQUAREM: halvings of (a - 1) before falling back to theta_2


class EstimationError(ReidriskError, ValueError):
    """Bad input to an estimator. The message names the attribute/parameter and the fix."""


# ---------------------------------------------------------------------------------------------
# results and stopping rules
# ---------------------------------------------------------------------------------------------
def _frozen(a) -> np.ndarray:
    a = np.array(a, dtype=np.float64, copy=True)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class EMResult:
    """Output of one EM fit.

    For a batch (``run``), ``estimate`` has a leading axis of length P and ``iterations`` /
    ``converged`` are (P,) arrays; the single-problem front ends return scalars.

    Parameters
    ----------
    estimate : numpy.ndarray
        The fitted parameters (counts for count EMs, probabilities for report EMs), the shape of
        the start; stored read-only.
    iterations : int or numpy.ndarray
        EM steps taken (a SQUAREM cycle is three).
    converged : bool or numpy.ndarray
        The stopping rule was met before ``max_iter`` (always ``True`` for ``stop=None``).
    """

    estimate: np.ndarray
    iterations: int | np.ndarray
    converged: bool | np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "estimate", _frozen(self.estimate))
        for name, dtype, scalar in (("iterations", np.int64, int), ("converged", bool, bool)):
            v = getattr(self, name)
            if np.ndim(v):
                arr = np.array(v, dtype=dtype, copy=True)
                arr.setflags(write=False)
                object.__setattr__(self, name, arr)
            else:
                object.__setattr__(self, name, scalar(v))

    __iter__ = None  # named fields, not a tuple: ``fit.estimate``, never ``T, it, ok = fit``

    def __getitem__(self, i: int) -> EMResult:
        """Problem ``i`` of a batch result, as a single-problem result."""
        if not np.ndim(self.iterations):
            raise TypeError("a single-problem EMResult has named fields (estimate, iterations, "
                            "converged) and no items")
        return EMResult(self.estimate[i], int(np.asarray(self.iterations)[i]),
                        bool(np.asarray(self.converged)[i]))


@dataclass(frozen=True)
class StopRule:
    """A parsed stopping rule (module doc; ``parse_stop`` builds it).

    Parameters
    ----------
    kind : str
        ``"noise"``, ``"tol"`` (a float tolerance), ``"gain"``, ``"discrepancy"`` or ``"none"``
        (exactly ``max_iter`` steps).
    threshold : float
        For ``"noise"``, the remaining deviance per free parameter below which the fit stops;
        for ``"tol"``, the largest probability move of one EM step; for ``"gain"``, the least
        objective gain of one EM step per unit of the problem's total count; unused (0)
        otherwise.
    """

    kind: str
    threshold: float = 0.0


_STOP_HELP = ("stop must be 'noise', ('noise', threshold), ('gain', tol), 'discrepancy', a "
              "positive float tolerance or None")


def parse_stop(stop) -> StopRule:
    """The one parser of ``stop`` (module doc); raises ``EstimationError`` naming the value.

    Parameters
    ----------
    stop : str, tuple, float, StopRule or None
        ``"noise"``, ``("noise", threshold)``, ``("gain", tol)``, ``"discrepancy"``, a positive
        float tolerance, ``None`` (run to ``max_iter``) or an already parsed ``StopRule``.

    Returns
    -------
    StopRule
        The rule; ``"noise"`` carries ``NOISE_TOL`` unless a threshold is given.

    Raises
    ------
    EstimationError
        For any other value, or a tolerance or threshold that is not finite and > 0 (for
        ``"gain"``: not finite and >= 0).
    """
    if isinstance(stop, StopRule):
        return stop
    if stop is None:
        return StopRule("none")
    if isinstance(stop, str):
        if stop == "noise":
            return StopRule("noise", NOISE_TOL)
        if stop == "discrepancy":
            return StopRule("discrepancy")
        raise EstimationError(f"{_STOP_HELP}, got {stop!r}")
    if isinstance(stop, (tuple, list)):
        if len(stop) == 2 and stop[0] == "noise":
            return StopRule("noise", _positive(stop[1], stop))
        if len(stop) == 2 and stop[0] == "gain":
            return StopRule("gain", _positive(stop[1], stop, zero=True))
        raise EstimationError(f"{_STOP_HELP}, got {stop!r}")
    return StopRule("tol", _positive(stop, stop))


def _positive(value, stop, zero: bool = False) -> float:
    if isinstance(value, (bool, str)):
        raise EstimationError(f"{_STOP_HELP}, got {stop!r}")
    try:
        tol = float(value)
    except (TypeError, ValueError):
        raise EstimationError(f"{_STOP_HELP}, got {stop!r}") from None
    if not np.isfinite(tol) or tol < 0 or (tol == 0 and not zero):
        raise EstimationError(f"stop tolerance must be finite and {'>=' if zero else '>'} 0, "
                              f"got {stop!r}")
    return tol


def check_max_iter(max_iter) -> int:
    """``max_iter`` as an int >= 1, or ``EstimationError``.

    Parameters
    ----------
    max_iter : int
        The largest number of EM steps (an integral float is accepted).

    Returns
    -------
    int
        ``max_iter`` as a Python int.

    Raises
    ------
    EstimationError
        For a bool, a non-integral number or a value below 1.
    """
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer, float)) \
            or int(max_iter) != max_iter or int(max_iter) < 1:
        raise EstimationError(f"max_iter must be an integer >= 1, got {max_iter!r}")
    return int(max_iter)


def noise_stop(gain, prev_gain, threshold: float, dof, total=0.0) -> np.ndarray:
    """The ``"noise"`` stopping rule (module doc) on the last two deviance gains, per problem.

    True where the extrapolated remaining deviance ``gain rho / (1 - rho)``, ``rho = gain /
    prev_gain``, is below ``threshold * dof``, or where the gain is not positive or within
    rounding (``ROUNDING_GAIN * total``): the fixed point.

    Parameters
    ----------
    gain : numpy.ndarray (P,)
        Deviance gain ``2 (L_t - L_{t-1})`` of the latest iteration.
    prev_gain : numpy.ndarray (P,)
        The gain of the iteration before (NaN when there is none).
    threshold : float
        Remaining deviance per free parameter below which the rule stops.
    dof : float or numpy.ndarray
        Free parameters of each problem.
    total : float or numpy.ndarray
        Each problem's count, the scale of the rounding test.

    Returns
    -------
    numpy.ndarray of bool (P,)
        True where the problem has reached its stop.
    """
    gain = np.asarray(gain, dtype=np.float64)
    gain = np.where(np.abs(gain) <= ROUNDING_GAIN * np.asarray(total, dtype=np.float64), 0.0, gain)
    prev = np.asarray(prev_gain, dtype=np.float64)
    # gain rho / (1 - rho) = gain^2 / (prev - gain) for 0 <= rho < 1, compared without dividing
    # (NaN, i.e. no previous gain, fails every comparison: not converged)
    linear = (gain >= 0) & (prev > gain)
    bound = threshold * np.asarray(dof, dtype=np.float64)
    return (gain <= 0) | (linear & (gain * gain < bound * (prev - gain)))


# ---------------------------------------------------------------------------------------------
# problems
# ---------------------------------------------------------------------------------------------
def _axes(a: np.ndarray) -> tuple[int, ...]:
    return tuple(range(1, a.ndim))


def safe_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den (broadcast), 0 where den <= 0: a cell nobody can reach contributes nothing.

    Parameters
    ----------
    num, den : numpy.ndarray
        Numerator and denominator (broadcast together).

    Returns
    -------
    numpy.ndarray
        The quotient, of the broadcast shape, 0 where ``den <= 0``.
    """
    den = np.asarray(den, dtype=np.float64)
    shape = den.shape if np.shape(num) == den.shape else np.broadcast_shapes(np.shape(num),
                                                                             den.shape)
    out = np.zeros(shape)
    np.divide(num, den, out=out, where=den > 0)
    return out


_ABOVE_MINUS_ONE = np.nextafter(-1.0, 0.0)


def poisson_gain(w, mu_old, mu_new, axis=None):
    """The Poisson log-likelihood gain ``L(mu_new) - L(mu_old)``, computed without cancellation.

    With ``L(mu) = sum(w log mu - mu)``, the gain is
    ``sum w log1p((mu_new - mu_old) / mu_old) - sum(mu_new - mu_old)``.

    Parameters
    ----------
    w : numpy.ndarray
        The counts.
    mu_old, mu_new : numpy.ndarray
        The two means, shaped like ``w``.
    axis : int or tuple of int, optional
        Axes summed over (``None``: all).

    Returns
    -------
    float or numpy.ndarray
        The log-likelihood gain, summed over ``axis`` (a loss is negative); a mean that falls
        to 0 where ``w > 0`` counts as a relative step just above -1, not as an infinite loss.
    """
    d = mu_new - mu_old
    # a cell with w = 0 adds nothing to the log term (its factor is finite: w * 0); where w > 0 a
    # mean collapsing to 0 is an infinite loss, bounded here at the smallest relative step above -1
    log_term = np.log1p(np.maximum(safe_ratio(d, mu_old), _ABOVE_MINUS_ONE))
    return np.sum(w * log_term, axis=axis) - np.sum(d, axis=axis)


class PoissonCounts:
    """P count problems ``w ~ Poisson(A theta)`` (module doc).

    Parameters
    ----------
    w : array_like (P, ...)
        The observed support counts of each problem.
    channel : object
        The linear channel ``A``: ``forward(theta)`` (``A theta``, shape of ``w``),
        ``adjoint(d)`` (``A^T d``, shape of ``theta``), ``colsum`` (``A^T 1``, broadcastable to
        ``theta``) and ``take(keep)`` (the channel of a sub-batch).
    dof : float or array_like (P,)
        Free parameters of each problem (the ``"noise"`` rule's scale).
    """

    def __init__(self, w, channel, dof):
        self.w = np.asarray(w, dtype=np.float64)
        self.channel = channel
        self.dof = np.broadcast_to(np.asarray(dof, dtype=np.float64), (self.w.shape[0],)).copy()
        self.total = self.w.sum(axis=_axes(self.w))

    def forward(self, theta):
        """The expected counts ``A theta``.

        Parameters
        ----------
        theta : numpy.ndarray (P, ...)
            The current estimates.

        Returns
        -------
        numpy.ndarray
            ``A theta``, the shape of ``w``.
        """
        return self.channel.forward(theta)

    def update(self, theta, mu):
        """One EM step, ``theta * A^T (w / mu) / colsum(A)`` (module doc).

        Parameters
        ----------
        theta : numpy.ndarray (P, ...)
            The current estimates.
        mu : numpy.ndarray
            Their expected counts, ``forward(theta)``.

        Returns
        -------
        numpy.ndarray
            The next estimates, the shape of ``theta``.
        """
        return theta * self.channel.adjoint(safe_ratio(self.w, mu)) / self.channel.colsum

    def gain(self, mu_old, mu_new):
        """The Poisson log-likelihood gain from ``mu_old`` to ``mu_new`` (``poisson_gain``).

        Parameters
        ----------
        mu_old, mu_new : numpy.ndarray
            Expected counts before and after, the shape of ``w``.

        Returns
        -------
        numpy.ndarray (P,)
            The gain of each problem.
        """
        return poisson_gain(self.w, mu_old, mu_new, axis=_axes(self.w))

    def discrepancy(self, mu, n_reports):
        """Pearson ``X^2`` of the counts against their expectation, for the discrepancy rule.

        Each count is a sum of n Bernoulli(mu / n) indicators, so every term has expectation 1.

        Parameters
        ----------
        mu : numpy.ndarray
            Expected counts, the shape of ``w``.
        n_reports : array_like (P,)
            The number of reports behind each problem's counts.

        Returns
        -------
        numpy.ndarray (P,)
            ``X^2 = sum (w - mu)^2 / (mu (1 - mu / n))`` of each problem.
        """
        shape = (-1,) + (1,) * (self.w.ndim - 1)
        nr = np.asarray(n_reports, dtype=np.float64).reshape(shape)
        pr = np.clip(mu / nr, 1e-300, 1 - 1e-15)
        return np.sum((self.w - nr * pr) ** 2 / (nr * pr * (1 - pr)), axis=_axes(self.w))

    def take(self, keep):
        """The sub-batch of the problems selected by ``keep``.

        Parameters
        ----------
        keep : numpy.ndarray of bool (P,)
            The problems to keep.

        Returns
        -------
        PoissonCounts
            The kept problems, with their channel, counts and degrees of freedom.
        """
        sub = PoissonCounts.__new__(PoissonCounts)
        sub.w, sub.channel, sub.dof = self.w[keep], self.channel.take(keep), self.dof[keep]
        sub.total = self.total[keep]
        return sub


class ReportMixture:
    """One exact report-likelihood problem (module doc) as a batch of one.

    Parameters
    ----------
    den : callable
        ``den(theta)``: ``s = L theta``, each group's report probability, for a probability
        table ``theta`` (the result has the shape of ``C``).
    num : callable
        ``num(r)``: ``L^T r``, the shape of ``theta``.
    C : array_like
        The number of reports in each group (only groups with ``C > 0`` count).
    dof : float
        Free parameters of the table.

    Raises
    ------
    EstimationError
        When there is no report (``C`` sums to 0).
    """

    def __init__(self, den: Callable, num: Callable, C, dof):
        self.den, self.num = den, num
        self.C = np.asarray(C, dtype=np.float64)
        self.N = float(self.C.sum())
        if not self.N > 0:
            raise EstimationError("the report EM needs at least one report")
        self.ok = self.C > 0
        self.dof = np.array([float(dof)])
        self.total = np.array([self.N])

    def forward(self, theta):
        """The group probabilities ``s = L theta``.

        Parameters
        ----------
        theta : numpy.ndarray (1, ...)
            The current probability table, as a batch of one.

        Returns
        -------
        numpy.ndarray (1, ...)
            ``den(theta)``, as a batch of one.
        """
        return self.den(theta[0])[None]

    def update(self, theta, mu):
        """One EM step, ``theta * L^T (C / s) / N``, renormalized to sum 1 (module doc).

        Parameters
        ----------
        theta : numpy.ndarray (1, ...)
            The current probability table, as a batch of one.
        mu : numpy.ndarray (1, ...)
            Its group probabilities, ``forward(theta)``.

        Returns
        -------
        numpy.ndarray (1, ...)
            The next table.
        """
        r = np.zeros_like(mu[0])
        np.divide(self.C, mu[0], out=r, where=self.ok & (mu[0] > 0))
        t = theta[0] * self.num(r) / self.N
        return (t / t.sum())[None]

    def gain(self, mu_old, mu_new):
        """The log-likelihood gain ``sum_u C_u log(s_new / s_old)`` over groups with reports.

        Parameters
        ----------
        mu_old, mu_new : numpy.ndarray (1, ...)
            Group probabilities before and after.

        Returns
        -------
        numpy.ndarray (1,)
            The gain (a collapse to 0 counts as a relative step just above -1).
        """
        a, b = mu_old[0][self.ok], mu_new[0][self.ok]
        rel = safe_ratio(b - a, a)
        return np.array([float(np.sum(self.C[self.ok] * np.log1p(np.maximum(
            rel, np.nextafter(-1.0, 0.0)))))])

    def take(self, keep):
        """The problem itself: a batch of one only leaves the run whole.

        Parameters
        ----------
        keep : numpy.ndarray of bool (1,)
            Ignored.

        Returns
        -------
        ReportMixture
            ``self``.
        """
        return self


# ---------------------------------------------------------------------------------------------
# the engine
# ---------------------------------------------------------------------------------------------
def _normalized(theta):
    s = theta.sum(axis=_axes(theta), keepdims=True)
    return theta / np.where(s > 0, s, 1.0)


class _Batch:
    """The active part of a batch: problem, iterates and their means, bookkeeping per problem."""

    def __init__(self, problem, theta):
        self.problem = problem
        self.theta = theta
        self.mu = problem.forward(theta)
        self.idx = np.arange(theta.shape[0])

    def keep(self, keep, *arrays):
        self.problem = self.problem.take(keep)
        self.theta, self.mu, self.idx = self.theta[keep], self.mu[keep], self.idx[keep]
        return [a[keep] for a in arrays]


def run(problem, start, *, stop="noise", max_iter: int = DEFAULT_MAX_ITER,
        accelerate: bool | None = None, n_reports=None,
        callback: Callable[[np.ndarray, np.ndarray, np.ndarray], None] | None = None) -> EMResult:
    """Iterate the EM of a batch of problems until each one meets its stopping rule.

    Each problem runs from its row of ``start`` until it meets ``stop`` (module doc) or has
    taken ``max_iter`` EM steps, and leaves the batch when it stops.

    Parameters
    ----------
    problem : PoissonCounts or ReportMixture
        The batch of P problems.
    start : numpy.ndarray (P, ...)
        The starting iterates.
    stop : str, tuple, float, StopRule or None
        The stopping rule, as ``parse_stop`` reads it (module doc); default ``"noise"``.
    max_iter : int
        The largest number of EM steps.
    accelerate : bool, optional
        SQUAREM (default: under the ``"noise"`` rule only).
    n_reports : array_like (P,), optional
        Report counts, required by the ``"discrepancy"`` rule.
    callback : callable, optional
        ``callback(idx, theta, mu)``: called with the batch positions, iterates and means of
        every problem at the start, then of the active problems after every accepted plain step
        or SQUAREM cycle (e.g. to trace an objective).

    Returns
    -------
    EMResult
        A batch result.
    """
    rule = parse_stop(stop)
    max_iter = check_max_iter(max_iter)
    if accelerate is None:
        accelerate = rule.kind == "noise"
    if rule.kind == "discrepancy" and not isinstance(problem, PoissonCounts):
        raise EstimationError("stop='discrepancy' works on support counts, not on whole reports")
    theta = np.array(start, dtype=np.float64)
    P = theta.shape[0]
    out = theta.copy()
    iters = np.zeros(P, dtype=np.int64)
    conv = np.zeros(P, dtype=bool)
    b = _Batch(problem, theta)
    if callback is not None:
        callback(b.idx, b.theta, b.mu)
    if rule.kind == "discrepancy":
        nrep = np.broadcast_to(np.asarray(n_reports, dtype=np.float64), (P,)).copy()
        cells = float(np.prod(theta.shape[1:]))
        done = problem.discrepancy(b.mu, nrep) <= cells
        conv[done] = True
        [nrep] = b.keep(~done, nrep)
    prev = np.full(b.idx.size, np.nan)
    step_max = np.ones(b.idx.size)
    it = np.zeros(b.idx.size, dtype=np.int64)
    while b.idx.size:
        # every active problem has taken the same number of steps; a cycle never passes max_iter
        cycle = accelerate and max_iter - int(it[0]) >= 3
        if cycle:
            theta_new, mu_new, used, step_max, (g1, g2) = _squarem_cycle(b, step_max)
        else:
            theta_new = b.problem.update(b.theta, b.mu)
            mu_new = b.problem.forward(theta_new)
            used = 1
        it = it + used
        if rule.kind == "noise":
            if cycle:  # the cycle ends at least as high as its two plain steps
                now = noise_stop(g2, g1, rule.threshold, b.problem.dof, b.problem.total)
                done = now & (prev > 0)  # two cycles in a row (prev: 1 where the last one met it)
                prev = np.where(now, 1.0, 0.0)
            elif accelerate:  # the last one or two steps before max_iter
                done = np.zeros(b.idx.size, dtype=bool)
            else:
                gain = 2.0 * b.problem.gain(b.mu, mu_new)
                done = noise_stop(gain, prev, rule.threshold, b.problem.dof, b.problem.total)
                prev = gain
        elif rule.kind == "tol":
            move = np.abs(_normalized(theta_new) - _normalized(b.theta))
            done = move.max(axis=_axes(move)) < rule.threshold
        elif rule.kind == "gain":
            done = b.problem.gain(b.mu, mu_new) < rule.threshold * b.problem.total
        elif rule.kind == "discrepancy":
            done = b.problem.discrepancy(mu_new, nrep) <= cells
        else:
            done = np.zeros(b.idx.size, dtype=bool)
        b.theta, b.mu = theta_new, mu_new
        if callback is not None:
            callback(b.idx, b.theta, b.mu)
        capped = it >= max_iter
        fin = done | capped
        if fin.any():
            out[b.idx[fin]] = b.theta[fin]
            iters[b.idx[fin]] = it[fin]
            conv[b.idx[fin]] = done[fin] | (rule.kind == "none")
            keep = ~fin
            arrays = [prev, step_max, it] + ([nrep] if rule.kind == "discrepancy" else [])
            kept = b.keep(keep, *arrays)
            prev, step_max, it = kept[:3]
            if rule.kind == "discrepancy":
                nrep = kept[3]
    return EMResult(out, iters, conv)


def _squarem_cycle(b: _Batch, step_max):
    """One SQUAREM cycle (module doc) on every active problem. Returns the new iterates, their
    means, the EM steps used (3), the updated step bounds and the deviance gains of the cycle's
    two plain EM steps (for the ``"noise"`` rule)."""
    pr = b.problem
    t0, mu0 = b.theta, b.mu
    t1 = pr.update(t0, mu0)
    mu1 = pr.forward(t1)
    t2 = pr.update(t1, mu1)
    mu2 = pr.forward(t2)
    plain = (2.0 * pr.gain(mu0, mu1), 2.0 * pr.gain(mu1, mu2))
    ax = _axes(t0)
    r = t1 - t0
    v = t2 - 2.0 * t1 + t0
    sr, sv = np.sum(r * r, axis=ax), np.sum(v * v, axis=ax)
    a = np.ones_like(sr)
    np.divide(sr, sv, out=a, where=(sv > 0) & np.isfinite(sr))  # finite / positive: no NaN
    a = np.clip(np.sqrt(a), 1.0, step_max)
    shape = (-1,) + (1,) * (t0.ndim - 1)

    def extrapolate(a):
        ac = a.reshape(shape)
        return t0 + 2.0 * ac * r + ac * ac * v

    tx = extrapolate(a)
    bad = np.any(tx <= 0, axis=ax)
    for _ in range(_BACKTRACKS):  # pull back toward theta_2 (a = 1) until every entry is positive
        if not bad.any():
            break
        a = np.where(bad, 0.5 * (a + 1.0), a)
        tx = extrapolate(a)
        bad = np.any(tx <= 0, axis=ax)
    if bad.any():
        a = np.where(bad, 1.0, a)
        tx = np.where(bad.reshape(shape), t2, tx)
    t3 = pr.update(tx, pr.forward(tx))
    mu3 = pr.forward(t3)
    worse = pr.gain(mu2, mu3) < 0  # monotone safeguard: never below two plain EM steps
    if worse.any():
        theta = np.where(worse.reshape(shape), t2, t3)
        mu = np.where(worse.reshape((-1,) + (1,) * (mu3.ndim - 1)), mu2, mu3)
    else:
        theta, mu = t3, mu3
    step_max = np.where(worse, np.maximum(1.0, step_max / _STEP_MAX_GROWTH),
                        np.where(a >= step_max, step_max * _STEP_MAX_GROWTH, step_max))
    return theta, mu, 3, step_max, plain


# ---------------------------------------------------------------------------------------------
# starts
# ---------------------------------------------------------------------------------------------
def positive_start(init, scale, shape) -> np.ndarray:
    """A positive start of the multiplicative EM, summing to ``scale`` per problem.

    ``init`` (any positive scale; default uniform) is rescaled to sum ``scale`` per problem, its
    zeros lifted to 1e-12 of the mean (a zero would stay zero).

    Parameters
    ----------
    init : array_like, optional
        The start: finite, non-negative, a positive sum per problem, any scale (``None``:
        uniform).
    scale : float or array_like (P,)
        The sum of each problem's start.
    shape : tuple of int
        (P, ...), the shape of the start.

    Returns
    -------
    numpy.ndarray
        The start, of ``shape``, positive, each problem summing to its ``scale``.

    Raises
    ------
    EstimationError
        For a bad init.
    """
    P = shape[0]
    cells = int(np.prod(shape[1:]))
    scale = np.broadcast_to(np.asarray(scale, dtype=np.float64), (P,)).reshape(
        (-1,) + (1,) * (len(shape) - 1))
    if init is None:
        return np.broadcast_to(scale / cells, shape).copy()
    z = np.array(init, dtype=np.float64)
    if z.shape != tuple(shape) and z.shape == tuple(shape[1:]) and P == 1:
        z = z[None]
    if z.shape != tuple(shape) or np.any(z < 0) or not np.all(np.isfinite(z)) \
            or np.any(z.sum(axis=tuple(range(1, z.ndim))) <= 0):
        raise EstimationError(
            f"init must be finite non-negative numbers of shape {tuple(shape[1:])} with a "
            f"positive sum, got {init!r}" if P == 1 else
            f"init must be a finite non-negative array of shape {tuple(shape)} with a positive "
            "sum per problem"
        )
    z = _normalized(z)
    z = np.maximum(z, 1e-12 / cells)
    return _normalized(z) * scale
