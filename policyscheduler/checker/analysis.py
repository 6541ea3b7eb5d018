"""Analyses over checked rules: what depends on the node, and which object fields a rule reads.

* **Node dependence** -- an expression depends on the node when it mentions ``node`` or a name (a
  ``let`` or a loop variable) bound to something that does. Everything else depends only on ``pod``,
  ``cluster`` and literals, so a backend computes it once per pod instead of once per node.
* **Reads** -- the schema members a rule touches, as ``"Record.member"`` strings (``"Node.labels"``,
  ``"Taint.effect"``, ``"Pod.tolerates()"``, ``"Cluster.spread_count()"``). The live scheduler uses them
  the way kube-scheduler uses a plugin's EventsToRegister: an unschedulable pod is retried only after
  an event that can change what one of its rules reads.
* **Pods polarity** (filters) -- how the rule's rejection moves as the pods on the node grow
  (:mod:`policyscheduler.checker.polarity`): the requeue's direction, so a pod a rule like
  NodeResourcesFit rejected is not retried when a pod is added to that node, only when one leaves.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from policyscheduler.checker.expressions import Info
from policyscheduler.checker.passes import CheckedRule
from policyscheduler.checker.polarity import UNKNOWN, pods_polarity
from policyscheduler.checker.types import RecordT
from policyscheduler.syntax import ast
from policyscheduler.syntax.visitor import children, walk

__all__ = ["RuleAnalysis", "analyse", "clause_expressions", "node_dependent"]


@dataclasses.dataclass(frozen=True)
class RuleAnalysis:
    """What :func:`analyse` found about one rule."""

    node_dependent: frozenset[int]
    """``id()`` of every expression of the rule whose value depends on the node."""
    reads: frozenset[str]
    """Schema members read, as ``"Record.field"`` or ``"Record.method()"``; builtins as ``"builtin()"``."""
    pods_polarity: str = UNKNOWN
    """How a filter's rejection moves as the node's pod aggregates grow (``"up"``: only more, ``"down"``,
    ``"const"``, ``"unknown"``; :func:`~policyscheduler.checker.polarity.pods_polarity`)."""

    def depends_on_node(self, e: ast.Expr) -> bool:
        """True when ``e`` (an expression of this rule) must be evaluated per node."""
        return id(e) in self.node_dependent


def clause_expressions(clause: ast.Clause) -> tuple[ast.Expr, ...]:
    """The expressions of one clause, in evaluation order."""
    if isinstance(clause, ast.Reason):
        return (clause.text,)
    if isinstance(clause, (ast.Applies, ast.IgnoreWhen, ast.VictimWhen)):
        return (clause.cond,)
    if isinstance(clause, (ast.RejectPod, ast.Reject)):
        return (clause.when, clause.reason)
    if isinstance(clause, ast.Let):
        return (clause.value,)
    if isinstance(clause, ast.Require):
        return (clause.cond,) if clause.else_ is None else (clause.cond, clause.else_)
    if isinstance(clause, ast.RejectEach):
        return (clause.reasons,)
    if isinstance(clause, ast.Value):
        return (clause.value,)
    raise TypeError(f"not a clause: {type(clause).__name__}")


class _NodeDependence:
    """Bottom-up marking with the names bound to node-dependent values in scope."""

    def __init__(self) -> None:
        self.marked: set[int] = set()

    def expr(self, e: ast.Expr, dependent_names: frozenset[str]) -> bool:
        if isinstance(e, ast.Name):
            dep = e.id == "node" or e.id in dependent_names
        elif isinstance(e, (ast.Quantifier, ast.Comprehension, ast.Aggregate)):
            loop = e.loop
            iter_dep = self.expr(loop.iterable, dependent_names)
            names = frozenset(b.name for b in loop.binders)
            inner = dependent_names | names if iter_dep else dependent_names - names
            dep = iter_dep
            if loop.where is not None:
                dep = self.expr(loop.where, inner) or dep
            body: ast.Expr | None = e.body if isinstance(e, ast.Quantifier) else e.value
            for b in ([] if body is None else [body]):
                dep = self.expr(b, inner) or dep
            if isinstance(e, ast.Aggregate) and e.default is not None:
                dep = self.expr(e.default, dependent_names) or dep
        else:
            dep = False
            for child in children(e):
                dep = self.expr(child, dependent_names) or dep
        if dep:
            self.marked.add(id(e))
        return dep


def _reads(exprs: Iterable[ast.Expr], info: Info) -> set[str]:
    found: set[str] = set()
    for top in exprs:
        for e in walk(top):
            if isinstance(e, ast.Call):
                kind, name = info.calls.get(id(e), ("", ""))
                if kind == "method" and isinstance(e.func, ast.Attr):
                    owner = info.types.get(id(e.func.obj))
                    if isinstance(owner, RecordT):
                        found.add(f"{owner.name}.{name}()")
                elif kind == "builtin":
                    found.add(f"{name}()")
            elif isinstance(e, ast.Attr):
                owner = info.types.get(id(e.obj))
                if isinstance(owner, RecordT) and id(e) in info.types:
                    found.add(f"{owner.name}.{e.name}")
    return found


def node_dependent(rule: ast.Rule) -> set[int]:
    """``id()`` of every expression of ``rule`` whose value depends on the node (lets are visible to the
    clauses after them). Lint needs only this, not the reads (a second walk)."""
    marker = _NodeDependence()
    dependent: frozenset[str] = frozenset()
    for clause in rule.clauses:
        for e in clause_expressions(clause):
            dep = marker.expr(e, dependent)
            if isinstance(clause, ast.Let):
                dependent = dependent | {clause.name} if dep else dependent - {clause.name}
    return marker.marked


def analyse(checked: CheckedRule) -> RuleAnalysis:
    """Node dependence, reads and pods polarity of one checked rule (lets are visible to the clauses after
    them)."""
    exprs = [e for clause in checked.rule.clauses for e in clause_expressions(clause)]
    return RuleAnalysis(frozenset(node_dependent(checked.rule)), frozenset(_reads(exprs, checked.info)),
                        pods_polarity(checked))
