"""Preparing a table: encoding, bins, suggestions, and every refusal naming the fix."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from reidrisk.assess.classes import MISSING, AssessError
from reidrisk.assess.table import (
    check_columns,
    parse_bins,
    prepare_table,
    split_names,
    suggest_qis,
)


def test_names_are_repeatable_and_comma_lists():
    assert split_names(("age", "sex, zip")) == ["age", "sex", "zip"]
    assert split_names(None) == []


def test_encoding_marks_missing_values(table):
    t = prepare_table(table, ["sex", "zip", "age"], ["diagnosis"], bins={"age": 10})
    assert t.qis == ["sex", "zip", "age"]
    assert (t.codes[:, 0] == MISSING).sum() == (table["sex"] == "?").sum()
    assert (t.codes[:, 1] == MISSING).sum() == (table["zip"] == "").sum()
    assert t.schema["age"].is_numeric and t.schema["age"].categories[0] == "[10, 20)"
    assert t.sensitive[0].name == "diagnosis" and not t.sensitive[0].ordered


def test_numeric_sensitive_values_are_ordered_numerically():
    frame = pd.DataFrame({"a": ["x", "y"] * 6, "s": ["10", "9", "100", "2"] * 3})
    t = prepare_table(frame, ["a"], ["s"])
    assert t.sensitive[0].categories == ("2", "9", "10", "100") and t.sensitive[0].ordered


def test_bins():
    assert parse_bins(["age=10", "income=2.5"]) == {"age": 10.0, "income": 2.5}
    for bad in ("age", "age=0", "age=x", "=3"):
        with pytest.raises(AssessError, match="COLUMN=WIDTH"):
            parse_bins([bad])


@pytest.mark.parametrize("kwargs, message", [
    (dict(qi=[]), "name the quasi-identifiers"),
    (dict(qi=["age"]), "distinct numbers.*--bin age=10"),
    (dict(qi=["record_id"]), "distinct numbers"),
    (dict(qi=["sex"], sa=["sex"]), "both QI and SA"),
    (dict(qi=["sex", "sex"]), "twice"),
    (dict(qi=["nope"]), "no column 'nope'"),
    (dict(qi=["sex"], weight="sex"), "cannot also be a QI"),
    (dict(qi=["zip"], weight="diagnosis"), "not a number"),
    (dict(qi=["sex"], bins={"zip2": 3}), "not among the QIs"),
    (dict(qi=["sex"], bins={"diagnosis": 3}), "not among the QIs"),
])
def test_refusals(table, kwargs, message):
    with pytest.raises(AssessError, match=message):
        prepare_table(table, **{"sa": (), **kwargs}, source="people.csv")


@pytest.mark.parametrize("value, what", [("0", "not positive"), ("-2", "not positive"),
                                         ("", "not a number"), ("nan", "not a number")])
def test_bad_weights_name_the_row(table, value, what):
    table.loc[7, "weight"] = value
    with pytest.raises(AssessError, match=f"people.csv: weight column 'weight', row 8.*{what}"):
        prepare_table(table, ["sex"], weight="weight", source="people.csv")


def test_constant_and_empty_columns_are_refused(table):
    table["country"] = "NL"
    with pytest.raises(AssessError, match="single value"):
        prepare_table(table, ["country"])
    table["blank"] = ""
    with pytest.raises(AssessError, match="holds no value"):
        prepare_table(table, ["blank"])
    with pytest.raises(AssessError, match="no rows"):
        prepare_table(table.iloc[:0], ["sex"])


def test_duplicate_column_names_are_refused():
    with pytest.raises(AssessError, match="'a' appears twice"):
        check_columns(["a", "b", "a"], "t.csv")


def test_suggestion_names_demographic_columns(table):
    names = [name for name, _ in suggest_qis(table)]
    assert names == ["age", "sex", "zip", "marital-status", "income"]
    assert "record_id" not in names and "diagnosis" not in names
    assert "--bin age" in dict(suggest_qis(table))["age"]


def test_weights_are_read(table):
    t = prepare_table(table, ["sex"], weight="weight")
    np.testing.assert_allclose(t.weights, table["weight"].astype(float))
