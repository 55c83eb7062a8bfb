"""PSE estimation from genuine and impostor scores, DET curves and the identification error rate.

Paper 002, Section 3.1 and 5 (docs/design/pie.md#pse, docs/design/pie.md#k-nn-divergence-estimator,
docs/design/pie.md#markov-chain-matching):

* ``kl_divergence``: the PSE is estimated by ``D(f_G || f_I)`` (Thm 3.2, eq. 7), the KL divergence
  between the genuine and the impostor score distributions, with the generalized k-NN estimator of
  Wang, Kulkarni and Verdu (2009, IEEE Trans. IT 55(5), eq. 17) in the adaptive form the authors
  ran (docs/design/pie.md#k-nn-divergence-estimator), or with a fixed k. In bits.
* ``pse``: the same with a bootstrap interval.
* ``det_curve``: FAR/FRR at thresholds (docs/design/pie.md#markov-chain-matching): FAR = share of
  impostor scores >= t, FRR = share of genuine scores < t.
* ``identification_error``: the best-score rule over a score matrix, ties broken by a uniform
  random rank offset (docs/design/pie.md#markov-chain-matching), with the exact tie-averaged error
  beside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree
from scipy.special import digamma

from reidrisk.data.io import TableError, read_table
from reidrisk.mechanisms.base import as_generator

JITTER_SD = 1e-4
"""Standard deviation of the Gaussian jitter added to every score before the k-NN search (the
authors' value, docs/design/pie.md#k-nn-divergence-estimator): it separates tied scores, whose
distance would otherwise be 0."""

_REL_INFLATE = 1e-9
LOG2 = math.log(2.0)


class ScoreError(TableError):
    """Scores that cannot be used (empty, non-numeric, too few). The message names the file."""


@dataclass(frozen=True)
class KLEstimate:
    """A k-NN estimate of ``D(f_G || f_I)`` in bits.

    Parameters
    ----------
    bits : float
        The estimate.
    low, high : float
        The bootstrap percentile interval at ``level`` (NaN without bootstrap).
    level : float
        Its confidence level.
    n_genuine, n_impostor : int
        The sample sizes.
    k : int or None
        The fixed k, or None for the adaptive estimator.
    bootstrap : int
        Bootstrap resamples.
    """

    bits: float
    low: float
    high: float
    level: float
    n_genuine: int
    n_impostor: int
    k: int | None
    bootstrap: int


@dataclass(frozen=True)
class DETCurve:
    """FAR and FRR (shares in [0, 1]) at each threshold.

    Parameters
    ----------
    thresholds : numpy.ndarray (T,)
        The thresholds, increasing.
    far, frr : numpy.ndarray (T,)
        False acceptance and false rejection rates at each.
    eer : float
        The equal error rate (FAR = FRR, read at the threshold where |FAR - FRR| is smallest).
    """

    thresholds: np.ndarray
    far: np.ndarray
    frr: np.ndarray
    eer: float


@dataclass(frozen=True)
class Identification:
    """Best-score rule over n probes (docs/design/pie.md#markov-chain-matching).

    Parameters
    ----------
    ranks : numpy.ndarray (n,)
        The genuine user's rank with the random tie offset.
    error_rate : float
        The share of probes with rank > 1.
    expected_error_rate : float
        The same averaged exactly over the tie-breaking (a genuine score tied with t impostors
        and beaten by none wins with probability 1/(t + 1)).
    n : int
        Probes.
    n_candidates : int
        Users scored per probe.
    """

    ranks: np.ndarray
    error_rate: float
    expected_error_rate: float
    n: int
    n_candidates: int


def _scores(x, name: str) -> np.ndarray:
    a = np.asarray(x, dtype=float).ravel()
    if a.size < 2:
        raise ScoreError(f"{name}: need at least 2 scores, got {a.size}")
    if not np.all(np.isfinite(a)):
        bad = a[~np.isfinite(a)][0]
        raise ScoreError(f"{name}: score {bad!r} is not finite; every score must be a number")
    return a


def _jitter(x: np.ndarray, sd: float, rng: np.random.Generator) -> np.ndarray:
    return x + rng.normal(0.0, sd, size=x.size) if sd > 0 else x


def _terms(g: np.ndarray, i: np.ndarray, k: int | None) -> np.ndarray:
    """Per-probe terms T_a with D_hat = mean(T) + ln(M / (N - 1)) (nats).

    Fixed k: T_a = ln(nu_k(a) / rho_k(a)). Adaptive (docs/design/pie.md#k-nn-divergence-estimator):
    eps_a = max(rho_1, nu_1), l_a / k_a the numbers of genuine / impostor points within eps_a, and
    T_a = ln(nu_{k_a}(a) / rho_{l_a}(a)) + psi(l_a) - psi(k_a). The nearest-neighbour distances come
    from cKDTree; in 1-D the points within eps_a are a contiguous run of the sorted sample, so the
    counts and the farthest distance within it come from binary search.
    """
    gt = cKDTree(g[:, None])
    it = cKDTree(i[:, None])
    if k is not None:
        rho = gt.query(g[:, None], k=[k + 1])[0][:, 0]  # the point itself is its own 1st neighbour
        nu = it.query(g[:, None], k=[k])[0][:, 0]
        return np.log(nu) - np.log(rho)
    rho1 = gt.query(g[:, None], k=[2])[0][:, 0]
    nu1 = it.query(g[:, None], k=[1])[0][:, 0]
    eps = np.maximum(rho1, nu1) * (1.0 + _REL_INFLATE)

    def ball(sorted_x: np.ndarray):
        lo = np.searchsorted(sorted_x, g - eps, side="left")
        hi = np.searchsorted(sorted_x, g + eps, side="right")
        far = np.maximum(g - sorted_x[lo], sorted_x[hi - 1] - g)
        return hi - lo, far

    gs, is_ = np.sort(g), np.sort(i)
    l_count, rho_l = ball(gs)
    k_count, nu_k = ball(is_)
    l_count = l_count - 1  # the point itself
    return np.log(nu_k) - np.log(rho_l) + digamma(l_count) - digamma(k_count)


def kl_divergence(genuine, impostor, k: int | None = None, jitter: float = JITTER_SD,
                  rng: np.random.Generator | int | None = 0) -> float:
    """k-NN estimate of ``D(f_G || f_I)`` in bits (Wang, Kulkarni & Verdu 2009;
    docs/design/pie.md#k-nn-divergence-estimator).

    Parameters
    ----------
    genuine : array_like (N,)
        Genuine score sample.
    impostor : array_like (M,)
        Impostor score sample.
    k : int, optional
        ``None``: the adaptive estimator the authors ran; an int: the plain k-NN estimator.
    jitter : float
        sd of the Gaussian noise added to every score so no two scores tie.
    rng : numpy.random.Generator or int
        Generator or seed of the jitter (default 0).

    Returns
    -------
    float
        The estimate in bits.
    """
    return pse(genuine, impostor, k=k, bootstrap=0, jitter=jitter, rng=rng).bits


def pse(genuine, impostor, k: int | None = None, bootstrap: int = 200, level: float = 0.95,
        jitter: float = JITTER_SD, rng: np.random.Generator | int | None = 0) -> KLEstimate:
    """The PSE estimate ``D(f_G || f_I)`` (paper 002 eq. 7) in bits with a bootstrap interval.

    The interval is a half-sample bootstrap: ``bootstrap`` times, the estimator is re-run on half
    of the genuine and half of the impostor scores drawn without replacement, and the percentiles
    of the re-estimates' deviations from their mean are reflected around the full estimate (a
    basic interval). Resampling with replacement is not used: a resampled duplicate sits at
    distance 0 (or at jitter scale) from its copy, which biases a k-NN estimate far more than the
    sampling error being measured. Resampling the per-probe terms alone is not used either: the
    terms share the impostor sample and are correlated, and such an interval comes out too narrow
    against seeded repeats. The interval covers the sampling error, not the
    estimator's bias, which shrinks as N grows (docs/design/pie.md#numerical-checks lists it for
    Gaussian pairs).

    Parameters
    ----------
    genuine, impostor, k, jitter, rng
        As in ``kl_divergence`` (``rng`` also draws the half-samples).
    bootstrap : int
        Number of half-sample re-estimates (0: no interval, its bounds NaN).
    level : float
        Confidence level of the interval.

    Returns
    -------
    KLEstimate
        The estimate, its bootstrap interval and the sample sizes.
    """
    g = _scores(genuine, "genuine scores")
    i = _scores(impostor, "impostor scores")
    if k is not None and (int(k) != k or k < 1 or k >= min(g.size, i.size + 1)):
        raise ScoreError(f"k={k!r} must be an integer in 1..{min(g.size - 1, i.size)} for "
                         f"{g.size} genuine and {i.size} impostor scores")
    if not 0 < level < 1:
        raise ValueError(f"level={level!r} must be in (0, 1), e.g. 0.95")
    if bootstrap < 0:
        raise ValueError(f"bootstrap={bootstrap!r} must be >= 0 (0 = no interval)")
    rng = as_generator(rng)
    g = _jitter(g, jitter, rng)
    i = _jitter(i, jitter, rng)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = _terms(g, i, None if k is None else int(k))
    if not np.all(np.isfinite(t)):
        raise ScoreError("scores repeat exactly: a neighbour distance is 0; keep jitter > 0")
    shift = math.log(i.size / (g.size - 1))
    est = (t.mean() + shift) / LOG2
    low = high = math.nan
    if bootstrap > 0:
        # half-samples without replacement: each re-estimate uses floor(N/2) genuine and floor(M/2)
        # impostor scores; for a statistic that averages over the sample, Var(D_half - D_full)
        # = (2/N - 1/N) c = Var(D_full), so the spread of the half-sample estimates around their
        # own mean is the sampling spread of the full estimate.
        hg, hi = g.size // 2, i.size // 2
        if hg < 2 or hi < 1:
            raise ScoreError(f"a bootstrap interval needs at least 4 genuine and 2 impostor "
                             f"scores, got {g.size} and {i.size}")
        kk = None if k is None else min(int(k), hg - 1, hi)
        half = np.empty(bootstrap)
        for b in range(bootstrap):  # B re-estimates; each one is vectorized over the sample
            gb = g[rng.permutation(g.size)[:hg]]
            ib = i[rng.permutation(i.size)[:hi]]
            half[b] = _terms(gb, ib, kk).mean() + math.log(hi / (hg - 1))
        dev = (half - half.mean()) / LOG2
        qs = np.quantile(dev, [(1 - level) / 2, (1 + level) / 2])
        low, high = float(est - qs[1]), float(est - qs[0])
    return KLEstimate(float(est), low, high, level, g.size, i.size,
                      None if k is None else int(k), int(bootstrap))


def det_curve(genuine, impostor, thresholds: int | np.ndarray = 1000) -> DETCurve:
    """FAR(t) = #{impostor >= t} / M and FRR(t) = #{genuine < t} / N
    (docs/design/pie.md#markov-chain-matching).

    Vectorized by sorting both samples and binary search (no loop over thresholds).

    Parameters
    ----------
    genuine : array_like (N,)
        Genuine scores.
    impostor : array_like (M,)
        Impostor scores.
    thresholds : int or numpy.ndarray
        An int T for T thresholds evenly spaced between the global minimum and maximum score (the
        authors used 1000), or an array of thresholds.

    Returns
    -------
    DETCurve
        FAR and FRR at each threshold, and the equal error rate.
    """
    g = np.sort(_scores(genuine, "genuine scores"))
    i = np.sort(_scores(impostor, "impostor scores"))
    if np.ndim(thresholds) == 0:
        lo = min(g[0], i[0])
        hi = max(g[-1], i[-1])
        t = np.linspace(lo, hi, int(thresholds))
    else:
        t = np.sort(np.asarray(thresholds, dtype=float).ravel())
    far = 1.0 - np.searchsorted(i, t, side="left") / i.size
    frr = np.searchsorted(g, t, side="left") / g.size
    j = int(np.argmin(np.abs(far - frr)))
    return DETCurve(t, far, frr, float((far[j] + frr[j]) / 2))


TIE_TOLERANCE = 1e-12
"""Relative difference below which two scores are tied (summation order leaves about 1e-15)."""


def identification_error(scores, truth=None, rng: np.random.Generator | int | None = 0
                         ) -> Identification:
    """Identification error rate of the best-score rule (docs/design/pie.md#markov-chain-matching).

    Rank = 1 + #{impostors scoring strictly higher} + a uniform random offset in 0..#{impostors
    tied with the genuine score}; an error is rank > 1. Scores within ``TIE_TOLERANCE`` (relative,
    of the larger magnitude) of the genuine score are tied: mathematically equal scores computed
    in another order differ in their last bits and must not be split by that rounding.

    Parameters
    ----------
    scores : array_like (n_probes, n_candidates)
        The score of each candidate user for each probe (higher = more similar).
    truth : array_like (n_probes,), optional
        The column of each probe's genuine user (default: the diagonal, probe i is user i).
    rng : numpy.random.Generator or int
        Generator or seed of the tie offsets (default 0).

    Returns
    -------
    Identification
        Ranks and error rates of the best-score rule.
    """
    s = np.asarray(scores, dtype=float)
    if s.ndim != 2 or s.shape[0] < 1 or s.shape[1] < 2:
        raise ScoreError(f"scores must be a (probes, candidates >= 2) matrix, got shape {s.shape}")
    n, m = s.shape
    truth = np.arange(n) if truth is None else np.asarray(truth, dtype=np.int64)
    if truth.shape != (n,) or truth.min() < 0 or truth.max() >= m:
        raise ScoreError(f"truth must hold {n} column indices in 0..{m - 1}")
    gen = s[np.arange(n), truth]
    tied = np.isclose(s, gen[:, None], rtol=TIE_TOLERANCE, atol=0.0)
    higher = ((s > gen[:, None]) & ~tied).sum(axis=1)
    ties = tied.sum(axis=1) - 1
    offset = np.floor(as_generator(rng).random(n) * (ties + 1)).astype(np.int64)
    ranks = 1 + higher + offset
    expected = 1.0 - np.mean((higher == 0) / (ties + 1.0))
    return Identification(ranks, float(np.mean(ranks > 1)), float(expected), n, m)


def genuine_impostor(scores, truth=None, rng: np.random.Generator | int | None = 0,
                     impostors: str = "one") -> tuple[np.ndarray, np.ndarray]:
    """Genuine scores (n,) and impostor scores from a (probes, candidates) score matrix.

    ``impostors="one"``: one impostor score per probe against a uniformly drawn other user, (n,),
    as the authors sampled them (docs/design/pie.md#k-nn-divergence-estimator: M = N = n).
    ``"all"``: every other candidate's score, (n (m - 1),); with M >> N the k-NN estimate of f_I is
    finer, which matters when the genuine and impostor scores barely overlap (the estimate with M =
    n saturates there).

    Parameters
    ----------
    scores, truth
        As in ``identification_error``.
    rng : numpy.random.Generator or int
        Generator or seed of the drawn impostors (default 0).
    impostors : {"one", "all"}
        As above.

    Returns
    -------
    genuine : numpy.ndarray (n,)
        The genuine scores.
    impostor : numpy.ndarray
        The impostor scores.
    """
    s = np.asarray(scores, dtype=float)
    n, m = s.shape
    truth = np.arange(n) if truth is None else np.asarray(truth, dtype=np.int64)
    rows = np.arange(n)
    if impostors == "all":
        mask = np.ones(s.shape, dtype=bool)
        mask[rows, truth] = False
        return s[rows, truth], s[mask]
    if impostors != "one":
        raise ValueError(f"impostors={impostors!r}; choose 'one' or 'all'")
    other = as_generator(rng).integers(0, m - 1, size=n)
    other += other >= truth  # uniform over the m - 1 columns that are not the genuine one
    return s[rows, truth], s[rows, other]


def read_scores(path: str | Path, column: str | None = None) -> np.ndarray:
    """A 1-D array of scores from a CSV/Parquet file: the column ``column``, else the column named
    ``score``, else the file's only column. Non-numeric or missing values and files without rows are
    a ``ScoreError`` naming the file, the row and the value.

    Parameters
    ----------
    path : str or Path
        A CSV or Parquet file.
    column : str, optional
        The column to read.

    Returns
    -------
    numpy.ndarray (n,) float64
        The scores.
    """
    path = Path(path)
    try:
        frame = read_table(path)
    except TableError as exc:
        raise ScoreError(str(exc)) from None
    cols = list(frame.columns)
    if column is None:
        column = "score" if "score" in cols else (cols[0] if len(cols) == 1 else None)
        if column is None:
            raise ScoreError(f"{str(path)!r} has columns {cols}; name the score column 'score' or "
                             "keep a single column")
    elif column not in cols:
        raise ScoreError(f"{str(path)!r} has no column {column!r}; its columns are {cols}")
    text = frame[column].astype(str).str.strip()
    if len(text) == 0:
        raise ScoreError(f"{str(path)!r} holds no scores (a header but no rows)")
    values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(values)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ScoreError(f"{str(path)!r}, row {row + 2}: score {text.iloc[row]!r} is not a finite "
                         "number; every score must be a number")
    if values.size < 2:
        raise ScoreError(f"{str(path)!r} holds {values.size} score; the estimator needs at least 2")
    return values


__all__ = [
    "DETCurve", "Identification", "JITTER_SD", "KLEstimate", "ScoreError", "det_curve",
    "genuine_impostor", "identification_error", "kl_divergence", "pse", "read_scores",
]
