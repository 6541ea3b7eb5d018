"""The package is a house of floors: each floor may import only the floors below it, and no two modules import
each other, directly or around a loop.

Why a test: a layering slip fails CI the day it is written, instead of turning into an import cycle (or a
scheduler that cannot be tested without an API server) months later. The imports are read statically from
the source, every one of them: at module level, inside functions, under ``if TYPE_CHECKING``, and
``importlib.import_module("policyscheduler....")`` with a literal name (a lazy import is still a dependency).

A *stage* is a top-level package or module of ``policyscheduler`` (``kube``, ``loader``, ...). Two checks:

* stages: every stage is on exactly one floor of :data:`FLOORS`; a module may import its own stage and the
  stages on floors *below* its own (never one beside it: that is how cycles between stages start);
* modules: the graph of module-to-module imports (inside a package too) has no cycle, except the ones listed
  in :data:`KNOWN_CYCLES` with the reason they are tolerated (each must still exist, so the list shrinks).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "policyscheduler"
ROOT = PACKAGE.name

FLOORS: list[tuple[str, set[str]]] = [
    # (what the floor is, its stages), from the bottom up
    ("facts about Kubernetes objects (pending/placed, priority, keys, gates, List flattening): imports nothing",
     {"kobjects"}),
    ("leaves: import nothing from the package but kobjects",
     {"source", "schema", "quantity", "times", "inputs"}),
    ("diagnostics; Kubernetes objects as records; the API server (transport + adapters, nothing of the scheduler)",
     {"diagnostics", "objects", "kube"}),
    ("the parser; the cluster state", {"syntax", "state"}),
    ("the type checker", {"checker"}),
    ("the closure compiler (PolicySet)", {"compiler"}),
    ("loading policy sets; evaluating them (one driver, two backends)", {"loader", "evaluation"}),
    ("the scheduling cycle; configuration files; hot reload; policy tests; the package's public API",
     {"cycle", "config", "reload", "testing", "__init__"}),
    ("applications: the offline simulation, the live scheduler, the language server",
     {"simulate", "app", "lsp"}),
    ("the command line", {"cli"}),
    ("python -m policyscheduler", {"__main__"}),
]

KUBE_MUST_NOT_IMPORT = {"app", "reload", "loader", "evaluation", "cycle"}
"""Said outright (the floors imply it): the API adapters know nothing of policies or of the scheduler."""

KNOWN_CYCLES: dict[frozenset[str], str] = {
    frozenset({"policyscheduler.cli.config", "policyscheduler.cli.lint"}):
        "config --lint reuses lint's reporting and lint --config reuses config's reading, both through "
        "function-level imports; to go once the shared part has a module of its own",
}

KUBERNETES_CLIENT_USERS = {"kube"}


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULE_PATHS: dict[str, Path] = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def stage_of(module: str) -> str:
    """``policyscheduler.kube.rest`` -> ``kube``; the package itself is ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _literal_import_module(node: ast.Call) -> str | None:
    """The name in ``importlib.import_module("...")`` / ``import_module("...")``, when it is a literal."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if name != "import_module" or not node.args:
        return None
    first = node.args[0]
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None


def imported_names(source: str) -> set[str]:
    """Every dotted name ``source`` imports (``from a.b import c`` gives ``a.b.c``, which :func:`resolve`
    turns into ``a.b`` when ``c`` is not a module), wherever the import statement is."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Call):
            literal = _literal_import_module(node)
            if literal is not None:
                found.add(literal)
    return found


def resolve(name: str, modules: Iterable[str]) -> str | None:
    """The module of the package that importing ``name`` loads: the longest prefix that is a module."""
    known = set(modules)
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def module_graph() -> dict[str, set[str]]:
    """Module -> the modules of the package it imports (itself left out)."""
    graph: dict[str, set[str]] = {}
    for module, path in MODULE_PATHS.items():
        targets = set()
        for name in imported_names(path.read_text(encoding="utf-8")):
            if name == ROOT or name.startswith(ROOT + "."):
                target = resolve(name, MODULE_PATHS)
                if target is not None and target != module:
                    targets.add(target)
        graph[module] = targets
    return graph


def cycles(graph: Mapping[str, Iterable[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph.get(child, ()))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(frozenset(component))
    return found


GRAPH = module_graph()
FLOOR_OF = {stage: level for level, (_, stages) in enumerate(FLOORS) for stage in stages}


def test_every_stage_is_on_exactly_one_floor() -> None:
    declared = [stage for _, stages in FLOORS for stage in stages]
    assert len(declared) == len(set(declared)), "a stage is on two floors"
    missing = {stage_of(m) for m in MODULE_PATHS} - set(FLOOR_OF)
    assert not missing, f"put {sorted(missing)} on a floor of FLOORS"


@pytest.mark.parametrize("module", sorted(MODULE_PATHS), ids=lambda m: m.removeprefix(ROOT + "."))
def test_imports_go_only_down_the_floors(module: str) -> None:
    stage = stage_of(module)
    floor = FLOOR_OF[stage]
    upward = sorted(f"{target} (floor {FLOOR_OF[stage_of(target)]})" for target in GRAPH[module]
                    if stage_of(target) != stage and FLOOR_OF[stage_of(target)] >= floor)
    assert not upward, f"{module} (floor {floor}, {FLOORS[floor][0]!r}) imports from its floor or above: {upward}"


def test_kube_imports_nothing_of_the_scheduler() -> None:
    wrong = {(m, t) for m, targets in GRAPH.items() if stage_of(m) == "kube" for t in targets
             if stage_of(t) in KUBE_MUST_NOT_IMPORT}
    assert not wrong, sorted(wrong)


def test_no_import_cycle_between_modules() -> None:
    found = set(cycles(GRAPH))
    unexpected = [sorted(c) for c in found if c not in KNOWN_CYCLES]
    assert not unexpected, f"import cycles: {unexpected}"
    stale = [sorted(c) for c in KNOWN_CYCLES if c not in found]
    assert not stale, f"no longer cycles, remove them from KNOWN_CYCLES: {stale}"


def test_the_reader_sees_lazy_typing_and_importlib_imports() -> None:
    """The checks can fail: each form of import is seen (the loader reaches ``objects`` through importlib)."""
    source = ("import importlib\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from p.a import A\n"
              "def f():\n    from p.b import c\n    return importlib.import_module('p.d')\n")
    assert imported_names(source) >= {"p.a.A", "p.b.c", "p.d"}
    assert resolve("p.a.A", ["p", "p.a"]) == "p.a"
    assert f"{ROOT}.objects" in GRAPH[f"{ROOT}.loader"]


def test_the_cycle_finder_finds_loops_of_any_length() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"f"}, "f": {"e"}, "g": {"g"}}
    assert set(cycles(graph)) == {frozenset("abc"), frozenset("ef")}
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_kubernetes_client_stays_inside_kube() -> None:
    for module, path in MODULE_PATHS.items():
        if stage_of(module) in KUBERNETES_CLIENT_USERS:
            continue
        names = imported_names(path.read_text(encoding="utf-8"))
        assert not any(n.split(".")[0] == "kubernetes" for n in names), f"{module} imports the Kubernetes client"


def test_lark_stays_inside_syntax() -> None:
    for module, path in MODULE_PATHS.items():
        if stage_of(module) == "syntax":
            continue
        names = imported_names(path.read_text(encoding="utf-8"))
        assert not any(n.split(".")[0] == "lark" for n in names), f"{module} imports lark"
