"""reidrisk.pie.traces: Markov-chain scores, matching, knowledge models, LDP obfuscation."""

import math

import numpy as np
import pytest

from reidrisk.data.traces import Sequences
from reidrisk.mechanisms import GLH, GRR
from reidrisk.pie.traces import (
    DELTA,
    MatchError,
    adversary_view,
    fit_markov,
    match,
    maximum_knowledge,
    obfuscate,
    partial_knowledge,
    score_matrix,
)


def brute_force_score(train_seq, k, observed, kind, delta=DELTA):
    """s_u(y) straight from docs/design/pie.md#markov-chain-matching, one pair at a time."""
    train_seq = list(train_seq)
    pi = np.zeros(k)
    for x in train_seq:
        pi[x] += 1
    pi /= max(1, len(train_seq))
    a = np.zeros((k, k))
    for x, y in zip(train_seq[:-1], train_seq[1:]):
        a[x, y] += 1
    rows = a.sum(axis=1, keepdims=True)
    a = np.divide(a, rows, out=np.zeros_like(a), where=rows > 0)
    if kind == "visit":
        probs = [pi[y] for y in observed]
    else:
        probs = [pi[observed[0]]] + [a[x, y] for x, y in zip(observed[:-1], observed[1:])]
    return sum(math.log(p / delta) for p in probs if p > 0)


def test_scores_equal_brute_force_on_a_tiny_case():
    k = 5
    train = Sequences.from_lists([[0, 1, 1, 2, 0], [3, 3, 4], [2], [4, 0, 4, 0, 1, 1]], k)
    release = Sequences.from_lists([[0, 1, 2], [3, 4, 4, 3], [2, 2], [1], [4, 0, 1]], k,
                                   users=[0, 1, 2, 3, 0])
    model = fit_markov(train)
    for kind in ("trans", "visit"):
        s = score_matrix(model, release, kind)
        assert s.shape == (5, 4)
        for v in range(release.n):
            for u in range(train.n):
                want = brute_force_score(train.sequence(u), k, release.sequence(v), kind)
                assert s[v, u] == pytest.approx(want, rel=1e-12, abs=1e-9), (kind, v, u)


def test_delta_shifts_scores_by_the_log_of_delta():
    k = 4
    train = Sequences.from_lists([[0, 1, 2, 3], [3, 2, 1, 0]], k)
    release = Sequences.from_lists([[0, 1], [3, 2]], k)
    a = score_matrix(fit_markov(train, 1e-8), release)
    b = score_matrix(fit_markov(train, 1e-4), release)
    # every nonzero factor p contributes ln(p / delta): the difference is (#factors) ln(1e4).
    # Own user: pi and the transition are both > 0; other user: pi > 0 (each visits all 4
    # regions) but the transition is never seen (0 -> 1 vs 3 -> 2 -> 1 -> 0)
    factors = np.array([[2, 1], [1, 2]])
    np.testing.assert_allclose(a - b, factors * math.log(1e4))


def synthetic_users(n, k, length, rng):
    """Users who each move among their own 3 regions (plus rare noise): identifiable."""
    homes = np.stack([rng.choice(k, 3, replace=False) for _ in range(n)])
    seqs = []
    for u in range(n):
        s = homes[u, rng.integers(0, 3, size=length)]
        noise = rng.random(length) < 0.05
        s[noise] = rng.integers(0, k, size=noise.sum())
        seqs.append(s)
    return seqs


def test_matching_identifies_users_on_synthetic_traces():
    rng = np.random.default_rng(4)
    n, k = 200, 500
    seqs = synthetic_users(n, k, 60, rng)
    background = Sequences.from_lists([s[:30] for s in seqs], k, users=np.arange(100, 100 + n))
    personal = Sequences.from_lists([s[30:] for s in seqs], k, users=np.arange(100, 100 + n))
    res = partial_knowledge(background, personal, bootstrap=20)
    # each user's 3 regions are a 3-subset of 500: two users share all 3 with probability ~1e-7,
    # so the best-score rule finds everyone (noise events score 0 for most impostors)
    assert res.identification.error_rate == 0.0
    assert res.identification.expected_error_rate == 0.0
    np.testing.assert_array_equal(res.truth, np.arange(n))
    # the PSE is large (genuine scores >> impostor scores) and the DET curve separates them
    assert res.pse.bits > 5
    det = res.det(200)
    assert det.eer < 0.05
    # shuffled release order: truth follows the user ids, not the row order
    perm = rng.permutation(n)
    res2 = match(background, personal.take(perm), bootstrap=0)
    np.testing.assert_array_equal(res2.truth, perm)
    assert res2.identification.error_rate == 0.0


def test_one_event_is_weaker_than_many():
    rng = np.random.default_rng(5)
    n, k = 300, 40
    seqs = synthetic_users(n, k, 40, rng)
    personal = Sequences.from_lists(seqs, k)
    one = maximum_knowledge(personal, events=1, bootstrap=0)
    allev = maximum_knowledge(personal, events=None, bootstrap=0)
    # with 40 regions and 3 per user, one event is shared by ~n * 3 / 40 = 22 users on average:
    # the error rate of one event is far above that of the whole trace
    assert one.identification.expected_error_rate > 0.5
    assert allev.identification.expected_error_rate < 0.05
    assert one.pse.bits < allev.pse.bits


def test_obfuscation_through_the_core_mechanisms():
    rng = np.random.default_rng(6)
    n, k = 150, 64
    seqs = synthetic_users(n, k, 20, rng)
    background = Sequences.from_lists([s[:10] for s in seqs], k)
    personal = Sequences.from_lists([s[10:] for s in seqs], k)
    strong = GRR(0.1, k)
    weak = GRR(20.0, k)
    out = obfuscate(personal, weak, rng=1)
    np.testing.assert_array_equal(out.codes, personal.codes)  # p_keep = 1 - 6e-8 per event
    noisy = obfuscate(personal, strong, rng=1)
    assert noisy.k == k and noisy.codes.shape == personal.codes.shape
    # at eps = 0.1 over 64 regions almost every event is replaced: matching is near chance
    res = match(adversary_view(background, strong), noisy.head(1), bootstrap=0, rng=2)
    assert res.identification.expected_error_rate > 0.9
    glh = GLH.with_random_tables(2.0, k, m=1, g=8, rng=3)
    hashed = obfuscate(personal, glh, rng=1)
    assert hashed.k == 8 and hashed.codes.max() < 8
    view = adversary_view(background, glh)
    np.testing.assert_array_equal(view.codes, glh.family.tables[0][background.codes])
    match(view, hashed, bootstrap=0)  # same domain: scores without error
    with pytest.raises(MatchError, match="one hash table"):
        obfuscate(personal, GLH(2.0, k, g=8), rng=1)
    with pytest.raises(MatchError, match="k=32"):
        obfuscate(personal, GRR(1.0, 32), rng=1)


def test_bad_input_is_named():
    k = 4
    a = Sequences.from_lists([[0, 1], [2, 3]], k, users=[1, 2])
    b = Sequences.from_lists([[0, 1]], k, users=[7])
    with pytest.raises(MatchError, match="release user 7 has no background"):
        match(a, b)
    with pytest.raises(MatchError, match="same region"):
        score_matrix(fit_markov(a), Sequences.from_lists([[0]], 5))
    with pytest.raises(MatchError, match="unknown model 'markov'"):
        score_matrix(fit_markov(a), a, kind="markov")
    with pytest.raises(MatchError, match="delta=0"):
        fit_markov(a, delta=0)
    huge = Sequences.from_lists([[0, 1]], 4_000_000_000, labels=np.zeros(1))
    with pytest.raises(MatchError, match="too large to key transitions"):
        fit_markov(huge)
