"""The report endpoints' ASGI fast path (``IngestFastPath``): it answers the two report endpoints
with the service's own checks and error bodies, and leaves every other request to the app."""

from __future__ import annotations

import json
import uuid

from reidrisk.service.app import MAX_BODY_BYTES, IngestFastPath

from .conftest import admin_headers, bearer, issue, new_survey


def one(values):
    return {"id": str(uuid.uuid4()), "values": values}


def test_the_report_endpoints_are_answered_by_the_fast_path(app, client, monkeypatch):
    sid = new_survey(client)["id"]
    code = issue(client, sid)[0]["token"]
    seen = []
    call = IngestFastPath.__call__

    async def spy(self, scope, receive, send):
        seen.append((scope["method"], scope["path"]))
        await call(self, scope, receive, send)

    monkeypatch.setattr(IngestFastPath, "__call__", spy)
    r = client.post(f"/surveys/{sid}/reports", headers=bearer(code), json=one({"age": "1"}))
    assert r.status_code == 201 and r.headers["content-type"] == "application/json"
    assert r.json() == {"accepted": 1, "duplicates": 0, "n_reports": 1}
    r = client.post(f"/surveys/{sid}/reports/batch", headers=bearer(code),
                    json={"reports": [one({"region": "2"}), one({"smoker": "1"})]})
    assert r.status_code == 201 and r.json()["accepted"] == 2
    assert ("POST", f"/surveys/{sid}/reports") in seen
    # other methods and paths still reach the app's routes
    assert client.get(f"/surveys/{sid}/reports", headers=bearer(code)).status_code == 405
    assert client.get(f"/surveys/{sid}", headers=admin_headers()).json()["n_reports"] == 3
    paths = client.get("/openapi.json").json()["paths"]
    assert "/surveys/{sid}/reports" in paths and "/surveys/{sid}/reports/batch" in paths


def test_fast_path_refusals_are_the_service_error_bodies(client):
    sid = new_survey(client)["id"]
    code = issue(client, sid)[0]["token"]
    url = f"/surveys/{sid}/reports"
    r = client.post(url, json=one({"age": "1"}))
    assert r.status_code == 401 and "submission code" in r.json()["detail"]
    r = client.post("/surveys/nope/reports", headers=bearer(code), json=one({"age": "1"}))
    assert r.status_code == 404 and r.json() == {"detail": "no survey 'nope'", "report": None}
    r = client.post(url, headers=bearer(code), content=b"{not json")
    assert r.status_code == 400 and "not JSON" in r.json()["detail"]
    r = client.post(url, headers=bearer(code), json=one({"age": "young"}))
    assert r.status_code == 422 and r.json()["report"] == 0 and "'age'" in r.json()["detail"]
    big = b'{"reports": [' + b" " * (MAX_BODY_BYTES + 10) + b"]}"
    r = client.post(url + "/batch", headers=bearer(code), content=big)
    assert r.status_code == 413 and str(MAX_BODY_BYTES) in r.json()["detail"]
    assert client.get(f"/surveys/{sid}", headers=admin_headers()).json()["n_reports"] == 0


def test_a_middleware_added_later_still_sees_the_report_bodies(storage):
    """The form's browser test records what the page sent with an HTTP middleware added after
    ``create_app``; it sits outside the fast path and sees every report body."""
    from fastapi.testclient import TestClient

    from reidrisk.service.app import create_app

    from .conftest import ADMIN

    app = create_app(storage, admin_token=ADMIN, code_rate=0)
    bodies = []

    @app.middleware("http")
    async def record(request, call_next):
        if request.method == "POST" and "/reports" in request.url.path:
            bodies.append(await request.body())
        return await call_next(request)

    client = TestClient(app)
    sid = new_survey(client)["id"]
    code = issue(client, sid)[0]["token"]
    report = one({"smoker": "1"})
    r = client.post(f"/surveys/{sid}/reports", headers=bearer(code), json=report)
    assert r.status_code == 201, r.text
    assert [json.loads(b) for b in bodies] == [report]
