"""Public names of a package loaded on first use, so that importing the package stays cheap.

A package that re-exports names from its modules lists those imports once, under
``if TYPE_CHECKING:`` (so type checkers and readers see them as ordinary imports), and hands
attribute access to this module::

    from typing import TYPE_CHECKING

    from reidrisk._lazy import lazy_exports

    if TYPE_CHECKING:
        from reidrisk.pie.bounds import alpha, calibrate

    __all__ = ["alpha", "calibrate"]
    __getattr__, __dir__ = lazy_exports(__name__)

``reidrisk.pie.alpha`` then imports ``reidrisk.pie.bounds`` when it is first read, not when
``reidrisk.pie`` (or one of its light modules, such as its ``cli``) is imported: the command line
starts without NumPy, pandas or SciPy (PEP 562 module ``__getattr__``).

A name exported from the module of the same name (``reidrisk.linkage.evaluate``, the function, from
the module ``reidrisk/linkage/evaluate.py``) stays the exported object, as with eager imports: when
that module is imported the package keeps the object in place of the module.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["lazy_exports"]


def type_checking_imports(source: str, package: str) -> dict[str, tuple[str, str]]:
    """The names imported under ``if TYPE_CHECKING:`` in a package's source, and their modules.

    Parameters
    ----------
    source : str
        The text of the package's ``__init__.py``.
    package : str
        The package's name (relative imports are resolved against it).

    Returns
    -------
    dict of str to (str, str)
        Public name (the ``as`` name when there is one) -> (absolute module name, the name in
        that module), for every ``from MODULE import NAME`` of those blocks (top level of the
        module only).
    """
    where: dict[str, tuple[str, str]] = {}
    for node in ast.parse(source).body:
        test = node.test if isinstance(node, ast.If) else None
        if not (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"):
            continue
        for stmt in node.body:  # type: ignore[attr-defined]
            if isinstance(stmt, ast.ImportFrom):
                module = importlib.util.resolve_name("." * stmt.level + (stmt.module or ""), package)
                for alias in stmt.names:
                    where[alias.asname or alias.name] = (module, alias.name)
    return where


def lazy_exports(package: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of a package whose re-exports load on first use.

    Parameters
    ----------
    package : str
        The package's ``__name__``; its ``__init__.py`` lists the re-exported names as imports
        under ``if TYPE_CHECKING:`` (read once, at the first attribute lookup).

    Returns
    -------
    tuple of callables
        ``(__getattr__, __dir__)``. ``__getattr__(name)`` imports the module that provides
        ``name``, keeps the value on the package (later lookups are plain attribute reads) and
        returns it; an unknown name raises ``AttributeError`` as for any module.
    """
    table: dict[str, tuple[str, str]] = {}

    def names() -> dict[str, tuple[str, str]]:
        if not table:
            path = Path(sys.modules[package].__file__ or "")
            table.update(type_checking_imports(path.read_text(encoding="utf-8"), package))
        return table

    _EXPORTS[package] = names
    sys.modules[package].__class__ = _LazyModule

    def __getattr__(name: str) -> Any:
        where = names().get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(where[0]), where[1])
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(names()))

    return __getattr__, __dir__


#: package name -> its table of lazily exported names (``lazy_exports``)
_EXPORTS: dict[str, Callable[[], dict[str, tuple[str, str]]]] = {}


class _LazyModule(types.ModuleType):
    """A package with lazy exports: when the import system binds a submodule ``NAME`` on it and
    the package exports an object ``NAME`` from that very submodule, the object is bound instead
    (what ``from .NAME import NAME`` in an eager ``__init__`` leaves)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, types.ModuleType) and value.__name__ == f"{self.__name__}.{name}":
            where = _EXPORTS[self.__name__]().get(name)
            if where is not None and where[0] == value.__name__:
                value = getattr(value, where[1])
        super().__setattr__(name, value)
