"""reidrisk.pie.empirical_cli: ``reidrisk pie pse`` and ``reidrisk pie traces`` give the library's
numbers on the same files and turn bad input into one line (moved from test_pse.py and
test_traces.py)."""

import numpy as np
import pytest

from reidrisk.data.traces import Sequences
from reidrisk.pie.pse import pse, read_scores
from reidrisk.pie.traces import match

from .test_pse import gaussian_kl_bits
from .test_traces import synthetic_users

# ---- command line: reidrisk pie pse ----------------------------------------------------------

def _run_pse(args):
    """``reidrisk pie pse ARGS`` through the root command, which turns user errors into one line."""
    from click.testing import CliRunner

    from reidrisk.cli import cli

    return CliRunner().invoke(cli, ["pie", "pse", *args])


def test_cli_pse_text_and_json(tmp_path):
    rng = np.random.default_rng(0)
    g, i = tmp_path / "g.csv", tmp_path / "i.csv"
    g.write_text("score\n" + "\n".join(f"{v:.6f}" for v in rng.normal(1, 0.5, 3000)) + "\n")
    i.write_text("score\n" + "\n".join(f"{v:.6f}" for v in rng.normal(0, 1.5, 3000)) + "\n")
    res = _run_pse(["--genuine", str(g), "--impostor", str(i), "--bootstrap", "20"])
    assert res.exit_code == 0, res.output
    assert "PSE = D(f_G || f_I) = " in res.output and "bits" in res.output
    res = _run_pse(["--genuine", str(g), "--impostor", str(i), "--bootstrap", "20", "--json"])
    import json

    out = json.loads(res.output)
    # the library call on the same numbers, same seed: the command adds nothing of its own
    want = pse(read_scores(g), read_scores(i), bootstrap=20, rng=0)
    assert out["pse_bits"] == pytest.approx(want.bits)
    assert out["low"] == pytest.approx(want.low) and out["n_genuine"] == 3000
    assert abs(out["pse_bits"] - gaussian_kl_bits(1, 0.5, 0, 1.5)) < 0.2  # ~4 sd at N = 3,000


def test_cli_pse_neighbours_is_the_fixed_k_and_k_its_former_name(tmp_path):
    rng = np.random.default_rng(1)
    g, i = tmp_path / "g.csv", tmp_path / "i.csv"
    g.write_text("score\n" + "\n".join(f"{v:.6f}" for v in rng.normal(1, 0.5, 500)) + "\n")
    i.write_text("score\n" + "\n".join(f"{v:.6f}" for v in rng.normal(0, 1.5, 500)) + "\n")
    base = ["--genuine", str(g), "--impostor", str(i), "--bootstrap", "0", "--json"]
    new, old = _run_pse([*base, "--neighbours", "5"]), _run_pse([*base, "--k", "5"])
    assert new.exit_code == old.exit_code == 0, new.output + old.output
    import json

    want = pse(read_scores(g), read_scores(i), k=5, bootstrap=0, rng=0)
    assert json.loads(new.stdout)["pse_bits"] == pytest.approx(want.bits)
    assert new.stdout == old.stdout and "--k is deprecated; use --neighbours" in old.stderr


def test_cli_pse_bad_input_is_one_line(tmp_path):
    g = tmp_path / "g.csv"
    g.write_text("score\n1\n2\n3\n")
    empty = tmp_path / "empty.csv"
    empty.write_text("score\n")
    bad = tmp_path / "bad.csv"
    bad.write_text("score\n1\n2\nnan?\n")
    for other, pattern in ((empty, "empty.csv' holds no scores"),
                           (bad, "bad.csv', row 4: score 'nan?'"),
                           (tmp_path / "nope.csv", "nope.csv")):
        res = _run_pse(["--genuine", str(g), "--impostor", str(other)])
        assert res.exit_code == 2, res.output
        assert pattern in res.output
        assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1


def test_cli_pse_is_a_reidrisk_pie_command(tmp_path):
    from click.testing import CliRunner

    from reidrisk.cli import cli

    g, i = tmp_path / "g.csv", tmp_path / "i.csv"
    g.write_text("score\n1\n2\n3\n4\n5\n")
    i.write_text("score\n0\n1.5\n0.5\n2.5\n")
    res = CliRunner().invoke(cli, ["pie", "pse", "--genuine", str(g), "--impostor", str(i),
                                   "--bootstrap", "0", "--json"])
    assert res.exit_code == 0, res.output
    assert '"pse_bits"' in res.output
    import json

    # the routed command gives the library's estimate on the same files (genuine and impostor
    # not swapped: D(f_G || f_I) is not symmetric)
    out = json.loads(res.output)
    assert out["pse_bits"] == pytest.approx(pse(read_scores(g), read_scores(i), bootstrap=0).bits,
                                            rel=1e-12)
    assert out["pse_bits"] != pytest.approx(pse(read_scores(i), read_scores(g), bootstrap=0).bits)
    assert (out["n_genuine"], out["n_impostor"], out["low"]) == (5, 4, None)
    res = CliRunner().invoke(cli, ["pie", "traces", "--help"])
    assert res.exit_code == 0 and "--background" in res.output


# ---- command line: reidrisk pie traces -------------------------------------------------------

def _write_traces(path, seqs, users, labels):
    rows = ["user_id,time_id,reg_id"]
    for u, s in zip(users, seqs):
        rows += [f"{u},{t + 1},{labels[c]}" for t, c in enumerate(s)]
    path.write_text("\n".join(rows) + "\n")
    return path


def _run_traces(args):
    """``reidrisk pie traces ARGS`` through the root command, which turns user errors into one line."""
    from click.testing import CliRunner

    from reidrisk.cli import cli

    return CliRunner().invoke(cli, ["pie", "traces", *args])


def test_cli_traces_matches_the_library(tmp_path):
    import json

    rng = np.random.default_rng(8)
    n, k = 80, 100
    seqs = synthetic_users(n, k, 20, rng)
    users = np.arange(1, n + 1)
    labels = np.arange(1, k + 1)
    b = _write_traces(tmp_path / "b.csv", [s[:10] for s in seqs], users, labels)
    r = _write_traces(tmp_path / "r.csv", [s[10:] for s in seqs], users, labels)
    res = _run_traces(["--background", str(b), "--release", str(r), "--regions", str(k), "--json",
                "--bootstrap", "10"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    background = Sequences.from_lists([s[:10] for s in seqs], k, users=users, labels=labels)
    personal = Sequences.from_lists([s[10:] for s in seqs], k, users=users, labels=labels)
    want = match(background, personal, bootstrap=10, rng=0)
    assert out["identification_error_rate"] == want.identification.error_rate
    assert out["pse_bits"] == pytest.approx(want.pse.bits)
    assert out["n_release"] == n
    res = _run_traces(["--background", str(b), "--release", str(r), "--model", "visit", "--events", "1"])
    assert res.exit_code == 0, res.output
    assert "identification error rate" in res.output


def test_cli_traces_bad_input_is_one_line(tmp_path):
    b = _write_traces(tmp_path / "b.csv", [[0, 1], [2, 3]], [1, 2], np.arange(1, 5))
    cases = [
        (_write_traces(tmp_path / "reg.csv", [[0, 9]], [1], np.arange(1, 11)), ["--regions", "4"],
         "reg.csv', row 3: unknown region reg_id=10"),
        (_write_traces(tmp_path / "usr.csv", [[0, 1]], [5], np.arange(1, 5)), [],
         "usr.csv': unknown user user_id=5"),
        (tmp_path / "empty.csv", [], "empty.csv' has a header but no"),
    ]
    (tmp_path / "empty.csv").write_text("user_id,time_id,reg_id\n")
    for release, extra, pattern in cases:
        res = _run_traces(["--background", str(b), "--release", str(release), *extra])
        assert res.exit_code == 2, res.output
        assert pattern in res.output, res.output
        assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1
    res = _run_traces(["--background", str(b), "--release", str(b), "--delta", "2"])
    assert res.exit_code == 2 and "delta=2.0 must be in (0, 1)" in res.output
