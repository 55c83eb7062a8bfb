"""Renamed public names: the one helper (reidrisk._compat) and every renamed keyword through it.

Each former keyword gives a DeprecationWarning naming the new one and the same result as the new
name; passing both is a TypeError.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from reidrisk._compat import renamed_attribute, renamed_function, renamed_keywords
from reidrisk.estimation import estimate_marginal, estimate_marginals, estimate_pairs
from reidrisk.estimation.frequency import marginals_from_counts
from reidrisk.mechanisms import GRR
from reidrisk.mechanisms.record import RecordReports
from reidrisk.schema import Attribute, Schema
from reidrisk.uniqueness.estimators import estimate_population_uniques


# ---- the helper ------------------------------------------------------------------------------
@renamed_keywords(old="new")
def _f(a, new=1):
    return a * 10 + new


class _C:
    def __init__(self, new):
        self.new = new

    old = renamed_attribute("new", "old")


def test_renamed_keyword_forwards_with_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new name and positional calls never warn
        assert _f(1, new=2) == _f(1, 2) == 12
    with pytest.warns(DeprecationWarning, match=r"keyword 'old' is deprecated; use 'new'") as rec:
        assert _f(1, old=2) == 12
    assert rec[0].filename == __file__  # the warning points at the caller
    with pytest.raises(TypeError, match="got both 'old' .* and 'new'"):
        _f(1, old=2, new=3)


def test_renamed_attribute_and_function_forward_with_a_warning():
    with pytest.warns(DeprecationWarning, match="attribute 'old' is deprecated; use 'new'"):
        assert _C(5).old == 5
    g = renamed_function(_f, "g")
    assert g.__name__ == "g"
    with pytest.warns(DeprecationWarning, match="function 'g' is deprecated; use '_f'") as rec:
        assert g(1, new=3) == 13
    assert rec[0].filename == __file__


# ---- estimator= (formerly method=) -------------------------------------------------------------
SCHEMA = Schema((Attribute("a", ("x", "y", "z")), Attribute("b", ("u", "v"))))


@pytest.fixture(scope="module")
def reports():
    rng = np.random.default_rng(3)
    codes = np.column_stack([rng.integers(0, 3, 400), rng.integers(0, 2, 400)]).astype(np.int32)
    mechs = (GRR(2.0, 3), GRR(2.0, 2))
    return RecordReports(SCHEMA, mechs, tuple(m.perturb(codes[:, j], rng)
                                              for j, m in enumerate(mechs)))


def _same(a, b):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_estimator_keyword_of_the_frequency_estimators(reports):
    mech, r = reports.mechanisms[0], reports.reports[0]
    new = estimate_marginal(mech, r, estimator="inversion")
    with pytest.warns(DeprecationWarning, match="'method' is deprecated; use 'estimator'"):
        old = estimate_marginal(mech, r, method="inversion")
    _same(old.probs, new.probs)
    assert new.estimator == "inversion"
    with pytest.warns(DeprecationWarning, match="attribute 'method' is deprecated; use 'estimator'"):
        assert new.method == "inversion"
    new_all = estimate_marginals(reports, estimator="norm_sub")
    with pytest.warns(DeprecationWarning, match="'method' is deprecated; use 'estimator'"):
        old_all = estimate_marginals(reports, method="norm_sub")
    for o, n in zip(old_all, new_all):
        _same(o.probs, n.probs)
    w, n = [np.array([5.0, 3.0, 2.0])], [10]
    new_c = marginals_from_counts([mech], w, n, estimator="inversion")
    with pytest.warns(DeprecationWarning, match="'method' is deprecated"):
        old_c = marginals_from_counts([mech], w, n, method="inversion")
    _same(old_c[0].probs, new_c[0].probs)


def test_estimator_keyword_of_the_pair_estimator(reports):
    new = estimate_pairs(reports, estimator="inversion")
    with pytest.warns(DeprecationWarning, match="'method' is deprecated; use 'estimator'"):
        old = estimate_pairs(reports, method="inversion")
    for key in new.tables:
        _same(old.tables[key], new.tables[key])
    with pytest.warns(DeprecationWarning, match="attribute 'method' is deprecated; use 'estimator'"):
        assert new.method == new.estimator == "inversion"


def test_estimator_keyword_of_the_population_uniques_estimators():
    rng = np.random.default_rng(5)
    sample = rng.integers(0, 6, (300, 3))
    new = estimate_population_uniques(sample, 3000, estimator="zayatz")
    with pytest.warns(DeprecationWarning, match="'method' is deprecated; use 'estimator'"):
        old = estimate_population_uniques(sample, 3000, method="zayatz")
    assert old.estimator == new.estimator == "zayatz"
    with pytest.warns(DeprecationWarning, match="attribute 'method' is deprecated; use 'estimator'"):
        assert old.method == "zayatz"
    assert old.population_uniques == new.population_uniques


# ---- preset= and copula_fit= (formerly method= and copula_method=) ----------------------------
def _copula_inputs():
    from reidrisk.copula import bivariate_table

    pa, pb = np.array([0.2, 0.3, 0.5]), np.array([0.6, 0.4])
    return [pa, pb], {(0, 1): bivariate_table(0.4, pa, pb)}


def test_copula_fit_keyword_of_the_copula_functions():
    from reidrisk.copula import GaussianCopula
    from reidrisk.copula.matrix import fit_correlation, fit_correlation_matrix
    from reidrisk.copula.pairs import fit_pair_correlation, fit_pair_correlations

    margs, tables = _copula_inputs()
    table = tables[(0, 1)]
    new = fit_pair_correlation(table, *margs, copula_fit="mi")
    with pytest.warns(DeprecationWarning, match="'method' is deprecated; use 'copula_fit'"):
        old = fit_pair_correlation(table, *margs, method="mi")
    assert (old.rho, old.copula_fit) == (new.rho, "mi")
    with pytest.warns(DeprecationWarning, match="attribute 'method' is deprecated; use 'copula_fit'"):
        assert new.method == "mi"
    new_p = fit_pair_correlations(margs, [[0, 1]], [table], copula_fit="mi")
    with pytest.warns(DeprecationWarning, match="'method' is deprecated"):
        _same(fit_pair_correlations(margs, [[0, 1]], [table], method="mi").rho, new_p.rho)
    with pytest.warns(DeprecationWarning, match="attribute 'method' is deprecated"):
        assert new_p.method == new_p.copula_fit == "mi"
    new_c = fit_correlation(margs, tables, copula_fit="mi").correlation
    with pytest.warns(DeprecationWarning, match="'method' is deprecated"):
        _same(fit_correlation(margs, tables, method="mi").correlation, new_c)
    with pytest.warns(DeprecationWarning, match="'method' is deprecated"):
        _same(fit_correlation_matrix(margs, tables, method="mi"), new_c)
    with pytest.warns(DeprecationWarning, match="'method' is deprecated; use 'copula_fit'"):
        old = GaussianCopula(method="mi").fit(margs, tables)
    _same(old.correlation_, GaussianCopula(copula_fit="mi").fit(margs, tables).correlation_)
    with pytest.warns(DeprecationWarning, match="attribute 'method' is deprecated"):
        assert old.method == old.copula_fit == "mi"


def test_copula_files_with_the_former_params_key_still_read():
    from reidrisk.copula import GaussianCopula

    margs, tables = _copula_inputs()
    model = GaussianCopula(copula_fit="mi").fit(margs, tables)
    d = model.to_dict()
    assert d["params"]["copula_fit"] == "mi" and "method" not in d["params"]
    d["params"]["method"] = d["params"].pop("copula_fit")  # as written before the rename
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # reading an old file is not a deprecated call
        back = GaussianCopula.from_dict(d)
    assert back.copula_fit == "mi"
    _same(back.correlation_, model.correlation_)


def test_copula_fit_keyword_of_the_collect_pipeline_and_true_pairs():
    from reidrisk.collect import CollectPipeline
    from reidrisk.collect.baselines import TruePairsCopula

    with pytest.warns(DeprecationWarning, match="'copula_method' is deprecated; use 'copula_fit'"):
        old = CollectPipeline(copula_method="mi")
    assert old.settings() == CollectPipeline(copula_fit="mi").settings()
    assert old.settings()["copula_fit"] == "mi"
    with pytest.warns(DeprecationWarning, match="attribute 'copula_method' is deprecated"):
        assert old.copula_method == "mi"
    with pytest.warns(DeprecationWarning, match="'method' is deprecated; use 'copula_fit'"):
        assert TruePairsCopula(method="mi").copula_fit == "mi"


def test_preset_and_copula_fit_keywords_of_the_uniqueness_model():
    from reidrisk.uniqueness import UniquenessModel

    new = UniquenessModel(preset="paper", copula_fit="mi")
    with pytest.warns(DeprecationWarning, match="'method' is deprecated; use 'preset'"):
        old = UniquenessModel(method="paper", copula_fit="mi")
    assert old.settings() == new.settings() and new.settings()["preset"] == "paper"
    with pytest.warns(DeprecationWarning, match="'copula_method' is deprecated; use 'copula_fit'"):
        assert UniquenessModel(copula_method="mi").settings() == \
            UniquenessModel(copula_fit="mi").settings()
    with pytest.warns(DeprecationWarning, match="attribute 'method' is deprecated"):
        assert new.method == "paper"


def test_uniqueness_scores_name_their_preset():
    from reidrisk.uniqueness import Database, UniquenessModel

    rng = np.random.default_rng(2)
    schema = Schema(tuple(Attribute(f"a{j}", ("x", "y", "z")) for j in range(3)))
    db = rng.integers(0, 3, (300, 3)).astype(np.int32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        scores = UniquenessModel("paper", rng=0).fit([Database(db, 0.3)], 1000, schema) \
            .score(db[:5])
    assert scores.preset == "paper" and scores.settings["preset"] == "paper"
    with pytest.warns(DeprecationWarning, match="attribute 'method' is deprecated; use 'preset'"):
        assert scores.method == "paper"


def test_projection_keyword_of_nearest_correlation():
    from reidrisk.copula import nearest_correlation

    a = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 1.0, 1.0]])
    new = nearest_correlation(a, projection="higham")
    with pytest.warns(DeprecationWarning, match="'method' is deprecated; use 'projection'"):
        _same(nearest_correlation(a, method="higham"), new)
