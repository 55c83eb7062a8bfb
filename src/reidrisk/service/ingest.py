"""Group commit: concurrent submissions are validated and stored together.

Each request's reports are first checked on their own (structure, ids, cells: ``SurveySpec.
cells_of``), then queued. One writer task takes everything queued for a survey, decodes it with
one call of the reports decoder (whose cost is mostly per column, not per report), and stores it in
one transaction (``Storage.ingest``: one durable commit for the whole group). Every request is
answered only after that commit. If the joint decode finds a bad report, each request is decoded
on its own: the requests holding a bad report get their 422 and the others are stored; a request
(a batch) is therefore still all-or-nothing. A report id that appears in two requests of one group
is stored once; the later request is told it is a duplicate, as it would be one group later. A
request that would take its submission code past its quota is refused whole (``QuotaExceeded``)
and the others of the group are stored.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from reidrisk.service.storage import Storage, StorageError, Submission, Survey
from reidrisk.service.wire import ReportError

MAX_GROUP_REPORTS = 5000
"""Most reports stored in one transaction."""


@dataclass
class _Pending:
    survey: Survey
    credential_id: str | None
    ids: list
    rows: list
    future: asyncio.Future = field(repr=False)


class GroupWriter:
    """The single writer of the service: it stores queued submissions in group commits.

    The writer task starts on the first ``submit`` (and again on a new event loop); ``groups``
    counts the groups it has stored. Grouping and the answers are described in the module doc.

    Parameters
    ----------
    storage : Storage
        Where the reports are stored (``Storage.ingest``, one transaction per survey and group).
    """

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self._queue: asyncio.Queue | None = None
        self._task: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.groups = 0

    async def submit(self, survey: Survey, credential_id: str | None, ids: list,
                     rows: list) -> dict:
        """Queue one request's reports, checked in shape, and answer after their group's commit.

        Parameters
        ----------
        survey : Survey
            The survey the reports are for, as read when their shape was checked (a group is
            refused if its survey changed since).
        credential_id : str or None
            The id of the submission code that sent them, stored with each report.
        ids : list of str
            The client-generated report ids (``wire.parse_report_id``), one per report.
        rows : list of list
            The reports' cells, one row per report in the order of ``ids``, as
            ``SurveySpec.cells_of`` returns them (schema order, None = missing).

        Returns
        -------
        dict
            ``accepted``: the request's reports stored now; ``duplicates``: the others (their
            id was already stored, or taken by an earlier request of the same group);
            ``n_reports``: the survey's report count after the commit.

        Raises
        ------
        ReportError
            When a report of this request is not valid for the survey (nothing of the request
            is stored).
        StorageError
            When the survey changed while the reports were sent, or the request would take its
            code past its quota (``QuotaExceeded``; nothing of the request is stored). Any other error of the
            group's store is raised to every request of the group, none of which was stored.
        """
        loop = asyncio.get_running_loop()
        if (self._queue is None or self._task is None or self._task.done()
                or self._loop is not loop):
            # (re)start the writer on this event loop (a test client may run several loops)
            self._queue = asyncio.Queue()
            self._loop = loop
            self._task = loop.create_task(self._run())
        fut = loop.create_future()
        await self._queue.put(_Pending(survey, credential_id, ids, rows, fut))
        return await fut

    async def _run(self) -> None:
        from fastapi.concurrency import run_in_threadpool

        q = self._queue
        assert q is not None  # set by submit before it starts this task
        while True:
            first = await q.get()
            group, size = [first], len(first.ids)
            while not q.empty() and size < MAX_GROUP_REPORTS:
                item = q.get_nowait()
                group.append(item)
                size += len(item.ids)
            by_survey: dict[str, list[_Pending]] = {}
            for item in group:
                by_survey.setdefault(item.survey.id, []).append(item)
            for items in by_survey.values():
                try:
                    answers = await run_in_threadpool(self._store, items)
                except BaseException as exc:  # nothing of this group was stored
                    for it in items:
                        if not it.future.done():
                            it.future.set_exception(
                                exc if isinstance(exc, Exception) else RuntimeError(str(exc)))
                    if not isinstance(exc, Exception):
                        raise
                    continue
                for it, ans in zip(items, answers):
                    if it.future.done():
                        continue
                    if isinstance(ans, Exception):
                        it.future.set_exception(ans)
                    else:
                        it.future.set_result(ans)
            self.groups += 1

    def _store(self, items: list[_Pending]) -> list:
        """Decode and store one survey's group; one answer (dict or exception) per request."""
        spec = items[0].survey.spec
        revisions = {it.survey.revision for it in items}
        if len(revisions) > 1:
            raise StorageError("the survey changed while reports were sent; fetch its "
                               "configuration again")
        answers: list = [None] * len(items)
        good = list(range(len(items)))
        try:
            rr = spec.decode([r for it in items for r in it.rows])
        except ReportError:
            good = []
            for i, it in enumerate(items):
                try:
                    spec.decode(it.rows)
                    good.append(i)
                except ReportError as exc:
                    answers[i] = exc
            if not good:
                return answers
            rr = spec.decode([r for i in good for r in items[i].rows])
        # the storage decides per request: duplicates (the first occurrence in the group wins)
        # and the code's quota (a request past it is refused whole, the others stored)
        subs = [Submission(items[i].credential_id, items[i].ids, items[i].rows) for i in good]
        for i, res in zip(good, self.storage.store(items[0].survey, subs, rr)):
            answers[i] = res if isinstance(res, Exception) else {
                "accepted": res.accepted, "duplicates": res.duplicates,
                "n_reports": res.n_reports}
        return answers
