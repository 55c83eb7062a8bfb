"""A property test: malformed bodies thrown at the ingestion endpoints always get a 4xx, the server
stays up, and nothing is stored."""

from __future__ import annotations

import re
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import SCHEMA, admin_headers, bearer, issue, new_survey

NAMES = SCHEMA.names
SIZES = dict(zip(NAMES, (int(s) for s in SCHEMA.sizes)))
VALID_LOOKING = re.compile(r"^\s*[0-9]+(\|[0-9]+)*\s*$")

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=12,
)
ids = st.uuids().map(str)


def report(values):
    return st.builds(lambda i, v: {"id": i, "values": v}, ids, values)


# each strategy is malformed by construction (the comment says why)
not_a_report = json_values.filter(  # not an object holding exactly "id" and "values"
    lambda v: not (isinstance(v, dict) and set(v) == {"id", "values"}))
bad_id = st.builds(lambda i, a: {"id": i, "values": {a: "0"}},  # not a UUID
                   st.text(max_size=40).filter(lambda t: not _is_uuid(t)), st.sampled_from(NAMES))
unknown_attribute = report(st.dictionaries(
    st.text(min_size=1, max_size=12).filter(lambda k: k not in NAMES), st.just("0"), min_size=1,
    max_size=3))
non_string_cell = report(st.builds(lambda a, v: {a: v}, st.sampled_from(NAMES),
                                   json_values.filter(lambda v: v is not None
                                                      and not isinstance(v, str))))
text_cell = report(st.builds(lambda a, t: {a: t}, st.sampled_from(NAMES), st.text(max_size=30)
                             .filter(lambda t: not VALID_LOOKING.match(t))))
out_of_domain = report(st.sampled_from(NAMES).flatmap(lambda a: st.builds(
    lambda codes: {a: "|".join(map(str, codes))},
    st.lists(st.integers(SIZES[a], 10 ** 9 - 1), min_size=1, max_size=3))))
wrong_size = report(st.sampled_from(NAMES[:2]).flatmap(lambda a: st.builds(  # h = 2 (epsilon 1)
    lambda codes: {a: "|".join(map(str, codes))},
    st.lists(st.integers(0, SIZES[a] - 1), unique=True, max_size=SIZES[a]).filter(
        lambda c: len(c) != 2)))).filter(lambda r: any(r["values"].values()))
malformed = st.one_of(not_a_report, bad_id, unknown_attribute, non_string_cell, text_cell,
                      out_of_domain, wrong_size)
valid = report(st.just({"age": "0|2", "region": "1|3", "smoker": "1"}))
batch = st.builds(lambda good, bad, pos: {"reports": good[:pos] + [bad] + good[pos:]},
                  st.lists(valid, max_size=5), malformed, st.integers(0, 5))


def _is_uuid(t: str) -> bool:
    try:
        uuid.UUID(t)
        return True
    except ValueError:
        return False


@pytest.fixture
def target(client):
    sid = new_survey(client, epsilon=1.0)["id"]
    return client, sid, issue(client, sid)[0]["token"]


def _check(target, body, as_batch, wrapped):
    client, sid, code = target
    if as_batch:
        r = client.post(f"/surveys/{sid}/reports/batch", headers=bearer(code), json=wrapped)
    else:
        r = client.post(f"/surveys/{sid}/reports", headers=bearer(code), json=body)
    assert 400 <= r.status_code < 500, (body, r.status_code, r.text)
    assert isinstance(r.json()["detail"], str) and r.json()["detail"]
    assert client.get("/health").status_code == 200
    assert client.get(f"/surveys/{sid}", headers=admin_headers()).json()["n_reports"] == 0


_HEALTH = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]


@settings(max_examples=20, deadline=None, suppress_health_check=_HEALTH)
@given(body=malformed, as_batch=st.booleans(), wrapped=batch)
def test_malformed_bodies_get_4xx_and_store_nothing(target, body, as_batch, wrapped):
    _check(target, body, as_batch, wrapped)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=_HEALTH)
@given(body=malformed, as_batch=st.booleans(), wrapped=batch)
def test_malformed_bodies_get_4xx_and_store_nothing_many(target, body, as_batch, wrapped):
    _check(target, body, as_batch, wrapped)
