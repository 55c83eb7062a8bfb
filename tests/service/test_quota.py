"""One person, one report: a submission code stores at most its quota of reports (1 by default,
an institution's declared number), retries of stored ids do not count, concurrent requests of one
code cannot pass the quota together, and the owner can withdraw a code's reports (counts
recomputed, code revoked, audited)."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import numpy as np

from reidrisk.client import SurveyClient
from reidrisk.estimation.pairs import pair_counts
from reidrisk.service.models import collected_reports

from .conftest import admin_headers, bearer, issue, new_survey, population


def one(values: dict, rid: str | None = None) -> dict:
    return {"id": rid or str(uuid.uuid4()), "values": values}


def n_reports(client, sid: str) -> int:
    return client.get(f"/surveys/{sid}", headers=admin_headers()).json()["n_reports"]


def test_a_code_stores_one_report_by_default_and_a_retry_is_not_a_second(client):
    sid = new_survey(client)["id"]
    code = issue(client, sid, quota=None)[0]  # the server's default
    assert code["quota"] == 1 and code["used"] == 0
    first = one({"smoker": "1"})
    url = f"/surveys/{sid}/reports"
    assert client.post(url, headers=bearer(code["token"]), json=first).status_code == 201
    r = client.post(url, headers=bearer(code["token"]), json=first)  # a retry: same id
    assert r.status_code == 201 and r.json() == {"accepted": 0, "duplicates": 1, "n_reports": 1}
    r = client.post(url, headers=bearer(code["token"]), json=one({"smoker": "0"}))  # a second
    assert r.status_code == 409
    assert "may store 1 report(s) and has stored 1" in r.json()["detail"]
    assert "quota" in r.json()["detail"]
    assert n_reports(client, sid) == 1
    listed = client.get(f"/surveys/{sid}/codes", headers=admin_headers()).json()
    assert [(c["quota"], c["used"]) for c in listed] == [(1, 1)]


def test_an_institution_code_stores_its_quota_and_a_batch_past_it_is_refused_whole(client):
    sid = new_survey(client)["id"]
    code = issue(client, sid, quota=5)[0]["token"]
    url = f"/surveys/{sid}/reports/batch"
    three = [one({"smoker": "1"}) for _ in range(3)]
    assert client.post(url, headers=bearer(code), json={"reports": three}).status_code == 201
    r = client.post(url, headers=bearer(code), json={"reports": [one({"smoker": "0"})
                                                                 for _ in range(3)]})
    assert r.status_code == 409 and "would add 3" in r.json()["detail"]
    assert n_reports(client, sid) == 3  # nothing of the refused batch
    # two of the stored ids again (duplicates, not counted) and two new: within the quota
    r = client.post(url, headers=bearer(code), json={"reports": three[:2] + [
        one({"smoker": "0"}), one({"age": "1"})]})
    assert r.status_code == 201 and r.json() == {"accepted": 2, "duplicates": 2, "n_reports": 5}


def test_concurrent_requests_of_one_code_cannot_pass_its_quota_together(app, client, storage):
    sid = new_survey(client)["id"]
    person = issue(client, sid, quota=None)[0]["token"]
    clinic = issue(client, sid, quota=40)[0]["token"]

    async def send():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
            return await asyncio.gather(
                *(http.post(f"/surveys/{sid}/reports", headers=bearer(person),
                            json=one({"smoker": "1"})) for _ in range(12)),
                *(http.post(f"/surveys/{sid}/reports/batch", headers=bearer(clinic),
                            json={"reports": [one({"region": "2"}) for _ in range(10)]})
                  for _ in range(7)))

    answers = asyncio.run(send())
    codes = [a.status_code for a in answers]
    assert codes[:12].count(201) == 1 and codes[:12].count(409) == 11
    assert codes[12:].count(201) == 4 and codes[12:].count(409) == 3
    survey = storage.survey(sid)
    assert survey.n_reports == 1 + 40
    assert np.array_equal(storage.counts(survey).gram,
                          pair_counts(collected_reports(storage, survey).reports).gram)


def test_the_owner_withdraws_a_code_s_reports_counts_recomputed_and_audited(client, storage):
    sid = new_survey(client, epsilon=2.0)["id"]
    flood, honest = (c["token"] for c in issue(client, sid, count=2, quota=300))
    token = issue(client, sid, "tokens")[0]["token"]
    subs = {c: SurveyClient("http://testserver", sid, c, http=client, retries=0)
            for c in (flood, honest)}
    kept = subs[honest].submit(subs[honest].randomize(population(120, 1), rng=1))
    flood_rr = subs[flood].randomize(population(200, 2), rng=2)
    flooded = subs[flood].submit(flood_rr)
    assert (kept.accepted, flooded.accepted) == (120, 200)
    before = client.get(f"/surveys/{sid}/marginals", headers=bearer(token)).json()
    assert before["n_reports"] == 320
    cid = next(c["id"] for c in client.get(f"/surveys/{sid}/codes", headers=admin_headers())
               .json() if c["used"] == 200)

    assert client.post(f"/surveys/{sid}/codes/{cid}/withdraw",
                       json={"reason": "flood"}).status_code == 401  # the owner only
    r = client.post(f"/surveys/{sid}/codes/{cid}/withdraw", headers=admin_headers(),
                    json={"reason": "one code sent 200 reports"})
    assert r.status_code == 200, r.text
    assert r.json() == {"credential_id": cid, "withdrawn": 200, "n_reports": 120}
    # the counts are those of the honest code's reports alone, and the model is refitted
    survey = storage.survey(sid)
    cells = collected_reports(storage, survey)
    assert cells.n == 120 and set(storage.report_ids(sid)) == set(kept.ids)
    pc = pair_counts(cells.reports)
    counts = client.get(f"/surveys/{sid}/counts", headers=bearer(token)).json()
    assert counts["n"] == 120 and np.array_equal(np.array(counts["gram"]), pc.gram)
    assert np.array_equal(np.array(counts["n_pair"]), pc.n_pair)
    after = client.get(f"/surveys/{sid}/marginals", headers=bearer(token)).json()
    assert after["n_reports"] == 120 and after != before
    # the code is revoked, a withdrawn id is not stored again, and the log says what happened
    r = client.post(f"/surveys/{sid}/reports", headers=bearer(flood),
                    json=one({"smoker": "1"}))
    assert r.status_code == 403 and "revoked" in r.json()["detail"]
    again = subs[flood].wire_reports(flood_rr.take(np.array([0])), ids=flooded.ids[:1])[0]
    r = client.post(f"/surveys/{sid}/reports", headers=bearer(honest), json=again)
    assert r.status_code == 201 and r.json()["duplicates"] == 1 and n_reports(client, sid) == 120
    log = client.get(f"/surveys/{sid}/audit", headers=admin_headers()).json()
    assert [(e["action"], e["credential_id"], e["n_reports"], e["detail"]) for e in log] == [
        ("withdraw", cid, 200, "one code sent 200 reports")]
    # withdrawing again takes nothing more out; an unknown code is a 404
    r = client.post(f"/surveys/{sid}/codes/{cid}/withdraw", headers=admin_headers())
    assert r.json()["withdrawn"] == 0 and n_reports(client, sid) == 120
    assert client.post(f"/surveys/{sid}/codes/nope/withdraw",
                       headers=admin_headers()).status_code == 404
