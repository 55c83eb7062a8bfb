"""The Python client of the collection service (``reidrisk serve``; paper 004 Fig. 1).

``SurveyClient(base_url, survey_id, code)`` fetches the survey's configuration, randomizes answers
on this machine with the survey's protocol (``reidrisk.collect.Protocol.randomize``; the noise comes
from a fresh ChaCha20 generator keyed from the operating system unless a simulation passes
``rng``), and sends only the randomized reports. Every report gets a UUID here, before the first
attempt, so a retry after a timeout or a lost answer re-sends the same id and the server stores the
report once. Raw answers never leave the process.

    client = SurveyClient("https://survey.example.org", "3f2a...", code="sc_...")
    client.submit_answers(pandas.DataFrame({"age": ["30-39"], "sex": [None]}))
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
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


class ClientError(ReidriskError, RuntimeError):
    """The server refused a request (the message is the server's) or could not be reached."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


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
    retries : int
        Attempts after the first on a network error or a 408, 425, 429, 500, 502, 503 or 504
        answer (``RETRY_STATUS``).
    backoff : float
        Seconds before the first retry, doubled at each one (a ``Retry-After`` header wins).
    timeout : float
        Seconds per request of the client made here (unused when ``http`` is given).
    http : httpx.Client, optional
        The HTTP client to use, with its base URL (tests pass the application's test client);
        ``None`` (default): a new ``httpx.Client`` on ``base_url``.
    """

    def __init__(self, base_url: str, survey_id: str, code: str | None = None, *,
                 retries: int = 5, backoff: float = 0.2, timeout: float = 30.0,
                 http=None) -> None:
        import httpx

        self.survey_id = survey_id
        self.code = code
        self.retries = int(retries)
        self.backoff = float(backoff)
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
    def submit(self, rr: RecordReports, *, batch_size: int = 100, ids=None) -> Submitted:
        """Send randomized reports in batches (one report alone goes to the single endpoint).

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
            before it are stored).
        """
        every = self.wire_reports(rr, ids)
        reports = [r for r in every if r["values"]]  # an empty report is refused: not sent
        acc = dup = 0
        for start in range(0, len(reports), batch_size):
            part = reports[start:start + batch_size]
            if len(part) == 1:
                res = self._request("POST", f"/surveys/{self.survey_id}/reports", json=part[0])
            else:
                res = self._request("POST", f"/surveys/{self.survey_id}/reports/batch",
                                    json={"reports": part})
            acc += res["accepted"]
            dup += res["duplicates"]
        return Submitted(acc, dup, tuple(r["id"] for r in reports), len(every) - len(reports))

    def submit_answers(self, answers, *, rng=None, batch_size: int = 100) -> Submitted:
        """Randomize ``answers`` here and send the reports (``randomize`` + ``submit``).

        Parameters
        ----------
        answers : pandas.DataFrame or array_like (n, g)
            As in ``randomize``.
        rng : numpy.random.Generator or int, optional
            As in ``randomize`` (``None``: a fresh secure generator).
        batch_size : int
            Reports per request.

        Returns
        -------
        Submitted
            Reports stored, duplicates, and the ids sent.
        """
        return self.submit(self.randomize(answers, rng), batch_size=batch_size)

    # ---- transport ---------------------------------------------------------------------------
    def _request(self, method: str, path: str, **kw) -> dict:
        import httpx

        headers = {"Authorization": f"Bearer {self.code}"} if self.code else {}
        delay = self.backoff
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                resp = self.http.request(method, path, headers=headers, **kw)
            except httpx.TransportError as exc:
                if last:
                    raise ClientError(f"{method} {path}: the service cannot be reached: {exc}") \
                        from None
                time.sleep(delay)
                delay *= 2
                continue
            if resp.status_code < 400:
                return resp.json()
            if resp.status_code in RETRY_STATUS and not last:
                wait = resp.headers.get("retry-after")
                time.sleep(float(wait) if wait and wait.replace(".", "", 1).isdigit() else delay)
                delay *= 2
                continue
            try:
                detail = resp.json().get("detail", resp.text)
            except ValueError:
                detail = resp.text
            raise ClientError(f"{method} {path}: {resp.status_code}: {detail}", resp.status_code)
        raise AssertionError("unreachable")  # pragma: no cover


__all__ = ["ClientError", "Submitted", "SurveyClient"]
