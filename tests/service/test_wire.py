"""reidrisk.service.wire: a survey's spec (schema + protocol) and the cells of its reports."""

import numpy as np
import pytest

from reidrisk.service.wire import SpecError, SurveySpec

from .conftest import SCHEMA, population


def _spec(**protocol) -> SurveySpec:
    return SurveySpec.build(SCHEMA.to_dict(), {"epsilon": 3.0, **protocol})


def test_build_reads_attributes_per_person_and_its_former_name():
    new = _spec(attributes_per_person=2, mechanism="grr")
    assert new.protocol.attributes_per_person == 2 and new.protocol.epsilon == 3.0
    assert _spec(k=2, mechanism="grr").protocol == new.protocol  # stored before the rename
    assert [m.epsilon for m in new.mechanisms] == pytest.approx([1.5] * len(SCHEMA))


def test_build_names_the_bad_field():
    with pytest.raises(SpecError, match=r"unknown protocol field\(s\) \['budget'\]"):
        _spec(budget=1)
    with pytest.raises(SpecError, match="needs 'epsilon'"):
        SurveySpec.build(SCHEMA.to_dict(), {"mechanism": "grr"})


def test_json_round_trip():
    spec = _spec(attributes_per_person=2)
    back = SurveySpec.from_json(spec.to_json())
    assert back.schema == spec.schema and back.protocol == spec.protocol
    assert back.codecs == spec.codecs


def test_canonical_cells_decode_to_the_same_reports():
    spec = _spec(attributes_per_person=2, mechanism="subset")
    rr = spec.protocol.randomize(spec.schema, population(40, 1), rng=2)
    back = spec.decode(spec.canonical_cells(rr))
    for a, b in zip(rr.reports, back.reports):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_specs_stored_before_the_rename_still_load():
    spec = _spec(attributes_per_person=2)
    d = spec.to_dict()
    d["protocol"]["k"] = d["protocol"].pop("attributes_per_person")  # a survey stored earlier
    assert SurveySpec.from_dict(d).protocol == spec.protocol
