"""reidrisk.pie.pse: the k-NN KL estimator, its interval, DET curves and the best-score rule."""

import math

import numpy as np
import pytest

from reidrisk.pie.pse import (
    ScoreError,
    det_curve,
    genuine_impostor,
    identification_error,
    kl_divergence,
    pse,
    read_scores,
)


def gaussian_kl_bits(m1, s1, m0, s0):
    """Closed-form D(N(m1, s1^2) || N(m0, s0^2)) in bits."""
    return (math.log(s0 / s1) + (s1**2 + (m1 - m0) ** 2) / (2 * s0**2) - 0.5) / math.log(2)


CASES = [(2.0, 1.0, 0.0, 1.0), (1.0, 0.5, 0.0, 1.5), (3.0, 1.0, 0.0, 2.0)]


@pytest.mark.parametrize("case", CASES)
def test_gaussian_kl_within_005_bits_at_1e5(case):  # ~0.6 s each
    # the acceptance target: within 0.05 bits at 10^5 samples. At this size the
    # estimator's sampling sd is about 0.025 bits (half-sample interval; seeded repeats agree)
    # and its bias below 0.02 (docs/design/pie.md#numerical-checks), so 0.05 is a 2-sd margin that a
    # wrong constant (e.g. ln M/N instead of ln M/(N-1), or nats) would break.
    m1, s1, m0, s0 = case
    rng = np.random.default_rng(12345)
    g = rng.normal(m1, s1, 100_000)
    i = rng.normal(m0, s0, 100_000)
    assert abs(kl_divergence(g, i, rng=1) - gaussian_kl_bits(*case)) < 0.05


@pytest.mark.parametrize("case", CASES[1:])
def test_gaussian_kl_small_sample_within_its_interval(case):
    # N = M = 5,000: the tolerance is 3 of the estimator's own sampling sds (the half-sample
    # interval's width / 3.92, calibrated against seeded repeats in the slow test below) plus the
    # bias measured at 10^4 samples (docs/design/pie.md#numerical-checks) for these pairs (<= 0.01
    # bits).
    m1, s1, m0, s0 = case
    rng = np.random.default_rng(7)
    est = pse(rng.normal(m1, s1, 5000), rng.normal(m0, s0, 5000), bootstrap=100, rng=3)
    sd = (est.high - est.low) / 3.92
    assert 0.01 < sd < 0.2
    assert abs(est.bits - gaussian_kl_bits(*case)) < 3 * sd + 0.01
    assert est.low < est.bits < est.high


@pytest.mark.slow
def test_interval_width_matches_seeded_repeats():
    # 30 seeded repeats at N = 2,000 of N(2,1) || N(0,1): the sd of the estimates against the
    # mean sd implied by the intervals. With 30 repeats the sample sd is within +-26 % (2 se of an
    # sd estimate, sqrt(1/(2*29))) of the truth, so a ratio outside [0.6, 1.6] is a miscalibrated
    # interval (resampling per-probe terms gave ~0.43).
    est, sds = [], []
    for s in range(30):
        rng = np.random.default_rng(100 + s)
        e = pse(rng.normal(2, 1, 2000), rng.normal(0, 1, 2000), bootstrap=60, rng=s)
        est.append(e.bits)
        sds.append((e.high - e.low) / 3.92)
    ratio = np.mean(sds) / np.std(est, ddof=1)
    assert 0.6 < ratio < 1.6


def test_fixed_k_and_identical_samples():
    rng = np.random.default_rng(0)
    x = rng.normal(0, 1, 4000)
    y = rng.normal(0, 1, 4000)
    # same distribution: D = 0; sd at N = 4,000 is ~0.03 bits (seeded repeats), 0.15 is 5 sd
    assert abs(kl_divergence(x, y)) < 0.15
    assert abs(kl_divergence(x, y, k=5)) < 0.15
    # a scale change: D(N(0, 1) || N(0, 2^2)) = 0.60 bits; fixed k = 5 has a smaller variance than
    # k = 1 here (sd ~0.03 bits at N = 4,000 in seeded repeats), 0.15 is again 5 sd
    w = rng.normal(0, 2, 4000)
    assert abs(kl_divergence(x, w, k=5) - gaussian_kl_bits(0, 1, 0, 2)) < 0.15


def test_ties_are_separated_by_jitter_and_zero_jitter_is_refused():
    g = np.repeat([1.0, 2.0, 3.0], 50)
    i = np.repeat([0.0, 1.0], 75)
    assert math.isfinite(kl_divergence(g, i))
    with pytest.raises(ScoreError, match="jitter"):
        kl_divergence(g, i, jitter=0.0)


def test_seeded_estimate_is_reproducible():
    rng = np.random.default_rng(1)
    g, i = rng.normal(1, 1, 500), rng.normal(0, 1, 500)
    assert pse(g, i, bootstrap=20, rng=5) == pse(g, i, bootstrap=20, rng=5)


def test_bad_arguments():
    with pytest.raises(ScoreError, match="at least 2"):
        kl_divergence([1.0], [0.0, 1.0])
    with pytest.raises(ScoreError, match="not finite"):
        kl_divergence([1.0, np.nan, 2.0], [0.0, 1.0])
    with pytest.raises(ValueError, match="k=0"):
        kl_divergence([1.0, 2.0, 3.0], [0.0, 1.0], k=0)


def test_det_curve_hand_example():
    genuine = [3.0, 5.0, 7.0, 9.0]
    impostor = [1.0, 2.0, 4.0, 6.0, 8.0]
    det = det_curve(genuine, impostor, thresholds=np.array([0.0, 2.0, 4.5, 6.0, 10.0]))
    # FAR = share of impostors >= t; FRR = share of genuine < t
    np.testing.assert_allclose(det.far, [5 / 5, 4 / 5, 2 / 5, 2 / 5, 0 / 5])
    np.testing.assert_allclose(det.frr, [0 / 4, 0 / 4, 1 / 4, 2 / 4, 4 / 4])
    # default thresholds: evenly spaced from the global min to the global max
    d = det_curve(genuine, impostor, thresholds=9)
    np.testing.assert_allclose(d.thresholds, np.linspace(1, 9, 9))
    assert d.far[0] == 1.0 and d.frr[0] == 0.0
    assert np.all(np.diff(d.far) <= 0) and np.all(np.diff(d.frr) >= 0)
    # closest FAR/FRR at t = 6: FAR = 2/5, FRR = 2/4; the EER is read as their midpoint
    assert d.eer == pytest.approx(0.45)


def test_identification_ties_hand_example():
    s = np.array([
        [5.0, 1.0, 2.0, 0.0],   # genuine (col 0) strictly best: rank 1
        [3.0, 3.0, 0.0, 3.0],   # genuine (col 1) tied with 2 others: wins w.p. 1/3
        [9.0, 0.0, 1.0, 1.0],   # genuine (col 2) beaten by 9 and tied with col 3: always wrong
        [0.0, 0.0, 0.0, 0.0],   # all tied: wins w.p. 1/4
    ])
    truth = np.array([0, 1, 2, 3])
    res = identification_error(s, truth, rng=0)
    assert res.expected_error_rate == pytest.approx(1 - (1 + 1 / 3 + 0 + 1 / 4) / 4)
    assert res.ranks[0] == 1
    assert 1 <= res.ranks[1] <= 3
    assert 2 <= res.ranks[2] <= 3
    assert 1 <= res.ranks[3] <= 4
    # the random tie offset is uniform: over many draws, row 1 wins ~1/3 and row 3 ~1/4 of the time
    wins1 = wins3 = 0
    draws = 3000
    many = np.tile(s[[1, 3]], (draws, 1))
    r = identification_error(many, np.tile([1, 3], draws), rng=1).ranks
    wins1, wins3 = np.mean(r[0::2] == 1), np.mean(r[1::2] == 1)
    # binomial sd at 3,000 draws <= 0.0087; 4 sd = 0.035
    assert abs(wins1 - 1 / 3) < 0.035 and abs(wins3 - 1 / 4) < 0.035


def test_genuine_impostor_never_pairs_a_user_with_itself():
    s = np.arange(36, dtype=float).reshape(6, 6)
    g, i = genuine_impostor(s, rng=0)
    np.testing.assert_array_equal(g, np.diag(s))
    assert not np.any(np.isin(i, np.diag(s)))
    g, i = genuine_impostor(s, impostors="all")
    assert i.size == 30 and not np.any(np.isin(i, np.diag(s)))
    assert sorted(i.tolist()) == sorted(set(range(36)) - set(np.diag(s).astype(int).tolist()))
    with pytest.raises(ValueError, match="'some'"):
        genuine_impostor(s, impostors="some")


def test_read_scores_errors_name_file_and_value(tmp_path):
    good = tmp_path / "g.csv"
    good.write_text("score\n1.5\n2\n-3e2\n")
    np.testing.assert_allclose(read_scores(good), [1.5, 2.0, -300.0])
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(ScoreError, match="empty.csv.*empty"):
        read_scores(empty)
    header_only = tmp_path / "h.csv"
    header_only.write_text("score\n")
    with pytest.raises(ScoreError, match="h.csv.*no scores"):
        read_scores(header_only)
    bad = tmp_path / "bad.csv"
    bad.write_text("score\n1\nabc\n")
    with pytest.raises(ScoreError, match=r"bad.csv.*row 3.*'abc'"):
        read_scores(bad)
    two = tmp_path / "two.csv"
    two.write_text("a,b\n1,2\n")
    with pytest.raises(ScoreError, match="two.csv.*'score'"):
        read_scores(two)


def test_scores_equal_but_for_rounding_are_tied():
    """Scores equal up to summation order (1e-15 apart) are tied, not split (issue 26)."""
    rounded = np.array([[0.3, 0.1 + 0.2, 0.0], [0.7, 0.7 + 1e-15, 0.0]])  # genuine: column 0
    exact = np.array([[0.3, 0.3, 0.0], [0.7, 0.7, 0.0]])
    got = identification_error(rounded, np.array([0, 0]), rng=0).expected_error_rate
    assert got == identification_error(exact, np.array([0, 0]), rng=0).expected_error_rate
    assert got == pytest.approx(0.5)
