"""Rule-level passes: clause structure, weights, names and types of every clause, unused lets, cost.

Each pass appends diagnostics and never raises; a rule with errors is still walked to the end so a
file's problems are all reported in one run.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from policyscheduler.checker.env import Schema
from policyscheduler.checker.expressions import Binding, ExprChecker, Info, Scope, constant_leaves
from policyscheduler.checker.types import BOOL, ERROR, INT, STRING, TIMESTAMP, ListT, Type
from policyscheduler.diagnostics import Diagnostic, Span, error, warning
from policyscheduler.syntax import ast

COST_LIMIT = 10_000_000
"""Largest static cost bound (expression nodes evaluated per node, loops multiplied out) of a rule."""

NORMALIZE_MODES = ("none", "scale", "reverse", "minmax", "spread")

_FILTER_CLAUSES = (ast.Reason, ast.Applies, ast.RejectPod, ast.Let, ast.Require, ast.Reject, ast.RejectEach)
_SCORE_CLAUSES = (ast.Applies, ast.IgnoreWhen, ast.Let, ast.Value)
_PREEMPT_CLAUSES = (ast.Reason, ast.Applies, ast.Let, ast.VictimWhen)
_ONCE = (ast.Reason, ast.Applies, ast.IgnoreWhen, ast.Value, ast.VictimWhen)
_ALLOWED: dict[type, tuple[type, ...]] = {
    ast.FilterRule: _FILTER_CLAUSES, ast.ScoreRule: _SCORE_CLAUSES, ast.PreemptRule: _PREEMPT_CLAUSES,
}

NOW = "now"
"""The decision time, a ``timestamp`` every rule may read (the cluster context's ``now``, see objects/cluster.py)."""

TARGET = "target"
"""The root a preempt rule's ``victim`` clause reads: the candidate victim (a Pod, like ``pod``)."""


def schema_for(rule: ast.Rule, schema: Schema) -> Schema:
    """The schema ``rule`` is checked against: a preempt rule also sees ``target`` (the candidate victim,
    of the same type as ``pod``); filters and scores do not."""
    if not isinstance(rule, ast.PreemptRule) or "pod" not in schema.roots:
        return schema
    return dataclasses.replace(schema, roots={**schema.roots, TARGET: schema.roots["pod"]})


def _home(clause: ast.Clause) -> str:
    """The rule kinds a clause belongs in, for ``clause-not-allowed``."""
    kinds = [k.kind for k, allowed in _ALLOWED.items() if isinstance(clause, allowed)]  # type: ignore[attr-defined]
    return " or ".join(f"a {k} rule" for k in kinds)


@dataclasses.dataclass
class CheckedRule:
    """A rule that passed the checker, with what the compiler needs to know about it."""

    rule: ast.Rule
    info: Info
    cost: int
    weight: int = 0
    normalize: str = "none"
    reason: str | None = None
    costliest: tuple[int, Span] | None = None
    """The loop that dominates the cost bound: what it adds and where it is (None without loops)."""


def check_duplicates(modules: Sequence[ast.Module]) -> tuple[list[Diagnostic], set[int]]:
    """duplicate-rule across all files, per kind; returns the diagnostics and ids of the duplicates."""
    seen: dict[tuple[str, str], ast.Rule] = {}
    diags: list[Diagnostic] = []
    dups: set[int] = set()
    for m in modules:
        for r in m.rules:
            key = (r.kind, r.name)
            first = seen.get(key)
            if first is None:
                seen[key] = r
                continue
            dups.add(id(r))
            diags.append(error("duplicate-rule", f"{r.kind} '{r.name}' is already defined at {first.name_span}",
                               r.name_span))
    return diags, dups


def check_structure(rule: ast.Rule, diags: list[Diagnostic]) -> None:
    """Which clauses a rule kind has, how often, and where."""
    allowed = _ALLOWED[type(rule)]
    seen: dict[type, ast.Clause] = {}
    for i, c in enumerate(rule.clauses):
        kw = ast.CLAUSE_KEYWORDS[type(c)]
        if not isinstance(c, allowed):
            diags.append(error("clause-not-allowed", f"'{kw}' belongs in {_home(c)}, not in a {rule.kind} rule",
                               c.span))
            continue
        if isinstance(c, _ONCE) and type(c) in seen:
            diags.append(error("duplicate-clause", f"'{kw}' may appear only once in a rule "
                               f"(first at line {seen[type(c)].span.line})", c.span))
        seen.setdefault(type(c), c)
        if isinstance(c, ast.Applies) and any(not isinstance(p, ast.Reason) for p in rule.clauses[:i]):
            diags.append(error("clause-order", "'applies when' must come before the other clauses of the rule "
                               "(only 'reason' may precede it)", c.span))
        if isinstance(c, ast.RejectPod) and any(
                not isinstance(p, (ast.Reason, ast.Applies, ast.RejectPod)) for p in rule.clauses[:i]):
            diags.append(error("clause-order", "'reject pod' must come before the node-level clauses of the rule "
                               "(after 'reason' and 'applies when')", c.span))
        if isinstance(c, (ast.Value, ast.VictimWhen)) and i != len(rule.clauses) - 1:
            diags.append(error("clause-order", f"'{kw}' must be the last clause of the rule", c.span))
    if isinstance(rule, ast.FilterRule):
        checks = [c for c in rule.clauses if isinstance(c, (ast.Require, ast.Reject, ast.RejectEach, ast.RejectPod))]
        if not checks:
            diags.append(error("missing-check", f"filter '{rule.name}' has no require or reject clause",
                               rule.name_span))
        if ast.Reason not in seen:
            for c in checks:
                if isinstance(c, ast.Require) and c.else_ is None:
                    diags.append(error("missing-reason", "this 'require' has no 'else' reason and the filter has "
                                       "no 'reason' clause", c.span))
    elif isinstance(rule, ast.PreemptRule):
        if ast.VictimWhen not in seen:
            diags.append(error("missing-victim", f"preempt '{rule.name}' has no 'victim' clause (which pods the "
                               "preemptor may evict)", rule.name_span))
    elif ast.Value not in seen:
        diags.append(error("missing-value", f"score '{rule.name}' has no 'value' clause", rule.name_span))


def check_header(rule: ast.Rule, checked: CheckedRule, diags: list[Diagnostic]) -> None:
    """Weight 1..100 (integer literal) and a known normalisation mode."""
    if not isinstance(rule, ast.ScoreRule):
        return
    if re.fullmatch(r"\d+", rule.weight_text) and 1 <= int(rule.weight_text) <= 100:
        checked.weight = int(rule.weight_text)
    else:
        hint = ""
        if re.fullmatch(r"-?0+(\.0*)?", rule.weight_text):
            hint = f"; to turn the rule off write 'disable score {rule.name}'"
        diags.append(error("weight-range", f"weight must be an integer from 1 to 100, got {rule.weight_text}{hint}",
                           rule.weight_span))
    if rule.normalize is not None:
        if rule.normalize in NORMALIZE_MODES:
            checked.normalize = rule.normalize
        else:
            assert rule.normalize_span is not None
            diags.append(error("unknown-normalize", f"unknown normalize mode '{rule.normalize}'; use one of "
                               + ", ".join(NORMALIZE_MODES), rule.normalize_span))


def _check_constant_value(value: ast.Expr, mode: str, diags: list[Diagnostic]) -> None:
    """``value 250`` with ``normalize none`` fails on every node: say so at lint time (each constant
    result of the value, through if/else branches, must be one the normalisation takes)."""
    leaves = constant_leaves(value)
    whole = len(leaves) == 1  # the value itself is a constant: every node fails (an error); else one branch is
    for const, e in leaves:
        if const is None:
            continue
        report = error if whole else warning
        what = "this value is always" if whole else "this branch of the value is"
        where = "on every node" if whole else "on every node that takes this branch"
        if mode == "none" and not 0 <= const <= 100:
            diags.append(report("score-range", f"{what} {const}, outside 0..100, which 'normalize none' requires, "
                                f"so the rule fails {where} (0 points there); scale it into 0..100 or use "
                                "'normalize scale' (the best node gets 100)", e.span))
        elif mode in ("scale", "reverse", "spread") and const < 0:
            diags.append(report("score-range", f"{what} {const}, and 'normalize {mode}' needs raw scores >= 0, so "
                                f"the rule fails {where}; use 'normalize minmax' for negative values", e.span))


def check_clauses(rule: ast.Rule, schema: Schema, checked: CheckedRule, diags: list[Diagnostic]) -> None:
    """Types and names of every clause, in order (a let is visible after its clause), then unused lets."""
    schema = schema_for(rule, schema)
    ec = ExprChecker(schema, checked.info, diags)
    roots = {name: Binding(t, None, "root") for name, t in schema.roots.items()}
    if "cluster" in roots and NOW not in roots:
        roots[NOW] = Binding(TIMESTAMP, None, "root")
    # one scope for all the rule's lets, filled in clause order: a chain of one scope per let made every
    # lookup of an unbound name (each let's shadowing check) walk all earlier lets -- quadratic lint time
    # on a rule with thousands of lets (bench/lint_fuzz.py, shape 'lets')
    scope = Scope({}, Scope(roots))
    lets: list[tuple[ast.Let, Binding]] = []
    for c in rule.clauses:
        if isinstance(c, ast.Reason):
            t = ec.check(c.text, scope, 1)
            if t == STRING:
                value = checked.info.literals.get(id(c.text))
                checked.reason = value if isinstance(value, str) else None
        elif isinstance(c, ast.Applies):
            ec.pod_level = "'applies when'"
            ec.expect(c.cond, scope, BOOL, "'applies when'", 1)
            ec.pod_level = None
        elif isinstance(c, ast.RejectPod):
            ec.pod_level = "'reject pod'"
            ec.expect(c.reason, scope, STRING, "a 'reject pod' reason", 1)
            ec.expect(c.when, scope, BOOL, "a 'reject pod ... when' condition", 1)
            ec.pod_level = None
        elif isinstance(c, ast.Let):
            t = ec.check(c.value, scope, 1)
            if scope.lookup(c.name) is not None:
                # reported, then bound anyway: later uses see the let's type, so no follow-on errors
                diags.append(error("shadowed-name", f"'{c.name}' is already bound; choose another name", c.name_span))
            b = Binding(t, c.name_span, "let", size=checked.info.sizes.get(id(c.value)) if t == STRING else None,
                        constant=checked.info.constants.get(id(c.value)) if t == INT else None)
            lets.append((c, b))
            scope.names[c.name] = b
        elif isinstance(c, ast.Require):
            ec.expect(c.cond, scope, BOOL, "a 'require' condition", 1)
            if c.else_ is not None:
                ec.expect(c.else_, scope, STRING, "an 'else' reason", 1)
        elif isinstance(c, ast.Reject):
            ec.expect(c.reason, scope, STRING, "a 'reject' reason", 1)
            ec.expect(c.when, scope, BOOL, "a 'reject ... when' condition", 1)
        elif isinstance(c, ast.RejectEach):
            want: Type = ListT(STRING)
            ec.expect(c.reasons, scope, want, "'reject each'", 1)
        elif isinstance(c, ast.IgnoreWhen):
            ec.expect(c.cond, scope, BOOL, "'ignore node when'", 1)
        elif isinstance(c, ast.VictimWhen):
            ec.expect(c.cond, scope, BOOL, "'victim'", 1)
        elif isinstance(c, ast.Value):
            t = ec.check(c.value, scope, 1)
            if t not in (INT, ERROR):
                diags.append(error("type-mismatch", f"'value' must be an int, got {t}"
                                   + ("; use trunc() or round()" if str(t) in ("float", "quantity") else ""),
                                   c.value.span))
            elif t == INT:
                _check_constant_value(c.value, checked.normalize, diags)
    for let, b in lets:
        if not b.used:
            diags.append(warning("unused-binding", f"'{let.name}' is bound but never used", let.name_span))
    checked.cost = ec.cost
    loop = ec.costliest_loop()
    checked.costliest = (loop[0], loop[1].span) if loop is not None else None
    if ec.cost > COST_LIMIT:
        diags.append(error("cost-limit", f"{rule.kind} '{rule.name}' may evaluate up to {ec.cost:,} expression "
                           f"nodes per node (limit {COST_LIMIT:,}){cost_share(checked)}; loop over fewer or "
                           "smaller collections", cost_span(checked)))


def cost_share(checked: CheckedRule) -> str:
    """``; 1,065,000 of them in this loop`` when a loop dominates the bound (the diagnostic is at it)."""
    if checked.costliest is None or checked.costliest[0] * 2 < checked.cost:
        return ""
    return f"; {checked.costliest[0]:,} of them in this loop"


def cost_span(checked: CheckedRule) -> Span:
    """Where a cost diagnostic points: the loop that holds most of the bound, else the rule's name."""
    if checked.costliest is None or checked.costliest[0] * 2 < checked.cost:
        return checked.rule.name_span
    return checked.costliest[1]
