"""Which way a filter's rejection moves when the pods on the node grow: the requeue's direction.

kube-scheduler's NodeResourcesFit and NodePorts never retry a pod they rejected when a pod is *added* to
a node (their ``EventsToRegister`` name pod Delete -- and, for Fit, a scale-down -- but not Add): more pods
on a node can only use more of it. Policy rules are user-written, so that fact is computed here, per
filter rule, instead of being declared.

The node-local pod aggregates are ``node.requested``, ``node.nonzero_requested``, ``node.pod_count``,
``node.used_ports`` (and ``node.port_conflict()``, which reads it) and ``len(node.pods)``. An assigned pod
added to the node (or one whose requests and their non-zero defaults all grew; the watch cannot tell a
resize's direction and sends every direction) can only make each of them grow: a larger number, a map
with more keys and larger values, a list with more (unchanged) items. :func:`pods_polarity` answers how
the rule's *rejection* (``require`` false, a ``reject ... when`` true, a non-empty ``reject each``, with
its ``applies when``) moves as they grow:

* ``"up"``: growth can only reject more (Fit, NodePorts): a pod this rule rejected on a node is not
  helped by a pod added there, only by one leaving;
* ``"down"``: growth can only reject less (``require node.pod_count > 0``): leaving cannot help;
* ``"const"``: the rejection does not depend on them at all;
* ``"unknown"``: anything this analysis cannot prove -- ``node.pods`` used other than through ``len``
  (its items' labels and requests change on updates), equality, ``if`` on a changing value, ``*`` or
  ``/`` by something that is not a constant of known sign, ``%``, an unknown builtin or method given a
  changing value or ``node`` itself, a member of the node this module does not know (a newer schema).
  The requeue then treats every pod event as possibly helpful, as before.

Soundness rests on monotone building blocks: ``+``, ``and``, ``or``, ``any``, ``count``, ``len``,
``min``/``max``, ``trunc``/``round``/``int``/``float``/``seconds`` are non-decreasing in each argument;
``-`` (binary, on the right), ``not``, unary ``-``, ``all`` (over its list) reverse the direction; ``a > b``
grows with ``a`` and shrinks with ``b``. A rule that *fails* at run time on a node is no rejection this
proof covers; the queue keeps such nodes conservative (``NodeVerdict.error``). The walk is one more
:class:`~policyscheduler.syntax.visitor.ExprVisitor` pass (the one visitor mechanism).
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from policyscheduler.checker.expressions import Info
from policyscheduler.checker.passes import CheckedRule
from policyscheduler.checker.types import STRING, MapT
from policyscheduler.syntax import ast
from policyscheduler.syntax.visitor import ExprVisitor

__all__ = ["CONST", "DOWN", "UNKNOWN", "UP", "pods_polarity"]

CONST, UP, DOWN, UNKNOWN = "const", "up", "down", "unknown"
"""How a value moves as the node's pod aggregates grow (booleans: false < true; lists and maps: "up" is
more items, the items themselves unchanged; map values grow too)."""

_NODE = "node"
"""The value ``node`` itself: only a member read or ``node.port_conflict()`` may consume it."""
_POD_LIST = "node.pods"
"""``node.pods``: only ``len`` may consume it (its items change on updates)."""

_GROWING = frozenset({"requested", "nonzero_requested", "pod_count", "used_ports"})
"""Members of Node that only grow when a pod is added to the node (see the module docstring)."""
_FIXED = frozenset({"name", "labels", "annotations", "unschedulable", "taints", "allocatable", "images", "created"})
"""Members of Node no pod event changes. Any other member is unknown here (a newer schema): "unknown"."""
_MONOTONE_BUILTINS = frozenset({"min", "max", "trunc", "round", "int", "float", "seconds"})
"""Generic builtins non-decreasing in each argument (on numbers; strings and times never change here)."""
_ROOTS = frozenset({"pod", "cluster", "now"})
"""Filter roots no node-local pod event changes (``cluster.*`` is the ``cluster`` facet's business)."""


def _flip(p: str) -> str:
    return DOWN if p == UP else UP if p == DOWN else CONST if p == CONST else UNKNOWN


def _join(*parts: str) -> str:
    """The direction of a function non-decreasing in each of ``parts``."""
    result = CONST
    for p in parts:
        if p == CONST:
            continue
        if p not in (UP, DOWN) or result not in (CONST, p):
            return UNKNOWN
        result = p
    return result


class _Growth(ExprVisitor[str]):
    """The direction of each expression, given the directions of the names in scope (``env``)."""

    def __init__(self, info: Info) -> None:
        self.info = info

    def _const_only(self, parts: list[str]) -> str:
        return CONST if all(p == CONST for p in parts) else UNKNOWN

    def _IntLit(self, e: ast.IntLit, env: Mapping[str, str]) -> str:
        return CONST

    def _FloatLit(self, e: ast.FloatLit, env: Mapping[str, str]) -> str:
        return CONST

    def _QuantityLit(self, e: ast.QuantityLit, env: Mapping[str, str]) -> str:
        return CONST

    def _StringLit(self, e: ast.StringLit, env: Mapping[str, str]) -> str:
        return CONST

    def _BoolLit(self, e: ast.BoolLit, env: Mapping[str, str]) -> str:
        return CONST

    def _ListLit(self, e: ast.ListLit, env: Mapping[str, str]) -> str:
        return self._const_only([self.visit(i, env) for i in e.items])

    def _Name(self, e: ast.Name, env: Mapping[str, str]) -> str:
        if e.id in env:
            return env[e.id]
        if e.id == "node":
            return _NODE
        return CONST if e.id in _ROOTS else UNKNOWN

    def _Attr(self, e: ast.Attr, env: Mapping[str, str]) -> str:
        obj = self.visit(e.obj, env)
        if obj == _NODE:
            if e.name in _GROWING:
                return UP
            if e.name == "pods":
                return _POD_LIST
            return CONST if e.name in _FIXED else UNKNOWN
        return CONST if obj == CONST else UNKNOWN

    def _Call(self, e: ast.Call, env: Mapping[str, str]) -> str:
        kind, name = self.info.calls.get(id(e), ("", ""))
        args = [self.visit(a, env) for a in e.args]
        if e.default is not None:
            args.append(self.visit(e.default, env))
        if kind == "method" and isinstance(e.func, ast.Attr):
            receiver = self.visit(e.func.obj, env)
            if receiver == _NODE:
                # port_conflict(p): is some used port in conflict with p -- an ``any`` over used_ports
                return UP if name == "port_conflict" and self._const_only(args) == CONST else UNKNOWN
            return self._const_only([receiver, *args])
        if kind == "generic" and name == "len" and len(args) == 1:
            return UP if args[0] == _POD_LIST else _join(args[0])
        if kind == "generic" and name in _MONOTONE_BUILTINS:
            return _join(*args)
        return self._const_only(args)

    def _Index(self, e: ast.Index, env: Mapping[str, str]) -> str:
        obj, idx = self.visit(e.obj, env), self.visit(e.index, env)
        if idx == CONST and obj in (UP, DOWN) and isinstance(self.info.types.get(id(e.obj)), MapT):
            return obj  # a growing map: more keys (absent reads as zero) and larger values
        return self._const_only([obj, idx])

    def _Unary(self, e: ast.Unary, env: Mapping[str, str]) -> str:
        return _flip(self.visit(e.operand, env))  # "not" and "-" both reverse the order

    def _Binary(self, e: ast.Binary, env: Mapping[str, str]) -> str:
        op = e.op
        left, right = self.visit(e.left, env), self.visit(e.right, env)
        if left == right == CONST:
            return CONST
        if op in ("and", "or"):
            return _join(left, right)
        if op == "+":
            return UNKNOWN if self.info.types.get(id(e)) == STRING else _join(left, right)
        if op == "-":
            return _join(left, _flip(right))
        if op in (">", ">="):
            return _join(left, _flip(right))
        if op in ("<", "<="):
            return _join(_flip(left), right)
        if op in ("in", "not in") and left == CONST:
            member = _join(right)  # a list or map with more items holds more
            return member if op == "in" else _flip(member)
        if op == "*":
            return self._scaled(left, e.right) if right == CONST else self._scaled(right, e.left)
        if op == "/" and right == CONST:
            return self._scaled(left, e.right)  # truncating division by a constant is monotone too
        return UNKNOWN  # ==, !=, %, / by a changing value, "in" of a changing item

    def _scaled(self, moving: str, factor: ast.Expr) -> str:
        """``moving * factor`` (or ``/ factor``) for a constant ``factor``: its sign decides."""
        sign = self._sign(factor)
        if sign is None:
            return UNKNOWN
        return CONST if sign == 0 else _join(moving) if sign > 0 else _flip(_join(moving))

    def _sign(self, e: ast.Expr) -> int | None:
        """The sign of a literal (or a folded int constant), None when not known here."""
        if isinstance(e, ast.Unary) and e.op == "-":
            inner = self._sign(e.operand)
            return None if inner is None else -inner
        value: Any = self.info.constants.get(id(e))
        if value is None and isinstance(e, (ast.IntLit, ast.FloatLit, ast.QuantityLit)):
            value = self.info.literals.get(id(e), getattr(e, "value", None))
        if isinstance(value, (int, float, Fraction)) and not isinstance(value, bool):
            return (value > 0) - (value < 0)
        return None

    def _IfExpr(self, e: ast.IfExpr, env: Mapping[str, str]) -> str:
        cond, then, else_ = self.visit(e.cond, env), self.visit(e.then, env), self.visit(e.else_, env)
        return _join(then, else_) if cond == CONST else self._const_only([cond, then, else_])

    def loop(self, loop: ast.Loop, env: Mapping[str, str]) -> tuple[str, dict[str, str]]:
        """The direction of the items a loop visits (its list after ``where``) and the scope of its body.
        The loop variables are constant: a changing list only gains or loses unchanged items."""
        items = self.visit(loop.iterable, env)
        if items != CONST and isinstance(self.info.types.get(id(loop.iterable)), MapT):
            items = UNKNOWN  # a changing map's values change: its (key, value) items are not fixed
        inner = {**env, **{b.name: CONST for b in loop.binders}}
        if loop.where is not None:
            items = _join(items, self.visit(loop.where, inner))
        return _join(items), inner

    def _Quantifier(self, e: ast.Quantifier, env: Mapping[str, str]) -> str:
        items, inner = self.loop(e.loop, env)
        body = self.visit(e.body, inner)
        return _join(items, body) if e.kind == "any" else _join(_flip(items), body)

    def _Comprehension(self, e: ast.Comprehension, env: Mapping[str, str]) -> str:
        items, inner = self.loop(e.loop, env)
        return items if self.visit(e.value, inner) == CONST else UNKNOWN

    def _Aggregate(self, e: ast.Aggregate, env: Mapping[str, str]) -> str:
        items, inner = self.loop(e.loop, env)
        if e.kind == "count":
            return items
        value = CONST if e.value is None else self.visit(e.value, inner)
        default = CONST if e.default is None else self.visit(e.default, env)
        # over a fixed list a sum / max / min of growing values grows; over a changing list the signs of
        # the items (sum) or the default (an emptied max) decide: not proven here
        return _join(value, default) if items == CONST else UNKNOWN


def pods_polarity(checked: CheckedRule) -> str:
    """How the rejection of the filter ``checked`` moves as the node's pod aggregates grow: ``"up"``,
    ``"down"``, ``"const"`` or ``"unknown"`` (see the module docstring). Not a filter: ``"unknown"``."""
    rule = checked.rule
    if not isinstance(rule, ast.FilterRule):
        return UNKNOWN
    growth = _Growth(checked.info)
    env: dict[str, str] = {}
    rejection = CONST
    for clause in rule.clauses:
        if isinstance(clause, ast.Reason):
            continue
        if isinstance(clause, ast.Let):
            env[clause.name] = growth.visit(clause.value, env)
            continue
        if isinstance(clause, ast.Applies):
            part = growth.visit(clause.cond, env)  # rejects only when it applies: "and"
        elif isinstance(clause, ast.Require):
            part = _flip(growth.visit(clause.cond, env))  # rejects when the condition is false
        elif isinstance(clause, (ast.Reject, ast.RejectPod)):
            part = growth.visit(clause.when, env)
        elif isinstance(clause, ast.RejectEach):
            reasons = clause.reasons  # rejects when the list is not empty: only its length matters
            part = (growth.loop(reasons.loop, env)[0] if isinstance(reasons, ast.Comprehension)
                    else growth.visit(reasons, env))
        else:
            return UNKNOWN  # a clause filters do not have
        rejection = _join(rejection, part)
        if rejection == UNKNOWN:
            return UNKNOWN
    return rejection
