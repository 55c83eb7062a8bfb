"""reidrisk.linkage.evaluate: the scorecard of a release against its original."""

import json

import numpy as np
import pandas as pd
import pytest

from reidrisk.linkage.evaluate import evaluate
from reidrisk.linkage.release import LinkageError, as_release

X = pd.DataFrame({"zip": [1, 1, 2, 2], "age": [30, 30, 40, 50], "income": [1.0, 2.0, 3.0, 4.0]})


def test_identity_release_scores_by_hand():
    card = evaluate(X, as_release(X), qi=["zip", "age"], sa=["income"], attacks=["E1"], rng=0)
    u, s = card.utility, card.security
    # the release is the original: no utility loss, no row deleted
    assert (u.U1_meanMAE, u.U6_nrow) == (0.0, 0)
    # QI classes (1, 30) x2, (2, 40), (2, 50): smallest 1, mean over classes (2 + 1 + 1) / 3
    assert s.S1_min_class == 1
    assert s.S2_mean_class == pytest.approx(4 / 3)
    assert card.n_original == card.n_release == 4 and len(card.rates) == 1
    assert json.loads(json.dumps(card.to_dict()))["security"]["S1_min_class"] == 1
    assert "S1 smallest QI class 1" in card.to_text()


def test_without_a_mapping_the_scorecard_says_why_there_are_no_rates():
    card = evaluate(X, X.iloc[:3].reset_index(drop=True), qi=["zip"], sa=["income"])
    assert card.rates == () and "no true mapping given" in card.notes[0]


def test_bad_inputs_name_the_fix():
    with pytest.raises(LinkageError, match="unknown attack"):
        evaluate(X, X, qi=["zip"], sa=["income"], attacks=["magic"])
    with pytest.raises(LinkageError, match="more than the original's"):
        evaluate(X.iloc[:2], X, qi=["zip"], sa=["income"])
    with pytest.raises(LinkageError, match="outside 0..3"):
        evaluate(X, X, qi=["zip"], sa=["income"], truth=np.array([0, 1, 2, 9]))


def test_counts_and_means_by_qi_value_read_the_releases_labels():
    from reidrisk.data.microdata import make_microdata
    from reidrisk.linkage import k_anonymize

    m = make_microdata(600, rng=5)
    qi, sa = list(m.qi[:5]), list(m.sa[:3])
    rel = k_anonymize(m.data, qi, 5, suppress=False)          # QI recoded, nothing deleted
    assert any(rel.details[-1]["generalized"].values())
    card = evaluate(m.data, rel, qi=qi, sa=sa, attacks=["EUC1"], rng=0)
    # the same rows tabulated in the same categories: nothing lost by QI value
    assert card.utility.U3_crossCnt == 0 and card.utility.U2_crossMean == 0
    assert card.rates[0].rate == 1.0
