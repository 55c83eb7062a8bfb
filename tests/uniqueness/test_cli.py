"""`reidrisk uniqueness score` through click's CliRunner: output rows and columns, options, and
one-line errors (exit code 2) for bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from reidrisk.cli import cli
from reidrisk.data.synthetic import make_population
from reidrisk.mechanisms import RecordRandomizer
from reidrisk.uniqueness.cli import parse_db_spec

N = 3000


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("uniq")
    pop = make_population(N, [3, 4, 5, 2, 3], 0.5, rng=2)
    rng = np.random.default_rng(1)
    raw = pop.codes[rng.random(N) < 0.2]
    pop.schema.decode(raw).to_csv(tmp / "db.csv", index=False)
    reports = RecordRandomizer(pop.schema, "grr", 15.0).randomize(pop.codes[rng.random(N) < 0.1], rng)
    pop.schema.decode(np.column_stack(reports.reports)).to_csv(tmp / "db_krr.csv", index=False)
    query = pop.schema.decode(pop.codes[:25])
    query.insert(0, "person", [f"p{i}" for i in range(25)])
    query.to_csv(tmp / "records.csv", index=False)
    pop.schema.save(tmp / "schema.json")
    return tmp


def run(*args):
    return CliRunner().invoke(cli, ["uniqueness", "score", *map(str, args)])


def assert_clean_error(result, *fragments):
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    errors = [ln for ln in result.output.splitlines() if ln.startswith("Error")]
    assert len(errors) == 1, result.output
    for f in fragments:
        assert f in errors[0], errors[0]


def test_scores_every_record(files):
    out = files / "scores.csv"
    result = run("--population", N, "--db", f"{files / 'db.csv'}:0.2", "--records", files / "records.csv",
                 "--schema", files / "schema.json", "-T", 1, "-T", 5, "--id", "person", "-o", out)
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(out)
    assert len(frame) == 25
    assert list(frame.columns[:7]) == ["person", "expected_count", "p_unique", "p_gt_1", "flag_le_1",
                                       "p_gt_5", "flag_le_5"]
    assert frame["person"].tolist()[:2] == ["p0", "p1"]
    assert frame["p_unique"].between(0, 1).all() and (frame["expected_count"] >= 1).all()
    assert set(frame["flag_le_1"].unique()) <= {0, 1}
    assert "Scored 25 records" in result.output


def test_randomized_database_paper_method_and_stdout(files):
    result = run("--population", N, "--db", f"{files / 'db.csv'}:0.2",
                 "--db", f"{files / 'db_krr.csv'}:0.1:grr:15", "--records", files / "records.csv",
                 "--schema", files / "schema.json", "--id", "person", "--method", "paper")
    assert result.exit_code == 0, result.output
    header = result.stdout.splitlines()[0]
    assert header.startswith("person,expected_count,p_unique,p_gt_1,flag_le_1")
    assert "count_db2" in header


def test_only_randomized_databases_come_with_the_calibration_caveat(files):
    base = ("--population", N, "--records", files / "records.csv", "--schema", files / "schema.json",
            "--id", "person")
    private = run(*base, "--db", f"{files / 'db_krr.csv'}:0.1:grr:15")
    assert private.exit_code == 0, private.output
    assert "simulated from the fitted model" in private.stderr
    raw = run(*base, "--db", f"{files / 'db.csv'}:0.2", "--db", f"{files / 'db_krr.csv'}:0.1:grr:15")
    assert raw.exit_code == 0 and "simulated from the fitted model" not in raw.stderr


def test_schema_is_inferred_without_schema_file(files):
    result = run("--population", N, "--db", files / "db.csv", "--records", files / "records.csv",
                 "--id", "person")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("spec, fragment", [
    (":0.2", "no file name"),
    ("db.csv:1.5", "outside (0, 1]"),
    ("db.csv:0.1:oue:2", "not supported"),
    ("db.csv:0.1:grr:-1", "budget"),
])
def test_bad_db_spec(files, spec, fragment):
    result = run("--population", N, "--db", spec, "--records", files / "records.csv")
    assert_clean_error(result, fragment)


def test_population_smaller_than_database(files):
    result = run("--population", 10, "--db", files / "db.csv", "--records", files / "records.csv",
                 "--schema", files / "schema.json", "--id", "person")
    assert_clean_error(result, "cannot exceed its population")


def test_records_outside_the_schema(files, tmp_path):
    bad = pd.read_csv(files / "records.csv", dtype=str)
    bad.loc[0, "A1"] = "purple"
    bad.to_csv(tmp_path / "bad.csv", index=False)
    result = run("--population", N, "--db", files / "db.csv", "--records", tmp_path / "bad.csv",
                 "--schema", files / "schema.json", "--id", "person")
    assert_clean_error(result, "purple")


def test_missing_id_column_and_missing_file(files):
    result = run("--population", N, "--db", files / "db.csv", "--records", files / "records.csv",
                 "--schema", files / "schema.json", "--id", "nobody")
    assert_clean_error(result, "nobody")
    result = run("--population", N, "--db", files / "nope.csv", "--records", files / "records.csv")
    assert_clean_error(result, "nope.csv")


def test_parse_db_spec():
    assert parse_db_spec("a.csv").rate is None
    spec = parse_db_spec("dir:x/a.csv:0.25:grr:3")
    assert str(spec.path) == "dir:x/a.csv" and spec.rate == 0.25 and spec.mechanism == "grr" and spec.epsilon == 3.0
    spec = parse_db_spec("a.csv:grr:2")
    assert spec.rate is None and spec.epsilon == 2.0


def test_help_lists_the_command():
    result = CliRunner().invoke(cli, ["uniqueness", "--help"])
    assert result.exit_code == 0 and "score" in result.output
