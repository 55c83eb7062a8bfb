"""Access control and validation: admin token, submission codes (hashed at rest, revocable,
rate-limited), read-only researcher tokens, and a named 4xx for every malformed report."""

from __future__ import annotations

import json
import uuid

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from reidrisk.service import migrations as m
from reidrisk.service.app import create_app

from .conftest import ADMIN, SCHEMA, admin_headers, bearer, issue, new_survey


def one(values, rid=None):
    return {"id": rid or str(uuid.uuid4()), "values": values}


def stored(client, sid):
    return client.get(f"/surveys/{sid}", headers=admin_headers()).json()["n_reports"]


def test_only_the_admin_creates_surveys_and_issues_codes(client):
    body = {"name": "x", "schema": SCHEMA.to_dict(), "protocol": {"epsilon": 1.0}}
    assert client.post("/surveys", json=body).status_code == 401
    assert client.post("/surveys", json=body, headers=bearer("guess")).status_code == 403
    sid = new_survey(client)["id"]
    token = issue(client, sid, "tokens")[0]["token"]
    assert client.post("/surveys", json=body, headers=bearer(token)).status_code == 403
    assert client.post(f"/surveys/{sid}/codes", json={}, headers=bearer(token)).status_code == 403


def test_codes_submit_researchers_read_and_neither_does_the_other(client):
    sid = new_survey(client)["id"]
    other = new_survey(client)["id"]
    code = issue(client, sid)[0]["token"]
    token = issue(client, sid, "tokens")[0]["token"]
    report = one({"age": "0|1", "region": "2|3", "smoker": "1"})
    assert client.post(f"/surveys/{sid}/reports", json=report).status_code == 401
    assert client.post(f"/surveys/{sid}/reports", json=report,
                       headers=bearer(token)).status_code == 403
    assert client.post(f"/surveys/{other}/reports", json=report,
                       headers=bearer(code)).status_code == 403
    assert client.get(f"/surveys/{sid}/counts", headers=bearer(code)).status_code == 403
    assert client.get(f"/surveys/{other}/counts", headers=bearer(token)).status_code == 403
    assert client.get(f"/surveys/{sid}/counts", headers=bearer(token)).status_code == 200


def test_a_revoked_code_is_refused(client):
    sid = new_survey(client)["id"]
    c = issue(client, sid)[0]
    r = client.delete(f"/surveys/{sid}/codes/{c['id']}", headers=admin_headers())
    assert r.status_code == 200 and r.json()["revoked"]
    r = client.post(f"/surveys/{sid}/reports", headers=bearer(c["token"]),
                    json=one({"smoker": "1"}))
    assert r.status_code == 403 and "revoked" in r.json()["detail"]
    listed = client.get(f"/surveys/{sid}/codes", headers=admin_headers()).json()
    assert listed[0]["revoked"] and listed[0]["token"] is None


def test_codes_are_stored_only_as_hashes(client, storage):
    sid = new_survey(client)["id"]
    tokens = [c["token"] for c in issue(client, sid, count=3)]
    with storage.engine.connect() as conn:
        dump = json.dumps([list(map(str, r)) for r in conn.execute(sa.select(m.credentials))])
    assert not any(t in dump for t in tokens)


def test_codes_are_rate_limited(storage):
    app = create_app(storage, admin_token=ADMIN, code_rate=0.01, code_burst=2)
    with TestClient(app) as client:
        sid = new_survey(client)["id"]
        code, other = (c["token"] for c in issue(client, sid, count=2))
        answers = [client.post(f"/surveys/{sid}/reports", headers=bearer(code),
                               json=one({"smoker": "0"})) for _ in range(3)]
        assert [a.status_code for a in answers] == [201, 201, 429]
        assert int(answers[2].headers["retry-after"]) > 0
        # the limit is per code
        assert client.post(f"/surveys/{sid}/reports", headers=bearer(other),
                           json=one({"smoker": "0"})).status_code == 201


# every malformed report: (values or whole body, words the 4xx body must contain)
MALFORMED = {
    "wrong set size": (one({"age": "1"}), ["age", "holds 1 values"]),
    "value outside the domain": (one({"region": "1|7"}), ["region", "outside the domain"]),
    "bit outside the domain": (one({"smoker": "2"}), ["smoker", "outside"]),
    "unknown attribute": (one({"income": "1"}), ["unknown attribute", "income"]),
    "raw label": (one({"region": "north|east"}), ["region", "not a randomized report"]),
    "raw label alone": (one({"smoker": "yes"}), ["smoker", "not a randomized report"]),
    "number instead of a cell": (one({"smoker": 1}), ["smoker", "must be a string"]),
    "negative code": (one({"smoker": "-1"}), ["smoker", "not a randomized report"]),
    "repeated code": (one({"age": "1|1"}), ["age", "repeats"]),
    "no id": ({"values": {"smoker": "1"}}, ["id"]),
    "id not a uuid": (one({"smoker": "1"}, rid="report-1"), ["UUID"]),
    "extra field": ({**one({"smoker": "1"}), "raw": {"smoker": "yes"}}, ["unexpected", "raw"]),
    "values not an object": (one(["1"]), ["values"]),
    "not an object": (["x"], ["object"]),
    "empty report": (one({}), ["holds no answer"]),
    "every value null": (one({"age": None, "region": None, "smoker": None}), ["holds no answer"]),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_every_malformed_report_gets_a_4xx_naming_the_problem(client, case):
    sid = new_survey(client, epsilon=1.0)["id"]  # subset: age h = 2 of 3, region h = 2 of 4
    code = issue(client, sid)[0]["token"]
    cfg = client.get(f"/surveys/{sid}/config").json()
    assert [a["mechanism"].get("h") for a in cfg["attributes"]][:2] == [2, 2], cfg
    body, words = MALFORMED[case]
    r = client.post(f"/surveys/{sid}/reports", headers=bearer(code), json=body)
    assert 400 <= r.status_code < 500, r.text
    for w in words:
        assert w in r.json()["detail"], (w, r.json())
    assert stored(client, sid) == 0


def test_too_many_attributes_for_the_protocol_are_refused(client):
    sid = new_survey(client, k=1)["id"]  # each person reports one attribute at epsilon
    code = issue(client, sid)[0]["token"]
    r = client.post(f"/surveys/{sid}/reports", headers=bearer(code),
                    json=one({"age": "1", "smoker": "0"}))
    assert r.status_code == 422 and "more than the protocol's k = 1" in r.json()["detail"]


def test_a_body_that_is_not_json_is_a_400(client):
    sid = new_survey(client)["id"]
    code = issue(client, sid)[0]["token"]
    r = client.post(f"/surveys/{sid}/reports", headers={**bearer(code),
                    "content-type": "application/json"}, content=b"{not json")
    assert r.status_code == 400 and "not JSON" in r.json()["detail"]
    r = client.post(f"/surveys/{sid}/reports/batch", headers=bearer(code), json={"reports": []})
    assert r.status_code == 422 and "no reports" in r.json()["detail"]


def test_a_code_revoked_by_another_server_process_stops_at_once(storage):
    """Two servers share one database: a code revoked through the second is refused by the
    first on its next request, though the first keeps the code in memory."""
    first, second = (TestClient(create_app(storage, admin_token=ADMIN, code_rate=0))
                     for _ in range(2))
    with first, second:
        sid = new_survey(first)["id"]
        c = issue(first, sid)[0]
        send = [one({"smoker": "1"}) for _ in range(2)]
        url = f"/surveys/{sid}/reports"
        assert first.post(url, headers=bearer(c["token"]), json=send[0]).status_code == 201
        r = second.delete(f"/surveys/{sid}/codes/{c['id']}", headers=admin_headers())
        assert r.status_code == 200 and r.json()["revoked"]
        r = first.post(url, headers=bearer(c["token"]), json=send[1])
        assert r.status_code == 403 and "revoked" in r.json()["detail"]
        assert storage.survey(sid).n_reports == 1
