"""The compared methods: life cycle, valid tables, and the properties each one promises."""

import itertools
import math
import warnings

import numpy as np
import pytest

from reidrisk.collect import CollectWarning, Protocol, _tensor
from reidrisk.collect.baselines import (
    BASELINES,
    DFCopula,
    Indep,
    LaplaceIndex,
    NegativeSurvey,
    NotFittedError,
    ORapporCompleteCase,
    Proposed,
    S2MbCompleteCase,
    TruePairsCopula,
    Uniform,
)
from reidrisk.data.missing import mcar
from reidrisk.data.synthetic import make_population
from reidrisk.data.tables import contingency
from reidrisk.estimation import js_divergence, variance
from reidrisk.mechanisms import Subset
from reidrisk.schema import MISSING

SIZES = [3, 4, 2, 5]


@pytest.fixture(scope="module")
def pop():
    return make_population(3000, SIZES, dependence=0.5, rng=1)


@pytest.fixture(scope="module")
def codes(pop):
    return mcar(pop.codes, 0.3, rng=2)


def _true_table(codes, cols):
    """Empirical table of ``cols`` over the rows where all of them are present."""
    return contingency(codes, SIZES, cols)


# what each method's tables approach when the reports carry no noise: "available" = the
# empirical tables (rows present in the queried columns); "copula" = the same, up to the
# Gaussian-copula approximation; "product" = the product of the empirical marginals;
# "marginals" = the empirical marginals within the noise of a negative survey (pairs unchecked)
TARGETS = {
    "proposed": "copula", "orappor": "available", "s2mb": "available", "mdn": "marginals",
    "pde_ete": "available", "df_copula": "copula", "indep": "product", "uniform": "uniform",
    "true_pairs_copula": "copula",
}


@pytest.mark.parametrize("name", sorted(BASELINES))
def test_every_method_recovers_its_target_from_noiseless_reports(name, pop, codes):
    """Valid tables in the requested axis order, and the truth each method targets.

    eps = 400 over 4 attributes is 100 per attribute: a pure oracle moves a report off its value
    with probability below f e^-100 and the Laplace index noise of PDE/ETE has scale
    (f - 1)/100 <= 0.04, so the reports are the data. A method estimating the distribution of
    its reports is then off only by its stopping and shrinkage rules: 0.005 (about 10 of the
    ~2,100 reports per attribute). The copula methods (and the reference fitted on the true
    pairs) add the copula approximation, small here because the population is drawn through a
    latent Gaussian: they must sit within half the truth's distance from independence (a method
    that lost the dependence sits at that whole distance). MDN's negative survey is noisy at any
    budget (it reports one of the k - 1 other values): its marginals are within 5 standard
    deviations (in L2) of its inversion (estimation.variance), the projection onto the simplex
    being non-expansive; its pair tables (variance ~144 / n per cell) are only checked valid."""
    method = BASELINES[name]()
    data = pop.codes if method.needs_truth else codes
    if method.needs_truth:
        method.fit_truth(pop.schema, pop.codes)
    else:
        rr = method.protocol(400.0).randomize(pop.schema, codes, rng=3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CollectWarning)
            assert method.fit(rr) is method
    for cols in ([0], [1, 3], [0, 2, 3], ["A4", "A1"]):
        t = method.table(cols)
        idx = [pop.schema.index(c) if isinstance(c, str) else c for c in cols]
        assert t.shape == tuple(SIZES[j] for j in idx)
        assert np.all(t >= 0) and math.isclose(t.sum(), 1.0, rel_tol=1e-12)
    # the requested order is the axis order
    np.testing.assert_allclose(method.table(["A4", "A1"]), method.table([0, 3]).T, atol=1e-12)
    target = TARGETS[name]
    for j in range(len(SIZES)):
        t, truth = method.table([j]), _true_table(data, [j])
        if target == "uniform":
            np.testing.assert_allclose(t, 1.0 / SIZES[j], rtol=1e-12)
        elif target == "marginals":
            m = rr.mechanisms[j]
            n = int((data[:, j] != MISSING).sum())
            bound = 5 * np.sqrt(variance(truth, n, m.p_support, m.q_support).sum())
            assert np.linalg.norm(t - truth) <= bound, (j, np.linalg.norm(t - truth), bound)
        else:
            assert np.abs(t - truth).max() <= 0.005, (j, t, truth)
    pair = _true_table(data, [1, 3])
    product = np.outer(_true_table(data, [1]), _true_table(data, [3]))
    dependence = np.abs(pair - product).max()
    assert dependence > 0.03  # the population is far from independence
    err = np.abs(method.table([1, 3]) - pair).max()
    if target == "available":
        assert err <= 0.005, err
    elif target == "product":
        assert np.abs(method.table([1, 3]) - product).max() <= 0.005
    elif target == "copula":
        assert err <= dependence / 2, (err, dependence)
    elif target == "uniform":
        np.testing.assert_allclose(method.table([1, 3]), 1.0 / 20, rtol=1e-12)


def test_methods_share_the_budget_split(pop, codes):
    """Every method's client spends eps / k on each of k sampled attributes, and the same seed
    samples the same attributes for every method: only the randomizer differs."""
    present = codes != MISSING
    patterns = {}
    for name, cls in BASELINES.items():
        method = cls()
        if method.mechanism is None:
            with pytest.raises(NotImplementedError, match="no client of its own"):
                method.protocol(5.0, attributes_per_person=2)
            continue
        proto = method.protocol(5.0, attributes_per_person=2)
        assert proto.epsilon == 5.0 and proto.attributes_per_person == 2
        assert proto.mechanism == method.mechanism
        rr = proto.randomize(pop.schema, codes, rng=7)
        assert [m.name for m in rr.mechanisms] == [method.mechanism] * len(SIZES)
        assert all(math.isclose(m.epsilon, 2.5, rel_tol=1e-15) for m in rr.mechanisms)
        reported = rr.present()
        assert not (reported & ~present).any()
        np.testing.assert_array_equal(reported.sum(axis=1), np.minimum(present.sum(axis=1), 2))
        patterns[name] = reported
    assert len(patterns) == len(BASELINES) - 1  # all but the reference fitted on the truth
    first = next(iter(patterns.values()))
    for name, reported in patterns.items():
        np.testing.assert_array_equal(reported, first, err_msg=name)


def test_table_before_fit_is_an_error():
    with pytest.raises(NotFittedError):
        Uniform().table([0])


def test_uniform_is_uniform(pop, codes):
    u = Uniform().fit(Protocol(1.0).randomize(pop.schema, codes, rng=4))
    t = u.table([1, 3])
    assert t.shape == (4, 5) and np.all(t == t.flat[0]) and math.isclose(t.sum(), 1.0)


def test_indep_is_the_product_of_the_proposed_marginals(pop, codes):
    # Indep uses the plain EM marginals (no shrinkage toward uniform)
    rr = Protocol(4.0).randomize(pop.schema, codes, rng=5)
    ind = Indep().fit(rr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollectWarning)
        prop = Proposed(marginal_shrink=False).fit(rr)
    for j in range(4):
        np.testing.assert_allclose(ind.marginals_[j], prop.model_.marginals[j], atol=1e-15)
    m = ind.marginals_
    expected = np.multiply.outer(np.multiply.outer(m[0], m[2]), m[3])
    np.testing.assert_allclose(ind.table([0, 2, 3]), expected, rtol=1e-12)


def test_complete_case_uses_only_complete_reports(pop, codes):
    rr = Protocol(4.0, mechanism="rappor").randomize(pop.schema, codes, rng=6)
    m = ORapporCompleteCase().fit(rr)
    rows = m.complete_rows([0, 1, 2])
    np.testing.assert_array_equal(rows, (codes[:, :3] != MISSING).all(axis=1))


def test_s2mb_kronecker_em_recovers_the_table_from_expected_counts():
    # no sampling noise: the c-way support counts are their expectation, and EM converges to T
    rng = np.random.default_rng(7)
    T = rng.dirichlet(np.ones(12)).reshape(2, 3, 2)
    mechs = [Subset(3.0, 2), Subset(3.0, 3), Subset(3.0, 2)]
    W = 1000.0 * _tensor.apply(T, [m.support_matrix() for m in mechs])
    fit = _tensor.em(W, 1000.0, [m.support_matrix() for m in mechs], stop=1e-11, max_iter=20_000)
    assert fit.converged
    np.testing.assert_allclose(fit.estimate, T, atol=1e-6)
    assert S2MbCompleteCase().estimator == "em"


def test_negative_survey_is_the_subset_mechanism_with_h_equal_k_minus_1():
    for eps, k in [(0.5, 3), (2.0, 5), (4.0, 2)]:
        neg, sub = NegativeSurvey(eps, k), Subset(eps, k, h=k - 1)
        assert math.isclose(neg.p_support, sub.p_support) and math.isclose(neg.q_support, sub.q_support)
        assert math.isclose(neg.max_log_ratio(), eps)
        Q = neg.channel()
        np.testing.assert_allclose(Q.sum(axis=0), 1.0)
        assert math.isclose(np.log(Q.max(axis=1) / Q.min(axis=1)).max(), eps)


def test_negative_survey_reports_mostly_other_values():
    neg = NegativeSurvey(3.0, 4)
    x = np.zeros(20000, dtype=np.int64)
    y = neg.perturb(x, rng=8)
    r = 1 / (1 + 3 * math.exp(3.0))
    # the count of reports equal to the true value is Binomial(n, r): 4 standard deviations
    assert abs((y == 0).sum() - 20000 * r) < 4 * math.sqrt(20000 * r * (1 - r))
    B = neg.support(y)
    assert np.all(B.sum(axis=1) == 3)


def test_laplace_index_is_epsilon_ldp_and_unbiased():
    m = LaplaceIndex(2.0, 5)
    assert math.isclose(m.max_log_ratio(), 2.0)
    y = np.linspace(-10, 14, 97)
    lp = m.log_prob(y)
    assert np.max(lp.max(axis=1) - lp.min(axis=1)) <= 2.0 + 1e-12
    x = np.full(40000, 3)
    rep = m.perturb(x, rng=9)
    # mean of Laplace(b) noise: sd b sqrt(2) / sqrt(n), 4 standard errors
    assert abs(rep.mean() - 3) < 4 * m.scale * math.sqrt(2) / math.sqrt(x.size)
    assert np.isnan(m.perturb(np.array([MISSING]), rng=1)).all()


def test_true_pairs_copula_is_the_floor_on_a_copula_population():
    # population drawn from a Gaussian copula: the copula on its exact pair tables misses only the
    # sampling noise of the population itself, E[JS] ~ (K - 1) / (8 n ln 2) for K cells; allow 10x
    pop = make_population(20000, SIZES, dependence=0.5, rng=10)
    tp = TruePairsCopula().fit_truth(pop.schema, pop.codes)
    for t in itertools.combinations(range(4), 3):
        truth = contingency(pop.codes, pop.schema.sizes, t)
        bound = 10 * (truth.size - 1) / (8 * 20000 * math.log(2))
        assert js_divergence(truth.ravel(), tp.table(list(t)).ravel()) < bound
    with pytest.raises(NotImplementedError):
        tp.fit(None)


def test_df_copula_ignores_the_noise(pop, codes):
    rr = Protocol(2.0).randomize(pop.schema, codes, rng=11)
    df = DFCopula().fit(rr)
    assert df.model_.report.settings["estimator"] == "raw"
    B = rr.mechanisms[1].support(rr.reports[1])
    w = np.asarray(B.sum(axis=0)).ravel()
    np.testing.assert_allclose(df.model_.marginals[1], w / w.sum(), atol=1e-15)


def test_method_protocol_former_keyword_k_warns_and_agrees():
    with pytest.warns(DeprecationWarning, match="'k' is deprecated; use 'attributes_per_person'"):
        old = Indep().protocol(5.0, k=2)
    assert old == Indep().protocol(5.0, attributes_per_person=2)
