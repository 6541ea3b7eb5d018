"""The one load pipeline: read -> parse -> check -> compile. Used by ``lint`` and by hot reload alike,
so lint gives exactly the verdict the running scheduler would.

Never raises for bad input: unreadable paths, broken text and even an internal bug become diagnostics.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Sequence
from pathlib import Path, PurePath

from policyscheduler.checker import Schema, check, global_schema
from policyscheduler.compiler import (
    FilterRule,
    PolicySet,
    ScoreRule,
    compile_rule,
    digest_of,
)
from policyscheduler.diagnostics import (
    ERROR,
    Diagnostic,
    Span,
    error,
    sort_key,
    warning,
)
from policyscheduler.source import SourceFile
from policyscheduler.syntax import ast, parse

__all__ = ["FilterRule", "LoadResult", "PolicySet", "ScoreRule", "load_policy_set", "load_policy_texts", "load_sources"]


@dataclasses.dataclass(frozen=True)
class LoadResult:
    """``policy_set`` is None iff some diagnostic is an error."""

    policy_set: PolicySet | None
    diagnostics: list[Diagnostic]
    sources: dict[str, SourceFile] = dataclasses.field(default_factory=dict, repr=False)
    costs: dict[str, int] = dataclasses.field(default_factory=dict, repr=False)
    """Static cost bound per rule ("filter name" / "score name"), for lint's report."""

    @property
    def ok(self) -> bool:
        return self.policy_set is not None

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == ERROR]


def _ensure_object_model() -> None:
    """Importing the object model registers its records, roots and builtins in policyscheduler.schema."""
    try:
        importlib.import_module("policyscheduler.objects")
    except ModuleNotFoundError as exc:
        if exc.name != "policyscheduler.objects":
            raise


def _file_order(name: str) -> tuple[str, str]:
    return (Path(name).name, name)


def load_policy_set(paths: Sequence[str | Path], *, schema: Schema | None = None) -> LoadResult:
    """Load files and directories (a directory means its ``*.policy`` files, sorted by name)."""
    files: list[tuple[str, str]] = []
    diags: list[Diagnostic] = []
    seen: set[str] = set()
    for p in paths:
        path = Path(p)
        try:
            if path.is_dir():
                found = sorted(path.glob("*.policy"))
                if not found:
                    diags.append(warning("no-policy-files", f"directory {path} holds no *.policy files",
                                         Span(str(path), 1, 1, 1, 1)))
            else:
                found = [path]
            for f in found:
                key = str(f.resolve())
                if key in seen:
                    continue
                seen.add(key)
                files.append((str(f), f.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
            diags.append(error("unreadable-file", f"cannot read {p}: {reason}", Span(str(p), 1, 1, 1, 1)))
    result = load_sources([SourceFile(n, t) for n, t in files], schema=schema)
    if not diags:
        return result
    all_diags = sorted(diags + result.diagnostics, key=sort_key)
    failed = any(d.severity == ERROR for d in all_diags)
    return LoadResult(None if failed else result.policy_set, all_diags, result.sources, result.costs)


def load_policy_texts(files: Sequence[tuple[str, str]], *, schema: Schema | None = None) -> LoadResult:
    """Load (display name, text) pairs, e.g. the keys of a ConfigMap."""
    return load_sources([SourceFile(n, t) for n, t in files], schema=schema)


def load_sources(sources: Sequence[SourceFile], *, schema: Schema | None = None) -> LoadResult:
    """The shared pipeline over already-read sources (ordered by file name here)."""
    ordered = sorted(sources, key=lambda s: _file_order(s.name))
    by_name = {s.name: s for s in ordered}
    try:
        return _pipeline(ordered, by_name, schema)
    except RecursionError:
        d = error("too-deep", "an expression is nested too deeply to analyse; split it with 'let'", None)
        return LoadResult(None, [d], by_name)
    except Exception as exc:  # noqa: BLE001 -- a bug of ours must not take the scheduler (or lint) down
        d = error("internal-error", f"the policy loader failed: {type(exc).__name__}: {exc}", None)
        return LoadResult(None, [d], by_name)


def _pipeline(ordered: list[SourceFile], by_name: dict[str, SourceFile], schema: Schema | None) -> LoadResult:
    if schema is None:
        _ensure_object_model()
        schema = global_schema()
    diags: list[Diagnostic] = []
    modules: list[ast.Module] = []
    for src in ordered:
        module, parse_diags = parse(src)
        diags.extend(parse_diags)
        if module is not None:
            modules.append(module)
    checked, check_diags = check(modules, schema)
    diags = sorted(diags + check_diags, key=sort_key)
    costs = {f"{c.rule.kind} {c.rule.name}": c.cost for c in checked}
    if any(d.severity == ERROR for d in diags):
        return LoadResult(None, diags, by_name, costs)
    compiled = [compile_rule(c) for c in checked]
    policy_set = PolicySet(
        filters=tuple(r for r in compiled if isinstance(r, FilterRule)),
        scores=tuple(r for r in compiled if isinstance(r, ScoreRule)),
        # Base names, not paths: the same policies read by lint in CI, by simulate from the wheel and from
        # the ConfigMap in the cluster must carry the same digest.
        digest=digest_of([(PurePath(s.name).name, s.text) for s in ordered]),
    )
    return LoadResult(policy_set, diags, by_name, costs)
