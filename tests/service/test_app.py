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
