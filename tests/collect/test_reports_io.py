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


# ---- the cell decoder: the canonical split against the earlier pandas decoder --------------------
def _reference_decode(mech, codec, cells: pd.Series):
    """The text decoder of ``int``/``ints``/``bits`` cells as it was before the canonical split
    (pandas, cell by cell), kept here as the oracle: the report array, or the error message."""
    from pathlib import Path

    path, attr_name = Path("r.csv"), "q"
    n = len(cells)
    miss = cells.isna().to_numpy()
    out = np.asarray(mech.perturb(np.full(n, MISSING, dtype=np.int64), rng=0))
    present_idx = np.flatnonzero(~miss)
    if present_idx.size == 0:
        return out
    text = cells[~miss].astype(str).str.strip()

    def bad_cell(pos, why):
        return (f"{path.name}: column {attr_name!r}, row {int(present_idx[pos])}: "
                f"cell {text.iloc[pos]!r} {why}")

    empty = (text == "{}").to_numpy() if codec == "bits" else np.zeros(len(text), bool)
    parts = text.mask(empty, "").str.split("|")
    lens = np.where(empty, 0, parts.str.len().to_numpy())
    flat = parts.explode().to_numpy(dtype=object)
    flat = flat[~np.repeat(empty, np.where(empty, 1, lens))]
    nums = pd.to_numeric(pd.Series(flat, dtype=object), errors="coerce")
    with np.errstate(invalid="ignore"):
        frac = nums.fillna(0.5).to_numpy() % 1 != 0
    if frac.any():
        bad = int(np.flatnonzero(frac)[0])
        pos = int(np.searchsorted(np.cumsum(lens), bad, side="right"))
        return bad_cell(pos, "is not a randomized report of integer codes (a raw label? reports "
                             "hold category indices produced by the client)")
    with np.errstate(invalid="ignore"):
        vals = nums.to_numpy().astype(np.int64)
    out = np.asarray(out).copy()
    if codec == "int":
        if (lens != 1).any():
            return bad_cell(int(np.flatnonzero(lens != 1)[0]), "must hold exactly one code")
        out[present_idx] = vals
        return out
    if codec == "ints":
        width = out.shape[1]
        if (lens != width).any():
            pos = int(np.flatnonzero(lens != width)[0])
            return bad_cell(pos, f"holds {lens[pos]} values; this mechanism's reports hold "
                                 f"exactly {width} ({mech!r})")
        out[present_idx] = vals.reshape(-1, width).astype(out.dtype)
        return out
    k = out.shape[1]
    if vals.size and (vals.min() < 0 or vals.max() >= k):
        bad = int(np.flatnonzero((vals < 0) | (vals >= k))[0])
        return bad_cell(int(np.searchsorted(np.cumsum(lens), bad, side="right")),
                        f"names a bit outside 0..{k - 1}")
    block = np.zeros((present_idx.size, k), dtype=out.dtype)
    block[np.repeat(np.arange(present_idx.size), lens), vals] = 1
    if (block.sum(axis=1) != lens).any():
        return bad_cell(int(np.flatnonzero(block.sum(axis=1) != lens)[0]), "repeats a bit index")
    out[present_idx] = block
    return out


def _decoded(mech, codec, cells):
    from pathlib import Path

    from reidrisk.collect.reports_io import decode_column

    try:
        return decode_column(Path("r.csv"), "q", mech, codec, cells)
    except ReportsFileError as exc:
        return str(exc)


def _damage(cell: str, rng: np.random.Generator) -> str:
    """One damaged or non-canonical form of a well-formed cell (some are still accepted)."""
    codes = [] if cell == "{}" else cell.split("|")
    digits = lambda m: "".join(rng.choice(list("0123456789"), m))  # noqa: E731
    forms = [
        lambda: "|".join(codes[:-1]),                      # a code dropped ("" from one code)
        lambda: "|".join(codes + [str(rng.integers(0, 40))]),  # a code added
        lambda: "|".join(codes + codes[:1]),               # a code repeated
        lambda: cell.replace("|", "||", 1) if codes[1:] else cell + "|",
        lambda: "|" + cell,
        lambda: "{}",
        lambda: cell + "," + cell,
        lambda: digits(int(rng.integers(19, 22))),         # past int64's exact range
        lambda: digits(int(rng.integers(11, 19))),         # long, still exact
        lambda: "-" + cell,
        lambda: str(rng.integers(40, 10**6)),              # out of range
        lambda: "0" * int(rng.integers(1, 4)) + cell,      # leading zeros: canonical
        lambda: " " + cell + "\t",                          # whitespace: accepted
        lambda: "+" + cell,
        lambda: cell.replace("|", ".0|") + ".0" if codes else "1.0",
        lambda: cell + "e0" if codes else "{",
        lambda: "",
        lambda: "\u0663",                                   # a non-ASCII digit
        lambda: "".join(rng.choice(list("0123456789|{},.-+ xe"), int(rng.integers(1, 8)))),
        lambda: "{}" + cell if codes else "{}{}",
        lambda: "{" + cell + "}",
    ]
    return forms[int(rng.integers(len(forms)))]()


FUZZ_MECHANISMS = ["grr", "negative", "subset", "oue", "rappor", "olh", "glh"]


@pytest.mark.parametrize("mechanism", FUZZ_MECHANISMS)
def test_cell_decoder_equals_the_earlier_decoder_on_random_columns(mechanism):
    """Fixed seed, 3 domain sizes x 40 columns of 1 to 30 cells (a fifth missing): well-formed
    columns (every mechanism's own reports, OLH/GLH with 10-digit hash values), and columns with
    1 to 3 damaged or non-canonical cells. The decoder must give the earlier decoder's array
    (values and dtype) or its exact error message, whatever holds the cells (object Series,
    pandas string Series, NumPy object array: the service's)."""
    from reidrisk.collect.protocol import resolve_mechanism
    from reidrisk.collect.reports_io import _encode_column, codec_of

    rng = np.random.default_rng(FUZZ_MECHANISMS.index(mechanism))
    checked = {"ok": 0, "error": 0}
    for k in (2, 7, 33):
        mech = resolve_mechanism(mechanism, 1.0, k)
        codec = codec_of(mech)
        for trial in range(40):
            n = int(rng.integers(1, 31))
            codes = rng.integers(0, k, n)
            codes[rng.random(n) < 0.2] = MISSING
            cells = _encode_column(mech, codec, mech.perturb(codes, rng=rng))
            present = np.flatnonzero(np.not_equal(cells, None))
            if trial % 4 and present.size:  # three columns in four are damaged
                for i in rng.choice(present, min(present.size, int(rng.integers(1, 4))),
                                    replace=False):
                    cells[i] = _damage(cells[i], rng)
            ref = _reference_decode(mech, codec, pd.Series(cells, dtype=object))
            holder = [pd.Series(cells, dtype=object), pd.Series(cells, dtype="string"),
                      cells.copy()][trial % 3]
            got = _decoded(mech, codec, holder)
            if isinstance(ref, str):
                assert got == ref, (k, list(cells))
                checked["error"] += 1
            else:
                assert not isinstance(got, str), (got, list(cells))
                assert got.dtype == ref.dtype and got.shape == ref.shape
                np.testing.assert_array_equal(got, ref, err_msg=str(list(cells)))
                checked["ok"] += 1
    assert checked["ok"] >= 40 and checked["error"] >= 20  # both outcomes were exercised


# the earlier decoder's message for each damaged form (mechanism at k = 6, epsilon = 1; the bad
# cell is row 1 of a column whose row 0 is well formed)
_NOT_CODES = ("is not a randomized report of integer codes (a raw label? reports hold category "
              "indices produced by the client)")
DAMAGED = [
    ("grr", "x", f"cell 'x' {_NOT_CODES}"),
    ("grr", "1|2", "cell '1|2' must hold exactly one code"),
    ("grr", "{}", f"cell '{{}}' {_NOT_CODES}"),
    ("grr", "1.5", f"cell '1.5' {_NOT_CODES}"),
    ("grr", "", f"cell '' {_NOT_CODES}"),
    ("grr", " ", f"cell '' {_NOT_CODES}"),
    ("grr", "1||2", f"cell '1||2' {_NOT_CODES}"),
    ("grr", "|1", f"cell '|1' {_NOT_CODES}"),
    ("grr", "nan", f"cell 'nan' {_NOT_CODES}"),
    ("grr", "inf", f"cell 'inf' {_NOT_CODES}"),
    ("grr", "1e400", f"cell '1e400' {_NOT_CODES}"),
    ("grr", "\u0661", f"cell '\u0661' {_NOT_CODES}"),
    ("subset", "1", "cell '1' holds 1 values; this mechanism's reports hold exactly 2 "
                    "(Subset(epsilon=1, k=6, h=2))"),
    ("subset", "1|2|3", "cell '1|2|3' holds 3 values; this mechanism's reports hold exactly 2 "
                        "(Subset(epsilon=1, k=6, h=2))"),
    ("subset", "1|x", f"cell '1|x' {_NOT_CODES}"),
    ("subset", "1||2", f"cell '1||2' {_NOT_CODES}"),
    ("subset", "{}", f"cell '{{}}' {_NOT_CODES}"),
    ("subset", "1|", f"cell '1|' {_NOT_CODES}"),
    ("subset", "|1", f"cell '|1' {_NOT_CODES}"),
    ("subset", "1,2", f"cell '1,2' {_NOT_CODES}"),
    ("subset", "1.5|2", f"cell '1.5|2' {_NOT_CODES}"),
    ("olh", "123", "cell '123' holds 1 values; this mechanism's reports hold exactly 3 "
                   "(OLH(epsilon=1, k=6, g=4))"),
    ("olh", "4294967311|x", f"cell '4294967311|x' {_NOT_CODES}"),
    ("olh", "{}", f"cell '{{}}' {_NOT_CODES}"),
    ("olh", "12345678901234567890|1", "cell '12345678901234567890|1' holds 2 values; this "
                                      "mechanism's reports hold exactly 3 (OLH(epsilon=1, k=6, g=4))"),
    ("oue", "0|0", "cell '0|0' repeats a bit index"),
    ("oue", "2|1|2", "cell '2|1|2' repeats a bit index"),
    ("oue", "-1|2", "cell '-1|2' names a bit outside 0..5"),
    ("oue", "0|6", "cell '0|6' names a bit outside 0..5"),
    ("oue", "a", f"cell 'a' {_NOT_CODES}"),
    ("oue", "1||2", f"cell '1||2' {_NOT_CODES}"),
    ("oue", "{}|1", f"cell '{{}}|1' {_NOT_CODES}"),
    ("oue", "{1}", f"cell '{{1}}' {_NOT_CODES}"),
    ("oue", "1|", f"cell '1|' {_NOT_CODES}"),
    ("oue", "{}{}", f"cell '{{}}{{}}' {_NOT_CODES}"),
    ("oue", "", f"cell '' {_NOT_CODES}"),
    ("oue", "1.5", f"cell '1.5' {_NOT_CODES}"),
    ("rappor", "0|0", "cell '0|0' repeats a bit index"),
]


@pytest.mark.parametrize("mechanism, cell, message", DAMAGED)
def test_each_damaged_form_keeps_its_message(mechanism, cell, message):
    from reidrisk.collect.protocol import resolve_mechanism
    from reidrisk.collect.reports_io import codec_of

    mech = resolve_mechanism(mechanism, 1.0, 6)
    codec = codec_of(mech)
    first = {"int": "2", "ints": "0|1" if mechanism == "subset" else "1|1|1", "bits": "0|2"}
    cells = np.array([first[codec], cell, None], dtype=object)
    for holder in (pd.Series(cells, dtype=object), cells):
        assert _decoded(mech, codec, holder) == f"r.csv: column 'q', row 1: {message}"


@pytest.mark.parametrize("cells", [["{1", "1}1"], ["{}", "1}{1"], ["0|1", "{}", "{}}"],
                                   ["{{", "}}"], ["{}", "{}"], ["{},{}", "1"], ["1", "{}|"]])
def test_braces_are_an_empty_set_only_as_a_whole_cell(cells):
    """Pairs of cells whose braces balance over the column but not within a cell."""
    from reidrisk.collect.protocol import resolve_mechanism

    mech = resolve_mechanism("oue", 1.0, 6)
    col = np.array(cells, dtype=object)
    ref = _reference_decode(mech, "bits", pd.Series(col))
    got = _decoded(mech, "bits", col)
    if isinstance(ref, str):
        assert got == ref
    else:
        np.testing.assert_array_equal(got, ref)


def test_a_failed_rewrite_leaves_the_file_and_its_metadata_as_they_were(tmp_path, codes,
                                                                        monkeypatch):
    """A CSV's metadata lives in its sidecar, so replacing a reports file replaces two files. The
    sidecar used to be moved into place before the table was written: when the table's write
    then failed (a full disk, a file size limit), the old reports stayed beside the new metadata
    and were read, without a word, as reports of the new mechanism and budget (k-RR codes at
    epsilon 3 read as OUE at epsilon 1). Neither file may change until both are written."""
    old = Protocol(3.0, mechanism="grr")
    path = tmp_path / "r.csv"
    write_reports(path, old.randomize(SCHEMA, codes, rng=2), old)
    before = path.read_bytes(), sidecar_path(path).read_bytes()

    def full_disk(self, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", full_disk)
    new = Protocol(1.0, mechanism="oue")
    with pytest.raises(OSError, match="No space left"):
        write_reports(path, new.randomize(SCHEMA, codes, rng=3), new)
    monkeypatch.undo()
    assert (path.read_bytes(), sidecar_path(path).read_bytes()) == before
    assert read_reports(path).protocol == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv", "r.csv.meta.json"]  # no temporaries
