"""The service decodes report cells with the reports file's own decoder.

``SurveySpec.decode`` hands each column (a NumPy object array) to ``reports_io.decode_column``,
the decoder ``read_reports`` uses on a pandas column; these tests compare ``decode`` with that
decoder on randomized reports of every mechanism and on damaged cells, and pin the error text of
each damaged form as the service gave it before the decoders were one.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from reidrisk.collect.reports_io import decode_column
from reidrisk.mechanisms.base import MechanismError
from reidrisk.mechanisms.record import RecordReports
from reidrisk.service.wire import _ORIGIN, ReportError, SurveySpec

from .conftest import SCHEMA, population

MECHANISMS = ["grr", "subset", "oue", "rappor", "olh", "negative"]


def spec_of(mechanism: str) -> SurveySpec:
    return SurveySpec.build(SCHEMA.to_dict(), {"epsilon": 3.0, "mechanism": mechanism})


def rows_of(spec: SurveySpec, n: int, seed: int) -> list[list]:
    rr = spec.protocol.randomize(spec.schema, population(n, seed), seed)
    return [spec.cells_of({a: c for a, c in zip(spec.schema.names, row) if c is not None}, i)
            for i, row in enumerate(spec.canonical_cells(rr))]


def file_decode(spec: SurveySpec, rows: list[list]):
    """The reports file's decoder on the same cells: arrays, or the error message."""
    frame = pd.DataFrame(rows, columns=spec.schema.names, dtype=object)
    reps = []
    for a, m, codec in zip(spec.schema, spec.mechanisms, spec.codecs):
        try:
            reps.append(m.validate_reports(
                decode_column(_ORIGIN, a.name, m, codec, frame[a.name])))
        except Exception as exc:  # noqa: BLE001 - the message is compared
            return type(exc).__name__
    return RecordReports(spec.schema, spec.mechanisms, tuple(reps))


def same(spec: SurveySpec, rows: list[list]) -> None:
    ref = file_decode(spec, rows)
    try:
        got = spec.decode(rows)
    except ReportError:
        assert isinstance(ref, str), "decode refused what the reports file's decoder accepts"
        return
    assert not isinstance(ref, str), f"decode accepted what the decoder refuses ({ref})"
    for a, r, g in zip(spec.schema.names, ref.reports, got.reports):
        assert g.dtype == r.dtype, a
        np.testing.assert_array_equal(g, r, err_msg=a)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_decoded_columns_equal_the_reports_file_decoder(mechanism):
    spec = spec_of(mechanism)
    rows = rows_of(spec, 300, 1)
    # the known truth: the randomized reports the cells were written from (both paths share
    # decode_column, so agreeing with each other alone would not catch a decoding fault)
    truth = spec.protocol.randomize(spec.schema, population(300, 1), 1)
    got = spec.decode(rows)
    for a, t, g in zip(spec.schema.names, truth.reports, got.reports):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(t), err_msg=a)
    same(spec, rows)
    same(spec, rows[:1])
    same(spec, [[None] * len(SCHEMA)])
    same(spec, [])


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_damaged_cells_are_refused_as_the_decoder_refuses_them(mechanism):
    spec = spec_of(mechanism)
    rows = rows_of(spec, 40, 2)
    rng = np.random.default_rng(3)
    damages = ["{}", "0|0", "7", "99", "0|1|2|3|4|5|6", "1||2", "-1", "x", " 1", "007", "0|1",
               "1|0", "2"]
    for i in range(60):
        bad = [list(r) for r in rows]
        j, a = int(rng.integers(len(bad))), int(rng.integers(len(SCHEMA)))
        bad[j][a] = damages[i % len(damages)]
        same(spec, bad)


def test_a_bad_cell_is_named_by_the_decoder():
    spec = spec_of("subset")
    rows = rows_of(spec, 5, 4)
    rows[3][1] = "0|0" if spec.mechanisms[1].h == 2 else "0"
    with pytest.raises(ReportError, match="report 3") as err:
        spec.decode(rows)
    assert "region" in str(err.value)
    assert err.value.index == 3


def test_validation_still_runs_on_parsed_columns():
    spec = spec_of("grr")
    rows = rows_of(spec, 5, 5)
    rows[2][0] = "3"  # the age attribute has 3 categories: code 3 is outside 0..2
    with pytest.raises(ReportError, match="outside"):
        spec.decode(rows)
    with pytest.raises(MechanismError):
        spec.mechanisms[0].validate_reports(np.array([3]))


_NOT_CODES = ("is not a randomized report of integer codes (a raw label? reports hold category "
              "indices produced by the client)")
# (mechanism, the cell of report 4's region (4 categories), the error text, the report named);
# the texts are those the service gave before its parser and the file's were one
DAMAGED = [
    ("grr", "1|2", "column 'region', report 4: cell '1|2' must hold exactly one code", 4),
    ("grr", "{}", f"column 'region', report 4: cell '{{}}' {_NOT_CODES}", 4),
    ("grr", "007", "attribute 'region': report[4] = 7 is outside the domain 0..3 (or -1 for "
                   "missing); encode the data with the schema first", None),
    ("subset", "0|0", "attribute 'region': subset report report 4 = [0, 0] repeats a value; a "
                      "report holds h=2 distinct codes", 4),
    ("subset", "0", "column 'region', report 4: cell '0' holds 1 values; this mechanism's reports "
                    "hold exactly 2 (Subset(epsilon=1, k=4, h=2))", 4),
    ("subset", "0|1|2", "column 'region', report 4: cell '0|1|2' holds 3 values; this mechanism's "
                        "reports hold exactly 2 (Subset(epsilon=1, k=4, h=2))", 4),
    ("subset", "{}", f"column 'region', report 4: cell '{{}}' {_NOT_CODES}", 4),
    ("subset", "0|9", "attribute 'region': subset report report 4 holds 9, outside the domain "
                      "0..3 (or -1 for missing); drop or re-collect that report", 4),
    ("oue", "0|0", "column 'region', report 4: cell '0|0' repeats a bit index", 4),
    ("oue", "5", "column 'region', report 4: cell '5' names a bit outside 0..3", 4),
    ("oue", "2|1|2", "column 'region', report 4: cell '2|1|2' repeats a bit index", 4),
    ("rappor", "4", "column 'region', report 4: cell '4' names a bit outside 0..3", 4),
    ("olh", "1|2", "column 'region', report 4: cell '1|2' holds 2 values; this mechanism's "
                   "reports hold exactly 3 (OLH(epsilon=1, k=4, g=4))", 4),
    ("olh", "4294967311|1|1", "attribute 'region': olh report report 4 has hash parameters "
                              "[4294967311, 1] outside the linear hash family (a in "
                              "1..2147483646, b in 0..2147483646); re-collect it with this "
                              "mechanism's parameters", 4),
    ("olh", "{}", f"column 'region', report 4: cell '{{}}' {_NOT_CODES}", 4),
    ("negative", "0|1", "column 'region', report 4: cell '0|1' must hold exactly one code", 4),
    ("negative", "9", "attribute 'region': negative-survey report[4] = 9 is outside the domain "
                      "0..3 (or -1 for missing); encode the data with the schema first", None),
]


@pytest.mark.parametrize("mechanism, cell, message, index", DAMAGED)
def test_each_damaged_form_keeps_its_error_text(mechanism, cell, message, index):
    spec = SurveySpec.build(SCHEMA.to_dict(), {"epsilon": 3.0, "mechanism": mechanism})
    rows = [list(r) for r in spec.canonical_cells(
        spec.protocol.randomize(spec.schema, population(6, 1), 1))]
    rows[4][1] = cell
    with pytest.raises(ReportError) as err:
        spec.decode(rows)
    assert str(err.value) == message and err.value.index == index


@pytest.mark.parametrize("mechanism, cell", [("subset", "00|1"), ("oue", "{}"), ("oue", "1|0")])
def test_well_formed_variants_are_accepted(mechanism, cell):
    spec = SurveySpec.build(SCHEMA.to_dict(), {"epsilon": 3.0, "mechanism": mechanism})
    rows = [list(r) for r in spec.canonical_cells(
        spec.protocol.randomize(spec.schema, population(6, 1), 1))]
    rows[4][1] = cell
    same(spec, rows)
    assert spec.decode(rows).n == 6
