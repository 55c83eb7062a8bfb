"""Posterior over a record's population count given its matches in sampled databases (paper 000).

Question (docs/design/uniqueness.md#question): for a record ``x`` with model probability ``q`` (the
probability of its cell under a population model, e.g. the copula of ``reidrisk.copula``), a
population of ``N`` people and ``m`` databases, database ``D_i`` a sample of the population at rate
``s_i`` holding ``c_i`` records equal to ``x``: what is the distribution of ``X``, the number of
people in the population whose values equal ``x``?

Model (paper 000, eq. 15-19)::

    p_1(x) = Binomial(x; N, q) / (1 - (1 - q)^N)                        x >= 1         (eq. 16)
    p_m(x) = p_1(x) prod_i C(x, c_i) s_i^c_i (1 - s_i)^(x - c_i) / Z     x >= max(1, c_i) (eq. 17)
    Z      = sum_{x'} of the numerator over x' = max(1, max c_i) .. N   (eq. 18, N not n)
    E      = sum_x x p_m(x)                                                              (eq. 19)

``q`` is floored first (eq. 9-14, see ``floors``). Everything is computed in log space. The
posterior is log-concave in ``x`` (the binomial pmf and ``C(x, c)`` are log-concave, the rest is
linear), so it is unimodal: per record we locate the mode by integer bisection on the ratio
``p_m(x+1)/p_m(x)`` and the window ``[lo, hi]`` where ``log p_m`` is within ``D`` of its maximum by
bisection on ``log p_m`` (about ``log2 N`` vectorized steps each). Log-concavity also gives a
rigorous geometric bound on the mass left outside the window (``tail_bound``); ``D`` is raised
until that bound is below ``support_mass``. The window depends on ``N q``, the counts and the
rates, never on ``N`` itself, so N = 10 million costs what N = 30,000 costs. Inside the window the
probabilities are accumulated from the exact log ratios ``log p_m(x+1) - log p_m(x)`` (a row-wise
cumulative sum), which keeps full relative precision even when ``N`` is large.

A database with ``s_i = 1`` is a census: ``(1 - s_i)^(x - c_i)`` forces ``X = c_i`` exactly.

The "plain count" convention of the paper: ``c_i`` is the number of records of ``D_i`` equal to
``x`` on every attribute (``match_counts``). With LDP-randomized databases these counts both lose
and gain matches; this module reproduces the paper's plain count.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln

from reidrisk.errors import ReidriskError
from reidrisk.schema import MISSING
from reidrisk.uniqueness.floors import DEFAULT_ALPHA, DEFAULT_FLOOR, floor_q

DEFAULT_SUPPORT_MASS: float = 1e-12
"""Default bound on the posterior mass left outside each record's window."""

_BLOCK_ELEMENTS = 1 << 22  # padded (rows x width) elements processed at once
_MAX_WIDENINGS = 8


class PosteriorError(ReidriskError, ValueError):
    """Bad posterior input. The message names the parameter, the record/database and the fix."""


# ---------------------------------------------------------------------------------------------
# result
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PosteriorResult:
    """Posterior of the population count X for r query records (paper 000 eq. 17-19).

    The support is stored compactly (ragged): record ``i`` has probabilities over the consecutive
    counts ``x = start[i] .. start[i] + width[i] - 1`` in ``probs[offsets[i]:offsets[i + 1]]``.
    Use ``pmf(i)`` for one record or ``dense()`` for a padded (r, L) matrix.

    Parameters
    ----------
    q : numpy.ndarray (r,) float64
        The (floored) cell probabilities actually used.
    N : int
        Population size.
    rates : numpy.ndarray (m,) float64
        Sampling rates s_i of the databases.
    counts : numpy.ndarray (r, m) int64
        Matches c_i of each record in each database.
    start : numpy.ndarray (r,) int64
        First count of each record's window.
    width : numpy.ndarray (r,) int64
        Number of counts in each record's window.
    offsets : numpy.ndarray (r + 1,) int64
        Where each record's segment of ``probs`` starts.
    probs : numpy.ndarray (offsets[-1],) float64
        p_m(x) over each record's window; each segment sums to 1.
    expected : numpy.ndarray (r,)
        E[X] (eq. 19).
    variance : numpy.ndarray (r,)
        Var[X].
    p_unique : numpy.ndarray (r,)
        P(X = 1): the record's values are unique in the population.
    tail_bound : numpy.ndarray (r,)
        Rigorous upper bound on the posterior mass outside the window.
    """

    q: np.ndarray
    N: int
    rates: np.ndarray
    counts: np.ndarray
    start: np.ndarray
    width: np.ndarray
    offsets: np.ndarray
    probs: np.ndarray
    expected: np.ndarray
    variance: np.ndarray
    p_unique: np.ndarray
    tail_bound: np.ndarray

    @property
    def n_records(self) -> int:
        """r, the number of query records."""
        return int(self.start.size)

    def pmf(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """(x, p) of record ``i``: counts in its window and their posterior probabilities.

        Parameters
        ----------
        i : int
            The record's position, 0 .. r - 1.

        Returns
        -------
        x : numpy.ndarray
            (width[i],) int64 counts of the record's window, ``start[i]`` upward.
        p : numpy.ndarray
            (width[i],) their posterior probabilities p_m(x) (a copy; sums to 1).

        Raises
        ------
        IndexError
            ``i`` is outside 0 .. r - 1.
        """
        i = int(i)
        if not 0 <= i < self.n_records:
            raise IndexError(f"record index {i} outside 0..{self.n_records - 1}")
        x = self.start[i] + np.arange(self.width[i], dtype=np.int64)
        return x, self.probs[self.offsets[i]:self.offsets[i + 1]].copy()

    def dense(self, rows: np.ndarray | slice | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(start, P): a padded matrix ``P[i, k] = P(X = start[i] + k)`` for the selected rows.

        P has the common width ``max(width)`` of the selection; padding is 0.

        Parameters
        ----------
        rows : numpy.ndarray or slice, optional
            The records to select, as positions, a boolean mask or a slice (default: all).

        Returns
        -------
        start : numpy.ndarray
            (k,) int64 first count of each selected record's window (a copy).
        P : numpy.ndarray
            (k, max(width)) float64 probabilities, zero past each record's window.
        """
        idx = np.arange(self.n_records)[rows] if rows is not None else np.arange(self.n_records)
        width = self.width[idx]
        L = int(width.max()) if idx.size else 0
        out = np.zeros((idx.size, L))
        k = np.arange(L)
        valid = k[None, :] < width[:, None]
        src = self.offsets[idx][:, None] + k[None, :]
        out[valid] = self.probs[src[valid]]
        return self.start[idx].copy(), out

    def prob_greater(self, T: float | np.ndarray) -> np.ndarray:
        """P(X > T) per record; ``T`` a scalar -> (r,), a 1-D array of thresholds -> (r, len(T)).

        Mass outside the window (at most ``tail_bound``) is ignored.

        Parameters
        ----------
        T : float or numpy.ndarray
            A threshold, or a 1-D array of them (need not be whole numbers).

        Returns
        -------
        numpy.ndarray
            (r,) for a scalar ``T``, (r, len(T)) for an array: P(X > T), clipped to [0, 1].

        Raises
        ------
        PosteriorError
            ``T`` is not a number or a 1-D array, or holds NaN.
        """
        t = np.asarray(T, dtype=np.float64)
        scalar = t.ndim == 0
        t = np.atleast_1d(t)
        if t.ndim != 1 or np.isnan(t).any():
            raise PosteriorError(f"thresholds T must be a number or a 1-D array without NaN, got {T!r}")
        r = self.n_records
        out = np.empty((r, t.size))
        if r:
            order = np.argsort(self.width, kind="stable")
            for rows in _blocks(self.width[order]):
                sel = order[rows]
                start, P = self.dense(sel)
                # suffix sums: S[:, k] = P(X >= start + k); S[:, L] = 0
                S = np.zeros((sel.size, P.shape[1] + 1))
                S[:, :-1] = np.cumsum(P[:, ::-1], axis=1)[:, ::-1]
                # X > T  <=>  X >= floor(T) + 1
                k = np.floor(t)[None, :] + 1.0 - start[:, None]
                k = np.clip(k, 0, P.shape[1]).astype(np.int64)
                out[sel] = np.take_along_axis(S, k, axis=1)
            np.clip(out, 0.0, 1.0, out=out)
        return out[:, 0] if scalar else out


# ---------------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------------
def check_population_size(N, error: type[Exception] | None = None) -> int:
    """N as an int; raises ``error`` unless N is a whole number >= 1.

    Parameters
    ----------
    N : int or number
        The population size to check (a float that is a whole number is accepted).
    error : type of Exception, optional
        The exception to raise (default ``PosteriorError``).

    Returns
    -------
    int
        ``N`` as an int.

    Raises
    ------
    PosteriorError
        (or ``error``) ``N`` is not a whole number >= 1.
    """
    try:
        n = int(N)
        ok = n == N and n >= 1
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok:
        raise (error or PosteriorError)(f"population size N must be an integer >= 1, got {N!r}")
    return n


_check_N = check_population_size


def _check_rates(databases) -> np.ndarray:
    s = np.atleast_1d(np.asarray(databases if databases is not None else [], dtype=np.float64))
    if s.ndim != 1:
        raise PosteriorError(
            f"databases must be a 1-D sequence of sampling rates (one per database), got shape {s.shape}"
        )
    for i, v in enumerate(s):
        if not (np.isfinite(v) and 0.0 < v <= 1.0):
            raise PosteriorError(
                f"database {i}: sampling rate s = {v!r} is outside (0, 1]; pass the fraction of "
                "the population the database holds (its size / N)"
            )
    return s


def _check_q(q) -> np.ndarray:
    qa = np.atleast_1d(np.asarray(q, dtype=np.float64))
    if qa.ndim != 1:
        raise PosteriorError(f"q must be a 1-D array (one probability per record), got shape {qa.shape}")
    bad = ~np.isfinite(qa) | (qa < 0.0) | (qa > 1.0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise PosteriorError(f"q[{i}] = {qa[i]!r} is not a probability in [0, 1]")
    return qa


def _check_counts(counts, r: int, m: int, N: int) -> np.ndarray:
    if counts is None:
        if m:
            raise PosteriorError(f"counts is required: one column per database ({m} databases)")
        return np.zeros((r, 0), dtype=np.int64)
    c = np.asarray(counts)
    if c.ndim == 1 and m == 1:
        c = c[:, None]
    if c.ndim != 2 or c.shape != (r, m):
        raise PosteriorError(
            f"counts must have shape (records, databases) = ({r}, {m}), got {c.shape}"
        )
    if c.size and not np.issubdtype(c.dtype, np.integer):
        ci = np.asarray(c, dtype=np.float64)
        if not np.all(np.isfinite(ci)) or np.any(ci != np.round(ci)):
            raise PosteriorError(f"counts must be whole numbers, got dtype {c.dtype} with fractions")
    c = c.astype(np.int64)
    if c.size:
        neg = c < 0
        if neg.any():
            i, j = map(int, np.argwhere(neg)[0])
            raise PosteriorError(f"counts[{i}, {j}] = {c[i, j]} is negative; counts are match counts >= 0")
        big = c > N
        if big.any():
            i, j = map(int, np.argwhere(big)[0])
            raise PosteriorError(
                f"counts[{i}, {j}] = {c[i, j]} exceeds the population size N = {N}: database {j} "
                "cannot hold more matches than the population has people; check N"
            )
    return c


def _check_sizes(sizes, m: int, N: int, c: np.ndarray) -> None:
    if sizes is None:
        return
    n = np.atleast_1d(np.asarray(sizes))
    if n.shape != (m,):
        raise PosteriorError(f"sizes must give one database size per database ({m}), got shape {n.shape}")
    for i, v in enumerate(n):
        if not (v >= 0 and v == int(v)):
            raise PosteriorError(f"database {i}: size {v!r} must be a whole number >= 0")
        if v > N:
            raise PosteriorError(
                f"database {i} holds {int(v)} records but the population has N = {N}: a sample "
                "cannot exceed its population; check N"
            )
    if c.size:
        over = c > n[None, :]
        if over.any():
            i, j = map(int, np.argwhere(over)[0])
            raise PosteriorError(
                f"counts[{i}, {j}] = {c[i, j]} exceeds the size {int(n[j])} of database {j}"
            )


# ---------------------------------------------------------------------------------------------
# the log-concave target
# ---------------------------------------------------------------------------------------------
class _Target:
    """log w(x) (up to a constant) and its increments for a subset of records.

    w(x) = C(N, x) q^x (1-q)^(N-x) prod_i C(x, c_i) (1-s_i)^(x-c_i); constants in x dropped.
    """

    def __init__(self, N: int, logit_q: np.ndarray, c: np.ndarray, log1ms: np.ndarray) -> None:
        self.N = float(N)
        self.logit_q = logit_q  # (k,)
        self.c = c.astype(np.float64)  # (k, m)
        self.log1ms = log1ms  # (m,)

    def _cols(self, x: np.ndarray):
        # x has shape (k,) or (k, L): broadcast per-record quantities along trailing axes
        extra = (slice(None),) + (None,) * (x.ndim - 1)
        return extra

    def ratio(self, x: np.ndarray) -> np.ndarray:
        """g(x) = log w(x+1) - log w(x); -inf at x >= N. Decreasing in x.

        g(x) = log(N-x) - log(x+1) + logit q + sum_i [log(x+1) - log(x+1-c_i) + log(1-s_i)].
        """
        e = self._cols(x)
        m = self.c.shape[1]
        with np.errstate(divide="ignore", invalid="ignore"):
            g = np.log(self.N - x) + (self.logit_q + self.log1ms.sum())[e]
            l1 = np.log1p(x)
            if m != 1:
                g += (m - 1) * l1
            for i in range(m):
                ci = self.c[:, i]
                if ci.any():
                    g -= np.log1p(x - ci[e])
                else:
                    g -= l1
        return np.where(x >= self.N, -np.inf, g)

    def logw(self, x: np.ndarray) -> np.ndarray:
        """log w(x) up to a per-record constant (gammaln form; used to place the window)."""
        e = self._cols(x)
        lw = -gammaln(x + 1.0) - gammaln(self.N - x + 1.0) + x * self.logit_q[e]
        for i in range(self.c.shape[1]):
            lw = lw + gammaln(x + 1.0) - gammaln(x - self.c[:, i][e] + 1.0) + x * self.log1ms[i]
        return lw

    def curvature(self, x: np.ndarray) -> np.ndarray:
        """-d/dx g(x) for continuous x: 1/sigma^2 of the local normal approximation."""
        k = 1.0 / np.maximum(self.N - x, 1.0) + 1.0 / (x + 1.0)
        for i in range(self.c.shape[1]):
            k = k + 1.0 / (x + 1.0 - self.c[:, i]) - 1.0 / (x + 1.0)
        return k


def _bisect_first(pred, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Smallest integer x in [a, b] with pred(x) true, pred monotone false->true, pred(b) true."""
    a = a.astype(np.int64).copy()
    b = b.astype(np.int64).copy()
    while True:
        active = a < b
        if not active.any():
            return a
        mid = (a + b) // 2
        hit = pred(mid.astype(np.float64))
        b = np.where(active & hit, mid, b)
        a = np.where(active & ~hit, mid + 1, a)


def _window(t: _Target, lo: np.ndarray, N: int, support_mass: float):
    """Mode, window [L, R] and the tail bound for each record of ``t`` (all vectorized)."""
    Nv = np.full(lo.shape, N, dtype=np.int64)
    mode = _bisect_first(lambda x: t.ratio(x) < 0.0, lo, Nv)
    mf = mode.astype(np.float64)
    lw_mode = t.logw(mf)
    sigma = 1.0 / np.sqrt(t.curvature(mf))
    D = np.log(1.0 / support_mass) + np.log1p(sigma) + 2.0
    L = np.empty_like(mode)
    R = np.empty_like(mode)
    bound = np.empty(mode.shape)
    todo = np.ones(mode.shape, dtype=bool)
    for _ in range(_MAX_WIDENINGS):
        idx = np.flatnonzero(todo)
        sub = _Target(N, t.logit_q[idx], t.c[idx], t.log1ms)
        thr = lw_mode[idx] - D[idx]
        Li = _bisect_first(lambda x: sub.logw(x) >= thr, lo[idx], mode[idx])
        Ri = _bisect_first(lambda x: ~(sub.logw(x) >= thr) | (x > N), mode[idx], Nv[idx] + 1) - 1
        Lf, Rf = Li.astype(np.float64), Ri.astype(np.float64)
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            # right tail: w(R+1) * sum_k rho^k with rho = exp(g(R+1)) < 1 (log-concavity)
            right = np.where(
                Ri >= N,
                0.0,
                np.exp(sub.logw(np.minimum(Rf + 1.0, N)) - lw_mode[idx])
                / -np.expm1(sub.ratio(np.minimum(Rf + 1.0, N))),
            )
            # left tail: w(L-1) * min(#terms, 1 / (1 - exp(-g(L-2))))
            has_left = Li > lo[idx]
            n_left = (Li - lo[idx]).astype(np.float64)
            geo = np.where(
                Li - 2 >= lo[idx],
                1.0 / -np.expm1(-sub.ratio(np.maximum(Lf - 2.0, lo[idx]))),
                1.0,
            )
            left = np.where(
                has_left,
                np.exp(sub.logw(np.maximum(Lf - 1.0, lo[idx])) - lw_mode[idx])
                * np.minimum(n_left, np.where(np.isfinite(geo) & (geo > 0), geo, np.inf)),
                0.0,
            )
        b = left + right
        L[idx], R[idx], bound[idx] = Li, Ri, b
        over = ~(b <= support_mass)
        if not over.any():
            break
        todo[:] = False
        todo[idx[over]] = True
        D[idx[over]] += np.log(np.where(np.isfinite(b[over]), b[over], 1e300) / support_mass) + 1.0
    return mode, L, R, bound


def _blocks(sorted_width: np.ndarray):
    """Slices of consecutive rows (widths ascending) whose padded blocks stay under the budget."""
    r = sorted_width.size
    i = 0
    while i < r:
        # rows i..j-1 padded to width[j-1]; (j - i) * width[j-1] grows with j
        cost = np.arange(1, r - i + 1) * sorted_width[i:]
        j = i + max(1, int(np.count_nonzero(cost <= _BLOCK_ELEMENTS)))
        yield slice(i, j)
        i = j


# ---------------------------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------------------------
def population_count_posterior(
    q: np.ndarray | Sequence[float],
    N: int,
    databases: Sequence[float] | np.ndarray = (),
    counts: np.ndarray | None = None,
    alpha: float = DEFAULT_ALPHA,
    floor: str = DEFAULT_FLOOR,
    support_mass: float = DEFAULT_SUPPORT_MASS,
    sizes: Sequence[int] | np.ndarray | None = None,
    max_width: int = 1 << 24,
) -> PosteriorResult:
    """Posterior of each record's population count X (paper 000 eq. 9-19).

    Design: docs/design/uniqueness.md#conditioning-on-the-databases.

    Parameters
    ----------
    q : array_like (r,) of float
        Probability of each query record's cell under the population model, in [0, 1].
    N : int
        Population size (a whole number >= 1).
    databases : array_like (m,) of float
        Sampling rates ``s_i`` in (0, 1], one per database; ``s_i = 1`` is a census. Default: no
        database (m = 0), the prior p_1 alone (eq. 16).
    counts : numpy.ndarray (r, m) of int, optional
        ``c_i``: the records of database i equal to the query record (``match_counts``), whole
        numbers in 0 .. N. ``(r,)`` is accepted when m = 1; omit when m = 0.
    alpha : float
        Target probability of the existence floor applied to q first (``floors.floor_q``).
    floor : {"lambertw", "poisson", "none"}
        The reading of that floor (``floors.floor_q``).
    support_mass : float
        Bound, in (0, 1), on the posterior mass each record's window may leave out.
    sizes : array_like (m,) of int, optional
        Database sizes, checked against N (a sample holds at most N records) and the counts (no
        count above its database's size).
    max_width : int
        Refuse windows wider than this many counts (a guard against absurd inputs).

    Returns
    -------
    PosteriorResult
        Per record E[X] (eq. 19), P(X = 1), Var[X], the pmf over its window and its tail bound;
        ``prob_greater(T)`` gives P(X > T).

    Raises
    ------
    PosteriorError
        A bad N, rate, q, count, size or ``support_mass`` (naming the record or database);
        contradictory census evidence; a window wider than ``max_width``.
    FloorError
        A bad ``alpha`` or ``floor`` (``floors.floor_q``).

    Notes
    -----
    Records with q = 0 (after flooring) get all mass at ``max(1, max_i c_i)`` (the q -> 0 limit);
    with q = 1 all mass at N. A census (s_i = 1) pins X = c_i; it must hold at least one match and
    agree with every other census, else the evidence is contradictory and ``PosteriorError`` says so.
    """
    Nn, s, qa, c = _checked_inputs(q, N, databases, counts, sizes, support_mass)
    qf = floor_q(qa, Nn, alpha, floor) if qa.size else qa
    census = s == 1.0
    sampled = _Sampled(c[:, ~census], np.log1p(-s[~census]))
    start, stop, bound, fixed = _windows(qf, Nn, c, census, sampled, float(support_mass))
    width = _checked_width(start, stop, max_width)
    offsets, probs = _window_probs(start, width, fixed, qf, Nn, sampled)
    expected, variance, p_unique = _moments(start, width, offsets, probs)
    arrays = dict(
        q=qf, rates=s, counts=c, start=start, width=width, offsets=offsets, probs=probs,
        expected=expected, variance=variance, p_unique=p_unique, tail_bound=bound,
    )
    for v in arrays.values():
        v.flags.writeable = False
    return PosteriorResult(N=Nn, **arrays)


def _checked_inputs(q, N, databases, counts, sizes, support_mass):
    """The inputs of ``population_count_posterior`` checked at the boundary, in the order a user
    would fix them: N, the rates, q, the counts, the sizes, ``support_mass``.

    Parameters
    ----------
    q, N, databases, counts, sizes, support_mass
        As in ``population_count_posterior``.

    Returns
    -------
    N : int
        The population size.
    s : numpy.ndarray (m,) of float64
        The sampling rates.
    q : numpy.ndarray (r,) of float64
        The cell probabilities (not yet floored).
    c : numpy.ndarray (r, m) of int64
        The match counts.

    Raises
    ------
    PosteriorError
        The first bad input, named with its fix.
    """
    Nn = _check_N(N)
    s = _check_rates(databases)
    qa = _check_q(q)
    c = _check_counts(counts, qa.size, s.size, Nn)
    _check_sizes(sizes, s.size, Nn, c)
    if not (0.0 < float(support_mass) < 1.0):
        raise PosteriorError(f"support_mass must be in (0, 1), got {support_mass!r}; e.g. 1e-12")
    return Nn, s, qa, c


@dataclass(frozen=True)
class _Sampled:
    """The databases that are samples (s_i < 1), the ones whose evidence shapes p_m (eq. 17);
    a census only pins X (docs/design/uniqueness.md#conditioning-on-the-databases).

    Parameters
    ----------
    counts : numpy.ndarray (r, m') of int64
        Each record's matches ``c_i`` in those databases.
    log1ms : numpy.ndarray (m',) of float64
        ``log(1 - s_i)`` of each.
    """

    counts: np.ndarray
    log1ms: np.ndarray


def _windows(qf: np.ndarray, N: int, c: np.ndarray, census: np.ndarray, sampled: _Sampled,
             support_mass: float):
    """Each record's window ``[start, stop]`` of counts and the mass left outside it.

    A record whose count is pinned has a one-count window and no mass outside it
    (``_pinned_counts``); every other record's window is placed around the mode of its
    log-concave posterior until at most ``support_mass`` lies outside it (``_window``, module
    docstring; paper 000 eq. 17 on ``x >= max(1, c_i)``).

    Parameters
    ----------
    qf : numpy.ndarray (r,)
        The floored cell probabilities.
    N : int
        The population size.
    c : numpy.ndarray (r, m) of int64
        The match counts in every database.
    census : numpy.ndarray (m,) of bool
        Which databases are censuses (s_i = 1).
    sampled : _Sampled
        The other databases' counts and ``log(1 - s_i)``.
    support_mass : float
        The bound on the mass left outside each window.

    Returns
    -------
    start, stop : numpy.ndarray (r,) of int64
        The first and last count of each window.
    bound : numpy.ndarray (r,)
        The rigorous bound on the mass outside each window (0 for a pinned count).
    fixed : numpy.ndarray (r,) of bool
        Whether the record's count is pinned.

    Raises
    ------
    PosteriorError
        Contradictory census evidence (``_pinned_counts``).
    """
    r = qf.size
    cmax = c.max(axis=1) if census.size else np.zeros(r, dtype=np.int64)
    lo = np.maximum(cmax, 1)
    start, stop, fixed = _pinned_counts(qf, N, c, census, cmax, lo)
    bound = np.zeros(r)
    gen = np.flatnonzero(~fixed)
    if gen.size:
        qg = qf[gen]
        t = _Target(N, np.log(qg) - np.log1p(-qg), sampled.counts[gen], sampled.log1ms)
        _, Lw, Rw, b = _window(t, lo[gen], N, support_mass)
        start[gen], stop[gen], bound[gen] = Lw, Rw, b
    return start, stop, bound, fixed


def _pinned_counts(qf: np.ndarray, N: int, c: np.ndarray, census: np.ndarray,
                   cmax: np.ndarray, lo: np.ndarray):
    """The records whose count X is known without a window, and that count.

    A census (s_i = 1: ``(1 - s_i)^(x - c_i)`` of eq. 17 vanishes unless x = c_i) pins X to its
    count; q = 0 puts all mass at ``max(1, max_i c_i)`` (the q -> 0 limit of eq. 16-17) and q = 1
    at N (docs/design/uniqueness.md#conditioning-on-the-databases).

    Parameters
    ----------
    qf : numpy.ndarray (r,)
        The floored cell probabilities.
    N : int
        The population size.
    c : numpy.ndarray (r, m) of int64
        The match counts.
    census : numpy.ndarray (m,) of bool
        Which databases are censuses.
    cmax, lo : numpy.ndarray (r,) of int64
        ``max_i c_i`` and ``max(1, max_i c_i)``, the smallest possible X.

    Returns
    -------
    start, stop : numpy.ndarray (r,) of int64
        The pinned count at the pinned records (both equal); not yet set elsewhere.
    fixed : numpy.ndarray (r,) of bool
        Whether the record's count is pinned.

    Raises
    ------
    PosteriorError
        Censuses that disagree, or hold no match or fewer than another database's.
    """
    r = qf.size
    start = np.empty(r, dtype=np.int64)
    stop = np.empty(r, dtype=np.int64)  # inclusive
    fixed = np.zeros(r, dtype=bool)
    if census.any():
        cc = c[:, census]
        first = cc[:, 0]
        bad = (cc != first[:, None]).any(axis=1) | (first < cmax) | (first < 1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            dbs = np.flatnonzero(census).tolist()
            raise PosteriorError(
                f"record {i}: census database(s) {dbs} (s = 1) give counts {cc[i].tolist()} while "
                f"the record exists (X >= 1) and the largest count is {int(cmax[i])}: a census pins "
                "X to its count, so this evidence is contradictory. Use a rate below 1 for a "
                "database that is not a complete, exact census"
            )
        start[:], stop[:] = first, first
        fixed[:] = True
    zero = ~fixed & (qf <= 0.0)
    start[zero], stop[zero] = lo[zero], lo[zero]
    one = ~fixed & ~zero & (qf >= 1.0)
    start[one], stop[one] = N, N
    fixed |= zero | one
    return start, stop, fixed


def _checked_width(start: np.ndarray, stop: np.ndarray, max_width: int) -> np.ndarray:
    """The number of counts in each window, refused above ``max_width``.

    Parameters
    ----------
    start, stop : numpy.ndarray (r,) of int64
        The first and last count of each window.
    max_width : int
        The widest window allowed.

    Returns
    -------
    numpy.ndarray (r,) of int64
        ``stop - start + 1``.

    Raises
    ------
    PosteriorError
        Naming the first record whose window is too wide, and the fix.
    """
    width = stop - start + 1
    if width.size and width.max() > max_width:
        i = int(np.argmax(width))
        raise PosteriorError(
            f"record {i}: the posterior window needs {int(width[i])} counts (> max_width = "
            f"{max_width}); raise max_width or support_mass"
        )
    return width


def _window_probs(start: np.ndarray, width: np.ndarray, fixed: np.ndarray, qf: np.ndarray,
                  N: int, sampled: _Sampled):
    """p_m(x) over each record's window (paper 000 eq. 17-18), stored ragged.

    Inside the window the exact log ratios ``log p_m(x+1) - log p_m(x)`` (``_Target.ratio``) are
    accumulated row-wise, within padded blocks of records of similar widths (``_blocks``), and
    normalized over the window: full relative precision even for large N (module docstring).

    Parameters
    ----------
    start, width : numpy.ndarray (r,) of int64
        Each window's first count and its number of counts.
    fixed : numpy.ndarray (r,) of bool
        Whether the record's count is pinned (a one-count window).
    qf : numpy.ndarray (r,)
        The floored cell probabilities.
    N : int
        The population size.
    sampled : _Sampled
        The sampled databases' counts and ``log(1 - s_i)``.

    Returns
    -------
    offsets : numpy.ndarray (r + 1,) of int64
        Where each record's segment of ``probs`` starts.
    probs : numpy.ndarray (offsets[-1],)
        p_m(x) over each window; each segment sums to 1.
    """
    r = width.size
    offsets = np.zeros(r + 1, dtype=np.int64)
    np.cumsum(width, out=offsets[1:])
    probs = np.empty(int(offsets[-1]))

    # increments log w(x+1) - log w(x) accumulated row-wise inside padded blocks
    order = np.argsort(width, kind="stable")
    log_q = np.log(np.where(fixed, 0.5, qf))
    logit = log_q - np.log1p(-np.where(fixed, 0.5, qf))
    ck = sampled.counts
    for rows in _blocks(width[order]):
        sel = order[rows]
        Lb = int(width[sel].max())
        k = np.arange(Lb)
        valid = k[None, :] < width[sel][:, None]
        lw = np.zeros((sel.size, Lb))
        if Lb > 1:
            tb = _Target(N, logit[sel], ck[sel], sampled.log1ms)
            x = start[sel][:, None].astype(np.float64) + k[None, :-1]
            inc = tb.ratio(np.minimum(x, N - 1.0))
            inc = np.where(valid[:, 1:], inc, 0.0)
            np.cumsum(inc, axis=1, out=lw[:, 1:])
        lw[~valid] = -np.inf
        lw -= lw.max(axis=1, keepdims=True)
        p = np.exp(lw)
        p /= p.sum(axis=1, keepdims=True)
        dst = offsets[sel][:, None] + k[None, :]
        probs[dst[valid]] = p[valid]
    return offsets, probs


def _moments(start: np.ndarray, width: np.ndarray, offsets: np.ndarray, probs: np.ndarray):
    """E[X] (paper 000 eq. 19), Var[X] and P(X = 1) of each record from its window's pmf.

    Parameters
    ----------
    start, width : numpy.ndarray (r,) of int64
        Each window's first count and its number of counts.
    offsets : numpy.ndarray (r + 1,) of int64
        Where each record's segment of ``probs`` starts.
    probs : numpy.ndarray (offsets[-1],)
        p_m(x) over each window.

    Returns
    -------
    expected, variance, p_unique : numpy.ndarray (r,)
        E[X], Var[X] (clipped at 0 against rounding) and P(X = 1) (0 unless the window starts
        at 1).
    """
    r = width.size
    rec = np.repeat(np.arange(r), width)
    xs = (start[rec] + (np.arange(probs.size) - offsets[rec])).astype(np.float64)
    if r:
        segs = offsets[:-1]
        expected = np.add.reduceat(xs * probs, segs)
        variance = np.maximum(np.add.reduceat((xs - expected[rec]) ** 2 * probs, segs), 0.0)
        p_unique = np.where(start == 1, probs[segs], 0.0)
    else:
        expected = variance = p_unique = np.zeros(0)
    return expected, variance, p_unique


# ---------------------------------------------------------------------------------------------
# plain counts
# ---------------------------------------------------------------------------------------------
def _as_codes(a, what: str) -> np.ndarray:
    arr = np.asarray(a)
    if arr.ndim != 2:
        raise PosteriorError(f"{what} must be an encoded (rows, attributes) int matrix, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise PosteriorError(f"{what} must hold integer codes, got dtype {arr.dtype}; encode with the schema")
    if arr.size and (arr < MISSING).any():
        i, j = map(int, np.argwhere(arr < MISSING)[0])
        raise PosteriorError(f"{what}[{i}, {j}] = {arr[i, j]} is not a code (>= 0) or MISSING ({MISSING})")
    return arr.astype(np.int64, copy=False)


def _row_keys(rows: np.ndarray) -> np.ndarray:
    """One int64 key per row, equal iff the rows are equal (codes >= 0).

    Columns are combined by mixed radix (``np.ravel_multi_index`` semantics) while the product of
    the column ranges fits in int64; when it would not, the partial key is re-factorized to dense
    ids 0..(distinct - 1) (``np.unique``), so any number of columns works without hashing.
    """
    n, g = rows.shape
    if g == 0:
        return np.zeros(n, dtype=np.int64)
    sizes = rows.max(axis=0) + 1 if n else np.ones(g, dtype=np.int64)
    limit = np.iinfo(np.int64).max
    key = rows[:, 0].copy()
    span = int(sizes[0])
    for j in range(1, g):  # loop over attributes, not records
        f = int(sizes[j])
        if span * f > limit:
            uniq, key = np.unique(key, return_inverse=True)
            key = key.astype(np.int64).ravel()
            span = max(int(uniq.size), 1)
        key = key * f + rows[:, j]
        span *= f
    return key


def match_counts(records: np.ndarray, database: np.ndarray) -> np.ndarray:
    """c = number of database rows equal to each query record on every attribute (paper 000 IV.C).

    Parameters
    ----------
    records : numpy.ndarray (r, g) of int
        Encoded codes of the query records (``MISSING`` allowed).
    database : numpy.ndarray (n, g) of int
        Encoded codes of one database, the same attributes in the same order.

    Returns
    -------
    numpy.ndarray
        (r,) int64 counts.

    Raises
    ------
    PosteriorError
        An input is not a 2-D integer matrix of codes >= ``MISSING``, or the two have different
        numbers of attributes.

    Notes
    -----
    A row with a missing value (``MISSING`` = -1) on any attribute never matches: database rows
    with a missing value are not counted, and a query record with a missing value gets count 0 (a
    missing value is a state, not a category, and an exact match needs every value). Vectorized
    through one int64 key per row (mixed radix, see ``_row_keys``).
    """
    rec = _as_codes(records, "records")
    db = _as_codes(database, "database")
    if rec.shape[1] != db.shape[1]:
        raise PosteriorError(
            f"records have {rec.shape[1]} attributes but the database has {db.shape[1]}; select "
            "the same attributes in the same order"
        )
    out = np.zeros(rec.shape[0], dtype=np.int64)
    db = db[(db != MISSING).all(axis=1)]
    rec_ok = (rec != MISSING).all(axis=1)
    if db.shape[0] == 0 or not rec_ok.any():
        return out
    both = np.concatenate([rec[rec_ok], db], axis=0)
    keys = _row_keys(both)
    rk, dk = keys[: int(rec_ok.sum())], keys[int(rec_ok.sum()):]
    uniq, cnt = np.unique(dk, return_counts=True)
    pos = np.searchsorted(uniq, rk)
    pos_c = np.minimum(pos, uniq.size - 1)
    out[rec_ok] = np.where(uniq[pos_c] == rk, cnt[pos_c], 0)
    return out


def match_count_matrix(records: np.ndarray, databases: Sequence[np.ndarray]) -> np.ndarray:
    """(r, m) matrix of ``match_counts`` of the records in each of m databases.

    Parameters
    ----------
    records : numpy.ndarray (r, g)
        Encoded codes of the query records.
    databases : sequence of numpy.ndarray
        The m databases, each (n_i, g) encoded codes.

    Returns
    -------
    numpy.ndarray
        (r, m) int64: column i holds ``match_counts(records, databases[i])``; (r, 0) when no
        database is given.

    Raises
    ------
    PosteriorError
        As ``match_counts``.
    """
    rec = _as_codes(records, "records")
    cols = [match_counts(rec, d) for d in databases]  # loop over databases, not records
    return np.stack(cols, axis=1) if cols else np.zeros((rec.shape[0], 0), dtype=np.int64)
