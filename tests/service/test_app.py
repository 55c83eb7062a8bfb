"""reidrisk.service.app: the application's own routes and error shape (the survey, report and
credential endpoints are exercised in test_api.py, test_access.py, test_form.py and test_refit.py)."""

from reidrisk import __version__
from reidrisk.service.app import MAX_BATCH, MAX_BODY_BYTES, ApiError, too_large

from .conftest import admin_headers


def test_health_names_the_version(client, storage):
    r = client.get("/health")
    assert r.status_code == 200
    assert r.json() == {"status": "ok", "version": __version__, "schema_version": storage.version}


def test_errors_are_one_detail_with_the_status(client):
    r = client.get("/surveys/nope", headers=admin_headers())
    assert r.status_code == 404 and "nope" in r.json()["detail"]
    r = client.get("/surveys")  # admin only
    assert r.status_code in (401, 403) and r.json()["detail"]


def test_too_large_says_the_limits():
    e = too_large()
    assert isinstance(e, ApiError) and e.status == 413
    assert str(MAX_BODY_BYTES) in e.detail and str(MAX_BATCH) in e.detail


def _refs(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def test_every_reference_in_the_openapi_document_resolves(client):
    doc = client.get("/openapi.json").json()
    schemas = doc["components"]["schemas"]
    refs = set(_refs(doc))
    assert "#/components/schemas/BatchIn" in refs  # the fast-path bodies are referred to ...
    missing = sorted(r for r in refs if r.removeprefix("#/components/schemas/") not in schemas)
    assert missing == []  # ... and every reference names a schema the document has
    batch = schemas["BatchIn"]["properties"]["reports"]["items"]
    assert batch == {"$ref": "#/components/schemas/ReportIn"}


def test_every_response_carries_the_security_headers(client):
    from .conftest import bearer, issue, new_survey

    sid = new_survey(client)["id"]
    code = issue(client, sid)[0]["token"]
    answers = [client.get("/health"), client.get(f"/surveys/{sid}/config"),
               client.get("/surveys/nope", headers=admin_headers()),
               client.post(f"/surveys/{sid}/reports", headers=bearer(code), json=[]),  # fast path
               client.get(f"/surveys/{sid}/form"), client.get("/openapi.json")]
    for r in answers:
        assert r.headers["x-frame-options"] == "SAMEORIGIN", r.request.url
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["referrer-policy"] == "no-referrer"
        assert "frame-ancestors 'self'" in r.headers["content-security-policy"]


def test_deep_json_and_nul_bytes_are_refused_not_500(client):
    from .conftest import bearer, issue, new_survey

    sid = new_survey(client)["id"]
    code = issue(client, sid)[0]["token"]
    deep = b'{"reports": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    r = client.post(f"/surveys/{sid}/reports/batch", headers={**bearer(code),
                    "content-type": "application/json"}, content=deep)
    assert r.status_code == 400 and "nested" in r.json()["detail"]
    r = client.post("/surveys", headers={**admin_headers(), "content-type": "application/json"},
                    content=b'{"name": ' + b"[" * 5000 + b"]" * 5000 + b"}")
    assert 400 <= r.status_code < 500
    for path in ("/surveys/a%00b", f"/surveys/{sid}/codes/a%00b/withdraw"):
        r = client.post(path, headers=admin_headers()) if path.endswith("withdraw") else \
            client.get(path, headers=admin_headers())
        assert r.status_code == 404, (path, r.text)
    r = client.post("/surveys", headers=admin_headers(), json={
        "name": "a\x00b", "schema": {}, "protocol": {"epsilon": 1.0}})
    assert r.status_code == 422 and "name" in r.json()["detail"]
    r = client.post(f"/surveys/{sid}/codes", headers=admin_headers(), json={"label": "a\x00b"})
    assert r.status_code == 422


def test_a_short_admin_token_is_refused(storage):
    import pytest

    from reidrisk.service.app import MIN_ADMIN_TOKEN, create_app

    with pytest.raises(ValueError, match=f"at least {MIN_ADMIN_TOKEN} characters"):
        create_app(storage, admin_token="x")


def test_admin_writes_are_refused_before_their_body_is_read(app):
    import asyncio

    from .conftest import ADMIN

    def call(method, path, token, length):
        read, sent = [], []

        async def receive():
            read.append(1)
            return {"type": "http.request", "body": b"{}", "more_body": False}

        async def send(message):
            sent.append(message)

        headers = [(b"content-length", str(length).encode())]
        if token:
            headers.append((b"authorization", f"Bearer {token}".encode()))
        scope = {"type": "http", "method": method, "path": path, "raw_path": path.encode(),
                 "query_string": b"", "headers": headers, "client": ("10.0.0.9", 1),
                 "server": ("testserver", 80), "scheme": "http", "http_version": "1.1",
                 "root_path": "", "app": app}
        asyncio.run(app(scope, receive, send))
        return sent[0]["status"], len(read)

    assert call("POST", "/surveys", None, 100 << 20) == (401, 0)  # a 100 MB body, unread
    assert call("POST", "/surveys", "wrong-token-of-16+", 10) == (403, 0)
    assert call("PATCH", "/surveys/abc", None, 10) == (401, 0)
    assert call("POST", "/surveys", ADMIN, 100 << 20) == (413, 0)  # too large even for admin
    assert call("POST", "/surveys", ADMIN, 2)[0] == 422  # read and answered by the route


def test_failed_admin_tokens_are_throttled(client):
    from reidrisk.service.app import ADMIN_FAILURES_BURST

    bad = {"Authorization": "Bearer not-the-admin-token"}
    codes = [client.get("/surveys", headers=bad).status_code
             for _ in range(ADMIN_FAILURES_BURST + 3)]
    assert set(codes[:ADMIN_FAILURES_BURST - 2]) == {403} and codes[-1] == 429
    r = client.get("/surveys", headers=bad)
    assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
    assert client.get("/surveys", headers=admin_headers()).status_code == 200  # the admin is not


def test_the_api_pages_can_be_turned_off(storage):
    from fastapi.testclient import TestClient

    from reidrisk.service.app import create_app

    from .conftest import ADMIN

    with TestClient(create_app(storage, admin_token=ADMIN, docs=False)) as off, \
            TestClient(create_app(storage, admin_token=ADMIN)) as on:
        assert off.get("/docs").status_code == 404 and off.get("/redoc").status_code == 404
        assert off.get("/openapi.json").status_code == 200
        assert on.get("/docs").status_code == 200
