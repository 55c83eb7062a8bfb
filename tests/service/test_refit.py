"""The model refit reads the count tables folded in at ingestion, never the stored reports, and
still answers what `reidrisk collect fit` answers on the same reports."""

from __future__ import annotations

import numpy as np
import pytest

from reidrisk.client import SurveyClient
from reidrisk.collect import CollectPipeline, read_reports, write_reports
from reidrisk.service import models
from reidrisk.service.storage import Storage
from reidrisk.service.wire import SurveySpec

from .conftest import bearer, issue, new_survey, population


def _refuse(*_args, **_kwargs):
    raise AssertionError("the refit read the stored reports")


@pytest.mark.filterwarnings("ignore::reidrisk.collect.CollectWarning")
@pytest.mark.parametrize("mechanism", ["grr", "oue"])
def test_refit_reads_counts_not_reports(client, app, tmp_path, monkeypatch, mechanism):
    sid = new_survey(client, epsilon=8.0, k=2, mechanism=mechanism)["id"]
    code = issue(client, sid)[0]["token"]
    token = issue(client, sid, "tokens")[0]["token"]
    sub = SurveyClient("http://testserver", sid, code, http=client, retries=0)
    rr = sub.randomize(population(1200, 4), rng=5)
    assert sub.submit(rr, batch_size=100).accepted == 1200
    path = write_reports(tmp_path / "reports.csv", rr, sub.spec.protocol)
    expected = CollectPipeline().fit(read_reports(path))  # what `reidrisk collect fit` computes

    # from here on, decoding or reading a stored report fails the test
    monkeypatch.setattr(SurveySpec, "decode", _refuse)
    monkeypatch.setattr(Storage, "report_cells", _refuse)
    fits = app.state.models.fits
    marg = client.get(f"/surveys/{sid}/marginals", headers=bearer(token))
    assert marg.status_code == 200, marg.text
    assert app.state.models.fits == fits + 1
    assert marg.json()["n_reports"] == 1200
    for got, want in zip(marg.json()["attributes"], expected.marginals):
        assert np.array_equal(np.array(got["probabilities"]), want)
    pair = client.get(f"/surveys/{sid}/pairs/age/smoker", headers=bearer(token)).json()
    assert np.array_equal(np.array(pair["table"]), expected.pair_tables[(0, 2)])
    table = client.get(f"/surveys/{sid}/table", params={"attributes": "age,region,smoker"},
                       headers=bearer(token)).json()
    assert np.array_equal(np.array(table["table"]), expected.table(["age", "region", "smoker"]))
    model = client.get(f"/surveys/{sid}/model", headers=bearer(token)).json()
    want = expected.to_dict()
    for key in ("marginals", "pairs", "pair_n", "copula", "protocol", "mechanisms"):
        assert model[key] == want[key], key


@pytest.mark.filterwarnings("ignore::reidrisk.collect.CollectWarning")
def test_pipeline_reading_reports_decodes_them(client, app, monkeypatch):
    """The report-level EM needs each report: only then does a refit decode the stored reports,
    and it gives the model of those reports."""
    sid = new_survey(client, epsilon=6.0)["id"]
    code = issue(client, sid)[0]["token"]
    sub = SurveyClient("http://testserver", sid, code, http=client, retries=0)
    rr = sub.randomize(population(300, 8), rng=9)
    sub.submit(rr, batch_size=100)
    storage = app.state.models.storage
    survey = storage.survey(sid)
    pipe = CollectPipeline(exact_em="marginals")
    decoded, decode = [], SurveySpec.decode
    monkeypatch.setattr(SurveySpec, "decode",
                        lambda self, rows: decoded.append(len(rows)) or decode(self, rows))
    model, n = models.refit(storage, survey, pipe)
    assert decoded == [300]
    want = pipe.fit(models.collected_reports(storage, survey))
    assert n == 300
    for p, q in zip(model.marginals, want.marginals):
        assert np.array_equal(p, q)
