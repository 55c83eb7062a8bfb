"""reidrisk.service.schemas: the request bodies' validation (they make the OpenAPI document)."""

import pytest
from pydantic import ValidationError

from reidrisk.service.schemas import ProtocolIn, SurveyIn


def test_protocol_attributes_per_person_and_its_former_name():
    assert ProtocolIn(epsilon=2.0, attributes_per_person=2).attributes_per_person == 2
    old = ProtocolIn.model_validate({"epsilon": 2.0, "k": 2})  # bodies written before the rename
    assert old.attributes_per_person == 2
    assert "k" not in old.model_dump()
    assert ProtocolIn(epsilon=2.0).model_dump()["attributes_per_person"] is None


@pytest.mark.parametrize("body, field", [
    ({"epsilon": 0.0}, "epsilon"),
    ({"epsilon": 1.0, "attributes_per_person": 0}, "attributes_per_person"),
    ({"epsilon": 1.0, "budget": 3}, "budget"),  # unknown fields are refused, not dropped
])
def test_protocol_validation_names_the_field(body, field):
    with pytest.raises(ValidationError, match=field):
        ProtocolIn.model_validate(body)


def test_survey_takes_its_schema_under_the_name_schema():
    s = SurveyIn.model_validate({"name": "s", "schema": {"attributes": []},
                                 "protocol": {"epsilon": 1.0}})
    assert s.schema_ == {"attributes": []} and s.protocol.epsilon == 1.0
    with pytest.raises(ValidationError, match="name"):
        SurveyIn.model_validate({"name": "", "schema": {}, "protocol": {"epsilon": 1.0}})
