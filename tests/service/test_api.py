"""The collection service's API on SQLite and PostgreSQL: surveys, ingestion, idempotent retries,
all-or-nothing batches, the count tables, and queries equal to `reidrisk collect fit`."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from reidrisk.client import SurveyClient
from reidrisk.collect import CollectPipeline, read_reports, write_reports
from reidrisk.estimation.pairs import pair_counts

from .conftest import SCHEMA, admin_headers, bearer, issue, new_survey, population


def submitter(client, sid, code):
    return SurveyClient("http://testserver", sid, code, http=client, retries=0)


def test_survey_config_describes_the_protocol(client):
    s = new_survey(client, epsilon=3.0, k=2)
    cfg = client.get(f"/surveys/{s['id']}/config").json()
    assert cfg["protocol"]["epsilon"] == 3.0 and cfg["protocol"]["attributes_per_person"] == 2
    assert [a["name"] for a in cfg["attributes"]] == SCHEMA.names
    # each reported attribute gets epsilon / k
    assert all(a["mechanism"]["epsilon"] == pytest.approx(1.5) for a in cfg["attributes"])
    assert all(a["codec"] == "ints" or a["codec"] == "int" for a in cfg["attributes"])
    assert client.get("/surveys/nope/config").status_code == 404


@pytest.mark.filterwarnings("ignore::reidrisk.collect.CollectWarning")
def test_query_equals_collect_fit_on_the_same_reports_from_a_file(client, tmp_path):
    sid = new_survey(client, epsilon=8.0)["id"]
    code = issue(client, sid)[0]["token"]
    token = issue(client, sid, "tokens")[0]["token"]
    sub = submitter(client, sid, code)
    rr = sub.randomize(population(1500, 1), rng=7)
    res = sub.submit(rr, batch_size=100)
    assert (res.accepted, res.duplicates) == (1500, 0)

    path = write_reports(tmp_path / "reports.csv", rr, sub.spec.protocol)
    collected = read_reports(path)
    expected = CollectPipeline().fit(collected)  # what `reidrisk collect fit` computes

    # the count tables folded in batch by batch equal the counts of all reports
    counts = client.get(f"/surveys/{sid}/counts", headers=bearer(token)).json()
    pc = pair_counts(collected.reports)
    assert counts["n"] == 1500
    assert np.array_equal(np.array(counts["gram"]), pc.gram)
    assert np.array_equal(np.array(counts["n_pair"]), pc.n_pair)

    marg = client.get(f"/surveys/{sid}/marginals", headers=bearer(token)).json()
    for got, want in zip(marg["attributes"], expected.marginals):
        assert np.array_equal(np.array(got["probabilities"]), want)
    pair = client.get(f"/surveys/{sid}/pairs/age/smoker", headers=bearer(token)).json()
    assert np.array_equal(np.array(pair["table"]), expected.pair_tables[(0, 2)])
    flipped = client.get(f"/surveys/{sid}/pairs/smoker/age", headers=bearer(token)).json()
    assert np.array_equal(np.array(flipped["table"]), expected.pair_tables[(0, 2)].T)
    table = client.get(f"/surveys/{sid}/table", params={"attributes": "age,smoker"},
                       headers=bearer(token)).json()
    assert np.array_equal(np.array(table["table"]), expected.table(["age", "smoker"]))
    model = client.get(f"/surveys/{sid}/model", headers=bearer(token)).json()
    want = expected.to_dict()
    for key in ("marginals", "pairs", "pair_n", "copula", "schema", "protocol", "mechanisms"):
        assert model[key] == want[key], key
    syn = client.get(f"/surveys/{sid}/synthetic", params={"n": 50, "seed": 3},
                     headers=bearer(token)).json()
    assert syn["records"] == expected.synthesize_frame(50, 3).astype(object).values.tolist()


def test_retry_is_idempotent_and_counts_fold_only_new_reports(client):
    sid = new_survey(client)["id"]
    code = issue(client, sid)[0]["token"]
    sub = submitter(client, sid, code)
    rr = sub.randomize(population(300, 2), rng=1)
    ids = [str(uuid.uuid4()) for _ in range(rr.n)]
    first = sub.submit(rr, ids=ids)
    before = client.get(f"/surveys/{sid}/counts", headers=admin_headers()).json()
    again = sub.submit(rr, ids=ids)  # a client that never saw the acknowledgements
    after = client.get(f"/surveys/{sid}/counts", headers=admin_headers()).json()
    assert (first.accepted, first.duplicates) == (300, 0)
    assert (again.accepted, again.duplicates) == (0, 300)
    assert after == before
    # a batch that mixes stored and new ids stores and folds only the new ones
    more = sub.randomize(population(10, 3), rng=2)
    mixed = sub.wire_reports(rr.take(np.arange(5)), ids[:5]) + sub.wire_reports(more)
    r = client.post(f"/surveys/{sid}/reports/batch", headers=bearer(code),
                    json={"reports": mixed})
    assert r.status_code == 201 and r.json() == {"accepted": 10, "duplicates": 5,
                                                 "n_reports": 310}
    final = client.get(f"/surveys/{sid}/counts", headers=admin_headers()).json()
    assert np.array_equal(np.array(final["gram"]) - np.array(before["gram"]),
                          pair_counts(more).gram)


def test_batch_is_all_or_nothing(client):
    sid = new_survey(client)["id"]
    code = issue(client, sid)[0]["token"]
    sub = submitter(client, sid, code)
    reports = sub.wire_reports(sub.randomize(population(20, 4), rng=3))
    reports[13]["values"]["region"] = "9|1"  # 9 is outside region's domain 0..3
    r = client.post(f"/surveys/{sid}/reports/batch", headers=bearer(code),
                    json={"reports": reports})
    assert r.status_code == 422
    assert r.json()["report"] == 13 and "region" in r.json()["detail"]
    assert client.get(f"/surveys/{sid}", headers=admin_headers()).json()["n_reports"] == 0


def test_survey_is_immutable_once_it_has_reports(client):
    sid = new_survey(client)["id"]
    r = client.patch(f"/surveys/{sid}", headers=admin_headers(),
                     json={"protocol": {"epsilon": 2.0, "mechanism": "grr"}})
    assert r.status_code == 200 and r.json()["config"]["protocol"]["mechanism"] == "grr"
    code = issue(client, sid)[0]["token"]
    submitter(client, sid, code).submit_answers(population(5, 5), rng=0)
    r = client.patch(f"/surveys/{sid}", headers=admin_headers(),
                     json={"protocol": {"epsilon": 8.0}})
    assert r.status_code == 409 and "no longer change" in r.json()["detail"]
    assert "create a new survey (POST /surveys)" in r.json()["detail"]
    assert client.patch(f"/surveys/{sid}", headers=admin_headers(),
                        json={"name": "renamed"}).status_code == 200
    # withdrawn reports were still sent under the old definition: it stays frozen
    cid = client.get(f"/surveys/{sid}/codes", headers=admin_headers()).json()[0]["id"]
    client.post(f"/surveys/{sid}/codes/{cid}/withdraw", headers=admin_headers())
    assert client.get(f"/surveys/{sid}", headers=admin_headers()).json()["n_reports"] == 0
    r = client.patch(f"/surveys/{sid}", headers=admin_headers(),
                     json={"schema": SCHEMA.to_dict(), "protocol": {"epsilon": 1.0}})
    assert r.status_code == 409 and "withdrawn ones included" in r.json()["detail"]


def test_model_is_refitted_lazily_never_on_ingestion(client, app):
    sid = new_survey(client)["id"]
    code = issue(client, sid)[0]["token"]
    sub = submitter(client, sid, code)
    assert client.get(f"/surveys/{sid}/marginals", headers=admin_headers()).status_code == 409
    sub.submit_answers(population(200, 6), rng=1)
    cache = app.state.models
    fits = cache.fits
    client.get(f"/surveys/{sid}/marginals", headers=admin_headers())
    client.get(f"/surveys/{sid}/table", params={"attributes": "age,region,smoker"},
               headers=admin_headers())
    assert cache.fits == fits + 1  # one fit serves both queries
    sub.submit_answers(population(50, 7), rng=2)
    assert cache.fits == fits + 1  # ingestion did not fit
    m = client.get(f"/surveys/{sid}/marginals", headers=admin_headers()).json()
    assert cache.fits == fits + 2 and m["n_reports"] == 250


def test_unknown_query_inputs_are_named(client):
    sid = new_survey(client)["id"]
    code = issue(client, sid)[0]["token"]
    submitter(client, sid, code).submit_answers(population(100, 8), rng=3)
    r = client.get(f"/surveys/{sid}/table", params={"attributes": "age,income"},
                   headers=admin_headers())
    assert r.status_code == 422 and "income" in r.json()["detail"]
    r = client.get(f"/surveys/{sid}/pairs/age/age", headers=admin_headers())
    assert r.status_code == 422


def test_openapi_document_is_served(client):
    doc = client.get("/openapi.json").json()
    assert "/surveys/{sid}/reports/batch" in doc["paths"]
    assert client.get("/docs").status_code == 200


@pytest.mark.filterwarnings("ignore::reidrisk.collect.CollectWarning")
def test_an_exact_table_beyond_the_hard_limit_is_refused_by_name(client, monkeypatch):
    """The copula computes no exact table above EXACT_HARD_LIMIT cells; asked for one, the service
    answers 422 naming the size and the fix (before, the copula's error escaped as a 500). The
    3 x 4 x 2 table stands for a large one by lowering both limits to 10 cells."""
    from reidrisk.copula import model as copula_model
    from reidrisk.service import app as service_app

    monkeypatch.setattr(copula_model, "_EXACT_TABLE_LIMIT", 10)
    monkeypatch.setattr(service_app, "EXACT_HARD_LIMIT", 10)
    sid = new_survey(client)["id"]
    code = issue(client, sid)[0]["token"]
    submitter(client, sid, code).submit_answers(population(300, 8), rng=3)
    query = {"attributes": "age,region,smoker"}
    r = client.get(f"/surveys/{sid}/table", params={**query, "exact": "true"},
                   headers=admin_headers())
    assert r.status_code == 422, r.text
    assert "24 cells" in r.json()["detail"] and "exact=false" in r.json()["detail"]
    r = client.get(f"/surveys/{sid}/table", params={**query, "exact": "false", "n": 1000},
                   headers=admin_headers())
    assert r.status_code == 200 and r.json()["exact"] is False
    r = client.get(f"/surveys/{sid}/table", params={"attributes": "age,smoker", "exact": "true"},
                   headers=admin_headers())
    assert r.status_code == 200 and r.json()["exact"] is True  # two attributes: a closed form


def test_cells_are_stored_in_one_spelling_and_a_reused_id_with_other_content_is_refused(
        client, storage):
    sid = new_survey(client, epsilon=1.0)["id"]  # subset: age and region h = 2
    code = issue(client, sid)[0]["token"]
    url = f"/surveys/{sid}/reports/batch"
    a, b = str(uuid.uuid4()), str(uuid.uuid4())
    sent = [{"id": a, "values": {"region": "3|01", "smoker": "001"}},
            {"id": b, "values": {"age": "2|0"}}]
    assert client.post(url, headers=bearer(code), json={"reports": sent}).status_code == 201
    ids, cells = storage.report_cells(sid)
    assert dict(zip(ids, cells)) == {a: [None, "1|3", "1"], b: ["0|2", None, None]}
    # the same report in another spelling is a retry: a duplicate
    r = client.post(url, headers=bearer(code), json={"reports": [
        {"id": b, "values": {"age": "0|02"}}, {"id": a, "values": {"region": "1|3",
                                                                   "smoker": "1"}}]})
    assert r.status_code == 201 and r.json() == {"accepted": 0, "duplicates": 2, "n_reports": 2}
    # other content under a stored id is refused, naming the report; nothing is stored
    r = client.post(url, headers=bearer(code), json={"reports": [
        {"id": str(uuid.uuid4()), "values": {"smoker": "0"}},
        {"id": a, "values": {"region": "0|3", "smoker": "1"}}]})
    assert r.status_code == 409 and r.json()["report"] == 1
    assert f"id {a} is already stored with different content" in r.json()["detail"]
    assert storage.survey(sid).n_reports == 2


def test_a_budget_above_the_maximum_needs_the_owner_s_override(client):
    from reidrisk.service.app import EPSILON_HARD_LIMIT, MAX_EPSILON

    body = {"name": "s", "schema": SCHEMA.to_dict(), "protocol": {"epsilon": 200.0}}
    r = client.post("/surveys", headers=admin_headers(), json=body)
    assert r.status_code == 422 and f"epsilon 200 exceeds {MAX_EPSILON:g}" in r.json()["detail"]
    assert '"allow_large_epsilon": true' in r.json()["detail"]
    r = client.post("/surveys", headers=admin_headers(), json={**body, "protocol": {
        "epsilon": 50.0}, "allow_large_epsilon": True})
    assert r.status_code == 201
    assert "up to 100.0 %" in " ".join(client.get(f"/surveys/{r.json()['id']}/form").text.split())
    r = client.post("/surveys", headers=admin_headers(), json={
        **body, "protocol": {"epsilon": 1e308}, "allow_large_epsilon": True})
    assert r.status_code == 422
    assert f"exceeds {EPSILON_HARD_LIMIT:g}, the largest budget the service accepts" in \
        r.json()["detail"]
    sid = new_survey(client)["id"]
    r = client.patch(f"/surveys/{sid}", headers=admin_headers(),
                     json={"protocol": {"epsilon": 12.0}})
    assert r.status_code == 422 and "exceeds 10" in r.json()["detail"]
