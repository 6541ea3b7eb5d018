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
  reference closures (see :func:`lower_rule`).
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from policyscheduler.checker.passes import CheckedRule
from policyscheduler.checker.types import BOOL, FLOAT, INT, QUANTITY, STRING, ListT, MapT, RecordT, Type, zero_value
from policyscheduler.compiler import builtins as rt
from policyscheduler.compiler.closures import ExprCompiler
from policyscheduler.evaluation.vector import kernels, ops
from policyscheduler.evaluation.vector.columns import column_key
from policyscheduler.evaluation.vector.values import (
    Bools,
    Col,
    Const,
    Mask,
    MList,
    Path,
    Poisoned,
    Rec,
    RList,
    Unsupported,
    Value,
    convert,
    err_or,
    from_python,
    mask_and,
    mask_array,
)
from policyscheduler.syntax import ast

Fn = Callable[["Ctx"], Value]

_KIND: dict[Type, str] = {BOOL: "bool", INT: "int", FLOAT: "float", STRING: "str", QUANTITY: "q"}
_DISTINCT_RECORDS = ("Taint", "HostPort")
"""Element records evaluated once per distinct value (see columns._DISTINCT)."""


def kind_of(t: Type) -> str | None:
    return _KIND.get(t)


# ------------------------------------------------------------------------------------ run context


class PodState:
    """What every rule of one pod shares: the pod, its cluster context, the tables, per-pod caches."""

    def __init__(self, tables: Any, pod: Any, cluster: Any) -> None:
        self.tables = tables
        self.interner = tables.interner
        self.pod = pod
        self.cluster = cluster
        self.cluster_columns: dict[tuple[Any, ...], Any] = {}
        self.recording: list[tuple[str, tuple[Any, ...], int | None]] | None = None
        """When a list: every whole-cluster builtin call gets (name, other arguments, its uniform value or
        None) appended (see :class:`~.reuse.Memo`)."""


class Ctx:
    """One evaluation domain (node rows, or the elements of a ragged loop) and the names bound in it."""

    __slots__ = ("_frame", "_taken", "env", "level", "levels", "m", "segs", "state")

    def __init__(self, state: PodState, m: int, env: dict[str, Value], levels: dict[str, int], level: int,
                 segs: kernels.Segments | None) -> None:
        self.state = state
        self.m = m
        self.env = env
        self.levels = levels
        self.level = level
        self.segs = segs
        self._frame: dict[str, Any] | None = None
        self._taken: dict[str, Value] = {}

    def lookup(self, name: str) -> Value:
        v = self.env[name]
        if self.levels[name] < self.level:
            taken = self._taken.get(name)
            if taken is None:
                assert self.segs is not None
                taken = self._taken[name] = v.take(self.segs.seg)
            return taken
        return v

    def bind(self, name: str, v: Value) -> Ctx:
        env = dict(self.env)
        env[name] = v
        levels = dict(self.levels)
        levels[name] = self.level
        return Ctx(self.state, self.m, env, levels, self.level, self.segs)

    def enter(self, segs: kernels.Segments, binds: dict[str, Value]) -> Ctx:
        env = dict(self.env)
        env.update(binds)
        levels = dict(self.levels)
        for k in binds:
            levels[k] = self.level + 1
        return Ctx(self.state, segs.size, env, levels, self.level + 1, segs)

    def frame(self) -> dict[str, Any]:
        """The reference frame of the pod-level names (``pod``, ``cluster``, constant lets / loop items)."""
        if self._frame is None:
            f = {k: v.value for k, v in self.env.items() if isinstance(v, Const)}
            f["pod"] = self.state.pod
            f["cluster"] = self.state.cluster
            self._frame = f
        return self._frame


def with_err(v: Value, err: Bools | None, kind: str, ctx: Ctx) -> Value:
    """``v`` carrying extra error rows (a constant becomes a column to carry them)."""
    if err is None:
        return v
    if isinstance(v, Const):
        col = from_python([v.value], kind, ctx.state.interner)
        v = Col(kind, np.repeat(col.data, ctx.m), None, col.den)
    if isinstance(v, MList):
        return MList(v.items, err_or(v.err, err))
    assert isinstance(v, Col)
    return Col(v.kind, v.data, err_or(v.err, err), v.den)


def err_of(v: Value) -> Bools | None:
    return getattr(v, "err", None) if isinstance(v, (Col, MList)) else None


# -------------------------------------------------------------------------------------- the scope


@dataclasses.dataclass(frozen=True)
class NInfo:
    """A node-dependent name: ``elem`` (an item of a ragged node list), or any other value."""

    kind: str  # "node" | "elem" | "val"
    level: int
    record: str = ""


Scope = dict[str, NInfo]


class Lowerer:
    """Lowers the expressions of one checked rule (see the module docstring)."""

    def __init__(self, checked: CheckedRule) -> None:
        self.info = checked.info
        self.ref = ExprCompiler(checked.info)
        self._free: dict[int, frozenset[str]] = {}
        self.notes: list[str] = []

    # -- analysis
    def type_of(self, e: Any) -> Type:
        return self.info.types[id(e)]

    def free(self, e: Any) -> frozenset[str]:
        """Names an expression reads that it does not bind itself."""
        got = self._free.get(id(e))
        if got is not None:
            return got
        out: set[str] = set()
        if isinstance(e, ast.Name):
            out.add(e.id)
        elif isinstance(e, (ast.Quantifier, ast.Aggregate, ast.Comprehension)):
            loop = e.loop
            out |= self.free(loop.iterable)
            inner: set[str] = set()
            for part in (loop.where, getattr(e, "body", None), getattr(e, "value", None)):
                if part is not None:
                    inner |= self.free(part)
            inner -= {b.name for b in loop.binders}
            out |= inner
            default = getattr(e, "default", None)
            if default is not None:
                out |= self.free(default)
        else:
            for child in _children(e):
                out |= self.free(child)
        res = frozenset(out)
        self._free[id(e)] = res
        return res

    # -- entry points
    def expr(self, e: Any, scope: Scope, level: int) -> Fn:
        deps = self.free(e) & scope.keys()
        if not deps:
            return self._pod_level(e)
        if len(deps) == 1:
            (name,) = deps
            info = scope[name]
            if info.kind == "elem" and info.record in _DISTINCT_RECORDS and kind_of(self.type_of(e)) is not None:
                return self._per_distinct(e, name, kind_of(self.type_of(e)))  # type: ignore[arg-type]
        method = getattr(self, "_" + type(e).__name__, None)
        if method is None:
            raise Unsupported(f"{type(e).__name__} on node values")
        return method(e, scope, level)  # type: ignore[no-any-return]

    def expr_as(self, e: Any, dst: Type, scope: Scope, level: int) -> Fn:
        """``expr`` promoted like the reference's ``as_type`` (int -> float / quantity, quantity -> float)."""
        fn = self.expr(e, scope, level)
        src = self.type_of(e)
        if (src, dst) in ((INT, FLOAT), (INT, QUANTITY), (QUANTITY, FLOAT)):
            kind = _KIND[dst]
            return lambda ctx: convert(fn(ctx), kind)
        return fn

    def _pod_level(self, e: Any) -> Fn:
        closure = self.ref.compile(e)

        def pod_level(ctx: Ctx) -> Value:
            try:
                return Const(closure(ctx.frame()))
            except Exception as exc:  # noqa: BLE001 -- the reference fails here too, on every row reaching it
                raise Poisoned(str(exc)) from None

        return pod_level

    def _per_distinct(self, e: Any, name: str, kind: str) -> Fn:
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

    # -- names, fields, indexes
    def _Name(self, e: ast.Name, scope: Scope, level: int) -> Fn:
        name = e.id
        return lambda ctx: ctx.lookup(name)

    def _Attr(self, e: ast.Attr, scope: Scope, level: int) -> Fn:
        obj = self.expr(e.obj, scope, level)
        t = self.type_of(e)
        field = e.name
        kind = kind_of(t)
        if isinstance(t, RecordT) and self._is_record_rows(e.obj, scope):
            raise Unsupported(f"record field .{field} of a node-dependent record")
        getter = operator.attrgetter(field)

        def attr(ctx: Ctx) -> Value:
            v = obj(ctx)
            if isinstance(v, Const):
                return Const(getter(v.value))
            if not isinstance(v, Rec):
                raise Poisoned(f"field .{field} of {type(v).__name__}")
            if kind is None:
                return Path(v, field)
            return v.gather(v.table.column(column_key("f", field, kind)))

        return attr

    def _is_record_rows(self, e: Any, scope: Scope) -> bool:
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

            def read_map(ctx: Ctx) -> Value:
                v, k = obj(ctx), key_fn(ctx)
                assert isinstance(k, Const)
                if isinstance(v, Const):
                    return Const(v.value.get(k.value, zero))
                if isinstance(v, Path):
                    col = v.rec.table.column(column_key("get", v.field, kind, k.value, zero))
                    return v.rec.gather(col)
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
                return ops._py(_py_list_index, v.value, i.value)
            assert isinstance(v, MList)
            return _mlist_index(v, i.value, kind, ctx)

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

    # -- operators
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
            return lambda ctx: ops.compare(op, a(ctx), ka, b(ctx), kb, ctx.state.interner)
        if isinstance(tr, ListT):
            a, b = self.expr(e.left, scope, level), self.expr(e.right, scope, level)
            return lambda ctx: _concat(a(ctx), b(ctx))
        if tr == STRING:
            a, b = self.expr(e.left, scope, level), self.expr(e.right, scope, level)
            return lambda ctx: _str_concat(a(ctx), b(ctx), ctx)
        kind = kind_of(tr)
        if kind not in ("int", "float", "q"):
            raise Unsupported(f"'{op}' giving {tr}")
        if tr == QUANTITY:
            a, b = self.expr(e.left, scope, level), self.expr(e.right, scope, level)
        else:
            a, b = self.expr_as(e.left, tr, scope, level), self.expr_as(e.right, tr, scope, level)
        return lambda ctx: ops.arith(op, a(ctx), b(ctx), kind)

    def _member(self, e: ast.Binary, ta: Type, tb: Type, scope: Scope, level: int) -> Fn:
        a, b = self.expr(e.left, scope, level), self.expr(e.right, scope, level)
        if isinstance(tb, MapT):
            def in_map(ctx: Ctx) -> Value:
                k, m = a(ctx), b(ctx)
                if isinstance(m, Path) and isinstance(k, Const):
                    return m.rec.gather(m.rec.table.column(column_key("has", m.field, map_key=k.value)))
                if isinstance(m, Const) and isinstance(k, Col):
                    d = m.value
                    return kernels.map_strings(lambda s: s in d, "bool", [k], ctx.state.interner)
                if isinstance(m, Const) and isinstance(k, Const):
                    return Const(k.value in m.value)
                raise Poisoned("a node-dependent key in a node-dependent map")

            return in_map
        if tb == STRING:
            return lambda ctx: _str_member(a(ctx), b(ctx), ctx)
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
                    acc = _or(acc, ops.compare("==", x, ka, Const(item), kb, interner), ctx)
                return acc
            assert isinstance(xs, MList)
            acc = Const(False)
            for mask, item in xs.items:
                same = _and_mask(ops.compare("==", x, ka, item, kb, interner), mask, ctx)
                acc = _or(acc, same, ctx)
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

    # -- loops
    def _loop(self, loop: ast.Loop, scope: Scope, level: int) -> tuple[str, Fn, Scope, int, str]:
        """How to iterate: ``("const" | "mlist" | "ragged", iterable fn, inner scope, inner level, record)``."""
        it = loop.iterable
        t = self.info.types[id(loop)]
        names = [b.name for b in loop.binders]
        if not (self.free(it) & scope.keys()):
            return "const", self._pod_level(it), scope, level, ""
        if isinstance(t, MapT):
            raise Unsupported("a loop over a node-dependent map")
        assert isinstance(t, ListT)
        elem_record = t.elem.name if isinstance(t.elem, RecordT) else ""
        if isinstance(it, ast.Attr) and isinstance(it.obj, ast.Name) and it.obj.id == "node" and "node" in scope:
            if level > 0:
                raise Unsupported("nested loops over node lists")
            inner = dict(scope)
            if len(names) == 2:
                inner[names[0]] = NInfo("val", level + 1)
            inner[names[-1]] = NInfo("elem", level + 1, elem_record)
            return "ragged", self.expr(it, scope, level), inner, level + 1, elem_record
        if isinstance(it, ast.Attr):
            raise Unsupported("a loop over a list field of a node-dependent record")
        inner = dict(scope)
        for n in names:
            inner[n] = NInfo("val", level)
        return "mlist", self.expr(it, scope, level), inner, level, elem_record

    def _unrolled(self, loop: ast.Loop, mode: str, it: Fn, where: Fn | None, ctx: Ctx) -> list[tuple[Mask, Ctx, Bools | None]]:
        """The items of a loop over a pod-level list or an MList: (presence, item ctx, error rows)."""
        names = [b.name for b in loop.binders]
        coll = it(ctx)
        out: list[tuple[Mask, Ctx, Bools | None]] = []
        items: list[tuple[Mask, list[Value]]] = []
        base_err: Bools | None = None
        if isinstance(coll, Const):
            c = coll.value
            is_map = isinstance(self.info.types[id(loop)], MapT)
            if len(names) == 1:
                items = [(True, [Const(x)]) for x in (sorted(c) if is_map else c)]
            elif is_map:
                items = [(True, [Const(k), Const(c[k])]) for k in sorted(c)]
            else:
                items = [(True, [Const(i), Const(x)]) for i, x in enumerate(c)]
        else:
            assert isinstance(coll, MList), coll
            base_err = coll.err
            rank: Any = np.zeros(ctx.m, dtype=np.int64)
            for mask, v in coll.items:
                if len(names) == 1:
                    items.append((mask, [v]))
                else:
                    items.append((mask, [Col("int", rank.copy()), v]))
                    rank = rank + (mask_array(mask, ctx.m).astype(np.int64))
        for mask, vals in items:
            if mask is False:
                continue
            ictx = ctx
            for n, v in zip(names, vals):
                ictx = ictx.bind(n, v)
            err = base_err
            if where is not None:
                try:
                    w = where(ictx)
                except Poisoned:
                    out.append((False, ictx, err_or(err, mask_array(mask, ctx.m).copy())))
                    continue
                wm, werr = ops.mask_of(w)
                err = err_or(err, _restrict(werr, mask))
                mask = mask_and(mask, wm)
                if mask is False or (isinstance(mask, np.ndarray) and not mask.any()):
                    if err is not None:
                        out.append((False, ictx, err))
                    continue
            out.append((mask, ictx, err))
        if base_err is not None and not out:
            out.append((False, ctx, base_err))
        return out

    def _ragged(self, it: Fn, names: list[str], record: str, field: str, ctx: Ctx) -> tuple[Ctx, kernels.Segments]:
        node = it(ctx)
        assert isinstance(node, Path)
        table = ctx.state.tables.element_table(field, record)
        rows = node.rec.rows
        segs, erows = kernels.elements(table.start[rows], table.count[rows])
        binds: dict[str, Value] = {names[-1]: Rec(table, erows)}
        if len(names) == 2:
            binds[names[0]] = Col("int", segs.within())
        return ctx.enter(segs, binds), segs

    def _loop_fns(self, e: Any, scope: Scope, level: int) -> tuple[str, Fn, Fn | None, Scope, int, str]:
        mode, it, inner, ilevel, record = self._loop(e.loop, scope, level)
        where = self.expr(e.loop.where, inner, ilevel) if e.loop.where is not None else None
        return mode, it, where, inner, ilevel, record

    def _Quantifier(self, e: ast.Quantifier, scope: Scope, level: int) -> Fn:
        mode, it, where, inner, ilevel, record = self._loop_fns(e, scope, level)
        body = self.expr(e.body, inner, ilevel)
        names = [b.name for b in e.loop.binders]
        is_all = e.kind == "all"
        if mode == "ragged":
            field = e.loop.iterable.name  # type: ignore[union-attr]

            def ragged(ctx: Ctx) -> Value:
                ictx, segs = self._ragged(it, names, record, field, ctx)
                present, err = _where_elems(where, ictx)
                try:
                    b = body(ictx)
                except Poisoned:
                    return Col("bool", np.zeros(ctx.m, dtype=np.bool_), err_or(segs.any(err), segs.any(mask_array(present, segs.size))))
                bm, berr = ops.mask_of(b)
                err = err_or(err, _restrict(berr, present))
                if is_all:
                    hits = mask_and(present, ~mask_array(bm, segs.size))
                    res = segs.count(hits) == 0
                else:
                    res = segs.count(mask_and(present, bm)) > 0
                return Col("bool", res, segs.any(err))

            return ragged

        def unrolled(ctx: Ctx) -> Value:
            acc: Mask = is_all
            err: Bools | None = None
            for present, ictx, ierr in self._unrolled(e.loop, mode, it, where, ctx):
                err = err_or(err, ierr)
                if present is False:
                    continue
                try:
                    b = body(ictx)
                except Poisoned:
                    err = err_or(err, mask_array(present, ctx.m).copy())
                    continue
                bm, berr = ops.mask_of(b)
                err = err_or(err, _restrict(berr, present))
                if is_all:
                    fail = mask_and(present, _not(bm))
                    acc = mask_and(acc, _not(fail))
                else:
                    acc = _mask_or(acc, mask_and(present, bm))
            if isinstance(acc, bool):
                return with_err(Const(acc), err, "bool", ctx)
            return Col("bool", acc, err)

        return unrolled

    def _Aggregate(self, e: ast.Aggregate, scope: Scope, level: int) -> Fn:
        mode, it, where, inner, ilevel, record = self._loop_fns(e, scope, level)
        names = [b.name for b in e.loop.binders]
        t = self.type_of(e)
        kind = kind_of(t)
        if kind is None:
            raise Unsupported(f"{e.kind} of {t}")
        value = self.expr_as(e.value, t, inner, ilevel) if e.value is not None else None
        default = self.expr_as(e.default, t, scope, level) if e.default is not None else None
        agg = e.kind
        if mode == "ragged":
            if agg in ("max", "min") and kind not in ("int", "float", "q"):
                raise Unsupported(f"{agg} of {t} over a node list")
            field = e.loop.iterable.name  # type: ignore[union-attr]

            def ragged(ctx: Ctx) -> Value:
                ictx, segs = self._ragged(it, names, record, field, ctx)
                present, err = _where_elems(where, ictx)
                if agg == "count":
                    return with_err(Col("int", segs.count(present)), segs.any(err), "int", ctx)
                assert value is not None
                try:
                    v = value(ictx)
                except Poisoned:
                    return with_err(Const(zero_value(t)), err_or(segs.any(err), segs.any(mask_array(present, segs.size))) or np.ones(ctx.m, dtype=np.bool_), kind, ctx)
                err = err_or(err, _restrict(err_of(v), present))
                out = _ragged_reduce(agg, kind, v, present, segs, ctx)
                if agg in ("max", "min"):
                    has = segs.count(present) > 0
                    if default is None:
                        out = with_err(out, ~has if not has.all() else None, kind, ctx)
                    elif not has.all():
                        d = default(ctx)
                        out = ops.select(Col("bool", has), out, d, kind, ctx.state.interner)
                return with_err(out, segs.any(err), kind, ctx)

            return ragged

        zero = zero_value(t)

        def unrolled(ctx: Ctx) -> Value:
            interner = ctx.state.interner
            err: Bools | None = None
            acc: Value = Const(0) if agg == "count" else Const(zero)
            has: Mask = False
            for present, ictx, ierr in self._unrolled(e.loop, mode, it, where, ctx):
                err = err_or(err, ierr)
                if present is False:
                    continue
                if agg == "count":
                    add = Const(1) if present is True else Col("int", present.astype(np.int64), None, 1, 1.0)
                    acc = ops.arith("+", acc, add, "int")
                    continue
                assert value is not None
                try:
                    v = value(ictx)
                except Poisoned:
                    err = err_or(err, mask_array(present, ctx.m).copy())
                    continue
                err = err_or(err, _restrict(err_of(v), present))
                pm: Value = Const(True) if present is True else Col("bool", present)
                if agg == "sum":
                    acc = ops.select(pm, ops.arith("+", acc, v, kind), acc, kind, interner)
                    continue
                if has is False:
                    acc = v
                else:
                    better = ops.compare("<" if agg == "min" else ">", v, kind, acc, kind, interner)
                    take = _and_mask(better, _not(has), ctx, either=True)
                    acc = ops.select(_and_mask(take, present, ctx), v, acc, kind, interner)
                has = _mask_or(has, present)
            if agg in ("max", "min"):
                if default is not None:
                    if has is not True:
                        acc = ops.select(_as_bool(has, ctx), acc, default(ctx), kind, interner)
                elif has is not True:
                    missing = ~mask_array(has, ctx.m)
                    acc = with_err(acc, missing, kind, ctx)
            return with_err(acc, err, kind, ctx)

        return unrolled

    def _Comprehension(self, e: ast.Comprehension, scope: Scope, level: int) -> Fn:
        mode, it, where, inner, ilevel, record = self._loop_fns(e, scope, level)
        t = self.type_of(e)
        elem = t.elem if isinstance(t, ListT) else t
        value = self.expr_as(e.value, elem, inner, ilevel)
        names = [b.name for b in e.loop.binders]
        if mode == "ragged":
            if not getattr(self, "_allow_ragged_list", False):
                raise Unsupported("a list built from a node list (only 'reject each' / len take one)")
            field = e.loop.iterable.name  # type: ignore[union-attr]

            def ragged(ctx: Ctx) -> Value:
                ictx, segs = self._ragged(it, names, record, field, ctx)
                present, err = _where_elems(where, ictx)
                v = value(ictx)
                err = err_or(err, _restrict(err_of(v), present))
                return RList(segs, present, v, segs.any(err))

            return ragged

        def unrolled(ctx: Ctx) -> Value:
            items: list[tuple[Mask, Value]] = []
            err: Bools | None = None
            for present, ictx, ierr in self._unrolled(e.loop, mode, it, where, ctx):
                err = err_or(err, ierr)
                if present is False:
                    continue
                try:
                    v = value(ictx)
                except Poisoned:
                    err = err_or(err, mask_array(present, ctx.m).copy())
                    v = Const(zero_value(elem))
                err = err_or(err, _restrict(err_of(v), present))
                items.append((present, v))
            return MList(items, err)

        return unrolled

    # -- calls
    def _Call(self, e: ast.Call, scope: Scope, level: int) -> Fn:
        kind, name = self.info.calls[id(e)]
        if kind == "generic":
            return self._generic(e, name, scope, level)
        if kind == "builtin":
            raise Unsupported(f"builtin {name}() with node-dependent arguments")
        sig = self.info.signatures[id(e)]
        assert isinstance(e.func, ast.Attr)
        tobj = self.type_of(e.func.obj)
        rec = tobj.name if isinstance(tobj, RecordT) else ""
        args_n = [bool(self.free(a) & scope.keys()) for a in e.args]
        obj_n = bool(self.free(e.func.obj) & scope.keys())
        node_params = [i for i, p in enumerate(sig.params) if p == RecordT("Node")]
        if rec == "Cluster" and not obj_n and node_params and all(
                n == (i in node_params) or not n for i, n in enumerate(args_n)):
            return self._cluster_column(e, name, sig, node_params, scope, level)
        if rec == "NodeSelectorTerm" and name == "matches" and args_n == [True]:
            return self._node_matcher(e, scope, level, term=True)
        if rec == "Pod" and name == "matches_node_affinity" and args_n == [True] and not obj_n:
            return self._node_matcher(e, scope, level, term=False)
        if rec == "Node" and name == "port_conflict" and obj_n and args_n == [False]:
            return self._port_conflict(e, scope, level)
        raise Unsupported(f"method {rec}.{name}() on node-dependent values")

    def _cluster_column(self, e: ast.Call, name: str, sig: Any, node_params: list[int], scope: Scope,
                        level: int) -> Fn:
        args = [self.expr_as(a, p, scope, level) for a, p in zip(e.args, sig.params)]
        kind = kind_of(sig.ret)
        if kind is None:
            raise Unsupported(f"cluster.{name}() returning {sig.ret}")
        fn = sig.fn

        node_set = frozenset(node_params)
        only_node = len(args) == 1 and node_params == [0]

        def column(ctx: Ctx) -> Value:
            vals = [a(ctx) for a in args]
            if only_node:
                nodes, others = vals, []
            else:
                nodes = [v for i, v in enumerate(vals) if i in node_set]
                others = [v for i, v in enumerate(vals) if i not in node_set]
            if not all(isinstance(v, Rec) for v in nodes) or not all(isinstance(v, Const) for v in others):
                raise Poisoned("cluster column arguments")
            rows = nodes[0].rows  # type: ignore[union-attr]
            if len(nodes) > 1 and any(v.rows is not rows and not np.array_equal(v.rows, rows)  # type: ignore[union-attr]
                                      for v in nodes):
                raise Poisoned("two different nodes")
            state = ctx.state
            cluster = state.cluster
            key = (name, *[id(v.value) for v in others])  # type: ignore[union-attr]
            hit = state.cluster_columns.get(key)
            if hit is not None:
                full, argv, same = hit
            else:
                full = same = None
                argv = tuple(v.value for v in others)  # type: ignore[union-attr]
                colfn = getattr(cluster, "column", None)
                if colfn is not None:
                    try:
                        uniform = getattr(cluster, "uniform", None)
                        same = uniform(name, *argv) if kind == "int" and uniform is not None else None
                        if same is not None:  # told without building the column
                            full = Const(same)
                        else:
                            data = np.asarray(colfn(name, *argv))
                            full = _uniform_or_col(kind, data)
                    except (KeyError, ValueError, NotImplementedError, TypeError):
                        full = same = None
                # keyed by the arguments' ids: keep them alive so no other object takes an id
                state.cluster_columns[key] = (full, argv, same)
            if state.recording is not None:
                state.recording.append((name, argv, same))
            if isinstance(full, Const):
                return full
            if isinstance(full, Col):
                return nodes[0].gather(full)  # type: ignore[union-attr]
            objects = state.tables.nodes.objects
            uniq, inv = np.unique(rows, return_inverse=True)
            out: list[Any] = []
            bad: list[bool] = []
            for r in uniq.tolist():
                call = [objects[r] if i in node_params else v.value for i, v in enumerate(vals)]  # type: ignore[union-attr]
                try:
                    out.append(fn(cluster, *call))
                    bad.append(False)
                except Exception:  # noqa: BLE001 -- the reference fails on this node too
                    out.append(kernels._ZERO[kind])
                    bad.append(True)
            col = from_python(out, kind, state.interner)
            err = np.array(bad, dtype=np.bool_)[inv] if any(bad) else None
            return Col(kind, col.data[inv], err_or(err, None if col.err is None else col.err[inv]), col.den)

        return column

    def _node_matcher(self, e: ast.Call, scope: Scope, level: int, term: bool) -> Fn:
        assert isinstance(e.func, ast.Attr)
        obj = self.expr(e.func.obj, scope, level)
        node = self.expr(e.args[0], scope, level)

        def matches(ctx: Ctx) -> Value:
            o, n = obj(ctx), node(ctx)
            if not isinstance(o, Const) or not isinstance(n, Rec):
                raise Poisoned("node matcher arguments")
            table, rows = n.table, n.rows
            m = rows.size

            def labels(key: str) -> tuple[Any, Any]:
                has = table.column(column_key("has", "labels", map_key=key)).data[rows]
                codes = table.column(column_key("get", "labels", "str", key, "")).data[rows]
                return has, codes

            def fields(key: str) -> tuple[Any, Any]:
                if key == "metadata.name":
                    return np.ones(m, dtype=np.bool_), table.column(column_key("f", "name", "str")).data[rows]
                return np.zeros(m, dtype=np.bool_), np.zeros(m, dtype=np.int32)

            interner = ctx.state.interner
            if term:
                return Col("bool", kernels.term_matches(o.value, labels, fields, interner, m))
            return Col("bool", kernels.required_node_affinity(o.value, labels, fields, interner, m))

        return matches

    def _port_conflict(self, e: ast.Call, scope: Scope, level: int) -> Fn:
        assert isinstance(e.func, ast.Attr)
        obj = self.expr(e.func.obj, scope, level)
        port = self.expr(e.args[0], scope, level)

        def conflict(ctx: Ctx) -> Value:
            n, p = obj(ctx), port(ctx)
            if not isinstance(n, Rec) or not isinstance(p, Const):
                raise Poisoned("port_conflict arguments")
            table = ctx.state.tables.element_table("used_ports", "HostPort")
            segs, erows = kernels.elements(table.start[n.rows], table.count[n.rows])
            codes = table.dcode[erows]
            uniq, inv = np.unique(codes, return_inverse=True)
            hit = np.array([p.value.conflicts(table.distinct[d]) for d in uniq.tolist()], dtype=np.bool_)
            return Col("bool", segs.count(hit[inv]) > 0 if segs.size else np.zeros(n.rows.size, dtype=np.bool_))

        return conflict

    def _generic(self, e: ast.Call, name: str, scope: Scope, level: int) -> Fn:
        t = self.type_of(e)
        if name in ("min", "max"):
            kind = kind_of(t)
            if kind is None:
                raise Unsupported(f"{name}() of {t}")
            args = [self.expr_as(a, t, scope, level) for a in e.args]
            smallest = name == "min"
            return lambda ctx: ops.pick([a(ctx) for a in args], kind, smallest, ctx.state.interner)
        arg = e.args[0]
        ta = self.type_of(arg)
        if name == "len":
            if isinstance(arg, ast.Comprehension):
                self._allow_ragged_list = True
                try:
                    x = self.expr(arg, scope, level)
                finally:
                    self._allow_ragged_list = False
            else:
                x = self.expr(arg, scope, level)
            return lambda ctx: _length(x(ctx), ctx)
        if name == "first":
            x = self.expr(arg, scope, level)
            return lambda ctx: _first(x(ctx), ctx)
        ka = kind_of(ta)
        if name in _STRING_GENERICS:  # lower(s), is_int(s), starts_with(s, t), ...: once per distinct string
            if not all(self.type_of(a) == STRING for a in e.args):
                raise Unsupported(f"{name}() of {', '.join(str(self.type_of(a)) for a in e.args)}")
            fn, kind_out = _STRING_GENERICS[name]
            xs = [self.expr(a, scope, level) for a in e.args]
            return lambda ctx: _map_strings(fn, kind_out, [x(ctx) for x in xs], ctx)
        if name == "str":
            if ka is None:
                raise Unsupported(f"str() of {ta}")
            x = self.expr(arg, scope, level)
            if ka == "str":
                return x
            # the reference's own formatting (Go's), once per distinct value; the result is interned
            return lambda ctx: ops.unary_map(_to_str, x(ctx), ka, "str", ctx.state.interner)
        if ka not in ("int", "float", "q") or name not in _NUMERIC_GENERICS:
            raise Unsupported(f"{name}() of {ta}")  # split(), int(s) / float(s) / quantity(s) of strings, ...
        x = self.expr(arg, scope, level)
        if name == "abs":
            return lambda ctx: ops.absolute(x(ctx), ka)
        if name in ("trunc", "round", "int"):  # int(x) of a number is trunc(x) (rt.go_trunc in both)
            rounding = name == "round"
            return lambda ctx: ops.trunc_round(x(ctx), ka, rounding)
        if name == "float":
            return lambda ctx: ops.to_float(x(ctx), ka)
        if name == "quantity":  # of an int or a quantity (the checker allows no other): exact, as Fraction(x)
            return lambda ctx: convert(x(ctx), "q")
        fn1 = rt.ln if name == "ln" else rt.sqrt
        return lambda ctx: ops.unary_map(fn1, x(ctx), ka, "float", ctx.state.interner)


_STRING_GENERICS: dict[str, tuple[Callable[..., Any], str]] = {
    "lower": (str.lower, "str"), "is_int": (rt.is_int, "bool"), "is_float": (rt.is_float, "bool"),
    "is_quantity": (rt.is_quantity, "bool"), "starts_with": (str.startswith, "bool"),
    "ends_with": (str.endswith, "bool"),
}
"""Generic builtins over strings, by name: the reference's function (closures._ONE_ARG_GENERICS /
_TWO_ARG_GENERICS) and the result's kind."""

_NUMERIC_GENERICS = frozenset({"abs", "trunc", "round", "int", "float", "quantity", "ln", "sqrt"})
"""Generic builtins of one number lowered by :meth:`Lowerer._generic`; any other name is Unsupported."""


def _map_strings(fn: Callable[..., Any], kind_out: str, args: list[Value], ctx: Ctx) -> Value:
    """``fn(*args)`` of string values: folded when every argument is a constant, else per distinct value."""
    consts = [a.value for a in args if isinstance(a, Const)]
    if len(consts) == len(args):
        return ops._py(fn, *consts)
    return kernels.map_strings(fn, kind_out, args, ctx.state.interner)


def _to_str(x: Any) -> str:
    """``str(x)`` exactly as the reference's :func:`~policyscheduler.compiler.builtins.to_str`, which tells
    bools and ints apart by their Python type: a numpy scalar is made a Python value first."""
    return rt.to_str(x.item() if isinstance(x, np.generic) else x)


# ------------------------------------------------------------------------------------------ helpers


def _uniform_or_col(kind: str, data: Any) -> Value:
    """A whole-cluster builtin column; a :class:`Const` when every node has the same value (no inter-pod
    term anywhere: all zeros), so the rest of the rule folds with the reference's scalar code."""
    if data.size and kind in ("int", "bool"):
        if not data.any():  # the usual uniform column: zeros (one pass)
            return Const(0 if kind == "int" else False)
        lo, hi = data.min(), data.max()
        if lo == hi:
            return Const(int(lo) if kind == "int" else bool(lo))
    bound = float(np.abs(data).max()) if kind == "int" and data.size else None
    return Col(kind, data, None, 1, bound)



def _children(e: Any) -> list[Any]:
    if isinstance(e, (ast.IntLit, ast.FloatLit, ast.QuantityLit, ast.StringLit, ast.BoolLit, ast.Name)):
        return []
    if isinstance(e, ast.ListLit):
        return list(e.items)
    if isinstance(e, ast.Attr):
        return [e.obj]
    if isinstance(e, ast.Call):
        return [e.func, *e.args] if not isinstance(e.func, ast.Name) else list(e.args)
    if isinstance(e, ast.Index):
        return [e.obj, e.index]
    if isinstance(e, ast.Unary):
        return [e.operand]
    if isinstance(e, ast.Binary):
        return [e.left, e.right]
    if isinstance(e, ast.IfExpr):
        return [e.cond, e.then, e.else_]
    raise TypeError(type(e).__name__)


def _py_list_index(xs: Any, i: int) -> Any:
    if not 0 <= i < len(xs):
        raise rt.EvalFailure(f"list index {i} out of range (length {len(xs)})")
    return xs[i]


def _restrict(err: Bools | None, mask: Mask) -> Bools | None:
    if err is None or mask is False:
        return None
    if mask is True:
        return err
    return err & mask


def _not(m: Mask) -> Mask:
    if isinstance(m, bool):
        return not m
    return ~m


def _mask_or(a: Mask, b: Mask) -> Mask:
    if a is True or b is True:
        return True
    if a is False:
        return b
    if b is False:
        return a
    return a | b


def _as_bool(m: Mask, ctx: Ctx) -> Value:
    return Const(m) if isinstance(m, bool) else Col("bool", m)


def _or(a: Value, b: Value, ctx: Ctx) -> Value:
    am, ae = ops.mask_of(a)
    bm, be = ops.mask_of(b)
    out = _mask_or(am, bm)
    return with_err(_as_bool(out, ctx), err_or(ae, be), "bool", ctx)


def _and_mask(v: Value, mask: Mask, ctx: Ctx, either: bool = False) -> Value:
    """``v and mask`` (``v or mask`` when ``either``), keeping ``v``'s errors."""
    vm, ve = ops.mask_of(v)
    out = _mask_or(vm, mask) if either else mask_and(vm, mask)
    return with_err(_as_bool(out, ctx), ve, "bool", ctx)


def _where_elems(where: Fn | None, ictx: Ctx) -> tuple[Mask, Bools | None]:
    if where is None:
        return True, None
    try:
        w = where(ictx)
    except Poisoned:
        return False, np.ones(ictx.m, dtype=np.bool_)
    return ops.mask_of(w)


def _ragged_reduce(agg: str, kind: str, v: Value, present: Mask, segs: kernels.Segments, ctx: Ctx) -> Value:
    """sum / max / min of element values per node row (sequential where the order matters)."""
    m = segs.m
    if isinstance(v, Const):
        col = from_python([v.value], kind, ctx.state.interner)
        v = Col(kind, np.repeat(col.data, max(segs.size, 0)), None, col.den)
    assert isinstance(v, Col)
    if kind == "q" and isinstance(v.den, np.ndarray):
        raise Poisoned("per-element quantity denominators")
    if agg == "sum" and kind in ("int", "q"):
        vals = v.data if present is True else np.where(present, v.data, 0)
        out, err = segs.sum_ints(vals)
        return Col(kind, out, err, v.den)
    data = v.data
    if agg == "sum":
        acc = np.zeros(m, dtype=np.float64)

        def add(rows: Any, pos: Any) -> None:
            acc[rows] = acc[rows] + data[pos]

        segs.fold(present, add)
        return Col("float", acc)
    acc2 = np.zeros(m, dtype=data.dtype)
    has = np.zeros(m, dtype=np.bool_)
    bigger = agg == "max"

    def pick(rows: Any, pos: Any) -> None:
        x = data[pos]
        cur = acc2[rows]
        better = (x > cur) if bigger else (x < cur)
        take = ~has[rows] | better
        acc2[rows] = np.where(take, x, cur)
        has[rows] = True

    segs.fold(present, pick)
    return Col(kind, acc2, None, v.den)


def _mlist_index(v: MList, i: int, kind: str, ctx: Ctx) -> Value:
    """``xs[i]`` per row: the i-th present item (an error where the list is shorter)."""
    m = ctx.m
    rank: Any = np.zeros(m, dtype=np.int64)
    found = np.zeros(m, dtype=np.bool_)
    out: Value | None = None
    for mask, item in v.items:
        pm = mask_array(mask, m)
        hit = pm & (rank == i)
        if hit.any():
            out = item if out is None else ops.select(Col("bool", hit), item, out, kind, ctx.state.interner)
            found |= hit
        rank = rank + pm.astype(np.int64)
    if out is None:
        raise Poisoned("list index out of range on every row")
    return with_err(out, err_or(v.err, ~found if not found.all() else None), kind, ctx)


def _length(v: Value, ctx: Ctx) -> Value:
    if isinstance(v, Const):
        return Const(len(v.value))
    if isinstance(v, Path):
        return v.rec.gather(v.rec.table.column(column_key("len", v.field)))
    if isinstance(v, MList):
        acc: Value = Const(0)
        for mask, _ in v.items:
            add = Const(1) if mask is True else Col("int", mask_array(mask, ctx.m).astype(np.int64), None, 1, 1.0)
            acc = ops.arith("+", acc, add, "int")
        return with_err(acc, v.err, "int", ctx)
    if isinstance(v, RList):
        return with_err(Col("int", v.segments.count(v.present)), v.err, "int", ctx)
    assert isinstance(v, Col) and v.kind == "str"
    return kernels.map_strings(len, "int", [v], ctx.state.interner)


def _first(v: Value, ctx: Ctx) -> Value:
    if isinstance(v, Const):
        return Const(rt.first(v.value))
    assert isinstance(v, MList)
    taken: Mask = False
    items: list[tuple[Mask, Value]] = []
    for mask, item in v.items:
        keep = mask_and(mask, _not(taken))
        if keep is not False:
            items.append((keep, item))
        taken = _mask_or(taken, mask)
        if taken is True:
            break
    return MList(items, v.err)


def _concat(a: Value, b: Value) -> Value:
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(tuple(a.value) + tuple(b.value))

    def items(v: Value) -> tuple[list[tuple[Mask, Value]], Bools | None]:
        if isinstance(v, Const):
            return [(True, Const(x)) for x in v.value], None
        assert isinstance(v, MList)
        return list(v.items), v.err

    ia, ea = items(a)
    ib, eb = items(b)
    return MList(ia + ib, err_or(ea, eb))


def _str_concat(a: Value, b: Value, ctx: Ctx) -> Value:
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(a.value + b.value)
    return kernels.map_strings(operator.add, "str", [a, b], ctx.state.interner)


def _str_member(a: Value, b: Value, ctx: Ctx) -> Value:
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(a.value in b.value)
    return kernels.map_strings(lambda x, y: x in y, "bool", [a, b], ctx.state.interner)


_ = Fraction  # quantities reach this module only as values
