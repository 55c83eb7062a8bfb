"""The assessment end to end on a small table: population size, per-record order, options."""

from __future__ import annotations

import numpy as np
import pytest

from reidrisk.assess.classes import AssessError, sample_frequencies
from reidrisk.assess.risk import individual_risk
from reidrisk.assess.run import assess, resolve_population
from reidrisk.assess.table import prepare_table


@pytest.fixture
def prepared(table):
    return prepare_table(table, ["sex", "zip", "marital-status"], ["diagnosis"],
                         weight="weight", source="people.csv")


def test_population_from_weights_fraction_or_census(table, prepared):
    assert resolve_population(prepared) == (round(table["weight"].astype(float).sum()), False)
    plain = prepare_table(table, ["sex", "zip"])
    assert resolve_population(plain) == (400, True)
    assert resolve_population(plain, fraction=0.1) == (4000, False)
    assert resolve_population(plain, population=1000) == (1000, False)
    with pytest.raises(AssessError, match="smaller than the table"):
        resolve_population(plain, population=399)
    with pytest.raises(AssessError, match="not both"):
        resolve_population(plain, population=1000, fraction=0.5)
    with pytest.raises(AssessError, match=r"\(0, 1\]"):
        resolve_population(plain, fraction=1.5)
    with pytest.raises(AssessError, match="weights sum"):
        resolve_population(prepared, population=100_000)


def test_records_follow_the_input_order(prepared):
    result = assess(prepared, model=False)
    fk, Fk = sample_frequencies(prepared.codes, prepared.weights)
    frame = result.records()
    assert len(frame) == prepared.n
    np.testing.assert_array_equal(frame["fk"], fk)
    np.testing.assert_allclose(frame["Fk"], Fk)
    np.testing.assert_allclose(frame["risk"], individual_risk(fk, Fk))
    assert result.expected_reidentifications == pytest.approx(individual_risk(fk, Fk).sum())
    assert result.k_anonymity == fk.min()


def test_options_are_measured_and_sorted(prepared):
    result = assess(prepared, model=False)
    kinds = {(o.action, o.columns) for o in result.options}
    assert ("drop", ("sex",)) in kinds and ("drop", ("sex", "zip")) in kinds
    assert ("coarsen", ("zip",)) in kinds  # 8 values; sex has 2 and is not coarsened
    values = [o.expected_reidentifications for o in result.options]
    assert values == sorted(values)
    drop_zip = next(o for o in result.options if o.columns == ("zip",) and o.action == "drop")
    fk, Fk = sample_frequencies(prepared.codes[:, [0, 2]], prepared.weights)
    assert drop_zip.expected_reidentifications == pytest.approx(individual_risk(fk, Fk).sum())
    # dropping a QI never lowers a record's class size, so never raises the total risk
    assert all(o.expected_reidentifications <= result.expected_reidentifications + 1e-9
               for o in result.options if o.action == "drop")


def test_drivers_name_qis_only_for_records_at_risk(table):
    prepared = prepare_table(table, ["sex", "zip", "marital-status", "age"], bins={"age": 10})
    result = assess(prepared, model=False, threshold=0.2)
    at_risk = result.risk > 0.2
    assert at_risk.any()
    assert all(d == "" for d, r in zip(result.drivers, at_risk) if not r)
    named = [d for d, r in zip(result.drivers, at_risk) if r and d]
    assert named and all(set(d.split(";")) <= {"sex", "zip", "marital-status", "age"}
                         for d in named)


def test_model_fields(table):
    prepared = prepare_table(table, ["sex", "zip", "marital-status"])
    result = assess(prepared, fraction=0.2, options=False)
    assert result.p_unique is not None and result.expected_count is not None
    assert np.all(result.p_unique[result.fk >= 2] == 0)
    assert set(result.summary()["population_uniques"]) == {
        "pitman", "zayatz", "snb", "dankar", "reidrisk"}


def test_census_says_so(table):
    result = assess(prepare_table(table, ["sex", "zip"]), options=False)
    assert result.census and result.summary()["population_assumed_census"]
    np.testing.assert_allclose(result.risk, 1 / result.fk)


def test_bad_settings_are_refused(prepared):
    with pytest.raises(AssessError, match="threshold"):
        assess(prepared, threshold=1.5)
    with pytest.raises(AssessError, match="missing rule"):
        assess(prepared, missing="drop")


def test_extras_and_progress(prepared):
    stages = []
    result = assess(prepared, model=False, options=False, progress=stages.append,
                    extras={"demo": lambda t, fk, m: {"summary": {"demo_k": int(fk.min())}}})
    assert stages == ["class sizes", "population uniques", "options", "demo"]
    assert result.summary()["demo_k"] == result.k_anonymity
