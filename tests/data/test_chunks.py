"""Reading a table a chunk at a time: CSV, Parquet file, Parquet directory, fsspec URL."""

from __future__ import annotations

import pandas as pd
import pytest

from reidrisk.data.chunks import table_chunks, table_columns
from reidrisk.data.io import TableError


@pytest.fixture
def frame():
    return pd.DataFrame({"a": [str(i % 7) for i in range(25)], "b": list("xy" * 12) + ["z"]})


def test_csv_in_chunks(tmp_path, frame):
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    chunks = list(table_chunks(path, ["b", "a"], chunk_rows=10))
    assert [len(c) for c in chunks] == [10, 10, 5]
    pd.testing.assert_frame_equal(pd.concat(chunks, ignore_index=True), frame[["b", "a"]])
    assert table_columns(path) == ["a", "b"]


def test_parquet_directory_in_file_order(tmp_path, frame):
    (tmp_path / "parts").mkdir()
    frame.iloc[:12].to_parquet(tmp_path / "parts" / "p0.parquet")
    frame.iloc[12:].to_parquet(tmp_path / "parts" / "p1.parquet")
    (tmp_path / "parts" / "_SUCCESS").write_text("")
    got = pd.concat(table_chunks(tmp_path / "parts", ["a", "b"], chunk_rows=5), ignore_index=True)
    pd.testing.assert_frame_equal(got, frame)


def test_fsspec_url(frame):
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    with fs.open("/chunks-test/t.parquet", "wb") as handle:
        frame.to_parquet(handle)
    got = pd.concat(table_chunks("memory://chunks-test/", chunk_rows=7), ignore_index=True)
    pd.testing.assert_frame_equal(got, frame)


def test_refusals(tmp_path, frame):
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(TableError, match="no column 'c'"):
        next(table_chunks(path, ["c"]))
    with pytest.raises(TableError, match="chunk_rows"):
        next(table_chunks(path, chunk_rows=0))
    with pytest.raises(FileNotFoundError):
        next(table_chunks(tmp_path / "nope.csv"))
    (tmp_path / "t.xlsx").write_text("x")
    with pytest.raises(TableError, match="directory of Parquet"):
        next(table_chunks(tmp_path / "t.xlsx"))
