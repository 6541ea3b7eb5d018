"""Lowering of scalar operations: ``not`` / unary minus, binary operators, ``in``, ``if``, list literals.

Each visitor method builds a function over whole columns from its operands' functions; the numeric
semantics are the reference's (:mod:`.ops`). A combination of types the columns cannot express raises
:class:`~.values.Unsupported` here, by an explicit decision: the rule then runs on the reference.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from policyscheduler.checker.types import FLOAT, QUANTITY, STRING, ListT, MapT, Type
from policyscheduler.compiler import builtins as rt
from policyscheduler.evaluation.vector import kernels, ops
from policyscheduler.evaluation.vector.base import LowerBase
from policyscheduler.evaluation.vector.columns import column_key
from policyscheduler.evaluation.vector.context import Ctx, Fn, kind_of, with_err
from policyscheduler.evaluation.vector.rows import and_mask, concat, or_values, str_concat, str_member
from policyscheduler.evaluation.vector.scope import Scope
from policyscheduler.evaluation.vector.values import (
    Col,
    Const,
    MList,
    Path,
    Poisoned,
    Unsupported,
    Value,
    err_or,
    mask_array,
)
from policyscheduler.syntax import ast

__all__ = ["ScalarLowering"]


class ScalarLowering(LowerBase):
    """The visitor methods of operators, conditionals and list literals."""

    partial: ClassVar[bool] = True

    def _Unary(self, e: ast.Unary, scope: Scope, level: int) -> Fn:
        x = self.expr(e.operand, scope, level)
        if e.op == "not":
            return lambda ctx: ops.logical_not(x(ctx))
        return lambda ctx: ops.negate(x(ctx))

    def _Binary(self, e: ast.Binary, scope: Scope, level: int) -> Fn:
        op = e.op
        ta, tb, tr = self.type_of(e.left), self.type_of(e.right), self.type_of(e)
        if op in ("and", "or"):
            a, b = self.expr(e.left, scope, level), self.expr(e.right, scope, level)
            return lambda ctx: ops.logical(op, a(ctx), lambda: b(ctx), ctx.m)
        if op in ("in", "not in"):
            member = self._member(e, ta, tb, scope, level)
            if op == "in":
                return member
            return lambda ctx: ops.logical_not(member(ctx))
        if op in ("==", "!=", "<", "<=", ">", ">="):
            ka, kb = kind_of(ta), kind_of(tb)
            if ka is None or kb is None:
                raise Unsupported(f"'{op}' on {ta} and {tb} node values")
            if op in ("==", "!=") and {ka, kb} == {"q", "float"}:
                raise Unsupported("'==' between a quantity and a float on node values")
            if op not in ("==", "!=") and FLOAT in (ta, tb) and QUANTITY in (ta, tb):
                a, b = self.expr_as(e.left, FLOAT, scope, level), self.expr_as(e.right, FLOAT, scope, level)
                ka = kb = "float"
            else:
                a, b = self.expr(e.left, scope, level), self.expr(e.right, scope, level)
            return ops.compare_fn(op, a, ka, b, kb, self.const_of(a), self.const_of(b))
        if isinstance(tr, ListT):
            a, b = self.expr(e.left, scope, level), self.expr(e.right, scope, level)
            return lambda ctx: concat(a(ctx), b(ctx))
        if tr == STRING:
            a, b = self.expr(e.left, scope, level), self.expr(e.right, scope, level)
            return lambda ctx: str_concat(a(ctx), b(ctx), ctx)
        kind = kind_of(tr)
        if kind not in ("int", "float", "q"):
            raise Unsupported(f"'{op}' giving {tr}")
        if tr == QUANTITY:
            a, b = self.expr(e.left, scope, level), self.expr(e.right, scope, level)
        else:
            a, b = self.expr_as(e.left, tr, scope, level), self.expr_as(e.right, tr, scope, level)
        return ops.arith_fn(op, a, b, kind, self.const_of(a), self.const_of(b))

    def _member(self, e: ast.Binary, ta: Type, tb: Type, scope: Scope, level: int) -> Fn:
        a, b = self.expr(e.left, scope, level), self.expr(e.right, scope, level)
        if isinstance(tb, MapT):
            def in_map(ctx: Ctx) -> Value:
                k, m = a(ctx), b(ctx)
                if isinstance(m, Path) and isinstance(k, Const):
                    return ctx.gather(m.rec, column_key("has", m.field, map_key=k.value))
                if isinstance(m, Const) and isinstance(k, Col):
                    d = m.value
                    return kernels.map_strings(lambda s: s in d, "bool", [k], ctx.state.interner)
                if isinstance(m, Const) and isinstance(k, Const):
                    return Const(k.value in m.value)
                raise Poisoned("a node-dependent key in a node-dependent map")

            return in_map
        if tb == STRING:
            return lambda ctx: str_member(a(ctx), b(ctx), ctx)
        assert isinstance(tb, ListT)
        ka = kind_of(ta) if kind_of(ta) is not None else None
        kb = kind_of(tb.elem)
        if ka is None or kb is None:
            raise Unsupported(f"'in' on {ta} and {tb} node values")
        if {ka, kb} == {"q", "float"}:
            raise Unsupported("'in' between quantities and floats on node values")

        def in_list(ctx: Ctx) -> Value:
            x, xs = a(ctx), b(ctx)
            interner = ctx.state.interner
            if isinstance(xs, Const):
                if isinstance(x, Const):
                    return ops._py(rt.member, x.value, xs.value)
                if ka == "str" and kb == "str":
                    assert isinstance(x, Col)
                    hit = np.isin(x.data, interner.codes_if_known(list(xs.value)))
                    return Col("bool", hit, x.err)
                acc: Value = Const(False)
                for item in xs.value:
                    acc = or_values(acc, ops.compare("==", x, ka, Const(item), kb, interner), ctx)
                return acc
            assert isinstance(xs, MList)
            acc = Const(False)
            for mask, item in xs.items:
                same = and_mask(ops.compare("==", x, ka, item, kb, interner), mask, ctx)
                acc = or_values(acc, same, ctx)
            return with_err(acc, xs.err, "bool", ctx)

        return in_list

    def _IfExpr(self, e: ast.IfExpr, scope: Scope, level: int) -> Fn:
        t = self.type_of(e)
        kind = kind_of(t)
        cond = self.expr(e.cond, scope, level)
        a, b = self.expr_as(e.then, t, scope, level), self.expr_as(e.else_, t, scope, level)
        cond_n = bool(self.free(e.cond) & scope.keys())
        if kind is None and cond_n:
            raise Unsupported(f"a node-dependent 'if' choosing between {t} values")

        def if_expr(ctx: Ctx) -> Value:
            c = cond(ctx)
            if isinstance(c, Const):
                return a(ctx) if c.value else b(ctx)
            assert kind is not None
            cm, cerr = ops.mask_of(c)
            try:
                va = a(ctx)
            except Poisoned:
                va = None
            try:
                vb = b(ctx)
            except Poisoned:
                vb = None
            if va is None and vb is None:
                raise Poisoned("both branches fail")
            if va is None:
                return with_err(vb, err_or(cerr, mask_array(cm, ctx.m)), kind, ctx)  # type: ignore[arg-type]
            if vb is None:
                return with_err(va, err_or(cerr, ~mask_array(cm, ctx.m)), kind, ctx)
            return ops.select(c, va, vb, kind, ctx.state.interner)

        return if_expr

    def _ListLit(self, e: ast.ListLit, scope: Scope, level: int) -> Fn:
        t = self.type_of(e)
        elem = t.elem if isinstance(t, ListT) else t
        items = [self.expr_as(i, elem, scope, level) for i in e.items]
        return lambda ctx: MList([(True, fn(ctx)) for fn in items])
