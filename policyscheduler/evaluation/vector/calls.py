"""Lowering of calls: builtins over the whole cluster, node matchers, generic functions of values.

``cluster.NAME(..., node, ...)`` with a whole-cluster column (inter-pod counts, image scores) becomes one
column per pod, shared by every rule through :attr:`~.context.PodState.cluster_columns`; a node selector
term or the pod's required node affinity matched against the node become label-column kernels;
``node.port_conflict(p)`` runs over the node's distinct host ports; generic functions (``len``, ``min``,
``lower`` ...) run per column or per distinct value. Any other call on node-dependent values raises
:class:`~.values.Unsupported`, by an explicit decision: the rule runs on the reference.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from policyscheduler import times
from policyscheduler.checker.env import FuncSig
from policyscheduler.checker.types import DURATION, STRING, TIMESTAMP, RecordT
from policyscheduler.compiler import builtins as rt
from policyscheduler.evaluation.arrays import amax, amin, count_nonzero
from policyscheduler.evaluation.vector import kernels, ops
from policyscheduler.evaluation.vector.base import LowerBase
from policyscheduler.evaluation.vector.columns import column_key
from policyscheduler.evaluation.vector.context import Ctx, Fn, kind_of
from policyscheduler.evaluation.vector.rows import first, length
from policyscheduler.evaluation.vector.scope import Scope
from policyscheduler.evaluation.vector.values import (
    Col,
    Const,
    Poisoned,
    Rec,
    Unsupported,
    Value,
    convert,
    err_or,
    from_python,
)
from policyscheduler.syntax import ast

__all__ = ["CallLowering"]


class CallLowering(LowerBase):
    """The visitor method of calls and the lowerings it picks between."""

    partial: ClassVar[bool] = True

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

    def _cluster_column(self, e: ast.Call, name: str, sig: FuncSig, node_params: list[int], scope: Scope,
                        level: int) -> Fn:
        args = [self.expr_as(a, p, scope, level) for a, p in zip(e.args, sig.params)]
        kind = kind_of(sig.ret)
        if kind is None:
            raise Unsupported(f"cluster.{name}() returning {sig.ret}")
        fn = sig.fn
        if fn is None:
            raise Unsupported(f"cluster.{name}() has no Python function to run per node")

        node_set = frozenset(node_params)
        only_node = len(args) == 1 and node_params == [0]

        only_key = (name,)
        only_arg = args[0] if only_node else None
        # the positions of the node arguments and of the others, split once, here
        node_ix = tuple(node_params)
        other_ix = tuple(i for i in range(len(args)) if i not in node_set)

        def column(ctx: Ctx) -> Value:
            if only_arg is not None:  # cluster.NAME(node): one Rec, the key known here
                first_node = only_arg(ctx)
                if type(first_node) is not Rec:
                    raise Poisoned("cluster column arguments")
                others: list[Value] = []
                key: tuple[Any, ...] = only_key
            else:
                vals = [a(ctx) for a in args]
                others = [vals[i] for i in other_ix]
                for i in node_ix:
                    if not isinstance(vals[i], Rec):
                        raise Poisoned("cluster column arguments")
                for v in others:
                    if not isinstance(v, Const):
                        raise Poisoned("cluster column arguments")
                first_node = vals[node_ix[0]]
                if len(node_ix) > 1:
                    rows0 = first_node.rows  # type: ignore[union-attr]
                    if any(vals[i].rows is not rows0 and not np.array_equal(vals[i].rows, rows0)  # type: ignore[union-attr]
                           for i in node_ix):
                        raise Poisoned("two different nodes")
                key = (name, *[id(v.value) for v in others])  # type: ignore[union-attr]
            assert isinstance(first_node, Rec)
            rows = first_node.rows
            state = ctx.state
            cluster = state.cluster
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
            if type(full) is Const:
                return full
            if type(full) is Col:
                return first_node.gather(full)
            objects = state.tables.nodes.objects
            uniq, inv = np.unique(rows, return_inverse=True)
            out: list[Any] = []
            bad: list[bool] = []
            for r in uniq.tolist():
                rest = iter(argv)
                call = [objects[r] if i in node_set else next(rest) for i in range(len(args))]
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

    def _parse_time(self, e: ast.Call, name: str, scope: Scope, level: int) -> Fn:
        """``timestamp(s[, default D])`` / ``duration(...)`` of a node-dependent string."""
        parse = _TIME_PARSERS[name]
        text = self.expr(e.args[0], scope, level)
        default = self.expr(e.default, scope, level) if e.default is not None else None
        if default is None:
            return lambda ctx: _parse_time_value(parse, text(ctx), None, ctx)
        d = default
        return lambda ctx: _parse_time_value(parse, text(ctx), d(ctx), ctx)

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
                self.allow_ragged_list = True
                try:
                    x = self.expr(arg, scope, level)
                finally:
                    self.allow_ragged_list = False
            else:
                x = self.expr(arg, scope, level)
            return lambda ctx: length(x(ctx), ctx)
        if name == "first":
            x = self.expr(arg, scope, level)
            return lambda ctx: first(x(ctx), ctx)
        ka = kind_of(ta)
        if name in _STRING_GENERICS:  # lower(s), is_int(s), starts_with(s, t), ...: once per distinct string
            if not all(self.type_of(a) == STRING for a in e.args):
                raise Unsupported(f"{name}() of {', '.join(str(self.type_of(a)) for a in e.args)}")
            fn, kind_out = _STRING_GENERICS[name]
            xs = [self.expr(a, scope, level) for a in e.args]
            return lambda ctx: _map_strings(fn, kind_out, [x(ctx) for x in xs], ctx)
        if name in ("timestamp", "duration"):
            return self._parse_time(e, name, scope, level)
        if name == "seconds":  # int nanoseconds to whole seconds, toward zero: go_div, as rt.seconds
            x = self.expr(arg, scope, level)
            return lambda ctx: ops.arith("/", x(ctx), Const(times.SECOND), "int")
        if name == "str":
            if ka is None:
                raise Unsupported(f"str() of {ta}")
            x = self.expr(arg, scope, level)
            if ka == "str":
                return x
            if ta in _TIME_STR:  # the text form of the time value, once per distinct value
                text = _TIME_STR[ta]
                return lambda ctx: ops.unary_map(text, x(ctx), "int", "str", ctx.state.interner)
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


_TIME_STR: dict[Any, Callable[[Any], str]] = {
    TIMESTAMP: lambda v: times.format_timestamp(int(v)), DURATION: lambda v: times.format_duration(int(v)),
}
"""``str(x)`` of a time value (an int64 of nanoseconds here) as the reference's closures.py ``_TIME_STR``."""

_TIME_PARSERS: dict[str, Callable[[str], int | None]] = {
    "timestamp": times.parse_timestamp, "duration": times.parse_duration,
}


def _parser_or_fail(parse: Callable[[str], int | None]) -> Callable[[str], int]:
    """``parse`` raising on text that does not parse: those rows go to the reference, which reports the
    located failure (a ``timestamp(s)`` without ``default``)."""
    def parsed(text: str) -> int:
        value = parse(text)
        if value is None:
            raise ValueError(text)
        return value
    return parsed


_STRING_GENERICS: dict[str, tuple[Callable[..., Any], str]] = {
    "lower": (str.lower, "str"), "is_int": (rt.is_int, "bool"), "is_float": (rt.is_float, "bool"),
    "is_quantity": (rt.is_quantity, "bool"), "starts_with": (str.startswith, "bool"),
    "ends_with": (str.endswith, "bool"),
}
"""Generic builtins over strings, by name: the reference's function (closures._ONE_ARG_GENERICS /
_TWO_ARG_GENERICS) and the result's kind."""

_NUMERIC_GENERICS = frozenset({"abs", "trunc", "round", "int", "float", "quantity", "ln", "sqrt"})
"""Generic builtins of one number lowered by :meth:`Lowerer._generic`; any other name is Unsupported."""


def _parse_time_value(parse: Callable[[str], int | None], text: Value, default: Value | None, ctx: Ctx) -> Value:
    """``timestamp(s)`` / ``duration(s)`` of a string value, once per distinct string; with ``default``,
    the default where the text does not parse (both int64 nanoseconds)."""
    if default is None:
        return _map_strings(_parser_or_fail(parse), "int", [text], ctx)
    ok = _map_strings(lambda s: parse(s) is not None, "bool", [text], ctx)
    value = _map_strings(lambda s: parse(s) or 0, "int", [text], ctx)
    return ops.select(ok, value, default, "int", ctx.state.interner)


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



def _uniform_or_col(kind: str, data: Any) -> Value:
    """A whole-cluster builtin column; a :class:`Const` when every node has the same value (no inter-pod
    term anywhere: all zeros), so the rest of the rule folds with the reference's scalar code."""
    if kind == "bool" and data.dtype != np.bool_:
        data = data.astype(np.bool_)  # the storage builtins' columns are 0 / 1 (Cluster.column is int64)
    if data.size and kind in ("int", "bool"):
        # bool: zeros told in one pass; int: the two passes below tell zeros too (a column built here is
        # seldom all zeros: Cluster.uniform told most of those without building them)
        if kind == "bool" and not count_nonzero(data):
            return Const(False)
        lo, hi = amin(data), amax(data)
        if lo == hi:
            return Const(int(lo) if kind == "int" else bool(lo))
        bound = float(max(abs(int(lo)), abs(int(hi)))) if kind == "int" else None  # max |x|, from lo and hi
        return Col(kind, data, None, 1, bound)
    bound = float(amax(np.abs(data))) if kind == "int" and data.size else None
    return Col(kind, data, None, 1, bound)

