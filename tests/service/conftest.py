"""Fixtures of the service tests: the API runs against SQLite always and against the machine's
PostgreSQL server (127.0.0.1:5432, database ``test``) in a fresh database created for the test
session and dropped after it. Without PostgreSQL the PostgreSQL half is skipped with a message, or
fails under CI=true (the CI runner starts the server)."""

from __future__ import annotations

import os
import secrets

import numpy as np
import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient  # noqa: E402

from reidrisk.schema import Attribute, Schema  # noqa: E402
from reidrisk.service.app import create_app  # noqa: E402
from reidrisk.service.storage import Storage  # noqa: E402

PG_ADMIN_URL = os.environ.get("REIDRISK_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
ADMIN = "admin-test-token"
SCHEMA = Schema((Attribute("age", ("18-29", "30-49", "50+")),
                 Attribute("region", ("north", "east", "south", "west")),
                 Attribute("smoker", ("no", "yes"))))


def missing(what: str, *, ci: str, local: str):
    """A real part the suite needs is absent: a failure under CI=true (where .ci/run provides
    it), a skip elsewhere."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{what}; under CI=true {ci}")
    pytest.skip(f"{what}; {local}")


def _pg_database():
    """(url of a fresh database, drop function), or a skip/fail when PostgreSQL is unreachable."""
    try:
        import psycopg

        admin = psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=3)
    except Exception as exc:
        msg = f"PostgreSQL at {PG_ADMIN_URL} is not reachable ({exc.__class__.__name__}: {exc})"
        missing(msg, ci="the PostgreSQL tests must run (.ci/run starts it)",
                local="start it to run the PostgreSQL half of the API suite")
    name = f"reidrisk_test_{secrets.token_hex(6)}"
    admin.execute(f'CREATE DATABASE "{name}"')
    base = PG_ADMIN_URL.rsplit("/", 1)[0]

    def drop():
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()

    return f"{base}/{name}", drop


@pytest.fixture(scope="session", params=["sqlite", "postgresql"])
def db_url(request, tmp_path_factory):
    if request.param == "sqlite":
        d = tmp_path_factory.mktemp("service-db")
        yield f"sqlite:///{d / 'reidrisk.sqlite3'}"
        return
    url, drop = _pg_database()
    yield url
    drop()


@pytest.fixture(scope="session")
def storage(db_url):
    from reidrisk.service.storage import database_url

    s = Storage(database_url(db_url, None))
    yield s
    s.close()


@pytest.fixture
def app(storage):
    return create_app(storage, admin_token=ADMIN, code_rate=0)


@pytest.fixture
def client(app):
    with TestClient(app) as c:
        yield c


def admin_headers() -> dict:
    return {"Authorization": f"Bearer {ADMIN}"}


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def new_survey(client, *, epsilon=4.0, k=None, mechanism="subset", schema=SCHEMA) -> dict:
    r = client.post("/surveys", headers=admin_headers(), json={
        "name": "test survey", "schema": schema.to_dict(),
        "protocol": {"epsilon": epsilon, "k": k, "mechanism": mechanism}})
    assert r.status_code == 201, r.text
    return r.json()


def issue(client, sid: str, kind: str = "codes", count: int = 1,
          quota: int | None = 10**6) -> list[dict]:
    """Issue credentials; codes get an institution's quota unless ``quota`` says otherwise
    (``None``: the server's default, one report)."""
    body = {"label": "t", "count": count}
    if kind == "codes" and quota is not None:
        body["quota"] = quota
    r = client.post(f"/surveys/{sid}/{kind}", headers=admin_headers(), json=body)
    assert r.status_code == 201, r.text
    return r.json()


def population(n: int, seed: int, missing: float = 0.2) -> np.ndarray:
    """Codes (n, 3) with a dependence between age and smoker and MCAR gaps; every person
    answers at least one question (the server refuses an empty report)."""
    rng = np.random.default_rng(seed)
    age = rng.choice(3, n, p=[0.3, 0.45, 0.25])
    region = rng.choice(4, n, p=[0.4, 0.3, 0.2, 0.1])
    smoker = (rng.random(n) < np.array([0.5, 0.3, 0.1])[age]).astype(int)
    codes = np.column_stack([age, region, smoker])
    gaps = rng.random(codes.shape) < missing
    gaps[gaps.all(axis=1), 1] = False  # region answered by whoever skipped everything
    codes[gaps] = -1
    return codes
