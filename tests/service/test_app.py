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
