"""Client protocols: attribute sampling, its budget accounting, and the choice of k."""

import math

import numpy as np
import pytest

from reidrisk.collect.protocol import (
    Protocol,
    ProtocolError,
    SamplingChoice,
    choose_attributes_per_person,
    choose_k,
    expected_marginal_errors,
    expected_pair_errors,
    pair_coverage,
    variance_factor,
)
from reidrisk.estimation import invert
from reidrisk.mechanisms import GRR, OUE, MechanismError, ORappor, Subset
from reidrisk.schema import MISSING, Attribute, Schema


def make_schema(sizes):
    return Schema(tuple(Attribute(f"a{j}", tuple(str(v) for v in range(f))) for j, f in enumerate(sizes)))


def test_select_reports_k_present_attributes_per_person():
    rng = np.random.default_rng(0)
    present = rng.random((5000, 8)) < 0.6
    chosen = Protocol(2.0, attributes_per_person=3).select(present, rng=1)
    assert not (chosen & ~present).any()
    np.testing.assert_array_equal(chosen.sum(axis=1), np.minimum(present.sum(axis=1), 3))
    chosen_all = Protocol(2.0, attributes_per_person=3, among="all").select(present, rng=1)
    assert not (chosen_all & ~present).any()
    assert chosen_all.sum(axis=1).max() <= 3


def test_select_is_uniform_over_attributes():
    # complete rows: each attribute is chosen with probability k / g, independently across people;
    # the count of n Bernoulli(k/g) is within 4 standard deviations of its mean
    n, g, k = 20000, 6, 2
    chosen = Protocol(1.0, attributes_per_person=k).select(np.ones((n, g), bool), rng=2)
    p = k / g
    sd = math.sqrt(n * p * (1 - p))
    assert np.all(np.abs(chosen.sum(axis=0) - n * p) < 4 * sd)


def test_randomize_spends_epsilon_over_k_per_reported_attribute():
    schema = make_schema([3, 4, 5, 2])
    codes = np.random.default_rng(3).integers(0, 2, size=(200, 4)).astype(np.int32)
    codes[::7, 1] = MISSING
    proto = Protocol(3.0, attributes_per_person=2)
    rr = proto.randomize(schema, codes, rng=4)
    assert all(math.isclose(m.epsilon, 1.5) for m in rr.mechanisms)
    assert rr.present().sum(axis=1).max() == 2
    assert not (rr.present() & (codes == MISSING)).any()
    proto.check_reports(rr)
    with pytest.raises(ProtocolError, match="more than the protocol's k = 1"):
        # same budget per attribute, but 2 > 1 reported
        Protocol(1.5, attributes_per_person=1).check_reports(rr)


def test_paper_split_is_k_equal_g():
    proto = Protocol(5.0)
    assert proto.attributes_for(15) == 15 and proto.is_paper_split(15)
    assert math.isclose(proto.epsilon_per_attribute(15), 5.0 / 15)
    assert Protocol.from_dict(Protocol(2.0, 3, "grr", "all").to_dict()) == Protocol(2.0, 3, "grr", "all")


@pytest.mark.parametrize("bad, error, match", [
    (dict(epsilon=0.0), MechanismError, r"epsilon must be finite and > 0, got 0\.0"),
    (dict(epsilon=1.0, attributes_per_person=0), ProtocolError,
     r"attributes_per_person must be an integer >= 1 \(or None for all\), got 0"),
    (dict(epsilon=1.0, attributes_per_person=2.5), ProtocolError,
     r"must be an integer >= 1 \(or None for all\), got 2\.5"),
    (dict(epsilon=1.0, among="x"), ProtocolError,
     r"among must be one of \('present', 'all'\), got 'x'"),
])
def test_protocol_rejects_bad_parameters(bad, error, match):
    with pytest.raises(error, match=match) as info:
        Protocol(**bad)
    assert type(info.value) is error


def test_pair_coverage_closed_forms():
    n, g, m = 1000, 10, 0.4
    for k in (2, 5, 10):
        c_all = pair_coverage(k, g, among="all", n=n, missing_rate=m)
        assert math.isclose(c_all[0, 1], n * (1 - m) ** 2 * k * (k - 1) / (g * (g - 1)))
        # nobody missing: "present" and "all" sample the same k of g
        c0 = pair_coverage(k, g, among="present", n=n, missing_rate=0.0)
        assert math.isclose(c0[0, 1], n * k * (k - 1) / (g * (g - 1)))
    # k = g: every present pair is reported
    assert math.isclose(pair_coverage(g, g, n=n, missing_rate=m)[2, 3], n * (1 - m) ** 2)


def test_pair_coverage_from_presence_matches_realized_counts():
    # the realized count of people reporting a pair is a sum of independent Bernoulli(c_i); its mean
    # is pair_coverage and its variance sum c_i (1 - c_i) <= mean: 4 standard deviations
    rng = np.random.default_rng(5)
    present = rng.random((20000, 7)) < 0.7
    k = 3
    expected = pair_coverage(k, 7, presence=present)
    chosen = Protocol(1.0, attributes_per_person=k).select(present, rng=6).astype(float)
    realized = chosen.T @ chosen
    iu = np.triu_indices(7, 1)
    assert np.all(np.abs(realized[iu] - expected[iu]) < 4 * np.sqrt(expected[iu]))
    tol = 4 * np.sqrt(np.diag(expected)).max()
    np.testing.assert_allclose(np.diag(realized), np.diag(expected), atol=tol)


def test_variance_factor_matches_simulated_pair_error():
    # (*) of reidrisk.collect.protocol: E||T_inv - T||^2 = ((1+S1)(1+S2) - sum T^2) / n, exact.
    # Mean of R independent squared errors: within 4 standard errors of the sample mean.
    rng = np.random.default_rng(7)
    T = np.array([[0.3, 0.1, 0.05], [0.05, 0.2, 0.3]])
    n, R = 400, 300
    m1, m2 = Subset(1.0, 2), Subset(0.8, 3)
    cells = rng.choice(T.size, size=(R, n), p=T.ravel())
    x1, x2 = np.unravel_index(cells, T.shape)
    M1, M2 = m1.support_matrix(), m2.support_matrix()
    inv1, inv2 = np.linalg.inv(M1), np.linalg.inv(M2)
    errs = []
    for r in range(R):
        B1 = m1.support(m1.perturb(x1[r], rng)).toarray()
        B2 = m2.support(m2.perturb(x2[r], rng)).toarray()
        W = B1.T @ B2 / n
        errs.append(np.sum((inv1 @ W @ inv2.T - T) ** 2))
    errs = np.asarray(errs)
    S1, S2 = variance_factor(m1), variance_factor(m2)
    expected = ((1 + S1) * (1 + S2) - np.sum(T ** 2)) / n
    assert abs(errs.mean() - expected) < 4 * errs.std(ddof=1) / math.sqrt(R)


@pytest.mark.parametrize("m", [GRR(1.0, 4), GRR(3.0, 7), Subset(1.0, 6), Subset(2.5, 5),
                               OUE(0.8, 4), ORappor(1.5, 5)], ids=repr)
def test_variance_factor_by_enumerating_every_report(m):
    # S is n times the summed cell variance of the inversion of a point mass: for one person with
    # true value x it is E ||theta_hat - e_x||^2 = sum_y P(y | x) ||invert(support(y)) - e_x||^2,
    # computed here exactly over every possible report y (the mechanism's own enumeration and
    # exact channel, independent of the closed form), for every x (S must not depend on x)
    outputs = m.enumerate_outputs()
    Q = m.channel()  # (n_outputs, k): P(y | x)
    assert np.allclose(Q.sum(axis=0), 1.0)
    s = m.support(outputs)
    s = np.asarray(s.toarray() if hasattr(s, "toarray") else s, dtype=np.float64)
    theta_hat = invert(s, 1, m.p_support, m.q_support)  # (n_outputs, k): one report each
    sq = ((theta_hat[:, None, :] - np.eye(m.k)[None, :, :]) ** 2).sum(axis=2)  # (y, x)
    exact = (Q * sq).sum(axis=0)
    np.testing.assert_allclose(exact, variance_factor(m), rtol=1e-12)


def test_choose_k_prefers_the_paper_split_when_noise_is_negligible():
    # with a huge budget every S_j ~ 0, the error is (1 - sum T^2) / n_jj', and n_jj' grows with k
    choice = choose_attributes_per_person([2, 3, 4, 5], 400.0, n=1000, missing_rate=0.0)
    assert choice.attributes_per_person == 4 and math.isclose(choice.gain, 1.0)
    assert "paper's even split" in choice.summary()


def test_choose_k_samples_when_the_split_drowns_pairs_in_noise():
    sizes = [6, 8, 5, 9, 9, 7, 9, 6, 5, 2, 3, 3, 7, 8, 2]
    choice = choose_attributes_per_person(sizes, 5.0, n=32561, missing_rate=0.5)
    assert 2 <= choice.attributes_per_person < len(sizes)
    assert choice.errors[choice.attributes_per_person - 1] == choice.errors.min()
    assert math.isclose(choice.paper_error, choice.errors[-1])
    np.testing.assert_allclose(choice.errors, choice.pair_errors + choice.marginal_errors)
    errs = expected_pair_errors(sizes, 5.0, [choice.attributes_per_person, len(sizes)], n=32561,
                                missing_rate=0.5)
    assert errs[0] < errs[1]


def test_choose_k_gives_up_pairs_when_no_k_can_estimate_them():
    # 100 attributes with 5 values, 500 people, epsilon = 2: every pair is reported together by
    # at most a handful of people, so the pair term sits at its cap 1 - 1/25 for every k and the
    # whole budget goes to one attribute per person
    sizes = [5] * 100
    choice = choose_attributes_per_person(sizes, 2.0, n=500, missing_rate=0.5)
    np.testing.assert_allclose(choice.pair_errors, 1 - 1 / 25)
    assert choice.attributes_per_person == 1
    assert choice.marginal_errors[0] == choice.marginal_errors.min()
    assert "k = 1" in choice.summary() and "product of the" in choice.summary()


def test_pair_and_marginal_errors_are_capped_at_the_null_distance():
    sizes = [2, 3, 4]
    pe = expected_pair_errors(sizes, 0.01, [1, 2, 3], n=10, missing_rate=0.0)
    cap = np.mean([1 - 1 / 6, 1 - 1 / 8, 1 - 1 / 12])
    np.testing.assert_allclose(pe, cap)
    me = expected_marginal_errors(sizes, 0.01, [1, 2, 3], n=10, missing_rate=0.0)
    np.testing.assert_allclose(me, np.mean([1 / 2, 2 / 3, 3 / 4]))


def test_marginal_error_matches_the_variance_formula():
    # k = g = 2, no missing values: every person reports both attributes with epsilon / 2, so
    # n_j = n and the error is (1 + S - 1/f) / n
    m = Subset(3.0 / 2, 4)
    me = expected_marginal_errors([4, 4], 3.0, [2], n=1000, missing_rate=0.0)
    assert math.isclose(me[0], (1 + variance_factor(m) - 0.25) / 1000, rel_tol=1e-12)


def test_planned_protocol_uses_choose_k():
    schema = Schema([Attribute(f"a{j}", tuple("xyz")) for j in range(6)])
    proto = Protocol.planned(schema, 5.0, n=20_000, missing_rate=0.5)
    assert proto.attributes_per_person == choose_attributes_per_person(
        [3] * 6, 5.0, n=20_000, missing_rate=0.5).attributes_per_person
    assert proto.epsilon == 5.0 and proto.mechanism == "subset"
    with pytest.raises(ProtocolError, match="presence matrix or n"):
        Protocol.planned(schema, 5.0)


# ---- former names (attributes per person was "k"; k now means a domain size everywhere) --------
def test_former_keyword_k_warns_and_builds_the_same_protocol():
    with pytest.warns(DeprecationWarning, match=r"'k' is deprecated; use 'attributes_per_person'"):
        old = Protocol(3.0, k=2, mechanism="grr")
    assert old == Protocol(3.0, attributes_per_person=2, mechanism="grr")
    with pytest.warns(DeprecationWarning, match="'k' is deprecated"):
        assert old.k == 2
    with pytest.warns(DeprecationWarning, match="'k_for' is deprecated; use 'attributes_for'"):
        assert old.k_for(5) == old.attributes_for(5) == 2
    with pytest.raises(TypeError, match="got both 'k'"):
        Protocol(3.0, k=2, attributes_per_person=2)


def test_former_choose_k_warns_and_gives_the_same_choice():
    sizes = [4, 4, 4, 4, 4]
    new = choose_attributes_per_person(sizes, 5.0, n=30_000, missing_rate=0.5)
    with pytest.warns(DeprecationWarning, match="'choose_k' is deprecated"):
        old = choose_k(sizes, 5.0, n=30_000, missing_rate=0.5)
    assert old.attributes_per_person == new.attributes_per_person
    np.testing.assert_array_equal(old.errors, new.errors)
    with pytest.warns(DeprecationWarning, match="'ks' is deprecated; use 'candidates'"):
        np.testing.assert_array_equal(old.ks, new.candidates)
    with pytest.warns(DeprecationWarning, match="'k' is deprecated"):
        assert old.k == new.attributes_per_person
    with pytest.warns(DeprecationWarning, match="'KChoice' is deprecated"):
        from reidrisk.collect import KChoice
    assert KChoice is SamplingChoice


def test_former_keywords_of_the_planning_functions_warn_and_agree():
    new = pair_coverage(2, 4, n=100, missing_rate=0.25)
    with pytest.warns(DeprecationWarning, match="'k' is deprecated"):
        np.testing.assert_array_equal(pair_coverage(k=2, g=4, n=100, missing_rate=0.25), new)
    errs = expected_pair_errors([3, 3, 3], 2.0, [1, 2, 3], n=500)
    with pytest.warns(DeprecationWarning, match="'ks' is deprecated"):
        np.testing.assert_array_equal(expected_pair_errors([3, 3, 3], 2.0, ks=[1, 2, 3], n=500),
                                      errs)


def test_protocol_dicts_of_the_former_key_still_read():
    d = Protocol(2.0, 3, "grr", "all").to_dict()
    assert d["attributes_per_person"] == 3 and "k" not in d
    d["k"] = d.pop("attributes_per_person")
    assert Protocol.from_dict(d) == Protocol(2.0, 3, "grr", "all")
