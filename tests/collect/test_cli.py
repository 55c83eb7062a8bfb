"""``reidrisk collect``: simulate -> fit -> table -> synth on a small CSV."""

import io
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
    r = run("collect", "simulate", d / "data.csv", "-o", d / "reports.csv", "--schema", d / "schema.json",
            "-e", 4, "--missing-rate", 0.2, "--seed", 3)
    assert r.exit_code == 0, r.output
    assert sidecar_path(d / "reports.csv").exists()
    collected = read_reports(d / "reports.csv")
    assert collected.n == 2000 and collected.protocol.epsilon == 4.0
    k = collected.protocol.attributes_for(4)
    assert collected.reports.present().sum(axis=1).max() <= k

    r = run("collect", "fit", d / "reports.csv", "-o", d / "model.json")
    assert r.exit_code == 0, r.output
    assert json.loads((d / "model.json").read_text())["format"] == "reidrisk-collect-model"

    r = run("collect", "table", d / "model.json", "-o", d / "table.csv", "-c", "A1", "-c", "A3,A4")
    assert r.exit_code == 0, r.output
    table = pd.read_csv(d / "table.csv", dtype={"A1": str, "A3": str, "A4": str})
    assert list(table.columns) == ["A1", "A3", "A4", "probability"]
    assert len(table) == 3 * 2 * 3 and np.isclose(table["probability"].sum(), 1.0)

    r = run("collect", "table", d / "model.json", "-o", "-", "-c", "A2", "--sampled", "-n", 500, "--seed", 1)
    assert r.exit_code == 0 and r.output.startswith("A2,probability")

    for name in ("synth.csv", "synth.parquet"):
        r = run("collect", "synth", d / "model.json", "-o", d / name, "-n", 700, "--seed", 4)
        assert r.exit_code == 0, r.output
    csv = pd.read_csv(d / "synth.csv", dtype=str)
    pq = pd.read_parquet(d / "synth.parquet")
    assert csv.shape == (700, 4) and set(csv["A2"]) <= {"0", "1", "2", "3"}
    pd.testing.assert_frame_equal(csv, pq.astype(str), check_dtype=False)


def _truth(d):
    """The data's true marginals (over answered values) and its true (A1, A3) table."""
    from reidrisk.data.tables import contingency
    from reidrisk.schema import Schema

    schema = Schema.load(d / "schema.json")
    codes = schema.encode(pd.read_csv(d / "data.csv", dtype=str, keep_default_na=False))
    return ([contingency(codes, schema.sizes, [j]) for j in range(4)],
            contingency(codes, schema.sizes, [0, 2]))


def test_paper_split_and_parquet_reports(workdir):
    d = workdir
    # 40 over 4 attributes = 10 per attribute: a subset report misses the true value with
    # probability below (f - 1) e^-10 < 2e-4, i.e. in about 1 of the 8,000 values, so the server's
    # marginals are the data's own up to that and the EM's stop (well inside 0.005)
    r = run("collect", "simulate", d / "data.csv", "-o", d / "reports.parquet", "--schema",
            d / "schema.json", "-e", 40, "--attributes-per-person", "all", "--seed", 5)
    assert r.exit_code == 0, r.output
    assert "each person reports 4 attribute(s) with epsilon 10 each" in r.output
    collected = read_reports(d / "reports.parquet")
    assert collected.protocol.attributes_for(4) == 4
    r = run("collect", "fit", d / "reports.parquet", "-o", d / "model2.json", "--exact-em", "none",
            "--stop", "discrepancy", "--shrink", "js")
    assert r.exit_code == 0, r.output
    assert "Fitted 4 attributes from 2000 reports" in r.output
    from reidrisk.collect.pipeline import CollectModel

    model = CollectModel.load(d / "model2.json")
    marginals, pair = _truth(d)
    for est, true in zip(model.marginals, marginals):
        np.testing.assert_allclose(est, true, atol=0.005)
    # the exact 2-way table of the copula against the true table: the population is drawn through
    # a latent Gaussian, so the copula is the right model and only the correlation is estimated
    # (from 2,000 records); cells agree to a few standard errors sqrt(p (1 - p) / 2000) <= 0.011
    r = run("collect", "table", d / "model2.json", "-o", "-", "-c", "A1", "-c", "A3")
    assert r.exit_code == 0, r.output
    table = pd.read_csv(io.StringIO(r.output), dtype={"A1": str, "A3": str})
    np.testing.assert_allclose(table["probability"].to_numpy(), pair.ravel(), atol=0.035)


def test_k_above_the_number_of_attributes_is_refused(workdir):
    d = workdir
    r = CliRunner().invoke(cli, ["collect", "simulate", str(d / "data.csv"), "-o", str(d / "r.csv"),
                                 "--schema", str(d / "schema.json"), "-e", "2",
                                 "--attributes-per-person", "9"])
    assert r.exit_code == 2
    assert "--attributes-per-person 9 is more attributes than the schema has (4)" in r.output
    assert not (d / "r.csv").exists()


def test_outputs_are_checked_before_the_work(workdir, tmp_path):
    d = workdir
    for args in (["simulate", d / "data.csv", tmp_path / "no" / "r.csv", "-e", 2],
                 ["fit", d / "reports.csv", tmp_path / "no" / "m.json"],
                 ["table", d / "model.json", tmp_path / "no" / "t.csv", "-c", "A1"],
                 ["table", d / "model.json", tmp_path / "t.xlsx", "-c", "A1"],
                 ["synth", d / "model.json", tmp_path / "no" / "s.csv", "-n", 5]):
        r = CliRunner().invoke(cli, ["collect", *map(str, args)])
        assert r.exit_code == 2, (args, r.output)
        assert ("no' does not exist" in r.output or "t.xlsx" in r.output), r.output


# ---- the cost of exact tables -----------------------------------------------------------------

def test_large_exact_table_switches_to_sampling_and_says_so(workdir, monkeypatch):
    from reidrisk.collect import cli as collect_cli

    d = workdir
    monkeypatch.setattr(collect_cli, "EXACT_TABLE_MAX_CELLS", 20)  # the 3x4x2 table has 24 cells
    r = run("collect", "table", d / "model.json", "-o", d / "t3.csv", "-c", "A1,A2,A3", "--seed", 2)
    assert r.exit_code == 0, r.output
    assert "24 cells" in r.output and "more than 20 cells" in r.output and "--exact" in r.output
    t = pd.read_csv(d / "t3.csv")["probability"].to_numpy()
    # counts of as many synthetic records as were fitted (2,000): multiples of 1/2000
    np.testing.assert_allclose(t * 2000, np.round(t * 2000), atol=1e-9)
    # asked for explicitly, the exact table is computed anyway
    r = run("collect", "table", d / "model.json", "-o", d / "t3e.csv", "-c", "A1,A2,A3", "--exact")
    assert r.exit_code == 0 and "(exact)" in r.output


def test_long_exact_table_shows_progress_and_matches_the_one_shot_table(workdir, monkeypatch):
    from reidrisk.collect import model_io
    from reidrisk.collect.pipeline import CollectModel
    from reidrisk.report import progress

    d = workdir
    # pretend it is slow: the estimate the command shares with the service reads this constant
    monkeypatch.setattr(model_io, "EXACT_SECONDS_PER_CELL", 1.0)
    monkeypatch.setattr(model_io, "EXACT_FIRST_CHUNK", 5)
    monkeypatch.setattr(model_io, "EXACT_CHUNK", 5)
    monkeypatch.setattr(progress, "PLAIN_INTERVAL", 0.0)
    r = run("collect", "table", d / "model.json", "-o", d / "t3p.csv", "-c", "A1,A2,A3", "--exact")
    assert r.exit_code == 0, r.output
    assert "Computing the 24 cells of the 3x4x2 table exactly: about 72 s" in r.output
    assert "exact table: 5/24 cells (21%) [about " in r.output
    assert "left at the measured rate]" in r.output and "24/24 cells done" in r.output
    chunked = pd.read_csv(d / "t3p.csv")["probability"].to_numpy()
    whole = CollectModel.load(d / "model.json").copula.contingency_table([0, 1, 2]).ravel()
    # the chunks compute the cells the one-shot table does, bit for bit (model_io's
    # exact_copula_table); the CSV keeps 16 significant digits
    np.testing.assert_allclose(chunked, whole, rtol=1e-12, atol=0)


@pytest.fixture
def one_second_cells(monkeypatch):
    """Every copula cell costs 1 s on the clock that model_io and the CLI read (a fake clock
    advanced by the copula), so a table's measured rate is known; returns model_io and the clock
    (a one-item list of seconds)."""
    from reidrisk.collect import cli as collect_cli
    from reidrisk.collect import model_io
    from reidrisk.copula import GaussianCopula

    now = [0.0]
    real = GaussianCopula.cell_probability

    def slow(self, cells, *args, **kwargs):
        now[0] += len(cells)
        return real(self, cells, *args, **kwargs)

    monkeypatch.setattr(GaussianCopula, "cell_probability", slow)
    monkeypatch.setattr(model_io, "_clock", lambda: now[0])
    monkeypatch.setattr(collect_cli, "_now", lambda: now[0])
    return model_io, now


def test_exact_table_longer_than_its_shape_says_shows_measured_progress(workdir, monkeypatch,
                                                                          one_second_cells):
    """The shape's estimate (24 cells x 3 attributes x 1e-4 s) says the table is short, so no
    progress was announced; a model whose cells cost 1 s each (the clock of model_io advanced by
    the copula) is shown with the time left at the measured rate: 20 cells of 1 s."""
    from reidrisk.report import progress

    model_io, now = one_second_cells
    monkeypatch.setattr(model_io, "EXACT_FIRST_CHUNK", 4)
    monkeypatch.setattr(progress, "PLAIN_INTERVAL", 0.0)
    r = run("collect", "table", workdir / "model.json", "-o", workdir / "t3m.csv", "-c", "A1,A2,A3",
            "--exact")
    assert r.exit_code == 0, r.output
    assert ("Computing the 24 cells of the 3x4x2 table exactly: about 20 s left at the rate "
            "measured on the first 4 cells.") in r.output
    assert "about 72 s" not in r.output
    assert ("exact table: 4/24 cells (17%) [about 20 s left at the measured rate], 4 s elapsed, "
            "about 20 s left") in r.output
    assert "(exact)" in r.output


def test_exact_table_done_in_one_chunk_announces_nothing_after_the_fact(workdir, monkeypatch,
                                                                          one_second_cells):
    """24 cells of 1 s each fit in the first chunk (64 cells): the table is done at the first
    measurement, 24 s in. It printed "Computing the 24 cells ... about 0 s left at the rate measured
    on the first 24 cells." and a progress bar, after the work; now only the result."""
    from reidrisk.report import progress

    model_io, now = one_second_cells
    monkeypatch.setattr(progress, "PLAIN_INTERVAL", 0.0)
    assert model_io.EXACT_FIRST_CHUNK >= 24
    r = run("collect", "table", workdir / "model.json", "-o", workdir / "t3o.csv", "-c", "A1,A2,A3",
            "--exact")
    assert r.exit_code == 0, r.output
    assert now[0] == 24.0 and "(exact)" in r.output
    assert "Computing" not in r.output and "exact table:" not in r.output, r.output


def test_exact_table_beyond_the_hard_limit_is_refused(workdir, monkeypatch):
    from reidrisk.collect import cli as collect_cli

    monkeypatch.setattr(collect_cli, "EXACT_HARD_LIMIT", 10)
    r = CliRunner().invoke(cli, ["collect", "table", str(workdir / "model.json"), "-o", "-", "-c",
                                 "A1,A2,A3", "--exact"])
    assert r.exit_code == 2 and "24 cells" in r.output and "--sampled" in r.output
    # and the default's note does not suggest --exact there
    monkeypatch.setattr(collect_cli, "EXACT_TABLE_MAX_CELLS", 5)
    r = CliRunner().invoke(cli, ["collect", "table", str(workdir / "model.json"), "-o", "-", "-c",
                                 "A1,A2,A3"])
    assert r.exit_code == 0 and "counted from" in r.stderr and "--exact" not in r.stderr


def test_raw_data_is_refused_by_fit(workdir):
    r = CliRunner().invoke(cli, ["collect", "fit", str(workdir / "data.csv"), "-o", str(workdir / "m.json")])
    assert r.exit_code == 2
    assert "no reidrisk reports metadata" in r.output


def test_bad_model_file_is_a_clean_error(workdir):
    bad = workdir / "bad.json"
    bad.write_text(json.dumps({"format": "something-else"}))
    r = CliRunner().invoke(cli, ["collect", "table", str(bad), "-o", "-", "-c", "A1"])
    assert r.exit_code == 2 and "not a reidrisk collection model" in r.output


def test_plan_prints_the_choice(workdir):
    r = run("collect", "plan", "--schema", workdir / "schema.json", "-e", 5, "-n", 30000,
            "--missing-rate", 0.5)
    assert r.exit_code == 0 and "<- chosen" in r.output


def test_every_summary_is_also_json(workdir, tmp_path):
    d = workdir
    r = run("collect", "plan", "--schema", d / "schema.json", "-e", 5, "-n", 30000, "--json")
    assert r.exit_code == 0, r.output
    plan = json.loads(r.stdout)
    assert plan["attributes_per_person"] in plan["candidates"] and len(plan["errors"]) == len(plan["candidates"])
    r = run("collect", "simulate", d / "data.csv", "-o", tmp_path / "r.csv", "--schema", d / "schema.json",
            "-e", 4, "--seed", 3, "--json")
    assert r.exit_code == 0, r.output
    sim = json.loads(r.stdout)
    assert sim["reports"] == read_reports(tmp_path / "r.csv").n == 2000 and sim["attributes"] == 4
    assert sim["epsilon"] == 4 and sim["output"] == str(tmp_path / "r.csv")
    r = run("collect", "fit", tmp_path / "r.csv", "-o", tmp_path / "m.json", "--json")
    assert r.exit_code == 0, r.output
    fit = json.loads(r.stdout)
    assert fit["reports"] == 2000 and fit["attributes"] == 4 and fit["model"] == str(tmp_path / "m.json")
    r = run("collect", "table", tmp_path / "m.json", "-o", tmp_path / "t.csv", "-c", "A1,A2", "--json")
    assert r.exit_code == 0, r.output
    tab = json.loads(r.stdout)
    assert tab["cells"] == len(pd.read_csv(tmp_path / "t.csv")) == 12 and tab["exact"] is True
    r = run("collect", "synth", tmp_path / "m.json", "-o", tmp_path / "s.csv", "-n", 300, "--seed", 1,
            "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout) == {"output": str(tmp_path / "s.csv"), "records": 300}
    r = run("collect", "table", tmp_path / "m.json", "-o", "-", "-c", "A1", "--json")
    assert r.exit_code == 2 and "--json needs an --output file" in r.output


@pytest.mark.parametrize("text, expected", [
    ("noise", "noise"), ("noise:1e-3", ("noise", 1e-3)), ("discrepancy", "discrepancy"),
    ("none", None), ("1e-6", 1e-6),
])
def test_stop_text_becomes_the_engines_stop_value(text, expected):
    from reidrisk.collect.cli import _parse_stop
    from reidrisk.estimation.em import parse_stop

    assert _parse_stop(text) == expected
    parse_stop(expected)  # the one parser accepts what the command line passes on


@pytest.mark.parametrize("text, message", [
    ("noise:abc", "noise:THRESHOLD"), ("-1", "> 0"), ("noise:0", "> 0"), ("fast", "noise"),
])
def test_bad_stop_text_is_refused_with_the_value(text, message):
    import click

    from reidrisk.collect.cli import _parse_stop

    with pytest.raises(click.BadParameter, match=message):
        _parse_stop(text)


def test_former_option_k_still_works_with_a_warning(workdir):
    d = workdir
    r = CliRunner().invoke(cli, ["collect", "simulate", str(d / "data.csv"), "-o", str(d / "old.csv"),
                                 "--schema", str(d / "schema.json"), "-e", "40", "--k", "all",
                                 "--seed", "5"])
    assert r.exit_code == 0, r.output
    assert "--k is deprecated; use --attributes-per-person" in r.output
    assert read_reports(d / "old.csv").protocol.attributes_for(4) == 4
    both = CliRunner().invoke(cli, ["collect", "simulate", str(d / "data.csv"), "-o", str(d / "x.csv"),
                                    "--schema", str(d / "schema.json"), "-e", "2", "--k", "2",
                                    "--attributes-per-person", "2"])
    assert both.exit_code == 2 and "pass --attributes-per-person only" in both.output


def test_latent_fit_that_falls_back_says_so_instead_of_counting_no_fits(tmp_path, monkeypatch):
    """On reports without dependence the pipeline returns its fallback model and fits no latent
    class model: the progress display closed on "0/5 fits done", as if the fits had been skipped
    or lost. Piped (plain lines, interval 0), it now closes with a line saying what happened."""
    from reidrisk.collect.latent_fit import N_FITS
    from reidrisk.collect.pipeline import CollectModel
    from reidrisk.report import progress

    pop = make_population(1500, [3, 4, 2, 3], dependence=0.0, rng=4)  # independent attributes
    pop.schema.decode(pop.codes).to_csv(tmp_path / "data.csv", index=False)
    pop.schema.save(tmp_path / "schema.json")
    r = run("collect", "simulate", tmp_path / "data.csv", "-o", tmp_path / "reports.csv", "--schema",
            tmp_path / "schema.json", "-e", 4, "--seed", 3)
    assert r.exit_code == 0, r.output
    monkeypatch.setattr(progress, "PLAIN_INTERVAL", 0.0)
    r = CliRunner().invoke(cli, ["collect", "fit", str(tmp_path / "reports.csv"),
                                 str(tmp_path / "model.json"), "--model", "latent"],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output
    model = CollectModel.load(tmp_path / "model.json")
    assert model.latent is None and model.report.fallback != "none"  # the case under test
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("latent class model:")]
    assert lines == [f"latent class model: none of the {N_FITS} fits was needed; the model is the "
                     "fallback, the product of the marginals (no pair shows dependence beyond the "
                     "noise). --no-fallback fits the latent class model anyway."], r.stderr
    assert f"0/{N_FITS} fits" not in r.stderr and "\r" not in r.stderr
    assert "Note: no latent class model was fitted" in r.stderr  # the model's own note, as before


def test_output_is_an_option_and_the_positional_form_still_works(workdir, tmp_path):
    d = workdir
    base = ["collect", "simulate", str(d / "data.csv"), "--schema", str(d / "schema.json"),
            "-e", "4", "--seed", "3"]
    new = CliRunner().invoke(cli, [*base, "-o", str(tmp_path / "new.csv")])
    old = CliRunner().invoke(cli, [*base[:3], str(tmp_path / "old.csv"), *base[3:]])
    assert new.exit_code == old.exit_code == 0, new.output + old.output
    assert (tmp_path / "new.csv").read_bytes() == (tmp_path / "old.csv").read_bytes()
    assert "positional OUTPUT is deprecated; use -o/--output" in old.stderr
    assert "deprecated" not in new.stderr
    both = CliRunner().invoke(cli, [*base[:3], str(tmp_path / "a.csv"), *base[3:], "-o",
                                    str(tmp_path / "b.csv")])
    assert both.exit_code == 2 and "pass the output once" in both.output
    neither = CliRunner().invoke(cli, base)
    assert neither.exit_code == 2 and "Missing option '-o' / '--output'" in neither.output
    assert not (tmp_path / "a.csv").exists() and not (tmp_path / "b.csv").exists()


def test_mechanism_choices_are_the_registries():
    from reidrisk.collect.cli import MECHANISM_NAMES
    from reidrisk.mechanisms import MECHANISMS
    from reidrisk.mechanisms.baselines import LOCAL_MECHANISMS

    assert set(MECHANISM_NAMES) == set(MECHANISMS) | set(LOCAL_MECHANISMS)
    for command in ("plan", "simulate"):
        text = run("collect", command, "--help").output
        assert "negative" in text and "laplace_index" in text and "rappor" in text


def test_unknown_mechanism_is_refused_by_the_option(workdir, tmp_path):
    r = run("collect", "simulate", workdir / "data.csv", "-o", tmp_path / "r.csv", "-e", 2, "-m", "nope")
    assert r.exit_code == 2 and "'nope' is not one of" in r.output


def test_fit_help_says_the_marginals_shrink_by_default():
    text = " ".join(run("collect", "fit", "--help").output.split())
    assert "marginals are shrunk toward uniform" in text


def test_table_rows_implies_sampled(workdir, tmp_path):
    d = tmp_path
    run("collect", "simulate", workdir / "data.csv", "-o", d / "r.csv", "--schema", workdir / "schema.json",
        "-e", 4, "--seed", 3)
    assert run("collect", "fit", d / "r.csv", "-o", d / "model.json").exit_code == 0
    r = run("collect", "table", d / "model.json", "-o", tmp_path / "t.csv", "-c", "A1", "-n", 300,
            "--seed", 2, "--json")
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)
    assert summary["exact"] is False and summary["synthetic_records"] == 300
    probabilities = pd.read_csv(tmp_path / "t.csv")["probability"]
    assert np.allclose(probabilities * 300, np.round(probabilities * 300))  # counts of 300 records
    r = run("collect", "table", d / "model.json", "-o", tmp_path / "t2.csv", "-c", "A1", "-n", 300,
            "--exact")
    assert r.exit_code == 2 and "pass one of the two" in r.output


def test_exact_table_limits_are_the_model_files():
    # the command names them itself so that its help does not load the model's modules
    from reidrisk.collect import cli as collect_cli
    from reidrisk.collect import model_io

    assert collect_cli.EXACT_TABLE_MAX_CELLS == model_io.EXACT_TABLE_MAX_CELLS
    assert collect_cli.EXACT_HARD_LIMIT == model_io.EXACT_HARD_LIMIT
    # the cost estimate stays importable from the command's module, loaded on first use
    from reidrisk.collect.cli import EXACT_SECONDS_PER_CELL, exact_table_seconds

    assert exact_table_seconds is model_io.exact_table_seconds
    assert EXACT_SECONDS_PER_CELL == model_io.EXACT_SECONDS_PER_CELL
