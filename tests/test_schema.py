import json

import numpy as np
import pandas as pd
import pytest

from reidrisk.schema import MISSING, Attribute, Schema, SchemaError


@pytest.fixture
def schema() -> Schema:
    return Schema((
        Attribute("color", ("red", "green", "blue")),
        Attribute.binned("age", [0, 18, 65, 120]),
        Attribute.grouped("level", {"low": ["a", "b"], "high": ["c"]}),
    ))


@pytest.fixture
def frame() -> pd.DataFrame:
    return pd.DataFrame({
        "color": ["red", " blue ", "?", "green", None, ""],
        "age": [0, 17.9, 18, None, 120, "65"],
        "level": ["a", "c", "b", "?", "low", "high"],
        "extra": range(6),
    })


def test_encode_decode_round_trip_with_missing(schema, frame):
    codes = schema.encode(frame)
    assert codes.dtype == np.int32 and codes.shape == (6, 3)
    np.testing.assert_array_equal(codes[:, 0], [0, 2, MISSING, 1, MISSING, MISSING])
    np.testing.assert_array_equal(codes[:, 1], [0, 0, 1, MISSING, 2, 2])
    np.testing.assert_array_equal(codes[:, 2], [0, 1, 0, MISSING, 0, 1])
    decoded = schema.decode(codes)
    assert list(decoded.columns) == ["color", "age", "level"]
    assert decoded["color"].isna().tolist() == [False, False, True, False, True, True]
    assert decoded["color"][[0, 1, 3]].tolist() == ["red", "blue", "green"]
    assert decoded["age"][0] == "[0, 18)" and decoded["age"][4] == "[65, 120]"
    # decoded labels (bin labels, group names) encode back to the same codes
    np.testing.assert_array_equal(schema.encode(decoded), codes)


def test_binning_by_edges_is_half_open_with_closed_last_bin():
    attr = Attribute.binned("x", [0, 1, 2, 3])
    assert attr.categories == ("[0, 1)", "[1, 2)", "[2, 3]")
    np.testing.assert_array_equal(attr.encode([0, 0.999, 1, 2.5, 3]), [0, 0, 1, 2, 2])
    with pytest.raises(SchemaError, match=r"column 'x': value 3.5 is outside the binned range"):
        attr.encode([1, 3.5])
    with pytest.raises(SchemaError, match=r"'x'.*'abc' is neither a number nor one of the bin"):
        attr.encode(["abc"])
    with pytest.raises(SchemaError, match="strictly increasing"):
        Attribute("y", ("a", "b"), (0.0, 2.0, 1.0))


def test_quantile_binning_splits_evenly_and_merges_ties():
    values = np.arange(100)
    attr = Attribute.quantile_binned("q", values, 4)
    assert attr.size == 4
    np.testing.assert_array_equal(np.bincount(attr.encode(values)), [25, 25, 25, 25])
    # 90 % zeros: the quantiles collapse; the split falls between the two smallest values
    tied = np.r_[np.zeros(90), np.arange(1, 11)]
    attr = Attribute.quantile_binned("t", tied, 5)
    np.testing.assert_array_equal(np.bincount(attr.encode(tied)), [90, 10])
    const = Attribute.quantile_binned("c", np.full(10, 7.0), 3)
    assert const.size == 2 and (const.encode(np.full(10, 7.0)) == 0).all()
    with pytest.raises(SchemaError, match="bins must be an integer >= 2"):
        Attribute.quantile_binned("q", values, 1)
    with pytest.raises(SchemaError, match="no numeric values"):
        Attribute.quantile_binned("q", ["?", "x"], 3)


def test_unknown_category_error_names_column_and_value(schema, frame):
    frame.loc[2, "color"] = "purple"
    with pytest.raises(SchemaError, match=r"column 'color': unknown category 'purple'"):
        schema.encode(frame)


def test_absent_column_error_names_it(schema, frame):
    with pytest.raises(SchemaError, match=r"lacks the schema's column\(s\) \['age'\]"):
        schema.encode(frame.drop(columns="age"))


def test_empty_data_error(schema, frame):
    with pytest.raises(SchemaError, match="no rows"):
        schema.encode(frame.iloc[:0])
    with pytest.raises(SchemaError, match="no rows"):
        schema.validate_codes(np.zeros((0, 3), dtype=np.int32))


def test_integer_labels_survive_a_float_column():
    attr = Attribute("flag", ("0", "1"))
    np.testing.assert_array_equal(attr.encode(pd.Series([1.0, np.nan, 0.0])), [1, MISSING, 0])
    inferred = Schema.infer(pd.DataFrame({"flag": [1.0, np.nan, 0.0, 1.0]}))
    assert inferred["flag"].categories == ("0", "1")


def test_grouped_attribute_and_alias_errors():
    attr = Attribute.grouped("g", {"low": ["a", "b"], "high": "c"})
    assert attr.categories == ("low", "high")
    np.testing.assert_array_equal(attr.encode(["b", "high", "c", "a"]), [0, 1, 1, 0])
    with pytest.raises(SchemaError, match="'a' is put in both 'low' and 'high'"):
        Attribute.grouped("g", {"low": ["a"], "high": ["a"]})
    with pytest.raises(SchemaError, match="not a declared category"):
        Attribute("g", ("x", "y"), aliases=(("a", "z"),))
    with pytest.raises(SchemaError, match="both a category and an alias"):
        Attribute("g", ("x", "y"), aliases=(("x", "y"),))


def test_save_load_round_trip(schema, tmp_path):
    path = tmp_path / "schema.json"
    schema.save(path)
    loaded = Schema.load(path)
    assert loaded == schema
    assert loaded["level"].aliases == schema["level"].aliases
    assert loaded["age"].edges == (0.0, 18.0, 65.0, 120.0)
    assert [p.name for p in tmp_path.iterdir()] == ["schema.json"]


def test_a_failed_save_names_the_users_file_and_keeps_the_old_one(schema, tmp_path, monkeypatch):
    """A write error names the schema file the user asked for (``reidrisk schema infer -o``
    printed "Error: [Errno 27] File too large" with no file at all) and leaves the previous file
    and no temporary behind."""
    import errno
    from pathlib import Path

    path = tmp_path / "schema.json"
    schema.save(path)
    before = path.read_bytes()

    def full_disk(self, data, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(self))

    monkeypatch.setattr(Path, "write_text", full_disk)
    with pytest.raises(OSError) as info:
        Schema((Attribute("x", ("a", "b")),)).save(path)
    monkeypatch.undo()
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["schema.json"]


def test_load_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        Schema.load(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(SchemaError, match="not valid JSON"):
        Schema.load(bad)
    bad.write_text(json.dumps({"format": "other"}))
    with pytest.raises(SchemaError, match="not a reidrisk schema"):
        Schema.load(bad)
    bad.write_text(json.dumps({"format": "reidrisk-schema", "version": 1}))
    with pytest.raises(SchemaError, match="no 'attributes' list"):
        Schema.load(bad)


def test_validate_codes_errors(schema):
    good = np.array([[0, 1, 0], [MISSING, 2, 1]])
    out = schema.validate_codes(good)
    assert out.dtype == np.int32
    with pytest.raises(SchemaError, match=r"shape \(n, 3\)"):
        schema.validate_codes(good[:, :2])
    with pytest.raises(SchemaError, match="must be integers"):
        schema.validate_codes(good.astype(float))
    with pytest.raises(SchemaError, match=r"column 'age', row 1: code 3 is outside the domain"):
        schema.validate_codes(np.array([[0, 1, 0], [0, 3, 0]]))
    with pytest.raises(SchemaError, match=r"column 'color', row 0: code -2"):
        schema.validate_codes(np.array([[-2, 1, 0]]))


def test_attribute_and_schema_validation():
    with pytest.raises(SchemaError, match="at least 2"):
        Attribute("x", ("only",))
    with pytest.raises(SchemaError, match="duplicate categories"):
        Attribute("x", ("a", "a"))
    with pytest.raises(SchemaError, match="duplicate attribute names"):
        Schema((Attribute("x", ("a", "b")), Attribute("x", ("c", "d"))))
    with pytest.raises(SchemaError, match="no attribute 'z'"):
        Schema((Attribute("x", ("a", "b")),)).index("z")


def test_infer_bins_numeric_and_lists_categories():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"num": rng.normal(size=200), "cat": rng.choice(["b", "a", "?"], 200)})
    schema = Schema.infer(frame, numeric_bins=4)
    assert schema["num"].is_numeric and schema["num"].size == 4
    assert schema["cat"].categories == ("a", "b")
    codes = schema.encode(frame)
    np.testing.assert_array_equal(codes[:, 1] == MISSING, frame["cat"].eq("?").to_numpy())
