"""`reidrisk linkage evaluate` and `anonymize` through click's CliRunner: scorecards, the round trip
anonymize -> evaluate, and one-line errors (exit code 2, no traceback, nothing written) for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import click
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from reidrisk.cli import cli
from reidrisk.data.microdata import QI_COLUMNS, SA_COLUMNS, make_microdata

QI = ",".join(QI_COLUMNS[:5])
SA = ",".join(SA_COLUMNS[:4])

PIPELINE = f"""
qi = {list(QI_COLUMNS[:5])!r}
sa = {list(SA_COLUMNS[:4])!r}

[[steps]]
step = "k_anonymize"
k = 3

[[steps]]
step = "noise"
scale = 0.05

[[steps]]
step = "shuffle"
""".replace("'", '"')


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("linkage")
    data = make_microdata(300, rng=3).data
    data.to_csv(tmp / "x.csv", index=False)
    data.iloc[:200].to_csv(tmp / "y_aligned.csv", index=False)
    (tmp / "pipe.toml").write_text(PIPELINE)
    return tmp


def run(*args):
    return CliRunner().invoke(cli, ["linkage", *map(str, args)])


def assert_clean_error(result, *fragments):
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.strip().splitlines() if line.strip()]
    assert lines[-1].startswith("Error:"), result.output
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in result.output, (fragment, result.output)


def test_anonymize_then_evaluate_round_trip(files):
    out, truth = files / "rel.csv", files / "truth.csv"
    res = run("anonymize", "--config", files / "pipe.toml", "--input", files / "x.csv",
              "--output", out, "--truth-output", truth, "--seed", 1)
    assert res.exit_code == 0, res.output
    rel = pd.read_csv(out)
    mapping = pd.read_csv(truth)["original_row"].to_numpy()
    assert len(rel) == len(mapping) <= 300
    x = pd.read_csv(files / "x.csv")
    np.testing.assert_array_equal(rel["rooms"], x["rooms"].to_numpy()[mapping])  # untouched column
    res = run("evaluate", "--original", files / "x.csv", "--release", out, "--qi", QI, "--sa", SA,
              "--truth", truth, "--json")
    assert res.exit_code == 0, res.output
    card = json.loads(res.output)
    assert [r["attack"] for r in card["rates"]] == ["E1", "E2", "E3", "E4", "EUC1", "EUC2", "assign"]
    assert card["security"]["S1_min_class"] >= 3
    assert all(0 <= r["low"] <= r["rate"] <= r["high"] <= 1 for r in card["rates"])


def test_evaluate_aligned_and_without_truth(files):
    res = run("evaluate", "--original", files / "x.csv", "--release", files / "y_aligned.csv",
              "--qi", QI, "--sa", SA, "--aligned", "--attack", "EUC1")
    assert res.exit_code == 0, res.output
    assert "EUC1" in res.output and "1.000" in res.output
    res = run("evaluate", "--original", files / "x.csv", "--release", files / "y_aligned.csv",
              "--qi", QI, "--sa", SA)
    assert res.exit_code == 0, res.output
    assert "U1 meanMAE" in res.output and "--truth" in res.output and "--aligned" in res.output


def test_missing_column(files):
    assert_clean_error(run("evaluate", "--original", files / "x.csv", "--release",
                           files / "y_aligned.csv", "--qi", QI + ",zip", "--sa", SA),
                       "x.csv", "zip")


def test_non_numeric_sa(files):
    bad = pd.read_csv(files / "y_aligned.csv")
    bad["food"] = bad["food"].astype(str)
    bad.loc[3, "food"] = "n/a"
    bad.to_csv(files / "bad_sa.csv", index=False)
    assert_clean_error(run("evaluate", "--original", files / "x.csv", "--release",
                           files / "bad_sa.csv", "--qi", QI, "--sa", SA, "--aligned"),
                       "bad_sa.csv", "'food'", "numeric", "n/a")


def test_release_longer_than_original(files):
    assert_clean_error(run("evaluate", "--original", files / "y_aligned.csv", "--release",
                           files / "x.csv", "--qi", QI, "--sa", SA),
                       "x.csv", "more than", "swapped")


def test_truth_of_wrong_length(files):
    pd.DataFrame({"original_row": np.arange(5)}).to_csv(files / "short.csv", index=False)
    assert_clean_error(run("evaluate", "--original", files / "x.csv", "--release",
                           files / "y_aligned.csv", "--qi", QI, "--sa", SA, "--truth",
                           files / "short.csv"), "short.csv", "5 rows", "200")


def test_unknown_pipeline_step_writes_nothing(files):
    (files / "bad.toml").write_text('qi = ["rooms"]\n[[steps]]\nstep = "blur"\n')
    out = files / "never.csv"
    assert_clean_error(run("anonymize", "--config", files / "bad.toml", "--input", files / "x.csv",
                           "--output", out), "bad.toml", "'blur'", "k_anonymize")
    assert not out.exists()


def test_pipeline_column_missing_writes_nothing(files):
    (files / "zip.toml").write_text('qi = ["zip"]\n[[steps]]\nstep = "k_anonymize"\nk = 2\n')
    out = files / "never2.csv"
    assert_clean_error(run("anonymize", "--config", files / "zip.toml", "--input", files / "x.csv",
                           "--output", out), "x.csv", "zip")
    assert not out.exists() and not list(files.glob(".never2*"))


def test_unknown_pipeline_parameter(files):
    (files / "param.toml").write_text('[[steps]]\nstep = "noise"\nsa = ["food"]\nscale = 1\n'
                                      'sigma = 2\n')
    assert_clean_error(run("anonymize", "--config", files / "param.toml", "--input",
                           files / "x.csv", "--output", files / "o.csv"), "sigma", "accepts")


def test_non_numeric_sa_in_anonymize_input_writes_nothing(files):
    bad = pd.read_csv(files / "x.csv")
    bad["food"] = bad["food"].astype(str)
    bad.loc[7, "food"] = "twelve"
    bad.to_csv(files / "bad_x.csv", index=False)
    out = files / "never3.csv"
    assert_clean_error(run("anonymize", "--config", files / "pipe.toml", "--input",
                           files / "bad_x.csv", "--output", out), "bad_x.csv", "'food'", "twelve")
    assert not out.exists()


def test_qi_listed_as_sa(files):
    assert_clean_error(run("evaluate", "--original", files / "x.csv", "--release",
                           files / "y_aligned.csv", "--qi", QI, "--sa", "household_size"),
                       "household_size", "--qi")


def test_parquet_original_with_integer_qi_round_trip(files):
    pytest.importorskip("pyarrow")
    data = make_microdata(300, rng=3).data                   # int64 QI columns
    data.to_parquet(files / "x.parquet", index=False)
    out, truth = files / "rel.parquet", files / "truth.parquet"
    res = run("anonymize", "--config", files / "pipe.toml", "--input", files / "x.parquet",
              "--output", out, "--truth-output", truth, "--seed", 2)
    assert res.exit_code == 0, res.output
    res = run("evaluate", "--original", files / "x.parquet", "--release", out, "--qi", QI,
              "--sa", SA, "--truth", truth, "--json", "--attack", "assign")
    assert res.exit_code == 0, res.output
    # 5% noise on 4 SA columns of 300 rows: assign links most rows through the published labels
    assert json.loads(res.output)["rates"][0]["rate"] > 0.5


def test_empty_release(files):
    pd.read_csv(files / "x.csv").iloc[:0].to_csv(files / "empty.csv", index=False)
    assert_clean_error(run("evaluate", "--original", files / "x.csv", "--release",
                           files / "empty.csv", "--qi", QI, "--sa", SA), "empty.csv", "no rows")


def _noisy_sample(files, name, rows):
    """A release of the original's ``rows`` (SA with 1% noise), written to ``name``."""
    x = pd.read_csv(files / "x.csv")
    y = x.iloc[rows].reset_index(drop=True)
    sa = SA.split(",")
    y[sa] = y[sa] * (1 + 0.01 * np.random.default_rng(0).standard_normal((len(y), len(sa))))
    y.to_csv(files / name, index=False)
    return files / name


def _rates(res):
    assert res.exit_code == 0, res.output
    return {r["attack"]: r["rate"] for r in json.loads(res.output)["rates"]}


def test_truth_keyed_by_release_row_in_any_order(files):
    rows = np.random.default_rng(1).permutation(300)[:150]
    rel = _noisy_sample(files, "sub.csv", rows)
    order = np.random.default_rng(2).permutation(150)
    pd.DataFrame({"release_row": order, "original_row": rows[order]}).to_csv(
        files / "keyed.csv", index=False)
    res = run("evaluate", "--original", files / "x.csv", "--release", rel, "--qi", QI, "--sa", SA,
              "--truth", files / "keyed.csv", "--json", "--attack", "EUC1")
    assert _rates(res)["EUC1"] > 0.9


def test_truth_problems_are_refused_with_the_fix(files):
    rows = np.sort(np.random.default_rng(3).permutation(300)[:150])
    rel = _noisy_sample(files, "sub2.csv", rows)
    cases = {
        "one_based.csv": (pd.DataFrame({"original_row": rows + 1}), ["looks 1-based", "subtract 1"]),
        "twice.csv": (pd.DataFrame({"original_row": np.r_[rows[:-1], rows[0]]}),
                      ["released rows 0 and 149", f"original row {rows[0]}", "distinct"]),
        "named.csv": (pd.DataFrame({"row": rows}), ["'original_row'", "rename"]),
        "release_row_1.csv": (pd.DataFrame({"release_row": np.arange(1, 151),
                                            "original_row": rows}), ["release_row", "1-based"]),
    }
    for name, (frame, fragments) in cases.items():
        frame.to_csv(files / name, index=False)
        assert_clean_error(run("evaluate", "--original", files / "x.csv", "--release", rel,
                               "--qi", QI, "--sa", SA, "--truth", files / name), name, *fragments)
    ok = files / "zero_based.csv"
    pd.DataFrame({"original_row": rows}).to_csv(ok, index=False)
    res = run("evaluate", "--original", files / "x.csv", "--release", rel, "--qi", QI, "--sa", SA,
              "--truth", ok, "--json", "--attack", "EUC1")
    assert _rates(res)["EUC1"] > 0.9


def test_repeated_column_in_release_is_refused(files):
    x = pd.read_csv(files / "x.csv")
    y = x.iloc[:100]
    y.insert(len(y.columns), SA.split(",")[0], y[SA.split(",")[1]], allow_duplicates=True)
    y.to_csv(files / "dup.csv", index=False)
    assert_clean_error(run("evaluate", "--original", files / "x.csv", "--release", files / "dup.csv",
                           "--qi", QI, "--sa", SA, "--aligned"), "dup.csv", "more than once")


def test_qi_spelled_differently_in_the_two_files_still_matches(files):
    x = pd.read_csv(files / "x.csv")
    y = x.iloc[:100].copy()
    q = QI.split(",")
    y[q[0]] = y[q[0]].map(lambda v: f"{float(v)}")      # 3 -> "3.0"
    y[q[1]] = y[q[1]].map(lambda v: f" {v}")             # leading space
    y.to_csv(files / "spelled.csv", index=False)
    res = run("evaluate", "--original", files / "x.csv", "--release", files / "spelled.csv",
              "--qi", QI, "--sa", SA, "--aligned", "--json", "--attack", "EUC1")
    assert _rates(res)["EUC1"] == 1.0


def test_coded_release_warns_without_the_recode_map_and_links_with_it(files):
    x = pd.read_csv(files / "x.csv")
    y = x.iloc[:150].copy()
    q = QI.split(",")
    y[q[0]] = np.where(y[q[0]] >= 3, "3+", y[q[0]].astype(str))        # a top code: read as such
    y[q[1]] = y[q[1]] // 2                                              # a code: needs the map
    y.to_csv(files / "coded.csv", index=False)
    top = int(x[q[1]].max())
    pd.DataFrame({"column": q[1], "value": [f"[{2 * c},{2 * c + 2})" for c in range(top // 2 + 1)],
                  "code": range(top // 2 + 1)}).to_csv(files / "recode.csv", index=False)
    args = ["evaluate", "--original", files / "x.csv", "--release", files / "coded.csv", "--qi", QI,
            "--sa", SA, "--aligned", "--json", "--attack", "EUC1"]
    res = run(*args)
    assert res.exit_code == 0 and "Warning:" in res.stderr and "match no original row" in res.stderr
    res = run(*args, "--recode", files / "recode.csv")
    assert res.exit_code == 0 and "Warning" not in res.stderr
    assert json.loads(res.stdout)["rates"][0]["rate"] == 1.0


def test_distance_option_is_named_in_every_rate(files):
    args = ["evaluate", "--original", files / "x.csv", "--release", files / "y_aligned.csv",
            "--qi", QI, "--sa", SA, "--aligned", "--json", "--attack", "EUC1", "--attack", "E3"]
    card = json.loads(run(*args, "--distance", "log").stdout)
    assert [r["metric"] for r in card["rates"]] == ["log", ""] and card["metric"] == "log"
    res = run(*args, "--distance", "cosine")
    assert res.exit_code == 2 and "cosine" in res.output


def _parsed(command, args):
    """The parameters `reidrisk linkage COMMAND ARGS` would run with (parsed, not run)."""
    group = cli.get_command(click.Context(cli), "linkage")
    sub = group.get_command(click.Context(group), command)
    return sub.make_context(command, list(map(str, args))).params


@pytest.mark.parametrize("args", [
    ["--qi", "a,b", "--sa", "c,d"],                                   # the former single lists
    ["--qi", "a", "--qi", "b", "--sa", "c", "--sa", "d"],             # repeated
    ["--qi", "a, b", "--sa", " c ,d"],                                # spaces around items
    ["--qi", "a", "--qi", "b", "--sa", "c,d"],                        # mixed forms
])
def test_evaluate_qi_and_sa_repeat_and_take_comma_lists(args):
    params = _parsed("evaluate", ["--original", "x.csv", "--release", "y.csv", *args])
    assert list(params["qi"]) == ["a", "b"] and list(params["sa"]) == ["c", "d"]


def test_evaluate_attack_repeats_and_takes_comma_lists():
    params = _parsed("evaluate", ["--original", "x.csv", "--release", "y.csv", "--qi", "a",
                                  "--sa", "b", "--attack", "E1,EUC1", "--attack", "assign"])
    assert list(params["attacks"]) == ["E1", "EUC1", "assign"]


def test_evaluate_repeated_qi_runs_like_the_comma_list(files):
    base = ["evaluate", "--original", files / "x.csv", "--release", files / "y_aligned.csv",
            "--aligned", "--json", "--attack", "EUC1,E1"]
    listed = run(*base, "--qi", QI, "--sa", SA)
    repeated = run(*base, *[a for c in QI.split(",") for a in ("--qi", c)],
                   *[a for c in SA.split(",") for a in ("--sa", c)])
    assert listed.exit_code == repeated.exit_code == 0, listed.output + repeated.output
    cards = [json.loads(res.stdout) for res in (listed, repeated)]
    rates = [[{k: v for k, v in r.items() if k != "seconds"} for r in card["rates"]] for card in cards]
    assert [r["attack"] for r in rates[0]] == ["EUC1", "E1"] and rates[0] == rates[1]
    assert cards[0]["utility"] == cards[1]["utility"]


def test_evaluate_empty_list_item_is_refused(files):
    assert_clean_error(run("evaluate", "--original", files / "x.csv", "--release",
                           files / "y_aligned.csv", "--qi", "rooms,,region", "--sa", SA),
                       "--qi", "empty item")


@pytest.mark.parametrize("option", ["--output", "--truth-output"])
@pytest.mark.parametrize("spelling", ["same", "dotted", "symlink"])
def test_anonymize_refuses_to_overwrite_its_input(files, tmp_path, monkeypatch, option, spelling):
    original = tmp_path / "x.csv"
    original.write_bytes((files / "x.csv").read_bytes())
    before = original.read_bytes()
    monkeypatch.chdir(tmp_path)
    given = {"same": "x.csv", "dotted": "./x.csv", "symlink": "link.csv"}[spelling]
    if spelling == "symlink":
        (tmp_path / "link.csv").symlink_to(original)
    outputs = (["--output", given] if option == "--output"
               else ["--output", "rel.csv", "--truth-output", given])
    res = run("anonymize", "--config", files / "pipe.toml", "--input", "x.csv", *outputs,
              "--seed", 1)
    assert_clean_error(res, option, "--input", repr(str(Path(given))), "'x.csv'", "another path")
    assert original.read_bytes() == before and not (tmp_path / "rel.csv").exists()


def test_anonymize_output_is_o_and_json_summarizes_the_run(files, tmp_path):
    out, truth = tmp_path / "rel.csv", tmp_path / "truth.csv"
    res = run("anonymize", "--config", files / "pipe.toml", "--input", files / "x.csv", "-o", out,
              "--truth-output", truth, "--seed", 1, "--json")
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["output"] == str(out) and summary["truth_output"] == str(truth)
    assert summary["input_rows"] == 300 and summary["rows"] == len(pd.read_csv(out)) <= 300
    assert summary["steps"][0].startswith("k_anonymize") and len(summary["steps"]) == 3
    assert summary["seed"] == 1 and "Wrote" not in res.output
