"""reidrisk.copula.model: the GaussianCopula (paper 004 eq. 15-24, Algorithm 2;
docs/design/core.md#gaussian-copula)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from reidrisk.copula import (
    CopulaError,
    GaussianCopula,
    bivariate_table,
)

from .copula_checks import _exact_setup, _pooled_chisquare


@pytest.fixture(scope="module")
def model():
    margs, _, tables = _exact_setup(np.random.default_rng(77), [2, 3, 4, 2, 5, 3])
    return GaussianCopula().fit(margs, tables)


@pytest.fixture(scope="module")
def big_sample(model):
    return model.sample(200_000, rng=1)


def test_fit_sets_attributes(model):
    assert len(model.marginals_) == 6 and model.correlation_.shape == (6, 6)
    assert [t.size for t in model.thresholds_] == [3, 4, 5, 3, 6, 4]
    assert model.fit_result_ is not None and not model.fit_result_.projected
    # the fixture fitted exact tables of a known copula: the fit recovers it
    margs, corr, tables = _exact_setup(np.random.default_rng(77), [2, 3, 4, 2, 5, 3])
    for fitted, p in zip(model.marginals_, margs):
        np.testing.assert_allclose(fitted, p, rtol=1e-12)
    np.testing.assert_allclose(model.correlation_, corr, atol=1e-6)
    # thresholds: Phi^-1 of the cumulative marginal, computed here with scipy's norm.ppf
    for t, p in zip(model.thresholds_, margs):
        assert t[0] == -np.inf and t[-1] == np.inf
        np.testing.assert_allclose(t[1:-1], stats.norm.ppf(np.cumsum(p)[:-1]), rtol=1e-9)
    # and gives back the pair tables it was fitted on
    for (a, b), table in tables.items():
        np.testing.assert_allclose(model.contingency_table([a, b]), table, atol=1e-6)


def test_sample_shape_and_marginals(model, big_sample):
    assert big_sample.shape == (200_000, 6) and big_sample.dtype == np.int32
    for j, p in enumerate(model.marginals_):
        counts = np.bincount(big_sample[:, j], minlength=p.size)
        assert _pooled_chisquare(counts, p) > 1e-3
    sub = model.sample(10, rng=0, cols=[4, 1])
    assert sub.shape == (10, 2)


@pytest.mark.parametrize("cols", [(0, 1), (2, 4), (1, 5), (0, 2, 4), (1, 3, 5), (2, 4, 5)])
def test_sampling_matches_exact_tables(model, big_sample, cols):
    exact = model.contingency_table(list(cols), rtol=1e-5)
    assert exact.sum() == pytest.approx(1.0, abs=1e-12)
    keys = np.ravel_multi_index(big_sample[:, list(cols)].T, exact.shape)
    observed = np.bincount(keys, minlength=exact.size)
    assert _pooled_chisquare(observed, exact) > 1e-3


def test_sampled_contingency_table(model):
    table = model.contingency_table([0, 2], n_samples=50_000, rng=3)
    exact = model.contingency_table([0, 2])
    assert table.shape == exact.shape and table.sum() == pytest.approx(1.0)
    assert _pooled_chisquare(np.round(table * 50_000), exact) > 1e-3


def test_two_way_table_equals_bivariate_table(model):
    a, b = 1, 4
    np.testing.assert_allclose(
        model.contingency_table([a, b]),
        bivariate_table(model.correlation_[a, b], model.marginals_[a], model.marginals_[b]),
        atol=1e-15,
    )


def test_cell_probability_closed_forms_and_missing(model):
    cells1 = np.array([[0], [2], [1]])
    np.testing.assert_allclose(model.cell_probability(cells1, [2]), model.marginals_[2][[0, 2, 1]])
    table = model.contingency_table([0, 4])
    cells2 = np.array([[0, 3], [1, 0], [1, 4]])
    np.testing.assert_allclose(
        model.cell_probability(cells2, [0, 4]), table[cells2[:, 0], cells2[:, 1]], atol=1e-15
    )
    # A MISSING code leaves that attribute free: P(v0, *, v4) = P(v0, v4).
    three = model.cell_probability(np.array([[0, -1, 3], [1, -1, 0]]), [0, 2, 4])
    np.testing.assert_allclose(three, table[[0, 1], [3, 0]], rtol=1e-3)
    with pytest.raises(CopulaError, match="attribute 2 with 4 categories"):
        model.cell_probability(np.array([[0, 4]]), [0, 2])
    with pytest.raises(CopulaError, match=r"shape \(m, 2\)"):
        model.cell_probability(np.array([[0, 1, 1]]), [0, 2])


def test_monte_carlo_cell_probability_within_4_se(model):
    cols = [0, 2, 4, 5]
    cells = model.sample(12, rng=99, cols=cols)
    exact = model.cell_probability(cells, cols, rtol=1e-5)
    for qmc in (False, True):
        mc = model.cell_probability_mc(cells, cols, n_samples=100_000, rng=7, qmc=qmc)
        assert mc.prob.shape == (12,)
        assert np.all(np.abs(mc.prob - exact) <= 4 * mc.se + 1e-12)
    with pytest.raises(CopulaError, match="MISSING"):
        model.cell_probability_mc(np.array([[0, -1, 0, 0]]), cols)


def test_round_trip_json(model):
    payload = json.loads(json.dumps(model.to_dict()))
    back = GaussianCopula.from_dict(payload)
    np.testing.assert_array_equal(back.correlation_, model.correlation_)
    for p, q in zip(back.marginals_, model.marginals_):
        np.testing.assert_array_equal(p, q)
    np.testing.assert_array_equal(back.sample(1000, rng=5), model.sample(1000, rng=5))
    assert back.copula_fit == model.copula_fit
    with pytest.raises(CopulaError, match="version"):
        GaussianCopula.from_dict({**payload, "version": 99})
    with pytest.raises(CopulaError, match="format"):
        GaussianCopula.from_dict({"format": "something else"})


def test_model_validation():
    with pytest.raises(CopulaError, match="not fitted"):
        GaussianCopula().sample(3)
    with pytest.raises(CopulaError, match="copula_fit"):
        GaussianCopula(copula_fit="spearman")
    with pytest.raises(CopulaError, match="positive-definite"):
        GaussianCopula.from_parameters([[0.5, 0.5]] * 2, [[1.0, 1.2], [1.2, 1.0]])

