"""Checked expressions -> nested Python closures ``fn(frame) -> value``. No eval, no exec.

A frame is a dict of the names in scope (``pod``, ``node``, ``cluster``, lets, loop variables). Only
what the checker resolved is reachable: fields through ``getattr`` of a schema-declared name, methods
and builtins through the schema's own function objects. Failing operations raise
:class:`Located`, which the rule wrapper (program.py) turns into a PolicyRuntimeError.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

from policyscheduler import times
from policyscheduler.checker.conversions import parse_float, parse_int, parse_quantity
from policyscheduler.checker.expressions import Info
from policyscheduler.checker.passes import NOW
from policyscheduler.checker.types import (
    DURATION,
    FLOAT,
    INT,
    INT_LIKE,
    QUANTITY,
    STRING,
    TIMESTAMP,
    ListT,
    MapT,
    Type,
    zero_value,
)
from policyscheduler.compiler import builtins as rt
from policyscheduler.diagnostics import PolicyRuntimeError, Span
from policyscheduler.syntax import ast
from policyscheduler.syntax.visitor import ExprVisitor

Fn = Callable[[dict[str, Any]], Any]


STEP_BUDGET = 10_000_000
"""Steps one evaluation of one rule on one node may take: loop items visited plus list items built by
concatenation (the same units as the static cost bound, whose limit is the same number). The second wall
behind the cost bound: a rule past it fails with a located ``budget`` error."""
POD_STEP_BUDGET = 10_000_000
"""Steps one rule may take over all the nodes of one pod's decision, when that is more than twice its
static cost times the nodes (a rule inside its static bound never reaches it). The second wall for the
work the static bound could not see (lists longer than the schema assumes): on 5,000 nodes a rule that
takes 2,000 steps per node instead of the 50 it was judged by stops after 5,000 nodes' worth of its bound,
with a located ``budget`` error, instead of running each node to the per-node budget. Set per rule by
the phase driver (:func:`set_allowance`); evaluations outside a decision have none."""
CHAR_BUDGET = 16 * 2**20
"""Characters of strings one evaluation may build (concatenation, lower, str, split)."""
INT_MIN, INT_MAX = -(2**63), 2**63 - 1
QUANTITY_LIMIT = 2**128
"""Largest numerator and denominator of a quantity result (exact fractions could otherwise grow without end)."""

class _Budget(threading.local):
    """What the evaluation in progress has left: ``left = [steps, characters]``, one per thread.

    Per thread because two threads may evaluate at once (the scheduling loop, and a shadow profile judging
    another scheduler's placements in the watch thread): a shared counter would let one thread's reset
    refill, or its work drain, the other's budget. Reset by the rule wrapper (program.py) before each
    evaluation.
    """

    def __init__(self) -> None:
        self.left = [STEP_BUDGET, CHAR_BUDGET]
        self.start = STEP_BUDGET
        """The steps the evaluation in progress started with (less than STEP_BUDGET near an allowance's end)."""
        self.allowance: int | None = None
        """Steps the rule being decided for a pod has left over all its nodes (None: no per-pod limit)."""
        self.granted = 0
        """The allowance as it was set (for the error message)."""


BUDGET = _Budget()


def reset_budget(steps: int | None = None) -> None:
    """A fresh budget for the evaluation this thread starts now: ``steps`` (default :data:`STEP_BUDGET`, read
    at the call so the module's value rules; fewer only near the end of a rule's per-pod allowance) and the
    full character budget. Every evaluation starts here: a rule's (program.py), pod-level work and cached
    items (vector/base.py), a trace."""
    if steps is None:
        steps = STEP_BUDGET
    left = BUDGET.left
    left[0] = steps
    left[1] = CHAR_BUDGET
    BUDGET.start = steps


def set_allowance(steps: int | None) -> None:
    """Start (``steps``) or end (None) a rule's per-pod allowance in this thread (see :data:`POD_STEP_BUDGET`)."""
    BUDGET.allowance = steps
    BUDGET.granted = steps or 0


def steps_used() -> int:
    """Steps this thread took since its last :func:`reset_budget` (for tests of the cost bound)."""
    return BUDGET.start - BUDGET.left[0]


def _out_of_steps(span: Span) -> Located:
    return Located(span, f"budget: evaluation stopped at {span} after {STEP_BUDGET:,} steps (loop items and list "
                   "items built) on this node; the rule does more work than any rule may")


def _out_of_chars(span: Span) -> Located:
    return Located(span, f"budget: evaluation stopped at {span} after building {CHAR_BUDGET:,} characters of "
                   "strings on this node")


def _charge(span: Span, steps: int) -> None:
    """Take ``steps`` from this thread's budget; a located ``budget`` error when it runs out."""
    budget = BUDGET.left
    budget[0] -= steps
    if budget[0] < 0:
        raise _out_of_steps(span)


def counted_equal(a: Any, b: Any, span: Span) -> bool:
    """``==`` (see :func:`builtins.equal`) charging one step per list item compared, nested lists included:
    comparing two lists of lists is as much work as a loop over them, and is charged like one (the checker
    charges ``min`` of the two sides' item bounds, see ``ExprChecker._walked``)."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return False
        _charge(span, len(a))
        return all(counted_equal(x, y, span) for x, y in zip(a, b))
    return bool(a == b)


def counted_member(item: Any, container: Any, span: Span) -> bool:
    """``in`` (see :func:`builtins.member`) charging one step per list item looked at (and the items of a
    list item compared); a map key or a substring is one step."""
    if isinstance(container, (str, dict)):
        return item in container
    _charge(span, len(container))
    if isinstance(item, (list, tuple)):
        return any(counted_equal(item, x, span) for x in container)
    return item in container


def _overflow(span: Span, op: str) -> Located:
    return Located(span, f"overflow: the result of '{op}' is outside the 64-bit integer range")


class Located(Exception):
    """A runtime failure with the span of the expression that failed."""

    def __init__(self, span: Span, message: str) -> None:
        super().__init__(message)
        self.span = span
        self.message = message


_LITERALS = (ast.IntLit, ast.FloatLit, ast.QuantityLit, ast.StringLit, ast.BoolLit)


_ONE_ARG_GENERICS: dict[str, Callable[[Any], Any]] = {
    "len": len, "abs": abs, "trunc": rt.go_trunc, "round": rt.go_round, "float": rt.to_float,
    "ln": rt.ln, "sqrt": rt.sqrt, "first": rt.first, "int": rt.go_trunc, "quantity": Fraction,
    "str": rt.to_str, "lower": str.lower, "is_int": rt.is_int, "is_float": rt.is_float,
    "is_quantity": rt.is_quantity, "seconds": rt.seconds,
}
_TWO_ARG_GENERICS: dict[str, Callable[[Any, Any], Any]] = {
    "starts_with": str.startswith, "ends_with": str.endswith, "split": rt.split,
}
_PARSERS: dict[str, Callable[[str], Any]] = {"int": parse_int, "float": parse_float, "quantity": parse_quantity,
                                             "timestamp": times.parse_timestamp, "duration": times.parse_duration}
_TIME_STR: dict[Type, Callable[[int], str]] = {TIMESTAMP: times.format_timestamp, DURATION: times.format_duration}
"""``str(x)`` of a time value: its text form (times.py), not the int of nanoseconds it is at run time."""
_KIND_OF_TEXT = {"int": "an integer", "float": "a number", "quantity": "a quantity",
                 "timestamp": "an RFC 3339 timestamp (or 20261204T101500Z)", "duration": "a duration (\"10m\")"}


def _located_default(default: Fn | None, parse: Callable[[str], Any], what: str) -> Callable[[dict[str, Any], str], Any]:
    def convert(f: dict[str, Any], text: str) -> Any:
        value = parse(text)
        if value is not None:
            return value
        if default is None:
            kind = _KIND_OF_TEXT[what]
            raise rt.EvalFailure(f"{what}({text!r}): not {kind} (add ', default D' for values that may not parse)")
        return default(f)

    return convert


def _guard(fn: Fn, span: Span) -> Fn:
    """Attach a span to failures of a risky operation (division, index, calls)."""

    def guarded(f: dict[str, Any]) -> Any:
        try:
            return fn(f)
        except (Located, PolicyRuntimeError):
            raise
        except rt.EvalFailure as exc:
            raise Located(span, str(exc)) from None
        except Exception as exc:  # noqa: BLE001 -- a builtin or method of the object model failed
            raise Located(span, f"{type(exc).__name__}: {exc}") from None

    return guarded


def _int_checked(fn: Fn, span: Span, op: str) -> Fn:
    """``fn`` whose int result must fit in 64 bits (else a located ``overflow`` error)."""

    def checked(f: dict[str, Any]) -> Any:
        r = fn(f)
        if INT_MIN <= r <= INT_MAX:
            return r
        raise _overflow(span, op)

    return checked


def _check_quantity(r: Any, span: Span, op: str) -> Any:
    """``r`` if its numerator and denominator are below 2**128, else a located ``overflow`` error."""
    if isinstance(r, Fraction):
        if -QUANTITY_LIMIT < r.numerator < QUANTITY_LIMIT and r.denominator < QUANTITY_LIMIT:
            return r
    elif -QUANTITY_LIMIT < r < QUANTITY_LIMIT:
        return r
    raise Located(span, f"overflow: the result of '{op}' is a quantity too large (or too finely divided) to "
                  "compute exactly")


def _quantity_checked(fn: Fn, span: Span, op: str) -> Fn:
    """``fn`` whose quantity (Fraction or int) result must keep numerator and denominator below 2**128."""
    return lambda f: _check_quantity(fn(f), span, op)


def _converter(src: Type, dst: Type) -> Callable[[Any], Any] | None:
    """The runtime promotion from ``src`` to ``dst`` (None when no conversion is needed)."""
    if src == INT and dst == FLOAT:
        return float
    if src == INT and dst == QUANTITY:
        return Fraction
    if src == QUANTITY and dst == FLOAT:
        return rt.to_float
    return None


class ExprCompiler(ExprVisitor[Fn]):
    """Compiles the expressions of one checked rule (one ``_<Class>`` method per expression class)."""

    def __init__(self, info: Info) -> None:
        self.info = info

    def type_of(self, e: ast.Expr) -> Type:
        return self.info.types[id(e)]

    def as_type(self, e: ast.Expr, dst: Type) -> Fn:
        """Compile ``e`` and promote its value to ``dst`` (int -> float/quantity, quantity -> float)."""
        fn = self.compile(e)
        conv = _converter(self.type_of(e), dst)
        if conv is None:
            return fn
        return lambda f: conv(fn(f))

    def compile(self, e: ast.Expr) -> Fn:
        return self.visit(e)

    # -- literals and names
    def _IntLit(self, e: ast.IntLit) -> Fn:
        v = e.value
        return lambda f: v

    def _FloatLit(self, e: ast.FloatLit) -> Fn:
        v = e.value
        return lambda f: v

    def _BoolLit(self, e: ast.BoolLit) -> Fn:
        v = e.value
        return lambda f: v

    def _QuantityLit(self, e: ast.QuantityLit) -> Fn:
        v = self.info.literals[id(e)]
        return lambda f: v

    def _StringLit(self, e: ast.StringLit) -> Fn:
        v = self.info.literals[id(e)]
        return lambda f: v

    def _ListLit(self, e: ast.ListLit) -> Fn:
        t = self.type_of(e)
        elem = t.elem if isinstance(t, ListT) else t
        items = [self.as_type(i, elem) for i in e.items]
        if all(isinstance(i, _LITERALS) for i in e.items):  # e.g. ["NoSchedule", "NoExecute"]: built once
            value = tuple(i({}) for i in items)
            return lambda f: value
        return lambda f: tuple(i(f) for i in items)

    def _Name(self, e: ast.Name) -> Fn:
        name = e.id
        if name == NOW:  # no binding may shadow the root 'now': it is the cluster context's decision time
            return lambda f: f["cluster"].now
        return lambda f: f[name]

    def _Attr(self, e: ast.Attr) -> Fn:
        getter = operator.attrgetter(e.name)  # a field name the checker found in the schema
        if isinstance(e.obj, ast.Name):  # node.labels, t.effect: the most frequent shape, one call less
            name = e.obj.id
            return lambda f: getter(f[name])
        obj = self.compile(e.obj)
        return lambda f: getter(obj(f))

    def _Index(self, e: ast.Index) -> Fn:
        obj, idx = self.compile(e.obj), self.compile(e.index)
        t = self.type_of(e.obj)
        if isinstance(t, MapT):
            zero = zero_value(t.value)
            if zero is not None:  # the hot path (labels, resources): a plain dict lookup
                key = self.info.literals.get(id(e.index)) if isinstance(e.index, ast.StringLit) else None
                if key is not None:
                    return lambda f: obj(f).get(key, zero)
                return lambda f: obj(f).get(idx(f), zero)

            def read_map(f: dict[str, Any]) -> Any:
                m, k = obj(f), idx(f)
                if k not in m:
                    raise rt.EvalFailure(f"map has no key {k!r} (and {t.value} has no zero value)")
                return m[k]

            return _guard(read_map, e.span)

        def read_list(f: dict[str, Any]) -> Any:
            xs, i = obj(f), idx(f)
            if not 0 <= i < len(xs):
                raise rt.EvalFailure(f"list index {i} out of range (length {len(xs)})")
            return xs[i]

        return _guard(read_list, e.span)

    # -- operators
    def _Unary(self, e: ast.Unary) -> Fn:
        x = self.compile(e.operand)
        if e.op == "not":
            return lambda f: not x(f)
        if self.type_of(e) in INT_LIKE:
            return _int_checked(lambda f: -x(f), e.span, "-")
        return lambda f: -x(f)

    def _Binary(self, e: ast.Binary) -> Fn:
        op = e.op
        if op == "and":
            a, b = self.compile(e.left), self.compile(e.right)
            return lambda f: a(f) and b(f)
        if op == "or":
            a, b = self.compile(e.left), self.compile(e.right)
            return lambda f: a(f) or b(f)
        ta, tb, tr = self.type_of(e.left), self.type_of(e.right), self.type_of(e)
        span = e.span
        if op in ("in", "not in"):
            a, b = self.compile(e.left), self.compile(e.right)
            if not isinstance(tb, ListT):  # a map key or a substring: one step
                if op == "in":
                    return lambda f: rt.member(a(f), b(f))
                return lambda f: not rt.member(a(f), b(f))
            if op == "in":
                return lambda f: counted_member(a(f), b(f), span)
            return lambda f: not counted_member(a(f), b(f), span)
        if op in ("==", "!="):
            a, b = self.compile(e.left), self.compile(e.right)
            if not isinstance(ta, ListT) and not isinstance(tb, ListT):
                if op == "==":
                    return lambda f: rt.equal(a(f), b(f))
                return lambda f: not rt.equal(a(f), b(f))
            if op == "==":
                return lambda f: counted_equal(a(f), b(f), span)
            return lambda f: not counted_equal(a(f), b(f), span)
        if op in ("<", "<=", ">", ">="):
            cmp = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}[op]
            a, b = self.compile(e.left), self.compile(e.right)
            if FLOAT in (ta, tb) and QUANTITY in (ta, tb):
                a, b = self.as_type(e.left, FLOAT), self.as_type(e.right, FLOAT)
            return lambda f: cmp(a(f), b(f))
        if isinstance(tr, ListT):
            a, b = self.compile(e.left), self.compile(e.right)
            span = e.span

            def concat_lists(f: dict[str, Any]) -> Any:
                x, y = a(f), b(f)
                budget = BUDGET.left
                budget[0] -= len(x) + len(y)
                if budget[0] < 0:
                    raise _out_of_steps(span)
                return tuple(x) + tuple(y)

            return concat_lists
        if op == "+" and tr == STRING:
            a, b = self.compile(e.left), self.compile(e.right)
            span = e.span

            def concat_strings(f: dict[str, Any]) -> Any:
                x, y = a(f), b(f)
                budget = BUDGET.left
                budget[1] -= len(x) + len(y)
                if budget[1] < 0:
                    raise _out_of_chars(span)
                return x + y

            return concat_strings
        if tr == QUANTITY:  # Fraction arithmetic with an int operand is exact: no conversion needed
            a, b = self.compile(e.left), self.compile(e.right)
        else:
            a, b = self.as_type(e.left, tr), self.as_type(e.right, tr)
        span = e.op_span or e.span  # a failure of the operation (a zero divisor, an overflow) is at its operator
        if tr in INT_LIKE:  # ints, and timestamps / durations (int nanoseconds, times.py)
            raw = {"+": operator.add, "-": operator.sub, "*": operator.mul}.get(op)
            if raw is None:
                div = rt.go_mod if op == "%" else rt.go_div
                checked = _int_checked(lambda f: div(a(f), b(f)), span, op)
                return _guard(checked, span)
            if op == "+":
                def int_add(f: dict[str, Any]) -> Any:
                    r = a(f) + b(f)
                    if INT_MIN <= r <= INT_MAX:
                        return r
                    raise _overflow(span, "+")
                return int_add
            if op == "-":
                def int_sub(f: dict[str, Any]) -> Any:
                    r = a(f) - b(f)
                    if INT_MIN <= r <= INT_MAX:
                        return r
                    raise _overflow(span, "-")
                return int_sub

            def int_mul(f: dict[str, Any]) -> Any:
                r = a(f) * b(f)
                if INT_MIN <= r <= INT_MAX:
                    return r
                raise _overflow(span, "*")
            return int_mul
        if tr == QUANTITY:
            # every quantity result is size-checked: '+' of fractions with unrelated denominators multiplies
            # them (sum(i, x in L: 1m / (i + 1)) has the lcm of 1..n below), as '*' and '/' do
            if op in ("+", "-"):
                add = operator.add if op == "+" else operator.sub
                return _quantity_checked(lambda f: add(a(f), b(f)), span, op)
            if op == "*":
                return _quantity_checked(lambda f: a(f) * b(f), span, op)
            return _guard(_quantity_checked(lambda f: rt.real_div(a(f), b(f)), span, op), span)
        if op == "+":
            return lambda f: a(f) + b(f)
        if op == "-":
            return lambda f: a(f) - b(f)
        if op == "*":
            return lambda f: a(f) * b(f)
        if op == "%":
            return _guard(lambda f: rt.go_mod(a(f), b(f)), span)
        return _guard(lambda f: rt.real_div(a(f), b(f)), span)

    def _IfExpr(self, e: ast.IfExpr) -> Fn:
        t = self.type_of(e)
        c, a, b = self.compile(e.cond), self.as_type(e.then, t), self.as_type(e.else_, t)
        return lambda f: a(f) if c(f) else b(f)

    # -- loops
    def _iterate(self, loop: ast.Loop) -> Callable[[dict[str, Any]], Iterator[dict[str, Any]]]:
        """A generator function: binds the loop variables and yields the frame for each item passing ``where``.

        The variables are written into the rule's own frame, not a copy of it: the checker rejects a
        binder that shadows a name in scope, so no name a later expression can read is overwritten, and a
        variable left behind after the loop is out of scope for everything that follows. The frame itself
        is private to one rule evaluation (program.py copies the caller's env once per call).
        """
        src = self.compile(loop.iterable)
        where = self.compile(loop.where) if loop.where is not None else None
        is_map = isinstance(self.info.types[id(loop)], MapT)  # maps iterate in sorted key order
        span = loop.iterable.span
        if len(loop.binders) == 1:
            name = loop.binders[0].name

            def items(f: dict[str, Any]) -> Iterator[dict[str, Any]]:
                coll = src(f)
                budget = BUDGET.left  # one step per item: charged up front, so an oversized loop never starts
                budget[0] -= len(coll)
                if budget[0] < 0:
                    raise _out_of_steps(span)
                for x in sorted(coll) if is_map else coll:
                    f[name] = x
                    if where is None or where(f):
                        yield f

            return items
        first, second = (b.name for b in loop.binders)

        def pairs(f: dict[str, Any]) -> Iterator[dict[str, Any]]:
            coll = src(f)
            budget = BUDGET.left
            budget[0] -= len(coll)
            if budget[0] < 0:
                raise _out_of_steps(span)
            for a, b in ((k, coll[k]) for k in sorted(coll)) if is_map else enumerate(coll):
                f[first] = a
                f[second] = b
                if where is None or where(f):
                    yield f

        return pairs

    def _Quantifier(self, e: ast.Quantifier) -> Fn:
        items, body = self._iterate(e.loop), self.compile(e.body)
        if e.kind == "all":
            return lambda f: all(map(body, items(f)))
        return lambda f: any(map(body, items(f)))

    def _Comprehension(self, e: ast.Comprehension) -> Fn:
        items = self._iterate(e.loop)
        t = self.type_of(e)
        value = self.as_type(e.value, t.elem) if isinstance(t, ListT) else self.compile(e.value)
        return lambda f: tuple(map(value, items(f)))

    def _Aggregate(self, e: ast.Aggregate) -> Fn:
        items = self._iterate(e.loop)
        if e.kind == "count":
            return lambda f: sum(1 for _ in items(f))
        assert e.value is not None
        t = self.type_of(e)
        value = self.as_type(e.value, t)
        if e.kind == "sum":
            zero: Any = zero_value(t)
            if t == INT:
                return _int_checked(lambda f: sum(map(value, items(f)), zero), e.span, "sum")
            if t == QUANTITY:
                span = e.span

                def quantity_sum(f: dict[str, Any]) -> Any:
                    total = zero
                    for x in map(value, items(f)):
                        total = _check_quantity(total + x, span, "sum")  # checked at every step, so no
                    return total                                           # partial sum grows unbounded

                return quantity_sum
            return lambda f: sum(map(value, items(f)), zero)
        pick = max if e.kind == "max" else min
        if e.default is not None:
            default = self.as_type(e.default, t)

            def with_default(f: dict[str, Any]) -> Any:
                vals = list(map(value, items(f)))
                return pick(vals) if vals else default(f)

            return with_default
        kind = e.kind

        def no_default(f: dict[str, Any]) -> Any:
            vals = list(map(value, items(f)))
            if not vals:
                raise rt.EvalFailure(f"{kind} over an empty collection (add ', default D')")
            return pick(vals)

        return _guard(no_default, e.span)

    def _conversion(self, e: ast.Call, name: str, t: Type) -> Fn:
        """int/float/quantity of a string: parsed with Go's rules; the default (or a located failure) otherwise."""
        x = self.compile(e.args[0])
        default = self.as_type(e.default, t) if e.default is not None else None
        convert = _located_default(default, _PARSERS[name], name)
        if default is not None:
            return lambda f: convert(f, x(f))
        return _guard(lambda f: convert(f, x(f)), e.span)

    # -- calls
    def _Call(self, e: ast.Call) -> Fn:
        kind, name = self.info.calls[id(e)]
        if kind == "generic":
            return self._generic(e, name)
        sig = self.info.signatures[id(e)]
        args = [self.as_type(a, p) for a, p in zip(e.args, sig.params)]
        if kind == "builtin":
            fn = sig.fn
            assert fn is not None
            return _guard(lambda f: fn(*[a(f) for a in args]), e.span)
        assert isinstance(e.func, ast.Attr)
        obj = self.compile(e.func.obj)
        method = sig.fn  # the exposed function object itself, not a getattr by name
        assert method is not None
        return _guard(lambda f: method(obj(f), *[a(f) for a in args]), e.span)

    def _generic(self, e: ast.Call, name: str) -> Fn:
        t = self.type_of(e)
        if name in ("min", "max"):
            args = [self.as_type(a, t) for a in e.args]
            pick = min if name == "min" else max
            return lambda f: pick(a(f) for a in args)
        if name in _TWO_ARG_GENERICS:
            fn2 = _TWO_ARG_GENERICS[name]
            a, b = self.compile(e.args[0]), self.compile(e.args[1])
            if name == "split":
                span = e.span

                def split(f: dict[str, Any]) -> Any:
                    text = a(f)
                    budget = BUDGET.left
                    budget[1] -= len(text)
                    if budget[1] < 0:
                        raise _out_of_chars(span)
                    return fn2(text, b(f))

                return _guard(split, span)
            return lambda f: fn2(a(f), b(f))
        if name in _PARSERS and self.type_of(e.args[0]) == STRING:
            return self._conversion(e, name, t)
        x = self.compile(e.args[0])
        fn = _ONE_ARG_GENERICS[name]
        if name == "str":
            fn = _TIME_STR.get(self.type_of(e.args[0]), fn)
        if name in ("lower", "str"):
            span = e.span

            def build_string(f: dict[str, Any]) -> Any:
                r = fn(x(f))
                budget = BUDGET.left
                budget[1] -= len(r)
                if budget[1] < 0:
                    raise _out_of_chars(span)
                return r

            return _guard(build_string, span)
        if t == INT and name != "len":
            return _guard(_int_checked(lambda f: fn(x(f)), e.span, name), e.span)
        return _guard(lambda f: fn(x(f)), e.span)
