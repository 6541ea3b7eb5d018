"""The names a lowering sees: which are node-dependent (:class:`NInfo`), and which an expression reads.

:class:`FreeNames` is an :class:`~policyscheduler.syntax.visitor.ExprVisitor`: the expression classes it
handles are checked when it is defined, so a new class cannot be read as "depends on nothing".
"""

from __future__ import annotations

import dataclasses

from policyscheduler.syntax import ast
from policyscheduler.syntax.visitor import ExprVisitor, children, loop_children

__all__ = ["FreeNames", "NInfo", "Scope"]


@dataclasses.dataclass(frozen=True)
class NInfo:
    """A node-dependent name: ``elem`` (an item of a ragged node list), or any other value."""

    kind: str  # "node" | "elem" | "val"
    level: int
    record: str = ""


Scope = dict[str, NInfo]
"""The node-dependent names in scope (a name not in it is pod-level)."""

_NONE: frozenset[str] = frozenset()


class FreeNames(ExprVisitor[frozenset[str]]):
    """Names an expression reads that it does not bind itself (memoised per node, by identity).

    The callee of a call by name (``len(x)``, ``max(a, b)``) is not a read: it names a builtin, and a let
    or loop variable of the same name must not make the call look node-dependent. So ``_Call`` walks the
    arguments, a method's receiver and the ``default``, not :func:`~policyscheduler.syntax.visitor.children`.
    """

    def __init__(self) -> None:
        self._memo: dict[int, frozenset[str]] = {}

    def of(self, e: ast.Expr) -> frozenset[str]:
        got = self._memo.get(id(e))
        if got is None:
            got = self._memo[id(e)] = self.visit(e)
        return got

    def _union(self, parts: tuple[ast.Expr, ...]) -> frozenset[str]:
        out = _NONE
        for p in parts:
            out = out | self.of(p)
        return out

    def _literal(self, e: ast.IntLit | ast.FloatLit | ast.QuantityLit | ast.StringLit | ast.BoolLit) -> frozenset[str]:
        return _NONE

    _IntLit = _FloatLit = _QuantityLit = _StringLit = _BoolLit = _literal

    def _Name(self, e: ast.Name) -> frozenset[str]:
        return frozenset((e.id,))

    def _below(self, e: ast.ListLit | ast.Attr | ast.Index | ast.Unary | ast.Binary | ast.IfExpr) -> frozenset[str]:
        return self._union(children(e))

    _ListLit = _Attr = _Index = _Unary = _Binary = _IfExpr = _below

    def _Call(self, e: ast.Call) -> frozenset[str]:
        parts = e.args if isinstance(e.func, ast.Name) else (e.func, *e.args)
        return self._union(parts if e.default is None else (*parts, e.default))

    def _looped(self, loop: ast.Loop, inner: tuple[ast.Expr, ...]) -> frozenset[str]:
        """The iterable's names, plus the ``where`` and body names other than the loop's own binders."""
        head, *where = loop_children(loop)
        bound = self._union((*where, *inner)) - {b.name for b in loop.binders}
        return self.of(head) | bound

    def _Quantifier(self, e: ast.Quantifier) -> frozenset[str]:
        return self._looped(e.loop, (e.body,))

    def _Comprehension(self, e: ast.Comprehension) -> frozenset[str]:
        return self._looped(e.loop, (e.value,))

    def _Aggregate(self, e: ast.Aggregate) -> frozenset[str]:
        out = self._looped(e.loop, () if e.value is None else (e.value,))
        return out if e.default is None else out | self.of(e.default)
