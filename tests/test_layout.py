"""tests/ mirrors src/reidrisk module by module: ``src/reidrisk/<pkg>/<mod>.py`` is tested in
``tests/<pkg>/test_<mod>.py`` (a leading underscore of a private module dropped: ``_tensor.py`` ->
``test_tensor.py``), so the tests of a module are found by its name.

A package's ``__init__.py`` that only re-exports (imports, also under ``if TYPE_CHECKING:`` when
they load on first use, ``__all__``, constants, a module ``__getattr__`` for former names) needs no
file; one that defines code of its own is tested in
``tests/<pkg>/test_<pkg>.py``. Exceptions are listed in ``ALLOWED`` below, each with its reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "reidrisk"
TESTS = ROOT / "tests"

# module (relative to src/reidrisk) -> why it has no same-name test file. Keep this list short:
# a module earns an entry only when a same-name file would duplicate tests that live elsewhere.
ALLOWED: dict[str, str] = {
    # the Dask counting is tested with the partitioned reader it serves, on a real local cluster
    "collect/dask_counts.py": "tested in tests/collect/test_dask.py (counts on a Dask cluster "
                              "against the single-machine counts, with collect/partitioned.py)",
}


def _imports_for_type_checking(node: ast.stmt) -> bool:
    """``if TYPE_CHECKING:`` holding only imports (the names a package loads on first use,
    reidrisk._lazy)."""
    return (isinstance(node, ast.If) and isinstance(node.test, ast.Name)
            and node.test.id == "TYPE_CHECKING" and not node.orelse
            and all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in node.body))


def _reexport_only(path: Path) -> bool:
    """True when a module body holds only imports (also under ``if TYPE_CHECKING:``), a
    docstring, assignments (``__all__``, constants, the lazy ``__getattr__``) and a module
    ``__getattr__``/``__dir__`` (former names)."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign)):
            continue
        if _imports_for_type_checking(node):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        if isinstance(node, ast.FunctionDef) and node.name in ("__getattr__", "__dir__"):
            continue
        return False
    return True


def expected_test_file(module: Path) -> Path | None:
    """The test file a module under src/reidrisk needs (None: a re-export-only ``__init__``)."""
    rel = module.relative_to(SRC)
    if rel.name == "__init__.py":
        if _reexport_only(module):
            return None
        name = rel.parent.name if rel.parent.parts else "reidrisk"
        return TESTS / rel.parent / f"test_{name}.py"
    return TESTS / rel.parent / f"test_{rel.stem.lstrip('_')}.py"


def missing_test_files() -> dict[str, str]:
    """Modules without their test file: ``{module: expected test path}`` (both repo-relative)."""
    out = {}
    for module in sorted(SRC.rglob("*.py")):
        want = expected_test_file(module)
        key = module.relative_to(SRC).as_posix()
        if want is not None and not want.exists() and key not in ALLOWED:
            out[key] = want.relative_to(ROOT).as_posix()
    return out


def test_every_module_has_its_test_file():
    missing = missing_test_files()
    assert not missing, (
        f"{len(missing)} module(s) without a same-name test file (add the file, or an entry with "
        "its reason in ALLOWED):\n" + "\n".join(f"  {m} -> {t}" for m, t in missing.items()))


def test_allowed_entries_are_real_modules_without_a_test_file():
    """An entry for a module that no longer exists, or that has its file now, is dropped."""
    for key, reason in ALLOWED.items():
        module = SRC / key
        assert module.exists(), f"ALLOWED names {key}, which is not a module"
        assert reason.strip(), f"ALLOWED[{key!r}] needs a reason"
        want = expected_test_file(module)
        assert want is not None and not want.exists(), \
            f"{key} has its test file {want}: remove it from ALLOWED"


def test_the_rule_on_known_modules():
    assert expected_test_file(SRC / "collect" / "_tensor.py") == TESTS / "collect" / "test_tensor.py"
    assert expected_test_file(SRC / "schema.py") == TESTS / "test_schema.py"
    assert expected_test_file(SRC / "copula" / "__init__.py") is None  # re-exports only
    assert expected_test_file(SRC / "client" / "__init__.py") == TESTS / "client" / "test_client.py"
