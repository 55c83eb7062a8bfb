"""The Python client: configuration, local randomization with the secure generator, retries that
re-send the same report id, and a run against a real server process."""

from __future__ import annotations

import httpx
import numpy as np
import pandas as pd
import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient  # noqa: E402

import reidrisk.mechanisms.base as base  # noqa: E402
from reidrisk.client import ClientError, SurveyClient  # noqa: E402
from reidrisk.schema import Attribute, Schema  # noqa: E402
from reidrisk.service.app import create_app  # noqa: E402
from reidrisk.service.storage import Storage, database_url  # noqa: E402

ADMIN = "admin"
SCHEMA = Schema((Attribute("sex", ("f", "m")), Attribute("age", ("young", "mid", "old"))))
H = {"Authorization": f"Bearer {ADMIN}"}


@pytest.fixture
def tc(tmp_path):
    storage = Storage(database_url(None, tmp_path))
    with TestClient(create_app(storage, admin_token=ADMIN, code_rate=0)) as c:
        yield c
    storage.close()


def survey(http, mechanism="grr") -> tuple[str, str]:
    sid = http.post("/surveys", headers=H, json={
        "name": "s", "schema": SCHEMA.to_dict(),
        "protocol": {"epsilon": 2.0, "mechanism": mechanism}}).json()["id"]
    code = http.post(f"/surveys/{sid}/codes", headers=H,
                     json={"quota": 10**6}).json()[0]["token"]
    return sid, code


class Flaky(httpx.BaseTransport):
    """Passes requests to ``inner``; the first POST is delivered but its answer is lost (or, with
    ``deliver=False``, answered 503 without being delivered)."""

    def __init__(self, inner, deliver=True):
        self.inner, self.deliver, self.posts = inner, deliver, []

    def handle_request(self, request):
        if request.method == "POST":
            self.posts.append(request.read())
            if len(self.posts) == 1:
                if not self.deliver:
                    return httpx.Response(503, json={"detail": "busy"})
                self.inner.handle_request(request).read()
                raise httpx.ReadTimeout("answer lost", request=request)
        return self.inner.handle_request(request)


def flaky_client(tc, sid, code, deliver=True):
    transport = Flaky(tc._transport, deliver)
    http = httpx.Client(transport=transport, base_url="http://testserver")
    return SurveyClient("http://testserver", sid, code, http=http, backoff=0.001), transport


def test_answers_are_randomized_locally_with_the_secure_generator(tc, monkeypatch):
    sid, code = survey(tc)
    calls = []
    real = base.secure_generator
    # the spy hands out a fixed-key secure generator, so the reports can be compared with it
    monkeypatch.setattr(base, "secure_generator",
                        lambda *a, **k: calls.append(1) or real(key=777))
    client = SurveyClient("http://testserver", sid, code, http=tc)
    answers = pd.DataFrame({"sex": ["f", None, "m"] * 20, "age": ["old", "mid", None] * 20})
    rr = client.randomize(answers)
    assert calls, "rng=None must draw from reidrisk.mechanisms.secure_generator"
    same = client.randomize(answers, rng=real(key=777))
    for a, b in zip(rr.reports, same.reports, strict=True):
        np.testing.assert_array_equal(a, b)  # drawn from that generator, not another one
    answers = answers.iloc[:3]
    rr = client.randomize(answers)
    assert rr.present().tolist() == [[True, True], [False, True], [True, False]]  # skips stay
    sent = client.wire_reports(rr)
    assert "sex" not in sent[1]["values"] and "age" not in sent[2]["values"]
    res = client.submit(rr)
    assert (res.accepted, res.duplicates) == (3, 0)


def test_a_lost_answer_is_retried_with_the_same_id_and_stored_once(tc):
    sid, code = survey(tc)
    client, transport = flaky_client(tc, sid, code)
    res = client.submit_answers(np.array([[0, 1], [1, 2]]), rng=0)
    assert (res.accepted, res.duplicates) == (0, 2)  # the first attempt stored them
    assert transport.posts[0] == transport.posts[1]  # same ids, same reports
    assert tc.get(f"/surveys/{sid}", headers=H).json()["n_reports"] == 2
    one, transport = flaky_client(tc, sid, code)
    res = one.submit_answers(np.array([[1, 0]]), rng=1)  # the single-report endpoint
    assert (res.accepted, res.duplicates) == (0, 1)
    assert tc.get(f"/surveys/{sid}", headers=H).json()["n_reports"] == 3


def test_a_busy_server_is_retried(tc):
    sid, code = survey(tc)
    client, transport = flaky_client(tc, sid, code, deliver=False)
    res = client.submit_answers(np.array([[0, 1], [1, 2]]), rng=0)
    assert (res.accepted, res.duplicates) == (2, 0) and len(transport.posts) == 2


def test_a_refusal_is_not_retried_and_names_the_problem(tc):
    sid, _ = survey(tc)
    client = SurveyClient("http://testserver", sid, "sc_wrong", http=tc)
    with pytest.raises(ClientError, match="403: not a submission code") as err:
        client.submit_answers(np.array([[0, 1]]), rng=0)
    assert err.value.status == 403


@pytest.mark.slow
def test_against_a_real_server_process(tmp_path):
    from reidrisk.service.process import ServerProcess

    with ServerProcess(data_dir=tmp_path, admin_token=ADMIN) as server:
        with httpx.Client(base_url=server.url) as http:
            sid, code = survey(http, "subset")
            client = SurveyClient(server.url, sid, code)
            rng = np.random.default_rng(0)
            res = client.submit_answers(np.column_stack([rng.integers(0, 2, 400),
                                                         rng.integers(0, 3, 400)]), rng=1)
            assert res.accepted == 400
            m = http.get(f"/surveys/{sid}/marginals", headers=H).json()
            assert m["n_reports"] == 400
