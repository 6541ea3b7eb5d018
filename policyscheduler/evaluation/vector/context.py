"""What a lowered expression runs in: the pod's shared state, one evaluation domain and its names.

:class:`PodState` is built once per pod and shared by every rule; :class:`Ctx` is one domain (the node
rows, or the elements of a ragged loop) with the names bound in it. A lowered expression is a function
``Fn = fn(ctx) -> Value``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from policyscheduler.checker.types import BOOL, DURATION, FLOAT, INT, QUANTITY, STRING, TIMESTAMP, Type
from policyscheduler.evaluation.vector import kernels
from policyscheduler.evaluation.vector.values import Bools, Col, Const, MList, Rec, Value, err_or, from_python

__all__ = ["KIND", "Ctx", "Fn", "PodState", "err_of", "kind_of", "with_err"]

Fn = Callable[["Ctx"], Value]

KIND: dict[Type, str] = {BOOL: "bool", INT: "int", FLOAT: "float", STRING: "str", QUANTITY: "q",
                         TIMESTAMP: "int", DURATION: "int"}
"""The column kind of each scalar type (see :mod:`.values`): timestamps and durations are int64
nanoseconds (policyscheduler/times.py), so their comparisons and arithmetic are the int ones."""


def kind_of(t: Type) -> str | None:
    """The column kind of a scalar type; None for lists, maps and records."""
    return KIND.get(t)


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
        self.node_rows: tuple[Any, Rec, dict[tuple[Any, ...], tuple[Rec, Col]]] | None = None
        """The rows array the last rule ran on, its node :class:`Rec` and the columns gathered on it
        (:attr:`Ctx.gathered`), for the next rule on the same array (see ``program._start``)."""


class Ctx:
    """One evaluation domain (node rows, or the elements of a ragged loop) and the names bound in it."""

    __slots__ = ("_frame", "_taken", "env", "gathered", "level", "levels", "m", "segs", "state")

    def __init__(self, state: PodState, m: int, env: dict[str, Value], levels: dict[str, int], level: int,
                 segs: kernels.Segments | None, gathered: dict[tuple[Any, ...], tuple[Rec, Col]] | None = None) -> None:
        self.state = state
        self.m = m
        self.env = env
        self.levels = levels
        self.level = level
        self.segs = segs
        self._frame: dict[str, Any] | None = None
        self._taken: dict[str, Value] = {}
        self.gathered: dict[tuple[Any, ...], tuple[Rec, Col]] = {} if gathered is None else gathered
        """Table columns gathered on this domain's records, by (id of the records, column key): shared by
        every ctx :meth:`bind` derives, so one rule's evaluation gathers ``node.allocatable["cpu"]`` once
        however often it reads it, and by the next rules of the pod on the same rows (see
        ``program._start``); a new domain, :meth:`enter`, starts its own."""

    def lookup(self, name: str) -> Value:
        v = self.env[name]
        if self.level and self.levels.get(name, 0) < self.level:
            taken = self._taken.get(name)
            if taken is None:
                assert self.segs is not None
                taken = self._taken[name] = v.take(self.segs.seg)
            return taken
        return v

    def bind(self, name: str, v: Value) -> Ctx:
        env = dict(self.env)
        env[name] = v
        if self.level:
            levels = dict(self.levels)
            levels[name] = self.level
        else:
            # on the node rows every name is at level 0, which a name left out of ``levels`` reads as
            # (see :meth:`lookup`): the parent's levels are shared, not copied
            levels = self.levels
        out = Ctx(self.state, self.m, env, levels, self.level, self.segs, self.gathered)
        frame = self._frame
        if frame is not None and name not in ("pod", "cluster"):
            # the parent's reference frame with this name: what frame() would build, without a rebuild
            # per loop item
            frame = dict(frame)
            if isinstance(v, Const):
                frame[name] = v.value
            else:
                frame.pop(name, None)
            out._frame = frame
        return out

    def enter(self, segs: kernels.Segments, binds: dict[str, Value]) -> Ctx:
        env = dict(self.env)
        env.update(binds)
        levels = dict(self.levels)
        for k in binds:
            levels[k] = self.level + 1
        return Ctx(self.state, segs.size, env, levels, self.level + 1, segs)

    def gather(self, rec: Rec, key: tuple[Any, ...]) -> Col:
        """The table column ``key`` on the records ``rec``, gathered once per evaluation (see ``gathered``).
        The cache holds ``rec`` itself, so its id cannot be taken by another object while the entry lives."""
        k = (id(rec), key)
        hit = self.gathered.get(k)
        if hit is not None and hit[0] is rec:
            return hit[1]
        col: Col = rec.table.gather(key, None if rec.full else rec.rows)
        self.gathered[k] = (rec, col)
        return col

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

