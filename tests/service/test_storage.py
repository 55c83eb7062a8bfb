"""Storage: versioned migrations, SQLite durability settings, the default data directory."""

from __future__ import annotations

import numpy as np
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


def test_a_survey_change_raced_against_ingestion_serializes_on_the_survey_row(storage):
    """A change of the definition and a 300-report batch start together, 20 times per change:
    exactly one of the two succeeds each time, and the count tables equal a recount of the
    stored reports under the survey's final definition."""
    import threading
    import uuid

    from reidrisk.estimation.pairs import pair_counts
    from reidrisk.service.models import collected_reports
    from reidrisk.service.storage import StorageError
    from reidrisk.service.wire import SurveySpec

    from .conftest import SCHEMA, population

    base = SurveySpec.build(SCHEMA.to_dict(), {"epsilon": 4.0})
    wider = SCHEMA.to_dict()
    wider["attributes"][2]["categories"] = ["no", "yes", "former"]
    changes = [SurveySpec.build(SCHEMA.to_dict(), {"epsilon": 1.0}),   # a budget change
               SurveySpec.build(wider, {"epsilon": 4.0})]              # a schema change
    rr = base.protocol.randomize(base.schema, population(300, 5), 5)
    cells = base.canonical_cells(rr)
    outcomes = []
    for trial in range(40):
        survey = storage.create_survey(f"race {trial}", base)
        ids = [str(uuid.uuid4()) for _ in cells]
        start = threading.Barrier(2)
        result: dict = {}

        def run(name, call) -> None:
            start.wait()
            try:
                call()
                result[name] = True
            except StorageError as exc:
                result[name] = exc

        def ingest() -> None:
            run("ingest", lambda: storage.ingest(survey, ids, cells, rr))

        def change() -> None:
            run("change", lambda: storage.update_survey(survey.id, None, changes[trial % 2]))

        threads = [threading.Thread(target=f) for f in (ingest, change)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if result["change"] is not True:
            assert "new survey" in str(result["change"]).lower()
        outcomes.append((result["ingest"] is True, result["change"] is True))
        final = storage.survey(survey.id)
        if result["ingest"] is True:
            assert final.spec.to_json() == base.to_json() and final.n_reports == 300
        got = storage.counts(final)
        want = pair_counts(collected_reports(storage, final).reports)
        assert np.array_equal(got.gram, want.gram) and np.array_equal(got.n_pair, want.n_pair)
    assert all(a != b for a, b in outcomes), outcomes  # one of the two, never both or neither
