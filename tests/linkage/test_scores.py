"""Scores against hand-computed values, and the coverage of the Clopper-Pearson interval."""

import numpy as np
import pandas as pd
import pytest

from reidrisk.linkage import Linking, evaluate, reid_rate, security_scores, utility_scores
from reidrisk.linkage.scores import clopper_pearson

from .conftest import QI, SA


def test_utility_by_hand():
    X = pd.DataFrame({"q": ["a", "a", "b", "b"], "s": [0.0, 2.0, 4.0, 6.0], "t": [1.0, 2.0, 3.0, 5.0]})
    Y = pd.DataFrame({"q": ["a", "b", "b"], "s": [1.0, 4.0, 7.0], "t": [1.0, 3.0, 5.0]})
    truth = np.array([0, 2, 3])
    u = utility_scores(X, Y, qi=["q"], sa=["s", "t"], truth=truth)
    # U1: means X (3, 2.75), Y (4, 3): (1 + 0.25) / 2
    assert u.U1_meanMAE == pytest.approx(0.625)
    # U2: mean of s by q: X a=1, b=5; Y a=1, b=5.5 -> |0|,|0.5|; t: X a=1.5,b=4; Y a=1,b=4 -> 0.5, 0
    assert u.U2_crossMean == pytest.approx((0 + 0.5 + 0.5 + 0) / 4)
    # U3: counts X a=2, b=2; Y a=1, b=2
    assert u.U3_crossCnt == pytest.approx(0.5)
    # U5: |1-0|/6, |4-4|, |7-6|/6 on s; t: |1-1|, |3-3|, |5-5| -> (2/6) / 6
    assert u.U5_IL == pytest.approx((2 / 6) / 6)
    assert u.U6_nrow == 1
    cx, cy = np.corrcoef(X["s"], X["t"])[0, 1], np.corrcoef(Y["s"], Y["t"])[0, 1]
    assert u.U4_corMAE == pytest.approx(abs(cx - cy))


def test_a_cell_absent_from_the_release_costs_its_whole_value():
    X = pd.DataFrame({"q": ["a", "b"], "s": [2.0, 4.0]})
    Y = pd.DataFrame({"q": ["a"], "s": [2.0]})
    u = utility_scores(X, Y, qi=["q"], sa=["s"])
    assert u.U2_crossMean == pytest.approx(4.0 / 2) and u.U3_crossCnt == pytest.approx(0.5)
    assert np.isnan(u.U5_IL)                   # needs the truth


def test_security_of_table_2(X):
    s = security_scores(X, qi=QI)
    assert (s.S1_min_class, s.S2_mean_class) == (2, 2.0)
    s = security_scores(X.assign(QI1=[1, 2, 3, 3]), qi=QI)
    assert (s.S1_min_class, s.S2_mean_class) == (1, 4 / 3)


def test_rate_and_interval():
    link = Linking(np.array([0, 1, 5, -1]), "x", 0.0)
    r = reid_rate(link, np.array([0, 1, 2, 3]), n_original=10)
    assert (r.linked, r.n, r.rate, r.gave_up, r.random_guess) == (2, 4, 0.5, 1, 0.1)
    # Clopper-Pearson for 2/4 at 95 %: (0.0676, 0.9324)
    assert (r.low, r.high) == pytest.approx((0.06759, 0.93241), abs=1e-4)
    assert clopper_pearson(0, 10) == pytest.approx((0.0, 0.30850), abs=1e-4)


def test_interval_covers_the_truth_at_least_at_its_level():
    # Clopper-Pearson is conservative: coverage >= 95 %. 2000 seeded simulations: the estimated
    # coverage has sd <= sqrt(.95 .05 / 2000) = 0.0049, so >= 0.935 fails only if it is really < .95
    rng = np.random.default_rng(11)
    p, n, reps = 0.3, 50, 2000
    k = rng.binomial(n, p, size=reps)
    cover = [lo <= p <= hi for lo, hi in (clopper_pearson(int(v), n) for v in k)]
    assert np.mean(cover) >= 0.935


def test_evaluate_without_truth_says_why(X, B):
    card = evaluate(X, B, qi=QI, sa=SA)
    assert card.rates == () and "true mapping" in card.notes[0]
    card = evaluate(X, B, qi=QI, sa=SA, truth=np.arange(4), rng=0, attacks=["EUC1", "E3"])
    assert [r.rate for r in card.rates] == [1.0, 1.0]
    assert card.to_dict()["rates"][0]["attack"] == "EUC1" and "EUC1" in card.to_text()
