"""UniquenessModel end to end on a synthetic population: fitting, scoring, both configurations,
private and non-private databases, counting helpers, and clear errors for bad input."""

from __future__ import annotations

import numpy as np
import pytest

from reidrisk.data.synthetic import make_population
from reidrisk.mechanisms import RecordRandomizer
from reidrisk.schema import MISSING, SchemaError
from reidrisk.uniqueness.baselines import group_sizes
from reidrisk.uniqueness.model import (
    Database,
    UniquenessError,
    UniquenessModel,
    count_matches,
    estimate_population,
    neighbor_counts,
)
from reidrisk.uniqueness.posterior import match_counts, population_count_posterior

N = 4000
SIZES = [3, 4, 5, 3, 2, 6]


@pytest.fixture(scope="module")
def population():
    return make_population(N, SIZES, 0.5, rng=11)


@pytest.fixture(scope="module")
def sample(population):
    rng = np.random.default_rng(5)
    keep = rng.random(N) < 0.25
    return population.codes[keep], rng.choice(N, 150, replace=False)


@pytest.fixture(scope="module")
def fitted(population, sample):
    db, _ = sample
    return UniquenessModel(n_calibration=400).fit([Database(db, 0.25)], N, population.schema)


# ---- scoring --------------------------------------------------------------------------------------
def test_scores_are_coherent(population, sample, fitted):
    _, targets = sample
    rec = population.codes[targets]
    sc = fitted.score(rec, T=[1, 3, 10])
    assert sc.n_records == rec.shape[0]
    assert np.all((sc.p_unique >= 0) & (sc.p_unique <= 1))
    assert np.all(sc.expected >= 1.0)
    # P(X > T) falls with T, and P(X > 1) = 1 - P(X = 1)
    assert np.all(np.diff(sc.p_greater, axis=1) <= 1e-12)
    np.testing.assert_allclose(sc.p_greater[:, 0], 1.0 - sc.p_unique, atol=1e-10)
    # the posterior never puts mass below a database's count
    assert np.all(sc.expected >= sc.counts.max(axis=1) - 1e-9)
    twice = sc.counts[:, 0] >= 2
    assert twice.any() and np.all(sc.p_unique[twice] == 0.0)
    # the counts are the database's exact matches
    np.testing.assert_array_equal(sc.counts[:, 0], match_counts(rec, fitted.databases_[0].data))
    # balanced rule: decisions are P(X > T) above the model's base rates
    np.testing.assert_array_equal(sc.greater, sc.p_greater > sc.base_rates[None, :])
    frame = sc.to_frame()
    assert list(frame.columns[:4]) == ["expected_count", "p_unique", "p_gt_1", "flag_le_1"]
    assert len(frame) == rec.shape[0]


def test_scores_follow_the_truth(population, sample, fitted):
    """Records that are truly shared by more than 3 people get a higher P(X > 3) on average than
    records that are not: a one-sided comparison of means with a 3-sigma margin (Welch)."""
    _, targets = sample
    truth = group_sizes(population.codes)[targets]
    sc = fitted.score(population.codes[targets], T=[3])
    p = sc.p_greater[:, 0]
    hi, lo = p[truth > 3], p[truth <= 3]
    assert hi.size > 10 and lo.size > 10
    se = np.sqrt(hi.var(ddof=1) / hi.size + lo.var(ddof=1) / lo.size)
    assert hi.mean() - lo.mean() > 3 * se


def test_paper_configuration_is_eq_15_19(population, sample):
    db, targets = sample
    rec = population.codes[targets]
    model = UniquenessModel("paper").fit([Database(db, 0.25)], N, population.schema)
    sc = model.score(rec, T=[1, 5])
    q = model.cell_probability(rec)
    ref = population_count_posterior(q, N, [0.25], match_counts(rec, db)[:, None], alpha=0.1,
                                     floor="lambertw")
    np.testing.assert_allclose(sc.expected, ref.expected)
    np.testing.assert_allclose(sc.p_unique, ref.p_unique)
    np.testing.assert_array_equal(sc.greater, sc.expected[:, None] >= np.array([1.5, 5.5])[None, :])
    poisson = UniquenessModel("paper", floor="poisson", alpha=0.5).fit([Database(db, 0.25)], N,
                                                                      population.schema)
    assert poisson.score(rec[:5]).n_records == 5
    auto = UniquenessModel("paper", alpha="auto", n_calibration=300).fit([Database(db, 0.25)], N,
                                                                        population.schema)
    assert 0 < auto.alpha_ <= 1 / np.e


def test_private_database_runs_and_uses_the_channel(population, sample):
    db, targets = sample
    rng = np.random.default_rng(2)
    reports = RecordRandomizer(population.schema, "grr", 6.0).randomize(db, rng)
    model = UniquenessModel(n_calibration=300, simulation_cap=20_000).fit([reports], N)
    assert model.prior_.source == "simulation"
    rec = population.codes[targets]
    sc = model.score(rec, T=[1, 5])
    assert np.all(np.isfinite(sc.expected)) and np.all((sc.p_unique >= 0) & (sc.p_unique <= 1))
    kappa, phi = model._channel(rec)
    p_keep = np.prod([m.p_support for m in reports.mechanisms])
    np.testing.assert_allclose(kappa[:, 0], p_keep)  # complete records, complete reports
    assert np.all(phi >= 0)
    # the counts of randomized reports are equal codes
    np.testing.assert_array_equal(sc.counts[:, 0], match_counts(rec, np.column_stack(reports.reports)))


def test_mixed_and_multiple_databases(population, sample):
    db, targets = sample
    rng = np.random.default_rng(3)
    second = population.codes[rng.random(N) < 0.1]
    reports = RecordRandomizer(population.schema, "grr", 8.0).randomize(second, rng)
    model = UniquenessModel(n_calibration=300).fit([(db, 0.25), (reports, 0.1)], N)
    assert model.reference_ == 0 and model.prior_.source == "databases"
    np.testing.assert_array_equal(model.rates_, [0.25, 0.1])
    np.testing.assert_array_equal(model.sizes_, [db.shape[0], second.shape[0]])
    rec = population.codes[targets]
    sc = model.score(rec, T=[2])
    assert sc.counts.shape == (150, 2)
    # each column counts its own database: exact matches, and equal codes among the reports
    np.testing.assert_array_equal(sc.counts[:, 0], match_counts(rec, db))
    np.testing.assert_array_equal(sc.counts[:, 1],
                                  match_counts(rec, np.column_stack(reports.reports)))
    # the raw database counts every member of the cell; the randomized one keeps a member's
    # complete report equal only with probability prod_j p_j
    kappa, _ = model._channel(rec)
    np.testing.assert_allclose(kappa[:, 0], 1.0)
    np.testing.assert_allclose(kappa[:, 1], np.prod([m.p_support for m in reports.mechanisms]))
    # against the truth: records shared by more than 2 people get a higher P(X > 2) on average
    # than the others (one-sided Welch comparison of means with a 3-sigma margin)
    truth = group_sizes(population.codes)[targets]
    p = sc.p_greater[:, 0]
    hi, lo = p[truth > 2], p[truth <= 2]
    assert hi.size > 5 and lo.size > 5
    se = np.sqrt(hi.var(ddof=1) / hi.size + lo.var(ddof=1) / lo.size)
    assert hi.mean() - lo.mean() > 3 * se, (hi.mean(), lo.mean(), se)
    # two raw databases in the paper's configuration: the posterior of eq. 15-19 given both
    # databases' rates and counts (population_count_posterior, itself checked against exact
    # enumeration in test_posterior.py)
    paper = UniquenessModel("paper").fit([(db, 0.25), (second, 0.1)], N, population.schema)
    sp = paper.score(rec, T=[2])
    counts = np.column_stack([match_counts(rec, db), match_counts(rec, second)])
    np.testing.assert_array_equal(sp.counts, counts)
    ref = population_count_posterior(paper.cell_probability(rec), N, [0.25, 0.1], counts,
                                     alpha=0.1, floor="lambertw")
    np.testing.assert_allclose(sp.expected, ref.expected, rtol=1e-12)
    np.testing.assert_allclose(sp.p_unique, ref.p_unique, rtol=1e-12, atol=1e-300)
    assert np.all(sp.expected >= counts.max(axis=1) - 1e-9)


def test_missing_values_in_queries(population, sample, fitted):
    _, targets = sample
    rec = population.codes[targets[:30]].astype(np.int64)
    rec[::3, 1] = MISSING
    sc = fitted.score(rec)
    full = fitted.cell_probability(population.codes[targets[:30]])
    assert np.all(sc.q[::3] >= full[::3] - 1e-12)  # a missing value widens the cell
    db = fitted.databases_[0].data
    cols = [0, 2, 3, 4, 5]
    np.testing.assert_array_equal(sc.counts[::3, 0], match_counts(rec[::3][:, cols], db[:, cols]))


def test_large_population_costs_the_same_support(population, sample):
    """A database of the same records read as a sample of 30,000 or of 10 million people: the
    posterior support per record (its cost) stays within the exact counts plus a window."""
    db, targets = sample
    rec = population.codes[targets[:60]]
    sizes = {}
    for big_n in (30_000, 10_000_000):
        model = UniquenessModel(n_calibration=300).fit([Database(db)], big_n, population.schema)
        sizes[big_n] = model.score(rec).posterior.support_sizes
    assert sizes[10_000_000].max() <= 2 * max(sizes[30_000].max(), 512)


def test_deterministic(population, sample):
    db, targets = sample
    rec = population.codes[targets[:40]]
    a = UniquenessModel(n_calibration=200, rng=4).fit([Database(db, 0.25)], N, population.schema).score(rec)
    b = UniquenessModel(n_calibration=200, rng=4).fit([Database(db, 0.25)], N, population.schema).score(rec)
    np.testing.assert_array_equal(a.p_unique, b.p_unique)


# ---- counting helpers ---------------------------------------------------------------------------
def test_neighbor_counts_brute_force(population, sample):
    db, targets = sample
    rec = population.codes[targets[:20]]
    got = neighbor_counts(rec.astype(np.int64), db)
    diff = (rec[:, None, :] != db[None, :, :]).sum(axis=2)
    np.testing.assert_array_equal(got, (diff == 1).sum(axis=1))


def test_support_counts_for_set_valued_reports(population, sample):
    db, targets = sample
    rng = np.random.default_rng(8)
    reports = RecordRandomizer(population.schema, "oue", 12.0).randomize(db[:300], rng)
    rec = population.codes[targets[:15]].astype(np.int64)
    got = count_matches(rec, Database(reports))
    supports = [s.toarray() if hasattr(s, "toarray") else np.asarray(s) for s in reports.supports()]
    want = np.array([np.prod([supports[j][:, r[j]] for j in range(len(SIZES))], axis=0).sum() for r in rec])
    np.testing.assert_array_equal(got, want)


def test_pooled_estimates_of_raw_databases(population, sample):
    db, _ = sample
    est = estimate_population([Database(db[:500]), Database(db[500:])], population.schema)
    for j, f in enumerate(SIZES):
        np.testing.assert_allclose(est.marginals[j], np.bincount(db[:, j], minlength=f) / db.shape[0], atol=1e-8)


# ---- errors ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("rate", [0.0, 1.5, -0.1, float("nan")])
def test_rate_outside_unit_interval(population, sample, rate):
    db, _ = sample
    with pytest.raises(UniquenessError, match=r"outside \(0, 1\]"):
        UniquenessModel().fit([Database(db, rate)], N, population.schema)


def test_population_smaller_than_a_database(population, sample, fitted):
    db, targets = sample
    with pytest.raises(UniquenessError, match="cannot exceed its population"):
        UniquenessModel().fit([Database(db, 0.25)], db.shape[0] - 1, population.schema)
    with pytest.raises(UniquenessError, match="smaller than database"):
        fitted.score(population.codes[targets[:3]], N=10)


def test_records_outside_the_schema(population, sample, fitted):
    _, targets = sample
    bad = population.codes[targets[:3]].copy()
    bad[1, 2] = SIZES[2]
    with pytest.raises(SchemaError, match="query records.*outside the domain"):
        fitted.score(bad)
    with pytest.raises(SchemaError, match="shape"):
        fitted.score(bad[:, :3])
    db, _ = sample
    broken = db.copy()
    broken[0, 0] = 9
    with pytest.raises(SchemaError, match="database"):
        UniquenessModel().fit([Database(broken)], N, population.schema)


def test_other_bad_input(population, sample):
    db, _ = sample
    with pytest.raises(UniquenessError, match="schema"):
        UniquenessModel().fit([db], N)
    with pytest.raises(UniquenessError, match="not fitted"):
        UniquenessModel().score(db[:2])
    with pytest.raises(UniquenessError, match="preset"):
        UniquenessModel("magic")
    with pytest.raises(UniquenessError, match="plain counts"):
        UniquenessModel("paper", counts="channel")
    with pytest.raises(UniquenessError, match="population size"):
        UniquenessModel().fit([db], 0, population.schema)
    with pytest.raises(UniquenessError, match="threshold"):
        UniquenessModel(n_calibration=100).fit([db], N, population.schema).score(db[:2], T=[-1])


# ---- the report section ---------------------------------------------------------------------------
def test_report_section(population):
    from reidrisk.report import Section, render_html
    from reidrisk.uniqueness.report import run_uniqueness_demo, uniqueness_section

    demo = run_uniqueness_demo(population.schema, population.codes, rate=0.2, n_records=200, rng=3)
    assert demo.truth.shape == (200,) and demo.scores.n_records == 200
    np.testing.assert_array_equal(demo.truth, match_counts(demo.records, population.codes))
    for c in demo.metrics.values():
        assert 0 <= c.accuracy <= 1 and 0 <= c.balanced_accuracy <= 1
    assert demo.metrics[("majority rule", 1.0)].balanced_accuracy == 0.5
    section = uniqueness_section(demo, top=5)
    assert isinstance(section, Section) and section.figures[0].png.startswith(b"\x89PNG")
    html = render_html([section], "t")
    assert "most at risk" in html and "balanced accuracy" in html


def test_scores_do_not_depend_on_the_batch():
    """Records with different windows scored together give the same answers as one by one
    (padding bins between a record's exact bins and its window once truncated the window)."""
    from reidrisk.data.synthetic import make_population
    from reidrisk.uniqueness import Database, UniquenessModel

    pop = make_population(5000, [2, 3, 4, 5], dependence=0.6, rng=1)
    sample = pop.codes[:500]
    model = UniquenessModel().fit([Database(sample, rate=0.1)], 5000, schema=pop.schema)
    together = model.score(sample[:40]).expected
    alone = np.array([model.score(sample[i:i + 1]).expected[0] for i in range(40)])
    np.testing.assert_allclose(together, alone, rtol=1e-9)
