"""The package follows the data flow: each stage may import only the stages below it.

source text -> syntax -> checker -> compiler -> PolicySet; Kubernetes objects -> objects; both -> evaluation
-> simulate -> cli. The lark tree never leaves ``syntax``; only a future ``kube`` package may import the
Kubernetes client. This test reads the imports statically, so a layering slip fails CI instead of
turning into an import cycle months later.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "policyscheduler"

# stage -> the stages it may import (besides itself)
ALLOWED: dict[str, set[str]] = {
    "kobjects": set(),  # facts about Kubernetes objects: the bottom floor (see the loop below)
    "source": set(),
    "schema": set(),
    "quantity": set(),
    "diagnostics": {"source"},
    "syntax": {"diagnostics", "source"},
    "checker": {"diagnostics", "source", "syntax", "schema", "quantity"},
    "compiler": {"diagnostics", "source", "syntax", "checker", "schema"},
    "objects": {"schema", "quantity"},
    "state": {"objects", "schema", "quantity"},
    "loader": {"diagnostics", "source", "syntax", "checker", "compiler", "objects", "schema"},
    "evaluation": {"diagnostics", "syntax", "checker", "compiler", "objects", "state", "schema"},
    "inputs": set(),
    "cycle": {"compiler", "objects", "state", "evaluation"},
    "config": {"loader", "inputs"},
    "reload": {"diagnostics", "source", "loader", "compiler"},
    "kube": {"diagnostics", "compiler", "objects", "state", "evaluation", "loader", "cycle", "reload"},
    "simulate": {"diagnostics", "compiler", "objects", "state", "evaluation", "loader", "inputs", "cycle"},
    "testing": {"diagnostics", "source", "syntax", "loader", "compiler", "objects", "state", "evaluation", "inputs"},
    "cli": {"diagnostics", "source", "loader", "compiler", "objects", "state", "evaluation", "inputs", "simulate",
            "cycle", "kube", "testing", "syntax", "checker", "schema", "config", "lsp"},
    "lsp": {"diagnostics", "source", "loader", "syntax", "checker", "schema"},
    "__init__": {"diagnostics", "loader", "compiler", "objects", "state", "evaluation"},
    "__main__": {"cli"},
}
for _below in ALLOWED.values():
    _below.add("kobjects")  # every stage may ask kobjects (pending/placed, priority, keys, List flattening)
KUBERNETES_CLIENT_USERS = {"kube"}


def _stage(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _imports(path: Path) -> set[str]:
    """Top-level names imported from policyscheduler (`policyscheduler.X...` or `from policyscheduler import X`)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "policyscheduler":
                found.update(a.name for a in node.names)
                continue
            names = [node.module]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "policyscheduler" and len(parts) > 1:
                found.add(parts[1])
            if parts[0] == "kubernetes":
                found.add("<kubernetes client>")
    return found


MODULES = sorted(p for p in PACKAGE.rglob("*.py"))


def test_every_stage_is_declared() -> None:
    assert {_stage(p) for p in MODULES} <= set(ALLOWED) | KUBERNETES_CLIENT_USERS


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_follow_the_layers(path: Path) -> None:
    stage = _stage(path)
    imported = _imports(path) - {stage}
    allowed = ALLOWED.get(stage, set())
    if stage not in KUBERNETES_CLIENT_USERS:
        assert "<kubernetes client>" not in imported, f"{stage} must not import the Kubernetes client"
    imported.discard("<kubernetes client>")
    assert imported <= allowed, f"{path.name} ({stage}) imports {sorted(imported - allowed)}"


def test_lark_stays_inside_syntax() -> None:
    for path in MODULES:
        if _stage(path) == "syntax":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                assert not any(m.split(".")[0] == "lark" for m in mods), f"{path} imports lark"
