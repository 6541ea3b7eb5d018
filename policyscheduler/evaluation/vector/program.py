"""Rule programs: the clauses of one lowered rule run over all nodes at once.

A filter's clauses run in order over the still-*alive* rows (a failed ``require`` stops a node, as in
the reference); every emitted reason is kept as (rows, reason value) and the per-node reason tuples are
formed at the end by grouping the rows with the same emission pattern, so Python work is per distinct
verdict, not per node. A score rule evaluates ``ignore node when`` then ``value``. Rows whose
evaluation failed (``err``) are returned for the reference closures to decide, with the exact
reference message.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from policyscheduler.checker.passes import CheckedRule
from policyscheduler.evaluation.arrays import amax, amin, constant_array, count_nonzero, filled, positions
from policyscheduler.evaluation.decision import NodeVerdict
from policyscheduler.evaluation.vector import ops
from policyscheduler.evaluation.vector.context import Ctx, Fn, PodState, err_of
from policyscheduler.evaluation.vector.lower import Lowerer
from policyscheduler.evaluation.vector.scope import NInfo, Scope
from policyscheduler.evaluation.vector.values import (
    Bools,
    Col,
    Const,
    Mask,
    MList,
    Poisoned,
    Rec,
    RList,
    Unsupported,
    Value,
    err_or,
    mask_and,
    mask_array,
    restrict,
)
from policyscheduler.syntax import ast


@dataclasses.dataclass(frozen=True)
class FilterProgram:
    """A lowered filter: ``(op, ...)`` steps in clause order."""

    name: str
    steps: tuple[tuple[Any, ...], ...]


@dataclasses.dataclass(frozen=True)
class ScoreProgram:
    """A lowered score rule: lets before ``ignore node when``, the clause, the other lets, ``value``."""

    name: str
    before: tuple[tuple[str, Fn], ...]
    ignore: Fn | None
    after: tuple[tuple[str, Fn], ...]
    value: Fn


def lower_rule(checked: CheckedRule | None) -> FilterProgram | ScoreProgram:
    """Lower one checked rule; raises :class:`Unsupported` (with the reason) when it cannot be."""
    if checked is None:
        raise Unsupported("the rule carries no checked form")
    rule = checked.rule
    low = Lowerer(checked)
    scope: Scope = {"node": NInfo("node", 0)}

    def let(c: ast.Let) -> tuple[str, Fn]:
        fn = low.expr(c.value, scope, 0)
        if low.free(c.value) & scope.keys():
            scope[c.name] = NInfo("val", 0)
        return c.name, fn

    if isinstance(rule, ast.FilterRule):
        steps: list[tuple[Any, ...]] = []
        for c in rule.clauses:
            if isinstance(c, ast.Let):
                steps.append(("let", *let(c)))
            elif isinstance(c, ast.Require):
                why = low.expr(c.else_, scope, 0) if c.else_ is not None else None
                steps.append(("require", low.expr(c.cond, scope, 0), why, checked.reason or ""))
            elif isinstance(c, ast.Reject):
                steps.append(("reject", low.expr(c.when, scope, 0), low.expr(c.reason, scope, 0)))
            elif isinstance(c, ast.RejectEach):
                low.allow_ragged_list = True
                try:
                    steps.append(("each", low.expr(c.reasons, scope, 0)))
                finally:
                    low.allow_ragged_list = False
        return FilterProgram(rule.name, tuple(steps))
    before: list[tuple[str, Fn]] = []
    after: list[tuple[str, Fn]] = []
    ignore: Fn | None = None
    value: Fn | None = None
    for c in rule.clauses:
        if isinstance(c, ast.Let):
            (after if ignore is not None else before).append(let(c))
        elif isinstance(c, ast.IgnoreWhen):
            ignore = low.expr(c.cond, scope, 0)
        elif isinstance(c, ast.Value):
            value = low.expr(c.value, scope, 0)
    assert value is not None
    return ScoreProgram(rule.name, tuple(before), ignore, tuple(after), value)


def _start(state: PodState, idx: np.ndarray) -> Ctx:
    """The node domain of one rule on the rows ``idx``. The score rules of a pod all run on the same
    array of feasible rows: they share its :class:`Rec` and the columns gathered on it
    (:attr:`PodState.node_rows`), so ``node.allocatable["cpu"]``, read by three resource rules, is
    gathered once per pod. The tables do not change while one pod is evaluated."""
    shared = state.node_rows
    if shared is not None and shared[0] is idx:
        return Ctx(state, idx.size, {"node": shared[1]}, {"node": 0}, 0, None, shared[2])
    n = len(state.tables.nodes.objects)
    full = idx.size == n and (n == 0 or (int(idx[0]) == 0 and int(idx[-1]) == n - 1))  # ascending slots
    rec = Rec(state.tables.nodes, idx, full)
    gathered: dict[tuple[Any, ...], tuple[Rec, Col]] = {}
    state.node_rows = (idx, rec, gathered)
    return Ctx(state, idx.size, {"node": rec}, {"node": 0}, 0, None, gathered)


def _rows(mask: Mask, m: int) -> Bools:
    return mask_array(mask, m) if not isinstance(mask, bool) else filled(m, mask, np.bool_)


def _empty(mask: Mask) -> bool:
    return mask is False or (isinstance(mask, np.ndarray) and not count_nonzero(mask))


def run_filter(prog: FilterProgram, state: PodState, idx: np.ndarray) -> tuple[np.ndarray, list[NodeVerdict], Bools]:
    """(codes per row, verdicts, rows the reference must decide) of one filter on the nodes ``idx``."""
    m = idx.size
    ctx = _start(state, idx)
    alive: Mask = True
    err: Bools | None = None
    emitted: list[tuple[Mask, Value]] = []
    for step in prog.steps:
        if _empty(alive):
            break
        op = step[0]
        try:
            if op == "let":
                v = step[2](ctx)
                err = err_or(err, restrict(err_of(v), alive))
                ctx = ctx.bind(step[1], v)
            elif op == "require":
                cm, cerr = ops.mask_of(step[1](ctx))
                err = err_or(err, restrict(cerr, alive))
                fails = mask_and(alive, cm is False if isinstance(cm, bool) else ~cm)
                if not _empty(fails):
                    emitted.append((fails, _reason(step[2], step[3], ctx, fails, m)))
                alive = mask_and(alive, cm)
            elif op == "reject":
                wm, werr = ops.mask_of(step[1](ctx))
                err = err_or(err, restrict(werr, alive))
                fire = mask_and(alive, wm)
                if not _empty(fire):
                    emitted.append((fire, _reason(step[2], None, ctx, fire, m)))
            else:
                v = step[1](ctx)
                err = err_or(err, restrict(err_of(v), alive))
                if isinstance(v, Const):
                    emitted.extend((alive, Const(s)) for s in v.value)
                elif isinstance(v, MList):
                    # an item no alive row holds (the usual "Insufficient x" of a resource that fits
                    # everywhere) emits nothing and restricts no error: left out of the grouping
                    for mk, item in v.items:
                        fire = mask_and(alive, mk)
                        if not _empty(fire):
                            emitted.append((fire, item))
                else:
                    assert isinstance(v, RList)
                    err = err_or(err, restrict(v.err, alive))
                    emitted.append((mask_and(alive, v.segments.count(v.present) > 0), v))
        except Poisoned:
            err = err_or(err, _rows(alive, m).copy())
            break
    # a reason that failed is an error of the rows that emitted it
    clean: list[tuple[Mask, Value]] = []
    for mask, v in emitted:
        if isinstance(v, _Failed):
            err = err_or(err, _rows(mask, m).copy())
        else:
            err = err_or(err, restrict(err_of(v), mask))
            clean.append((mask, v))
    errs = err if err is not None else constant_array(m, np.bool_, False)  # read-only, shared
    codes, verdicts = _compose(prog.name, clean, errs, m, state)
    return codes, verdicts, errs


class _Failed:
    """A reason expression that failed on every row that needed it."""


def _reason(fn: Fn | None, default: str | None, ctx: Ctx, rows: Mask, m: int) -> Value:
    if fn is None:
        return Const(default)
    try:
        return fn(ctx)
    except Poisoned:
        return _Failed()  # type: ignore[return-value]


def _compose(rule: str, emitted: Sequence[tuple[Mask, Value]], err: Bools, m: int,
             state: PodState) -> tuple[np.ndarray, list[NodeVerdict]]:
    """Group rows by what they emitted; one :class:`NodeVerdict` per distinct reason tuple."""
    codes = filled(m, -1, np.int32)
    if not emitted:
        return codes, []
    only = emitted[0][1]
    if len(emitted) == 1 and isinstance(only, Const):  # one constant reason: one verdict, no grouping
        rows = positions(_rows(emitted[0][0], m) & ~err)
        if rows.size == 0:
            return codes, []
        codes[rows] = 0
        reason = state.interner.string(state.interner.code(str(only.value)))
        return codes, [NodeVerdict(rule=rule, reasons=(reason,))]
    fired = np.zeros(m, dtype=np.bool_)
    for mask, _ in emitted:
        fired |= _rows(mask, m)
    fired &= ~err
    rows = positions(fired)
    if rows.size == 0:
        return codes, []
    interner = state.interner
    key = np.zeros(rows.size, dtype=np.int64)
    comps: list[np.ndarray] = []
    tuples: list[tuple[str, ...]] = []
    for mask, v in emitted:
        f = _rows(mask, m)[rows]
        if isinstance(v, Const):
            c = np.where(f, interner.code(str(v.value)) + 1, 0)
        elif isinstance(v, RList):
            c = _ragged_reasons(v, rows, f, tuples, interner)
        else:
            assert isinstance(v, Col) and v.kind == "str"
            c = np.where(f, v.data[rows].astype(np.int64) + 1, 0)
        comps.append(c)
        width = int(amax(c)) + 1
        if int(amax(key)) * width >= 2**40:
            _, key = np.unique(key, return_inverse=True)  # relabel before the key could overflow
            key = key.reshape(-1).astype(np.int64)
        key = key * width + c
    if int(amin(key)) == int(amax(key)):  # the usual case: every fired row emitted the same reasons
        first, inv = np.zeros(1, dtype=np.int64), np.zeros(rows.size, dtype=np.int64)
    else:
        _, first, inv = np.unique(key, return_index=True, return_inverse=True)
    verdicts: list[NodeVerdict] = []
    for j in first.tolist():
        reasons: list[str] = []
        for (_, v), c in zip(emitted, comps):
            code = int(c[j])
            if code == 0:
                continue
            if isinstance(v, RList):
                reasons.extend(tuples[code - 1])
            else:
                reasons.append(interner.string(code - 1))
        verdicts.append(NodeVerdict(rule=rule, reasons=tuple(reasons)))
    codes[rows] = inv.reshape(-1)
    return codes, verdicts


def _ragged_reasons(v: RList, rows: np.ndarray, fired: np.ndarray, tuples: list[tuple[str, ...]],
                    interner: Any) -> np.ndarray:
    """Per row, the code (1-based, 0 = nothing) of its tuple of reasons from a ragged comprehension."""
    segs = v.segments
    present = np.ones(segs.size, dtype=np.bool_) if v.present is True else np.asarray(v.present, dtype=np.bool_)
    value = v.value
    strings: list[str]
    if isinstance(value, Const):
        strings = [str(value.value)] * segs.size
    else:
        strings = interner.strings(value.data)
    index: dict[tuple[str, ...], int] = {t: i for i, t in enumerate(tuples)}
    out = np.zeros(rows.size, dtype=np.int64)
    for j, r in enumerate(rows.tolist()):
        if not fired[j]:
            continue
        b, e = int(segs.begins[r]), int(segs.ends[r])
        t = tuple(strings[k] for k in range(b, e) if present[k])
        if not t:
            continue
        code = index.get(t)
        if code is None:
            code = index[t] = len(tuples)
            tuples.append(t)
        out[j] = code + 1
    return out


def run_score(prog: ScoreProgram, state: PodState, idx: np.ndarray) -> tuple[np.ndarray, Bools, Bools]:
    """(raw int64 per row, ignored, rows the reference must decide) of one score rule on ``idx``."""
    m = idx.size
    ctx = _start(state, idx)
    err: Bools | None = None
    ignored: Mask = False
    try:
        for name, fn in prog.before:
            v = fn(ctx)
            err = err_or(err, err_of(v))
            ctx = ctx.bind(name, v)
        if prog.ignore is not None:
            ignored, ierr = ops.mask_of(prog.ignore(ctx))
            err = err_or(err, ierr)
    except Poisoned:
        everything = np.ones(m, dtype=np.bool_)
        return np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.bool_), everything
    # no node ignored (the usual case): the shared read-only "not ignored" array
    ignored_rows = constant_array(m, np.bool_, False) if ignored is False else _rows(ignored, m)
    # the rows the value is computed for; True (a Python bool) when no node is ignored, the usual case:
    # then an error is taken as it is, with no mask built and no pass over the rows to restrict it
    keep: Mask = True if ignored is False else ~ignored_rows
    raw: np.ndarray | None = None
    try:
        for name, fn in prog.after:
            v = fn(ctx)
            err = err_or(err, restrict(err_of(v), keep))
            ctx = ctx.bind(name, v)
        v = prog.value(ctx)
        err = err_or(err, restrict(err_of(v), keep))
        if isinstance(v, Const):
            if not -(2**63) <= v.value < 2**63:
                raise Poisoned("score leaves int64")
            raw = constant_array(m, np.int64, int(v.value))  # read-only, shared
        else:
            assert isinstance(v, Col) and v.kind == "int"
            raw = v.data.copy()  # may be a table column, which later pods update in place
    except Poisoned:
        err = err_or(err, _rows(keep, m).copy())
    if raw is None:  # the value failed: every kept row is an error, the raw values are never read
        raw = constant_array(m, np.int64, 0)
    errs = err if err is not None else constant_array(m, np.bool_, False)  # read-only, shared
    return raw, ignored_rows, errs
