"""reidrisk.service.cli: ``reidrisk serve``."""

import socket

from click.testing import CliRunner

from reidrisk.cli import cli
from reidrisk.service.cli import _redact


def test_database_url_is_printed_without_its_password():
    assert _redact("postgresql://user:s3cret@db.example:5432/r") == \
        "postgresql://user@db.example:5432/r"
    assert _redact("sqlite:////data/reidrisk.db") == "sqlite:////data/reidrisk.db"


def test_serve_is_a_root_command_with_its_options():
    r = CliRunner().invoke(cli, ["serve", "--help"])
    assert r.exit_code == 0, r.output
    for option in ("--data-dir", "--database-url", "--admin-token", "--code-rate", "--port"):
        assert option in r.output


def _assert_refused(res, fragment):
    """Exit code 2, one ``Error:`` line, and the service never said it runs."""
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and "service on" not in res.output
    errors = [line for line in res.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and fragment in errors[0], res.output


def test_serve_refuses_a_short_admin_token_and_leaves_no_database(tmp_path):
    data = tmp_path / "data"
    res = CliRunner().invoke(cli, ["serve", "--data-dir", str(data), "--admin-token", "x"])
    _assert_refused(res, "at least 16 characters")
    assert not data.exists()


def test_serve_refuses_a_bad_database_url_with_exit_code_2(tmp_path):
    res = CliRunner().invoke(cli, ["serve", "--database-url", "nosuchdb://x/y", "--port", "0"])
    _assert_refused(res, "cannot open the database nosuchdb://x/y")


def test_serve_refuses_a_busy_port_before_it_runs_and_creates_nothing(tmp_path):
    data = tmp_path / "data"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        res = CliRunner().invoke(cli, ["serve", "--data-dir", str(data), "--port", str(port),
                                       "--admin-token", "0123456789abcdef0123"])
    _assert_refused(res, f"cannot listen on 127.0.0.1:{port}")
    assert not data.exists()
