"""The main job as a Python function: inputs, truth, scoring, reproducibility, the report."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reidrisk.demo import DEFAULT_EPSILONS, DemoResult, run_demo
from reidrisk.mechanisms import MechanismError
from reidrisk.schema import Attribute, Schema, SchemaError

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guide.md"


@pytest.fixture
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    n = 600
    colour = rng.choice(["red", "green", "blue"], n, p=[0.5, 0.3, 0.2])
    size = np.where(colour == "red", rng.choice(["S", "M"], n), rng.choice(["L", "XL", "M"], n))
    out = pd.DataFrame({"colour": colour, "size": size, "flag": rng.choice(["yes", "no"], n)})
    out.loc[::5, "size"] = ""
    return out


SCHEMA = Schema((Attribute("colour", ("red", "green", "blue")), Attribute("size", ("S", "M", "L", "XL")),
                 Attribute("flag", ("yes", "no"))))


def test_truth_is_the_distribution_of_the_present_answers(frame):
    result = run_demo(frame, SCHEMA, out=None, epsilons=[2], mechanisms=["grr"], progress=False)
    present = frame["size"][frame["size"] != ""]
    expected = present.value_counts(normalize=True).reindex(["S", "M", "L", "XL"], fill_value=0)
    np.testing.assert_allclose(result.truth[1], expected.to_numpy())
    np.testing.assert_allclose(result.missing, [0.0, (frame["size"] == "").mean(), 0.0])
    assert result.n == len(frame)


@pytest.mark.parametrize("mechanism", ["grr", "subset", "rappor"])
def test_errors_vanish_when_reports_are_the_truth(frame, mechanism):
    # At 100 per attribute these mechanisms report the true value with probability
    # 1 - O(k e^-100): the estimates are the truth, so every error is 0 up to rounding.
    result = run_demo(frame, SCHEMA, out=None, epsilons=[300], mechanisms=[mechanism], progress=False)
    table = result.table()
    assert set(table["target"]) == {"marginal", "pair"}
    assert (table[["js", "js_max", "tv"]].to_numpy() < 1e-9).all()


def test_measurements_cover_every_mechanism_budget_and_method(frame):
    result = run_demo(frame, SCHEMA, out=None, epsilons=[4, 1], mechanisms=["grr", "oue"],
                      progress=False)
    assert result.epsilons == (1.0, 4.0)
    table = result.table()
    assert len(table) == 2 * 2 * (len(result.methods) + 1)
    assert ((table["js"] >= 0) & (table["js"] <= 1) & (table["tv"] >= 0) & (table["tv"] <= 1)).all()
    assert (table["js_max"] >= table["js"] - 1e-15).all()
    # the reference error of a uniform guess, computed from the truth
    uniform = [np.full(t.size, 1 / t.size) for t in result.truth]
    from reidrisk.estimation.information import js_divergence

    expect = np.mean([js_divergence(t, u, base=2) for t, u in zip(result.truth, uniform)])
    assert result.reference["marginal"] == pytest.approx(expect)


def test_same_seed_same_numbers_and_streams_are_independent(frame):
    kw = dict(out=None, epsilons=[1, 4], progress=False)
    a = run_demo(frame, SCHEMA, mechanisms=["grr", "oue"], seed=7, **kw)
    b = run_demo(frame, SCHEMA, mechanisms=["oue", "grr"], seed=7, **kw)
    c = run_demo(frame, SCHEMA, mechanisms=["grr"], seed=7, **kw)
    d = run_demo(frame, SCHEMA, mechanisms=["grr"], seed=8, **kw)
    assert a.error("oue", 4, "pair") == b.error("oue", 4, "pair")
    # adding or reordering mechanisms does not change another mechanism's draws
    assert a.error("grr", 1) == b.error("grr", 1) == c.error("grr", 1)
    assert c.error("grr", 1) != d.error("grr", 1)


def test_encoded_input_and_sampling(frame):
    codes = SCHEMA.encode(frame)
    result = run_demo(codes, SCHEMA, out=None, n=100, epsilons=[2], mechanisms=["grr"],
                      missing_rate=0.5, progress=False)
    assert result.n == 100
    assert "random sample of 100" in result.source
    # 'colour' and 'flag' were complete: now each cell is missing with probability 0.5, so their
    # missing shares lie within 4 standard errors (sqrt(0.25 / 100) = 0.05) of 0.5
    assert abs(result.missing[0] - 0.5) < 4 * 0.05 and abs(result.missing[2] - 0.5) < 4 * 0.05


def test_synthetic_default_population(tmp_path):
    result = run_demo(out=None, n=500, epsilons=[2], mechanisms=["grr"], progress=False,
                      sizes=(2, 3, 4), missing_rate=0.25)
    assert [a.size for a in result.schema] == [2, 3, 4]
    # MCAR at 0.25 on 500 x 3 cells: the share missing is within 4 standard errors of 0.25
    se = np.sqrt(0.25 * 0.75 / 1500)
    assert abs(result.missing.mean() - 0.25) < 4 * se


@pytest.mark.slow
def test_report_written_with_every_section(frame, tmp_path):
    result = run_demo(frame, SCHEMA, out=tmp_path / "rep", epsilons=[1, 8], mechanisms=["grr"],
                      progress=False)
    assert isinstance(result, DemoResult) and result.report == tmp_path / "rep" / "index.html"
    page = result.report.read_text()
    for title in ("Overview", "Data", "Estimated distributions", "Error against budget", "Numbers",
                  "Collection: contingency tables", "Population uniqueness",
                  "Linkage: re-identifying an anonymized release",
                  "Re-identification risk bounds (PIE)", "Run parameters"):
        assert f"<h2>{title}</h2>" in page
    for png in re.findall(r'src="([^"]+)"', page):
        assert (tmp_path / "rep" / png).read_bytes()[:4] == b"\x89PNG"
    assert "seed" in page and "numpy" in page


def test_summary_has_one_row_per_mechanism_and_a_column_per_budget(frame):
    result = run_demo(frame, SCHEMA, out=None, epsilons=[1, 2, 8], mechanisms=["grr", "subset"],
                      progress=False)
    lines = result.summary().splitlines()
    for mech in ("grr", "subset", "(uniform)"):
        rows = [ln for ln in lines if ln.startswith(mech)]
        assert len(rows) == 2 and all(len(r.split()) == 4 for r in rows)
    assert f"{result.error('subset', 8, 'pair'):.4f}" in result.summary()


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(epsilons=[0]), MechanismError, "epsilon"),
    (dict(epsilons=[float("nan")]), MechanismError, "epsilon"),
    (dict(epsilons=[]), MechanismError, "budget"),
    (dict(mechanisms=["laplace"]), MechanismError, "laplace"),
    (dict(missing_rate=1.0), ValueError, "missing_rate"),
    (dict(n=1), ValueError, "n must"),
    (dict(methods=["inversion"]), ValueError, "methods"),
    (dict(methods=[]), ValueError, "methods"),
])
def test_bad_parameters(frame, kwargs, error, match):
    with pytest.raises(error, match=match):
        run_demo(frame, SCHEMA, out=None, progress=False, **kwargs)


def test_attribute_without_answers_is_named(frame):
    frame = frame.assign(flag="")
    with pytest.raises(SchemaError, match="flag"):
        run_demo(frame, SCHEMA, out=None, progress=False, mechanisms=["grr"], epsilons=[1])


def test_single_attribute_is_refused(frame):
    with pytest.raises(SchemaError, match="at least 2 attributes"):
        run_demo(frame[["flag"]], SCHEMA.select(["flag"]), out=None, progress=False)


def test_encoded_data_needs_a_schema(frame):
    with pytest.raises(SchemaError, match="schema"):
        run_demo(SCHEMA.encode(frame), None, out=None, progress=False)


def test_default_budgets_are_documented():
    from reidrisk import demo

    text = demo.__doc__ + GUIDE.read_text()
    assert " ".join(f"{e:g}" for e in DEFAULT_EPSILONS) in GUIDE.read_text()
    assert "whole-record" in text or "whole record" in text



def _guide_default_summary() -> list[str]:
    """The rows of the default run's summary that the guide prints (its "..." rows left out)."""
    found = re.search(r"The default run \(seed 0\) prints:\s*```text\n(.*?)```", GUIDE.read_text(),
                      flags=re.S)
    assert found, "the guide no longer prints the default run's summary"
    return [line for line in found.group(1).splitlines() if line.strip() and line.strip() != "..."]


@pytest.mark.slow
def test_the_guide_prints_the_default_runs_own_summary():
    """The guide shows the summary the default ``reidrisk demo`` (seed 0) prints; every row it
    shows must be one the run prints, so a change of an estimator's default cannot leave the
    guide's numbers (and its reading of them) behind."""
    shown = _guide_default_summary()
    assert len(shown) >= 6
    printed = run_demo(out=None, progress=False).summary().splitlines()
    stale = [line for line in shown if line not in printed]
    assert not stale, ("the guide's summary rows differ from the default run's; replace them with "
                       "the run's:\n" + "\n".join(printed))


README = GUIDE.parents[1] / "README.md"

SKIPPED_COMMANDS = {
    "make demo": "runs the default demo, which tests/test_cli.py runs through the same command line",
    "make test": "runs this test suite",
    "python3 -m venv .venv": "creates the environment these tests already run in",
    ".venv/bin/pip install -e '.[test]'": "installs the package these tests already import",
    "reidrisk collect fit reports/ -o model.json --chunk-rows 500000":
        "needs a directory of partitions; tests/collect/test_partitioned.py runs it on one",
    "reidrisk collect fit s3://bucket/survey/ -o model.json --scheduler tcp://host:8786":
        "needs a bucket and a Dask scheduler; tests/collect/test_dask.py runs it on a LocalCluster",
}
"""Shell commands of the guide and README that the example test does not run, and why."""


def _fenced(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def _shell_commands(block: str) -> list[str]:
    """The commands of a ``bash`` block: continuation lines joined, comments and blanks dropped."""
    import shlex

    out = []
    for line in block.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        if words:
            out.append(shlex.join(words))
    return out


@pytest.fixture
def guide_files(tmp_path, monkeypatch):
    """The files the guide's commands name, in a fresh folder that is the working directory."""
    from reidrisk.data.synthetic import make_population

    monkeypatch.chdir(tmp_path)
    pop = make_population(5000, [3, 4, 2, 3], dependence=0.5, rng=1)
    pop.schema.save("schema.json")
    people = pop.schema.decode(pop.codes)
    people.to_csv("people.csv", index=False)
    people.sample(frac=0.2, random_state=1).to_csv("sample.csv", index=False)
    rng = np.random.default_rng(2)
    survey = pd.DataFrame({"smoker": rng.choice(["no", "yes", ""], 400),
                           "region": rng.choice(["north", "south", "east", "west", "?"], 400),
                           "age": rng.integers(18, 90, 400).astype(str)})
    survey.to_csv("survey.csv", index=False)
    Schema.infer(survey).save("survey.schema.json")  # the guide uses it before it infers it
    # pie: genuine scores above impostor scores; traces of 30 users over regions 1..1024
    pd.DataFrame({"score": rng.normal(2.0, 1.0, 300)}).to_csv("genuine.csv", index=False)
    pd.DataFrame({"score": rng.normal(0.0, 1.0, 300)}).to_csv("impostor.csv", index=False)
    for name, seed in (("ref.csv", 3), ("org.csv", 4)):
        r = np.random.default_rng(seed)
        users = np.repeat(np.arange(1, 31), 6)
        home = np.random.default_rng(5).integers(1, 1025, (31, 3))
        pd.DataFrame({"user_id": users, "time_id": np.tile(np.arange(1, 7), 30),
                      "reg_id": home[users, r.integers(0, 3, users.size)]}).to_csv(name, index=False)
    return tmp_path


@pytest.mark.slow
def test_every_shell_example_of_the_guide_and_readme_runs(guide_files, fast_collect_section):
    """Every command of every ``bash`` block runs, in document order: ``reidrisk ...`` through the
    command line, ``python -c ...`` in a subprocess; a block of another language whose first line
    is ``# FILE`` (e.g. ``# pipeline.toml``) is written to FILE first, as a reader would."""
    import subprocess
    import sys

    from click.testing import CliRunner

    from reidrisk.cli import cli

    ran, seen = [], []
    for doc in (README, GUIDE):
        for lang, block in re.findall(r"```(\w*)\n(.*?)```", doc.read_text(), flags=re.S):
            first = block.splitlines()[0] if block.strip() else ""
            if lang not in ("bash", "python", "text", "json") and re.fullmatch(r"# [\w.-]+", first):
                (guide_files / first[2:]).write_text(block)
                continue
            if lang != "bash":
                continue
            for command in _shell_commands(block):
                seen.append(command)
                if command in SKIPPED_COMMANDS:
                    continue
                words = shlex_split(command)
                if words[0] in ("python", "python3") and words[1:2] == ["-c"]:
                    proc = subprocess.run([sys.executable, "-c", words[2]], capture_output=True,
                                          text=True, cwd=guide_files)
                    assert proc.returncode == 0, f"{command}\n{proc.stderr}"
                    ran.append(command)
                    continue
                assert words[0] == "reidrisk", (
                    f"the example {command!r} is neither run by this test nor listed in "
                    "SKIPPED_COMMANDS with a reason")
                result = CliRunner().invoke(cli, words[1:])
                assert result.exit_code == 0, f"{command}\n{result.output}"
                ran.append(command)
    assert any(c.startswith("reidrisk collect simulate") for c in ran) and len(ran) >= 10
    assert (guide_files / "scores.csv").is_file() and (guide_files / "synth.csv").is_file()
    unused = [c for c in SKIPPED_COMMANDS if c not in seen]
    assert not unused, f"SKIPPED_COMMANDS lists commands no document has: {unused}"


def shlex_split(command: str) -> list[str]:
    import shlex

    return shlex.split(command)


def test_guide_json_example_is_a_valid_schema():
    import json

    (block,) = _fenced(GUIDE.read_text(), "json")
    schema = Schema.from_dict(json.loads(block))
    assert schema.names == ["sex", "age"]


@pytest.mark.slow
def test_guide_python_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    blocks = _fenced(GUIDE.read_text(), "python")
    assert blocks, "the guide has no Python example"
    namespace: dict = {}
    for block in blocks:  # every Python block runs, in order, in one namespace
        exec(compile(block, str(GUIDE), "exec"), namespace)
    # the values the guide shows in its comments
    assert namespace["codes"].tolist() == [[0, 2], [1, -1], [-1, 3], [0, 0]]
    assert (tmp_path / "small-report" / "index.html").is_file()



@pytest.mark.slow
def test_uniform_guess_is_drawn_on_both_error_plots(frame, monkeypatch):
    from reidrisk.report import plots

    calls = []
    original = plots.plot_error_curves

    def spy(table, value="js", **kwargs):
        calls.append((value, kwargs.get("reference")))
        return original(table, value, **kwargs)

    monkeypatch.setattr(plots, "plot_error_curves", spy)
    result = run_demo(frame, SCHEMA, out=None, epsilons=[1, 4], mechanisms=["grr"], progress=False)
    result.sections()
    refs = dict(calls)
    assert refs["js"]["marginal"] == result.reference["marginal"]
    # the TV reference is the mean total variation of the uniform guess from the truth
    expect = np.mean([0.5 * np.abs(t - 1 / t.size).sum() for t in result.truth])
    assert refs["tv"] == {"marginal": pytest.approx(expect), "pair": result.reference["pair_tv"]}


@pytest.mark.slow
def test_report_title_and_uniqueness_population_before_the_removed_values(tmp_path,
                                                                         fast_collect_section):
    from reidrisk.demo import REPORT_TITLE

    # 600 synthetic people, 30% of values then removed: about 0.7^3 = 34% of records stay
    # complete, but the people (the uniqueness section's population) are all 600
    result = run_demo(out=tmp_path / "rep", n=600, epsilons=[4], mechanisms=["grr"], progress=False,
                      sizes=(2, 3, 4))
    page = result.report.read_text(encoding="utf-8")
    assert f"<h1>{REPORT_TITLE}</h1>" in page
    assert "<h2>Population uniqueness</h2>" in page
    assert "population of 600 people" in page
    assert "for the paper&#39;s method" in page or "for the paper's method" in page


def test_every_report_section_shows_progress_while_it_runs(monkeypatch):
    # each capability's section and the writing of the report run inside a Stage (the time it
    # has been running, on a terminal or as plain lines), not in silence after the first bar
    import reidrisk.demo as demo_module
    from reidrisk.report import progress

    running: list[str] = []
    stages: list[str] = []

    class Recorder(progress.Stage):
        def __enter__(self):
            stages.append(self.desc)
            return self

        def __exit__(self, *exc):
            return None

    def section(name):
        return lambda *args: running.append(f"{name} in {stages[-1]}")

    monkeypatch.setattr(progress, "Stage", Recorder)
    for name in ("collect", "uniqueness", "linkage", "pie"):
        monkeypatch.setattr(demo_module, f"_{name}_section", section(name))
    codes = np.zeros((4, len(SCHEMA)), dtype=np.int64)
    demo_module._capability_sections(SCHEMA, codes, codes, 0, lambda msg: None, progress=True)
    assert running == ["collect in report section 1/4, collection",
                       "uniqueness in report section 2/4, uniqueness",
                       "linkage in report section 3/4, linkage",
                       "pie in report section 4/4, PIE"]
