"""Scores of a release (paper 001, Table 1): utility U1-U6, security S1-S2 and re-identification rates.

Design: docs/design/linkage.md#scores.

The paper names the PWSCUP 2015 scores without formulas; the definitions below are ours and stable.
X is the original table, Y the release, s the SA columns, q the QI columns; "mean" is the
arithmetic mean; lower utility scores are better (0 = nothing lost).

- U1 meanMAE: mean over the SA columns of |mean_X(c) - mean_Y(c)| (column means; SA units).
- U2 crossMean: for every QI column a and SA column c, the one-way table "mean of c by value of a"
  in X and in Y; the mean absolute difference over all (a, value, c) cells of the union of both
  tables' values, a value absent from one table counting as mean 0 there (SA units).
- U3 crossCnt: as U2 with the count of rows by value of a (rows).
- U4 corMAE: mean absolute difference of the Pearson correlations of the SA columns over the
  |s|(|s|-1)/2 pairs (0 with fewer than two SA columns; a constant column has correlation 0).
- U5 IL: information loss per record: mean over the rows i of Y and SA columns c of
  |Y[i, c] - X[t(i), c]| / range_X(c), with t the true mapping (needs it: NaN without). A shuffled
  release therefore loses nothing here (the paper's U5 penalizes the broken row order instead).
- U6 nrow: |X| - |Y| (rows deleted or suppressed).
- S1: the smallest equivalence-class size over the QI columns in Y (k of k-anonymity).
- S2: the mean class size |Y| / (number of distinct QI vectors in Y).

Re-identification rate (paper 001, Section 2.3): the share of the rows of Y an attack links to
their true row of X (a row it gave up on counts as a failure), with a 95 % Clopper-Pearson
interval, and the rate a uniformly random guess among all rows of X would get, 1/|X|.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy.stats import beta

from reidrisk.linkage._keys import group_ids
from reidrisk.linkage.attacks import Linking
from reidrisk.linkage.release import LinkageError, Release, check_columns, numeric_matrix


@dataclass(frozen=True)
class Rate:
    """Re-identification rate of one attack.

    Parameters
    ----------
    attack : str
        The attack's name.
    linked : int
        Released rows linked to their true row.
    n : int
        Released rows.
    rate : float
        linked / n.
    low, high : float
        The two-sided Clopper-Pearson interval at ``level``.
    random_guess : float
        1/|X|, the expected rate of a uniformly random guess.
    gave_up : int
        Rows the attack declined to link.
    level : float
        Confidence level of the interval.
    seconds : float
        The attack's wall time.
    metric : str
        The SA distance the attack used (``Linking.metric``; empty when it has none).
    """

    attack: str
    linked: int
    n: int
    rate: float
    low: float
    high: float
    random_guess: float
    gave_up: int = 0
    level: float = 0.95
    seconds: float = float("nan")
    metric: str = ""


@dataclass(frozen=True)
class Utility:
    """U1-U6 as defined in the module docstring (lower is better).

    Parameters
    ----------
    U1_meanMAE, U2_crossMean, U3_crossCnt, U4_corMAE, U5_IL : float
        U1-U5 (U5 is NaN without the true mapping).
    U6_nrow : int
        U6, rows deleted or suppressed.
    """

    U1_meanMAE: float
    U2_crossMean: float
    U3_crossCnt: float
    U4_corMAE: float
    U5_IL: float
    U6_nrow: int

    def to_dict(self) -> dict:
        """U1-U6 as plain data.

        Returns
        -------
        dict
            Score name to value.
        """
        return asdict(self)


@dataclass(frozen=True)
class Security:
    """S1 and S2 of the release.

    Parameters
    ----------
    S1_min_class : int
        Smallest QI class size.
    S2_mean_class : float
        Mean QI class size.
    """

    S1_min_class: int
    S2_mean_class: float

    def to_dict(self) -> dict:
        """S1 and S2 as plain data.

        Returns
        -------
        dict
            Score name to value.
        """
        return asdict(self)


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Two-sided exact (Clopper-Pearson) interval for a binomial proportion k/n
    (``(0.0, 1.0)`` for n <= 0).

    Parameters
    ----------
    k : int
        Successes.
    n : int
        Trials.
    level : float
        Confidence level (default 0.95).

    Returns
    -------
    low, high : float
        The interval's bounds.
    """
    if n <= 0:
        return 0.0, 1.0
    a = (1.0 - level) / 2
    low = 0.0 if k == 0 else float(beta.ppf(a, k, n - k + 1))
    high = 1.0 if k == n else float(beta.ppf(1 - a, k + 1, n - k))
    return low, high


def reid_rate(linking: Linking, truth: np.ndarray | Release, *, n_original: int | None = None,
              level: float = 0.95) -> Rate:
    """The re-identification rate of ``linking`` against the true mapping.

    Parameters
    ----------
    linking : Linking
        The attack's guesses, one original row position per released row.
    truth : numpy.ndarray or Release
        The true original row position of each released row (or a Release holding it).
    n_original : int, optional
        |X|, which sets the random-guess rate 1/|X|; by default the largest row position in
        ``truth`` + 1 is used as a lower bound of |X| (pass it when known).
    level : float
        Confidence level of the Clopper-Pearson interval (default 0.95).

    Returns
    -------
    Rate
        Rows linked to their true row, of all, with the interval.
    """
    if isinstance(truth, Release):
        truth = truth.truth
    truth = np.asarray(truth, dtype=np.int64)
    guess = np.asarray(linking.guess)
    if truth.shape != guess.shape:
        raise LinkageError(f"the true mapping has {truth.shape[0]} rows but the attack linked "
                           f"{guess.shape[0]}; give one original row position per released row")
    n = int(truth.shape[0])
    linked = int((guess == truth).sum())
    low, high = clopper_pearson(linked, n, level)
    size = n_original if n_original is not None else (int(truth.max()) + 1 if n else 1)
    return Rate(linking.attack, linked, n, linked / n if n else float("nan"), low, high,
                1.0 / max(size, 1), int((guess < 0).sum()), level, float(linking.seconds),
                linking.metric)


def _cross(frame: pd.DataFrame, qi: Sequence[str], values: np.ndarray) -> tuple[dict, dict]:
    """Per QI column: mean of each SA column by value, and count by value."""
    means, counts = {}, {}
    sa_frame = pd.DataFrame(values)
    for a in qi:                                       # one groupby per QI column
        key = frame[a].astype(str).to_numpy()
        grouped = sa_frame.groupby(key)
        means[a] = grouped.mean()
        counts[a] = grouped.size()
    return means, counts


def utility_scores(original: pd.DataFrame, release: pd.DataFrame | Release, *, qi: Sequence[str],
                   sa: Sequence[str], truth: np.ndarray | None = None) -> Utility:
    """U1-U6 of ``release`` against ``original`` (definitions in the module docstring).

    Parameters
    ----------
    original : pandas.DataFrame
        The original table.
    release : pandas.DataFrame or Release
        The anonymized table.
    qi : sequence of str
        The quasi-identifier columns (present in both tables).
    sa : sequence of str
        The sensitive (numeric) columns (present in both tables).
    truth : numpy.ndarray, optional
        Original row position of each released row, needed for U5 only (a ``Release``'s own is
        used when not given); without it U5 is NaN.

    Returns
    -------
    Utility
        U1-U6.
    """
    if isinstance(release, Release):
        truth = release.truth if truth is None else truth
        y = release.data
    else:
        y = release
    x = original
    qi = check_columns(x, qi, "QI", "the original")
    sa = check_columns(x, sa, "SA", "the original")
    check_columns(y, qi, "QI", "the release")
    check_columns(y, sa, "SA", "the release")
    xs = numeric_matrix(x, sa, "the original")
    ys = numeric_matrix(y, sa, "the release")
    u1 = float(np.mean(np.abs(xs.mean(axis=0) - ys.mean(axis=0)))) if len(ys) and sa else 0.0
    mx, cx = _cross(x, qi, xs)
    my, cy = _cross(y, qi, ys)
    diffs_m, diffs_c = [], []
    for a in qi:
        am, bm = mx[a].align(my[a], join="outer", fill_value=0.0)
        diffs_m.append(np.abs(am.to_numpy() - bm.to_numpy()).ravel())
        ac, bc = cx[a].align(cy[a], join="outer", fill_value=0)
        diffs_c.append(np.abs(ac.to_numpy() - bc.to_numpy()).ravel())
    u2 = float(np.concatenate(diffs_m).mean()) if qi and sa else 0.0
    u3 = float(np.concatenate(diffs_c).mean()) if qi else 0.0
    if len(sa) >= 2:
        iu = np.triu_indices(len(sa), 1)
        u4 = float(np.mean(np.abs(_corr(xs)[iu] - _corr(ys)[iu])))
    else:
        u4 = 0.0
    if truth is not None and len(ys):
        t = np.asarray(truth, dtype=np.int64)
        if t.shape != (len(y),):
            raise LinkageError(f"the true mapping has {t.shape[0]} rows but the release has "
                               f"{len(y)}; give one original row position per released row")
        rng_ = np.ptp(xs, axis=0)
        rng_ = np.where(rng_ > 0, rng_, 1.0)
        u5 = float(np.mean(np.abs(ys - xs[t]) / rng_))
    else:
        u5 = float("nan")
    return Utility(u1, u2, u3, u4, u5, int(len(x) - len(y)))


def _corr(a: np.ndarray) -> np.ndarray:
    if len(a) < 2:
        return np.zeros((a.shape[1], a.shape[1]))
    c = a - a.mean(axis=0)
    sd = np.sqrt((c ** 2).sum(axis=0))
    ok = sd > 0
    z = np.where(ok, c / np.where(ok, sd, 1.0), 0.0)
    return z.T @ z


def security_scores(release: pd.DataFrame | Release, *, qi: Sequence[str]) -> Security:
    """S1 = smallest and S2 = mean equivalence-class size over ``qi`` in the release.

    Parameters
    ----------
    release : pandas.DataFrame or Release
        The anonymized table (an empty one scores 0, 0.0).
    qi : sequence of str
        The quasi-identifier columns that define the classes.

    Returns
    -------
    Security
        S1 and S2.
    """
    y = release.data if isinstance(release, Release) else release
    qi = check_columns(y, qi, "QI", "the release")
    if len(y) == 0:
        return Security(0, 0.0)
    g = group_ids(y, qi)
    sizes = np.bincount(g)
    sizes = sizes[sizes > 0]
    return Security(int(sizes.min()), float(len(y) / len(sizes)))


__all__ = ["Rate", "Security", "Utility", "clopper_pearson", "reid_rate", "security_scores",
           "utility_scores"]
