"""The package's shape, measured: import circles, imports of its own modules made inside functions,
the longest functions, and the module boundaries one collect fit crosses.

Usage::

    python benchmarks/structure.py                  # print the numbers
    python benchmarks/structure.py --record before  # keep them as the "before" of a refactor
    python benchmarks/structure.py --record after   # and write docs/results/structure.{md,json}

Every state already in docs/results/structure.json is kept (read back from it) unless ``--drop``
names it; ``--record LABEL`` adds the state LABEL, or replaces it, and rewrites both files.

With ``--at REV`` the package of commit REV is measured instead of the working tree: its ``src/``
is exported (``git archive``) to a temporary folder and measured there by this script (and the
current tests/test_docs.py), so that edits not yet committed in a shared tree are not counted::

    python benchmarks/structure.py --at 6725577 --record before
    python benchmarks/structure.py --at HEAD --record after

* **Import circles**: the strongly connected components of more than one module of grimp's import
  graph of the package (every import: at the top, inside a function, under ``TYPE_CHECKING``), as
  ``tests/test_imports.py`` builds it (the current file, also for ``--at``): plain, and with the
  packages an import runs added (``import a.b.c`` runs ``a.b``'s ``__init__``), which is what that
  test refuses. Counted: circles, and the modules in them.
* **Deferred imports**: every import of the package's own modules that is not a statement at a
  module's top level (inside a function, under ``if TYPE_CHECKING``) or that ``importlib`` makes.
* **In-function imports**: ``import reidrisk...`` / ``from reidrisk... import`` / relative imports
  nested in a function body (AST), each listed with the comment next to it (the reason it stays).
* **Longest functions**: AST line span ``end_lineno - lineno + 1`` of every function and method
  (decorators excluded, docstring included, nested functions excluded), and the same without the
  docstring (the code lines).
* **Docstrings**: the lines of every docstring (module, class, function; AST span of the first
  statement when it is a string) against all source lines of the package, the longest module
  docstring, and the module docstrings over the 40 lines ``tests/test_docstrings.py`` allows.
* **Exported callables without a Parameters or Returns block**: the functions, classes and
  methods that ``tests/test_docs.py`` checks for a numpydoc ``Parameters`` block
  (``exported_callables``) and for a ``Returns`` block (``returning_callables``), counted with and
  without one (the tests allow none).
* **Crossings of one collect fit**: ``CollectPipeline().fit(reports)`` on a small simulated
  dataset (5 attributes, 2,000 people, 30 % missing, ``Protocol(4.0, attributes_per_person=2)``),
  traced with ``sys.setprofile``. A call is a *crossing* when the nearest reidrisk frame below
  it on the stack belongs to another reidrisk module. Reported: the distinct crossing edges
  (caller function -> callee function), the modules they join, the crossing calls in all, and how
  often ``unpack`` and the oracle check run. Calls into NumPy/SciPy are not counted; calls back from
  them into reidrisk are attributed to the nearest reidrisk caller.

The numbers of a ``--record`` run are kept in ``docs/results/structure.json`` under their label,
so that a later ``--record after`` writes both.
"""

from __future__ import annotations

import argparse
import ast
import functools
import inspect
import json
import os
import subprocess
import sys
import tempfile
import warnings
from collections import Counter
from pathlib import Path

from _harness import RESULTS_DIR, Results, md_table

REPO = Path(__file__).resolve().parent.parent
#: the package measured: the working tree's, or an exported commit's (``--at``)
SRC = Path(os.environ.get("STRUCTURE_SRC", REPO / "src")) / "reidrisk"
NAME = "structure"
TOP = 10
#: the functions named as too long to read in one direction
WATCHED = ("reidrisk.collect.pipeline.CollectPipeline._fit",
           "reidrisk.uniqueness.scorer.count_posterior",
           "reidrisk.demo.run_demo",
           "reidrisk.demo.demo_sections",
           "reidrisk.demo_report.demo_sections")


# ---- static: imports and function lengths ----------------------------------------------------
def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _own(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.level > 0 or (node.module or "").split(".")[0] == "reidrisk"
    return any(a.name.split(".")[0] == "reidrisk" for a in node.names)


def _functions(tree: ast.AST):
    """(qualified name, node) of every function, methods and nested functions included."""
    out = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                out.append((name, child))
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return out


def _nested_functions(fn):
    """The functions defined directly in ``fn``'s body (not inside another nested one)."""
    out, todo = [], list(ast.iter_child_nodes(fn))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.append(node)
        else:
            todo.extend(ast.iter_child_nodes(node))
    return out


def _docstring_lines(node) -> int:
    """Lines of ``node``'s docstring (0 without one)."""
    first = node.body[0] if getattr(node, "body", None) else None
    if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        return first.end_lineno - first.lineno + 1
    return 0


def docstring_measures() -> dict:
    """Docstring lines of the package against its source lines, and its longest module docstring."""
    total, source, modules = 0, 0, []
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text()
        tree = ast.parse(text)
        source += len(text.splitlines())
        total += sum(_docstring_lines(n) for n in ast.walk(tree)
                     if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                       ast.AsyncFunctionDef)))
        modules.append((_docstring_lines(tree), _module_name(path)))
    longest, name = max(modules)
    return {"docstring_lines": total, "source_lines": source,
            "longest_module_docstring_lines": longest, "longest_module_docstring": name,
            "module_docstrings_over_40": sum(1 for n, _ in modules if n > 40)}


def static_measures() -> dict:
    imports, lengths = [], []
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text()
        lines = text.splitlines()
        tree = ast.parse(text)
        mod = _module_name(path)
        seen: set[int] = set()
        for qual, fn in _functions(tree):
            span = fn.end_lineno - fn.lineno + 1
            nested = sum(c.end_lineno - c.lineno + 1 for c in _nested_functions(fn))
            first = fn.body[0]
            doc = (first.end_lineno - first.lineno + 1
                   if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                   and isinstance(first.value.value, str) else 0)
            lengths.append({"function": f"{mod}.{qual}", "lines": span - nested, "span": span,
                            "code": span - nested - doc})
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)) and _own(node) \
                        and id(node) not in seen:
                    seen.add(id(node))
                    line = lines[node.lineno - 1]
                    comment = line.split("#", 1)[1].strip() if "#" in line else ""
                    if not comment and node.lineno >= 2:
                        above = lines[node.lineno - 2].strip()
                        comment = above[1:].strip() if above.startswith("#") else ""
                    imports.append({"module": mod, "function": qual, "line": node.lineno,
                                    "reason": comment})
    lengths.sort(key=lambda r: -r["lines"])
    watched = {r["function"]: r["lines"] for r in lengths if r["function"] in WATCHED}
    return {"imports": imports, "longest": lengths[:TOP], "watched": watched}


def _test_module(name: str):
    """A module of tests/ loaded by path (the current file, whatever package is measured)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"_{name}_check", REPO / "tests" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def import_circles() -> dict:
    """Circles of the package's import graph (every import), plain and with the packages an import
    runs (``tests/test_imports.py``'s graph)."""
    module = _test_module("test_imports")
    with_packages, graph = module.import_graph()
    plain = {m: set(graph.find_modules_directly_imported_by(m)) - {m} for m in graph.modules}
    found, full = module.circles(plain), module.circles(with_packages)
    return {"import_circles": len(found),
            "modules_in_circles": sum(len(c) for c in found),
            "import_circles_with_packages": len(full),
            "modules_in_circles_with_packages": sum(len(c) for c in full),
            "circles": found}


def deferred_imports() -> list[dict]:
    """Imports of the package's own modules not at a module's top level, and importlib's."""
    out = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text())
        top = {id(n) for n in tree.body}
        mod = _module_name(path)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and _own(node) and id(node) not in top:
                out.append({"module": mod, "line": node.lineno, "kind": "statement"})
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr == "import_module"):
                out.append({"module": mod, "line": node.lineno, "kind": "importlib"})
    return out


def parameters_blocks() -> dict:
    """Exported callables that take parameters, and those without a numpydoc Parameters block,
    by the test's own definition (``tests/test_docs.py``: ``exported_callables``)."""
    module = _test_module("test_docs")
    found, failed = module.exported_callables()
    returning, _ = module.returning_callables()
    return {"exported_callables": len(found),
            "without_parameters": sum(1 for ok in found.values() if not ok),
            "without_parameters_names": sorted(q for q, ok in found.items() if not ok),
            "returning_callables": len(returning),
            "without_returns": sum(1 for ok in returning.values() if not ok),
            "unimported_modules": failed}


# ---- dynamic: crossings of one collect fit ---------------------------------------------------
def _fit_inputs():
    import numpy as np

    from reidrisk.collect import Protocol
    from reidrisk.data.missing import mcar
    from reidrisk.data.synthetic import make_population

    corr = np.array([[1.0, 0.6, -0.4, 0.3, 0.5], [0.6, 1.0, -0.3, 0.4, 0.3],
                     [-0.4, -0.3, 1.0, -0.2, -0.3], [0.3, 0.4, -0.2, 1.0, 0.2],
                     [0.5, 0.3, -0.3, 0.2, 1.0]])
    pop = make_population(2000, [3, 4, 3, 5, 2], dependence=corr, rng=1)
    codes = mcar(pop.codes, 0.3, rng=2)
    return Protocol(4.0, attributes_per_person=2).randomize(pop.schema, codes, rng=3)


def _reidrisk_module(frame) -> str | None:
    name = frame.f_globals.get("__name__", "")
    return name if name == "reidrisk" or name.startswith("reidrisk.") else None


_PASS_THROUGH = ("reidrisk._compat",)  # keyword-renaming wrappers: the call goes on to the callee


def _is_step(frame) -> bool:
    """Whether a frame is a function of its own: not a comprehension, lambda or generator
    expression (part of the function that wrote it), not a dunder or dataclass-generated method,
    not a property, not a keyword-renaming wrapper."""
    code = frame.f_code
    name = code.co_name
    if name.startswith("<") or (name.startswith("__") and name.endswith("__")):
        return False
    if _reidrisk_module(frame) in _PASS_THROUGH:
        return False
    owner = frame.f_locals.get("self") if code.co_argcount else None
    if owner is not None:
        attr = inspect.getattr_static(type(owner), name, None)
        if isinstance(attr, (property, functools.cached_property)):
            return False
    return True


def crossings() -> dict:
    from reidrisk.collect import CollectPipeline

    reports = _fit_inputs()
    pipe = CollectPipeline()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe.fit(reports)  # warm: imports made on first use are not part of the fit's shape
    edges: Counter = Counter()
    calls: Counter = Counter()

    def profile(frame, event, arg):
        if event != "call":
            return
        mod = _reidrisk_module(frame)
        if mod is None:
            return
        code = frame.f_code
        calls[f"{mod}.{code.co_qualname}"] += 1
        if not _is_step(frame):
            return
        back = frame.f_back
        while back is not None and (_reidrisk_module(back) is None or not _is_step(back)):
            back = back.f_back
        if back is None:
            return
        caller_mod = _reidrisk_module(back)
        if caller_mod != mod:
            edges[(caller_mod, back.f_code.co_qualname, mod, code.co_qualname)] += 1

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sys.setprofile(profile)
        try:
            pipe.fit(reports)
        finally:
            sys.setprofile(None)
    collect = [e for e in edges if e[0].startswith("reidrisk.collect")]
    return {
        "edges": [{"caller": f"{a}.{fa}", "callee": f"{b}.{fb}", "calls": n}
                  for (a, fa, b, fb), n in sorted(edges.items())],
        "crossing_edges": len(edges),
        "crossing_modules": len({e[0] for e in edges} | {e[2] for e in edges}),
        "crossing_calls": int(sum(edges.values())),
        "collect_edges": len(collect),
        "collect_modules": len({e[0] for e in collect} | {e[2] for e in collect}),
        "collect_calls": int(sum(edges[e] for e in collect)),
        "unpack_calls": int(sum(n for f, n in calls.items() if f.endswith(".unpack"))),
        "oracle_checks": int(sum(n for f, n in calls.items() if f.endswith("._require_oracles"))),
    }


def _module_of(qualified: str) -> str:
    """The module part of ``module.qualname`` (the longest prefix naming a module under src/)."""
    parts = qualified.split(".")
    for i in range(len(parts) - 1, 0, -1):
        path = SRC.parent.joinpath(*parts[:i])
        if path.with_suffix(".py").exists() or (path / "__init__.py").exists():
            return ".".join(parts[:i])
    return parts[0]


def module_edges(r: dict) -> list[tuple[str, str]]:
    """The distinct (caller module, callee module) pairs of the crossings out of reidrisk.collect."""
    out = {(_module_of(e["caller"]), _module_of(e["callee"])) for e in r["edges"]
           if e["caller"].startswith("reidrisk.collect")}
    return sorted(out)


def measure() -> dict:
    s = static_measures()
    d = parameters_blocks()
    c = crossings()
    circ = import_circles()
    deferred = deferred_imports()
    head = os.environ.get("STRUCTURE_COMMIT") or subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
        capture_output=True, text=True).stdout.strip()
    return {
        "commit": head,
        "in_function_imports": len(s["imports"]),
        "in_function_imports_without_reason": sum(1 for r in s["imports"] if not r["reason"]),
        "longest_function_lines": s["longest"][0]["lines"],
        "longest": s["longest"],
        "watched": s["watched"],
        "imports": s["imports"],
        "deferred_imports": len(deferred),
        **docstring_measures(),
        **circ,
        **d,
        **c,
    }


# ---- output ------------------------------------------------------------------------------------
def _summary_rows(runs: dict) -> list[list]:
    for r in runs.values():
        r["collect_module_edges"] = len(module_edges(r))
    keys = [("import_circles", "import circles (groups of modules that import one another, deferred imports included)"),
            ("modules_in_circles", "modules in them"),
            ("import_circles_with_packages", "import circles counting the packages an import runs (tests/test_imports.py)"),
            ("modules_in_circles_with_packages", "modules in them"),
            ("deferred_imports", "imports of the package's own modules not at a module's top level (in functions, under TYPE_CHECKING, by importlib)"),
            ("collect_module_edges", "module pairs (caller module -> callee module) crossed out of reidrisk.collect in one collect fit"),
            ("collect_edges", "crossing edges out of reidrisk.collect (caller -> callee function) in one collect fit"),
            ("collect_modules", "reidrisk modules those edges join"),
            ("collect_calls", "calls along them"),
            ("crossing_edges", "crossing edges anywhere in the package (engines included)"),
            ("crossing_modules", "reidrisk modules those edges join"),
            ("crossing_calls", "calls along them"),
            ("unpack_calls", "`unpack` calls in one collect fit"),
            ("oracle_checks", "oracle checks (`_require_oracles`) in one collect fit"),
            ("in_function_imports", "in-function imports of the package's own modules"),
            ("in_function_imports_without_reason", "... of them without a comment giving the reason"),
            ("longest_function_lines", "longest function (lines, nested functions excluded)"),
            ("docstring_lines", "docstring lines (module, class and function docstrings)"),
            ("source_lines", "source lines of the package"),
            ("longest_module_docstring_lines", "longest module docstring (lines)"),
            ("longest_module_docstring", "... its module"),
            ("module_docstrings_over_40", "module docstrings over 40 lines"),
            ("exported_callables", "exported functions, classes and methods that take parameters"),
            ("without_parameters", "... of them without a numpydoc Parameters block"),
            ("returning_callables", "exported functions and methods that return a value"),
            ("without_returns", "... of them without a numpydoc Returns block")]
    labels = list(runs)
    return [[text] + [runs[lab].get(k, "") for lab in labels] for k, text in keys], labels


def _watched(r: dict, function: str):
    """Lines of a watched function (from the top list for runs recorded before ``watched``)."""
    if function in r.get("watched", {}):
        return r["watched"][function]
    return next((f["lines"] for f in r["longest"] if f["function"] == function), "")


def write(runs: dict) -> None:
    for r in runs.values():
        r["collect_module_edges"] = len(module_edges(r))
    res = Results(NAME)
    for label, r in runs.items():
        res.add({"state": label, "commit": r.get("commit", "?"), "exported": bool(r.get("exported"))},
                "state", 1, "count")
        for c in r.get("circles", ()):
            res.add({"state": label, "modules": list(c)}, "import_circle", len(c), "modules")
        for k in ("collect_module_edges", "collect_edges", "collect_modules", "collect_calls",
                  "crossing_edges", "crossing_modules", "crossing_calls", "unpack_calls",
                  "oracle_checks", "in_function_imports", "in_function_imports_without_reason",
                  "longest_function_lines", "exported_callables", "without_parameters",
                  "returning_callables", "without_returns", "import_circles", "modules_in_circles",
                  "import_circles_with_packages", "modules_in_circles_with_packages",
                  "deferred_imports", "docstring_lines", "source_lines",
                  "module_docstrings_over_40"):
            if k in r:
                res.add({"state": label}, k, r[k],
                        "lines" if k.endswith("_lines") else "count")
        if "longest_module_docstring" in r:
            res.add({"state": label, "module": r["longest_module_docstring"]},
                    "longest_module_docstring_lines", r["longest_module_docstring_lines"], "lines")
        for function, lines in r.get("watched", {}).items():
            res.add({"state": label, "function": function}, "watched_function_lines", lines,
                    "lines")
        for i, f in enumerate(r["longest"]):
            res.add({"state": label, "rank": i + 1, "function": f["function"]}, "function_lines",
                    f["lines"], "lines")
        for name in r.get("without_parameters_names", ()):
            res.add({"state": label, "name": name}, "without_parameters_block", 1, "count")
        for e in r["edges"]:
            res.add({"state": label, "caller": e["caller"], "callee": e["callee"]}, "crossing",
                    e["calls"], "calls")
        for imp in r["imports"]:
            res.add({"state": label, "module": imp["module"], "function": imp["function"],
                     "line": imp["line"], "reason": imp["reason"]}, "in_function_import", 1, "count")
    res.write_json()
    rows, labels = _summary_rows(runs)
    last = runs[labels[-1]]
    body = ["# Structure of the package", "",
            "What `benchmarks/structure.py` measures (its module docstring): import circles, imports "
            "of the package's own modules made inside functions, the longest functions, docstring "
            "lines and the longest module docstring, and the module boundaries one `CollectPipeline().fit` crosses (5 attributes, 2,000 simulated people, "
            "30 % missing, `Protocol(4.0, attributes_per_person=2)`). No timing is measured.", "",
            "States: " + "; ".join(
                f"{lab}: commit {runs[lab].get('commit', '?')}"
                + (" (its package exported and measured with `--at`: edits not committed are not "
                   "counted)" if runs[lab].get("exported") else "") for lab in labels)
            + ". A crossing is a call whose nearest reidrisk caller lies in another module "
            "(properties, dunder methods, comprehensions and keyword-renaming wrappers are part "
            "of the function around them). The function-level edges count the accessors of the "
            "counts (`PairCounts.block`, `.counts`, `.n_present`) under each named step that reads "
            "them, so splitting a function into steps adds edges without adding a module; the "
            "module pairs are the shape of the fit. Function lengths include the docstring (a "
            "numpydoc Parameters block is part of it); the code lines leave it out. Exported "
            "callables are counted as tests/test_docs.py checks them (public functions and "
            "classes defined in a module of the package, and their public methods, that take "
            "parameters, and the functions and methods that return a value); the tests allow "
            "none without its block.", "",
            md_table(["measure"] + labels, rows), "",
            md_table(["function (lines, nested functions excluded)"] + labels,
                     [[f"`{f}`"] + [_watched(runs[lab], f) for lab in labels] for f in WATCHED]),
            "",
            "## Import circles", "",
            "Each circle is a group of modules every one of which imports (perhaps through the "
            "others, perhaps inside a function) every other one; a state measured before circles "
            "were counted has no entry.", "",
            *[f"* {lab}: " + ("; ".join("`" + "`, `".join(c) + "`" for c in runs[lab]["circles"])
                              if runs[lab]["circles"] else "none")
              for lab in labels if "circles" in runs[lab]], "",
            f"## Longest functions ({labels[-1]})", "",
            md_table(["function", "lines (nested functions excluded)", "code lines (docstring "
                      "excluded)", "span"],
                     [[f"`{f['function']}`", f["lines"], f.get("code", ""), f["span"]]
                      for f in last["longest"]]), "",
            "## Module pairs crossed out of reidrisk.collect in one collect fit", "",
            *[f"* {lab}: " + ", ".join(f"`{a}` -> `{b}`" for a, b in module_edges(runs[lab]))
              for lab in labels], "",
            f"## Crossings of one collect fit ({labels[-1]})", "",
            md_table(["caller", "callee", "calls"],
                     [[f"`{e['caller']}`", f"`{e['callee']}`", e["calls"]] for e in last["edges"]]),
            "",
            f"## In-function imports of the package's own modules ({labels[-1]})", "",
            md_table(["module", "function", "line", "reason"],
                     [[f"`{i['module']}`", f"`{i['function']}`", i["line"], i["reason"]]
                      for i in last["imports"]]), ""]
    res.write_markdown("\n".join(body))


def measure_at(rev: str) -> dict:
    """``measure()`` of commit ``rev``'s package: ``src/`` exported to a temporary folder and
    measured by this script in a process that imports reidrisk from there."""
    short = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", rev],
                           capture_output=True, text=True, check=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", short, "src"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        out = Path(tmp) / "measure.json"
        env = {**os.environ, "PYTHONPATH": str(Path(tmp) / "src"),
               "STRUCTURE_SRC": str(Path(tmp) / "src"), "STRUCTURE_COMMIT": short}
        subprocess.run([sys.executable, __file__, "--json-out", str(out)], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        return {**json.loads(out.read_text()), "exported": True}


def kept_runs() -> dict[str, dict]:
    """The states recorded in docs/results/structure.json, rebuilt from its points (the function
    spans and code lines of the longest functions are not kept there)."""
    import re

    path = RESULTS_DIR / f"{NAME}.json"
    if not path.exists():
        return {}
    md = (RESULTS_DIR / f"{NAME}.md").read_text() if (RESULTS_DIR / f"{NAME}.md").exists() else ""
    runs: dict[str, dict] = {}
    for point in json.loads(path.read_text()):
        if "params" not in point:  # the machine record
            continue
        p, metric, value = point["params"], point["metric"], point["value"]
        run = runs.setdefault(p["state"], {"longest": [], "edges": [], "imports": [],
                                           "without_parameters_names": []})
        if metric == "state":
            run.update(commit=p["commit"], exported=p["exported"])
        elif metric == "import_circle":
            run.setdefault("circles", []).append(p["modules"])
        elif metric == "watched_function_lines":
            run.setdefault("watched", {})[p["function"]] = value
        elif metric == "longest_module_docstring_lines":
            run.update(longest_module_docstring=p["module"], longest_module_docstring_lines=value)
        elif metric == "function_lines":
            run["longest"].append({"function": p["function"], "lines": value, "span": "",
                                   "code": ""})
        elif metric == "without_parameters_block":
            run["without_parameters_names"].append(p["name"])
        elif metric == "crossing":
            run["edges"].append({"caller": p["caller"], "callee": p["callee"], "calls": value})
        elif metric == "in_function_import":
            run["imports"].append({k: p[k] for k in ("module", "function", "line", "reason")})
        else:
            run[metric] = value
    for label, run in runs.items():
        if "commit" not in run:  # recorded before the state points: the page names the commit
            found = re.search(rf"{re.escape(label)}: commit (\w+)( \(its package exported)?", md)
            run.update(commit=found.group(1) if found else "?", exported=bool(found and found.group(2)))
        if "import_circles" in run:
            run.setdefault("circles", [])
    return runs


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--record", metavar="LABEL",
                    help="'before': keep the numbers for a later 'after'; any other label: add "
                         "them as that state to docs/results/structure.* (replacing it)")
    ap.add_argument("--drop", metavar="LABEL", action="append", default=[],
                    help="leave this kept state out of docs/results/structure.*")
    ap.add_argument("--before-file", type=Path, default=None,
                    help="JSON of an earlier '--record before' run (default: kept in /tmp)")
    ap.add_argument("--at", metavar="REV", default=None,
                    help="measure the package of this commit instead of the working tree")
    ap.add_argument("--json-out", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    r = measure_at(args.at) if args.at else measure()
    if args.json_out is not None:  # the measuring process of --at
        args.json_out.write_text(json.dumps(r))
        return
    rows, _ = _summary_rows({"now": r})
    print(md_table(["measure", "now"], rows))
    print()
    print(md_table(["function", "lines", "code lines"],
                   [[f["function"], f["lines"], f["code"]] for f in r["longest"]]))
    print()
    print(md_table(["caller", "callee", "calls"],
                   [[e["caller"], e["callee"], e["calls"]] for e in r["edges"]]))
    kept = args.before_file or Path("/tmp") / "structure_before.json"
    if args.record == "before":
        kept.write_text(json.dumps(r, indent=1))
        print(f"kept as {kept}")
    elif args.record is not None:
        runs = {lab: run for lab, run in kept_runs().items() if lab not in args.drop}
        if args.record == "after" and kept.exists() and "before" not in runs:
            runs = {"before": json.loads(kept.read_text()), **runs}
        runs[args.record] = r
        write(runs)


if __name__ == "__main__":
    main()
