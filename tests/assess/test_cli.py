"""``reidrisk assess`` as a user runs it: files written, summary printed, refusals in one line."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner

from reidrisk.cli import cli


def run(*args, input=None):
    return CliRunner().invoke(cli, ["assess", *map(str, args)], input=input)


def test_writes_the_three_files(tmp_path, table_csv):
    out = tmp_path / "risk"
    res = run(table_csv, "--qi", "sex,zip", "--qi", "marital-status", "--sa", "diagnosis",
              "--weight", "weight", "-o", out, "--max-msu", 2)
    assert res.exit_code == 0, res.output
    assert "k-anonymity" in res.output and "expected re-ids" in res.output
    records = pd.read_csv(out / "records.csv")
    assert len(records) == 400 and {"fk", "p_unique"} <= set(records.columns)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["quasi_identifiers"] == ["sex", "zip", "marital-status"]
    assert (out / "report.html").read_text().startswith("<!doctype html>")


def test_json_summary(table_csv):
    res = run(table_csv, "--qi", "sex,zip", "--fraction", "0.5", "--json", "--no-model")
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["population"] == 800 and "reidrisk" not in summary["population_uniques"]


@pytest.mark.parametrize("args, message", [
    (["--qi", "age"], "--bin age=10"),
    (["--qi", "sex", "--sa", "sex"], "both QI and SA"),
    (["--qi", "sex", "--population", "10"], "smaller than the table"),
    (["--qi", "sex", "--weight", "diagnosis"], "not a number"),
    (["--qi", "nope"], "no column 'nope'"),
])
def test_refusals_are_one_line_and_write_nothing(tmp_path, table_csv, args, message):
    out = tmp_path / "risk"
    res = run(table_csv, *args, "-o", out)
    assert res.exit_code == 2
    assert message in res.output and "Traceback" not in res.output
    assert not out.exists() or not any(out.iterdir())


def test_duplicate_header_names_are_refused(tmp_path):
    path = tmp_path / "dup.csv"
    path.write_text("a,b,a\n1,2,3\n4,5,6\n")
    res = run(path, "--qi", "a")
    assert res.exit_code == 2 and "'a' appears twice" in res.output


def test_empty_table_is_refused(tmp_path):
    path = tmp_path / "empty.csv"
    path.write_text("sex,zip\n")
    res = run(path, "--qi", "sex")
    assert res.exit_code == 2 and "no rows" in res.output


def test_suggestion_must_be_confirmed(table_csv):
    res = run(table_csv)
    assert res.exit_code == 2
    assert "Suggested quasi-identifiers" in res.output
    assert "rerun with --qi age,sex,zip,marital-status,income" in res.output
    res = run(table_csv, "--yes", "--no-model", "--bin", "age=10")
    assert res.exit_code == 0, res.output
    assert "QIs age, sex, zip, marital-status, income" in res.output
