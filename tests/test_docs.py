"""The documentation that ships with the package: every reference to the design notes resolves.

Docstrings, comments, benchmarks and docs cite the design notes as ``docs/design/<note>.md#<section>``
(docs/design/README.md). These tests fail when a file cites a note or a section that does not exist,
when a link inside the notes is broken, when a note cites a bibliography key that
docs/design/bibliography.md does not define, or when anything still points at the internal working
notes that are not part of the repository; and when an exported callable has no numpydoc
Parameters block.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import sys
import textwrap
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DESIGN = ROOT / "docs" / "design"
SCANNED = ("src", "tests", "benchmarks", "docs")
SUFFIXES = {".py", ".md", ".toml", ".txt", ".js", ".html", ".cfg", ".ini", ".yaml", ".yml", ".rst"}

_WORKING = "sp" + "ec"  # spelt in two parts so that this file does not match its own patterns
OUTSIDE_REFERENCES = re.compile(
    rf"\b{_WORKING}/"                       # a path into the working notes
    rf"|\b{_WORKING} Sections?\b"           # "... Section 8"
    rf"|\b{_WORKING}'s\b"                   # "the ...'s table"
    rf"|\bthe {_WORKING}\b"                 # "as the ... reads it"
    rf"|\({_WORKING}: [0-9]"               # "(...: 0.9993 at the sup)"
    rf"|#\s*{_WORKING}:"                    # a comment "# ...: lambda = 0.05 ..."
)
DESIGN_REF = re.compile(r"docs/design/([A-Za-z0-9_.-]+\.md)(?:#([A-Za-z0-9_-]+))?")
MD_LINK = re.compile(r"\]\(([^)\s]+?)\)")
BIB_KEY = re.compile(r"\*\*\[([A-Za-z0-9]+)\]\*\*")
CITATION = re.compile(r"(?<![\]\w])\[([^\]\n]+)\](?!\()")
KEY_SHAPE = re.compile(r"^[A-Z][A-Za-z]+[0-9]{4}[ab]?$")


def shipped_files() -> list[Path]:
    files = [ROOT / "README.md"]
    for top in SCANNED:
        files += [p for p in (ROOT / top).rglob("*") if p.is_file() and p.suffix in SUFFIXES
                  and ".venv" not in p.parts and "__pycache__" not in p.parts]
    return sorted(files)


def slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    text = unicodedata.normalize("NFKC", heading.strip()).lower()
    text = "".join(ch for ch in text if ch.isalnum() or ch in " -_")
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Anchors of every heading of a Markdown file (repeated headings get -1, -2, ...)."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if fenced or not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def _where(path: Path, text: str, pos: int) -> str:
    return f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, pos) + 1}"


def test_slug_follows_github():
    assert slug("Count EM correction") == "count-em-correction"
    assert slug("PIE and PIE privacy") == "pie-and-pie-privacy"
    assert slug("How far P(X = 1) can be trusted") == "how-far-px--1-can-be-trusted"
    assert slug("k-NN divergence estimator") == "k-nn-divergence-estimator"


def test_no_reference_to_the_working_notes():
    bad = []
    for path in shipped_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        bad += [f"{_where(path, text, m.start())}: {m.group(0)!r}"
                for m in OUTSIDE_REFERENCES.finditer(text)]
    assert not bad, ("these point at notes that are not in the repository; cite "
                     "docs/design/<note>.md#<section> instead:\n" + "\n".join(bad))


def test_every_design_reference_resolves():
    cache: dict[str, set[str]] = {}
    bad, count = [], 0
    for path in shipped_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in DESIGN_REF.finditer(text):
            count += 1
            note, anchor = m.group(1), m.group(2)
            target = DESIGN / note
            if not target.is_file():
                bad.append(f"{_where(path, text, m.start())}: no note {note}")
                continue
            if anchor is not None:
                known = cache.setdefault(note, anchors(target))
                if anchor not in known:
                    bad.append(f"{_where(path, text, m.start())}: {note} has no section #{anchor}")
    assert count > 0
    assert not bad, "broken references to the design notes:\n" + "\n".join(bad)


def test_links_inside_the_design_notes_resolve():
    notes = sorted(DESIGN.glob("*.md"))
    assert {p.name for p in notes} >= {"README.md", "bibliography.md", "core.md", "collect.md",
                                       "uniqueness.md", "linkage.md", "pie.md"}
    bad = []
    for path in notes:
        text = path.read_text(encoding="utf-8")
        for m in MD_LINK.finditer(text):
            link = m.group(1)
            if re.match(r"^[a-z]+://", link):
                continue
            file_part, _, anchor = link.partition("#")
            target = (path.parent / file_part).resolve() if file_part else path
            if not target.exists():
                bad.append(f"{_where(path, text, m.start())}: no file {file_part}")
            elif anchor and anchor not in anchors(target):
                bad.append(f"{_where(path, text, m.start())}: {target.name} has no #{anchor}")
    assert not bad, "broken links in docs/design:\n" + "\n".join(bad)


def test_every_cited_key_is_in_the_bibliography():
    keys = set(BIB_KEY.findall((DESIGN / "bibliography.md").read_text(encoding="utf-8")))
    assert {"Sei2022", "Ito", "Murakami2021", "Sei2023"} <= keys  # the four papers
    bad = []
    for path in sorted(DESIGN.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        for m in CITATION.finditer(text):
            for part in m.group(1).split(";"):
                words = part.strip().replace(",", " ").split()
                key = words[0] if words else ""
                if (KEY_SHAPE.match(key) or key in {"Ito", "PIEPrivacy"}) and key not in keys:
                    bad.append(f"{_where(path, text, m.start())}: [{key}]")
    assert not bad, "cited but not in docs/design/bibliography.md:\n" + "\n".join(bad)


@pytest.mark.parametrize("bad_ref", ["docs/" + "design/core.md#no-such-section",
                                     "docs/" + "design/nothing.md#grr"])
def test_a_broken_reference_is_caught(bad_ref):
    """The checker itself: a made-up note or section is reported."""
    m = DESIGN_REF.search(bad_ref)
    note, anchor = m.group(1), m.group(2)
    target = DESIGN / note
    assert not target.is_file() or anchor not in anchors(target)


# ---- every exported callable documents its parameters ----------------------------------------
PARAMETERS = re.compile(r"^[ \t]*Parameters[ \t]*\n[ \t]*-{3,}[ \t]*$", re.M)


def _documents_parameters(obj) -> bool:
    return bool(PARAMETERS.search(inspect.getdoc(obj) or ""))


def _takes_parameters(obj, bound: bool = False) -> bool:
    try:
        params = list(inspect.signature(obj).parameters)
    except (TypeError, ValueError):  # builtins without a signature
        return False
    return len(params) > (1 if bound else 0)


def _skip_if_optional(name: str, exc: BaseException | None, failed: list[str], root: str) -> None:
    """Append ``name`` to ``failed`` when ``exc`` says a library outside the package is not
    installed (an optional extra); raise it otherwise, so that a module broken by its own code
    fails the checks instead of leaving them with fewer callables to check."""
    missing = exc.name if isinstance(exc, ModuleNotFoundError) else None
    if not missing or missing.partition(".")[0] == root:
        raise RuntimeError(f"{name} cannot be imported: {exc!r}") from exc
    failed.append(name)


def _exported_objects(package, failed: list[str]):
    """(module name, name, object) of every public function and class defined in a module of
    ``package`` (default: reidrisk); the modules that cannot be imported because an optional
    extra is not installed are appended to ``failed``, any other import error is raised."""
    import reidrisk

    package = package or reidrisk
    root = package.__name__.partition(".")[0]
    for info in pkgutil.walk_packages(
            package.__path__, package.__name__ + ".",
            onerror=lambda name: _skip_if_optional(name, sys.exc_info()[1], failed, root)):
        try:
            mod = importlib.import_module(info.name)
        except ImportError as exc:
            _skip_if_optional(info.name, exc, failed, root)
            continue
        for name, obj in vars(mod).items():
            if not name.startswith("_") and getattr(obj, "__module__", None) == info.name:
                yield info.name, name, obj


def exported_callables(package=None) -> tuple[dict[str, bool], list[str]]:
    """Every exported callable of the package that takes parameters, mapped to whether its
    docstring has a numpydoc ``Parameters`` block; and the modules that could not be imported
    (an optional extra that is not installed).

    Exported: a public name defined in a module of the package (``obj.__module__`` is that
    module), functions and classes alike, and the public methods (static and class methods
    included, properties not) of such classes. A class documents its constructor in its own
    docstring or its ``__init__``'s; a method without a docstring inherits its base's
    (``inspect.getdoc``). Exceptions are left out (their parameter is the message).
    """
    out: dict[str, bool] = {}
    failed: list[str] = []
    for modname, name, obj in _exported_objects(package, failed):
        qual = f"{modname}.{name}"
        if inspect.isfunction(obj):
            if _takes_parameters(obj):
                out[qual] = _documents_parameters(obj)
        elif inspect.isclass(obj) and not issubclass(obj, BaseException):
            init = obj.__dict__.get("__init__")
            if _takes_parameters(obj):
                out[qual] = _documents_parameters(obj) or (
                    inspect.isfunction(init) and _documents_parameters(init))
            for attr, raw in obj.__dict__.items():
                if attr.startswith("_"):
                    continue
                func = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
                if inspect.isfunction(func) and _takes_parameters(
                        func, bound=not isinstance(raw, staticmethod)):
                    out[f"{qual}.{attr}"] = _documents_parameters(getattr(obj, attr))
    return out, failed


RETURNS = re.compile(r"^[ \t]*(Returns|Yields)[ \t]*\n[ \t]*-{3,}[ \t]*$", re.M)


def _returns_value(func) -> bool:
    """Whether the body of ``func`` (not of functions nested in it) returns a value or yields."""
    try:
        source = textwrap.dedent(inspect.getsource(inspect.unwrap(func)))
    except (OSError, TypeError):  # no source (built or generated)
        return False
    todo = list(ast.iter_child_nodes(ast.parse(source).body[0]))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return True
        if isinstance(node, ast.Return) and node.value is not None and not (
                isinstance(node.value, ast.Constant) and node.value.value is None):
            return True
        todo.extend(ast.iter_child_nodes(node))
    return False


def returning_callables(package=None) -> tuple[dict[str, bool], list[str]]:
    """Every exported function and method (as in ``exported_callables``) whose body returns a
    value, mapped to whether its docstring has a numpydoc ``Returns`` (or ``Yields``) block; and
    the modules that could not be imported."""
    out: dict[str, bool] = {}
    failed: list[str] = []
    for modname, name, obj in _exported_objects(package, failed):
        funcs = [(f"{modname}.{name}", obj, obj)] if inspect.isfunction(obj) else []
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            for attr, raw in obj.__dict__.items():
                func = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
                if not attr.startswith("_") and inspect.isfunction(func):
                    funcs.append((f"{modname}.{name}.{attr}", func, getattr(obj, attr)))
        for qual, func, documented in funcs:
            if _returns_value(func):
                out[qual] = bool(RETURNS.search(inspect.getdoc(documented) or ""))
    return out, failed


def _check_documented(found: dict[str, bool], what: str) -> None:
    missing = sorted(q for q, ok in found.items() if not ok)
    assert not missing, (f"these exported callables have no numpydoc {what} block; add one:\n"
                         + "\n".join(missing))


def test_every_exported_function_that_returns_says_what():
    """numpydoc style: an exported function or method that returns a value has a Returns (or
    Yields) block."""
    found, _ = returning_callables()
    _check_documented(found, "Returns")


def test_every_exported_callable_documents_its_parameters():
    """numpydoc style (the guide): an exported function, class or method that takes parameters
    has a Parameters block."""
    found, _ = exported_callables()
    _check_documented(found, "Parameters")


def test_the_parameters_check_catches_a_missing_block(monkeypatch):
    """The checker itself: a function and a method without the block are found, documented ones
    and parameterless ones are not."""
    import types

    mod = types.ModuleType("fake_pkg.mod")

    def documented(x):
        """Do.

        Parameters
        ----------
        x : int
            A number.
        """

    def bare(x):
        """Do, with x in prose only."""

    def no_args():
        """Nothing to document."""

    class Thing:
        """A thing.

        Parameters
        ----------
        a : int
            A number.
        """

        def __init__(self, a):
            self.a = a

        def method(self, b):
            """Use b."""

    for obj in (documented, bare, no_args, Thing):
        obj.__module__ = mod.__name__
        setattr(mod, obj.__name__, obj)
    pkg = types.ModuleType("fake_pkg")
    pkg.__path__ = []
    monkeypatch.setattr(pkgutil, "walk_packages",
                        lambda path, prefix, onerror: [types.SimpleNamespace(name=mod.__name__)])
    monkeypatch.setattr(importlib, "import_module", lambda name: mod)
    found, failed = exported_callables(pkg)
    assert found == {"fake_pkg.mod.documented": True, "fake_pkg.mod.bare": False,
                     "fake_pkg.mod.Thing": True, "fake_pkg.mod.Thing.method": False}
    assert failed == []


def test_the_returns_check_catches_a_missing_block(monkeypatch):
    """The checker itself: functions and methods that return a value or yield need the block;
    those that return nothing (or only None) do not."""
    import types

    mod = types.ModuleType("fake_pkg.mod")

    def documented(x):
        """Do.

        Returns
        -------
        int
            x.
        """
        return x

    def bare(x):
        """Do, and say what comes back in prose only."""
        return x

    def nothing(x):
        """Do, for the side effect."""
        if x:
            return None

    def nested_only(x):
        """Return nothing; the nested function does."""
        def inner():
            return x
        inner()

    def generator(n):
        """Count."""
        yield from range(n)

    class Thing:
        """A thing."""

        def method(self):
            """Give 1."""
            return 1

    for obj in (documented, bare, nothing, nested_only, generator, Thing):
        obj.__module__ = mod.__name__
        setattr(mod, obj.__name__, obj)
    pkg = types.ModuleType("fake_pkg")
    pkg.__path__ = []
    monkeypatch.setattr(pkgutil, "walk_packages",
                        lambda path, prefix, onerror: [types.SimpleNamespace(name=mod.__name__)])
    monkeypatch.setattr(importlib, "import_module", lambda name: mod)
    found, failed = returning_callables(pkg)
    assert found == {"fake_pkg.mod.documented": True, "fake_pkg.mod.bare": False,
                     "fake_pkg.mod.generator": False, "fake_pkg.mod.Thing.method": False}
    assert failed == []


def test_the_checks_raise_on_a_module_broken_by_its_own_code(monkeypatch):
    """The checker itself: a module that cannot be imported because a library of an optional
    extra is missing is skipped (listed in ``failed``); one that fails on its own import, or on
    any other error, stops the checks instead of leaving them fewer callables to look at."""
    import types

    pkg = types.ModuleType("fake_pkg")
    pkg.__path__ = []
    monkeypatch.setattr(pkgutil, "walk_packages", lambda path, prefix, onerror: [
        types.SimpleNamespace(name="fake_pkg.extra"), types.SimpleNamespace(name="fake_pkg.ok")])
    ok = types.ModuleType("fake_pkg.ok")

    def importer(error):
        def import_module(name):
            if name == "fake_pkg.extra":
                raise error
            return ok
        return import_module

    monkeypatch.setattr(importlib, "import_module",
                        importer(ModuleNotFoundError("no dask", name="dask")))
    assert exported_callables(pkg) == ({}, ["fake_pkg.extra"])
    for error in (ModuleNotFoundError("own", name="fake_pkg.gone"), ImportError("cycle")):
        monkeypatch.setattr(importlib, "import_module", importer(error))
        with pytest.raises(RuntimeError, match="fake_pkg.extra cannot be imported"):
            exported_callables(pkg)
        with pytest.raises(RuntimeError, match="fake_pkg.extra cannot be imported"):
            returning_callables(pkg)


# ---- every Python snippet of the user docs runs ------------------------------------------------
# docs file -> {block index (0-based, in file order): setup run first, "slow" (the snippet is a slow
# test), "slow after N" (block N runs first), or SKIP_SNIPPET + reason}.
# Every ```python block must have an entry: a new snippet is run or its reason to skip is stated.
SKIP_SNIPPET = "skip: "
_SCALE_REPORTS = """
from reidrisk.collect.partitioned import simulate_partitioned
from reidrisk.collect.protocol import Protocol
from reidrisk.schema import Attribute, Schema
schema = Schema(tuple(Attribute(f"a{j}", tuple("abc")) for j in range(3)))
simulate_partitioned("reports/", schema, Protocol(4.0, None, "grr"), 3000,
                     rows_per_partition=1000, rng=1)
"""
SNIPPETS: dict[str, dict[int, str]] = {
    "docs/guide.md": {0: "", 1: "", 2: "", 3: "", 4: "slow", 5: "slow after 4", 6: ""},
    "docs/scale.md": {
        0: SKIP_SNIPPET + "writes to s3://bucket and needs report batches from a client; the "
                          "in-memory call is run by tests/collect/test_partitioned.py",
        1: _SCALE_REPORTS,
        2: SKIP_SNIPPET + "needs a Dask cluster client; tests/collect/test_dask.py runs it",
        3: "slow",
        4: SKIP_SNIPPET + "needs a Spark context and an s3 bucket",
        5: SKIP_SNIPPET + "needs a Spark context",
    },
    "docs/deployment.md": {
        0: SKIP_SNIPPET + "needs a running service; tests/service/test_walkthrough.py submits "
                          "answers the same way",
    },
}
_FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def _snippets():
    for doc, table in SNIPPETS.items():
        blocks = _FENCE.findall((ROOT / doc).read_text(encoding="utf-8"))
        for i, code in enumerate(blocks):
            setup = table.get(i)
            marks = [pytest.mark.slow] if setup is not None and setup.startswith("slow") else []
            if setup is not None and setup.startswith("slow after "):
                setup = blocks[int(setup.rsplit(" ", 1)[1])]
            yield pytest.param(doc, i, code, setup, marks=marks, id=f"{doc}#{i}")


def test_every_python_snippet_is_listed():
    for doc, table in SNIPPETS.items():
        count = len(_FENCE.findall((ROOT / doc).read_text(encoding="utf-8")))
        assert sorted(table) == list(range(count)), (
            f"{doc} has {count} Python snippets; list each in tests/test_docs.py SNIPPETS")


@pytest.mark.parametrize("doc, index, code, setup", list(_snippets()))
def test_python_snippet_runs(doc, index, code, setup, tmp_path, monkeypatch):
    if setup is None:
        pytest.fail(f"{doc} snippet {index} is not listed in SNIPPETS")
    if setup.startswith(SKIP_SNIPPET):
        pytest.skip(setup[len(SKIP_SNIPPET):])
    monkeypatch.chdir(tmp_path)  # snippets write relative paths
    monkeypatch.setattr(sys, "argv", [f"{doc}#{index}"])  # a script snippet reads its arguments
    import matplotlib

    matplotlib.use("Agg")
    namespace: dict = {"__name__": "__main__"}
    if setup not in ("", "slow"):
        exec(compile(setup, f"{doc} setup {index}", "exec"), namespace)
    exec(compile(code, f"{doc} snippet {index}", "exec"), namespace)
