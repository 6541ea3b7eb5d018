"""The core of the lowering visitor: where each expression goes before any operator is looked at.

:class:`LowerBase` decides, per expression (see :mod:`.lower` for the whole picture): no node-dependent
name read -> the reference's own closure, once per pod (:meth:`LowerBase.pod_level`); only one item of a
ragged node list of few distinct values read (a taint, a host port) -> the reference's closure once per
distinct item (:meth:`LowerBase.per_distinct`); anything else -> the visitor method of its class, one of
the mixins :mod:`.scalar`, :mod:`.loops`, :mod:`.calls` or :class:`.lower.Lowerer` itself.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from policyscheduler.checker.passes import NOW, CheckedRule
from policyscheduler.checker.types import FLOAT, INT, QUANTITY, Type
from policyscheduler.compiler.closures import BUDGET, ExprCompiler, reset_budget
from policyscheduler.evaluation.vector import kernels
from policyscheduler.evaluation.vector.context import KIND, Ctx, Fn, kind_of
from policyscheduler.evaluation.vector.scope import FreeNames, Scope
from policyscheduler.evaluation.vector.values import Col, Const, Poisoned, Rec, Value, convert, err_or, from_python
from policyscheduler.syntax import ast
from policyscheduler.syntax.visitor import ExprVisitor

__all__ = ["DISTINCT_RECORDS", "LowerBase"]

DISTINCT_RECORDS = ("Taint", "HostPort")
"""Element records evaluated once per distinct value (see columns._DISTINCT)."""


_LITERALS = (ast.IntLit, ast.FloatLit, ast.QuantityLit, ast.StringLit, ast.BoolLit)

_FRAME_NAMES = frozenset({"pod", "cluster", NOW})
"""Names :meth:`Ctx.frame` (or the reference's closure) does not take from the bound constants."""


def _is_literal(e: ast.Expr) -> bool:
    """A literal, or a list of literals (the reference builds that list once, at compile time)."""
    if isinstance(e, _LITERALS):
        return True
    return isinstance(e, ast.ListLit) and all(isinstance(i, _LITERALS) for i in e.items)


class LowerBase(ExprVisitor[Fn]):
    """Shared state and entry points of the lowering of one checked rule; the visitor methods live in the
    mixins, and :class:`.lower.Lowerer` (which the exhaustiveness check covers) combines them."""

    partial: ClassVar[bool] = True

    def __init__(self, checked: CheckedRule) -> None:
        self.info = checked.info
        self.ref = ExprCompiler(checked.info)
        self._free = FreeNames()
        self.allow_ragged_list = False
        """Set while lowering ``reject each`` / the argument of ``len``: the only places a list built from
        a node list (:class:`~.values.RList`) may appear."""
        self.known: dict[str, Any] = {}
        """Names whose value the lowering knows: the item (and index) of a loop over a literal list while
        its body is lowered for that item (:meth:`.loops.LoopLowering.loop_plan`). A pod-level expression
        reading only these and literals is folded to its value at lowering (:meth:`pod_level`)."""
        self.consts: dict[Fn, Const] = {}
        """The lowered functions that return one value known at lowering (literals, folded expressions):
        operators and map reads look their operands up here to specialise (:meth:`const_of`)."""

    def const_of(self, fn: Fn) -> Const | None:
        """The value ``fn`` always returns, when the lowering knows it (see ``consts``)."""
        return self.consts.get(fn)

    def constant(self, value: Const) -> Fn:
        """A function returning ``value``, registered as known at lowering."""

        def constant(ctx: Ctx) -> Value:
            return value

        self.consts[constant] = value
        return constant

    def _fold(self, e: ast.Expr) -> Const | None:
        """``e``'s value by the reference's closure at lowering, from the known names only; None when it
        fails (then it is evaluated per pod and fails there, exactly as the reference does). The thread's
        step budget is restored afterwards: folding is no evaluation's work."""
        closure = self.ref.compile(e)
        frame = {n: self.known[n] for n in self.free(e)}
        left, start = list(BUDGET.left), BUDGET.start
        reset_budget()
        try:
            return Const(closure(frame))
        except Exception:  # noqa: BLE001 -- left to the per-pod path and its exact error
            return None
        finally:
            BUDGET.left[0], BUDGET.left[1] = left[0], left[1]
            BUDGET.start = start

    # -- analysis
    def type_of(self, e: ast.Expr | ast.Loop) -> Type:
        return self.info.types[id(e)]

    def free(self, e: ast.Expr) -> frozenset[str]:
        """Names an expression reads that it does not bind itself."""
        return self._free.of(e)

    def node_dependent(self, e: ast.Expr, scope: Scope) -> bool:
        """Whether ``e`` reads a node-dependent name of ``scope``."""
        return not self.free(e).isdisjoint(scope)

    # -- entry points
    def expr(self, e: ast.Expr, scope: Scope, level: int) -> Fn:
        deps = self.free(e) & scope.keys()
        if not deps:
            return self.pod_level(e)
        if len(deps) == 1:
            (name,) = deps
            info = scope[name]
            if info.kind == "elem" and info.record in DISTINCT_RECORDS:
                kind = kind_of(self.type_of(e))
                if kind is not None:
                    return self.per_distinct(e, name, kind)
        return self.visit(e, scope, level)

    def expr_as(self, e: ast.Expr, dst: Type, scope: Scope, level: int) -> Fn:
        """``expr`` promoted like the reference's ``as_type`` (int -> float / quantity, quantity -> float)."""
        fn = self.expr(e, scope, level)
        src = self.type_of(e)
        if (src, dst) in ((INT, FLOAT), (INT, QUANTITY), (QUANTITY, FLOAT)):
            kind = KIND[dst]
            known = self.const_of(fn)
            if known is not None:  # a literal / folded value: promoted once, here (a failure stays per pod)
                try:
                    return self.constant(convert(known, kind))  # type: ignore[arg-type]
                except Poisoned:
                    pass
            return lambda ctx: convert(fn(ctx), kind)
        return fn

    def pod_level(self, e: ast.Expr) -> Fn:
        """``e`` by the reference's own closure, once per pod: the same value on every row.

        The closure charges the thread's step budget (closures.BUDGET) like any reference evaluation, so
        it gets a fresh one first: otherwise it would run on whatever the previous evaluation left (none,
        after a rule that ran out) and fail, or stop early, for work that is not its own. A ``budget:``
        failure poisons the rows like any other, and the reference closures decide those rows with the
        exact located message (program._run), so both backends report the same failure."""
        names = self.free(e)
        if names and self.known and names <= self.known.keys() and not names & _FRAME_NAMES:
            folded = self._fold(e)
            if folded is not None:
                return self.constant(folded)
        closure = self.ref.compile(e)

        def pod_level(ctx: Ctx) -> Value:
            reset_budget()
            try:
                return Const(closure(ctx.frame()))
            except Exception as exc:  # noqa: BLE001 -- the reference fails here too, on every row reaching it
                raise Poisoned(str(exc)) from None

        if _is_literal(e):
            # the reference's closure of a literal returns one value, read no name and charge no step:
            # that value, once (these are a third of a new pod shape's pod-level evaluations)
            try:
                const = Const(closure({}))
            except Exception:  # noqa: BLE001 -- not expected of a literal: keep the per-pod path and its error
                return pod_level
            return self.constant(const)
        if isinstance(e, ast.Name) and e.id not in _FRAME_NAMES:
            name = e.id

            def pod_name(ctx: Ctx) -> Value:
                """A loop item or let bound as a constant: the closure would read exactly its value from
                :meth:`Ctx.frame`, so the bound :class:`Const` is the answer."""
                v = ctx.env.get(name)
                if type(v) is Const:
                    return v
                return pod_level(ctx)

            return pod_name
        return pod_level

    def per_distinct(self, e: ast.Expr, name: str, kind: str) -> Fn:
        """``e`` by the reference's closure once per distinct item bound to ``name``, gathered per row."""
        closure = self.ref.compile(e)

        def per_distinct(ctx: Ctx) -> Value:
            rec = ctx.lookup(name)
            assert isinstance(rec, Rec)
            table = rec.table
            codes = table.dcode[rec.rows]
            if len(table.distinct) <= max(256, codes.size):
                wanted: list[int] = list(range(len(table.distinct)))  # all of them: no sort needed
                inv = codes
            else:
                uniq, inv = np.unique(codes, return_inverse=True)
                wanted = uniq.tolist()
            frame = dict(ctx.frame())
            vals: list[Any] = []
            bad: list[bool] = []
            for d in wanted:
                frame[name] = table.distinct[d]
                reset_budget()  # one reference evaluation per distinct item: each its own budget (see pod_level)
                try:
                    vals.append(closure(frame))
                    bad.append(False)
                except Exception:  # noqa: BLE001 -- reference error on the nodes holding this item
                    vals.append(kernels._ZERO[kind])
                    bad.append(True)
            col = from_python(vals, kind, ctx.state.interner)
            err = np.array(bad, dtype=np.bool_)[inv] if any(bad) else None
            if col.err is not None:
                err = err_or(err, col.err[inv])
            return Col(kind, col.data[inv], err, col.den, col.bound)

        return per_distinct
