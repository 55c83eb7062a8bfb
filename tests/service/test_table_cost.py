"""The cost of ``GET /surveys/{id}/table``: an exact table of c >= 3 attributes of a copula model is
computed cell by cell in the request. The shape's estimate (``model_io.exact_table_seconds``)
decides the default before any work; the table itself is computed in timed chunks
(``model_io.exact_copula_table``) that stop once the model's measured rate says it would take
longer than ``EXACT_REQUEST_SECONDS``."""

from __future__ import annotations

import numpy as np
import pytest

from reidrisk.collect import CollectModel

from .conftest import admin_headers, issue, new_survey, population
from .test_api import submitter

QUERY = {"attributes": "age,region,smoker"}


@pytest.fixture
def survey(client):
    sid = new_survey(client)["id"]
    code = issue(client, sid)[0]["token"]
    submitter(client, sid, code).submit_answers(population(300, 8), rng=3)
    return sid


def table(client, sid, **params):
    return client.get(f"/surveys/{sid}/table", params={**QUERY, **params},
                      headers=admin_headers())


@pytest.fixture
def seconds_per_cell(monkeypatch):
    """Make every cell of a copula's exact table cost ``cost[0]`` seconds of model_io's clock (the
    cells really computed, the time counted, not slept); ``cells`` counts the cells computed."""
    from reidrisk.collect import model_io
    from reidrisk.copula import GaussianCopula

    now, cost, cells = [0.0], [1.0], [0]
    real = GaussianCopula.cell_probability

    def slow(self, grid, *args, **kwargs):
        now[0] += cost[0] * len(grid)
        cells[0] += len(grid)
        return real(self, grid, *args, **kwargs)

    monkeypatch.setattr(GaussianCopula, "cell_probability", slow)
    monkeypatch.setattr(model_io, "_clock", lambda: now[0])
    monkeypatch.setattr(model_io, "EXACT_FIRST_CHUNK", 4)
    return cost, cells


@pytest.mark.filterwarnings("ignore::reidrisk.collect.CollectWarning")
def test_an_exact_table_slower_than_its_shape_says_is_stopped_at_the_limit(client, survey,
                                                                           seconds_per_cell):
    """The 3 x 4 x 2 table's shape estimate is 24 x 3 x 1e-4 s = 7 ms, so it passed the 5 s limit
    and was computed to the end however long its cells took (measured through the API: 6,144
    cells of 7 dependent attributes, estimated 4.3 s, took 74 s). Its cells here cost 1 s each:
    the first 4 take 4 s, and 4 s + 20 x 1 s is beyond the limit, so the request stops there."""
    from reidrisk.collect.model_io import exact_table_seconds
    from reidrisk.service.app import EXACT_REQUEST_SECONDS

    cost, cells = seconds_per_cell
    assert exact_table_seconds([3, 4, 2]) < EXACT_REQUEST_SECONDS == 5.0
    r = table(client, survey, exact="true")
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert ("the exact 3x4x2 table of age, region, smoker (24 cells) would take about 24 s to "
            "compute (measured on 4 of its cells), more than the 5 s a request may take") in detail
    assert "exact=false with n" in detail and "fewer or smaller attributes" in detail
    assert cells[0] == 4  # the work done before the refusal: one chunk
    # the default counts it from synthetic records instead (as many as there are reports), and
    # says so in its 'exact' field
    r = table(client, survey)
    assert r.status_code == 200 and r.json()["exact"] is False
    t = np.array(r.json()["table"])
    np.testing.assert_allclose(t * 300, np.round(t * 300), atol=1e-9)
    assert cells[0] == 8
    # two attributes have a closed form: exact, whatever the cost of a rectangle
    r = table(client, survey, attributes="age,smoker", exact="true")
    assert r.status_code == 200 and r.json()["exact"] is True


@pytest.mark.filterwarnings("ignore::reidrisk.collect.CollectWarning")
def test_an_exact_table_within_the_request_limit_is_exact_and_the_models(client, survey,
                                                                         seconds_per_cell):
    cost, cells = seconds_per_cell
    expected = CollectModel.from_dict(client.get(f"/surveys/{survey}/model",
                                                 headers=admin_headers()).json())
    want = expected.table(["age", "region", "smoker"])
    for c in (0.0, 0.2):  # free, and 24 x 0.2 s = 4.8 s: within the 5 s limit
        cost[0] = c
        for params in ({"exact": "true"}, {}):  # asked for, and the default
            r = table(client, survey, **params)
            assert r.status_code == 200, r.text
            assert r.json()["exact"] is True
            assert np.array_equal(np.array(r.json()["table"]), want)


@pytest.mark.filterwarnings("ignore::reidrisk.collect.CollectWarning")
def test_the_shape_estimate_still_decides_the_default_before_any_work(client, survey,
                                                                      seconds_per_cell,
                                                                      monkeypatch):
    """Above EXACT_REQUEST_SECONDS of estimated work the default counts synthetic records without
    computing a cell; exact=true is then measured (here free: computed exactly)."""
    from reidrisk.collect import model_io

    cost, cells = seconds_per_cell
    cost[0] = 0.0
    monkeypatch.setattr(model_io, "EXACT_SECONDS_PER_CELL", 1.0)  # 72 s estimated
    r = table(client, survey)
    assert r.status_code == 200 and r.json()["exact"] is False and cells[0] == 0
    r = table(client, survey, exact="true")
    assert r.status_code == 200 and r.json()["exact"] is True and cells[0] == 24


def test_the_openapi_text_of_the_table_states_the_request_limit(client):
    """The endpoint's description named the limit only as the Python constant
    ``EXACT_REQUEST_SECONDS``, which a client reading /docs cannot look up; it states the value."""
    from reidrisk.service.app import EXACT_REQUEST_SECONDS

    text = client.get("/openapi.json").json()["paths"]["/surveys/{sid}/table"]["get"]["description"]
    assert f"{EXACT_REQUEST_SECONDS:g} s of work" in text and "20,000 cells" in text
