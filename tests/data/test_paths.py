import pytest

from reidrisk.data import paths
from reidrisk.data.paths import ENV_VAR, DatasetNotFound, require, shared_data_dir


def test_env_var_wins(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    assert shared_data_dir() == tmp_path


def test_env_var_to_missing_folder_explains_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "nowhere"))
    with pytest.raises(DatasetNotFound, match=f"{ENV_VAR}=.*nowhere.*is not a folder"):
        shared_data_dir()


def test_finds_shared_data_beside_a_checkout(tmp_path, monkeypatch):
    # <tmp>/repo/src/pkg beside <tmp>/shared/data, as in CI; also <root>/main beside <root>/shared
    monkeypatch.delenv(ENV_VAR, raising=False)
    (tmp_path / "shared" / "data").mkdir(parents=True)
    deep = tmp_path / "repo" / "src" / "pkg"
    deep.mkdir(parents=True)
    assert shared_data_dir(search_from=[deep]) == (tmp_path / "shared" / "data").resolve()
    monkeypatch.chdir(deep)
    assert shared_data_dir(search_from=[tmp_path / "elsewhere", deep]) == (
        tmp_path / "shared" / "data").resolve()


def test_not_found_names_places_and_fix(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    roots = paths._search_roots([tmp_path])
    if any((r / "shared" / "data").is_dir() for r in roots):
        pytest.skip("a shared/data folder exists above the temporary folder")
    with pytest.raises(DatasetNotFound, match=f"looked for 'shared/data' beside .*set {ENV_VAR}"):
        shared_data_dir(search_from=[tmp_path])


def test_require_names_the_missing_dataset_and_file(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    with pytest.raises(DatasetNotFound, match=r"data set 'uci-x' not found.*uci-x.*REIDRISK_DATA"):
        require("uci-x")
    (tmp_path / "uci-x").mkdir()
    (tmp_path / "uci-x" / "a.csv").write_text("a\n1\n")
    assert require("uci-x", ["a.csv"]) == tmp_path / "uci-x"
    with pytest.raises(DatasetNotFound, match=r"file 'b.csv' not found in .*uci-x"):
        require("uci-x", ["a.csv", "b.csv"])
    assert issubclass(DatasetNotFound, FileNotFoundError)
