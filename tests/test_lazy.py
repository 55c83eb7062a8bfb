"""Names of a package loaded on first use: the imports listed under ``if TYPE_CHECKING:`` are read
from the package's source and imported when a name is first read."""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest

from reidrisk._lazy import type_checking_imports

INIT = textwrap.dedent('''
    """A package."""
    from typing import TYPE_CHECKING

    from reidrisk._lazy import lazy_exports

    if TYPE_CHECKING:
        from lazypkg.heavy import VALUE, helper as renamed
        from lazypkg.same import same
        from .other import OTHER

    from lazypkg.light import LIGHT

    __all__ = ["LIGHT", "OTHER", "VALUE", "renamed"]
    __getattr__, __dir__ = lazy_exports(__name__)
''')


@pytest.fixture
def lazypkg(tmp_path, monkeypatch):
    pkg = tmp_path / "lazypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(INIT)
    (pkg / "heavy.py").write_text("VALUE = 42\n\ndef helper():\n    return 'h'\n")
    (pkg / "other.py").write_text("OTHER = 'o'\n")
    (pkg / "light.py").write_text("LIGHT = 1\n")
    (pkg / "same.py").write_text("def same():\n    return 's'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield importlib.import_module("lazypkg")
    for name in [m for m in sys.modules if m == "lazypkg" or m.startswith("lazypkg.")]:
        del sys.modules[name]


def test_type_checking_imports_resolves_relative_and_renamed_names():
    assert type_checking_imports(INIT, "lazypkg") == {
        "VALUE": ("lazypkg.heavy", "VALUE"), "renamed": ("lazypkg.heavy", "helper"),
        "same": ("lazypkg.same", "same"), "OTHER": ("lazypkg.other", "OTHER"),
    }


def test_names_load_on_first_use_and_stay(lazypkg):
    assert "lazypkg.heavy" not in sys.modules
    assert lazypkg.VALUE == 42
    assert "lazypkg.heavy" in sys.modules
    assert "VALUE" in vars(lazypkg)  # later reads are plain attributes
    assert lazypkg.renamed() == "h"
    from lazypkg import OTHER

    assert OTHER == "o"


def test_a_name_exported_from_its_namesake_module_stays_the_object(lazypkg):
    # importing the submodule (as a command does) binds the package's name to the function, as an
    # eager `from .same import same` would; before, it is loaded on first use like any other
    assert lazypkg.same() == "s"
    del lazypkg.same
    importlib.import_module("lazypkg.same")
    assert lazypkg.same() == "s"
    from lazypkg import same

    assert callable(same) and same() == "s"


def test_a_submodule_imported_before_the_name_is_read(lazypkg):
    importlib.import_module("lazypkg.same")
    assert lazypkg.same() == "s"


def test_unknown_name_is_an_attribute_error(lazypkg):
    with pytest.raises(AttributeError, match="lazypkg.*nothere"):
        lazypkg.nothere  # noqa: B018
    assert not hasattr(lazypkg, "heavy_but_not_listed")


def test_dir_lists_the_lazy_names(lazypkg):
    assert {"LIGHT", "OTHER", "VALUE", "renamed"} <= set(dir(lazypkg))
    assert "lazypkg.heavy" not in sys.modules


@pytest.mark.parametrize("package", ["reidrisk.collect", "reidrisk.linkage", "reidrisk.pie",
                                     "reidrisk.uniqueness"])
def test_every_public_name_of_the_lazy_packages_resolves(package):
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{package}.{name}"
