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


def test_cells_get_one_spelling_sets_sorted_tuples_kept_in_order():
    from reidrisk.service.wire import canonical_cell

    assert canonical_cell("4|3|02|1|0", True) == "0|1|2|3|4"
    assert canonical_cell("007", False) == "7" and canonical_cell("{}", True) == "{}"
    # local hashing's cell is (hash parameters, value): its order is the report
    assert canonical_cell("0901|77|3", False) == "901|77|3"
    subset, olh, oue = (_spec(mechanism=m) for m in ("subset", "olh", "oue"))
    assert subset.cells_of({"region": "3|01"}, 0) == [None, "1|3", None]
    assert oue.cells_of({"region": "3|01"}, 0) == [None, "1|3", None]
    assert olh.cells_of({"age": "12|03|1"}, 0) == ["12|3|1", None, None]
    assert subset.canonical_row(["2|0", None, "01"]) == ["0|2", None, "1"]
