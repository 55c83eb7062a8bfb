"""Individual risk against its closed forms and its defining series; attacker models; uniques."""

from __future__ import annotations

import math

import numpy as np
import pytest

from reidrisk.assess.classes import AssessError, sample_frequencies
from reidrisk.assess.risk import (
    attacker_risks,
    frequencies_of,
    individual_risk,
    model_scores,
    population_uniques,
)
from reidrisk.schema import Attribute, Schema


def series_risk(f: int, p: float, terms: int = 200_000) -> float:
    """E[1/F] by summing the negative binomial series directly (Franconi & Polettini eq. 3)."""
    h = np.arange(f, f + terms, dtype=np.float64)
    log_pmf = (np.array([math.lgamma(x) for x in h]) - math.lgamma(f) -
               np.array([math.lgamma(x - f + 1) for x in h]) + f * math.log(p) +
               (h - f) * math.log1p(-p))
    return float(np.sum(np.exp(log_pmf) / h))


@pytest.mark.parametrize("p", [0.05, 0.3, 0.8])
def test_closed_forms_of_the_first_three_frequencies(p):
    q = 1 - p
    f1 = p / q * math.log(1 / p)
    f2 = p / q**2 * (q + p * math.log(p))
    f3 = p / (2 * q**3) * (q * (3 * q - 2) - 2 * p**2 * math.log(p))
    got = individual_risk(np.array([1, 2, 3]), np.array([1, 2, 3]) / p)
    np.testing.assert_allclose(got, [f1, f2, f3], rtol=1e-10)


@pytest.mark.parametrize("f,p", [(1, 0.5), (4, 0.2), (10, 0.6), (25, 0.1), (49, 0.07),
                                 (50, 0.07), (120, 0.01), (400, 0.5), (3000, 0.9)])
def test_risk_equals_the_defining_series(f, p):
    got = individual_risk(np.array([f]), np.array([f / p]))[0]
    assert got == pytest.approx(series_risk(f, p), rel=1e-8)


def test_a_census_gives_one_over_fk():
    fk = np.array([1, 2, 5])
    np.testing.assert_allclose(individual_risk(fk, fk.astype(float)), 1 / fk)


def test_bad_frequencies_are_refused():
    with pytest.raises(AssessError, match="fk must be >= 1"):
        individual_risk(np.array([0]), np.array([1.0]))
    with pytest.raises(AssessError, match="same shape"):
        individual_risk(np.array([1, 2]), np.array([1.0]))


def test_attacker_models():
    fk = np.array([1, 1, 2, 2, 4, 4, 4, 4])
    risk = np.array([0.9, 0.9, 0.4, 0.4, 0.1, 0.1, 0.1, 0.1])
    out = attacker_risks(fk, risk, 0.3)
    assert out["prosecutor"].highest == 1.0
    assert out["prosecutor"].average == pytest.approx((2 * 1 + 2 * 0.5 + 4 * 0.25) / 8)
    assert out["prosecutor"].records_at_risk == pytest.approx(4 / 8)  # 1/4 is below 0.3
    assert out["journalist"].records_at_risk == pytest.approx(4 / 8)
    assert out["journalist"].average == pytest.approx(risk.mean())
    assert out["marketer"].highest == pytest.approx(risk.mean())
    with pytest.raises(AssessError, match="threshold"):
        attacker_risks(fk, risk, 0.0)


def test_frequencies_of_a_partition():
    codes = np.array([[0], [0], [1], [2], [2], [2]])
    freq = frequencies_of(sample_frequencies(codes)[0])
    assert freq.n == 6 and freq.n1 == 1 and freq.count(2) == 1 and freq.count(3) == 1


def small_population(seed=0, N=4000):
    rng = np.random.default_rng(seed)
    sizes = (3, 4, 5, 6)
    codes = np.column_stack([rng.zipf(1.6, N) % s for s in sizes]).astype(np.int32)
    schema = Schema(tuple(Attribute(f"a{j}", tuple(str(i) for i in range(s)))
                          for j, s in enumerate(sizes)))
    return codes, schema


def test_population_uniques_are_consistent_with_the_sample():
    codes, schema = small_population()
    sample = codes[np.random.default_rng(1).choice(codes.shape[0], 800, replace=False)]
    fk, _ = sample_frequencies(sample)
    out = population_uniques(sample, fk, schema, 4000)
    assert set(out) == {"pitman", "zayatz", "snb", "dankar", "reidrisk"}
    for fig in out.values():
        assert fig.record_p_unique.shape == (800,)
        # a record another record matches cannot be unique in the population
        assert np.all(fig.record_p_unique[fk >= 2] == 0)
        assert 0 <= fig.in_table <= (fk == 1).sum()
    model = out["reidrisk"]
    assert model.in_population == pytest.approx(model.in_table * 4000 / 800)
    assert np.all(model.record_expected >= fk)


def test_model_on_a_census_is_the_table_itself():
    codes, schema = small_population(N=500)
    p, expected = model_scores(codes, schema, 500)
    fk, _ = sample_frequencies(codes)
    np.testing.assert_array_equal(p, (fk == 1).astype(float))
    np.testing.assert_array_equal(expected, fk)


def test_population_smaller_than_the_table_is_refused():
    codes, schema = small_population(N=50)
    with pytest.raises(AssessError, match="smaller than the table"):
        population_uniques(codes, sample_frequencies(codes)[0], schema, 10)
