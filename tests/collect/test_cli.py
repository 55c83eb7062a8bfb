"""``reidrisk collect``: simulate -> fit -> table -> synth on a small CSV."""

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from reidrisk.cli import cli
from reidrisk.collect.reports_io import read_reports, sidecar_path
from reidrisk.data.synthetic import make_population


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    path = tmp_path_factory.mktemp("collect_cli")
    pop = make_population(2000, [3, 4, 2, 3], dependence=0.6, rng=1)
    frame = pop.schema.decode(pop.codes)
    frame.loc[::5, "A2"] = None
    frame.to_csv(path / "data.csv", index=False)
    pop.schema.save(path / "schema.json")
    return path


def run(*args):
    result = CliRunner().invoke(cli, list(map(str, args)), catch_exceptions=False)
    return result


def test_simulate_fit_table_synth(workdir):
    d = workdir
    r = run("collect", "simulate", d / "data.csv", d / "reports.csv", "--schema", d / "schema.json",
            "-e", 4, "--missing-rate", 0.2, "--seed", 3)
    assert r.exit_code == 0, r.output
    assert sidecar_path(d / "reports.csv").exists()
    collected = read_reports(d / "reports.csv")
    assert collected.n == 2000 and collected.protocol.epsilon == 4.0
    k = collected.protocol.k_for(4)
    assert collected.reports.present().sum(axis=1).max() <= k

    r = run("collect", "fit", d / "reports.csv", d / "model.json")
    assert r.exit_code == 0, r.output
    assert json.loads((d / "model.json").read_text())["format"] == "reidrisk-collect-model"

    r = run("collect", "table", d / "model.json", d / "table.csv", "-c", "A1", "-c", "A3,A4")
    assert r.exit_code == 0, r.output
    table = pd.read_csv(d / "table.csv", dtype={"A1": str, "A3": str, "A4": str})
    assert list(table.columns) == ["A1", "A3", "A4", "probability"]
    assert len(table) == 3 * 2 * 3 and np.isclose(table["probability"].sum(), 1.0)

    r = run("collect", "table", d / "model.json", "-", "-c", "A2", "--sampled", "-n", 500, "--seed", 1)
    assert r.exit_code == 0 and r.output.startswith("A2,probability")

    for name in ("synth.csv", "synth.parquet"):
        r = run("collect", "synth", d / "model.json", d / name, "-n", 700, "--seed", 4)
        assert r.exit_code == 0, r.output
    csv = pd.read_csv(d / "synth.csv", dtype=str)
    pq = pd.read_parquet(d / "synth.parquet")
    assert csv.shape == (700, 4) and set(csv["A2"]) <= {"0", "1", "2", "3"}
    pd.testing.assert_frame_equal(csv, pq.astype(str), check_dtype=False)


def test_paper_split_and_parquet_reports(workdir):
    d = workdir
    r = run("collect", "simulate", d / "data.csv", d / "reports.parquet", "--schema",
            d / "schema.json", "-e", 2, "--k", "all", "--seed", 5)
    assert r.exit_code == 0, r.output
    collected = read_reports(d / "reports.parquet")
    assert collected.protocol.k_for(4) == 4
    r = run("collect", "fit", d / "reports.parquet", d / "model2.json", "--exact-em", "none",
            "--stop", "discrepancy", "--shrink", "js")
    assert r.exit_code == 0, r.output


def test_raw_data_is_refused_by_fit(workdir):
    r = CliRunner().invoke(cli, ["collect", "fit", str(workdir / "data.csv"), str(workdir / "m.json")])
    assert r.exit_code == 2
    assert "no reidrisk reports metadata" in r.output


def test_bad_model_file_is_a_clean_error(workdir):
    bad = workdir / "bad.json"
    bad.write_text(json.dumps({"format": "something-else"}))
    r = CliRunner().invoke(cli, ["collect", "table", str(bad), "-", "-c", "A1"])
    assert r.exit_code == 2 and "not a reidrisk collection model" in r.output


def test_plan_prints_the_choice(workdir):
    r = run("collect", "plan", "--schema", workdir / "schema.json", "-e", 5, "-n", 30000,
            "--missing-rate", 0.5)
    assert r.exit_code == 0 and "<- chosen" in r.output
