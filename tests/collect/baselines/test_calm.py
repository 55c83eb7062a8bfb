"""CALM (reidrisk.collect.baselines.calm): consistency, maximum entropy, unbiased marginals."""

import math

import numpy as np
import pytest
from scipy.stats import norm

from reidrisk.collect.baselines import CALM, CALMReports
from reidrisk.collect.baselines.calm import (
    CALMDesign,
    CALMProtocol,
    choose_design,
    intersection_closure,
    make_consistent,
    max_entropy,
    oracle_name,
    project,
)
from reidrisk.data.synthetic import make_population
from reidrisk.data.tables import contingency
from reidrisk.schema import MISSING, Attribute, Schema

SIZES = [3, 2, 4, 2, 3]


def _random_tables(rng, sets, sizes):
    return [rng.dirichlet(np.ones(int(np.prod([sizes[a] for a in s])))).reshape(
        [sizes[a] for a in s]) for s in sets]


def test_consistency_step_equalizes_every_overlap():
    """After the step every two marginals have the same projection on their common attributes
    (and the same total), for overlaps of one and of two attributes and for disjoint sets; the
    independent random tables start far from that."""
    rng = np.random.default_rng(0)
    sets = [(0, 1, 2), (1, 2, 3), (2, 3, 4), (0, 4), (1, 3), (0, 2, 4)]
    tables = _random_tables(rng, sets, SIZES)
    tables[3] = tables[3] * 1.3  # a total off 1 as an inversion estimate may be
    var = rng.uniform(0.5, 2.0, len(sets))

    def worst(ts):
        gap = 0.0
        for i in range(len(sets)):
            for j in range(i + 1, len(sets)):
                common = tuple(sorted(set(sets[i]) & set(sets[j])))
                a = project(ts[i], sets[i], common) if common else ts[i].sum()
                b = project(ts[j], sets[j], common) if common else ts[j].sum()
                gap = max(gap, float(np.abs(a - b).max()))
        return gap

    assert worst(tables) > 0.05
    out = make_consistent(tables, sets, var)
    assert worst(out) < 1e-12
    assert [t.shape for t in out] == [t.shape for t in tables]
    # a set no other set overlaps keeps only the total's correction
    assert (2,) in intersection_closure(sets) and () in intersection_closure(sets)


def test_consistency_weights_by_inverse_variance():
    """Two marginals of one attribute: the common value is their inverse-variance weighted mean."""
    a, b = np.array([0.2, 0.8]), np.array([0.6, 0.4])
    out = make_consistent([a, b], [(0,), (0,)], [1.0, 3.0])
    np.testing.assert_allclose(out[0], 0.75 * a + 0.25 * b, atol=1e-15)
    np.testing.assert_allclose(out[1], out[0], atol=1e-15)


def test_max_entropy_reproduces_a_product_of_its_marginals():
    """A table that factorizes over its reported marginals (p(a,b,c,d) = p(a,b) p(c|b) p(d),
    a decomposable model: {a,b} and {b,c} share b, d independent) is the maximum-entropy table
    given those marginals, so the reconstruction must return it exactly. The fit is checked
    against a table that does not factorize: its own marginals give a different table."""
    rng = np.random.default_rng(1)
    sizes = [3, 2, 4, 2]
    p_ab = rng.dirichlet(np.ones(6)).reshape(3, 2)
    p_c_given_b = rng.dirichlet(np.ones(4), size=2)  # (b, c)
    p_d = rng.dirichlet(np.ones(2))
    truth = np.einsum("ab,bc,d->abcd", p_ab, p_c_given_b, p_d)
    sets = [(0, 1), (1, 2), (3,)]
    margs = [project(truth, (0, 1, 2, 3), s) for s in sets]
    est = max_entropy(margs, sets, [0, 1, 2, 3], sizes)
    np.testing.assert_allclose(est, truth, atol=1e-10)
    # any axis order of the query
    est_t = max_entropy(margs, sets, [2, 0, 3, 1], [4, 3, 2, 2])
    np.testing.assert_allclose(est_t, truth.transpose(2, 0, 3, 1), atol=1e-10)
    # a query inside one set is that set's marginal
    np.testing.assert_allclose(max_entropy(margs, sets, [1, 0], [2, 3]), p_ab.T, atol=1e-15)
    # a table with a three-way interaction is not reproduced from its pair marginals
    other = rng.dirichlet(np.ones(24)).reshape(3, 2, 4)
    pair_sets = [(0, 1), (1, 2), (0, 2)]
    rec = max_entropy([project(other, (0, 1, 2), s) for s in pair_sets], pair_sets, [0, 1, 2],
                      [3, 2, 4])
    for s in pair_sets:  # the constraints hold ...
        np.testing.assert_allclose(project(rec, (0, 1, 2), s), project(other, (0, 1, 2), s),
                                   atol=1e-9)
    assert np.abs(rec - other).max() > 1e-3  # ... but the table is not the original


@pytest.mark.parametrize("fo", ["olh", "grr"])
def test_marginal_estimates_are_unbiased(fo):
    """The raw marginal estimates average to the population's table over repeated collections.

    Each repetition splits n = 2,000 users into m = 2 groups of 1,000 and randomizes the joint
    values with epsilon = 1. Over R = 200 repetitions the mean of a cell estimate has standard
    deviation sqrt(Var / R), Var = the oracle's variance per cell (estimation.variance, with N =
    1,000 reports) plus the group's sampling variance theta (1 - theta) / N (a group is a random
    half of the population) times (1 - N/n) (drawn without replacement). Every cell must be
    within 4.5 of those standard deviations (two-sided 7e-6 per cell; 36 cells in all)."""
    from reidrisk.estimation import variance

    rng = np.random.default_rng(5)
    sizes = [3, 2, 3, 2]
    schema = Schema(tuple(Attribute(f"A{i}", tuple("abc"[:f])) for i, f in enumerate(sizes)))
    pop = make_population(2000, sizes, dependence=0.6, rng=4).codes
    sets = ((0, 1, 2), (1, 2, 3))
    cells = [int(np.prod([sizes[a] for a in s])) for s in sets]
    design = CALMDesign(3, 2, sets, (fo, fo), float("nan"))
    eps, R = 1.0, 200
    sums = [np.zeros(c) for c in cells]
    for _ in range(R):
        rr = CALMProtocol(eps, design=design).randomize(schema, pop, rng)
        m = CALM().fit(rr)
        for i, t in enumerate(m.raw_marginals_):
            sums[i] += t.ravel()
    for i, s in enumerate(sets):
        truth = contingency(pop, sizes, list(s)).ravel()
        mech = rr.mechanisms[i]
        assert mech.name == fo
        N, n = 1000, 2000
        var = variance(truth, N, mech.p_support, mech.q_support) \
            + truth * (1 - truth) / N * (1 - N / n)
        z = (sums[i] / R - truth) / np.sqrt(var / R)
        assert np.abs(z).max() < 4.5, (s, z)


def test_end_to_end_on_complete_and_missing_data():
    """Fit on a population: valid tables in the requested order, close to the truth with the
    whole budget; missing values leave only complete reports in each group."""
    pop = make_population(20000, SIZES, dependence=0.5, rng=2)
    schema, codes = pop.schema, pop.codes
    m = CALM()
    rr = m.protocol(8.0).randomize(schema, codes, rng=3)
    assert isinstance(rr, CALMReports) and rr.n == codes.shape[0]
    m.fit(rr)
    for cols in ([0], [1, 3], [0, 2, 4], [4, 0, 1]):
        t = m.table(cols)
        assert t.shape == tuple(SIZES[j] for j in cols)
        assert np.all(t >= 0) and math.isclose(t.sum(), 1.0, rel_tol=1e-12)
    # Tolerance of a 1-way marginal, derived. With epsilon = 8 every joint domain here (<= 144
    # cells) is below 3 e^8 + 2, so every oracle is GRR. A cell of attribute j's marginal summed
    # from a pooled set of N reports is (1/N) sum_i (B_i - C q) / (p - q), B_i = 1 when report i
    # lands in one of the C joint cells behind it: a mean of N Bernoulli terms, variance at most
    # 1 / (4 N (p - q)^2) whatever the distribution. The N reporters are a random subset of the n
    # users, adding at most (1 / (4 N)) (1 - N / n) of sampling variance against the population's
    # table. Bonferroni over the 14 cells at a family-wise level of 1e-4 gives z = 4.49 (normal
    # approximation, N >= 10^4 here). The server's Norm-Sub and consistency move the table; a
    # marginal cell moves by at most the L1 distance between the raw and the final joint tables,
    # which is added. The raw projection itself must meet the variance bound alone.
    z = norm.isf(1e-4 / (2 * 14))
    for j in range(len(SIZES)):
        truth = contingency(codes, SIZES, [j])
        i = max((i for i, s in enumerate(m.sets_) if j in s),
                key=lambda i: m.n_complete_[[k for k, s in enumerate(rr.design.sets)
                                             if tuple(s) == m.sets_[i]]].sum())
        members = [k for k, s in enumerate(rr.design.sets) if tuple(s) == m.sets_[i]]
        N = int(m.n_complete_[members].sum())
        mech = rr.mechanisms[members[0]]
        assert mech.name == "grr"
        pq = mech.p_support - mech.q_support
        sd = math.sqrt(1 / (4 * N * pq**2) + (1 / (4 * N)) * (1 - N / rr.n))
        raw = project(m.raw_marginals_[i], m.sets_[i], (j,))
        assert np.abs(raw - truth).max() < z * sd, (j, raw, truth, z * sd)
        moved = float(np.abs(m.marginals_[i] - m.raw_marginals_[i]).sum())
        np.testing.assert_allclose(m.table([j]), truth, rtol=0, atol=z * sd + moved)
        # the check has power: the uniform table (the null model) is farther than the tolerance
        assert np.abs(truth - 1 / SIZES[j]).max() > z * sd + moved, j
    # missing values: a user lacking one of their set's attributes sends a missing report
    miss = codes.copy()
    miss[: len(miss) // 2, 0] = MISSING
    rr2 = CALM().protocol(8.0).randomize(schema, miss, rng=4)
    fitted = CALM().fit(rr2)
    lacking = (miss[:, 0] == MISSING)
    for j, s in enumerate(rr2.design.sets):
        rows = np.flatnonzero(rr2.groups == j)
        sent = ~rr2.mechanisms[j].is_missing(rr2.reports[j])
        complete = (miss[np.ix_(rows, s)] != MISSING).all(axis=1)
        np.testing.assert_array_equal(sent, complete)
        assert fitted.n_complete_[j] == complete.sum()
        if 0 in s:
            assert not sent[lacking[rows]].any()


def test_design_choice_follows_the_error_model():
    """More users or budget never shrink the design; every attribute is in some set; the oracle
    is GRR on small joint domains and OLH on large ones (3 e^eps + 2)."""
    sizes = [2] * 12
    small = choose_design(sizes, 1.0, 500, rng=0)
    large = choose_design(sizes, 1.0, 500_000, rng=0)
    assert small.l >= 2 and large.l >= small.l
    for d in (small, large):
        assert len(d.sets) == d.m and all(len(s) == d.l for s in d.sets)
        assert set().union(*map(set, d.sets)) == set(range(12))
    assert oracle_name(4, 1.0) == "grr" and oracle_name(64, 1.0) == "olh"
    assert oracle_name(4, 1.0, "olh") == "olh"


def test_fit_needs_calm_reports():
    from reidrisk.collect import Protocol
    from reidrisk.schema import SchemaError

    pop = make_population(200, SIZES, rng=1)
    rr = Protocol(2.0).randomize(pop.schema, pop.codes, rng=1)
    with pytest.raises(SchemaError, match="CALMReports"):
        CALM().fit(rr)


def test_groups_of_one_set_with_different_oracles_are_refused():
    """CALM pools the support counts of the groups reporting the same set and inverts them through
    one channel; reports whose groups of one set used different oracles would be inverted through
    the wrong channel for some of them, so they are refused by name instead."""
    import dataclasses

    from reidrisk.mechanisms import make_mechanism

    pop = make_population(4000, SIZES, dependence=0.5, rng=2)
    rr = CALM().protocol(8.0).randomize(pop.schema, pop.codes, rng=3)
    sets = [tuple(s) for s in rr.design.sets]
    i = next(i for i, s in enumerate(sets) if sets.index(s) != i)  # a set's second group
    CALM().fit(rr)  # as randomized: one oracle per set
    mech = rr.mechanisms[i]
    other = make_mechanism(mech.name, 4.0, mech.k)
    mechs = rr.mechanisms[:i] + (other,) + rr.mechanisms[i + 1:]
    with pytest.raises(ValueError, match="different oracles"):
        CALM().fit(dataclasses.replace(rr, mechanisms=mechs))
