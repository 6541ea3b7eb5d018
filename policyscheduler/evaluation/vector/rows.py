"""Value helpers of the lowering: per-row operations on :mod:`.values` that need an evaluation domain.

Lists with per-row presence (:class:`~.values.MList`), ragged reductions over a node list's elements,
``len`` / ``first`` / ``+`` of lists and strings, and boolean values combined with masks while keeping
their error rows. Pure functions of values and a :class:`~.context.Ctx`; the lowering's visitor methods
(:mod:`.scalar`, :mod:`.loops`, :mod:`.calls`) call them from the functions they build.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from policyscheduler.compiler import builtins as rt
from policyscheduler.evaluation.arrays import all_true, count_nonzero
from policyscheduler.evaluation.vector import kernels, ops
from policyscheduler.evaluation.vector.columns import column_key
from policyscheduler.evaluation.vector.context import Ctx, Fn, with_err
from policyscheduler.evaluation.vector.values import (
    Bools,
    Col,
    Const,
    Mask,
    MList,
    Path,
    Poisoned,
    RList,
    Value,
    err_or,
    from_python,
    mask_and,
    mask_array,
    mask_not,
    mask_or,
)

__all__ = ["and_mask", "as_bool", "concat", "first", "length", "mlist_index", "or_values", "py_list_index",
           "ragged_reduce", "str_concat", "str_member", "where_elems"]


def py_list_index(xs: Any, i: int) -> Any:
    if not 0 <= i < len(xs):
        raise rt.EvalFailure(f"list index {i} out of range (length {len(xs)})")
    return xs[i]




def as_bool(m: Mask, ctx: Ctx) -> Value:
    return Const(m) if isinstance(m, bool) else Col("bool", m)


def or_values(a: Value, b: Value, ctx: Ctx) -> Value:
    am, ae = ops.mask_of(a)
    bm, be = ops.mask_of(b)
    out = mask_or(am, bm)
    return with_err(as_bool(out, ctx), err_or(ae, be), "bool", ctx)


def and_mask(v: Value, mask: Mask, ctx: Ctx, either: bool = False) -> Value:
    """``v and mask`` (``v or mask`` when ``either``), keeping ``v``'s errors."""
    vm, ve = ops.mask_of(v)
    out = mask_or(vm, mask) if either else mask_and(vm, mask)
    return with_err(as_bool(out, ctx), ve, "bool", ctx)


def where_elems(where: Fn | None, ictx: Ctx) -> tuple[Mask, Bools | None]:
    if where is None:
        return True, None
    try:
        w = where(ictx)
    except Poisoned:
        return False, np.ones(ictx.m, dtype=np.bool_)
    return ops.mask_of(w)


def ragged_reduce(agg: str, kind: str, v: Value, present: Mask, segs: kernels.Segments, ctx: Ctx) -> Value:
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


def mlist_index(v: MList, i: int, kind: str, ctx: Ctx) -> Value:
    """``xs[i]`` per row: the i-th present item (an error where the list is shorter)."""
    m = ctx.m
    if 0 <= i < len(v.items) and all(mask is True for mask, _ in v.items[: i + 1]):
        return with_err(v.items[i][1], v.err, kind, ctx)  # items 0..i on every row: item i is xs[i] everywhere
    rank: Any = np.zeros(m, dtype=np.int64)
    found = np.zeros(m, dtype=np.bool_)
    out: Value | None = None
    for mask, item in v.items:
        pm = mask_array(mask, m)
        hit = pm & (rank == i)
        if count_nonzero(hit):
            out = item if out is None else ops.select(Col("bool", hit), item, out, kind, ctx.state.interner)
            found |= hit
        rank = rank + pm.astype(np.int64)
    if out is None:
        raise Poisoned("list index out of range on every row")
    return with_err(out, err_or(v.err, ~found if not all_true(found) else None), kind, ctx)


def length(v: Value, ctx: Ctx) -> Value:
    if isinstance(v, Const):
        return Const(len(v.value))
    if isinstance(v, Path):
        return ctx.gather(v.rec, column_key("len", v.field))
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


def first(v: Value, ctx: Ctx) -> Value:
    if isinstance(v, Const):
        return Const(rt.first(v.value))
    assert isinstance(v, MList)
    taken: Mask = False
    items: list[tuple[Mask, Value]] = []
    for mask, item in v.items:
        keep = mask_and(mask, mask_not(taken))
        if keep is not False:
            items.append((keep, item))
        taken = mask_or(taken, mask)
        if taken is True:
            break
    return MList(items, v.err)


def concat(a: Value, b: Value) -> Value:
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


def str_concat(a: Value, b: Value, ctx: Ctx) -> Value:
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(a.value + b.value)
    return kernels.map_strings(operator.add, "str", [a, b], ctx.state.interner)


def str_member(a: Value, b: Value, ctx: Ctx) -> Value:
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(a.value in b.value)
    return kernels.map_strings(lambda x, y: x in y, "bool", [a, b], ctx.state.interner)

