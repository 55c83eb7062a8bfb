"""reidrisk.data.traces: trace/history loaders and their errors."""

import numpy as np
import pytest

from reidrisk.data.io import TableError
from reidrisk.data.paths import DatasetNotFound
from reidrisk.data.traces import (
    Sequences,
    TraceError,
    load_movielens_histories,
    load_peopleflow_tokyo,
    load_pwscup2019_osaka,
    read_traces,
)


def write(path, text):
    path.write_text(text)
    return path


def test_read_traces_orders_by_time_and_maps_regions(tmp_path):
    f = write(tmp_path / "t.csv", "user_id,time_id,reg_id\n2,2,7\n1,2,3\n2,1,5\n1,1,7\n")
    s = read_traces(f, regions=[3, 5, 7])
    np.testing.assert_array_equal(s.users, [1, 2])
    np.testing.assert_array_equal(s.sequence(0), [2, 0])  # reg 7 (code 2), then reg 3 (code 0)
    np.testing.assert_array_equal(s.sequence(1), [1, 2])
    np.testing.assert_array_equal(s.labels, [3, 5, 7])
    t = read_traces(f, regions=8, users=[2, 1])  # ids 1..8, rows in the given user order
    np.testing.assert_array_equal(t.users, [2, 1])
    np.testing.assert_array_equal(t.sequence(0), [4, 6])


def test_unknown_region_user_and_empty_files_are_named(tmp_path):
    f = write(tmp_path / "bad_region.csv", "user_id,time_id,reg_id\n1,1,3\n1,2,1025\n")
    with pytest.raises(TraceError,
                       match=r"bad_region.csv.*row 3.*unknown region reg_id=1025.*1..1024"):
        read_traces(f, regions=1024)
    g = write(tmp_path / "bad_user.csv", "user_id,time_id,reg_id\n1,1,3\n9,1,4\n")
    with pytest.raises(TraceError, match=r"bad_user.csv.*row 3.*unknown user user_id=9"):
        read_traces(g, regions=10, users=[1, 2])
    with pytest.raises(TraceError, match=r"bad_user.csv.*user_id=2 has no event"):
        read_traces(write(tmp_path / "bad_user.csv", "user_id,time_id,reg_id\n1,1,3\n"),
                    regions=10, users=[1, 2])
    h = write(tmp_path / "text.csv", "user_id,time_id,reg_id\n1,1,x\n")
    with pytest.raises(TraceError, match=r"text.csv.*row 2.*reg_id 'x' is not an integer"):
        read_traces(h, regions=10)
    with pytest.raises(TraceError, match=r"empty.csv.*no rows"):
        read_traces(write(tmp_path / "empty.csv", "user_id,time_id,reg_id\n"), regions=10)
    with pytest.raises(TableError, match=r"zero.csv.*empty"):
        read_traces(write(tmp_path / "zero.csv", ""), regions=10)
    with pytest.raises(TableError, match=r"cols.csv.*lacks the column"):
        read_traces(write(tmp_path / "cols.csv", "user,time,region\n1,1,1\n"), regions=10)


def test_sequences_head_take_and_validation():
    s = Sequences.from_lists([[0, 1, 2], [3], [4, 4]], 5, users=[10, 11, 12])
    np.testing.assert_array_equal(s.head(2).lengths, [2, 1, 2])
    np.testing.assert_array_equal(s.head(2).codes, [0, 1, 3, 4, 4])
    t = s.take([2, 0])
    np.testing.assert_array_equal(t.users, [12, 10])
    np.testing.assert_array_equal(t.codes, [4, 4, 0, 1, 2])
    with pytest.raises(ValueError, match="0..k-1"):
        Sequences.from_lists([[0, 5]], 5)
    with pytest.raises(ValueError, match=">= 1"):
        s.head(0)


def _skip_absent(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except DatasetNotFound as exc:
        pytest.skip(f"data set absent: {exc}")


def test_osaka_shape():
    background, personal = _skip_absent(load_pwscup2019_osaka)
    assert background.n == personal.n == 2000
    assert background.k == personal.k == 1024
    assert np.all(background.lengths == 40) and np.all(personal.lengths == 40)
    np.testing.assert_array_equal(background.users, personal.users)
    np.testing.assert_array_equal(background.labels, np.arange(1, 1025))


def test_peopleflow_tokyo_shape():
    train, test = _skip_absent(load_peopleflow_tokyo)
    assert train.n == test.n == 1000 and train.k == 1024
    assert np.all(train.lengths == 35) and np.all(test.lengths == 35)


def test_movielens_histories_shape():
    h = _skip_absent(load_movielens_histories)
    assert h.k == 46 and h.n == 1105  # PROVENANCE: 1,920 users; 1,105 with >= 5 likes
    assert h.lengths.min() >= 5
    everyone = _skip_absent(load_movielens_histories, min_rating=1, min_events=1)
    assert everyone.n == 1920
    assert everyone.codes.size == 88_320 - 66_528  # PROVENANCE: 66,528 of 88,320 cells unrated


def test_absent_dataset_is_a_clean_skip_signal(tmp_path, monkeypatch):
    monkeypatch.setenv("REIDRISK_DATA", str(tmp_path))
    with pytest.raises(DatasetNotFound, match="pwscup2019-location-traces"):
        load_pwscup2019_osaka()
