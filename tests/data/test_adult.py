import numpy as np
import pandas as pd
import pytest

from reidrisk.data.adult import (
    COLUMNS,
    PAPER000_ATTRIBUTES,
    adult_schema,
    load_adult,
    load_adult_encoded,
)
from reidrisk.data.io import TableError
from reidrisk.data.paths import DatasetNotFound
from reidrisk.schema import MISSING


@pytest.fixture(scope="module")
def train() -> pd.DataFrame:
    try:
        return load_adult("train")
    except DatasetNotFound as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def test_split() -> pd.DataFrame:
    try:
        return load_adult("test")
    except DatasetNotFound as exc:
        pytest.skip(str(exc))


def test_train_counts_match_provenance(train):
    assert train.shape == (32_561, 15) and tuple(train.columns) == COLUMNS
    assert train.isna().sum()[["workclass", "occupation", "native-country"]].tolist() == [
        1_836, 1_843, 583]
    assert train.isna().sum().sum() == 1_836 + 1_843 + 583
    assert train["income"].value_counts().to_dict() == {"<=50K": 24_720, ">50K": 7_841}
    assert int(train.notna().all(axis=1).sum()) == 30_162
    assert train["age"].dtype == np.int64 and train["age"].between(17, 90).all()


def test_test_split_quirks(test_split, train):
    # junk banner skipped, trailing "." stripped from the labels, blank line ignored
    assert test_split.shape == (16_281, 15)
    assert test_split["income"].value_counts().to_dict() == {"<=50K": 12_435, ">50K": 3_846}
    assert test_split.isna().sum()[["workclass", "occupation", "native-country"]].tolist() == [
        963, 966, 274]
    both = load_adult("both")
    assert len(both) == 48_842
    pd.testing.assert_frame_equal(both.iloc[:5], train.iloc[:5])


def test_paper004_schema_has_2_to_9_categories_all_used(train):
    schema, codes = load_adult_encoded("paper004", "train")
    assert schema.names == list(COLUMNS)
    assert ((schema.sizes >= 2) & (schema.sizes <= 9)).all()
    assert codes.shape == (32_561, 15) and codes.dtype == np.int32
    # missing only where the file says "?"
    np.testing.assert_array_equal(codes == MISSING, train.isna().to_numpy())
    for j, f in enumerate(schema.sizes):
        counts = np.bincount(codes[codes[:, j] >= 0, j], minlength=f)
        assert (counts > 0).all(), schema.names[j]
    # the test split fits the same declared bins
    _, test_codes = load_adult_encoded("paper004", "test")
    assert test_codes.shape == (16_281, 15)


def test_paper004_bins_agree_with_raw_values(train):
    schema, codes = load_adult_encoded("paper004")
    age = train["age"].to_numpy()
    np.testing.assert_array_equal(codes[:, 0] == 3, (age >= 45) & (age < 55))
    hours = schema.index("hours-per-week")
    np.testing.assert_array_equal(codes[:, hours] == 3, train["hours-per-week"].to_numpy() == 40)
    edu, num = schema.index("education"), schema.index("education-num")
    np.testing.assert_array_equal(codes[:, edu], codes[:, num])


def test_paper000_reproduces_paper_table_2(train):
    schema, codes = load_adult_encoded("paper000", complete_only=True)
    assert schema.names == list(PAPER000_ATTRIBUTES)
    assert codes.shape == (30_162, 9) and (codes >= 0).all()
    observed = [np.unique(codes[:, j]).size for j in range(9)]
    assert int(np.prod(observed)) == 54_001_920  # Table 2: 5.4e7
    # Table 2, "number of same records": min 1, max 548, mean 51.9 (per record), mode 1
    _, inverse, counts = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
    per_record = counts[inverse.ravel()]
    assert (counts.min(), counts.max(), np.bincount(counts).argmax()) == (1, 548, 1)
    assert round(per_record.mean(), 1) == 51.9
    obs = load_adult_encoded("paper000", complete_only=True, domain="observed")
    assert int(np.prod(obs.schema.sizes)) == 54_001_920
    assert "Never-worked" not in obs.schema["workclass"].categories


def test_paper000_full_data_keeps_missing(train):
    schema, codes = load_adult_encoded("paper000")
    assert codes.shape == (32_561, 9)
    assert int((codes >= 0).all(axis=1).sum()) == 30_162
    from reidrisk.schema import SchemaError
    with pytest.raises(SchemaError, match="Never-worked.*complete_only=True"):
        load_adult_encoded("paper000", domain="observed")


def test_bad_arguments_and_files(tmp_path):
    with pytest.raises(ValueError, match="split must be"):
        load_adult("validation")
    with pytest.raises(ValueError, match="unknown Adult schema variant"):
        adult_schema("paper999")
    with pytest.raises(DatasetNotFound, match="'adult.data' not found"):
        load_adult(root=tmp_path)
    (tmp_path / "adult.data").write_text("39, State-gov, 77516\n")
    with pytest.raises(TableError, match="fewer than 15 fields"):
        load_adult(root=tmp_path)
    row = "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, " \
          "White, Male, 2174, 0, 40, United-States, maybe\n"
    (tmp_path / "adult.data").write_text(row)
    with pytest.raises(TableError, match="unexpected income label 'maybe'"):
        load_adult(root=tmp_path)


def test_the_shipped_extract_loads_without_the_shared_data(monkeypatch, tmp_path):
    from reidrisk.data.adult import EXTRACT_COLUMNS, EXTRACT_ROWS, load_adult_extract

    monkeypatch.setenv("REIDRISK_DATA", str(tmp_path))  # no Adult files there: not needed
    frame = load_adult_extract()
    assert frame.shape == (EXTRACT_ROWS, len(EXTRACT_COLUMNS))
    assert list(frame.columns) == list(EXTRACT_COLUMNS)
    assert frame["age"].dtype == np.int64 and frame["hours-per-week"].dtype == np.int64
    assert not (frame.astype(str) == "?").any().any() and frame.notna().all().all()
    assert set(frame["income"]) == {"<=50K", ">50K"}


def test_the_extract_is_rows_of_the_train_file_and_regenerates_byte_for_byte(train, tmp_path):
    from importlib import resources

    from reidrisk.data.adult import EXTRACT_COLUMNS, load_adult_extract, write_adult_extract

    shipped = resources.files("reidrisk.data").joinpath("adult_extract.csv.gz").read_bytes()
    assert write_adult_extract(tmp_path / "x.csv.gz").read_bytes() == shipped
    extract = load_adult_extract()
    keys = lambda f: set(map(tuple, f[list(EXTRACT_COLUMNS)].astype(str).to_numpy()))  # noqa: E731
    assert keys(extract) <= keys(train.dropna(subset=list(EXTRACT_COLUMNS)))


def test_the_extract_names_its_source_and_licence():
    from importlib import resources

    text = resources.files("reidrisk.data").joinpath("ADULT_EXTRACT.md").read_text("utf-8")
    for what in ("UCI Machine Learning Repository", "Becker", "Kohavi", "1996", "CC BY 4.0",
                 "https://doi.org/10.24432/C5XW20"):
        assert what in text
