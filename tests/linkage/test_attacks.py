"""Each attack on paper 001's worked examples (Tables 2-7) and on tables whose answer is known."""

import numpy as np
import pandas as pd
import pytest

from reidrisk.linkage import ATTACKS, LinkageError, attack, reid_rate
from reidrisk.linkage.attacks import SMALL_BLOCK

from .conftest import QI, SA


@pytest.mark.parametrize("name", ["E2", "E3", "E4", "EUC1", "EUC2", "assign"])
def test_table3_B_every_deterministic_attack_links_all_rows(name, X, B):
    # Section 2.3: E2 picks row 1 for b1 (nearest SA1), E3 sorts both as 1,3,2,4 (rate 1.0),
    # E4 links b2 (220) to a2 (200); Section 3.1: EUC links b1 to a1
    linking = attack(name, X, B, qi=QI, sa=SA, rng=0)
    assert linking.guess.tolist() == [0, 1, 2, 3]


def test_euc_distances_of_section_3_1(X, B):
    # D(a1, b1) = 14.142 < 322.8 = D(a2, b1) (the paper's distance)
    linking = attack("EUC1", X, B, qi=QI, sa=SA, rng=0, metric="euclidean")
    assert linking.distance[0] == pytest.approx(14.142, abs=5e-4)
    assert np.hypot(200 - 110, 400 - 90) == pytest.approx(322.8, abs=0.05)


def test_E1_picks_uniformly_among_the_rows_sharing_the_QI_vector(X, B):
    # b1, b2 have (2,1,1) -> candidates {a1, a2}; b3, b4 have (1,1,2) -> {a3, a4} (Table 6)
    rng = np.random.default_rng(5)
    draws = np.array([attack("E1", X, B, qi=QI, sa=SA, rng=rng).guess for _ in range(400)])
    assert set(draws[:, 0]) | set(draws[:, 1]) == {0, 1}
    assert set(draws[:, 2]) | set(draws[:, 3]) == {2, 3}
    # each candidate with probability 1/2: 400 draws, sd = sqrt(400/4) = 10; 4.5 sd bound
    counts = (draws == np.array([0, 1, 2, 3])).sum(axis=0)
    assert np.all(np.abs(counts - 200) < 4.5 * 10)
    # the expected rate of E1 on B is 1/2 (two candidates per row)
    assert abs(counts.sum() / draws.size - 0.5) < 4.5 * np.sqrt(0.25 / draws.size)


def test_table4_D_EUC1_gives_up_and_EUC2_searches_all_rows(X, D):
    # Example 2 of EUC1: d3, d4 have QI (1,1,1), absent from X (Table 7): EUC1 gives up on them
    # (never "the same index"); Example 1 of EUC2: they are matched by distance over all of X
    e1 = attack("EUC1", X, D, qi=QI, sa=SA, rng=0)
    assert e1.guess.tolist() == [0, 1, -1, -1]
    assert reid_rate(e1, np.arange(4)).rate == 0.5
    e2 = attack("EUC2", X, D, qi=QI, sa=SA, rng=0)
    assert e2.guess.tolist() == [0, 1, 2, 3]


def test_EUC1_does_not_assign_the_same_index_on_shuffled_rows(X, D):
    Y = D.iloc[[3, 2, 1, 0]].reset_index(drop=True)
    assert attack("EUC1", X, Y, qi=QI, sa=SA, rng=0).guess.tolist() == [-1, -1, 1, 0]


def test_E1_E2_give_up_without_QI_match(X, D):
    assert attack("E1", X, D, qi=QI, sa=SA, rng=0).guess.tolist()[2:] == [-1, -1]
    assert attack("E2", X, D, qi=QI, sa=SA, rng=0).guess.tolist()[2:] == [-1, -1]


def test_E2_and_E4_use_the_chosen_SA_column(X):
    # on SA2, the release row (2,1,1 | 130, 390) is nearest a2 (400); on SA1 it is nearest a1 (100)
    Y = X.iloc[[0]].reset_index(drop=True).assign(SA1=130.0, SA2=390.0)
    assert attack("E2", X, Y, qi=QI, sa=SA, sa_column="SA2").guess.tolist() == [1]
    assert attack("E2", X, Y, qi=QI, sa=SA, sa_column="SA1").guess.tolist() == [0]
    assert attack("E4", X, Y, qi=QI, sa=SA, sa_column="SA2").guess.tolist() == [1]


def test_ties_are_broken_at_random_among_all_tied_rows():
    # three identical original rows (a QI block of 3 duplicates) and two equidistant points
    X = pd.DataFrame({"q": [0, 0, 0, 1, 1], "s": [5.0, 5.0, 5.0, 0.0, 2.0]})
    Y = pd.DataFrame({"q": [0, 1], "s": [5.0, 1.0]})
    rng = np.random.default_rng(0)
    for name in ("EUC1", "E2"):
        g = np.array([attack(name, X, Y, qi=["q"], sa=["s"], rng=rng, metric="euclidean").guess
                      for _ in range(300)])
        assert set(g[:, 0]) == {0, 1, 2} and set(g[:, 1]) == {3, 4}
        # 300 draws among 3: sd = sqrt(300 * 1/3 * 2/3) = 8.2; 5 sd bound
        assert np.all(np.abs(np.bincount(g[:, 0], minlength=3) - 100) < 5 * 8.2)


@pytest.mark.parametrize("name", ["EUC1", "EUC2", "E2"])
def test_large_blocks_go_through_the_tree_and_agree_with_brute_force(name):
    # one QI block far larger than SMALL_BLOCK plus many small ones; continuous SA (no ties)
    rng = np.random.default_rng(1)
    n = 3000
    q = np.where(rng.random(n) < 0.3, 0, rng.integers(1, 400, n))
    X = pd.DataFrame({"q": q, "a": rng.normal(size=n), "b": rng.normal(size=n)})
    Y = X.sample(frac=0.5, random_state=2).reset_index(drop=True)
    Y[["a", "b"]] += rng.normal(scale=0.3, size=(len(Y), 2))
    Y.loc[:20, "q"] = -1                                   # no QI match
    assert (q == 0).sum() > SMALL_BLOCK
    sa = ["a", "b"] if name != "E2" else ["a"]
    got = attack(name, X, Y, qi=["q"], sa=sa, rng=0, metric="euclidean").guess
    xs, ys = X[sa].to_numpy(), Y[sa].to_numpy()
    d = ((ys[:, None, :] - xs[None, :, :]) ** 2).sum(axis=2)
    same = Y["q"].to_numpy()[:, None] == q[None, :]
    expect = np.where(same.any(axis=1), np.where(same, d, np.inf).argmin(axis=1), -1)
    if name == "EUC2":
        expect = np.where(expect < 0, d.argmin(axis=1), expect)
    assert np.array_equal(got, expect)


def test_assign_is_one_to_one_and_beats_nearest_on_shuffled_noisy_release():
    rng = np.random.default_rng(3)
    n = 400
    X = pd.DataFrame({"q1": rng.integers(0, 3, n), "q2": rng.integers(0, 2, n),
                      "a": rng.normal(size=n), "b": rng.normal(size=n)})
    perm = rng.permutation(n)
    Y = X.iloc[perm].reset_index(drop=True)
    Y[["a", "b"]] += rng.normal(scale=0.2, size=(n, 2))
    g = attack("assign", X, Y, qi=["q1", "q2"], sa=["a", "b"], rng=0)
    assert len(set(g.guess.tolist())) == n
    euc = attack("EUC1", X, Y, qi=["q1", "q2"], sa=["a", "b"], rng=0, scale=True)
    assert (g.guess == perm).sum() >= (euc.guess == perm).sum()


@pytest.mark.parametrize("limit", [10_000, 200_000])
def test_assign_block_path_matches_dense_on_a_clean_release(limit):
    # limit 10,000: each block of ~300 x 300 is cut into 3 chunks; 200,000: blocks solved whole
    rng = np.random.default_rng(4)
    n = 1500
    X = pd.DataFrame({"q": rng.integers(0, 5, n), "a": rng.normal(size=n), "b": rng.normal(size=n)})
    perm = rng.permutation(n)
    Y = X.iloc[perm].reset_index(drop=True)
    Y[["a", "b"]] += rng.normal(scale=0.01, size=(n, 2))
    sparse = attack("assign", X, Y, qi=["q"], sa=["a", "b"], rng=0, dense_limit=limit)
    dense = attack("assign", X, Y, qi=["q"], sa=["a", "b"], rng=0, dense_limit=4_000_000)
    # noise 0.01 sd against neighbours ~ 0.05 apart in a block of 300: nearly every row is linked;
    # chunking loses the rows whose SA-sum order the noise swaps across a chunk border
    assert (dense.guess == perm).mean() > 0.99
    assert (sparse.guess == perm).mean() > (0.99 if limit == 200_000 else 0.9)
    assert len(set(sparse.guess.tolist())) == n


def test_E3_with_deleted_rows_matches_equal_ranks():
    X = pd.DataFrame({"s": [1.0, 2.0, 3.0, 4.0]})
    Y = pd.DataFrame({"s": [4.0, 2.0]})
    # sorted Y: 2.0 (rank 0) -> X rank 0 (row 0); 4.0 (rank 1) -> X rank 1 (row 1)
    assert attack("E3", X, Y, qi=[], sa=["s"]).guess.tolist() == [1, 0]


def test_bad_input_is_named(X, B):
    with pytest.raises(LinkageError, match="QI column"):
        attack("EUC1", X, B.drop(columns="QI3"), qi=QI, sa=SA)
    with pytest.raises(LinkageError, match="'SA1' must be numeric"):
        attack("EUC1", X, B.assign(SA1=["a", "b", "c", "d"]), qi=QI, sa=SA)
    with pytest.raises(LinkageError, match="more than the original"):
        attack("E1", X.iloc[:2], B, qi=QI, sa=SA)
    with pytest.raises(LinkageError, match="unknown"):
        attack("E9", X, B, qi=QI, sa=SA)


def test_every_attack_is_registered():
    assert list(ATTACKS) == ["E1", "E2", "E3", "E4", "EUC1", "EUC2", "assign"]


def test_assign_finds_the_cheapest_one_to_one_assignment():
    from itertools import permutations

    rng = np.random.default_rng(8)
    X = pd.DataFrame({"q": rng.integers(0, 2, 6), "a": rng.normal(size=6), "b": rng.normal(size=6)})
    Y = X.sample(5, random_state=1).reset_index(drop=True)
    Y[["a", "b"]] += rng.normal(scale=0.8, size=(5, 2))
    Y.loc[0, "q"] = 1 - Y.loc[0, "q"]
    g = attack("assign", X, Y, qi=["q"], sa=["a", "b"], rng=0, metric="euclidean")
    sd = X[["a", "b"]].std().to_numpy()
    xs, ys = X[["a", "b"]].to_numpy() / sd / np.sqrt(2), Y[["a", "b"]].to_numpy() / sd / np.sqrt(2)
    cost = np.linalg.norm(ys[:, None] - xs[None], axis=2) + (Y["q"].to_numpy()[:, None]
                                                             != X["q"].to_numpy()[None])
    best = min(sum(cost[i, p[i]] for i in range(5)) for p in permutations(range(6), 5))
    assert sum(cost[i, g.guess[i]] for i in range(5)) == pytest.approx(best)
    assert len(set(g.guess.tolist())) == 5


def test_assign_reads_generalization_labels_of_a_k_anonymous_noisy_release():
    from reidrisk.data.microdata import make_microdata
    from reidrisk.linkage import add_noise, k_anonymize, shuffle_rows

    m = make_microdata(1500, rng=2)
    qi, sa = list(m.qi[:7]), list(m.sa[:3])
    rel = shuffle_rows(add_noise(k_anonymize(m.data, qi, 5), sa, 0.3, rng=1), rng=2)
    on = reid_rate(attack("assign", m.data, rel, qi=qi, sa=sa, rng=0), rel)
    off = reid_rate(attack("assign", m.data, rel, qi=qi, sa=sa, rng=0, read_labels=False), rel)
    assert on.low > off.high            # the 95% intervals do not overlap (measured 0.49 vs 0.12)


def test_qi_index_of_tables_6_and_7(X, B, D):
    from reidrisk.linkage._keys import qi_keys

    # Table 6: f over B = {(2,1,1): 1,2; (1,1,2): 3,4}; Table 7: f over D = {(2,1,1): 1,2;
    # (1,1,1): 3,4}; (1,1,1) is no key of X, so d3 and d4 have no candidates
    kx, kb, kd = qi_keys(X, B, D, qi=QI)
    assert kb[0] == kb[1] != kb[2] == kb[3] and np.array_equal(kb, kx)
    assert kd[0] == kd[1] == kx[0] and kd[2] == kd[3] and kd[2] not in set(kx.tolist())


@pytest.fixture(scope="module")
def amounts():
    from reidrisk.data.microdata import make_microdata

    m = make_microdata(3000, rng=4)
    return m.data, list(m.qi[:6]), list(m.sa)


@pytest.mark.parametrize("name", ["EUC1", "EUC2", "assign"])
def test_log_distance_on_multiplicative_noise_is_chosen_and_links_more(amounts, name):
    from reidrisk.linkage import add_noise

    x, qi, sa = amounts
    rel = add_noise(x, sa, 0.3, kind="multiplicative", rng=1)
    paper = attack(name, x, rel, qi=qi, sa=sa, rng=0, metric="euclidean")
    auto = attack(name, x, rel, qi=qi, sa=sa, rng=0)
    assert (paper.metric, auto.metric) == ("euclidean", "log")
    r_paper, r_auto = reid_rate(paper, rel), reid_rate(auto, rel)
    assert r_auto.low > r_paper.high, (r_paper, r_auto)     # the 95% intervals are apart


def test_additive_noise_picks_the_scaled_distance_and_an_exact_release_the_papers(amounts):
    from reidrisk.linkage import add_noise
    from reidrisk.linkage.attacks import choose_metric
    from reidrisk.linkage.generalization import read_release

    x, qi, sa = amounts
    rel = add_noise(x, sa, 0.1, rng=1)
    # additive noise of 0.1 sd per column: the sd-scaled distance fits it, the log one does not
    rates = {m: reid_rate(attack("EUC1", x, rel, qi=qi, sa=sa, rng=0, metric=m), rel)
             for m in ("euclidean", "scaled", "log")}
    auto = attack("EUC1", x, rel, qi=qi, sa=sa, rng=0)
    assert auto.metric == "scaled" and rates["log"].high < rates["scaled"].low
    xs = x[sa].to_numpy(float)
    match = read_release(x, x, qi)
    assert choose_metric(match, xs, xs.copy()) == "euclidean"   # every link mutual: a tie
    with pytest.raises(LinkageError, match="unknown SA distance 'cosine'"):
        attack("EUC2", x, rel, qi=qi, sa=sa, metric="cosine")
