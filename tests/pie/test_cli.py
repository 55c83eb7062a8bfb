"""``reidrisk pie bound`` and ``reidrisk pie calibrate`` through the root command."""

import json
import math

import pytest
from click.testing import CliRunner

from reidrisk.cli import cli
from reidrisk.pie import bounds as b


def run(*args):
    return CliRunner().invoke(cli, ["pie", *args])


def test_bound_json_matches_the_library():
    r = run("bound", "-e", "0.5", "-e", "3", "--users", "2000", "--domain", "1024", "--json")
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)
    assert [row["epsilon"] for row in rows] == [0.5, 3.0]
    for row in rows:
        assert row["alpha_bits"] == pytest.approx(b.alpha_rr(row["epsilon"], 2000, 1024))
        assert row["alpha_ldp_bits"] == pytest.approx(b.alpha_ldp(row["epsilon"], 2000))
        best = min(row["alpha_bits"], row["alpha_ldp_bits"])
        assert row["bayes_error_bound"] == pytest.approx(b.bayes_error_bound(best, 2000))


@pytest.mark.parametrize("command", [
    ["bound", "-e", "2", "--users", "2000", "--domain", "1024", "--json"],
    ["calibrate", "--users", "2000", "--domain", "1024", "--json"],
])
def test_grr_is_the_name_of_randomized_response_and_rr_its_alias(command):
    new = CliRunner().invoke(cli, ["pie", *command, "-m", "grr"])
    old = CliRunner().invoke(cli, ["pie", *command, "-m", "rr"])
    default = CliRunner().invoke(cli, ["pie", *command])
    assert new.exit_code == old.exit_code == default.exit_code == 0, new.output + old.output
    assert new.stdout == old.stdout == default.stdout
    assert "deprecated; use --mechanism grr" in old.stderr and not new.stderr
    assert "[grr|glh|ldp]" in CliRunner().invoke(cli, ["pie", command[0], "--help"]).output


def test_bound_glh_default_g_and_releases_table():
    r = run("bound", "-e", "2", "-n", "500", "-k", "100", "-m", "glh", "-t", "3", "--json")
    row = json.loads(r.output)[0]
    assert row["g"] == 8  # round(e^2 + 1)
    assert row["alpha_bits"] == pytest.approx(b.alpha_glh(2.0, 500, 100, 8, releases=3))
    text = run("bound", "-e", "2", "-n", "500", "-k", "100", "-m", "glh", "-g", "4")
    assert text.exit_code == 0 and "lambda" in text.output and "Bayes error" in text.output
    assert f"{b.alpha_glh(2.0, 500, 100, 4):.6g}" in text.output


def test_calibrate_rr_and_glh():
    r = run("calibrate", "--target-error", "0.9", "--users", "2000", "--domain", "1024", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    c = b.calibrate(0.9, 2000, 1024, "rr")
    assert d["epsilon"] == pytest.approx(c.epsilon) and d["error_bound"] >= 0.9
    g = run("calibrate", "--users", "2000", "--domain", "1024", "--mechanism", "glh")
    assert g.exit_code == 0, g.output
    assert f"epsilon: {c.epsilon:.6g}" in g.output and "g: 1024" in g.output
    assert "certified by: Thm 4.4" in g.output


def test_calibrate_inf_epsilon_is_json_null():
    # target 0: the bound 1 - (alpha + 1)/log n with alpha <= log |X| = 1 stays >= 0 for n >= 4
    r = run("calibrate", "--target-error", "0", "--users", "4", "--domain", "2", "--json",
            "--no-ldp-bound")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["epsilon"] is None


@pytest.mark.parametrize("args, needle", [
    (["bound", "-e", "0", "-n", "10", "-k", "10"], "0.0"),
    (["bound", "-e", "-1", "-n", "10", "-k", "10"], "-1.0"),
    (["bound", "-e", "nan", "-n", "10", "-k", "10"], "nan"),
    (["bound", "-e", "1", "-n", "1", "-k", "10"], "1"),
    (["bound", "-e", "1", "-n", "10", "-k", "1"], "1"),
    (["bound", "-e", "1", "-n", "10", "-k", "10", "-m", "oue"], "oue"),
    (["calibrate", "--target-error", "1.5", "-n", "2000", "-k", "10"], "1.5"),
    (["calibrate", "--target-error", "-0.2", "-n", "2000", "-k", "10"], "-0.2"),
    (["calibrate", "-n", "100", "-k", "10"], "n=100"),
    (["calibrate", "-n", "2000", "-k", "10", "-g", "4"], "glh"),
])
def test_bad_input_is_one_line_error(args, needle):
    r = run(*args)
    assert r.exit_code == 2
    assert "Traceback" not in r.output, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    err = [line for line in r.output.splitlines() if line.startswith("Error:")]
    assert len(err) == 1 and needle in err[0], r.output


def test_help_lists_commands():
    r = run("--help")
    assert "bound" in r.output and "calibrate" in r.output
    assert math.isfinite(b.calibrate(0.9, 2000, 1024, "glh").epsilon)
