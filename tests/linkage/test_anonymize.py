"""Each anonymization's guarantee, and truth composed through pipelines."""

import numpy as np
import pandas as pd
import pytest

from reidrisk.data.microdata import QI_COLUMNS, SA_COLUMNS, make_microdata
from reidrisk.linkage import (
    ANONYMIZERS,
    LinkageError,
    Pipeline,
    add_noise,
    average_sa,
    delete_records,
    k_anonymize,
    security_scores,
    shuffle_rows,
    swap_sa,
    unify,
)

from .conftest import QI, SA


def _micro_frame(n=600, seed=7):
    return make_microdata(n, rng=seed).data


def test_average_sa_reproduces_table_10(X):
    F = average_sa(X, QI, SA).data
    assert F["SA1"].tolist() == [150.0, 150.0, 350.0, 350.0]
    assert F["SA2"].tolist() == [250.0, 250.0, 350.0, 350.0]


def test_swap_sa_keeps_each_group_multiset_as_table_11(X):
    for seed in range(20):
        G = swap_sa(X, QI, SA, rng=seed).data
        for rows in ([0, 1], [2, 3]):
            for c in SA:
                assert sorted(G.loc[rows, c]) == sorted(X.loc[rows, c])
        assert G[QI].equals(X[QI])


@pytest.mark.parametrize("k", [2, 3, 5, 10])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_k_anonymity_holds(k, seed):
    frame = _micro_frame(500, seed)
    qi = list(QI_COLUMNS[:8])
    rel = k_anonymize(frame, qi, k)
    assert security_scores(rel, qi=qi).S1_min_class >= k
    assert rel.details[-1]["suppressed"] == len(frame) - rel.n
    assert rel.details[-1]["suppressed"] <= max(k - 1, int(0.02 * len(frame)))
    # rows kept are unchanged outside the generalized QI columns and truth points to them
    rest = [c for c in frame.columns if c not in rel.details[-1]["generalized"]]
    assert rel.data[rest].reset_index(drop=True).equals(
        frame[rest].iloc[rel.truth].reset_index(drop=True))
    # every published value of a generalized column is either the original or its group label
    for col, merged in rel.details[-1]["generalized"].items():
        orig = frame[col].to_numpy()[rel.truth]
        pub = rel.data[col].to_numpy()
        label_of = {v: lab for lab, vals in merged.items() for v in vals}
        assert all(p == label_of.get(o, o) for o, p in zip(orig, pub))


def test_k_anonymity_without_suppression_keeps_every_row():
    frame = _micro_frame(300, 3)
    rel = k_anonymize(frame, list(QI_COLUMNS), 7, suppress=False)
    assert rel.n == 300 and security_scores(rel, qi=list(QI_COLUMNS)).S1_min_class >= 7


def test_k_anonymize_nominal_and_string_numbers():
    frame = pd.DataFrame({"city": list("aaaabbbcdde"), "age": [str(v) for v in range(20, 31)],
                          "s": np.arange(11.0)})
    rel = k_anonymize(frame, ["city", "age"], 3, suppress=False)
    assert security_scores(rel, qi=["city", "age"]).S1_min_class >= 3
    labels = set(rel.data["age"])
    assert all("-" in v for v in labels)                   # numeric text merged into ranges
    with pytest.raises(LinkageError, match="fewer than k"):
        k_anonymize(frame, ["city"], 20)


def test_noise_changes_only_sa_and_scales(X):
    rel = add_noise(X, SA, 0.1, rng=0)
    assert rel.data[QI].equals(X[QI]) and not rel.data[SA].equals(X[SA])
    big = _micro_frame(2000, 1)
    sa = list(SA_COLUMNS[:3])
    out = add_noise(big, sa, 0.5, rng=1).data
    ratio = (out[sa] - big[sa]).std() / big[sa].std()
    # sd of the noise is 0.5 x the column sd; with 2000 draws the ratio's sd is 0.5/sqrt(4000)=0.008
    assert np.all(np.abs(ratio - 0.5) < 0.05)
    mult = add_noise(big, sa, 0.2, kind="multiplicative", rng=1).data
    assert np.all(np.abs((mult[sa] / big[sa] - 1).std() - 0.2) < 0.02)
    with pytest.raises(LinkageError, match="kind"):
        add_noise(X, SA, 0.1, kind="laplace")


def test_shuffle_keeps_the_rows():
    frame = _micro_frame(200, 2)
    rel = shuffle_rows(frame, rng=3)
    assert rel.data.equals(frame.iloc[rel.truth].reset_index(drop=True))
    assert sorted(rel.truth.tolist()) == list(range(200)) and not np.all(rel.truth == np.arange(200))


def test_unify_sets_one_value(X, D):
    assert unify(X, ["QI3"], value=1).data.equals(D)   # Table 4 from Table 2
    assert unify(X, ["QI1"]).data["QI1"].nunique() == 1


def test_means_preserved_by_averaging_and_swapping():
    frame = _micro_frame(800, 4)
    qi, sa = list(QI_COLUMNS[:4]), list(SA_COLUMNS)
    for rel in (average_sa(frame, qi, sa), swap_sa(frame, qi, sa, rng=5)):
        np.testing.assert_allclose(rel.data[sa].mean(), frame[sa].mean(), rtol=1e-12)
        # and the mean by QI group
        np.testing.assert_allclose(rel.data.groupby(qi)[sa].mean(), frame.groupby(qi)[sa].mean(),
                                   rtol=1e-12)


def test_delete_records_keeps_order():
    frame = _micro_frame(100, 5)
    rel = delete_records(frame, 0.1, rng=0)
    assert rel.n == 90 and np.all(np.diff(rel.truth) > 0)
    assert rel.data.equals(frame.iloc[rel.truth].reset_index(drop=True))


def test_truth_composes_through_a_pipeline(tmp_path):
    frame = _micro_frame(400, 6)
    qi, sa = list(QI_COLUMNS[:6]), list(SA_COLUMNS[:4])
    path = tmp_path / "p.toml"
    path.write_text(
        f"qi = {qi!r}\nsa = {sa!r}\n".replace("'", '"')
        + '[[steps]]\nstep = "delete"\nfraction = 0.2\n'
        + '[[steps]]\nstep = "k_anonymize"\nk = 3\n'
        + '[[steps]]\nstep = "swap_sa"\n'
        + '[[steps]]\nstep = "shuffle"\n')
    rel = Pipeline.from_toml(path).apply(frame, rng=1)
    assert rel.steps == ("delete", "k_anonymize", "swap_sa", "shuffle")
    untouched = [c for c in frame.columns if c not in qi + sa]
    assert rel.data[untouched].equals(frame[untouched].iloc[rel.truth].reset_index(drop=True))
    assert len(set(rel.truth.tolist())) == rel.n
    # the same by hand
    r = delete_records(frame, 0.2, rng=np.random.default_rng(1))
    assert len(r.truth) == 320


def test_pipeline_errors_are_clear():
    with pytest.raises(LinkageError, match="'blur' is unknown"):
        Pipeline.from_dict({"steps": [{"step": "blur"}]})
    with pytest.raises(LinkageError, match=r"unknown parameter\(s\) \['kk'\]"):
        Pipeline.from_dict({"qi": ["a"], "steps": [{"step": "k_anonymize", "kk": 3}]})
    with pytest.raises(LinkageError, match="lacks the parameter"):
        Pipeline.from_dict({"steps": [{"step": "k_anonymize", "k": 3}]})
    with pytest.raises(LinkageError, match="no steps"):
        Pipeline.from_dict({"qi": ["a"]})
    assert set(ANONYMIZERS) == {"k_anonymize", "noise", "shuffle", "unify", "average_sa",
                                "swap_sa", "delete"}


def test_numeric_coarsening_merges_only_rare_ranges():
    from reidrisk.linkage.anonymize import _merge_rare_ranges

    # counts 5 1 7 2 2 9, k = 3: 1 joins its smaller neighbour 5; 2 and 2 join each other
    assert _merge_rare_ranges(np.array([5, 1, 7, 2, 2, 9]), 3).tolist() == [0, 0, 1, 2, 2, 3]
    # none below k = 2: those below the median (3.5) merge
    assert _merge_rare_ranges(np.array([5, 1, 7, 2, 2, 9]), 1).tolist() == [0, 0, 1, 2, 2, 3]
    assert _merge_rare_ranges(np.array([3, 3, 3, 3]), 2).tolist() == [0, 0, 1, 1]
    frame = pd.DataFrame({"age": [30] * 20 + [31] * 20 + [45, 46, 47], "s": np.arange(43.0)})
    rel = k_anonymize(frame, ["age"], 3, suppress=False)
    assert rel.data["age"].tolist()[:40] == [30] * 20 + [31] * 20     # common values kept
    assert set(rel.data["age"].tolist()[40:]) == {"45-47"}
