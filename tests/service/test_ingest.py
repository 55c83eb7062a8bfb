"""Group commit: concurrent requests are decoded and stored together, yet each batch stays
all-or-nothing, a bad request does not sink the others, and an id sent twice is stored once."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import numpy as np

from reidrisk.client import SurveyClient
from reidrisk.estimation.pairs import pair_counts
from reidrisk.service.models import collected_reports

from .conftest import admin_headers, bearer, issue, new_survey, population


def test_concurrent_requests_share_a_commit_and_keep_their_own_answers(app, client, storage):
    sid = new_survey(client, epsilon=1.0)["id"]
    code = issue(client, sid)[0]["token"]
    sub = SurveyClient("http://testserver", sid, code, http=client)
    batches = [sub.wire_reports(sub.randomize(population(30, s), rng=s)) for s in range(12)]
    batches[4][7]["values"]["region"] = "0|9"  # outside the domain: batch 4 is refused whole
    shared = str(uuid.uuid4())
    batches[9][0]["id"] = batches[10][0]["id"] = shared  # one id in two concurrent requests
    batches[10][0]["values"] = batches[9][0]["values"]

    async def send():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
            return await asyncio.gather(*(
                http.post(f"/surveys/{sid}/reports/batch", headers=bearer(code),
                          json={"reports": b}) for b in batches))

    groups = app.state.writer.groups
    answers = asyncio.run(send())
    assert app.state.writer.groups - groups < len(batches)  # requests were grouped
    assert answers[4].status_code == 422 and answers[4].json()["report"] == 7
    ok = [a.json() for i, a in enumerate(answers) if i != 4]
    assert all(a.status_code == 201 for i, a in enumerate(answers) if i != 4)
    assert sum(a["accepted"] for a in ok) == 11 * 30 - 1
    assert sum(a["duplicates"] for a in ok) == 1
    survey = storage.survey(sid)
    assert survey.n_reports == 11 * 30 - 1
    ids = storage.report_ids(sid)
    assert len(ids) == len(set(ids)) == survey.n_reports
    assert np.array_equal(storage.counts(survey).gram,
                          pair_counts(collected_reports(storage, survey).reports).gram)
    assert client.get(f"/surveys/{sid}", headers=admin_headers()).json()["n_reports"] == 329
