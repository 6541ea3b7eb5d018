"""Lint-only checks over checked rules: findings that never stop a set from loading (all warnings).

``policyscheduler lint`` runs them after the loader, on every rule that passed the checker (also when
other rules of the set have errors, so the warnings come with the errors); the scheduler does not. Each
has a stable code in :data:`policyscheduler.diagnostics.CODES` with a rationale (``lint --explain CODE``).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import Any

from policyscheduler.checker.analysis import clause_expressions, node_dependent
from policyscheduler.checker.passes import CheckedRule, cost_share, cost_span
from policyscheduler.diagnostics import Diagnostic, warning
from policyscheduler.syntax import ast
from policyscheduler.syntax.visitor import children, walk

__all__ = ["COST_BUDGET", "WELL_KNOWN_LABELS", "TAINT_EFFECTS", "lint_rules"]

COST_BUDGET = 100_000
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
WELL_KNOWN_LABELS = (
    "kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch", "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region", "node.kubernetes.io/instance-type", "node-role.kubernetes.io/control-plane",
    "node.kubernetes.io/unschedulable", "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable",
    "node.kubernetes.io/memory-pressure", "node.kubernetes.io/disk-pressure", "node.kubernetes.io/pid-pressure",
    "node.kubernetes.io/network-unavailable", "app.kubernetes.io/name", "app.kubernetes.io/instance",
    "app.kubernetes.io/component", "app.kubernetes.io/part-of", "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region", "beta.kubernetes.io/instance-type", "pod-template-hash",
)


# ------------------------------------------------------------------------------ constants, intervals

_NO_VALUE = object()


def _const(e: ast.Expr) -> Any:
    """The value of ``e`` when it reads nothing (literals and operators only), else ``_NO_VALUE``."""
    if isinstance(e, (ast.IntLit, ast.FloatLit, ast.BoolLit)):
        return e.value
    if isinstance(e, ast.StringLit):
        return e.raw
    if isinstance(e, ast.Unary):
        v = _const(e.operand)
        if v is _NO_VALUE:
            return _NO_VALUE
        if e.op == "not" and isinstance(v, bool):
            return not v
        if e.op == "-" and isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v
        return _NO_VALUE
    if isinstance(e, ast.Binary):
        a, b = _const(e.left), _const(e.right)
        if e.op == "and" and (a is False or b is False):
            return False
        if e.op == "or" and (a is True or b is True):
            return True
        if a is _NO_VALUE or b is _NO_VALUE:
            return _NO_VALUE
        try:
            ops = {"and": lambda: a and b, "or": lambda: a or b, "==": lambda: a == b, "!=": lambda: a != b,
                   "<": lambda: a < b, "<=": lambda: a <= b, ">": lambda: a > b, ">=": lambda: a >= b,
                   "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b}
            return ops[e.op]() if e.op in ops else _NO_VALUE
        except TypeError:
            return _NO_VALUE
    return _NO_VALUE


Interval = tuple[float, float]
_INF = float("inf")


def _interval(e: ast.Expr, lets: dict[str, Interval]) -> Interval:
    """A sound over-approximation of an int expression's range (``(-inf, inf)`` when unknown)."""
    unknown = (-_INF, _INF)
    if isinstance(e, ast.IntLit):
        return (e.value, e.value)
    if isinstance(e, ast.Name):
        return lets.get(e.id, unknown)
    if isinstance(e, ast.IfExpr):
        a, b = _interval(e.then, lets), _interval(e.else_, lets)
        return (min(a[0], b[0]), max(a[1], b[1]))
    if isinstance(e, ast.Unary) and e.op == "-":
        lo, hi = _interval(e.operand, lets)
        return (-hi, -lo)
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name):
        name = e.func.id
        if name in ("min", "max") and e.args:
            parts = [_interval(a, lets) for a in e.args]
            if name == "min":
                return (min(p[0] for p in parts), min(p[1] for p in parts))
            return (max(p[0] for p in parts), max(p[1] for p in parts))
        if name == "len":
            return (0, _INF)
        if name in ("trunc", "round", "int") and len(e.args) == 1:
            return _interval(e.args[0], lets)
    if isinstance(e, ast.Aggregate) and e.kind == "count":
        return (0, _INF)
    if isinstance(e, ast.Binary) and e.op in ("+", "-", "*"):
        left: Interval = _interval(e.left, lets)
        right: Interval = _interval(e.right, lets)
        lo1, hi1 = left
        lo2, hi2 = right
        if e.op == "+":
            return (lo1 + lo2, hi1 + hi2)
        if e.op == "-":
            return (lo1 - hi2, hi1 - lo2)
        if unknown in (left, right):
            return unknown
        prods = [x * y for x in (lo1, hi1) for y in (lo2, hi2) if not ({x, y} >= {0} and _INF in (abs(x), abs(y)))]
        return (min(prods), max(prods)) if prods else unknown
    return unknown


# ------------------------------------------------------------------------------- divisors that may be 0


def _zero_source(e: ast.Expr, lets: dict[str, str]) -> str | None:
    """Why ``e`` (an int or number used as a divisor) may be 0 on some node, or None when it cannot be
    shown: the usual zeros of a policy are a conversion with ``default 0`` (a missing or malformed label),
    ``len`` of something empty and a ``count`` that matches nothing, also through a let bound to them
    (``lets``: let name -> why its value may be 0). ``int(x, default 1)``, ``len(x) + 1`` or
    ``max(len(x), 1)`` give no reason: a divisor lint cannot place is not reported."""
    if isinstance(e, ast.Name):
        return lets.get(e.id)
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name):
        name = e.func.id
        if name in ("int", "float", "quantity") and e.default is not None and _const(e.default) == 0:
            return "when the value is missing or does not parse (its default is 0)"
        if name == "len" and len(e.args) == 1:
            return "when it is empty"
        if name in ("trunc", "round", "abs") and len(e.args) == 1:
            return _zero_source(e.args[0], lets)
        reasons = [_zero_source(a, lets) for a in e.args]
        if name == "min" and any(reasons):
            return next(r for r in reasons if r)
        if name == "max" and reasons and all(reasons):
            return reasons[0]
        return None
    if isinstance(e, ast.Aggregate) and e.kind == "count":
        return "when nothing matches"
    if isinstance(e, ast.Unary) and e.op == "-":
        return _zero_source(e.operand, lets)
    if isinstance(e, ast.IfExpr):
        return _zero_source(e.then, lets) or _zero_source(e.else_, lets)
    if isinstance(e, ast.Binary) and e.op == "*":
        return _zero_source(e.left, lets) or _zero_source(e.right, lets)
    if isinstance(e, ast.Binary) and e.op == "+":
        left, right = _zero_source(e.left, lets), _zero_source(e.right, lets)
        if left and right and _interval(e.left, {})[0] >= 0 and _interval(e.right, {})[0] >= 0:
            return left  # len(a) + len(b): 0 when both are
    return None


def _is_zero(e: ast.Expr) -> bool:
    return isinstance(e, (ast.IntLit, ast.FloatLit)) and e.value == 0


def _is_one(e: ast.Expr) -> bool:
    return isinstance(e, ast.IntLit) and e.value == 1


def _facts(cond: ast.Expr) -> tuple[frozenset[str], frozenset[str]]:
    """The expressions (as source text) that are non-zero when ``cond`` holds, and when it does not:
    ``d == 0`` -> (), (d); ``d > 0``, ``d != 0``, ``d >= 1`` -> (d), (); through ``and``/``or``/``not``."""
    from policyscheduler.syntax.printer import to_source

    none: frozenset[str] = frozenset()
    if isinstance(cond, ast.Unary) and cond.op == "not":
        t, f = _facts(cond.operand)
        return f, t
    if not isinstance(cond, ast.Binary):
        return none, none
    op, a, b = cond.op, cond.left, cond.right
    if op == "and":
        return _facts(a)[0] | _facts(b)[0], none
    if op == "or":
        return none, _facts(a)[1] | _facts(b)[1]
    flipped = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
    if op in flipped and (_is_zero(a) or _is_one(a)) and not (_is_zero(b) or _is_one(b)):
        op, a, b = flipped[op], b, a  # 0 < d reads as d > 0
    if op not in flipped:
        return none, none
    x = frozenset({to_source(a)})
    if _is_zero(b):
        if op in ("!=", ">", "<"):
            return x, none
        if op in ("==", "<="):  # d == 0 (or d <= 0) is false: d is not 0
            return none, x
    if _is_one(b) and op == ">=":
        return x, none
    if _is_one(b) and op == "<":
        return none, x
    return none, none


def _divisions(e: ast.Expr, safe: frozenset[str], lets: dict[str, str], let_text: dict[str, str],
               out: list[Diagnostic]) -> None:
    """possible-division-by-zero for each ``/`` and ``%`` under ``e`` whose divisor may be 0 and is not
    guarded (``safe``: the expressions known non-zero here, from ``if``, ``and``, ``or`` and ``where``)."""
    from policyscheduler.syntax.printer import to_source

    if isinstance(e, ast.IfExpr):
        t, f = _facts(e.cond)
        _divisions(e.cond, safe, lets, let_text, out)
        _divisions(e.then, safe | t, lets, let_text, out)
        _divisions(e.else_, safe | f, lets, let_text, out)
        return
    if isinstance(e, ast.Binary) and e.op in ("and", "or"):
        t, f = _facts(e.left)
        _divisions(e.left, safe, lets, let_text, out)
        _divisions(e.right, safe | (t if e.op == "and" else f), lets, let_text, out)
        return
    if isinstance(e, (ast.Quantifier, ast.Comprehension, ast.Aggregate)) and e.loop.where is not None:
        _divisions(e.loop.iterable, safe, lets, let_text, out)
        inner = safe | _facts(e.loop.where)[0]
        for c in children(e):
            if c is not e.loop.iterable:
                _divisions(c, inner, lets, let_text, out)
        return
    if isinstance(e, ast.Binary) and e.op in ("/", "%"):
        d = e.right
        why = _zero_source(d, lets)
        text = to_source(d)
        names = {text, let_text.get(d.id, "") if isinstance(d, ast.Name) else ""}
        if why is not None and not (names & safe):
            if isinstance(d, ast.Name):
                shown, guard = f"{text} ({let_text.get(d.id, '')})", f"if {text} == 0 then ... else ..."
            else:
                shown, guard = text, f"let d = {text}, then: if d == 0 then ... else ... {e.op} d"
            default = "; or give the conversion a non-zero default" if "default is 0" in why else ""
            out.append(warning("possible-division-by-zero", f"'{e.op}' by {shown}, which is 0 {why}: the rule "
                               f"fails on those nodes; guard it ({guard}){default}", e.op_span or e.span))
    for c in children(e):
        _divisions(c, safe, lets, let_text, out)


def _rule_divisions(rule: ast.Rule, out: list[Diagnostic]) -> None:
    """possible-division-by-zero over a rule's clauses in order: a let's zero is known to the clauses
    after it, and ``applies when`` (true) and ``ignore node when`` (false) guard every later clause."""
    from policyscheduler.syntax.printer import to_source

    lets: dict[str, str] = {}
    let_text: dict[str, str] = {}
    safe: frozenset[str] = frozenset()
    for c in rule.clauses:
        for top in clause_expressions(c):
            _divisions(top, safe, lets, let_text, out)
        if isinstance(c, ast.Applies):
            safe |= _facts(c.cond)[0]
        elif isinstance(c, ast.IgnoreWhen):
            safe |= _facts(c.cond)[1]
        elif isinstance(c, ast.Let):
            let_text[c.name] = to_source(c.value)
            why = _zero_source(c.value, lets)
            if why is not None:
                lets[c.name] = why


# ---------------------------------------------------------------------------------------- the checks


def _names(e: ast.Expr) -> set[str]:
    return {x.id for x in walk(e) if isinstance(x, ast.Name)}


def _checks(rule: ast.Rule) -> list[ast.Clause]:
    return [c for c in rule.clauses if isinstance(c, (ast.Require, ast.Reject, ast.RejectEach, ast.RejectPod))]


def _strip(obj: Any) -> Any:
    from policyscheduler.syntax.format import strip_spans

    return strip_spans(obj)


def _never_fails(cond: ast.Expr) -> bool:
    if _const(cond) is True:
        return True
    if isinstance(cond, ast.Binary):
        if cond.op in (">=",) and isinstance(cond.right, ast.IntLit) and cond.right.value == 0 and (
                (isinstance(cond.left, ast.Call) and isinstance(cond.left.func, ast.Name) and cond.left.func.id == "len")
                or (isinstance(cond.left, ast.Aggregate) and cond.left.kind == "count")):
            return True
        if cond.op in ("==", "<=", ">=") and not any(isinstance(x, ast.Call) for x in walk(cond)) and \
                _strip(cond.left) == _strip(cond.right):
            return True
    return False


def _effect_strings(x: ast.Expr) -> Iterable[ast.StringLit]:
    """The string literals that ``x`` itself compares with a ``.effect`` field, or the effect argument of
    ``taint(k, v, effect)`` when ``x`` is that call (its sub-expressions are looked at by the caller's walk)."""
    if isinstance(x, ast.Binary):
        if x.op in ("==", "!=", "in", "not in"):
            sides = (x.left, x.right)
            if any(isinstance(s, ast.Attr) and s.name == "effect" for s in sides):
                for s in sides:
                    if isinstance(s, ast.StringLit):
                        yield s
                    elif isinstance(s, ast.ListLit):
                        yield from (i for i in s.items if isinstance(i, ast.StringLit))
    elif (isinstance(x, ast.Call) and isinstance(x.func, ast.Name) and x.func.id == "taint"
          and len(x.args) == 3 and isinstance(x.args[2], ast.StringLit)):
        yield x.args[2]


_Leaf = tuple[type, Any]


def _literal_checks(top: ast.Expr) -> tuple[list[ast.StringLit], list[ast.StringLit], list[_Leaf], bool]:
    """One walk of ``top`` for the string checks and the duplicate check: the effect strings
    (unknown-taint-effect), the literals that could be label keys (label-key-typo), the leaves (class
    and text or value, in walk order) that :class:`_Bodies` uses to tell rule bodies apart cheaply, and
    whether ``top`` divides (only then does possible-division-by-zero walk the rule)."""
    effects: list[ast.StringLit] = []
    keys: list[ast.StringLit] = []
    leaves: list[_Leaf] = []
    divides = False
    for x in walk(top):
        if isinstance(x, ast.StringLit):
            leaves.append((ast.StringLit, x.raw))
            if "/" in x.raw or "." in x.raw:
                keys.append(x)
        elif isinstance(x, (ast.Binary, ast.Call)):
            effects.extend(_effect_strings(x))
            divides = divides or (isinstance(x, ast.Binary) and x.op in ("/", "%"))
        elif isinstance(x, ast.Name):
            leaves.append((ast.Name, x.id))
        elif isinstance(x, ast.Attr):
            leaves.append((ast.Attr, x.name))
        elif isinstance(x, (ast.IntLit, ast.FloatLit, ast.BoolLit)):
            leaves.append((type(x), x.value))
        elif isinstance(x, ast.QuantityLit):
            leaves.append((ast.QuantityLit, x.text))
    return effects, keys, leaves, divides


class _Bodies:
    """duplicate-rule-body: the first rule seen with the same clauses (positions aside), kind and
    normalisation. Comparing span-free copies of every rule (:func:`_strip`) was a third of lint's time on
    a large file, so rules are first grouped by a key that equal bodies always share (kind,
    normalisation, clause classes, and the leaves of the clause expressions in order); span-free copies
    are made and compared only within a group, which for distinct rules is a group of one."""

    def __init__(self) -> None:
        self._groups: dict[tuple[Any, ...], list[list[Any]]] = {}

    def first_with_body(self, rule: ast.Rule, leaves: tuple[_Leaf, ...]) -> ast.Rule | None:
        """The earlier rule with the same body as ``rule``, or None (``rule`` is then remembered)."""
        normalize = getattr(rule, "normalize", None)
        key = (rule.kind, normalize, tuple(type(c) for c in rule.clauses), leaves)
        group = self._groups.setdefault(key, [])
        if group:
            mine = _strip(rule.clauses)
            for entry in group:
                if entry[1] is None:
                    entry[1] = _strip(entry[0].clauses)
                if entry[1] == mine:
                    first: ast.Rule = entry[0]
                    return first
            group.append([rule, mine])
        else:
            group.append([rule, None])
        return None


def lint_rules(rules: Sequence[CheckedRule], *, cost_budget: int = COST_BUDGET) -> list[Diagnostic]:
    """The lint-only findings over ``rules`` (the rules of the files being linted)."""
    out: list[Diagnostic] = []
    bodies = _Bodies()
    for checked in rules:
        r = checked.rule
        kind = r.kind
        literals = [_literal_checks(top) for c in r.clauses for top in clause_expressions(c)]
        first = bodies.first_with_body(r, tuple(leaf for lits in literals for leaf in lits[2]))
        if first is not None:
            out.append(warning("duplicate-rule-body", f"{kind} '{r.name}' has the same clauses as {kind} "
                               f"'{first.name}' ({first.name_span}); remove one or make them differ", r.name_span))
        applies = [c for c in r.clauses if isinstance(c, ast.Applies)]
        if applies and _const(applies[0].cond) is False:
            out.append(warning("unreachable", f"'applies when' is always false: {kind} '{r.name}' never runs",
                               applies[0].span))
        for i, c in enumerate(r.clauses):
            if isinstance(c, ast.Require) and _const(c.cond) is False and i + 1 < len(r.clauses):
                out.append(warning("unreachable", "this clause never runs: the 'require' before it always fails",
                                   r.clauses[i + 1].span))
                break
        if isinstance(r, ast.FilterRule):
            checks = _checks(r)
            conds: list[ast.Expr] = []
            for c in checks:
                if isinstance(c, ast.Require):
                    conds.append(c.cond)
                elif isinstance(c, (ast.Reject, ast.RejectPod)):
                    conds.append(c.when)
                elif isinstance(c, ast.RejectEach):
                    conds.append(c.reasons)
            if checks and all(_const(x) is not _NO_VALUE for x in conds):
                out.append(warning("constant-filter", f"filter '{r.name}' reads neither the pod nor the node: it "
                                   "gives every node the same verdict", r.name_span))
            for c in checks:
                if isinstance(c, ast.Require) and _never_fails(c.cond):
                    out.append(warning("require-never-fails", "this 'require' always holds, so it rejects nothing",
                                       c.span))
            if not applies and checks and not any(isinstance(c, ast.RejectPod) for c in checks):
                dependent = node_dependent(r)
                node_level = [e for c in r.clauses if not isinstance(c, ast.Reason) for e in clause_expressions(c)]
                if node_level and not any(id(e) in dependent for e in node_level) and not all(
                        _const(x) is not _NO_VALUE for x in conds):
                    out.append(warning("pod-only-filter", f"filter '{r.name}' never reads the node, so every node "
                                       "gets the same verdict; write 'reject pod REASON when CONDITION' (decided "
                                       "once per pod)", r.name_span))
        if isinstance(r, ast.PreemptRule):
            for c in r.clauses:
                if isinstance(c, ast.VictimWhen) and _const(c.cond) is True:
                    out.append(warning("victim-always-true", f"the 'victim' clause always holds: preempt '{r.name}' "
                                       "protects no pod (write 'victim false' to protect every pod from the "
                                       "preemptors it applies to)", c.span))
        if isinstance(r, ast.ScoreRule) and checked.normalize == "none":
            lets: dict[str, tuple[float, float]] = {}
            for c in r.clauses:
                if isinstance(c, ast.Let):
                    lets[c.name] = _interval(c.value, lets)
                elif isinstance(c, ast.Value):
                    lo, hi = _interval(c.value, lets)
                    if (lo, hi) != (-_INF, _INF) and (lo > 100 or hi < 0):
                        continue  # a constant out of range is the checker's score-range error
                    if not (lo >= 0 and hi <= 100):
                        shown = f"{lo:g}..{hi:g}".replace("inf", "∞")
                        out.append(warning("score-range-unproven", f"with 'normalize none' the value must lie in "
                                           f"0..100; lint can only show {shown}; clamp it (min(100, max(0, ...))) "
                                           "or use 'normalize scale'", c.value.span))
        if any(lits[3] for lits in literals):
            _rule_divisions(r, out)
        if checked.cost > cost_budget:
            out.append(warning("cost-budget", f"{kind} '{r.name}' may evaluate up to {checked.cost:,} expression "
                               f"nodes per node, above the lint budget of {cost_budget:,}{cost_share(checked)}",
                               cost_span(checked)))
        for effects, keys, _leaves, _divides in literals:  # each clause expression, in order
            for s in effects:
                if s.raw not in TAINT_EFFECTS and s.raw != "":
                    close = difflib.get_close_matches(s.raw, TAINT_EFFECTS, n=1, cutoff=0.6)
                    hint = f"; did you mean '{close[0]}'?" if close else ""
                    out.append(warning("unknown-taint-effect", f"'{s.raw}' is not a taint effect (NoSchedule, "
                                       f"PreferNoSchedule, NoExecute){hint}", s.span))
            for x in keys:
                if x.raw not in WELL_KNOWN_LABELS:
                    close = difflib.get_close_matches(x.raw, WELL_KNOWN_LABELS, n=1, cutoff=0.88)
                    if close:
                        out.append(warning("label-key-typo", f"'{x.raw}' looks like a misspelling of the "
                                           f"well-known label key '{close[0]}'", x.span))
    return out


__all__ += ["children"]
