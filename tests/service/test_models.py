"""reidrisk.service.models: the model of a survey, refitted when its reports change."""

import pytest

from reidrisk.collect.model_io import CollectModel
from reidrisk.collect.reports_io import CollectedReports
from reidrisk.service.models import ModelCache, NoReports, fit_model

from .conftest import new_survey, population


def test_a_survey_without_reports_has_no_model(client, storage):
    sid = new_survey(client)["id"]
    cache = ModelCache(storage)
    with pytest.raises(NoReports, match=f"survey '{sid}' has no reports yet"):
        cache.get(storage.survey(sid))
    assert cache.fits == 0


def test_fit_model_uses_the_collect_defaults(client, storage):
    spec = storage.survey(new_survey(client, epsilon=6.0)["id"]).spec
    rr = spec.protocol.randomize(spec.schema, population(300, 3), rng=4)
    model = fit_model(CollectedReports(rr, spec.protocol))
    assert isinstance(model, CollectModel) and model.g == len(spec.schema)
    assert model.protocol == spec.protocol


def test_a_query_while_an_attribute_has_no_reports_names_it_and_the_connection_stays(storage):
    """Every query answers 409 naming the empty attribute (not a 500) over one kept-alive
    connection of a real server, which then serves the next requests; once a report holds the
    attribute the query is answered."""
    import threading
    import time
    import uuid

    import httpx
    import uvicorn

    from reidrisk.service.app import create_app
    from reidrisk.service.process import free_port

    from .conftest import ADMIN, admin_headers, bearer, issue

    app = create_app(storage, admin_token=ADMIN, code_rate=0)
    connections = []

    @app.middleware("http")
    async def peer(request, call_next):  # which client connection served each request
        connections.append(request.scope["client"])
        return await call_next(request)

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="critical"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            time.sleep(0.05)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            sid = new_survey(http)["id"]
            code = issue(http, sid)[0]["token"]
            reports = [{"id": str(uuid.uuid4()), "values": {"age": str(i % 3),
                                                            "region": str(i % 4)}}
                       for i in range(60)]  # nobody answers "smoker" yet
            assert http.post(f"/surveys/{sid}/reports/batch", headers=bearer(code),
                             json={"reports": reports}).status_code == 201
            for path in ("marginals", "pairs/age/region", "table?attributes=age,region",
                         "synthetic", "model"):
                r = http.get(f"/surveys/{sid}/{path}", headers=admin_headers())
                assert r.status_code == 409, (path, r.text)
                assert "['smoker'] have no reports yet" in r.json()["detail"]
            assert http.get("/health").status_code == 200
            assert http.post(f"/surveys/{sid}/reports", headers=bearer(code), json={
                "id": str(uuid.uuid4()), "values": {"smoker": "1"}}).status_code == 201
            r = http.get(f"/surveys/{sid}/marginals", headers=admin_headers())
            assert r.status_code == 200 and r.json()["n_reports"] == 61
    finally:
        server.should_exit = True
        thread.join(10)
    # one connection served every request: no refusal closed it
    assert len(connections) >= 10 and len(set(connections)) == 1
