"""The cost of ``GET /surveys/{id}/table``: an exact table of c >= 3 attributes of a copula model is
computed cell by cell in the request, so the service keeps it within ``EXACT_REQUEST_SECONDS`` of
estimated work (the estimate of ``reidrisk collect table``, ``model_io.exact_table_seconds``)."""

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


@pytest.mark.filterwarnings("ignore::reidrisk.collect.CollectWarning")
def test_an_exact_table_longer_than_a_request_is_refused_with_its_estimate(client, survey,
                                                                           monkeypatch):
    """Before, exact=true computed any table up to 2^20 cells in the request (measured: 15,625
    cells of 6 attributes 33 s, 16,384 of 7 attributes 88 s), holding a worker thread all along.
    The 3 x 4 x 2 table stands for a long one by pretending each cell costs 1 s per attribute:
    24 x 3 = 72 s, the figure the command line quotes for the same table."""
    from reidrisk.collect import model_io
    from reidrisk.collect.cli import exact_table_seconds
    from reidrisk.service import app as service_app

    monkeypatch.setattr(model_io, "EXACT_SECONDS_PER_CELL", 1.0)
    assert exact_table_seconds([3, 4, 2]) == 72.0  # the command line's estimate is the same one
    monkeypatch.setattr(service_app, "EXACT_REQUEST_SECONDS", 71.0)
    r = table(client, survey, exact="true")
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert "the exact 3x4x2 table of age, region, smoker (24 cells) would take about 72 s" in detail
    assert "more than the 71 s a request may take" in detail
    assert "exact=false with n" in detail and "fewer or smaller attributes" in detail
    # the default counts it from synthetic records instead (as many as there are reports)
    r = table(client, survey)
    assert r.status_code == 200 and r.json()["exact"] is False
    t = np.array(r.json()["table"])
    np.testing.assert_allclose(t * 300, np.round(t * 300), atol=1e-9)
    # two attributes have a closed form: exact, whatever the limit
    r = table(client, survey, attributes="age,smoker", exact="true")
    assert r.status_code == 200 and r.json()["exact"] is True


@pytest.mark.filterwarnings("ignore::reidrisk.collect.CollectWarning")
def test_an_exact_table_within_the_request_limit_is_still_exact(client, survey, monkeypatch):
    from reidrisk.collect import model_io
    from reidrisk.service import app as service_app

    monkeypatch.setattr(model_io, "EXACT_SECONDS_PER_CELL", 1.0)
    monkeypatch.setattr(service_app, "EXACT_REQUEST_SECONDS", 72.0)  # at the limit: computed
    expected = CollectModel.from_dict(client.get(f"/surveys/{survey}/model",
                                                 headers=admin_headers()).json())
    for params in ({"exact": "true"}, {}):  # asked for, and the default
        r = table(client, survey, **params)
        assert r.status_code == 200, r.text
        assert r.json()["exact"] is True
        assert np.array_equal(np.array(r.json()["table"]), expected.table(["age", "region",
                                                                             "smoker"]))
