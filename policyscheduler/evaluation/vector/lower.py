"""Lowering: a checked rule's expressions -> functions over whole columns (``fn(ctx) -> Value``).

Decided once per rule, at lowering time, from the AST and the checker's types:

* an expression that depends only on ``pod``, ``cluster``, literals and pod-level names is compiled with
  the reference's own :class:`~policyscheduler.compiler.closures.ExprCompiler` and evaluated **once per
  pod** (or once per item of an unrolled pod-level loop): it cannot differ from the reference;
* an expression whose only node-dependent input is one item of ``node.taints`` / ``node.used_ports`` is
  evaluated the same way once per *distinct* taint / port of the cluster and gathered;
* everything else that depends on the node is lowered operator by operator to numpy (:mod:`.ops`):
  loops over pod-level lists are unrolled over their (few) items with column bodies, loops over the
  node's lists run over ragged element columns and are reduced per node (:class:`.kernels.Segments`);
* anything else raises :class:`~.values.Unsupported` with a reason, and the whole rule falls back to the
  reference closures (see :func:`.program.lower_rule`).

:class:`Lowerer` is an :class:`~policyscheduler.syntax.visitor.ExprVisitor`, put together from one module
per concern: :mod:`.base` (the decisions above), :mod:`.scalar` (operators, ``if``, list literals),
:mod:`.loops` (quantifiers, aggregates, comprehensions), :mod:`.calls` (builtins and methods), and here
names, fields and indexes. The visitor checks when :class:`Lowerer` is defined that it has a method for
every expression class of the AST: a new class is an import error, never a silent fallback.
"""

from __future__ import annotations

import operator
from typing import Any

from policyscheduler.checker.types import MapT, RecordT, zero_value
from policyscheduler.evaluation.vector import kernels, ops
from policyscheduler.evaluation.vector.calls import CallLowering
from policyscheduler.evaluation.vector.columns import column_key
from policyscheduler.evaluation.vector.context import Ctx, Fn, kind_of
from policyscheduler.evaluation.vector.loops import LoopLowering
from policyscheduler.evaluation.vector.rows import mlist_index, py_list_index
from policyscheduler.evaluation.vector.scalar import ScalarLowering
from policyscheduler.evaluation.vector.scope import Scope
from policyscheduler.evaluation.vector.values import Const, MList, Path, Poisoned, Rec, Unsupported, Value
from policyscheduler.syntax import ast

__all__ = ["Lowerer"]

Literal = ast.IntLit | ast.FloatLit | ast.QuantityLit | ast.StringLit | ast.BoolLit


class Lowerer(ScalarLowering, LoopLowering, CallLowering):
    """Lowers the expressions of one checked rule (see the module docstring)."""

    # -- literals
    def _literal(self, e: Literal, scope: Scope, level: int) -> Fn:
        """A literal reads no name, so :meth:`~.base.LowerBase.expr` always takes it pod-level and never
        gets here; listed so that the set of handled classes is complete."""
        return self.pod_level(e)

    _IntLit = _FloatLit = _QuantityLit = _StringLit = _BoolLit = _literal

    # -- names, fields, indexes
    def _Name(self, e: ast.Name, scope: Scope, level: int) -> Fn:
        name = e.id
        if level == 0:
            # on the node rows (a ctx of level 0, as the expression is lowered at) no name is taken onto
            # elements: the bound value itself, without :meth:`Ctx.lookup`'s level test
            return lambda ctx: ctx.env[name]
        return lambda ctx: ctx.lookup(name)

    def _Attr(self, e: ast.Attr, scope: Scope, level: int) -> Fn:
        obj = self.expr(e.obj, scope, level)
        t = self.type_of(e)
        field = e.name
        kind = kind_of(t)
        if isinstance(t, RecordT) and self._is_record_rows(e.obj, scope):
            raise Unsupported(f"record field .{field} of a node-dependent record")
        getter = operator.attrgetter(field)
        ckey = column_key("f", field, kind) if kind is not None else None

        def attr(ctx: Ctx) -> Value:
            v = obj(ctx)
            if isinstance(v, Const):
                return Const(getter(v.value))
            if not isinstance(v, Rec):
                raise Poisoned(f"field .{field} of {type(v).__name__}")
            if ckey is None:
                return Path(v, field)
            return ctx.gather(v, ckey)

        return attr

    def _is_record_rows(self, e: ast.Expr, scope: Scope) -> bool:
        """True when ``e`` evaluates to table rows (the node, an item of a node list) rather than constants."""
        return isinstance(e, ast.Name) and e.id in scope and scope[e.id].kind in ("node", "elem")

    def _Index(self, e: ast.Index, scope: Scope, level: int) -> Fn:
        tobj = self.type_of(e.obj)
        t = self.type_of(e)
        obj = self.expr(e.obj, scope, level)
        index_n = bool(self.free(e.index) & scope.keys())
        kind = kind_of(t)
        if isinstance(tobj, MapT):
            zero = zero_value(tobj.value)
            if zero is None or kind is None:
                raise Unsupported("reading a record-valued map entry on node values")
            if index_n:
                if self.free(e.obj) & scope.keys():
                    raise Unsupported("a node-dependent map read with a node-dependent key")
                return self._const_map_col_key(obj, self.expr(e.index, scope, level), zero, kind)
            key_fn = self.expr(e.index, scope, level)
            key = self.const_of(key_fn)
            if key is not None and isinstance(e.obj, ast.Attr) and self._is_record_rows(e.obj.obj, scope) \
                    and isinstance(key.value, str):
                # a map field of the node (of a node list's item) read with a key known at lowering (a
                # literal, an item of a literal list): the column key is built once, here
                records = self.expr(e.obj.obj, scope, level)
                ckey = column_key("get", e.obj.name, kind, key.value, zero)
                if level == 0 and isinstance(e.obj.obj, ast.Name) and scope[e.obj.obj.id].kind == "node":
                    node_name = e.obj.obj.id

                    def read_node_column(ctx: Ctx) -> Value:
                        """``node.FIELD[key]`` on the node rows: the node read from the env as ``_Name``
                        reads it at level 0, without a call."""
                        rec = ctx.env[node_name]
                        if type(rec) is not Rec:
                            raise Poisoned("map read")
                        return ctx.gather(rec, ckey)

                    return read_node_column

                def read_column(ctx: Ctx) -> Value:
                    rec = records(ctx)
                    if type(rec) is not Rec:
                        raise Poisoned("map read")
                    return ctx.gather(rec, ckey)

                return read_column

            def read_map(ctx: Ctx) -> Value:
                v, k = obj(ctx), key_fn(ctx)
                assert isinstance(k, Const)
                if isinstance(v, Const):
                    return Const(v.value.get(k.value, zero))
                if isinstance(v, Path):
                    return ctx.gather(v.rec, column_key("get", v.field, kind, k.value, zero))
                raise Poisoned("map read")

            return read_map
        if index_n:
            raise Unsupported("a list index that depends on the node")
        if isinstance(e.obj, ast.Attr) and self.free(e.obj.obj) & scope.keys():
            raise Unsupported("indexing a list field of a node-dependent record")
        if kind is None:
            raise Unsupported("indexing a node-dependent list of records")
        idx_fn = self.expr(e.index, scope, level)

        def read_list(ctx: Ctx) -> Value:
            v, i = obj(ctx), idx_fn(ctx)
            assert isinstance(i, Const)
            if isinstance(v, Const):
                return ops._py(py_list_index, v.value, i.value)
            assert isinstance(v, MList)
            return mlist_index(v, i.value, kind, ctx)

        return read_list

    def _const_map_col_key(self, obj: Fn, key: Fn, zero: Any, kind: str) -> Fn:
        def read(ctx: Ctx) -> Value:
            m, k = obj(ctx), key(ctx)
            assert isinstance(m, Const)
            if isinstance(k, Const):
                return Const(m.value.get(k.value, zero))
            d = m.value
            return kernels.map_strings(lambda s: d.get(s, zero), kind, [k], ctx.state.interner)

        return read
