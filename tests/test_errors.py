"""One error hierarchy (reidrisk.errors) and one translation of it (the root command)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import click
import pytest
from click.testing import CliRunner

import reidrisk
from reidrisk.cli import cli
from reidrisk.errors import InputError, ReidriskError


def _package_exceptions() -> list[type[BaseException]]:
    """Every exception class defined in a module of the package (warnings are not errors)."""
    found = []
    for info in pkgutil.walk_packages(reidrisk.__path__, "reidrisk."):
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if (inspect.isclass(obj) and issubclass(obj, BaseException)
                    and not issubclass(obj, Warning) and obj.__module__ == module.__name__):
                found.append(obj)
    return found


def test_every_package_error_derives_from_reidrisk_error():
    found = _package_exceptions()
    # the walk sees the capabilities' errors (a guard against walking nothing)
    names = {cls.__name__ for cls in found}
    assert {"SchemaError", "TableError", "MechanismError", "CollectError", "UniquenessError",
            "LinkageError", "BoundError", "StorageError"} <= names
    # reidrisk.cli.UserError is the click exception the root command turns a ReidriskError into
    outside = [f"{c.__module__}.{c.__name__}" for c in found
               if not issubclass(c, ReidriskError) and not issubclass(c, click.ClickException)]
    assert outside == []


def test_package_errors_keep_their_builtin_base():
    # `except ValueError` / `except RuntimeError` callers keep working
    from reidrisk.client import ClientError
    from reidrisk.data.paths import DatasetNotFound
    from reidrisk.schema import SchemaError
    from reidrisk.service.storage import StorageError

    assert issubclass(SchemaError, ValueError) and issubclass(InputError, ValueError)
    assert issubclass(StorageError, RuntimeError) and issubclass(ClientError, RuntimeError)
    assert issubclass(DatasetNotFound, FileNotFoundError)
    assert reidrisk.ReidriskError is ReidriskError


def _write(path, text):
    path.write_text(text)
    return path


@pytest.fixture
def bad_inputs(tmp_path):
    """One bad input per capability: (argv, text of the message, the error the command raised)."""
    people = _write(tmp_path / "people.csv", "a,b\nx,1\ny,2\nx,2\n")
    more = _write(tmp_path / "more.csv", "a,b\nx,1\ny,2\nx,2\ny,1\n")
    not_a_model = _write(tmp_path / "model.json", '{"hello": 1}')
    scores = _write(tmp_path / "g.csv", "score\n1\n2\n3\n")
    empty = _write(tmp_path / "empty.csv", "score\n")
    traces = _write(tmp_path / "t.csv", "user_id,time_id,reg_id\n1,0,1\n1,1,2\n2,0,2\n2,1,1\n")
    return [
        (["schema", "infer", str(tmp_path / "absent.csv")], "absent.csv", None),
        (["collect", "table", str(not_a_model), "-o", "-", "-c", "a"],
         "not a reidrisk collection model", "ModelFileError"),
        (["uniqueness", "score", "-N", "100", "--db", f"{people}:2", "--records", str(people)],
         "sampling rate 2 is outside (0, 1]", "InputError"),
        (["linkage", "evaluate", "--original", str(people), "--release", str(more),
          "--qi", "a", "--sa", "b"], "more.csv' has 4 rows, more than", "LinkageError"),
        (["pie", "calibrate", "-n", "100", "-k", "10"], "n=100", "BoundError"),
        (["pie", "pse", "--genuine", str(scores), "--impostor", str(empty)],
         "empty.csv' holds no scores", "ScoreError"),
        (["pie", "traces", "--background", str(traces), "--release", str(traces),
          "--regions", "0"], "--regions '0': need at least 1 region", "InputError"),
    ]


def test_each_capability_shows_bad_input_as_one_line(bad_inputs):
    for argv, needle, error in bad_inputs:
        result = CliRunner().invoke(cli, argv)
        lines = result.output.strip().splitlines()
        assert result.exit_code == 2, (argv, result.output)
        assert len(lines) == 1 and lines[0].startswith("Error: "), (argv, result.output)
        assert needle in lines[0] and "Traceback" not in result.output, (argv, result.output)
        if error is None:
            continue
        # the command raised the package's own error and the root translated it: --debug lets it
        # through unchanged
        debug = CliRunner().invoke(cli, ["--debug", *argv])
        assert isinstance(debug.exception, ReidriskError), (argv, debug.exception)
        assert type(debug.exception).__name__ == error, (argv, debug.exception)
