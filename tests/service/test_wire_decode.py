"""The service's column parser gives exactly what the reports file's decoder gives.

``SurveySpec.decode`` parses well-formed columns with NumPy and leaves every other column (and
every error message) to ``reports_io.decode_column``; these tests compare ``decode`` with the
decoder itself on randomized reports of every mechanism and on damaged cells.
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
def test_parsed_columns_equal_the_reports_file_decoder(mechanism):
    spec = spec_of(mechanism)
    rows = rows_of(spec, 300, 1)
    cols = list(zip(*rows))
    parsed = [spec._parse_column(m, c, col)
              for m, c, col in zip(spec.mechanisms, spec.codecs, cols)]
    if set(spec.codecs) <= {"int", "ints", "bits"}:  # the fast path is taken, not skipped
        assert all(p is not None for p in parsed)
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
