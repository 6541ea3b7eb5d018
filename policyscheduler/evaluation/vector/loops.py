"""Lowering of loops: quantifiers (``all`` / ``any``), aggregates (``count`` / ``sum`` / ``max`` / ``min``)
and comprehensions.

Three ways to iterate, decided per loop from the iterable (:meth:`LoopLowering.loop_mode`):

* ``const`` -- a pod-level list or map: its (few) items are unrolled, the body is lowered once and run
  per item over the node columns;
* ``mlist`` -- a node-dependent list whose items are known but present on some rows only
  (:class:`~.values.MList`): unrolled the same way, each item with its presence mask;
* ``ragged`` -- a list field of the node itself (``node.taints``): the body runs once over the elements
  of every node at once (:class:`~.kernels.Segments`) and is reduced per node.

Anything else (maps of the node, nested loops over node lists, lists of a node-dependent record) raises
:class:`~.values.Unsupported`: the rule runs on the reference.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar, Literal

import numpy as np

from policyscheduler.checker.types import ListT, MapT, RecordT, zero_value
from policyscheduler.evaluation.arrays import all_true, count_nonzero
from policyscheduler.evaluation.vector import kernels, ops
from policyscheduler.evaluation.vector.base import LowerBase, _is_literal
from policyscheduler.evaluation.vector.context import Ctx, Fn, err_of, kind_of, with_err
from policyscheduler.evaluation.vector.rows import and_mask, as_bool, ragged_reduce, where_elems
from policyscheduler.evaluation.vector.scope import NInfo, Scope
from policyscheduler.evaluation.vector.values import (
    INT_GUARD,
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
    err_or,
    mask_and,
    mask_array,
    mask_not,
    mask_or,
    restrict,
)
from policyscheduler.syntax import ast

__all__ = ["LoopLowering"]

Looped = ast.Quantifier | ast.Aggregate | ast.Comprehension


class _ErrorRows:
    """The error rows an unrolled loop gathers while :func:`_each_value` walks its items."""

    def __init__(self) -> None:
        self.rows: Bools | None = None

    def add(self, rows: Bools | None) -> None:
        self.rows = err_or(self.rows, rows)


def _each_value(items: Iterable[tuple[Mask, Ctx, Bools | None, Fn | None]], m: int, errors: _ErrorRows,
                poisoned: Callable[[], Value] | None = None) -> Iterator[tuple[Bools | Literal[True], Value | None]]:
    """The present items of an unrolled loop (:meth:`LoopLowering._unrolled`) with the item's value
    function run on each: (presence, value). The three loops share this bookkeeping: an item's own error
    rows, its value's (on the item's rows only) and, when the function raises :class:`Poisoned`, all the
    item's rows go to ``errors``; a poisoned item is then skipped, or yields ``poisoned()`` in its place
    when that is given. Without a function (``count``) only the presence is yielded."""
    for present, ictx, ierr, fn in items:
        errors.add(ierr)
        if present is False:
            continue
        if fn is None:
            yield present, None
            continue
        try:
            v = fn(ictx)
        except Poisoned:
            errors.add(mask_array(present, m).copy())
            if poisoned is None:
                continue
            v = poisoned()
        errors.add(restrict(err_of(v), present))
        yield present, v


@dataclasses.dataclass(frozen=True)
class _Plan:
    """How one loop iterates (:meth:`LoopLowering.loop_plan`): ``mode`` is ``const``, ``mlist``, ``ragged``
    or ``static``. ``static`` holds the items of a literal list the iterable starts with, each with its
    ``where`` and value lowered for that item (the item known at lowering); ``it`` / ``where`` / ``value``
    are then those of the pod-level rest of the list (``it`` None: there is none)."""

    mode: str
    it: Fn | None
    where: Fn | None
    value: Fn | None
    inner: Scope
    level: int
    record: str
    static: tuple[tuple[tuple[tuple[str, Const], ...], Fn | None, Fn | None], ...] = ()
    names: tuple[str, ...] = ()
    """The loop's binder names."""
    is_map: bool = False
    """Whether the iterable is a map (its keys are iterated in sorted order)."""
    static_items: tuple[tuple[Mask, list[Value], Fn | None, Fn | None], ...] = dataclasses.field(init=False)
    """``static`` as :meth:`LoopLowering._unrolled` iterates it (present everywhere, the items' values),
    made once here rather than per run."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "static_items",
                           tuple((True, [c for _, c in binds], where, value) for binds, where, value in self.static))


class LoopLowering(LowerBase):
    """The visitor methods of the three loop expressions."""

    partial: ClassVar[bool] = True

    def loop_mode(self, loop: ast.Loop, scope: Scope, level: int) -> tuple[str, Fn, Scope, int, str]:
        """How to iterate: ``("const" | "mlist" | "ragged", iterable fn, inner scope, inner level, record)``."""
        it = loop.iterable
        t = self.info.types[id(loop)]
        names = [b.name for b in loop.binders]
        if not (self.free(it) & scope.keys()):
            return "const", self.pod_level(it), scope, level, ""
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

    def _static_items(self, loop: ast.Loop, scope: Scope) -> tuple[list[Any], ast.Expr | None] | None:
        """(the items, the pod-level rest) when the loop's iterable is a literal list, or a literal list
        ``+`` a pod-level list of the same type: those items are known at lowering. None otherwise."""
        it = loop.iterable
        t = self.info.types[id(loop)]
        if not isinstance(t, ListT) or len(loop.binders) > 2:
            return None
        head, rest = it, None
        if isinstance(it, ast.Binary) and it.op == "+" and self.type_of(it.left) == self.type_of(it) \
                and self.type_of(it.right) == self.type_of(it) and not self.node_dependent(it.right, scope):
            head, rest = it.left, it.right
        if not (isinstance(head, ast.ListLit) and _is_literal(head)):
            return None
        known = self.known
        self.known = {}
        try:
            items = self._fold(head)
        finally:
            self.known = known
        if items is None or not isinstance(items.value, (list, tuple)):
            return None
        return list(items.value), rest

    def loop_plan(self, e: Looped, scope: Scope, level: int, lower_value: Callable[[Scope, int], Fn | None]) -> _Plan:
        """The loop's iteration (:meth:`loop_mode`) with its ``where`` and value (``lower_value``) lowered:
        once per item known at lowering (a literal list: :meth:`_static_items`), with the item bound in
        ``known``, and once for the items known per pod or per row. The loop's binders are taken out of
        ``known`` while the generic bodies are lowered: there they are the loop's own, not an outer one."""
        loop = e.loop
        names = [b.name for b in loop.binders]
        outer = self.known
        static = self._static_items(loop, scope)

        def lower(known: dict[str, Any], inner: Scope, ilevel: int) -> tuple[Fn | None, Fn | None]:
            self.known = known
            try:
                where = self.expr(loop.where, inner, ilevel) if loop.where is not None else None
                return where, lower_value(inner, ilevel)
            finally:
                self.known = outer

        shadowed = {k: v for k, v in outer.items() if k not in names}
        binders = tuple(names)
        is_map = isinstance(self.info.types[id(loop)], MapT)
        if static is None:
            mode, it, inner, ilevel, record = self.loop_mode(loop, scope, level)
            where, value = lower(shadowed, inner, ilevel)
            return _Plan(mode, it, where, value, inner, ilevel, record, (), binders, is_map)
        items, rest = static
        lowered: list[tuple[tuple[tuple[str, Const], ...], Fn | None, Fn | None]] = []
        for i, x in enumerate(items):
            vals = [i, x] if len(names) == 2 else [x]
            binds = tuple((n, Const(v)) for n, v in zip(names, vals))
            where, value = lower({**shadowed, **dict(zip(names, vals))}, scope, level)
            lowered.append((binds, where, value))
        if rest is None:
            return _Plan("static", None, None, None, scope, level, "", tuple(lowered), binders, is_map)
        where, value = lower(shadowed, scope, level)
        return _Plan("static", self.pod_level(rest), where, value, scope, level, "", tuple(lowered), binders, is_map)

    def _unrolled(self, loop: ast.Loop, plan: _Plan, ctx: Ctx) -> list[tuple[Mask, Ctx, Bools | None, Fn | None]]:
        """The items of a loop over a pod-level list or an MList: (presence, item ctx, error rows, the
        item's value function)."""
        names = plan.names
        coll = plan.it(ctx) if plan.it is not None else None  # a failing rest fails the loop, as one list
        out: list[tuple[Mask, Ctx, Bools | None, Fn | None]] = []
        items: list[tuple[Mask, list[Value], Fn | None, Fn | None]] = list(plan.static_items)
        base_err: Bools | None = None
        static = plan.static
        if isinstance(coll, Const):
            c = coll.value
            is_map = plan.is_map
            pw, pf = plan.where, plan.value
            if len(names) == 1:
                items.extend((True, [Const(x)], pw, pf) for x in (sorted(c) if is_map else c))
            elif is_map:
                items.extend((True, [Const(k), Const(c[k])], pw, pf) for k in sorted(c))
            else:
                start = len(static)
                items.extend((True, [Const(start + i), Const(x)], pw, pf) for i, x in enumerate(c))
        elif coll is not None:
            assert isinstance(coll, MList), coll
            base_err = coll.err
            rank: Any = np.zeros(ctx.m, dtype=np.int64)
            for mask, v in coll.items:
                if len(names) == 1:
                    items.append((mask, [v], plan.where, plan.value))
                else:
                    items.append((mask, [Col("int", rank.copy()), v], plan.where, plan.value))
                    rank = rank + (mask_array(mask, ctx.m).astype(np.int64))
        for mask, vals, where_fn, value in items:
            if mask is False:
                continue
            ictx = ctx
            for n, v in zip(names, vals):
                ictx = ictx.bind(n, v)
            err = base_err
            if where_fn is not None:
                try:
                    w = where_fn(ictx)
                except Poisoned:
                    out.append((False, ictx, err_or(err, mask_array(mask, ctx.m).copy()), value))
                    continue
                wm, werr = ops.mask_of(w)
                err = err_or(err, restrict(werr, mask))
                mask = mask_and(mask, wm)
                hits = count_nonzero(mask) if isinstance(mask, np.ndarray) else -1
                if mask is False or hits == 0:
                    if err is not None:
                        out.append((False, ictx, err, value))
                    continue
                if hits == ctx.m:  # present on every row: the item is unconditional (cheaper downstream:
                    mask = True    # no select per item, a count or len that folds to a constant)
            out.append((mask, ictx, err, value))
        if base_err is not None and not out:
            out.append((False, ctx, base_err, None))
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

    def _Quantifier(self, e: ast.Quantifier, scope: Scope, level: int) -> Fn:
        plan = self.loop_plan(e, scope, level, lambda inner, ilevel: self.expr(e.body, inner, ilevel))
        mode, it, where, body, record = plan.mode, plan.it, plan.where, plan.value, plan.record
        names = [b.name for b in e.loop.binders]
        is_all = e.kind == "all"
        if mode == "ragged":
            assert it is not None and body is not None
            field = e.loop.iterable.name  # type: ignore[union-attr]

            def ragged(ctx: Ctx) -> Value:
                ictx, segs = self._ragged(it, names, record, field, ctx)
                present, err = where_elems(where, ictx)
                try:
                    b = body(ictx)
                except Poisoned:
                    return Col("bool", np.zeros(ctx.m, dtype=np.bool_), err_or(segs.any(err), segs.any(mask_array(present, segs.size))))
                bm, berr = ops.mask_of(b)
                err = err_or(err, restrict(berr, present))
                if is_all:
                    hits = mask_and(present, ~mask_array(bm, segs.size))
                    res = segs.count(hits) == 0
                else:
                    res = segs.count(mask_and(present, bm)) > 0
                return Col("bool", res, segs.any(err))

            return ragged

        def unrolled(ctx: Ctx) -> Value:
            acc: Mask = is_all
            errors = _ErrorRows()
            for present, b in _each_value(self._unrolled(e.loop, plan, ctx), ctx.m, errors):
                assert b is not None
                bm, _ = ops.mask_of(b)
                if is_all:
                    fail = mask_and(present, mask_not(bm))
                    acc = mask_and(acc, mask_not(fail))
                else:
                    acc = mask_or(acc, mask_and(present, bm))
            err = errors.rows
            if isinstance(acc, bool):
                return with_err(Const(acc), err, "bool", ctx)
            return Col("bool", acc, err)

        return unrolled

    def _Aggregate(self, e: ast.Aggregate, scope: Scope, level: int) -> Fn:
        names = [b.name for b in e.loop.binders]
        t = self.type_of(e)
        kind = kind_of(t)
        if kind is None:
            raise Unsupported(f"{e.kind} of {t}")
        ev = e.value
        plan = self.loop_plan(e, scope, level,
                              lambda inner, ilevel: self.expr_as(ev, t, inner, ilevel) if ev is not None else None)
        mode, it, where, value, record = plan.mode, plan.it, plan.where, plan.value, plan.record
        default = self.expr_as(e.default, t, scope, level) if e.default is not None else None
        agg = e.kind
        if mode == "ragged":
            if agg in ("max", "min") and kind not in ("int", "float", "q"):
                raise Unsupported(f"{agg} of {t} over a node list")
            field = e.loop.iterable.name  # type: ignore[union-attr]

            assert it is not None

            def ragged(ctx: Ctx) -> Value:
                ictx, segs = self._ragged(it, names, record, field, ctx)
                present, err = where_elems(where, ictx)
                if agg == "count":
                    return with_err(Col("int", segs.count(present)), segs.any(err), "int", ctx)
                assert value is not None
                try:
                    v = value(ictx)
                except Poisoned:
                    return with_err(Const(zero_value(t)), err_or(segs.any(err), segs.any(mask_array(present, segs.size))) or np.ones(ctx.m, dtype=np.bool_), kind, ctx)
                err = err_or(err, restrict(err_of(v), present))
                out = ragged_reduce(agg, kind, v, present, segs, ctx)
                if agg in ("max", "min"):
                    has = segs.count(present) > 0
                    if default is None:
                        out = with_err(out, ~has if not all_true(has) else None, kind, ctx)
                    elif not all_true(has):
                        d = default(ctx)
                        out = ops.select(Col("bool", has), out, d, kind, ctx.state.interner)
                return with_err(out, segs.any(err), kind, ctx)

            return ragged

        zero = zero_value(t)

        def unrolled(ctx: Ctx) -> Value:
            interner = ctx.state.interner
            errors = _ErrorRows()
            acc: Value = Const(0) if agg == "count" else Const(zero)
            has: Mask = False
            summed = False  # acc is still the zero it started as
            items = self._unrolled(e.loop, plan, ctx)
            if agg == "count":
                items = [(p, c, er, None) for p, c, er, _ in items]
            for present, v in _each_value(items, ctx.m, errors):
                if agg == "count":
                    add = Const(1) if present is True else Col("int", present.astype(np.int64), None, 1, 1.0)
                    acc = ops.arith("+", acc, add, "int")
                    continue
                assert v is not None
                pm: Value = Const(True) if present is True else Col("bool", present)
                if agg == "sum":
                    if (not summed and present is True and type(v) is Col and v.kind == kind in ("int", "q")
                            and v.bound is not None and v.bound < INT_GUARD):
                        acc = v  # the first item on every row: 0 + v, exact, no overflow to flag, is v
                    else:
                        acc = ops.select(pm, ops.arith("+", acc, v, kind), acc, kind, interner)
                    summed = True
                    continue
                if has is False:
                    acc = v
                else:
                    better = ops.compare("<" if agg == "min" else ">", v, kind, acc, kind, interner)
                    take = and_mask(better, mask_not(has), ctx, either=True)
                    acc = ops.select(and_mask(take, present, ctx), v, acc, kind, interner)
                has = mask_or(has, present)
            if agg in ("max", "min"):
                if default is not None:
                    if has is not True:
                        acc = ops.select(as_bool(has, ctx), acc, default(ctx), kind, interner)
                elif has is not True:
                    missing = ~mask_array(has, ctx.m)
                    acc = with_err(acc, missing, kind, ctx)
            return with_err(acc, errors.rows, kind, ctx)

        return unrolled

    def _Comprehension(self, e: ast.Comprehension, scope: Scope, level: int) -> Fn:
        t = self.type_of(e)
        elem = t.elem if isinstance(t, ListT) else t
        plan = self.loop_plan(e, scope, level, lambda inner, ilevel: self.expr_as(e.value, elem, inner, ilevel))
        mode, it, where, value, record = plan.mode, plan.it, plan.where, plan.value, plan.record
        names = [b.name for b in e.loop.binders]
        if mode == "ragged":
            assert it is not None and value is not None
            if not self.allow_ragged_list:
                raise Unsupported("a list built from a node list (only 'reject each' / len take one)")
            field = e.loop.iterable.name  # type: ignore[union-attr]

            def ragged(ctx: Ctx) -> Value:
                ictx, segs = self._ragged(it, names, record, field, ctx)
                present, err = where_elems(where, ictx)
                v = value(ictx)
                err = err_or(err, restrict(err_of(v), present))
                return RList(segs, present, v, segs.any(err))

            return ragged

        def unrolled(ctx: Ctx) -> Value:
            items: list[tuple[Mask, Value]] = []
            errors = _ErrorRows()
            unrolled_items = self._unrolled(e.loop, plan, ctx)
            for present, v in _each_value(unrolled_items, ctx.m, errors, poisoned=lambda: Const(zero_value(elem))):
                assert v is not None
                items.append((present, v))
            return MList(items, errors.rows)

        return unrolled
