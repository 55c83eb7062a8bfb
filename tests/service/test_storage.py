"""Storage: versioned migrations, SQLite durability settings, the default data directory."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from reidrisk.service import migrations as m
from reidrisk.service.storage import Storage, database_url


def test_sqlite_in_wal_mode_with_full_sync_in_the_data_dir(tmp_path):
    url = database_url(None, tmp_path / "data")
    assert (tmp_path / "data").is_dir() and url.endswith("reidrisk.sqlite3")
    s = Storage(url)
    with s.engine.connect() as c:
        assert c.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert c.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL
    s.close()


def test_migrations_are_versioned_and_applied_once(tmp_path):
    url = database_url(None, tmp_path)
    s = Storage(url)
    assert s.version == m.LATEST
    s.close()
    s = Storage(url)  # reopening migrates nothing
    with s.engine.connect() as c:
        assert c.execute(sa.select(m.schema_version.c.version)).scalars().all() == [m.LATEST]
    with s.engine.begin() as c:
        c.execute(sa.update(m.schema_version).values(version=m.LATEST + 1))
    s.close()
    with pytest.raises(m.MigrationError, match="newer"):
        Storage(url)


def test_postgres_urls_use_psycopg():
    assert database_url("postgresql://u@h/db", None) == "postgresql+psycopg://u@h/db"


def test_serve_names_a_database_it_cannot_open(tmp_path):
    from click.testing import CliRunner

    from reidrisk.cli import cli

    bad = f"sqlite:///{tmp_path}/missing-dir/reidrisk.sqlite3"
    res = CliRunner().invoke(cli, ["serve", "--database-url", bad])
    assert res.exit_code != 0 and "cannot open the database" in res.output
    assert "Traceback" not in res.output
