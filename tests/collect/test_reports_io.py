"""The reports file: lossless round trips and validation at the boundary."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from reidrisk.collect.protocol import Protocol
from reidrisk.collect.reports_io import (
    CollectedReports,
    ReportsFileError,
    read_reports,
    sidecar_path,
    write_reports,
)
from reidrisk.schema import MISSING, Attribute, Schema

SCHEMA = Schema((
    Attribute("color", ("red", "green", "blue")),
    Attribute("size", ("S", "M", "L", "XL", "XXL", "3XL")),
    Attribute("flag", ("no", "yes")),
    Attribute("grade", tuple("abcdefghi")),
))


@pytest.fixture(scope="module")
def codes():
    rng = np.random.default_rng(0)
    c = np.column_stack([rng.integers(0, f, 300) for f in SCHEMA.sizes]).astype(np.int32)
    c[rng.random(c.shape) < 0.3] = MISSING
    return c


@pytest.mark.parametrize("mechanism", ["subset", "grr", "rappor", "oue", "olh", "negative",
                                       "laplace_index"])
@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_round_trip_is_lossless(tmp_path, codes, mechanism, suffix):
    proto = Protocol(3.0, attributes_per_person=3, mechanism=mechanism)
    rr = proto.randomize(SCHEMA, codes, rng=1)
    path = tmp_path / f"reports.{suffix}"
    write_reports(path, rr, proto)
    back = read_reports(path)
    assert isinstance(back, CollectedReports) and back.protocol == proto
    assert back.schema == SCHEMA
    for m1, m2 in zip(rr.mechanisms, back.reports.mechanisms):
        assert m1.params() == m2.params()
    for a, b in zip(rr.reports, back.reports.reports):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert (suffix == "csv") == sidecar_path(path).exists()


def _write(tmp_path, codes, mechanism="subset", k=None):
    proto = Protocol(3.0, attributes_per_person=k, mechanism=mechanism)
    path = tmp_path / "r.csv"
    write_reports(path, proto.randomize(SCHEMA, codes, rng=2), proto)
    return path


def _edit(path, column, row, value):
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    frame.loc[row, column] = value
    frame.to_csv(path, index=False)


def _first_present(path, column):
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    return int(np.flatnonzero(frame[column] != "")[0])


def test_raw_data_without_metadata_is_refused(tmp_path, codes):
    raw = tmp_path / "raw.csv"
    SCHEMA.decode(codes).to_csv(raw, index=False)
    with pytest.raises(ReportsFileError, match="no reidrisk reports metadata"):
        read_reports(raw)


def test_raw_labels_under_report_metadata_are_refused(tmp_path, codes):
    path = _write(tmp_path, codes)
    SCHEMA.decode(codes).to_csv(path, index=False)  # raw values under a genuine sidecar
    with pytest.raises(ReportsFileError, match="not a randomized report"):
        read_reports(path)


def test_code_outside_the_domain_is_refused(tmp_path, codes):
    path = _write(tmp_path, codes, mechanism="grr")
    row = _first_present(path, "color")
    _edit(path, "color", row, "7")
    with pytest.raises(ReportsFileError, match="color.*outside the domain"):
        read_reports(path)


def test_wrong_set_size_is_refused(tmp_path, codes):
    path = _write(tmp_path, codes)
    row = _first_present(path, "grade")
    _edit(path, "grade", row, "1|2|3|4|5|6|7")
    with pytest.raises(ReportsFileError, match=f"grade.*row {row}.*exactly"):
        read_reports(path)


def test_repeated_value_in_a_set_is_refused(tmp_path, codes):
    path = _write(tmp_path, codes)  # epsilon 3 / 4 per attribute: grade (f = 9) has h = 3
    h = json.loads(sidecar_path(path).read_text())["attributes"][3]["mechanism"]["h"]
    assert h == 3
    row = _first_present(path, "grade")
    _edit(path, "grade", row, "1|1|2")
    with pytest.raises(ReportsFileError, match="repeats a value"):
        read_reports(path)


def test_a_person_reporting_more_than_k_attributes_is_refused(tmp_path, codes):
    path = _write(tmp_path, codes, mechanism="grr", k=2)
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    frame.loc[0, :] = ["0", "0", "0", "0"]  # four attributes at epsilon / 2 each: 2 epsilon
    frame.to_csv(path, index=False)
    with pytest.raises(ReportsFileError, match="more than the protocol's k = 2"):
        read_reports(path)


def test_truncated_file_and_other_versions_are_refused(tmp_path, codes):
    path = _write(tmp_path, codes)
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    frame.iloc[:-5].to_csv(path, index=False)
    with pytest.raises(ReportsFileError, match="truncated"):
        read_reports(path)
    path = _write(tmp_path, codes)
    meta = json.loads(sidecar_path(path).read_text())
    meta["version"] = 99
    sidecar_path(path).write_text(json.dumps(meta))
    with pytest.raises(ReportsFileError, match="version 99"):
        read_reports(path)


def test_tampered_mechanism_parameters_are_refused(tmp_path, codes):
    path = _write(tmp_path, codes)
    meta = json.loads(sidecar_path(path).read_text())
    meta["attributes"][1]["mechanism"]["epsilon"] = 100.0
    sidecar_path(path).write_text(json.dumps(meta))
    with pytest.raises(Exception, match="size.*budget"):
        read_reports(path)



@pytest.mark.parametrize("content, fragment", [
    (b"color,size,flag,grade\n1,2,0,3\n1,2,0,3,4\n", "not a well-formed CSV"),
    (b"color,size\n\xff\xfe\x00\x01\xc3\x28\n", "not UTF-8 text"),
])
def test_ragged_or_binary_reports_csv_names_the_file(tmp_path, codes, content, fragment):
    path = write_reports(tmp_path / "r.csv",
                         Protocol(3.0, attributes_per_person=3).randomize(SCHEMA, codes, rng=1),
                         Protocol(3.0, attributes_per_person=3))
    path.write_bytes(content)  # the sidecar stays: the file claims to hold reports
    with pytest.raises(ReportsFileError, match=rf"'.*r\.csv' is {fragment}"):
        read_reports(path)


# ---- the guarantee the file carries --------------------------------------------------------------
def _meta(path):
    return json.loads(sidecar_path(path).read_text())


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_file_carries_the_largest_loss_over_records(tmp_path, codes, suffix):
    """Protocol(3.0, attributes_per_person=2) over g = 4: 1.5 per attribute, the summed budgets
    say 6.0."""
    proto = Protocol(3.0, attributes_per_person=2)
    rr = proto.randomize(SCHEMA, codes, rng=5)
    assert math.isclose(rr.epsilon, 3.0, rel_tol=1e-9)
    path = write_reports(tmp_path / f"r.{suffix}", rr, proto)
    back = read_reports(path)
    assert math.isclose(back.epsilon, 3.0, rel_tol=1e-9)
    assert back.privacy_loss == rr.privacy_loss and back.budget == 3.0
    if suffix == "csv":
        assert _meta(path)["privacy_loss"] == rr.privacy_loss


def test_file_of_people_reporting_fewer_attributes_states_their_loss(tmp_path, codes):
    """Nobody reported more than one attribute: the file guarantees 1.5, not the protocol's 3.0."""
    proto = Protocol(3.0, attributes_per_person=2)
    one = codes.copy()
    one[:, 1:] = MISSING
    rr = proto.randomize(SCHEMA, one, rng=6)
    path = write_reports(tmp_path / "r.csv", rr, proto)
    assert math.isclose(_meta(path)["privacy_loss"], 1.5, rel_tol=1e-9)
    back = read_reports(path, epsilon=3.0)  # the declared budget is still the protocol's
    assert math.isclose(back.epsilon, 1.5, rel_tol=1e-9) and back.budget == 3.0


def test_file_declaring_less_than_its_reports_spend_is_refused(tmp_path, codes):
    path = _write(tmp_path, codes, k=2)
    meta = _meta(path)
    meta["privacy_loss"] = 1.0
    sidecar_path(path).write_text(json.dumps(meta))
    with pytest.raises(ReportsFileError, match=r"declares a privacy loss of 1 .* imply 3"):
        read_reports(path)
    meta["privacy_loss"] = "lots"
    sidecar_path(path).write_text(json.dumps(meta))
    with pytest.raises(ReportsFileError, match="not a number"):
        read_reports(path)


@pytest.mark.parametrize("legacy", [None, 6.0])
def test_older_files_get_the_recomputed_loss(tmp_path, codes, legacy):
    """Files written before the entry existed have none; a summed value (6.0 = 4 x 1.5) is read,
    recomputed, and replaced by the loss the reports imply."""
    path = _write(tmp_path, codes, k=2)
    meta = _meta(path)
    del meta["privacy_loss"]
    if legacy is not None:
        meta["epsilon"] = legacy
    sidecar_path(path).write_text(json.dumps(meta))
    assert math.isclose(read_reports(path).epsilon, 3.0, rel_tol=1e-9)


def test_reports_files_with_the_former_protocol_key_still_read(tmp_path, codes):
    """Reports files written before the rename store the attributes per person under "k"."""
    path = _write(tmp_path, codes, k=2)
    meta_path = sidecar_path(path)
    meta = json.loads(meta_path.read_text())
    assert meta["protocol"]["attributes_per_person"] == 2 and "k" not in meta["protocol"]
    meta["protocol"]["k"] = meta["protocol"].pop("attributes_per_person")
    meta_path.write_text(json.dumps(meta))
    back = read_reports(path)
    assert back.protocol == Protocol(3.0, attributes_per_person=2)


@pytest.mark.parametrize("mechanism", ["subset", "grr", "oue", "olh", "laplace_index"])
def test_a_directory_of_partitions_reads_as_the_same_reports_in_one_file(tmp_path, codes,
                                                                         mechanism):
    """Every capability reads reports through read_reports: a directory of partitions (the
    compact layout, split in three) must give exactly what one file of the same reports gives."""
    from reidrisk.collect.partitioned import write_partitioned

    proto = Protocol(3.0, attributes_per_person=3, mechanism=mechanism)
    rr = proto.randomize(SCHEMA, codes, rng=1)
    write_reports(tmp_path / "one.parquet", rr, proto)
    write_partitioned(tmp_path / "parts", rr, proto, rows_per_partition=110)
    one, parts = read_reports(tmp_path / "one.parquet"), read_reports(tmp_path / "parts")
    assert parts.protocol == one.protocol and parts.schema == one.schema and parts.n == one.n
    assert parts.privacy_loss == one.privacy_loss
    for m1, m2 in zip(one.reports.mechanisms, parts.reports.mechanisms):
        assert m1.params() == m2.params()
    for a, b in zip(one.reports.reports, parts.reports.reports):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # declarations are checked against the partitions' metadata as against a file's
    with pytest.raises(ReportsFileError, match="not 4"):
        read_reports(str(tmp_path / "parts"), epsilon=4.0)


def test_an_empty_directory_is_refused_with_its_name(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ReportsFileError, match="empty.*no Parquet files"):
        read_reports(tmp_path / "empty")
