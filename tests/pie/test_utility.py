"""reidrisk.pie.utility: eq. 22-23 (reidrisk.pie.loss, re-exported here) against a seeded simulation
with the core mechanisms, emp and emp+thr, and the part-(c) comparison."""

import math

import numpy as np
import pytest

from reidrisk.mechanisms import GLH, GRR
from reidrisk.pie import utility as u
from reidrisk.pie.bounds import BoundError

THETA = np.array([0.4, 0.25, 0.15, 0.1, 0.05, 0.03, 0.02, 0.0])


def simulate(mech, codes, eps, k, g, reps, rng, thresholded=False):
    out = np.empty((reps, k))
    name = "rr" if isinstance(mech, GRR) else "glh"
    for r in range(reps):
        w, n = mech.support_counts(mech.perturb(codes, rng))
        out[r] = u.estimate(w, n, eps, k, name, g, thresholded=thresholded)
    return out


def fixed_codes(n, theta):
    counts = np.round(theta * n).astype(int)
    counts[0] += n - counts.sum()
    return np.repeat(np.arange(theta.size), counts)


@pytest.mark.parametrize("name, eps, g", [
    ("rr", 1.0, None), ("rr", 3.0, None),
    pytest.param("glh", 1.0, 3, marks=pytest.mark.slow),
    pytest.param("glh", 2.5, 8, marks=pytest.mark.slow)])
def test_l2_loss_matches_simulation(name, eps, g):
    n, k, reps = 2000, THETA.size, 1500
    codes = fixed_codes(n, THETA)
    theta = np.bincount(codes, minlength=k) / n
    mech = GRR(eps, k) if name == "rr" else GLH(eps, k, g)
    est = simulate(mech, codes, eps, k, g, reps, np.random.default_rng(11))
    sq = (est - theta) ** 2
    mse, se = sq.mean(axis=0), sq.std(axis=0, ddof=1) / math.sqrt(reps)
    want = u.l2_loss_rr(eps, n, k, theta) if name == "rr" else u.l2_loss_glh(eps, n, g, theta)
    # the simulated MSE per symbol is a mean of 1500 i.i.d. squared errors: within 4.5 of its
    # standard errors of the formula (a two-sided 4.5-sigma band over 8 symbols fails by chance
    # with probability < 1e-4); the GLH hash's collision probability differs from 1/g by < 1e-9
    assert np.all(np.abs(mse - want) <= 4.5 * se), (mse / want)
    # and the estimator is unbiased: mean within 4.5 standard errors of the truth
    assert np.all(np.abs(est.mean(axis=0) - theta) <= 4.5 * est.std(axis=0, ddof=1) /
                  math.sqrt(reps))


def test_bonferroni_constant_of_the_authors():
    assert u.bonferroni_z(10_500_393) == pytest.approx(5.739005, abs=5e-7)


def test_thresholds_formula():
    eps, n, k, g = 2.0, 1000, 100, 8
    e = math.exp(eps)
    z = u.bonferroni_z(k)
    assert u.threshold(eps, n, k, "rr") == pytest.approx(z * math.sqrt((k - 2 + e) / n) / (e - 1))
    assert u.threshold(eps, n, k, "glh", g) == pytest.approx(
        z * (e + g - 1) / ((e - 1) * math.sqrt(n * (g - 1))))
    # sigma^2 is the theta-free term of eq. 22 / 23
    assert u.noise_sd(eps, n, k, "rr") ** 2 == pytest.approx(u.l2_loss_rr(eps, n, k, 0.0))
    assert u.noise_sd(eps, n, k, "glh", g) ** 2 == pytest.approx(u.l2_loss_glh(eps, n, g, 0.0))


def test_emp_thr_zeroes_below_threshold_only():
    k, n, eps = 6, 1000, 1.0
    p = GRR(eps, k)
    w = np.array([400.0, 200, 150, 100, 90, 60])
    emp = u.estimate(w, n, eps, k, "rr")
    thr = u.estimate(w, n, eps, k, "rr", thresholded=True)
    tau = u.threshold(eps, n, k, "rr")
    assert emp.sum() == pytest.approx(1.0)  # inversion of counts summing to n
    assert np.all(thr[emp <= tau] == 0) and np.all(thr[emp > tau] == emp[emp > tau])
    assert (emp < 0).any() and (thr >= 0).all()
    assert np.allclose(emp, ((w / n) - p.q_support) / (p.p_support - p.q_support))


def test_topk_metrics():
    theta = np.array([0.5, 0.3, 0.2, 0.0])
    est = np.array([[0.4, 0.3, 0.3, 0.0], [0.5, 0.2, 0.2, 0.1]])
    assert np.allclose(u.topk_l2(est, theta, 2), [0.01, 0.01])
    assert np.allclose(u.topk_relative_error(est, theta, 2), [0.1, (1 / 3) / 2])


@pytest.mark.slow
def test_utility_comparison_pie_budget_beats_ldp_budget():
    rng = np.random.default_rng(3)
    k, n = 256, 2000
    theta = rng.dirichlet(np.full(k, 0.3))
    codes = rng.choice(k, size=n, p=theta)
    rows = u.utility_comparison(codes, k, target_error=0.9, top_k=5, repeats=40, rng=4)
    assert {(r.mechanism, r.calibration, r.estimator) for r in rows} == {
        (m, c, e) for m in ("rr", "glh") for c in ("ldp", "pie") for e in ("emp", "emp+thr")}
    by = {(r.mechanism, r.calibration, r.estimator): r for r in rows}
    for m in ("rr", "glh"):
        pie, ldp = by[(m, "pie", "emp")], by[(m, "ldp", "emp")]
        assert pie.epsilon > 2 * ldp.epsilon  # 1.3 against 0.26 here
        assert pie.expected_loss < ldp.expected_loss
        assert pie.loss < ldp.loss
        for c in ("ldp", "pie"):
            r = by[(m, c, "emp")]
            # the mean of 40 i.i.d. top-K losses: within 5 of its standard errors of eq. 22/23
            assert abs(r.loss - r.expected_loss) <= 5 * r.loss_se


@pytest.mark.parametrize("call, match", [
    (lambda: u.l2_loss_rr(1.0, 100, 10, 1.5), r"theta.*1\.5"),
    (lambda: u.l2_loss_rr(1.0, 100, 10, -0.1), r"theta.*-0\.1"),
    (lambda: u.l2_loss_rr(0.0, 100, 10, 0.1), r"epsilon.*0\.0"),
    (lambda: u.l2_loss_rr(1.0, 1, 10, 0.1), r"number of users n.*1"),
    (lambda: u.l2_loss_glh(1.0, 100, 1, 0.1), r"hash range g.*1"),
    (lambda: u.l2_loss_glh_lambda(1.0, 100, 4, 0.1), r"lambda.*1\.0"),
    (lambda: u.bonferroni_z(1), r"domain size \|X\|.*1"),
    (lambda: u.estimate(np.ones(3), 10, 1.0, 4), r"support_counts.*\(4,\)"),
    (lambda: u.utility_comparison(np.array([0, 5]), 4), r"0\.\.3.*5"),
])
def test_bad_input(call, match):
    with pytest.raises(BoundError, match=match):
        call()
