"""reidrisk.service.cli: ``reidrisk serve``."""

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


def test_serve_refuses_a_short_admin_token(tmp_path):
    from click.testing import CliRunner

    from reidrisk.cli import cli

    res = CliRunner().invoke(cli, ["serve", "--data-dir", str(tmp_path), "--admin-token", "x"])
    assert res.exit_code != 0 and "at least 16 characters" in res.output
    assert "Traceback" not in res.output
