"""Durable storage of surveys, credentials, the reports log and the count tables.

``Storage(url)`` opens SQLite (``sqlite:///path``; WAL journal, ``synchronous=FULL``, every write
transaction ``BEGIN IMMEDIATE`` so concurrent writers queue instead of failing) or PostgreSQL
(``postgresql://...``, driven by psycopg 3), and applies the migrations
(``reidrisk.service.migrations``).

Ingestion (``Storage.store``) is one transaction per group of submissions. It first locks the
survey's row (``SELECT ... FOR UPDATE`` on PostgreSQL; on SQLite ``BEGIN IMMEDIATE`` takes the
database's write lock), so ingestion, a change of the survey (``update_survey``) and a withdrawal
(``withdraw``) of one survey run one after the other: a survey never changes under reports being
stored. Under that lock it reads which of the submitted ids are already stored (a retried report is
acknowledged as a duplicate, not stored twice) and each submission code's quota (a submission
that would take its code past its quota is refused whole), then inserts the new reports (``ON
CONFLICT (survey_id, report_id) DO NOTHING`` as a second guard) and folds only them into the
survey's count tables (the Gram matrix ``B^T B`` of report memberships and the presence Gram
``P^T P`` of ``reidrisk.estimation.pairs.pair_counts``; both are sums over reports, so folding
batch by batch gives exactly the counts of all reports). The function returns after the commit,
so an acknowledgement means the reports are durable; on any error nothing of the group is stored.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import sqlalchemy as sa

from reidrisk.errors import ReidriskError
from reidrisk.estimation.pairs import PairCounts, pair_counts
from reidrisk.mechanisms.record import RecordReports
from reidrisk.service import migrations as m
from reidrisk.service.wire import SurveySpec

CODE = "code"
RESEARCHER = "researcher"


class StorageError(ReidriskError, RuntimeError):
    """A request the stored state does not allow (e.g. changing a survey that has reports)."""


class NotFound(ReidriskError, LookupError):
    """No such survey or credential."""


class SurveyFrozen(StorageError):
    """A change of the definition of a survey that has reports: a new version is a new survey."""


class ReportConflict(StorageError):
    """A report id already stored with different content: a new report needs a new id.

    Parameters
    ----------
    message : str
        The refusal.
    index : int
        The report's position in its request.
    """

    def __init__(self, message: str, index: int) -> None:
        super().__init__(message)
        self.index = index


class CodeRevoked(StorageError):
    """The submission code was revoked (checked in the transaction that would store)."""


class QuotaExceeded(StorageError):
    """A submission would take its code past its quota (one report per person by default)."""


def hash_token(token: str) -> str:
    """SHA-256 of a token: tokens are 256-bit random strings, so a fast hash suffices at rest.

    Parameters
    ----------
    token : str
        A submission code or researcher token.

    Returns
    -------
    str
        The hexadecimal digest (64 characters), what the database keeps.
    """
    return hashlib.sha256(token.encode()).hexdigest()


def new_token(prefix: str) -> str:
    """A new random token: 256 bits from ``secrets``, URL-safe, after a prefix naming its kind.

    Parameters
    ----------
    prefix : str
        ``"sc"`` for a submission code, ``"rt"`` for a researcher token.

    Returns
    -------
    str
        ``"<prefix>_<43 URL-safe characters>"``.
    """
    return f"{prefix}_{secrets.token_urlsafe(32)}"


def database_url(url: str | None, data_dir: str | Path | None) -> str:
    """The SQLAlchemy URL of the service's database.

    Parameters
    ----------
    url : str or None
        A database URL, used when given (``postgresql://`` and ``postgres://`` get the psycopg 3
        driver).
    data_dir : str or Path or None
        Otherwise, the directory of a SQLite database ``reidrisk.sqlite3`` (created if absent;
        ``None``: ``reidrisk-data`` in the working directory).

    Returns
    -------
    str
        The URL for ``Storage``.
    """
    if url:
        if url.startswith("postgresql://") or url.startswith("postgres://"):
            url = "postgresql+psycopg://" + url.split("://", 1)[1]
        return url
    d = Path(data_dir if data_dir is not None else "reidrisk-data")
    d.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{(d / 'reidrisk.sqlite3').resolve()}"


@dataclass(frozen=True)
class Survey:
    """A survey as stored.

    Parameters
    ----------
    id : str
        Its id (32 hexadecimal characters).
    name : str
        Its name.
    spec : SurveySpec
        Schema, protocol and mechanisms (``reidrisk.service.wire``).
    revision : int
        Bumped by every change.
    n_reports : int
        Reports counted (stored and not withdrawn).
    counts_version : int
        Bumped by every change of the count tables (ingestion, withdrawal).
    """

    id: str
    name: str
    spec: SurveySpec
    revision: int
    n_reports: int
    counts_version: int = 0


@dataclass(frozen=True)
class Credential:
    """A submission code or researcher token, without its secret.

    Parameters
    ----------
    id : str
        Its id (16 hexadecimal characters).
    survey_id : str
        The survey it gives access to.
    kind : str
        ``CODE`` (submission code) or ``RESEARCHER`` (researcher token).
    label : str
        Who it is for.
    revoked : bool
        Whether it has been revoked.
    quota : int or None
        The most reports a submission code may store; ``None``: no limit (researcher tokens, and
        codes issued before quotas existed).
    used : int
        Reports the code has stored.
    """

    id: str
    survey_id: str
    kind: str
    label: str
    revoked: bool
    quota: int | None = None
    used: int = 0


@dataclass(frozen=True)
class IngestResult:
    """What one ingestion stored.

    Parameters
    ----------
    accepted : int
        Reports stored by this request.
    duplicates : int
        Report ids already stored (retries), not stored again.
    n_reports : int
        Reports the survey holds after this request.
    inserted : frozenset of str
        The ids stored by this request.
    """

    accepted: int
    duplicates: int
    n_reports: int
    inserted: frozenset = frozenset()


@dataclass(frozen=True)
class Submission:
    """One request's reports, as ``Storage.store`` takes them.

    Parameters
    ----------
    credential_id : str or None
        The id of the submission code that sent them (its quota applies); ``None``: no code
        (no quota; the server's own tools).
    ids : list of str
        The client-generated report ids, distinct.
    cells : list of list
        Each report in the reports-file cell format (schema order, None = missing), in the order
        of ``ids``.
    """

    credential_id: str | None
    ids: list
    cells: list


@dataclass(frozen=True)
class Withdrawal:
    """What a withdrawal did.

    Parameters
    ----------
    credential_id : str
        The submission code whose reports were withdrawn (now revoked).
    withdrawn : int
        Reports taken out of the count tables by this withdrawal.
    n_reports : int
        Reports the survey counts after it.
    """

    credential_id: str
    withdrawn: int
    n_reports: int


def _to_blob(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a, dtype="<i8").tobytes()


def _from_blob(b: bytes, shape) -> np.ndarray:
    return np.frombuffer(b, dtype="<i8").reshape(shape).astype(np.int64)


class Storage:
    """The service's database (module doc); opening it applies the missing migrations.

    Parameters
    ----------
    url : str
        SQLAlchemy URL: ``sqlite:///path`` or ``postgresql+psycopg://...`` (``database_url``).
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        if self.is_sqlite:
            self.engine = sa.create_engine(url, connect_args={"check_same_thread": False,
                                                              "timeout": 60})
            sa.event.listen(self.engine, "connect", _sqlite_connect)
            sa.event.listen(self.engine, "begin", _sqlite_begin)
        else:
            self.engine = sa.create_engine(url, pool_size=20, max_overflow=20,
                                           pool_pre_ping=True)
        self.version = m.migrate(self.engine)
        self._specs: dict[tuple[str, int], SurveySpec] = {}
        self._lock = threading.Lock()

    def close(self) -> None:
        self.engine.dispose()

    def _read(self) -> sa.Connection:
        """A connection for reading: a deferred transaction on SQLite (no write lock)."""
        return self.engine.connect().execution_options(reidrisk_read=True)

    def _insert(self):
        if self.is_sqlite:
            from sqlalchemy.dialects.sqlite import insert as sqlite_insert

            return sqlite_insert
        from sqlalchemy.dialects.postgresql import insert as postgresql_insert

        return postgresql_insert

    # ---- surveys -----------------------------------------------------------------------------
    def create_survey(self, name: str, spec: SurveySpec) -> Survey:
        """A new survey, with empty count tables.

        Parameters
        ----------
        name : str
            Its name.
        spec : SurveySpec
            Its schema, protocol and mechanisms.

        Returns
        -------
        Survey
            The survey at revision 1, with no reports.
        """
        sid = uuid.uuid4().hex
        g, F = len(spec.schema), int(sum(spec.schema.sizes))
        with self.engine.begin() as conn:
            conn.execute(sa.insert(m.surveys).values(id=sid, name=name, spec=spec.to_json(),
                                                     revision=1, created_at=time.time()))
            conn.execute(sa.insert(m.counts).values(
                survey_id=sid, n=0, gram=_to_blob(np.zeros((F, F))),
                n_pair=_to_blob(np.zeros((g, g)))))
        return Survey(sid, name, spec, 1, 0)

    def _spec(self, sid: str, revision: int, text: str) -> SurveySpec:
        key = (sid, revision)
        spec = self._specs.get(key)
        if spec is None:
            spec = SurveySpec.from_json(text)
            with self._lock:
                self._specs[key] = spec
        return spec

    def survey(self, sid: str, conn: sa.Connection | None = None) -> Survey:
        """A survey as stored now.

        Parameters
        ----------
        sid : str
            The survey's id.
        conn : sqlalchemy.Connection, optional
            Read inside this transaction; ``None`` (default): a read connection of its own.

        Returns
        -------
        Survey
            The survey with its current revision and report count.

        Raises
        ------
        NotFound
            For an unknown ``sid``.
        """
        q = (sa.select(m.surveys.c.id, m.surveys.c.name, m.surveys.c.spec, m.surveys.c.revision,
                       m.counts.c.n, m.counts.c.version)
             .join(m.counts, m.counts.c.survey_id == m.surveys.c.id)
             .where(m.surveys.c.id == sid))
        if conn is None:
            with self._read() as c:
                row = c.execute(q).first()
        else:
            row = conn.execute(q).first()
        if row is None:
            raise NotFound(f"no survey {sid!r}")
        return Survey(row.id, row.name, self._spec(row.id, row.revision, row.spec), row.revision,
                      int(row.n), int(row.version))

    def list_surveys(self) -> list[Survey]:
        """Every survey.

        Returns
        -------
        list of Survey
            In order of creation.
        """
        with self._read() as c:
            ids = [r[0] for r in c.execute(sa.select(m.surveys.c.id).order_by(
                m.surveys.c.created_at))]
        return [self.survey(i) for i in ids]

    def update_survey(self, sid: str, name: str | None, spec: SurveySpec | None) -> Survey:
        """Change a survey's name or definition; its revision is bumped when anything changes.

        Parameters
        ----------
        sid : str
            The survey's id.
        name : str or None
            A new name; ``None``: unchanged.
        spec : SurveySpec or None
            A new definition (its count tables are reset); ``None``: unchanged. Refused once the
            survey has stored a report, withdrawn or not (its schema, budget and mechanism are
            immutable: a new version is a new survey). The survey's row is locked first, so a
            change and an ingestion of the survey run one after the other.

        Returns
        -------
        Survey
            The survey after the change.

        Raises
        ------
        NotFound
            For an unknown ``sid``.
        SurveyFrozen
            When ``spec`` is given and the survey has stored a report.
        """
        with self.engine.begin() as conn:
            self._lock_survey(conn, sid)  # ingestion waits for this change, or it for ingestion
            cur = self.survey(sid, conn)
            values: dict = {}
            if spec is not None:
                stored = conn.execute(sa.select(sa.func.count()).select_from(m.reports).where(
                    m.reports.c.survey_id == sid)).scalar()
                if stored:
                    raise SurveyFrozen(
                        f"survey {sid!r} has stored {stored} report(s) (withdrawn ones included) "
                        "under its schema, budget and mechanism, so they can no longer change; "
                        "create a new survey (POST /surveys) for the new version, with new codes")
                values["spec"] = spec.to_json()
                g, F = len(spec.schema), int(sum(spec.schema.sizes))
                conn.execute(sa.update(m.counts).where(m.counts.c.survey_id == sid).values(
                    gram=_to_blob(np.zeros((F, F))), n_pair=_to_blob(np.zeros((g, g)))))
            if name is not None:
                values["name"] = name
            if values:
                conn.execute(sa.update(m.surveys).where(m.surveys.c.id == sid).values(
                    revision=cur.revision + 1, **values))
            return self.survey(sid, conn)

    # ---- credentials -------------------------------------------------------------------------
    def issue(self, sid: str, kind: str, label: str = "",
              quota: int | None = 1) -> tuple[Credential, str]:
        """A new submission code or researcher token; the token is returned once, stored hashed.

        Parameters
        ----------
        sid : str
            The survey it gives access to.
        kind : str
            ``CODE`` or ``RESEARCHER``.
        label : str
            Who it is for.
        quota : int or None
            For a submission code, the most reports it may store: 1 (default: one person, one
            report) or the number of people an institution sends for; ``None``: no limit.
            Ignored for a researcher token.

        Returns
        -------
        credential : Credential
            The new credential.
        token : str
            Its secret, not stored (only its ``hash_token``).

        Raises
        ------
        NotFound
            For an unknown ``sid``.
        """
        self.survey(sid)
        token = new_token("sc" if kind == CODE else "rt")
        cid = uuid.uuid4().hex[:16]
        quota = quota if kind == CODE else None
        with self.engine.begin() as conn:
            conn.execute(sa.insert(m.credentials).values(
                id=cid, survey_id=sid, kind=kind, token_hash=hash_token(token), label=label,
                created_at=time.time(), revoked_at=None, quota=quota, used=0))
        return Credential(cid, sid, kind, label, False, quota, 0), token

    def credential(self, token: str) -> Credential | None:
        """The credential a token belongs to.

        Parameters
        ----------
        token : str
            A submission code or researcher token.

        Returns
        -------
        Credential or None
            The credential (revoked ones included: check ``revoked``); None for an unknown token.
        """
        with self._read() as c:
            row = c.execute(sa.select(m.credentials).where(
                m.credentials.c.token_hash == hash_token(token))).first()
        if row is None:
            return None
        return _credential(row)

    def credentials(self, sid: str, kind: str | None = None) -> list[Credential]:
        """A survey's credentials.

        Parameters
        ----------
        sid : str
            The survey's id.
        kind : str, optional
            ``CODE`` or ``RESEARCHER`` only; ``None`` (default): both.

        Returns
        -------
        list of Credential
            In order of issue, revoked ones included.
        """
        q = sa.select(m.credentials).where(m.credentials.c.survey_id == sid)
        if kind:
            q = q.where(m.credentials.c.kind == kind)
        with self._read() as c:
            rows = c.execute(q.order_by(m.credentials.c.created_at)).all()
        return [_credential(r) for r in rows]

    def revoke(self, sid: str, cid: str) -> Credential:
        """Revoke a credential (kept, marked revoked).

        Parameters
        ----------
        sid : str
            The survey's id.
        cid : str
            The credential's id.

        Returns
        -------
        Credential
            The credential, revoked.

        Raises
        ------
        NotFound
            When the survey has no such credential.
        """
        with self.engine.begin() as conn:
            res = conn.execute(sa.update(m.credentials).where(
                (m.credentials.c.id == cid) & (m.credentials.c.survey_id == sid)
            ).values(revoked_at=time.time()))
            if res.rowcount == 0:
                raise NotFound(f"survey {sid!r} has no credential {cid!r}")
        return next(c for c in self.credentials(sid) if c.id == cid)

    # ---- reports -----------------------------------------------------------------------------
    def _lock_survey(self, conn: sa.Connection, sid: str) -> int:
        """Lock a survey's row for this transaction (module doc) and return its revision."""
        rev = conn.execute(sa.select(m.surveys.c.revision).where(m.surveys.c.id == sid)
                           .with_for_update()).scalar()
        if rev is None:
            raise NotFound(f"no survey {sid!r}")
        return int(rev)

    def _stored(self, conn: sa.Connection, sid: str, ids: list[str]) -> dict[str, str]:
        """The stored cells (JSON text) of those of ``ids`` the survey already holds."""
        found: dict[str, str] = {}
        for start in range(0, len(ids), 500):  # under every database's limit on parameters
            part = ids[start:start + 500]
            found.update((r[0], r[1]) for r in conn.execute(
                sa.select(m.reports.c.report_id, m.reports.c.cells).where(
                    (m.reports.c.survey_id == sid) & m.reports.c.report_id.in_(part))))
        return found

    def store(self, survey: Survey, subs: list[Submission],
              rr: RecordReports) -> list[IngestResult | StorageError]:
        """Store validated submissions in one transaction (module doc), each whole or not at all.

        Under the survey's row lock: an id already stored (or taken by an earlier submission of
        this call) with the same cells is a duplicate, not stored again, and with other cells
        refuses its submission whole (``ReportConflict``); a submission whose new reports would
        take its code past its quota is refused whole (``QuotaExceeded``), and one whose code was
        revoked (by any server process) too (``CodeRevoked``); the others are stored.
        Cells are compared in canonical spelling (``SurveySpec.canonical_row``). Returns after
        the commit.

        Parameters
        ----------
        survey : Survey
            The survey, as read when the reports were validated (refused if it changed since).
        subs : list of Submission
            The submissions, in arrival order, their cells canonical (``SurveySpec.cells_of``).
        rr : RecordReports
            The reports of all submissions decoded (``SurveySpec.decode``), concatenated in the
            order of ``subs``.

        Returns
        -------
        list of IngestResult or StorageError
            One per submission: what it stored, or why it was refused.

        Raises
        ------
        StorageError
            When the survey changed since ``survey`` was read (nothing is stored).
        NotFound
            When the survey no longer exists.
        """
        now = time.time()
        with self.engine.begin() as conn:
            if self._lock_survey(conn, survey.id) != survey.revision:
                raise StorageError(f"survey {survey.id!r} changed while the reports were sent; "
                                   "fetch its configuration again")
            spec = survey.spec
            taken = {rid: spec.canonical_row(json.loads(text)) for rid, text in
                     self._stored(conn, survey.id, [i for s in subs for i in s.ids]).items()}
            creds = {c: self._quota(conn, c) for c in {s.credential_id for s in subs} if c}
            answers: list = []
            rows, keep, pos = [], [], 0
            for sub in subs:
                new = [j for j, rid in enumerate(sub.ids) if rid not in taken]
                clash = next((j for j, rid in enumerate(sub.ids)
                              if rid in taken and taken[rid] != sub.cells[j]), None)
                if clash is not None:
                    answers.append(ReportConflict(
                        f"report {clash}: id {sub.ids[clash]} is already stored with different "
                        "content; a retry must resend the same report, and a new report needs a "
                        "new id", clash))
                    pos += len(sub.ids)
                    continue
                cid = sub.credential_id
                if cid is not None:
                    quota, used, revoked = creds[cid]
                    if revoked:  # by any server process sharing the database, even just now
                        answers.append(CodeRevoked(
                            "this submission code was revoked; ask the survey's administrator "
                            "for a new one"))
                        pos += len(sub.ids)
                        continue
                    if quota is not None and used + len(new) > quota:
                        answers.append(QuotaExceeded(
                            f"submission code {cid} may store {quota} report(s) and has stored "
                            f"{used}; this request would add {len(new)}. A person's code sends "
                            "one report; an institution sending for many people needs a code "
                            "issued with that quota (POST /surveys/{id}/codes {\"quota\": n})"))
                        pos += len(sub.ids)
                        continue
                    creds[cid] = (quota, used + len(new), revoked)
                for j in new:
                    taken[sub.ids[j]] = sub.cells[j]
                    rows.append({"survey_id": survey.id, "report_id": sub.ids[j],
                                 "credential_id": cid, "received_at": now,
                                 "cells": json.dumps(sub.cells[j], separators=(",", ":"))})
                    keep.append(pos + j)
                pos += len(sub.ids)
                answers.append(frozenset(sub.ids[j] for j in new))
            n_total = self._fold(conn, survey, rows, rr, keep)
            for cid, (_, used, _) in creds.items():
                conn.execute(sa.update(m.credentials).where(m.credentials.c.id == cid)
                             .values(used=used))
        return [a if isinstance(a, StorageError) else
                IngestResult(len(a), len(s.ids) - len(a), n_total, a)
                for a, s in zip(answers, subs)]

    def _quota(self, conn: sa.Connection, cid: str) -> tuple[int | None, int, bool]:
        """A code's quota, reports stored and whether it is revoked, as committed now."""
        row = conn.execute(sa.select(m.credentials.c.quota, m.credentials.c.used,
                                     m.credentials.c.revoked_at)
                           .where(m.credentials.c.id == cid)).first()
        if row is None:
            raise NotFound(f"no credential {cid!r}")
        return ((None if row.quota is None else int(row.quota)), int(row.used),
                row.revoked_at is not None)

    def _fold(self, conn: sa.Connection, survey: Survey, rows: list[dict], rr: RecordReports,
              keep: list[int]) -> int:
        """Insert ``rows`` and add the reports ``rr.take(keep)`` to the count tables; the
        survey's report count after."""
        row = conn.execute(sa.select(m.counts).where(m.counts.c.survey_id == survey.id)
                           .with_for_update()).first()
        assert row is not None  # created with the survey
        if not rows:
            return int(row.n)
        stmt = (self._insert()(m.reports)
                .on_conflict_do_nothing(index_elements=["survey_id", "report_id"])
                .returning(m.reports.c.report_id))
        inserted = {r[0] for r in conn.execute(stmt, rows)}
        if len(inserted) != len(rows):  # the survey's lock makes this impossible: a defect
            raise StorageError(f"survey {survey.id!r}: {len(rows) - len(inserted)} report ids "
                               "were stored concurrently; nothing of this group was stored")
        keep_arr = np.asarray(keep, dtype=np.int64)
        pc = pair_counts(rr if keep_arr.size == rr.n else rr.take(keep_arr))
        return self._add_counts(conn, survey.id, row, pc.gram, pc.n_pair, len(rows))

    def _add_counts(self, conn: sa.Connection, sid: str, row, gram: np.ndarray,
                    n_pair: np.ndarray, n: int) -> int:
        """Add (or, with negative tables, subtract) to a survey's count tables; bump their
        version; the survey's report count after."""
        F, g = gram.shape[0], n_pair.shape[0]
        n_total = int(row.n) + n
        conn.execute(sa.update(m.counts).where(m.counts.c.survey_id == sid).values(
            n=n_total, gram=_to_blob(_from_blob(row.gram, (F, F)) + gram),
            n_pair=_to_blob(_from_blob(row.n_pair, (g, g)) + n_pair),
            version=int(row.version) + 1))
        return n_total

    def ingest(self, survey: Survey, ids: list[str], cells: list[list], rr: RecordReports,
               credential_id: str | None = None) -> IngestResult:
        """Store one submission (``store`` of one ``Submission``).

        Parameters
        ----------
        survey : Survey
            The survey, as read when the reports were validated.
        ids : list of str
            The client-generated report ids, distinct.
        cells : list of list
            Each report's cells (schema order, None = missing).
        rr : RecordReports
            The same reports decoded, in the order of ``ids``.
        credential_id : str, optional
            The submission code's id (its quota applies); ``None``: no code.

        Returns
        -------
        IngestResult
            Reports stored, duplicates, and the survey's report count after the commit.

        Raises
        ------
        StorageError
            When the survey changed since it was read, or the code's quota is reached
            (``QuotaExceeded``); nothing is stored.
        """
        res = self.store(survey, [Submission(credential_id, ids, cells)], rr)[0]
        if isinstance(res, StorageError):
            raise res
        return res

    def withdraw(self, sid: str, cid: str, reason: str = "") -> Withdrawal:
        """Withdraw every counted report of a submission code and revoke the code (audited).

        The reports are taken out of the count tables (their pair counts subtracted) and marked
        withdrawn; their rows stay, so a retry of one of their ids is a duplicate, not stored
        again. The code is revoked and an ``audit`` row says when, which code and how many.

        Parameters
        ----------
        sid : str
            The survey's id.
        cid : str
            The submission code's id.
        reason : str
            Why (kept in the audit log).

        Returns
        -------
        Withdrawal
            Reports withdrawn and the survey's report count after.

        Raises
        ------
        NotFound
            When the survey has no such submission code.
        """
        now = time.time()
        with self.engine.begin() as conn:
            self._lock_survey(conn, sid)
            kind = conn.execute(sa.select(m.credentials.c.kind).where(
                (m.credentials.c.id == cid) & (m.credentials.c.survey_id == sid))).scalar()
            if kind != CODE:
                raise NotFound(f"survey {sid!r} has no submission code {cid!r}")
            survey = self.survey(sid, conn)
            live = ((m.reports.c.survey_id == sid) & (m.reports.c.credential_id == cid)
                    & m.reports.c.withdrawn_at.is_(None))
            cells = [json.loads(r[0]) for r in conn.execute(sa.select(m.reports.c.cells)
                                                           .where(live))]
            row = conn.execute(sa.select(m.counts).where(m.counts.c.survey_id == sid)
                               .with_for_update()).first()
            assert row is not None  # created with the survey
            n_total = int(row.n)
            if cells:
                pc = pair_counts(survey.spec.decode(cells))
                n_total = self._add_counts(conn, sid, row, -pc.gram, -pc.n_pair, -len(cells))
                conn.execute(sa.update(m.reports).where(live).values(withdrawn_at=now))
            conn.execute(sa.update(m.credentials).where(
                (m.credentials.c.id == cid) & m.credentials.c.revoked_at.is_(None)
            ).values(revoked_at=now))
            conn.execute(sa.insert(m.audit).values(
                survey_id=sid, at=now, action="withdraw", credential_id=cid,
                n_reports=len(cells), detail=reason))
        return Withdrawal(cid, len(cells), n_total)

    def audit(self, sid: str) -> list[dict]:
        """A survey's audit log: the owner's actions on its reports and codes.

        Parameters
        ----------
        sid : str
            The survey's id.

        Returns
        -------
        list of dict
            ``{"at", "action", "credential_id", "n_reports", "detail"}`` in order.
        """
        with self._read() as c:
            rows = c.execute(sa.select(m.audit).where(m.audit.c.survey_id == sid)
                             .order_by(m.audit.c.seq)).all()
        return [{"at": r.at, "action": r.action, "credential_id": r.credential_id,
                 "n_reports": int(r.n_reports), "detail": r.detail} for r in rows]

    def counts(self, survey: Survey) -> PairCounts:
        """The survey's count tables.

        Parameters
        ----------
        survey : Survey
            The survey (its schema gives the tables' shapes).

        Returns
        -------
        PairCounts
            What ``reidrisk.estimation.pairs.pair_counts`` gives on all its stored reports.
        """
        sizes = [int(s) for s in survey.spec.schema.sizes]
        F, g = sum(sizes), len(sizes)
        with self._read() as c:
            row = c.execute(sa.select(m.counts).where(m.counts.c.survey_id == survey.id)).first()
        assert row is not None  # created with the survey
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        gram = _from_blob(row.gram, (F, F))
        return PairCounts(gram, offsets, _from_blob(row.n_pair, (g, g)), int(row.n),
                          dense=False)

    def n_reports(self, sid: str) -> int:
        """The number of reports a survey holds.

        Parameters
        ----------
        sid : str
            The survey's id.

        Returns
        -------
        int
            Reports stored.

        Raises
        ------
        NotFound
            For an unknown ``sid``.
        """
        with self._read() as c:
            n = c.execute(sa.select(m.counts.c.n).where(m.counts.c.survey_id == sid)).scalar()
        if n is None:
            raise NotFound(f"no survey {sid!r}")
        return int(n)

    def report_cells(self, sid: str) -> tuple[list[str], list[list]]:
        """A survey's counted reports (stored, not withdrawn) in arrival order.

        Parameters
        ----------
        sid : str
            The survey's id.

        Returns
        -------
        ids : list of str
            The report ids.
        cells : list of list
            Each report's cells (the reports-file cell format).
        """
        with self._read() as c:
            rows = c.execute(sa.select(m.reports.c.report_id, m.reports.c.cells)
                             .where((m.reports.c.survey_id == sid)
                                    & m.reports.c.withdrawn_at.is_(None))
                             .order_by(m.reports.c.seq)).all()
        return [r[0] for r in rows], [json.loads(r[1]) for r in rows]

    def report_ids(self, sid: str) -> list[str]:
        """The ids of a survey's counted reports (stored, not withdrawn).

        Parameters
        ----------
        sid : str
            The survey's id.

        Returns
        -------
        list of str
            The report ids, in no particular order.
        """
        with self._read() as c:
            return [r[0] for r in c.execute(
                sa.select(m.reports.c.report_id).where((m.reports.c.survey_id == sid)
                                                       & m.reports.c.withdrawn_at.is_(None)))]


def _credential(row) -> Credential:
    return Credential(row.id, row.survey_id, row.kind, row.label, row.revoked_at is not None,
                      None if row.quota is None else int(row.quota), int(row.used))


def _sqlite_connect(dbapi_conn, _record) -> None:
    dbapi_conn.isolation_level = None  # the driver's own transaction handling is off: BEGIN below
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=FULL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=60000")
    cur.close()


def _sqlite_begin(conn) -> None:
    # one writer at a time, queued by the busy timeout (a deferred BEGIN could fail to upgrade);
    # readers take no lock (WAL)
    if conn.get_execution_options().get("reidrisk_read"):
        conn.exec_driver_sql("BEGIN")
    else:
        conn.exec_driver_sql("BEGIN IMMEDIATE")
