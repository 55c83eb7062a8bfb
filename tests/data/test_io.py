import os
import stat

import numpy as np
import pandas as pd
import pytest

from reidrisk.data.io import (
    EncodedData,
    TableError,
    read_encoded,
    read_table,
    write_encoded,
    write_table,
)
from reidrisk.schema import MISSING, Attribute, Schema, SchemaError


@pytest.fixture
def frame() -> pd.DataFrame:
    return pd.DataFrame({
        "name": ["ann", "bob", "?", ""],
        "city": ["Oslo", None, "Rome", "Kyiv, UA"],
        "age": ["31", "47", "", "?"],
    })


@pytest.fixture
def schema() -> Schema:
    return Schema((
        Attribute("city", ("Oslo", "Rome", "Kyiv, UA")),
        Attribute.binned("age", [0, 40, 100]),
        Attribute.grouped("name", {"A": ["ann"], "B": ["bob"]}),
    ))


def test_csv_round_trip_keeps_text_and_missing_markers(frame, tmp_path):
    path = write_table(frame, tmp_path / "t.csv")
    back = read_table(path)
    assert list(back.columns) == ["name", "city", "age"]
    # "?" and "" stay literal text: the schema decides they are missing
    assert back["name"].tolist() == ["ann", "bob", "?", ""]
    assert back["city"].tolist() == ["Oslo", "", "Rome", "Kyiv, UA"]
    assert back["age"].tolist() == ["31", "47", "", "?"]


def test_parquet_round_trip_keeps_missing(frame, tmp_path):
    frame["n"] = [1.5, np.nan, 3.0, 4.0]
    back = read_table(write_table(frame, tmp_path / "t.parquet"))
    pd.testing.assert_frame_equal(back, frame, check_dtype=False)
    assert back["city"].isna().tolist() == [False, True, False, False]


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".csv.gz"])
def test_encoded_round_trip(schema, frame, tmp_path, suffix):
    codes = schema.encode(frame)
    np.testing.assert_array_equal(codes, [[0, 0, 0], [MISSING, 1, 1],
                                          [1, MISSING, MISSING], [2, MISSING, MISSING]])
    path = write_encoded(codes, schema, tmp_path / f"codes{suffix}")
    np.testing.assert_array_equal(read_encoded(path, schema), codes)


def test_read_selects_columns_and_names_absent_ones(frame, schema, tmp_path):
    for suffix in (".csv", ".parquet"):
        path = write_table(frame, tmp_path / f"t{suffix}")
        assert list(read_table(path, columns=["age", "name"]).columns) == ["age", "name"]
        with pytest.raises(TableError, match=r"lacks the column\(s\) \['zip'\].*'name'"):
            read_table(path, columns=["name", "zip"])
        bigger = Schema(schema.attributes + (Attribute("zip", ("1", "2")),))
        with pytest.raises(TableError, match=r"\['zip'\]"):
            read_encoded(path, bigger)


def test_clear_errors_for_missing_unsupported_and_empty_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_table(tmp_path / "absent.csv")
    with pytest.raises(TableError, match="unsupported file type.*parquet"):
        read_table(tmp_path / "t.xlsx")
    with pytest.raises(TableError, match="unsupported file type"):
        write_table(pd.DataFrame({"a": [1]}), tmp_path / "t.json")
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(TableError, match="is empty"):
        read_table(tmp_path / "empty.csv")
    (tmp_path / "blank.csv").write_text("\n\n")
    with pytest.raises(TableError, match="no header row"):
        read_table(tmp_path / "blank.csv")
    (tmp_path / "header.csv").write_text("city,age,name\n")
    schema = Schema((Attribute("city", ("a", "b")),))
    with pytest.raises(TableError, match="no rows"):
        read_encoded(tmp_path / "header.csv", schema)
    (tmp_path / "junk.parquet").write_text("not parquet")
    with pytest.raises(TableError, match="not a readable Parquet file"):
        read_table(tmp_path / "junk.parquet")


def test_unknown_value_in_file_names_column_and_value(schema, tmp_path):
    bad = pd.DataFrame({"city": ["Oslo", "Paris"], "age": ["1", "2"], "name": ["ann", "bob"]})
    path = write_table(bad, tmp_path / "bad.csv")
    with pytest.raises(SchemaError, match="column 'city': unknown category 'Paris'"):
        read_encoded(path, schema)


def test_failed_write_leaves_the_old_file_and_no_partial_file(frame, tmp_path, monkeypatch):
    path = write_table(frame, tmp_path / "t.csv")
    before = path.read_bytes()

    def broken_to_csv(self, target, *args, **kwargs):
        with open(target, "w") as fh:
            fh.write("name,ci")  # half a header, then the disk "fails"
        raise OSError("disk full")

    monkeypatch.setattr(pd.DataFrame, "to_csv", broken_to_csv)
    with pytest.raises(OSError, match="disk full"):
        write_table(frame, path)
    with pytest.raises(OSError, match="disk full"):
        write_table(frame, tmp_path / "new.csv")
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv"]


def test_failed_parquet_write_leaves_nothing(tmp_path):
    mixed = pd.DataFrame({"a": pd.Series([1, "x", 2.5], dtype=object)})
    with pytest.raises(ValueError):  # pyarrow's ArrowInvalid: a column of mixed types
        write_table(mixed, tmp_path / "m.parquet")
    assert list(tmp_path.iterdir()) == []


def test_encoded_data_unpacks(schema, frame):
    enc = EncodedData(schema, schema.encode(frame))
    s, codes = enc
    assert s is schema and codes is enc.codes and enc.n == 4
    np.testing.assert_array_equal(enc.complete_rows(), [True, False, False, False])


def test_ragged_csv_names_the_file_and_the_line(tmp_path):
    path = tmp_path / "ragged.csv"
    path.write_text("a,b\n1,2\n3,4,5\n")
    with pytest.raises(TableError, match=r"'.*ragged\.csv' is not a well-formed CSV.*line 3, saw 3"):
        read_table(path)


def test_binary_file_names_the_file(tmp_path):
    path = tmp_path / "image.csv"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    with pytest.raises(TableError, match=r"'.*image\.csv' is not a UTF-8 text table.*binary"):
        read_table(path)


def test_write_error_names_the_users_path_not_the_temporary_file(frame, tmp_path, monkeypatch):
    import errno

    def full_disk(self, target, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(target))

    monkeypatch.setattr(pd.DataFrame, "to_csv", full_disk)
    target = tmp_path / "out.csv"
    with pytest.raises(OSError) as info:
        write_table(frame, target)
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(target)
    assert ".tmp" not in str(info.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_written_tables_have_ordinary_permissions(frame, tmp_path, suffix):
    """A table (scores, synthetic records, a contingency table) gets the permissions of any new
    file under the umask, like the reports and model files; the temporary file it is written to
    first came from mkstemp, which makes it private (0600), and kept that mode once renamed."""
    path = write_table(frame, tmp_path / f"t.{suffix}")
    plain = tmp_path / "plain"
    plain.write_text("x")
    assert oct(path.stat().st_mode) == oct(plain.stat().st_mode)
    # under a private umask (077) both are 0600 and the comparison above holds whatever the
    # writer does: under umask 022 a table must be readable by others, as any new file is
    old = os.umask(0o022)
    try:
        again = write_table(frame, tmp_path / f"u.{suffix}")
    finally:
        os.umask(old)
    assert stat.S_IMODE(again.stat().st_mode) == 0o644


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz", ".parquet"])
def test_repeated_column_name_is_refused(tmp_path, suffix):
    path = tmp_path / f"dup{suffix}"
    if suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table([[1.0], [2.0]], names=["sa01", "sa01"]), path)
    else:
        pd.DataFrame([[1.0, 2.0, 3.0]], columns=["age", "sa01", "sa01"]).to_csv(path, index=False)
    with pytest.raises(TableError, match=r"\['sa01'\] more than once"):
        read_table(path)
