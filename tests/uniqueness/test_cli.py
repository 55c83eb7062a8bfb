"""`reidrisk uniqueness score` through click's CliRunner: output rows and columns, options, and
one-line errors (exit code 2) for bad input."""

from __future__ import annotations

import json

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


def test_json_summary_matches_the_written_scores(files):
    out = files / "scores_json.csv"
    args = ["--population", N, "--db", f"{files / 'db.csv'}:0.2", "--records", files / "records.csv",
            "--schema", files / "schema.json", "-T", 1, "-T", 5]
    result = run(*args, "-o", out, "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    frame = pd.read_csv(out)
    assert summary["records"] == len(frame) == 25 and summary["population"] == N
    assert summary["flagged"] == {"1": int(frame["flag_le_1"].sum()), "5": int(frame["flag_le_5"].sum())}
    assert summary["output"] == str(out) and summary["preset"] == "reidrisk"
    assert_clean_error(run(*args, "--json"), "--json needs -o/--output")


def test_randomized_database_paper_method_and_stdout(files):
    result = run("--population", N, "--db", f"{files / 'db.csv'}:0.2",
                 "--db", f"{files / 'db_krr.csv'}:0.1:grr:15", "--records", files / "records.csv",
                 "--schema", files / "schema.json", "--id", "person", "--preset", "paper")
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
    spec = parse_db_spec("s3://bucket/reports/:0.1")
    assert spec.path == "s3://bucket/reports/" and spec.rate == 0.1


def test_help_lists_the_command():
    result = CliRunner().invoke(cli, ["uniqueness", "--help"])
    assert result.exit_code == 0 and "score" in result.output


# ---- reports files of `collect simulate` (one reader for both capabilities) ----------------------

@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    """A population whose labels are words, not numbers: a reader that took the reports' category
    indices for labels fails on it ("unknown category '0'") instead of silently miscounting."""
    from reidrisk.schema import Attribute, Schema

    tmp = tmp_path_factory.mktemp("uniq_words")
    pop = make_population(1500, [3, 4, 2, 3], 0.5, rng=4)
    schema = Schema(tuple(Attribute(a.name, tuple(f"{a.name.lower()}-{c}" for c in a.categories))
                          for a in pop.schema))
    frame = schema.decode(pop.codes)
    frame.to_csv(tmp / "people.csv", index=False)
    frame.iloc[:40].to_csv(tmp / "query.csv", index=False)
    schema.save(tmp / "schema.json")
    # the truth: how many people of the population hold each query record's values
    key = frame.astype(str).agg("|".join, axis=1)
    truth = key.map(key.value_counts()).to_numpy()[:40]
    return tmp, truth


@pytest.mark.parametrize("name", ["reports.csv", "reports.parquet"])
def test_simulate_then_score_reads_the_reports_file(labelled, name):
    tmp, truth = labelled
    # k-RR at 25 per attribute keeps every value with probability 1 - (f - 1) e^-25 > 1 - 1e-10, so
    # the reports are the records and each count in the database (the whole population, rate 1)
    # must equal the record's true population count exactly.
    sim = CliRunner().invoke(cli, ["collect", "simulate", str(tmp / "people.csv"), "-o", str(tmp / name),
                                   "--schema", str(tmp / "schema.json"), "-e", "100", "-m", "grr",
                                   "--k", "all", "--seed", "1"])
    assert sim.exit_code == 0, sim.output
    out = tmp / f"scores-{name}.csv"
    result = run("-N", 1500, "--db", f"{tmp / name}:1", "--records", tmp / "query.csv", "-o", out)
    assert result.exit_code == 0, result.output
    scores = pd.read_csv(out)
    np.testing.assert_array_equal(scores["count_db1"].to_numpy(), truth)
    # the declaration of the older label format is checked against the file's metadata
    same = run("-N", 1500, "--db", f"{tmp / name}:1:grr:100", "--records", tmp / "query.csv")
    assert same.exit_code == 0, same.output
    wrong = run("-N", 1500, "--db", f"{tmp / name}:1:grr:4", "--records", tmp / "query.csv")
    assert_clean_error(wrong, name, "100", "not 4")


def test_a_directory_of_partitioned_reports_is_a_database(labelled, tmp_path):
    """The reports of the test above, written as partitions (reidrisk.collect.partitioned): the
    directory is read like the file, so every count is again the true population count."""
    from reidrisk.collect.partitioned import write_partitioned
    from reidrisk.collect.reports_io import read_reports

    tmp, truth = labelled
    sim = CliRunner().invoke(cli, ["collect", "simulate", str(tmp / "people.csv"),
                                   str(tmp_path / "r.parquet"), "--schema",
                                   str(tmp / "schema.json"), "-e", "100", "-m", "grr", "--k",
                                   "all", "--seed", "1"])
    assert sim.exit_code == 0, sim.output
    write_partitioned(tmp_path / "parts", read_reports(tmp_path / "r.parquet"),
                      rows_per_partition=400)
    out = tmp_path / "scores.csv"
    result = run("-N", 1500, "--db", f"{tmp_path / 'parts'}:1", "--records", tmp / "query.csv",
                 "-o", out)
    assert result.exit_code == 0, result.output
    np.testing.assert_array_equal(pd.read_csv(out)["count_db1"].to_numpy(), truth)
    # the same partitions as an fsspec URL (as on a bucket): read as partitions, not as a path
    # whose '//' is collapsed, with the same scores
    url_out = tmp_path / "scores_url.csv"
    result = run("-N", 1500, "--db", f"{(tmp_path / 'parts').as_uri()}:1", "--records",
                 tmp / "query.csv", "-o", url_out)
    assert result.exit_code == 0, result.output
    pd.testing.assert_frame_equal(pd.read_csv(url_out), pd.read_csv(out))


def test_reports_file_with_another_schema_is_refused(labelled, files):
    tmp, _ = labelled
    CliRunner().invoke(cli, ["collect", "simulate", str(tmp / "people.csv"), "-o", str(tmp / "r.csv"),
                             "--schema", str(tmp / "schema.json"), "-e", "4", "--seed", "1"])
    result = run("-N", 1500, "--db", tmp / "r.csv", "--records", tmp / "query.csv",
                 "--schema", files / "schema.json")
    assert_clean_error(result, "r.csv", "different schema")


# ---- validation ----------------------------------------------------------------------------------

@pytest.mark.parametrize("t", ["0", "0.5", "-1"])
def test_threshold_below_one_is_refused(files, t):
    # X >= 1 always (the person exists), so P(X > 0) = 1 and 'at most 0 share' can never hold
    result = run("-N", N, "--db", files / "db.csv", "--records", files / "records.csv", "--id", "person",
                 "-T", t)
    assert result.exit_code == 2 and ">= 1" in result.output


def test_rate_that_contradicts_size_over_n_is_refused_with_the_numbers(files):
    size = len(pd.read_csv(files / "db.csv"))  # a 20% sample of N = 3000: about 600 records
    result = run("-N", N, "--db", f"{files / 'db.csv'}:0.5", "--records", files / "records.csv",
                 "--id", "person")
    assert_clean_error(result, "db.csv", "0.5", "1,500", f"{size:,}")
    # a rate within sampling noise of size / N is accepted
    ok = run("-N", N, "--db", f"{files / 'db.csv'}:{size / N:.3f}", "--records", files / "records.csv",
             "--id", "person")
    assert ok.exit_code == 0, ok.output


def test_output_path_is_checked_before_the_computation(files, tmp_path, monkeypatch):
    from reidrisk.uniqueness import model

    def no_fit(*args, **kwargs):  # the model must not even be fitted
        raise AssertionError("fitted before the output path was checked")

    monkeypatch.setattr(model.UniquenessModel, "fit", no_fit)
    result = run("-N", N, "--db", files / "db.csv", "--records", files / "records.csv", "--id", "person",
                 "-o", tmp_path / "absent" / "scores.csv")
    assert_clean_error(result, "absent", "does not exist")
    result = run("-N", N, "--db", files / "db.csv", "--records", files / "records.csv", "--id", "person",
                 "-o", tmp_path / "scores.xlsx")
    assert_clean_error(result, "scores.xlsx", "unsupported file type")


def test_many_records_are_scored_in_chunks_with_progress_and_the_same_result(files, monkeypatch):
    from reidrisk.report import progress
    from reidrisk.uniqueness import cli as uniq_cli

    args = ("-N", N, "--db", f"{files / 'db.csv'}:0.2", "--db", f"{files / 'db_krr.csv'}:0.1:grr:15",
            "--records", files / "records.csv", "--schema", files / "schema.json", "--id", "person",
            "-T", 1, "-T", 3)
    whole = run(*args)
    assert whole.exit_code == 0, whole.output
    monkeypatch.setattr(uniq_cli, "SCORE_CHUNK", 10)
    monkeypatch.setattr(progress, "PLAIN_INTERVAL", 0.0)
    chunked = run(*args)
    assert chunked.exit_code == 0, chunked.output
    # a record's score does not depend on the records scored with it (up to rounding: numpy's
    # pairwise sums group the terms differently in arrays of other lengths)
    import io

    pd.testing.assert_frame_equal(pd.read_csv(io.StringIO(chunked.stdout)),
                                  pd.read_csv(io.StringIO(whole.stdout)), rtol=1e-12)
    assert "score: 1/3 chunks (33%) [10 of 25 records]" in chunked.stderr
    assert "score: 3/3 chunks done in" in chunked.stderr


def test_census_database_scores_the_true_population_counts(tmp_path):
    # the whole population as the raw database (rate size / N = 1): a census counts every member
    # of a record's cell, so each count is the true population count and the posterior is the
    # point mass there, for the cells of more than 64 people too
    pop = make_population(N, [3, 4, 5, 2, 3], 0.5, rng=2)
    frame = pop.schema.decode(pop.codes)
    frame.to_csv(tmp_path / "pop.csv", index=False)
    key = frame.astype(str).agg("|".join, axis=1)
    query = frame[~key.duplicated()]  # every distinct record once
    query.to_csv(tmp_path / "q.csv", index=False)
    truth = key.value_counts()[key[query.index]].to_numpy()
    assert truth.max() > 64 and (truth == 1).any()
    out = tmp_path / "scores.csv"
    result = run("-N", N, "--db", tmp_path / "pop.csv", "--records", tmp_path / "q.csv", "-o", out)
    assert result.exit_code == 0, result.output
    scores = pd.read_csv(out)
    np.testing.assert_array_equal(scores["count_db1"].to_numpy(), truth)
    np.testing.assert_array_equal(scores["expected_count"].to_numpy(), truth)
    np.testing.assert_array_equal(scores["p_unique"].to_numpy(), (truth == 1).astype(float))


def test_former_option_method_still_chooses_the_preset_with_a_warning(files):
    args = ("--population", N, "--db", f"{files / 'db.csv'}:0.2", "--records",
            files / "records.csv", "--schema", files / "schema.json", "--id", "person")
    old = run(*args, "--method", "paper")
    assert old.exit_code == 0, old.output
    assert "--method is deprecated; use --preset" in old.output
    assert old.stdout == run(*args, "--preset", "paper").stdout
    both = run(*args, "--method", "paper", "--preset", "paper")
    assert both.exit_code == 2 and "pass --preset only" in both.output


def test_rule_choices_are_the_decision_rules():
    # the command names them itself so that its help does not load SciPy
    from reidrisk.uniqueness import cli as uniq_cli
    from reidrisk.uniqueness.decisions import RULES

    assert uniq_cli.RULES == RULES
