"""reidrisk.pie.bounds: every bound against exact computation on random small cases
(docs/design/pie.md#numerical-checks), the Figure-4 reference table, the inverse, and bad input."""

import itertools
import math

import numpy as np
import pytest

from reidrisk.mechanisms import GLH, GRR
from reidrisk.pie import bounds as b
from reidrisk.pie.bounds import BoundError

TOL = 1e-10  # exact arithmetic on a few dozen cells: rounding stays far below this


# ---- random small joint distributions --------------------------------------------------------
def random_joint(rng, n, k, kind):
    """p_{U,X} (n, k): uniform or skewed prior; dense, sparse or point-mass data per user."""
    if kind == "uniform-point":
        pu = np.full(n, 1.0 / n)
        px = np.zeros((n, k))
        px[np.arange(n), rng.integers(0, k, n)] = 1.0
    else:
        pu = np.full(n, 1.0 / n) if kind.startswith("uniform") else rng.dirichlet(np.full(n, 0.5))
        conc = 0.2 if kind.endswith("sparse") else 2.0
        px = rng.dirichlet(np.full(k, conc), size=n)
    joint = pu[:, None] * px
    return joint / joint.sum()


KINDS = ("uniform-dense", "uniform-sparse", "uniform-point", "skewed-dense", "skewed-sparse")


def cases(seed, count, n_max=8, k_max=8):
    rng = np.random.default_rng(seed)
    for i in range(count):
        n = int(rng.integers(2, n_max + 1))
        k = int(rng.integers(2, k_max + 1))
        eps = float(np.exp(rng.uniform(np.log(0.05), np.log(8.0))))
        yield rng, n, k, eps, random_joint(rng, n, k, KINDS[i % len(KINDS)])


def all_function_tables(k, g):
    """H = every function [k] -> [g]: an exactly universal family
    (docs/design/pie.md#numerical-checks)."""
    return np.array(list(itertools.product(range(g), repeat=k)), dtype=np.int64)


# ---- Thm 4.2 and Prop. 4.1 on RR -------------------------------------------------------------
def test_rr_bound_never_violated_on_random_cases():
    worst = 0.0
    for _, n, k, eps, joint in cases(1, 600):
        q = GRR(eps, k).channel()
        i_uy = b.user_information(joint, q)
        i_ux = b.data_information(joint)
        assert i_uy <= b.lambda_rr(eps, k) * i_ux + TOL
        assert i_uy <= b.alpha_rr(eps, n, k) + TOL
        assert i_uy <= b.alpha_ldp(eps, n, "tanh") + TOL
        assert i_uy <= b.alpha_ldp(eps, n, "min") + TOL
        if i_ux > 1e-6:
            worst = max(worst, i_uy / (b.lambda_rr(eps, k) * i_ux))
    # the constant lambda_RR is close to tight (docs/design/pie.md#numerical-checks: 0.9993 at the
    # sup); a bound an order of magnitude too loose would leave the largest ratio far below 1
    assert worst > 0.5


def test_ldp_lemma_on_random_channels_at_their_exact_level():
    # any channel is eps-LDP at eps = its largest log-ratio; Prop. 4.1 must hold at that eps
    rng = np.random.default_rng(2)
    for _ in range(400):
        n, k, m = (int(v) for v in rng.integers(2, 7, 3))
        q = rng.dirichlet(np.ones(m), size=k).T + 1e-3  # (|Y|, |X|), bounded ratios
        q /= q.sum(axis=0)
        eps = float(np.max(np.log(q.max(axis=1)) - np.log(q.min(axis=1))))
        joint = random_joint(rng, n, k, KINDS[int(rng.integers(0, len(KINDS)))])
        i_uy = b.user_information(joint, q)
        assert i_uy <= b.alpha_ldp(eps, n, "tanh") + TOL
        assert i_uy <= b.alpha_ldp(eps, n, "min") + TOL
        # and the lemma itself, I(X;Y) <= eps tanh(eps/2) log e, for the data marginal
        px = joint.sum(axis=0)
        assert b.user_information(np.diag(px), q) <= eps * math.tanh(eps / 2) * b.LOG2E + TOL


def test_tanh_form_never_above_min_form():
    eps = np.geomspace(1e-3, 50, 400)
    assert np.all(b.alpha_ldp(eps, 1000, "tanh") <= b.alpha_ldp(eps, 1000, "min") + 1e-15)


# ---- Thm 4.4 on GLH --------------------------------------------------------------------------
def test_glh_bound_never_violated_on_random_cases():
    worst = 0.0
    for rng, n, k, eps, joint in cases(3, 240, n_max=6, k_max=5):
        g = int(rng.integers(2, 4))
        q = GLH(eps, k, g, tables=all_function_tables(k, g)).channel()
        i_uy = b.user_information(joint, q)
        i_ux = b.data_information(joint)
        lam = b.lambda_glh(eps, g)
        assert i_uy <= lam * i_ux + TOL
        assert i_uy <= b.alpha_glh(eps, n, k, g) + TOL
        assert i_uy <= lam * math.log2(g) + TOL  # the extra valid cap (not in the paper)
        if i_ux > 1e-6:
            worst = max(worst, i_uy / (lam * i_ux))
    assert worst > 0.3  # docs/design/pie.md#numerical-checks: largest ratio 0.734


def test_glh_bound_holds_for_one_shared_table():
    # the authors' PSE experiment: m = 1 table known to the adversary
    for rng, n, k, eps, joint in cases(4, 200):
        g = int(rng.integers(2, 6))
        q = GLH.with_random_tables(eps, k, m=1, g=g, rng=rng).channel()
        assert b.user_information(joint, q) <= b.alpha_glh(eps, n, k, g) + TOL


# ---- Thms 4.3 and 4.5: composition ------------------------------------------------------------
@pytest.mark.parametrize("t", [2, 3])
def test_composition_never_violated_with_correlated_data(t):
    rng = np.random.default_rng(5 + t)
    for case in range(60):
        n, k = int(rng.integers(2, 6)), int(rng.integers(2, 4))
        eps = [float(np.exp(rng.uniform(np.log(0.1), np.log(5.0)))) for _ in range(t)]
        # correlated tuples: p_{U, X1..Xt} as a random joint over k^t symbols, sparse half the time
        joint = random_joint(rng, n, k**t, KINDS[case % len(KINDS)])
        q_rr = b.product_channel(*(GRR(e, k).channel() for e in eps))
        i_rr = b.user_information(joint, q_rr)
        assert i_rr <= b.alpha_composed(eps, n, k**1, "rr") + TOL
        assert i_rr <= b.alpha_rr(max(eps), n, k, releases=t) + TOL
        g = 2
        tables = all_function_tables(k, g)
        q_glh = b.product_channel(*(GLH(e, k, g, tables=tables).channel() for e in eps))
        i_glh = b.user_information(joint, q_glh)
        assert i_glh <= b.alpha_composed(eps, n, k, "glh", g=g) + TOL
        assert i_glh <= b.alpha_glh(max(eps), n, k, g, releases=t) + TOL
        assert i_rr <= b.alpha(max(eps), n, k, "ldp", releases=t) + TOL


def test_composition_is_the_sum_of_single_bounds():
    assert b.alpha_composed([1.0, 2.0], 100, 50, "rr") == pytest.approx(
        b.alpha_rr(1.0, 100, 50) + b.alpha_rr(2.0, 100, 50), rel=1e-14)
    assert b.alpha_rr(1.5, 100, 50, releases=3) == pytest.approx(3 * b.alpha_rr(1.5, 100, 50))


# ---- Prop. 3.7 / Cor. 3.9: Bayes error ----------------------------------------------------------
@pytest.mark.slow
def test_bayes_bounds_never_violated_uniform_and_skewed_priors():
    slack = []
    for rng, n, k, eps, joint in cases(6, 250, n_max=10, k_max=10):
        q = GRR(eps, k).channel()
        p_uy = b.output_joint(joint, q)
        beta = b.bayes_error(p_uy)
        i_uy = b.user_information(joint, q)
        max_prior = float(joint.sum(axis=1).max())
        fano = b.bayes_error_bound(i_uy, n, max_prior=max_prior)
        hv = b.bayes_error_bound_hv(i_uy, n, max_prior=max_prior)
        assert fano <= hv + 1e-12  # the implicit form is the tighter one
        assert hv <= beta + 1e-9
        # eq. 9 with alpha (Cor. 3.9, eq. 11)
        assert b.bayes_error_bound(b.alpha_rr(eps, n, k), n, max_prior=max_prior) <= fano + 1e-12
        # the same chain for GLH over one random table (Thm 4.4 with eq. 11)
        g = int(rng.integers(2, 5))
        q_glh = GLH.with_random_tables(eps, k, m=1, g=g, rng=rng).channel()
        beta_glh = b.bayes_error(b.output_joint(joint, q_glh))
        i_glh = b.user_information(joint, q_glh)
        hv_glh = b.bayes_error_bound_hv(i_glh, n, max_prior=max_prior)
        assert b.bayes_error_bound(b.alpha_glh(eps, n, k, g), n, max_prior=max_prior) \
            <= b.bayes_error_bound(i_glh, n, max_prior=max_prior) + 1e-12
        assert hv_glh <= beta_glh + 1e-9
        if np.allclose(joint.sum(axis=1), 1.0 / n):
            assert b.bayes_error_bound(i_uy, n) == pytest.approx(fano)  # eq. 10 = eq. 9 uniform
            slack.append(beta - fano)
    assert min(slack) >= -1e-9 and len(slack) > 50


def test_spec_example_n64_eps3():
    # docs/design/pie.md#numerical-checks: n = |X| = 64, eps = 3, uniform U: (12) with alpha_RR
    # gives 0.604. The exact beta there (0.848) and exact-I bound (0.729) come from a joint it does
    # not state; with point masses (each user one datum) exact beta = 1 - p_RR and the chain
    # bound(alpha) <= bound(I) <= beta must hold
    n = k = 64
    joint = np.eye(n) / n
    q = GRR(3.0, k).channel()
    beta = b.bayes_error(b.output_joint(joint, q))
    assert beta == pytest.approx(1 - GRR(3.0, k).p_support, abs=1e-12)
    by_i = b.bayes_error_bound(b.user_information(joint, q), n)
    by_alpha = b.bayes_error_bound(b.alpha_rr(3.0, n, k), n)
    assert by_alpha == pytest.approx(0.604, abs=5e-4)
    assert by_alpha <= by_i <= beta


@pytest.mark.parametrize("n, a09, a05", [(10**4, 0.329, 5.644), (10**5, 0.661, 7.305),
                                         (10**6, 0.993, 8.966), (1_370_637, 1.0386, 9.1932)])
def test_design_rule_table(n, a09, a05):
    # docs/design/pie.md#bayes-error, "design rule" table
    assert b.information_budget(0.9, n) == pytest.approx(a09, abs=6e-4)
    assert b.information_budget(0.5, n) == pytest.approx(a05, abs=6e-4)


@pytest.mark.parametrize("n, uni, c10, c100", [
    (10**3, 0.6667, 0.5000, None), (10**4, 0.7500, 0.6667, 0.5000),
    (10**5, 0.8000, 0.7500, 0.6667), (10**6, 0.8333, 0.8000, 0.7500),
    (1_370_637, 0.8371, 0.8053, 0.7583)])
def test_pseudonymisation_example(n, uni, c10, c100):
    # docs/design/pie.md#bayes-error, Prop. 3.10 worked example: |X| = 5, Y = X, I <= log 5
    i = math.log2(5)
    assert b.bayes_error_bound(i, n) == pytest.approx(uni, abs=6e-5)
    assert b.bayes_error_bound(i, n, max_prior=10 / n) == pytest.approx(c10, abs=6e-5)
    if c100 is None:
        assert b.bayes_error_bound(i, n, max_prior=100 / n) <= 0  # vacuous
    else:
        assert b.bayes_error_bound(i, n, max_prior=100 / n) == pytest.approx(c100, abs=6e-5)


# ---- Figure 4 ---------------------------------------------------------------------------------
# docs/design/pie.md#reference-values: eps -> (alpha min form, alpha tanh form, lambda_RR,
# alpha_RR)
FIG4_SPEC = {
    0.1: (0.01443, 0.00721, 1.00e-8, 2.04e-7),
    1: (1.4427, 0.6667, 1.64e-7, 3.34e-6),
    5: (7.2135, 7.1169, 1.40e-5, 2.86e-4),
    10: (14.427, 14.426, 2.09e-3, 0.0427),
    15: (20.386, 20.386, 0.2374, 4.840),
    20: (20.386, 20.386, 0.9788, 19.955),
}


def sig3(x):
    return float(f"{x:.3g}")


def test_figure4_table_matches_spec_to_3_significant_digits():
    rows = b.figure4_table()
    assert [r.epsilon for r in rows] == [0.1, 1, 5, 10, 15, 20]
    for r in rows:
        spec = FIG4_SPEC[r.epsilon]
        ours = (r.alpha_ldp_min, r.alpha_ldp_tanh, r.lambda_rr, r.alpha_rr)
        assert [sig3(v) for v in ours] == [sig3(v) for v in spec], r
        assert r.n == 1_370_637 and r.domain == 10_500_393
        assert r.alpha_rr <= r.alpha_ldp_tanh <= r.alpha_ldp_min


def test_vectorized_over_epsilon_arrays():
    eps = np.array([[0.5, 1.0], [2.0, 4.0]])
    out = b.alpha_rr(eps, 100, 20)
    assert out.shape == (2, 2)
    assert out[1, 0] == b.alpha_rr(2.0, 100, 20)
    # hand values (eq. 15-16, bits): e^eps - 1 = 1 and 20 give lambda = 1/21 and 20/40 = 1/2;
    # the cap is min{log2 100, log2 20} = log2 20, and min{log2 8, log2 20} = 3 with n = 8
    np.testing.assert_allclose(b.alpha_rr(np.log([[2.0, 21.0]]), 100, 20),
                               [[math.log2(20) / 21, math.log2(20) / 2]], rtol=1e-12)
    assert b.alpha_rr(math.log(21.0), 8, 20) == pytest.approx(1.5, rel=1e-12)
    assert isinstance(b.alpha_rr(2.0, 100, 20), float)
    assert b.lambda_rr(800.0, 10) == 1.0  # no overflow to nan
    assert np.all(np.diff(b.alpha_glh(np.geomspace(0.1, 30, 50), 100, 50, 8)) > 0)


# ---- the inverse ------------------------------------------------------------------------------
INVERSE = [(0.9, 2000, 1024), (0.9, 1_370_637, 10_500_393), (0.5, 1_370_637, 10_500_393),
           (0.7, 500, 20), (0.95, 10**7, 300)]


@pytest.mark.parametrize("mech", ["rr", "glh", "ldp"])
@pytest.mark.parametrize("target, n, k", INVERSE)
def test_calibrate_round_trip(mech, target, n, k):
    c = b.calibrate(target, n, k, mech, g_max=None if mech == "glh" and k < 10**6 else
                    (4096 if mech == "glh" else None))
    assert math.isfinite(c.epsilon)
    bound = b.bayes_error_bound(b.certified_alpha(c.epsilon, n, k, mech, g=c.g), n)
    assert bound == pytest.approx(target, abs=1e-9)
    assert bound >= target  # the returned budget is on the safe side of the root
    assert c.error_bound == pytest.approx(target, abs=1e-9)
    above = b.bayes_error_bound(b.certified_alpha(c.epsilon * (1 + 1e-6), n, k, mech, g=c.g), n)
    assert above < target
    # the mechanism's own theorem alone, without Prop. 4.1
    if mech != "ldp":
        own = b.calibrate(target, n, k, mech, g=c.g, use_ldp_bound=False)
        assert own.epsilon <= c.epsilon
        at = b.bayes_error_bound(b.alpha(own.epsilon, n, k, mech, g=c.g), n)
        assert target <= at <= target + 1e-9
        assert b.bayes_error_bound(b.alpha(own.epsilon * (1 + 1e-6), n, k, mech, g=c.g), n) < target


def test_calibrate_rr_matches_closed_form_and_spec():
    # lambda* = budget / min(log n, log |X|), eps = ln(1 + lambda* |X| / (1 - lambda*))
    n, k = 1_370_637, 10_500_393
    c = b.calibrate(0.9, n, k, "rr")
    lam = b.information_budget(0.9, n) / math.log2(n)
    assert c.mi_loss == pytest.approx(lam, rel=1e-9)
    # docs/design/pie.md#bounds-for-ldp-mechanisms, "max lambda"
    assert lam == pytest.approx(0.05095, abs=5e-6)
    assert c.epsilon == pytest.approx(math.log1p(lam * k / (1 - lam)), rel=1e-9)
    # docs/design/pie.md#bounds-for-ldp-mechanisms: lambda = 0.05 (just under the max) needs eps =
    # 13.22 and guarantees 0.9009
    assert math.log1p(0.05 * k / 0.95) == pytest.approx(13.22, abs=5e-3)
    assert b.bayes_error_bound(0.05 * math.log2(n), n) == pytest.approx(0.9009, abs=5e-5)


def test_calibrate_glh_best_g_and_fixed_g():
    c = b.calibrate(0.9, 2000, 1024, "glh")
    assert c.g == 1024 and c.certified_by == "glh"
    # under Thm 4.4 alone the loss falls with g at a fixed lambda (Thm 4.8): the largest g wins
    assert b.calibrate(0.9, 2000, 1024, "glh", g_max=64, use_ldp_bound=False).g == 64
    fixed = b.calibrate(0.9, 2000, 1024, "glh", g=16, use_ldp_bound=False)
    lam = fixed.mi_loss
    assert fixed.epsilon == pytest.approx(math.log1p(lam * 16 / (1 - lam)), rel=1e-9)
    assert fixed.epsilon < c.epsilon
    # for a small g, Prop. 4.1 certifies a larger budget than Thm 4.4 does
    both = b.calibrate(0.9, 2000, 1024, "glh", g=16)
    assert both.certified_by == "ldp"
    assert both.epsilon == pytest.approx(b.calibrate(0.9, 2000, 1024, "ldp").epsilon)
    # a small domain: the best GLH is binary hashing certified by Prop. 4.1
    small = b.calibrate(0.9, 2000, 64, "glh")
    assert (small.g, small.certified_by) == (2, "ldp")


def test_calibrate_releases_splits_the_allowance():
    one = b.calibrate(0.9, 2000, 1024, "rr")
    three = b.calibrate(0.9, 2000, 1024, "rr", releases=3, use_ldp_bound=False)
    assert three.epsilon < one.epsilon
    assert three.mi_loss == pytest.approx(one.mi_loss / 3, rel=1e-9)


def test_calibrate_infeasible_names_n_and_the_need():
    with pytest.raises(BoundError, match=r"n=1000 users.*1024"):
        b.calibrate(0.9, 1000, 50, "rr")


def test_calibrate_non_uniform_prior_is_stricter():
    uni = b.calibrate(0.8, 10**5, 1000, "rr")
    skew = b.calibrate(0.8, 10**5, 1000, "rr", max_prior=10 / 10**5)
    assert skew.epsilon < uni.epsilon
    assert b.bayes_error_bound(skew.alpha, 10**5, max_prior=1e-4) == pytest.approx(0.8, abs=1e-9)


# ---- bad input --------------------------------------------------------------------------------
@pytest.mark.parametrize("call, match", [
    (lambda: b.alpha_rr(0.0, 10, 10), r"epsilon.*0\.0"),
    (lambda: b.alpha_rr(-1.0, 10, 10), r"epsilon.*-1\.0"),
    (lambda: b.alpha_rr([1.0, float("nan")], 10, 10), r"epsilon.*nan"),
    (lambda: b.alpha_rr(1.0, 1, 10), r"number of users n.*1"),
    (lambda: b.alpha_rr(1.0, 10, 1), r"domain size \|X\|.*1"),
    (lambda: b.alpha_glh(1.0, 10, 10, 1), r"hash range g.*1"),
    (lambda: b.alpha_ldp(1.0, 10, "max"), r"form.*'max'"),
    (lambda: b.alpha(1.0, 10, 10, "glh"), r"hash range g"),
    (lambda: b.alpha(1.0, 10, 10, "oue"), r"mechanism.*'oue'"),
    (lambda: b.bayes_error_bound(-0.5, 10), r"information.*-0\.5"),
    (lambda: b.bayes_error_bound(1.0, 10, max_prior=1.5), r"max_prior.*1\.5"),
    (lambda: b.bayes_error_bound(1.0, 10, max_prior=0.01), r"max_prior.*1/n"),
    (lambda: b.calibrate(1.2, 100, 10), r"target_error.*1\.2"),
    (lambda: b.calibrate(-0.1, 100, 10), r"target_error.*-0\.1"),
    (lambda: b.output_joint([[0.5, 1.5]], np.eye(2)), r"p_ux.*1\.5"),
    (lambda: b.output_joint([[0.5, -0.5]], np.eye(2)), r"p_ux.*-0\.5"),
    (lambda: b.output_joint([[0.5, 0.5]], [[1.2, 0.0], [-0.2, 1.0]]), r"channel.*1\.2"),
    (lambda: b.output_joint([[0.5, 0.5]], [[0.5, 0.0], [0.4, 1.0]]), r"channel column 0"),
    (lambda: b.output_joint([[0.2, 0.2]], np.eye(2)), r"sum to 1"),
])
def test_bad_input_names_parameter_and_value(call, match):
    with pytest.raises(BoundError, match=match):
        call()


def test_huge_budgets_give_no_overflow(recwarn):
    """epsilon far beyond e^709: a bound or a one-line refusal, never an overflow (issue 26)."""
    import warnings

    from reidrisk.mechanisms.glh import optimal_g
    from reidrisk.mechanisms.randomness import MechanismError

    warnings.simplefilter("error")
    assert float(b.alpha_ldp(1e300, 1000)) == pytest.approx(math.log2(1000))
    assert float(b.alpha_ldp(0.5, 1000)) == pytest.approx(0.25 / math.log(2))
    with pytest.raises(MechanismError, match="beyond 2"):
        optimal_g(1e6)
