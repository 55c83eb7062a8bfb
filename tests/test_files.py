"""reidrisk._files: atomic writes (all or none, nothing half-written) and output path checks."""

from __future__ import annotations

import errno
import os
import stat

import pytest

from reidrisk._files import (
    atomic_write,
    atomic_write_files,
    check_output_path,
    file_mode,
    user_path_in_errors,
)


def test_output_path_is_checked_up_front(tmp_path):
    with pytest.raises(FileNotFoundError, match="absent' does not exist"):
        check_output_path(tmp_path / "absent" / "t.csv")
    with pytest.raises(IsADirectoryError, match="is a folder"):
        check_output_path(tmp_path)
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError, match="a file of that name exists"):
        check_output_path(tmp_path / "file", kind="folder")
    assert check_output_path(tmp_path / "new" / "deeper", kind="folder") == tmp_path / "new" / "deeper"


def test_atomic_write_replaces_the_file_with_ordinary_permissions(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("old")
    old = os.umask(0o022)
    try:
        atomic_write(path, lambda tmp: tmp.write_text("new"))
    finally:
        os.umask(old)
    assert path.read_text() == "new"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


def test_file_mode_follows_the_umask():
    old = os.umask(0o027)
    try:
        assert file_mode() == 0o640
    finally:
        os.umask(old)


def test_files_written_together_change_all_or_none(tmp_path):
    first, second = tmp_path / "data.csv", tmp_path / "data.csv.meta.json"
    first.write_text("old data")
    second.write_text("old meta")

    def broken(tmp):
        tmp.write_text("half")
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp))

    with pytest.raises(OSError) as info:
        atomic_write_files([(first, lambda tmp: tmp.write_text("new data")), (second, broken)])
    # the first file is not replaced alone, no temporary file is left, the error names the target
    assert first.read_text() == "old data" and second.read_text() == "old meta"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv", "data.csv.meta.json"]
    assert info.value.filename == str(second) and info.value.errno == errno.ENOSPC


def test_an_error_about_the_users_own_path_is_left_as_it_is(tmp_path):
    path = tmp_path / "out.csv"
    error = PermissionError(errno.EACCES, "Permission denied", str(path))
    with pytest.raises(PermissionError) as info, user_path_in_errors(path):
        raise error
    assert info.value is error

