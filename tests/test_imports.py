"""No import circle between the package's modules, deferred imports included.

The graph is grimp's (the library under import-linter, whose contracts in pyproject.toml ``make
test`` checks with ``lint-imports``): every ``import`` of a reidrisk module, at the top of a module,
inside a function or under ``TYPE_CHECKING`` alike -- a deferred import is still a dependency. To it
is added what Python runs on an import: ``import reidrisk.a.b.c`` first runs the packages
``reidrisk.a`` and ``reidrisk.a.b`` (their ``__init__``), except those the importing module is
itself inside (already running). A circle through a package's ``__init__`` (a module importing a
sibling package whose ``__init__`` imports back) is therefore a circle too.

Imports of the package's own modules inside a function are kept only for start-up time or an
optional dependency, each with its reason in a comment on the line or the line above.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import grimp

SRC = Path(__file__).resolve().parents[1] / "src" / "reidrisk"
INDENTED_OWN_IMPORT = re.compile(r"^[ \t]+(?:from[ \t]+(?:reidrisk\b|\.)|import[ \t]+reidrisk\b)", re.M)


def _packages_run(importer: str, imported: str) -> set[str]:
    """The packages whose ``__init__`` runs when ``importer`` imports ``imported``: every ancestor
    of ``imported`` that is not already an ancestor of (or) ``importer``."""
    parts = imported.split(".")
    ancestors = {".".join(parts[:i]) for i in range(1, len(parts))}
    mine = importer.split(".")
    running = {".".join(mine[:i]) for i in range(1, len(mine) + 1)}
    return ancestors - running


def import_graph() -> tuple[dict[str, set[str]], grimp.ImportGraph]:
    """``{module: the modules it imports, the packages those imports run included}``, and grimp's
    graph."""
    graph = grimp.build_graph("reidrisk", cache_dir=None)
    edges: dict[str, set[str]] = {}
    for module in graph.modules:
        out: set[str] = set()
        for imported in graph.find_modules_directly_imported_by(module):
            out |= {imported} | _packages_run(module, imported)
        edges[module] = out - {module}
    return edges, graph


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, without recursion),
    each sorted, in sorted order: every module of a component reaches every other one."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def shortest_circle(component: list[str], edges: dict[str, set[str]]) -> list[str]:
    """A shortest circle through the component's first module (breadth first, inside the
    component): ``[m, a, b, ..., m]``."""
    start, inside = component[0], set(component)
    came: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(edges[node] & inside):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came[path[-1]])
                    return [start, *reversed(path[:-1]), start] if node != start else [start, start]
                if child not in came:
                    came[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"{start} is on no circle of {component}")


def _explain(component: list[str], edges: dict[str, set[str]], graph: grimp.ImportGraph) -> str:
    circle = shortest_circle(component, edges)
    lines = [f"  {len(component)} modules, among them the circle:"]
    for a, b in zip(circle, circle[1:]):
        at = [d["line_number"] for d in graph.get_import_details(importer=a, imported=b)]
        how = f"line {', '.join(map(str, at))}" if at else "the import runs the package's __init__"
        lines.append(f"    {a} -> {b} ({how})")
    return "\n".join(lines)


def test_the_circle_finder_finds_circles_and_only_them():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}) == [["a", "b"], ["c", "d"]]
    assert circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    edges = {"a": {"b", "d"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert shortest_circle(["a", "b", "c", "d"], edges) == ["a", "d", "a"]


def test_importing_a_submodule_runs_the_packages_above_it():
    assert _packages_run("reidrisk.collect.protocol", "reidrisk.collect.baselines.calm") == {
        "reidrisk.collect.baselines"}
    assert _packages_run("reidrisk.mechanisms.record", "reidrisk.mechanisms.base") == set()
    assert _packages_run("reidrisk.schema", "reidrisk.data.io") == {"reidrisk.data"}


def test_no_import_circle_between_modules():
    edges, graph = import_graph()
    assert len(edges) > 100 and "reidrisk.collect.pipeline" in edges  # the whole package was read
    found = circles(edges)
    assert not found, (
        f"{len(found)} import circle(s): move the shared piece down to the module (or layer) both "
        "sides stand on, rather than deferring an import into a function:\n"
        + "\n".join(_explain(c, edges, graph) for c in found))


def _own_import(node: ast.AST) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.level > 0 or (node.module or "").split(".")[0] == "reidrisk"
    return isinstance(node, ast.Import) and any(
        a.name.split(".")[0] == "reidrisk" for a in node.names)


def _deferred_imports(tree: ast.AST):
    """(import node, name of the innermost function around it, the first import of the run of
    consecutive imports it belongs to) of every import inside a function."""
    todo: list[tuple[ast.AST, str | None]] = [(tree, None)]
    while todo:
        node, function = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = node.name
        if function is not None:
            for field in ("body", "orelse", "finalbody"):
                stmts = getattr(node, field, None)
                if not isinstance(stmts, list):
                    continue
                run_head = None
                for stmt in stmts:
                    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                        run_head = run_head or stmt
                        yield stmt, function, run_head
                    else:
                        run_head = None
        todo.extend((child, function) for child in ast.iter_child_nodes(node))


def test_every_deferred_import_of_the_package_gives_its_reason():
    bare = []
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if not INDENTED_OWN_IMPORT.search(text):  # parse only the files that may have one
            continue
        lines = text.splitlines()
        for node, function, head in _deferred_imports(ast.parse(text)):
            if not _own_import(node):
                continue
            # the reason stands on the import's line, above it, or above the run of imports it is in
            line = lines[node.lineno - 1]
            above = {lines[node.lineno - 2].strip()[:1], lines[head.lineno - 2].strip()[:1]}
            if "#" not in line and "#" not in above:
                bare.append(f"{path.relative_to(SRC.parent)}:{node.lineno} ({function})")
    assert not bare, ("imports inside functions without a comment giving the reason (start-up "
                      "time or an optional dependency; otherwise import at the top):\n  "
                      + "\n  ".join(sorted(bare)))
