"""reidrisk.service.migrations: the database schema versions."""

import uuid

import pytest
import sqlalchemy as sa

from reidrisk.estimation.pairs import pair_counts
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


def _version_1(engine: sa.Engine) -> None:
    """A database as version 1 of the schema wrote it: a survey, a code and two reports."""
    from reidrisk.service.wire import SurveySpec

    from .conftest import SCHEMA

    v1 = sa.MetaData()
    sa.Table("schema_version", v1, sa.Column("id", sa.Integer, primary_key=True),
             sa.Column("version", sa.Integer, nullable=False))
    sa.Table("surveys", v1, sa.Column("id", sa.String(64), primary_key=True),
             sa.Column("name", sa.Text, nullable=False), sa.Column("spec", sa.Text, nullable=False),
             sa.Column("revision", sa.Integer, nullable=False),
             sa.Column("created_at", sa.Float, nullable=False))
    sa.Table("credentials", v1, sa.Column("id", sa.String(64), primary_key=True),
             sa.Column("survey_id", sa.String(64), sa.ForeignKey("surveys.id"), nullable=False),
             sa.Column("kind", sa.String(16), nullable=False),
             sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
             sa.Column("label", sa.Text, nullable=False),
             sa.Column("created_at", sa.Float, nullable=False),
             sa.Column("revoked_at", sa.Float, nullable=True))
    sa.Table("reports", v1, sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
             sa.Column("survey_id", sa.String(64), sa.ForeignKey("surveys.id"), nullable=False),
             sa.Column("report_id", sa.String(36), nullable=False),
             sa.Column("credential_id", sa.String(64), nullable=True),
             sa.Column("received_at", sa.Float, nullable=False),
             sa.Column("cells", sa.Text, nullable=False),
             sa.UniqueConstraint("survey_id", "report_id"))
    sa.Table("counts", v1, sa.Column("survey_id", sa.String(64), sa.ForeignKey("surveys.id"),
                                     primary_key=True),
             sa.Column("n", sa.BigInteger, nullable=False),
             sa.Column("gram", sa.LargeBinary, nullable=False),
             sa.Column("n_pair", sa.LargeBinary, nullable=False))
    spec = SurveySpec.build(SCHEMA.to_dict(), {"epsilon": 4.0})
    rr = spec.decode([["1", None, None], [None, None, "0"]])
    pc = pair_counts(rr)
    v1.create_all(engine)
    with engine.begin() as conn:
        t = v1.tables
        conn.execute(sa.insert(t["schema_version"]).values(id=1, version=1))
        conn.execute(sa.insert(t["surveys"]).values(id="s1", name="old", spec=spec.to_json(),
                                                    revision=1, created_at=0.0))
        conn.execute(sa.insert(t["credentials"]).values(
            id="c1", survey_id="s1", kind="code", token_hash="h" * 64, label="",
            created_at=0.0))
        conn.execute(sa.insert(t["reports"]), [
            {"survey_id": "s1", "report_id": f"00000000-0000-4000-8000-00000000000{i}",
             "credential_id": "c1", "received_at": 0.0, "cells": c}
            for i, c in enumerate(['["01",null,null]', '[null,null,"0"]'])])  # as sent
        conn.execute(sa.insert(t["counts"]).values(
            survey_id="s1", n=2, gram=pc.gram.astype("<i8").tobytes(),
            n_pair=pc.n_pair.astype("<i8").tobytes()))


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_version_1_database_with_reports_upgrades(backend, tmp_path):
    """Quotas, withdrawals and the audit log are added; stored cells get their canonical
    spelling."""
    from reidrisk.service.storage import Storage, database_url

    from .conftest import _pg_database

    url, drop = (f"sqlite:///{tmp_path / 'old.sqlite3'}", None) if backend == "sqlite" \
        else _pg_database()
    try:
        url = database_url(url, None)
        engine = sa.create_engine(url)
        _version_1(engine)
        engine.dispose()
        s = Storage(url)
        try:
            assert s.version == LATEST == 3
            survey = s.survey("s1")
            assert survey.n_reports == 2 and survey.counts_version == 0
            # the old code keeps no limit (it was issued without one) and knows its reports
            (code,) = s.credentials("s1")
            assert (code.quota, code.used) == (None, 2)
            assert len(s.report_ids("s1")) == 2 and s.audit("s1") == []
            assert s.report_cells("s1")[1] == [["1", None, None], [None, None, "0"]]
            new, _ = s.issue("s1", "code")
            rr = survey.spec.decode([["0", None, None]])
            res = s.ingest(survey, [str(uuid.uuid4())], [["0", None, None]], rr, new.id)
            assert (res.accepted, res.n_reports) == (1, 3)
            assert s.survey("s1").counts_version == 1
            assert s.withdraw("s1", "c1").withdrawn == 2 and s.survey("s1").n_reports == 1
        finally:
            s.close()
    finally:
        if drop is not None:
            drop()
