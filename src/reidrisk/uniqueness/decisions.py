"""Deciding "count > T" from a record's posterior, and scoring such decisions against the truth.

``decide`` turns the posterior probabilities P(X > T) of ``UniquenessModel.score`` (or of
``scorer.count_posterior``) into decisions by one of ``RULES``; ``classification``, ``roc_auc`` and
``reliability`` measure decisions and probabilities against known counts (the benchmarks and the
demo report). Design: docs/design/uniqueness.md#evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from reidrisk.errors import ReidriskError

RULES: tuple[str, ...] = ("balanced", "probability", "expected")
"""Decision rules for "count > T" (see ``decide``)."""


class ScoringError(ReidriskError, ValueError):
    """Bad scoring input. The message names the parameter, the record or database and the fix.

    Raised by the scorer (``reidrisk.uniqueness.scorer``, which re-exports it) and by the decision
    rules here; defined here, the lower of the two modules.
    """


# ---------------------------------------------------------------------------------------------
# decisions
# ---------------------------------------------------------------------------------------------
def decide(
    rule: str,
    p_greater: np.ndarray,
    expected: np.ndarray | None = None,
    thresholds: np.ndarray | None = None,
    base_rates: np.ndarray | None = None,
) -> np.ndarray:
    """The decision "count > T" per record and threshold, by one of ``RULES``.

    * ``"balanced"``: P(X > T) > pi_T, where pi_T = P(X > T) over the population (the model's base
      rate, ``base_rates``). This is the Bayes rule for balanced accuracy (equal weight on both
      kinds of error, whatever their prevalence); with a calibrated P it flags a record whenever
      its own evidence moves it above the population average.
    * ``"probability"``: P(X > T) > 1/2, the Bayes rule for accuracy.
    * ``"expected"``: the estimated count (E[X], paper 000 eq. 19, rounded to the nearest whole
      number) exceeds T, i.e. E[X] >= T + 1/2: the paper's Section V classification.

    Parameters
    ----------
    rule : {"balanced", "probability", "expected"}
        The decision rule above.
    p_greater : numpy.ndarray (r, t)
        P(X > T) per record and threshold.
    expected : numpy.ndarray (r,), optional
        E[X] per record; required by ``"expected"``.
    thresholds : numpy.ndarray (t,), optional
        The thresholds T; required by ``"expected"``.
    base_rates : numpy.ndarray (t,), optional
        The population's P(X > T) per threshold; required by ``"balanced"``.

    Returns
    -------
    numpy.ndarray (r, t) of bool
        True where the record's count is decided to exceed the threshold.

    Raises
    ------
    ScoringError
        For an unknown rule, or a rule without the inputs it needs.
    """
    P = np.atleast_2d(np.asarray(p_greater, dtype=np.float64))
    if rule == "balanced":
        if base_rates is None:
            raise ScoringError("the balanced rule needs the base rates P(X > T) of the population")
        return P > np.asarray(base_rates, dtype=np.float64)[None, :]
    if rule == "probability":
        return P > 0.5
    if rule == "expected":
        if expected is None or thresholds is None:
            raise ScoringError("the expected rule needs E[X] and the thresholds")
        return np.asarray(expected)[:, None] >= np.asarray(thresholds, dtype=np.float64)[None, :] + 0.5
    raise ScoringError(f"unknown decision rule {rule!r}; choose one of {list(RULES)}")


# ---------------------------------------------------------------------------------------------
# evaluation helpers (benchmarks, report)
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Classification:
    """Scores of a "count > T" classifier against the truth.

    Parameters
    ----------
    accuracy : float
        Share of correct decisions.
    balanced_accuracy : float
        Mean of the true-positive and true-negative rates (0.5 for any constant rule).
    auc : float
        ROC AUC of the score (nan without a score or when one class is absent).
    positives : float
        Share of records whose true count exceeds T.
    n : int
        Number of records.
    """

    accuracy: float
    balanced_accuracy: float
    auc: float
    positives: float
    n: int


def roc_auc(score: np.ndarray, label: np.ndarray) -> float:
    """Area under the ROC curve (Mann-Whitney U with mid-ranks for ties); nan if one class is empty.

    Parameters
    ----------
    score : numpy.ndarray
        The classifier's score per record (higher: more likely positive).
    label : numpy.ndarray
        The true class per record (cast to bool).

    Returns
    -------
    float
        The AUC in [0, 1] (0.5: no better than chance); nan when one class is empty.
    """
    score = np.asarray(score, dtype=np.float64)
    label = np.asarray(label, dtype=bool)
    n1 = int(label.sum())
    n0 = label.size - n1
    if n1 == 0 or n0 == 0:
        return float("nan")
    ranks = stats.rankdata(score)
    return float((ranks[label].sum() - n1 * (n1 + 1) / 2.0) / (n1 * n0))


def classification(predicted: np.ndarray | bool, truth_counts: np.ndarray, T: float,
                   score: np.ndarray | None = None) -> Classification:
    """Accuracy, balanced accuracy and AUC of "count > T" decisions against the true counts.

    Parameters
    ----------
    predicted : numpy.ndarray or bool
        The decision "count > T" per record, or one constant decision for all.
    truth_counts : numpy.ndarray
        The true count per record.
    T : float
        The threshold; a record is positive when its true count exceeds it.
    score : numpy.ndarray, optional
        A score per record for the AUC (nan without one).

    Returns
    -------
    Classification
        The scores, the share of positives and the number of records.
    """
    truth = np.asarray(truth_counts) > T
    pred = np.broadcast_to(np.asarray(predicted, dtype=bool), truth.shape)
    pos, neg = truth, ~truth
    tpr = pred[pos].mean() if pos.any() else np.nan
    tnr = (~pred[neg]).mean() if neg.any() else np.nan
    bal = float(np.nanmean([tpr, tnr]))
    auc = roc_auc(score, truth) if score is not None else float("nan")
    return Classification(float((pred == truth).mean()), bal, auc, float(truth.mean()), int(truth.size))


@dataclass(frozen=True)
class Reliability:
    """Reliability curve of predicted probabilities, one entry per bin [lo, hi).

    Parameters
    ----------
    lo, hi : numpy.ndarray
        The bin edges.
    predicted : numpy.ndarray
        Mean prediction in the bin (nan for an empty bin).
    observed : numpy.ndarray
        Observed frequency of the outcome in the bin.
    se : numpy.ndarray
        Binomial standard error of ``observed``.
    count : numpy.ndarray
        Number of records in the bin.
    """

    lo: np.ndarray
    hi: np.ndarray
    predicted: np.ndarray
    observed: np.ndarray
    se: np.ndarray
    count: np.ndarray

    def max_gap(self, min_count: int = 50) -> float:
        """Largest |observed - predicted| over bins holding at least ``min_count`` records.

        Parameters
        ----------
        min_count : int
            Fewest records a bin needs to count (default 50).

        Returns
        -------
        float
            The largest gap; nan when no bin holds ``min_count`` records.
        """
        ok = self.count >= min_count
        return float(np.max(np.abs(self.observed[ok] - self.predicted[ok]))) if ok.any() else float("nan")


def reliability(prob: np.ndarray, outcome: np.ndarray, bins: int = 10) -> Reliability:
    """Bin predictions into ``bins`` equal-width bins on [0, 1] and compare with the outcomes.

    Parameters
    ----------
    prob : numpy.ndarray
        Predicted probabilities in [0, 1].
    outcome : numpy.ndarray
        The observed outcomes (0/1), one per prediction.
    bins : int
        Number of equal-width bins (default 10).

    Returns
    -------
    Reliability
        Per bin, its edges, mean prediction, observed frequency, its standard error and the
        number of records (a prediction of exactly 1 falls in the last bin).
    """
    p = np.asarray(prob, dtype=np.float64)
    y = np.asarray(outcome, dtype=np.float64)
    edges = np.linspace(0.0, 1.0, bins + 1)
    idx = np.clip(np.digitize(p, edges) - 1, 0, bins - 1)
    count = np.bincount(idx, minlength=bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        pred = np.bincount(idx, weights=p, minlength=bins) / count
        obs = np.bincount(idx, weights=y, minlength=bins) / count
        se = np.sqrt(obs * (1 - obs) / count)
    return Reliability(edges[:-1], edges[1:], pred, obs, se, count)


__all__ = ["RULES", "Classification", "Reliability", "classification", "decide", "reliability",
           "roc_auc"]
