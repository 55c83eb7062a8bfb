"""The Python client of the collection service (``reidrisk serve``; paper 004 Fig. 1).

``SurveyClient(base_url, survey_id, code)`` fetches the survey's configuration, randomizes answers
on this machine with the survey's protocol (``reidrisk.collect.Protocol.randomize``; the noise comes
from a fresh ChaCha20 generator keyed from the operating system unless a simulation passes
``rng``), and sends only the randomized reports. Raw answers never leave the process.

An upload is resumable (``Upload``): the answers are randomized once and every report gets a UUID
before the first attempt; the reports, their ids and how many the server acknowledged are kept
(in memory, and in a journal file when ``journal`` is given, written and flushed to disk before
anything is sent). A request that fails is retried with the same ids, with a doubling backoff,
for up to ``retry_for`` seconds (long enough to span a server restart); the server stores a
retried report once. If the upload still fails, the ``ClientError`` carries the ``Upload``; calling
``submit_answers`` again with the same answers (or the same journal, from another process)
resumes it with the same reports instead of randomizing the answers afresh, which would count
the same people twice.

    client = SurveyClient("https://survey.example.org", "3f2a...", code="sc_...")
    client.submit_answers(pandas.DataFrame({"age": ["30-39"], "sex": [None]}),
                          journal="upload.jsonl")
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from reidrisk.errors import ReidriskError
from reidrisk.mechanisms.record import RecordReports
from reidrisk.schema import Schema
from reidrisk.service.wire import SurveySpec

if TYPE_CHECKING:
    from reidrisk.service.wire import SurveySpec

RETRY_STATUS = (408, 425, 429, 500, 502, 503, 504)


UPLOAD_FORMAT = "reidrisk-upload"


class ClientError(ReidriskError, RuntimeError):
    """The server refused a request (the message is the server's) or could not be reached.

    ``upload`` is the ``Upload`` in progress when the error stopped one (its reports, ids and
    how many were acknowledged), ``None`` otherwise.
    """

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.upload: Upload | None = None


@dataclass
class Upload:
    """A resumable upload: randomized reports with their ids, and how far the server has them.

    Batches are sent in order, so ``done`` (reports acknowledged) says what is left. With a
    ``journal`` the reports are written to that file (JSON lines: a header, one report a line)
    and flushed to disk before anything is sent, and each acknowledged batch appends a line; a
    lost acknowledgement only makes the next attempt re-send a batch the server then counts as
    duplicates. The journal holds randomized reports only, never an answer.

    Parameters
    ----------
    survey_id : str
        The survey the reports are for.
    reports : list of dict
        The wire reports (``SurveyClient.wire_reports``), empty ones left out.
    rows : int
        Rows of the answers they were randomized from.
    skipped : int
        Reports left out because they held no answer.
    done, accepted, duplicates : int
        Reports acknowledged so far, and of them the stored ones and the duplicates.
    journal : Path, optional
        The journal file, if any.
    """

    survey_id: str
    reports: list
    rows: int
    skipped: int = 0
    done: int = 0
    accepted: int = 0
    duplicates: int = 0
    journal: Path | None = field(default=None, repr=False)

    @property
    def finished(self) -> bool:
        """Whether every report was acknowledged."""
        return self.done >= len(self.reports)

    @property
    def ids(self) -> tuple[str, ...]:
        """The reports' ids, in order."""
        return tuple(r["id"] for r in self.reports)

    def write(self, path: str | Path) -> None:
        """Write the journal (a new file, flushed to disk before this returns).

        Parameters
        ----------
        path : str or Path
            The journal file; it must not exist.

        Raises
        ------
        ClientError
            When the file exists.
        """
        path = Path(path)
        head = {"format": UPLOAD_FORMAT, "version": 1, "survey": self.survey_id,
                "reports": len(self.reports), "rows": self.rows, "skipped": self.skipped}
        try:
            with open(path, "x", encoding="utf-8") as f:
                f.write(json.dumps(head) + "\n")
                f.writelines(json.dumps(r, separators=(",", ":")) + "\n" for r in self.reports)
                f.flush()
                os.fsync(f.fileno())
        except FileExistsError:
            raise ClientError(f"{path}: the journal file exists; resume it, or remove it to "
                              "start a new upload") from None
        self.journal = path

    def record(self, n: int, accepted: int, duplicates: int) -> None:
        """Count an acknowledged batch of ``n`` reports (and append it to the journal).

        Parameters
        ----------
        n : int
            Reports in the batch.
        accepted, duplicates : int
            The server's answer.
        """
        self.done += n
        self.accepted += accepted
        self.duplicates += duplicates
        if self.journal is not None:
            with open(self.journal, "a", encoding="utf-8") as f:
                f.write(json.dumps({"done": self.done, "accepted": self.accepted,
                                    "duplicates": self.duplicates}) + "\n")

    @classmethod
    def read(cls, path: str | Path) -> Upload:
        """The upload a journal file holds, at its last acknowledged batch.

        Parameters
        ----------
        path : str or Path
            The journal file (``write``).

        Returns
        -------
        Upload
            The upload, ``journal`` set to ``path``.

        Raises
        ------
        ClientError
            When the file is not a complete journal.
        """
        path = Path(path)
        lines = path.read_text(encoding="utf-8").splitlines()
        try:
            head = json.loads(lines[0])
            if head.get("format") != UPLOAD_FORMAT:
                raise ValueError("not an upload journal")
            n = int(head["reports"])
            reports = [json.loads(line) for line in lines[1:1 + n]]
            if len(reports) != n:
                raise ValueError(f"{len(reports)} of its {n} reports")
        except (ValueError, KeyError, IndexError) as exc:
            raise ClientError(f"{path}: not a complete upload journal ({exc}); it cannot be "
                              "resumed") from None
        up = cls(head["survey"], reports, int(head["rows"]), int(head["skipped"]), journal=path)
        for line in lines[1 + n:]:
            try:
                ack = json.loads(line)
            except ValueError:  # a line torn by a crash: that batch is re-sent
                break
            up.done, up.accepted, up.duplicates = ack["done"], ack["accepted"], ack["duplicates"]
        return up


@dataclass(frozen=True)
class Submitted:
    """Totals of a submission.

    Parameters
    ----------
    accepted : int
        Reports stored by this submission.
    duplicates : int
        Reports already stored by an earlier attempt (retries), not stored again.
    ids : tuple of str
        The ids of all reports sent, in order.
    skipped : int
        Reports not sent because they hold no answer (a person who skipped every question; the
        server refuses an empty report).
    """

    accepted: int
    duplicates: int
    ids: tuple[str, ...]
    skipped: int = 0


class SurveyClient:
    """A submitter of randomized reports to one survey (module doc).

    Parameters
    ----------
    base_url : str
        The service's URL.
    survey_id : str
        The survey's id.
    code : str, optional
        The submission code (sent as ``Authorization: Bearer``); ``None``: no credential (enough
        to fetch the configuration and randomize, not to submit).
    retries : int, optional
        Most attempts after the first on a network error or a 408, 425, 429, 500, 502, 503 or
        504 answer (``RETRY_STATUS``); ``None`` (default): as many as ``retry_for`` allows.
    backoff : float
        Seconds before the first retry, doubled at each one up to ``max_backoff`` (a
        ``Retry-After`` header wins).
    max_backoff : float
        Longest wait between two attempts.
    retry_for : float
        Seconds after the first failure of a request during which it is retried (default 120:
        long enough to span a restart of the server).
    timeout : float
        Seconds per request of the client made here (unused when ``http`` is given).
    http : httpx.Client, optional
        The HTTP client to use, with its base URL (tests pass the application's test client);
        ``None`` (default): a new ``httpx.Client`` on ``base_url``.
    """

    def __init__(self, base_url: str, survey_id: str, code: str | None = None, *,
                 retries: int | None = None, backoff: float = 0.2, max_backoff: float = 10.0,
                 retry_for: float = 120.0, timeout: float = 30.0, http=None) -> None:
        import httpx

        self.survey_id = survey_id
        self.code = code
        self.retries = None if retries is None else int(retries)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.retry_for = float(retry_for)
        self._uploads: dict[str, Upload] = {}
        self.http = http if http is not None else httpx.Client(base_url=base_url, timeout=timeout)
        self._spec: SurveySpec | None = None

    # ---- configuration -----------------------------------------------------------------------
    @property
    def spec(self):
        """The survey's ``SurveySpec`` (fetched once)."""
        if self._spec is None:
            cfg = self._request("GET", f"/surveys/{self.survey_id}/config")
            self._spec = SurveySpec.from_dict(cfg)
        return self._spec

    @property
    def schema(self) -> Schema:
        return self.spec.schema

    # ---- randomize ---------------------------------------------------------------------------
    def randomize(self, answers, rng=None) -> RecordReports:
        """Randomize answers on this machine under the survey's protocol.

        Parameters
        ----------
        answers : pandas.DataFrame or array_like (n, g)
            A DataFrame of category labels with the schema's columns (missing = skipped), or a
            matrix of codes with ``MISSING``.
        rng : numpy.random.Generator or int, optional
            ``None`` (default): a fresh secure generator (production); a seed or Generator only to
            simulate.

        Returns
        -------
        RecordReports
            The randomized reports, one per row of ``answers``.

        Raises
        ------
        ClientError
            When the protocol's mechanisms differ from the survey's configuration.
        """
        spec = self.spec
        if isinstance(answers, pd.DataFrame):
            codes = spec.schema.encode(answers[spec.schema.names])
        else:
            codes = np.asarray(answers)
        rr = spec.protocol.randomize(spec.schema, codes, rng)
        # the protocol builds the same mechanisms as the configuration describes
        for m, cfg in zip(rr.mechanisms, spec.mechanisms):
            if m.params() != cfg.params():
                raise ClientError(f"the survey's mechanism {cfg!r} differs from the protocol's "
                                  f"{m!r}; fetch the configuration again")
        return rr

    def wire_reports(self, rr: RecordReports, ids=None) -> list[dict]:
        """Reports in the wire format (``reidrisk.service.wire``), each with an id.

        Parameters
        ----------
        rr : RecordReports
            Randomized reports of this survey.
        ids : sequence, optional
            One id per report (converted to str); ``None`` (default): a new UUID each.

        Returns
        -------
        list of dict
            ``{"id": str, "values": {attribute: cell}}`` per report, missing attributes left out.
        """
        cells = self.spec.canonical_cells(rr)
        names = self.spec.schema.names
        ids = [str(uuid.uuid4()) for _ in cells] if ids is None else [str(i) for i in ids]
        return [{"id": rid, "values": {a: c for a, c in zip(names, row) if c is not None}}
                for rid, row in zip(ids, cells)]

    # ---- submit ------------------------------------------------------------------------------
    def prepare(self, rr: RecordReports, *, ids=None, journal: str | Path | None = None) -> Upload:
        """An upload of randomized reports: each with its id, empty ones left out.

        Parameters
        ----------
        rr : RecordReports
            Randomized reports of this survey.
        ids : sequence, optional
            One id per report; ``None`` (default): new UUIDs.
        journal : str or Path, optional
            A new journal file to keep the upload in (``Upload.write``), written before this
            returns.

        Returns
        -------
        Upload
            Nothing sent yet.
        """
        every = self.wire_reports(rr, ids)
        reports = [r for r in every if r["values"]]  # an empty report is refused: not sent
        up = Upload(self.survey_id, reports, len(every), len(every) - len(reports))
        if journal is not None:
            up.write(journal)
        return up

    def resume(self, upload: Upload, *, batch_size: int = 100) -> Submitted:
        """Send what the server has not acknowledged of an upload, in batches.

        Parameters
        ----------
        upload : Upload
            The upload (``prepare``, ``Upload.read``, or a ``ClientError``'s ``upload``).
        batch_size : int
            Reports per request (at most the survey's ``max_batch``); one report alone goes to
            the single endpoint.

        Returns
        -------
        Submitted
            Totals of the whole upload.

        Raises
        ------
        ClientError
            When the server refuses a batch or stays unreachable past the retries; it carries
            the upload (``upload``) and says how much was acknowledged.
        """
        if upload.survey_id != self.survey_id:
            raise ClientError(f"the upload is for survey {upload.survey_id!r}, not "
                              f"{self.survey_id!r}")
        while not upload.finished:
            part = upload.reports[upload.done:upload.done + batch_size]
            try:
                if len(part) == 1:
                    res = self._request("POST", f"/surveys/{self.survey_id}/reports",
                                        json=part[0])
                else:
                    res = self._request("POST", f"/surveys/{self.survey_id}/reports/batch",
                                        json={"reports": part})
            except ClientError as exc:
                where = f" (journal {upload.journal})" if upload.journal else ""
                err = ClientError(
                    f"{exc} -- {upload.done:,} of {len(upload.reports):,} reports acknowledged; "
                    f"call submit_answers again with the same answers{where}, or resume(upload), "
                    "to send the rest with the same ids", exc.status)
                err.upload = upload
                raise err from None
            upload.record(len(part), res["accepted"], res["duplicates"])
        return Submitted(upload.accepted, upload.duplicates, upload.ids, upload.skipped)

    def submit(self, rr: RecordReports, *, batch_size: int = 100, ids=None) -> Submitted:
        """Send randomized reports in batches (``prepare`` + ``resume``).

        Parameters
        ----------
        rr : RecordReports
            Randomized reports of this survey.
        batch_size : int
            Reports per request (at most the survey's ``max_batch``).
        ids : sequence, optional
            One id per report, to re-send reports of an earlier attempt; ``None`` (default): new
            UUIDs.

        Returns
        -------
        Submitted
            Reports stored, duplicates, the ids sent, and the empty reports left out (no
            answer at all: the server refuses them).

        Raises
        ------
        ClientError
            When the server refuses a batch or cannot be reached after the retries (the batches
            before it are stored; the error carries the upload).
        """
        return self.resume(self.prepare(rr, ids=ids), batch_size=batch_size)

    def submit_answers(self, answers, *, rng=None, batch_size: int = 100,
                       journal: str | Path | None = None) -> Submitted:
        """Randomize ``answers`` here and send the reports, resumably (module doc).

        The first call randomizes and keeps the upload: in this client, keyed by the answers'
        content, and in ``journal`` when given. A later call with the same answers (or with the
        same journal, from any process) resumes that upload with the same reports and ids; it
        never randomizes the same people twice.

        Parameters
        ----------
        answers : pandas.DataFrame or array_like (n, g)
            As in ``randomize``.
        rng : numpy.random.Generator or int, optional
            As in ``randomize`` (``None``: a fresh secure generator).
        batch_size : int
            Reports per request.
        journal : str or Path, optional
            The upload's journal file: resumed when it exists, else written before anything is
            sent.

        Returns
        -------
        Submitted
            Totals of the whole upload.

        Raises
        ------
        ClientError
            As ``resume``; or when ``journal`` holds an upload of another survey, of another
            number of answers, or one already finished (remove the file to send new answers).
        """
        n = len(answers)
        if journal is not None and Path(journal).exists():
            upload = Upload.read(journal)
            if upload.rows != n:
                raise ClientError(f"{journal}: the journal's upload was randomized from "
                                  f"{upload.rows} answers, not {n}; pass the same answers, or "
                                  "another journal file")
            if upload.finished:
                raise ClientError(f"{journal}: this upload was finished ({upload.accepted} "
                                  "stored); remove the file to send new answers")
        else:
            key = _fingerprint(answers)
            kept = self._uploads.get(key)
            if kept is None:
                kept = self._uploads[key] = self.prepare(self.randomize(answers, rng),
                                                         journal=journal)
            upload = kept
        return self.resume(upload, batch_size=batch_size)

    # ---- transport ---------------------------------------------------------------------------
    def _request(self, method: str, path: str, **kw) -> dict:
        import httpx

        headers = {"Authorization": f"Bearer {self.code}"} if self.code else {}
        delay, attempt, deadline = self.backoff, 0, None
        while True:
            try:
                resp = self.http.request(method, path, headers=headers, **kw)
                failure = None if resp.status_code < 400 else resp.status_code
            except httpx.TransportError as exc:
                resp, failure = None, f"the service cannot be reached: {exc}"
            if failure is None and resp is not None:
                return resp.json()
            retryable = resp is None or resp.status_code in RETRY_STATUS
            now = time.monotonic()
            deadline = now + self.retry_for if deadline is None else deadline
            out = (self.retries is not None and attempt >= self.retries) or now >= deadline
            if not retryable or out:
                break
            wait = resp.headers.get("retry-after") if resp is not None else None
            pause = float(wait) if wait and wait.replace(".", "", 1).isdigit() else delay
            time.sleep(max(0.0, min(pause, deadline - now)))
            delay = min(delay * 2, self.max_backoff)
            attempt += 1
        if resp is None:
            raise ClientError(f"{method} {path}: {failure} (after {attempt + 1} attempts)")
        try:
            detail = resp.json().get("detail", resp.text)
        except ValueError:
            detail = resp.text
        raise ClientError(f"{method} {path}: {resp.status_code}: {detail}", resp.status_code)


def _fingerprint(answers) -> str:
    """A digest of the answers' content, kept in memory only (never written: a digest of one
    person's few answers would give them away)."""
    h = hashlib.sha256()
    if isinstance(answers, pd.DataFrame):
        h.update(repr(list(answers.columns)).encode())
        h.update(pd.util.hash_pandas_object(answers, index=True).values.tobytes())
    else:
        a = np.asarray(answers)
        h.update(repr((a.shape, a.dtype.str)).encode())
        h.update(repr(a.tolist()).encode() if a.dtype == object
                 else np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


__all__ = ["ClientError", "Submitted", "SurveyClient", "Upload"]
