"""The database schema of the collection service and its versioned migrations.

The schema is SQLAlchemy Core metadata, the same on SQLite and PostgreSQL. ``schema_version`` holds
one row: the number of migrations applied. ``MIGRATIONS`` is an ordered list; migration ``i``
(1-based) takes the schema from version ``i - 1`` to ``i``. ``migrate(engine)`` applies the
missing ones, each in its own transaction with the version bump, so a crash between two leaves a
consistent, resumable state. A database newer than this code is refused (never downgraded).

Tables (version 1)
------------------
* ``surveys``: one row per survey: schema, protocol and each attribute's mechanism parameters
  (JSON, the reports-file metadata of ``reidrisk.collect.reports_io``), ``revision`` (bumped by
  every change; a survey is immutable once it has reports).
* ``credentials``: submission codes and researcher tokens, stored only as SHA-256 hashes.
* ``reports``: the append-only log. ``(survey_id, report_id)`` is unique: the client-generated id
  makes a retry idempotent. ``cells`` is the report in the reports-file cell format (JSON list in
  schema order, null = missing).
* ``counts``: per survey, the Gram matrix of report memberships and the presence Gram matrix
  (``reidrisk.estimation.pairs.PairCounts``), folded in by the transaction that stores the reports.

Version 2 (one person, one report)
----------------------------------
* ``credentials.quota``: the most reports a submission code may store (1 for a person's code,
  the declared number for an institution's); ``NULL`` = no limit, what codes issued before
  version 2 keep (they were issued without one). ``credentials.used``: reports it has stored
  (set from the reports log for existing codes).
* ``reports.withdrawn_at``: when the survey's owner withdrew the report (its code's reports were
  taken out of the count tables); ``NULL`` for a counted report. A withdrawn report keeps its row,
  so a retry of its id is still recognized and not stored again.
* ``counts.version``: bumped by every change of the count tables (the fitted-model cache's key).
* ``audit``: one row per owner action on reports (``withdraw``): when, what, how many.

Version 3 (canonical cells)
---------------------------
* ``reports.cells`` rewritten in canonical spelling (``reidrisk.service.wire.canonical_cell``): the
  cells stored as sent before it kept each client's formatting.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import sqlalchemy as sa

from reidrisk.errors import ReidriskError
from reidrisk.service.wire import SurveySpec

metadata = sa.MetaData()

schema_version = sa.Table(
    "schema_version", metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("version", sa.Integer, nullable=False),
)

surveys = sa.Table(
    "surveys", metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("spec", sa.Text, nullable=False),  # JSON: schema, protocol, attributes
    sa.Column("revision", sa.Integer, nullable=False, default=1),
    sa.Column("created_at", sa.Float, nullable=False),
)

credentials = sa.Table(
    "credentials", metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("survey_id", sa.String(64), sa.ForeignKey("surveys.id"), nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),  # "code" or "researcher"
    sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("label", sa.Text, nullable=False, default=""),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("revoked_at", sa.Float, nullable=True),
    sa.Column("quota", sa.BigInteger, nullable=True),                   # version 2
    sa.Column("used", sa.BigInteger, nullable=False, server_default="0"),  # version 2
)

reports = sa.Table(
    "reports", metadata,
    sa.Column("seq", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True,
              autoincrement=True),
    sa.Column("survey_id", sa.String(64), sa.ForeignKey("surveys.id"), nullable=False),
    sa.Column("report_id", sa.String(36), nullable=False),
    sa.Column("credential_id", sa.String(64), nullable=True),
    sa.Column("received_at", sa.Float, nullable=False),
    sa.Column("cells", sa.Text, nullable=False),
    sa.Column("withdrawn_at", sa.Float, nullable=True),  # version 2
    sa.UniqueConstraint("survey_id", "report_id", name="uq_reports_survey_report"),
)

counts = sa.Table(
    "counts", metadata,
    sa.Column("survey_id", sa.String(64), sa.ForeignKey("surveys.id"), primary_key=True),
    sa.Column("n", sa.BigInteger, nullable=False),
    sa.Column("gram", sa.LargeBinary, nullable=False),    # (F, F) little-endian int64
    sa.Column("n_pair", sa.LargeBinary, nullable=False),  # (g, g) little-endian int64
    sa.Column("version", sa.BigInteger, nullable=False, server_default="0"),  # version 2
)

audit = sa.Table(  # version 2
    "audit", metadata,
    sa.Column("seq", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True,
              autoincrement=True),
    sa.Column("survey_id", sa.String(64), sa.ForeignKey("surveys.id"), nullable=False),
    sa.Column("at", sa.Float, nullable=False),
    sa.Column("action", sa.String(32), nullable=False),
    sa.Column("credential_id", sa.String(64), nullable=True),
    sa.Column("n_reports", sa.BigInteger, nullable=False),
    sa.Column("detail", sa.Text, nullable=False, server_default=""),
)


def _v1(conn: sa.Connection) -> None:
    """Version 1: surveys, credentials, reports and counts (made with the columns of the latest
    version; ``_v2`` adds only what is absent)."""
    metadata.create_all(conn, tables=[surveys, credentials, reports, counts])


def _v2(conn: sa.Connection) -> None:
    """Version 2: code quotas, withdrawn reports, the count tables' version, the audit log."""
    have = {t: {c["name"] for c in sa.inspect(conn).get_columns(t)}
            for t in ("credentials", "reports", "counts")}
    added = [("credentials", "quota", "BIGINT"),
             ("credentials", "used", "BIGINT NOT NULL DEFAULT 0"),
             ("reports", "withdrawn_at", "DOUBLE PRECISION"),
             ("counts", "version", "BIGINT NOT NULL DEFAULT 0")]
    for table, column, ddl in added:
        if column not in have[table]:
            conn.execute(sa.text(f"ALTER TABLE {table} ADD COLUMN {column} {ddl}"))
            if (table, column) == ("credentials", "used"):
                conn.execute(sa.text(
                    "UPDATE credentials SET used = (SELECT count(*) FROM reports "
                    "WHERE reports.credential_id = credentials.id)"))
    metadata.create_all(conn, tables=[audit])


def _v3(conn: sa.Connection) -> None:
    """Version 3: every stored cell in its canonical spelling (``wire.canonical_cell``)."""

    for sid, text in conn.execute(sa.select(surveys.c.id, surveys.c.spec)).all():
        spec = SurveySpec.from_json(text)
        last = 0
        while True:
            rows = conn.execute(sa.select(reports.c.seq, reports.c.cells).where(
                (reports.c.survey_id == sid) & (reports.c.seq > last))
                .order_by(reports.c.seq).limit(5000)).all()
            if not rows:
                break
            last = rows[-1].seq
            changed = []
            for seq, cells in rows:
                canon = json.dumps(spec.canonical_row(json.loads(cells)), separators=(",", ":"))
                if canon != cells:
                    changed.append({"s": seq, "c": canon})
            if changed:
                conn.execute(sa.update(reports).where(reports.c.seq == sa.bindparam("s"))
                             .values(cells=sa.bindparam("c")), changed)


MIGRATIONS: list[Callable[[sa.Connection], None]] = [_v1, _v2, _v3]
"""Ordered migrations; append new ones, never edit an applied one."""

LATEST = len(MIGRATIONS)


class MigrationError(ReidriskError, RuntimeError):
    """The database was written by a newer version of reidrisk."""


def current_version(conn: sa.Connection) -> int:
    """The schema version of a database: the number of migrations applied to it.

    Parameters
    ----------
    conn : sqlalchemy.Connection
        A connection to the database.

    Returns
    -------
    int
        The version in ``schema_version``; 0 when that table is absent or empty.
    """
    if not sa.inspect(conn).has_table("schema_version"):
        return 0
    row = conn.execute(sa.select(schema_version.c.version)).first()
    return 0 if row is None else int(row[0])


def migrate(engine: sa.Engine) -> int:
    """Apply the missing migrations, each in its own transaction with its version bump.

    Parameters
    ----------
    engine : sqlalchemy.Engine
        The database (SQLite or PostgreSQL).

    Returns
    -------
    int
        The schema version reached (``LATEST``).

    Raises
    ------
    MigrationError
        When the database is newer than this code (it is never downgraded).
    """
    with engine.begin() as conn:
        metadata.create_all(conn, tables=[schema_version])
        version = current_version(conn)
    if version > LATEST:
        raise MigrationError(
            f"the database has schema version {version}, newer than this reidrisk knows "
            f"({LATEST}); upgrade reidrisk"
        )
    while version < LATEST:
        with engine.begin() as conn:
            # re-read inside the transaction: another server process may have migrated meanwhile
            version = current_version(conn)
            if version >= LATEST:
                break
            MIGRATIONS[version](conn)
            version += 1
            if conn.execute(sa.select(sa.func.count()).select_from(schema_version)).scalar():
                conn.execute(sa.update(schema_version).values(version=version))
            else:
                conn.execute(sa.insert(schema_version).values(id=1, version=version))
    return version
