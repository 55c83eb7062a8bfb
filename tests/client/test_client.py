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

ADMIN = "admin-token-for-tests"
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


class Outage(httpx.BaseTransport):
    """Passes requests to ``inner`` until ``after`` POSTs went through; then every POST fails to
    connect while ``down`` is set."""

    def __init__(self, inner, after: int):
        self.inner, self.after, self.down, self.posts = inner, after, False, []
        self.tripped = False

    def handle_request(self, request):
        if request.method == "POST":
            if len(self.posts) == self.after and not self.tripped:
                self.down = self.tripped = True
            if self.down:
                raise httpx.ConnectError("connection refused", request=request)
            self.posts.append(request.read())
        return self.inner.handle_request(request)


def people(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"sex": rng.choice(["f", "m"], n), "age": rng.choice(["young", "mid",
                                                                               "old"], n)})


def sent_ids(posts) -> list[str]:
    import json

    ids = []
    for body in posts:
        doc = json.loads(body)
        ids += [r["id"] for r in doc.get("reports", [doc])]
    return ids


def test_an_upload_that_fails_carries_its_ids_and_a_second_call_resumes_it(tc):
    sid, code = survey(tc)
    transport = Outage(tc._transport, after=3)
    client = SurveyClient("http://testserver", sid, code, backoff=0.001, retry_for=0.05,
                          http=httpx.Client(transport=transport, base_url="http://testserver"))
    answers = people(1000, 1)
    with pytest.raises(ClientError, match="300 of 1,000 reports acknowledged") as err:
        client.submit_answers(answers)
    upload = err.value.upload
    assert upload is not None and upload.done == 300 and len(set(upload.ids)) == 1000
    assert sent_ids(transport.posts) == list(upload.ids[:300])
    assert tc.get(f"/surveys/{sid}", headers=H).json()["n_reports"] == 300
    transport.down = False  # the server is back: the same answers resume the same upload
    res = client.submit_answers(answers)
    assert (res.accepted, res.duplicates) == (1000, 0) and res.ids == upload.ids
    assert sent_ids(transport.posts) == list(upload.ids)  # nothing randomized twice
    assert tc.get(f"/surveys/{sid}", headers=H).json()["n_reports"] == 1000


def test_a_journal_resumes_an_upload_in_another_process_and_holds_no_answer(tc, tmp_path):
    sid, code = survey(tc)
    journal = tmp_path / "upload.jsonl"
    transport = Outage(tc._transport, after=2)
    first = SurveyClient("http://testserver", sid, code, backoff=0.001, retry_for=0.05,
                         http=httpx.Client(transport=transport, base_url="http://testserver"))
    answers = people(500, 2)
    with pytest.raises(ClientError, match=f"journal {journal}"):
        first.submit_answers(answers, journal=journal)
    text = journal.read_text()
    assert not any(label in text for label in ("young", "mid", "old", '"f"', '"m"'))
    # a new client (another process) resumes from the journal alone
    second = SurveyClient("http://testserver", sid, code, http=tc)
    res = second.submit_answers(answers, journal=journal)
    # the whole upload's totals: 200 acknowledged before the outage, 300 now
    assert res.accepted == 500 and res.ids == first._uploads.popitem()[1].ids
    assert tc.get(f"/surveys/{sid}", headers=H).json()["n_reports"] == 500
    with pytest.raises(ClientError, match="finished"):
        second.submit_answers(answers, journal=journal)
    with pytest.raises(ClientError, match="randomized from 500 answers, not 3"):
        journal.write_text(journal.read_text().rsplit("\n", 2)[0] + "\n")  # last ack torn off
        second.submit_answers(answers.iloc[:3], journal=journal)


@pytest.mark.slow
def test_the_server_killed_mid_upload_and_restarted_loses_and_doubles_nothing(tmp_path):
    import threading
    import time

    from reidrisk.service.process import ServerProcess

    server = ServerProcess(data_dir=tmp_path, admin_token=ADMIN).start()
    try:
        with httpx.Client(base_url=server.url) as http:
            sid, code = survey(http, "subset")
        client = SurveyClient(server.url, sid, code, timeout=5)  # the default retries
        answers = people(20_000, 3)
        out: dict = {}
        upload = threading.Thread(target=lambda: out.update(
            res=client.submit_answers(answers, batch_size=100)))
        upload.start()
        stored = 0
        while stored < 2000:
            time.sleep(0.05)
            stored = httpx.get(f"{server.url}/surveys/{sid}", headers=H).json()["n_reports"]
        server.kill()
        time.sleep(8)  # down for 8 s, longer than the former client's whole retry span
        server.start()
        upload.join(180)
        res = out["res"]
        with httpx.Client(base_url=server.url) as http:
            n = http.get(f"/surveys/{sid}", headers=H).json()["n_reports"]
        assert 2000 <= stored < 20_000
        assert n == 20_000 and res.accepted + res.duplicates == 20_000
        assert len(set(res.ids)) == 20_000
    finally:
        server.stop()
