"""reidrisk.service.migrations: the database schema versions."""

import pytest
import sqlalchemy as sa

from reidrisk.service.migrations import LATEST, MigrationError, current_version, migrate


def test_migrate_an_empty_database_then_again():
    engine = sa.create_engine("sqlite://")
    with engine.connect() as conn:
        assert current_version(conn) == 0
    assert migrate(engine) == LATEST
    assert migrate(engine) == LATEST  # nothing left to apply
    with engine.connect() as conn:
        assert current_version(conn) == LATEST
        assert sa.inspect(conn).has_table("surveys") and sa.inspect(conn).has_table("reports")


def test_a_database_of_a_newer_version_is_refused():
    engine = sa.create_engine("sqlite://")
    migrate(engine)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE schema_version SET version = :v"), {"v": LATEST + 1})
    with pytest.raises(MigrationError, match=f"schema version {LATEST + 1}, newer"):
        migrate(engine)
