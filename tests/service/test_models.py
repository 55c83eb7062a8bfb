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
