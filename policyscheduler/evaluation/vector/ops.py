"""The policy language's operators on columns, with the reference closures' exact semantics.

Each operator takes :class:`~.values.Const` / :class:`~.values.Col` operands of the kinds the checker
typed, and returns a value whose every row equals what :mod:`policyscheduler.compiler.closures` computes
for that row -- or flags the row in ``err`` (zero divisors, numbers leaving int64, floats that are not
exact), so the reference evaluates it. Two constants are combined with the reference's own Python code
(:mod:`policyscheduler.compiler.builtins`), so constant folding cannot drift either.

Numbers (grammar/LANGUAGE.md, "Numbers at run time"): ints are int64 with overflow guards; floats are
float64 with the reference's operation order (IEEE makes every +, -, *, / and sqrt identical);
quantities are exact fractions ``num / den`` with int64 numerators and positive denominators, compared
by cross-multiplication; float() of a quantity is one IEEE division of two exactly representable
integers, i.e. the correctly rounded value Python's ``float(Fraction)`` gives.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from policyscheduler.compiler import builtins as rt
from policyscheduler.evaluation.arrays import amax, amin, count_nonzero

if TYPE_CHECKING:
    from policyscheduler.evaluation.vector.context import Ctx, Fn
from policyscheduler.evaluation.vector.values import (
    EXACT_FLOAT,
    Bools,
    Col,
    Const,
    Mask,
    Poisoned,
    Value,
    as_bools,
    as_floats,
    as_ints,
    as_quantity,
    bound_of,
    err_or,
    fl,
    guard,
    int_add,
    int_mul,
    quantity_to_float,
)

_CMP: dict[str, Callable[[Any, Any], Any]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq, "!=": operator.ne,
}


def _py(fn: Callable[..., Any], *args: Any) -> Const:
    """A constant folded with the reference's own Python semantics (a failure poisons the value)."""
    try:
        return Const(fn(*args))
    except Exception as exc:  # noqa: BLE001 -- EvalFailure, ZeroDivisionError, OverflowError: all rows fail
        raise Poisoned(str(exc)) from None


def _nz(mask: Any) -> Bools | None:
    if isinstance(mask, np.ndarray):
        return mask if count_nonzero(mask) else None
    if mask:
        raise Poisoned("fails on every row")
    return None


# ----------------------------------------------------------------------------------- arithmetic


def arith(op: str, a: Value, b: Value, kind: str) -> Value:
    """``a op b`` for a result of ``kind`` (operands already promoted as the reference does)."""
    if isinstance(a, Const) and isinstance(b, Const):
        return _py(_PY_ARITH[(op, kind)], a.value, b.value)
    if kind == "int":
        return _int_arith(op, a, b)
    if kind == "float":
        return _float_arith(op, a, b)
    assert kind == "q", kind
    return _q_arith(op, a, b)


def _py_div(a: Any, b: Any) -> Any:
    return rt.real_div(a, b)


_PY_ARITH: dict[tuple[str, str], Callable[[Any, Any], Any]] = {
    **{("+", k): operator.add for k in ("int", "float", "q")},
    **{("-", k): operator.sub for k in ("int", "float", "q")},
    **{("*", k): operator.mul for k in ("int", "float", "q")},
    ("/", "int"): rt.go_div, ("%", "int"): rt.go_mod, ("/", "float"): _py_div, ("/", "q"): _py_div,
}


def _mul_bound(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a * b


def _add_bound(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a + b


def _int_arith(op: str, a: Value, b: Value) -> Col:
    x, ex, ba = int_operand(a)
    y, ey, bb = int_operand(b)
    if op in ("+", "-"):
        r, e = int_add(x, y, op == "-", ba, bb)
        bound = _add_bound(ba, bb)
    elif op == "*":
        r, e = int_mul(x, y, ba, bb)
        bound = _mul_bound(ba, bb)
    elif _positive(y) and _nonnegative(x):
        # Go's / and % truncate toward zero; on a dividend >= 0 and a divisor > 0 (a mean: a sum over a
        # count) that is numpy's floor division itself, without the signs taken off and put back
        r, e, bound = (x // y if op == "/" else x % y), None, ba
    else:
        zero = y == 0
        e = _nz(zero)
        if e is not None:
            y = np.where(zero, 1, y)
        ax, ay = np.abs(x), np.abs(y)
        if op == "/":
            q = ax // ay
            r = np.where((x < 0) != (y < 0), -q, q)
            bound = ba
        else:
            rem = ax % ay
            r = np.where(x < 0, -rem, rem)
            bound = ba
    return Col("int", r, err_or(ex, ey, e), 1, bound)


def _positive(x: Any) -> bool:
    """Whether every value of an int64 array or scalar is > 0 (one reduction for an array)."""
    if isinstance(x, np.ndarray):
        return bool(x.size) and int(amin(x)) > 0
    return bool(x > 0)


def _nonnegative(x: Any) -> bool:
    """Whether every value of an int64 array or scalar is >= 0."""
    if isinstance(x, np.ndarray):
        return not x.size or int(amin(x)) >= 0
    return bool(x >= 0)


def _float_arith(op: str, a: Value, b: Value) -> Col:
    x, ex = as_floats(a)
    y, ey = as_floats(b)
    return _float_xy(op, x, ex, y, ey)


def _float_xy(op: str, x: Any, ex: Bools | None, y: Any, ey: Bools | None) -> Col:
    e = None
    with np.errstate(all="ignore"):
        if op == "+":
            r = x + y
        elif op == "-":
            r = x - y
        elif op == "*":
            r = x * y
        else:
            zero = y == 0
            e = _nz(zero)
            if e is not None:
                y = np.where(zero, 1.0, y)
            r = x / y
    return Col("float", r, err_or(ex, ey, e))


def _reduce(n: Any, d: Any) -> tuple[Any, Any]:
    """Divide numerator and denominator by their gcd (keeps later products inside int64)."""
    g = np.gcd(n, d)
    g = np.where(g == 0, 1, g)
    return n // g, d // g


def _dbound(d: Any) -> float | None:
    return float(d) if isinstance(d, int) else None


Q = tuple[Any, Any, Bools | None, float | None]
"""(numerators, denominator, error rows, bound of |numerators|)."""


def q_add(n1: Any, d1: Any, b1: float | None, n2: Any, d2: Any, b2: float | None, sub: bool) -> Q:
    if isinstance(d1, int) and isinstance(d2, int):
        if d1 == d2:
            r, e = int_add(n1, n2, sub, b1, b2)
            return r, d1, e, _add_bound(b1, b2)
        lcm = d1 * d2 // math.gcd(d1, d2)
        if lcm >= 2**62:
            raise Poisoned("denominator leaves int64")
        f1, f2 = lcm // d1, lcm // d2
        # one factor is 1 (one denominator divides the other): that side is taken as it is
        a, e1 = (n1, None) if f1 == 1 else int_mul(n1, np.int64(f1), b1, float(f1))
        b, e2 = (n2, None) if f2 == 1 else int_mul(n2, np.int64(f2), b2, float(f2))
        a1, a2 = _mul_bound(b1, float(f1)), _mul_bound(b2, float(f2))
        r, e3 = int_add(a, b, sub, a1, a2)
        return r, lcm, err_or(e1, e2, e3), _add_bound(a1, a2)
    a, e1 = int_mul(n1, d2, b1, _dbound(d2))
    b, e2 = int_mul(n2, d1, b2, _dbound(d1))
    d, e3 = int_mul(d1, d2, _dbound(d1), _dbound(d2))
    r, e4 = int_add(a, b, sub)
    r, d = _reduce(r, d)
    return r, d, err_or(e1, e2, e3, e4), None


def q_mul(n1: Any, d1: Any, b1: float | None, n2: Any, d2: Any, b2: float | None) -> Q:
    r, e1 = int_mul(n1, n2, b1, b2)
    if isinstance(d1, int) and isinstance(d2, int):
        d = d1 * d2
        if d >= 2**62:
            raise Poisoned("denominator leaves int64")
        return r, d, e1, _mul_bound(b1, b2)
    d, e2 = int_mul(d1, d2, _dbound(d1), _dbound(d2))
    r, d = _reduce(r, d)
    return r, d, err_or(e1, e2), None


def q_div(n1: Any, d1: Any, b1: float | None, n2: Any, d2: Any, b2: float | None) -> Q:
    """Exact quotient ``num / den`` with ``den > 0``, not reduced (later operations are guarded)."""
    # a divisor column > 0 on every row (an allocatable read where it is > 0) over one positive left
    # denominator: no zero to flag and no sign to move to the numerator -- one reduction instead of both
    # checks (a row whose product left int64 is flagged by int_mul, whatever its sign)
    positive = isinstance(n2, np.ndarray) and _positive(n2) and not isinstance(d1, np.ndarray)
    e0 = None
    if not positive:
        zero = n2 == 0
        e0 = _nz(zero)
        if e0 is not None:
            n2 = np.where(zero, 1, n2)
    if isinstance(d1, int) and isinstance(d2, int) and d1 == d2:
        num, den, e1, e2, bn = n1, n2, None, None, b1
    else:
        num, e1 = int_mul(n1, d2, b1, _dbound(d2))
        den, e2 = int_mul(d1, n2, _dbound(d1), b2)
        bn = _mul_bound(b1, _dbound(d2))
    if not positive and (isinstance(den, np.ndarray) or isinstance(num, np.ndarray)):
        neg = den < 0
        if count_nonzero(neg):
            num = np.where(neg, -num, num)
            den = np.where(neg, -den, den)
    if not isinstance(den, np.ndarray):
        if den < 0:
            num, den = -num, -den
        den = int(den)
    return num, den, err_or(e0, e1, e2), bn


def q_operand(v: Value) -> Q:
    """(numerators, denominator, error rows, bound) of an int or quantity value: :func:`as_quantity` and
    :func:`bound_of` in one step, a column's fields read directly."""
    if type(v) is Col:
        assert v.kind in ("int", "q"), v
        return v.data, (v.den if v.kind == "q" else 1), v.err, v.bound
    n, d, e = as_quantity(v)
    return n, d, e, bound_of(v)


def int_operand(v: Value) -> tuple[Any, Bools | None, float | None]:
    """(values, error rows, bound) of an int value: :func:`as_ints` and :func:`bound_of` in one step."""
    if type(v) is Col:
        assert v.kind == "int", v
        return v.data, v.err, v.bound
    x, e = as_ints(v)
    return x, e, bound_of(v)


def _q_sub(n1: Any, d1: Any, b1: float | None, n2: Any, d2: Any, b2: float | None) -> Q:
    return q_add(n1, d1, b1, n2, d2, b2, True)


def _q_plus(n1: Any, d1: Any, b1: float | None, n2: Any, d2: Any, b2: float | None) -> Q:
    return q_add(n1, d1, b1, n2, d2, b2, False)


Q_OPS: dict[str, Callable[[Any, Any, float | None, Any, Any, float | None], Q]] = {
    "+": _q_plus, "-": _q_sub, "*": q_mul, "/": q_div,
}
"""The quantity operators on (numerators, denominator, bound) operands."""


def _q_arith(op: str, a: Value, b: Value) -> Col:
    n1, d1, ea, b1 = q_operand(a)
    n2, d2, eb, b2 = q_operand(b)
    n, d, e, bound = Q_OPS[op](n1, d1, b1, n2, d2, b2)
    return Col("q", n, err_or(ea, eb, e), d, bound)


def negate(v: Value) -> Value:
    if isinstance(v, Const):
        return _py(operator.neg, v.value)
    assert isinstance(v, Col)
    if v.kind == "float":
        return Col("float", -v.data, v.err)
    check = None if v.bound is not None and v.bound < 2.0**62 else guard(fl(v.data))
    return Col(v.kind, -v.data, err_or(v.err, check), v.den, v.bound)


def logical_not(v: Value) -> Value:
    if isinstance(v, Const):
        return Const(not v.value)
    assert isinstance(v, Col)
    return Col("bool", ~v.data, v.err)


# ----------------------------------------------------------------------------------- comparison


def compare(op: str, a: Value, ka: str, b: Value, kb: str, interner: Any) -> Value:
    """``a op b`` (``< <= > >= == !=``) for operand kinds ``ka``/``kb`` (after the reference's promotions)."""
    if isinstance(a, Const) and isinstance(b, Const):
        if op == "==":
            return _py(rt.equal, a.value, b.value)
        if op == "!=":
            return _py(lambda x, y: not rt.equal(x, y), a.value, b.value)
        return _py(_CMP[op], a.value, b.value)
    cmp = _CMP[op]
    if ka == kb and ka in ("bool", "int", "float"):
        x, ex = (as_bools if ka == "bool" else as_ints if ka == "int" else as_floats)(a)
        y, ey = (as_bools if kb == "bool" else as_ints if kb == "int" else as_floats)(b)
        return Col("bool", np.asarray(cmp(x, y)), err_or(ex, ey))
    if {ka, kb} == {"int", "float"}:
        # Python compares an int with a float exactly; numpy converts the int, exact below 2**53.
        xi, ex = (as_ints if ka == "int" else as_floats)(a)
        yi, ey = (as_ints if kb == "int" else as_floats)(b)
        ints = xi if ka == "int" else yi
        e = np.abs(fl(ints)) >= EXACT_FLOAT
        return Col("bool", np.asarray(cmp(fl(xi), fl(yi))), err_or(ex, ey, _nz(e)))
    if ka in ("int", "q") and kb in ("int", "q"):
        return compare_q(cmp, a, b)
    if ka == kb == "str":
        if op in ("==", "!="):
            x = a.value if isinstance(a, Const) else None
            y = b.value if isinstance(b, Const) else None
            xa = interner.code(x) if x is not None else a.data  # type: ignore[union-attr]
            ya = interner.code(y) if y is not None else b.data  # type: ignore[union-attr]
            return Col("bool", np.asarray(cmp(xa, ya)), err_or(getattr(a, "err", None), getattr(b, "err", None)))
        from policyscheduler.evaluation.vector.kernels import map_strings

        return map_strings(lambda x, y: cmp(x, y), "bool", [a, b], interner)
    raise Poisoned(f"no vector comparison for {ka} {op} {kb}")


def compare_q(cmp: Callable[[Any, Any], Any], a: Value, b: Value) -> Col:
    """A comparison of two int / quantity values, not both constant (exact: cross-multiplied)."""
    return compare_q_operands(cmp, q_operand(a), q_operand(b))


def compare_q_operands(cmp: Callable[[Any, Any], Any], qa: Q, qb: Q) -> Col:
    """:func:`compare_q` on operands already read by :func:`q_operand` (or converted at lowering)."""
    n1, d1, ea, b1 = qa
    n2, d2, eb, b2 = qb
    if type(d1) is int and type(d2) is int and d1 == d2:
        return Col("bool", np.asarray(cmp(n1, n2)), eb if ea is None else err_or(ea, eb))
    lhs, e1 = int_mul(n1, d2, b1, _dbound(d2))
    rhs, e2 = int_mul(n2, d1, b2, _dbound(d1))
    return Col("bool", np.asarray(cmp(lhs, rhs)), err_or(ea, eb, e1, e2))


def arith_fn(op: str, a: Fn, b: Fn, kind: str, ca: Const | None, cb: Const | None) -> Fn:
    """``a op b`` specialised at lowering for the result ``kind``: quantities, and ints under ``+ - *``
    (the operators of resource formulas) go straight to their kernel, with an operand known at lowering
    (``ca`` / ``cb``: a literal, a folded item) converted once, here; everything else through
    :func:`arith`. Two constants at run time still fold with the reference's Python semantics."""
    if kind == "q":
        f = Q_OPS[op]
        pa, pb = _static(q_operand, ca), _static(q_operand, cb)

        def q_arith(ctx: Ctx) -> Value:
            va, vb = a(ctx), b(ctx)
            if type(va) is Const and type(vb) is Const:
                return arith(op, va, vb, "q")
            # q_operand's column case inline (the usual operand: a table column or a partial result)
            if pa is not None:
                n1, d1, ea, b1 = pa
            elif type(va) is Col:
                n1, d1, ea, b1 = va.data, (va.den if va.kind == "q" else 1), va.err, va.bound
            else:
                n1, d1, ea, b1 = q_operand(va)
            if pb is not None:
                n2, d2, eb, b2 = pb
            elif type(vb) is Col:
                n2, d2, eb, b2 = vb.data, (vb.den if vb.kind == "q" else 1), vb.err, vb.bound
            else:
                n2, d2, eb, b2 = q_operand(vb)
            n, d, e, bound = f(n1, d1, b1, n2, d2, b2)
            return Col("q", n, e if ea is None and eb is None else err_or(ea, eb, e), d, bound)

        return q_arith
    if kind == "int" and op in ("+", "-", "*"):
        ia, ib = _static(int_operand, ca), _static(int_operand, cb)
        sub, mul = op == "-", op == "*"

        def int_arith(ctx: Ctx) -> Value:
            va, vb = a(ctx), b(ctx)
            if type(va) is Const and type(vb) is Const:
                return arith(op, va, vb, "int")
            x, ex, ba = int_operand(va) if ia is None else ia
            y, ey, bb = int_operand(vb) if ib is None else ib
            if mul:
                r, e = int_mul(x, y, ba, bb)
                bound = _mul_bound(ba, bb)
            else:
                r, e = int_add(x, y, sub, ba, bb)
                bound = _add_bound(ba, bb)
            return Col("int", r, err_or(ex, ey, e), 1, bound)

        return int_arith
    if kind == "float":
        fa, fb = _static(as_floats, ca), _static(as_floats, cb)

        def float_arith(ctx: Ctx) -> Value:
            va, vb = a(ctx), b(ctx)
            if type(va) is Const and type(vb) is Const:
                return arith(op, va, vb, "float")
            x, ex = (va.data, va.err) if type(va) is Col and va.kind == "float" else as_floats(va) if fa is None else fa
            y, ey = (vb.data, vb.err) if type(vb) is Col and vb.kind == "float" else as_floats(vb) if fb is None else fb
            return _float_xy(op, x, ex, y, ey)

        return float_arith
    return lambda ctx: arith(op, a(ctx), b(ctx), kind)


def compare_fn(op: str, a: Fn, ka: str, b: Fn, kb: str, ca: Const | None = None, cb: Const | None = None) -> Fn:
    """``a op b`` specialised at lowering for int / quantity operands (see :func:`compare`), an operand
    known at lowering (``ca`` / ``cb``: the ``0`` of ``node.allocatable[r] > 0``) converted once, here."""
    cmp = _CMP[op]
    if ka in ("int", "q") and kb in ("int", "q"):
        pa, pb = _static(q_operand, ca), _static(q_operand, cb)

        def compare_num(ctx: Ctx) -> Value:
            va, vb = a(ctx), b(ctx)
            if type(va) is Const and type(vb) is Const:
                return compare(op, va, ka, vb, kb, ctx.state.interner)
            qa = pa if pa is not None else (va.data, (va.den if va.kind == "q" else 1), va.err, va.bound) \
                if type(va) is Col else q_operand(va)
            qb = pb if pb is not None else (vb.data, (vb.den if vb.kind == "q" else 1), vb.err, vb.bound) \
                if type(vb) is Col else q_operand(vb)
            return compare_q_operands(cmp, qa, qb)

        return compare_num
    return lambda ctx: compare(op, a(ctx), ka, b(ctx), kb, ctx.state.interner)


def _static(convert: Callable[[Value], Any], c: Const | None) -> Any:
    """An operand known at lowering, converted once; None (left to run time) when it does not convert."""
    if c is None:
        return None
    try:
        return convert(c)
    except (Poisoned, AssertionError):
        return None


# ------------------------------------------------------------------------------------- select


def select(cond: Value, a: Value, b: Value, kind: str, interner: Any) -> Value:
    """``if cond then a else b`` row by row (both branches already promoted to ``kind``)."""
    if isinstance(cond, Const):
        return a if cond.value else b
    c, ec = as_bools(cond)
    hits = count_nonzero(c)
    if hits == 0 or hits == c.size:
        # every row takes the same branch (an over-commit test that holds on no node, ``min(1.0, f)`` with
        # f < 1 everywhere): that branch's column as it is, with its own error rows, instead of a pass
        # choosing row by row -- the same values, and no error of the branch no row takes
        taken = b if hits == 0 else a
        if type(taken) is Col and (taken.kind == kind or (kind == "q" and taken.kind == "int")):
            return Col(kind, taken.data, err_or(ec, taken.err), taken.den if taken.kind == "q" else 1, taken.bound)
    ea, eb = getattr(a, "err", None), getattr(b, "err", None)
    err = err_or(ec, None if ea is None else (ea & c), None if eb is None else (eb & ~c))
    if kind == "q":
        n1, d1, _ = as_quantity(a)
        n2, d2, _ = as_quantity(b)
        bound = _max_bound(bound_of(a), bound_of(b))
        if isinstance(d1, int) and isinstance(d2, int) and d1 == d2:
            return Col("q", np.where(c, n1, n2), err, d1, bound)
        return Col("q", np.where(c, n1, n2), err, np.where(c, d1, d2), bound)
    if kind == "str":
        x = interner.code(a.value) if isinstance(a, Const) else a.data  # type: ignore[union-attr]
        y = interner.code(b.value) if isinstance(b, Const) else b.data  # type: ignore[union-attr]
        return Col("str", np.where(c, x, y).astype(np.int32), err)
    get = {"bool": as_bools, "int": as_ints, "float": as_floats}[kind]
    x, _ = get(a)
    y, _ = get(b)
    bound = _max_bound(bound_of(a), bound_of(b)) if kind == "int" else None
    return Col(kind, np.where(c, x, y), err, 1, bound)


def _max_bound(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else max(a, b)


def logical(op: str, a: Value, b_thunk: Callable[[], Value], m: int) -> Value:
    """Short-circuit ``and`` / ``or``: ``b`` is only evaluated (and can only fail) where it is reached."""
    if isinstance(a, Const):
        if op == "and" and not a.value:
            return Const(False)
        if op == "or" and a.value:
            return Const(True)
        return b_thunk()
    x, ea = as_bools(a)
    reach = x if op == "and" else ~x
    if not count_nonzero(reach):
        return a
    try:
        b = b_thunk()
    except Poisoned:
        return Col("bool", x.copy(), err_or(ea, reach))
    y, eb = as_bools(b)
    data = (x & y) if op == "and" else (x | y)
    if not isinstance(data, np.ndarray):
        data = np.full(m, data)
    return Col("bool", data, err_or(ea, None if eb is None else (eb & reach)))


def mask_of(v: Value) -> tuple[Mask, Bools | None]:
    """A bool value as a mask (Python bool when constant) and its error rows."""
    if isinstance(v, Const):
        return bool(v.value), None
    assert isinstance(v, Col) and v.kind == "bool"
    return v.data, v.err


# ------------------------------------------------------------------------------- numeric builtins


def to_float(v: Value, kind: str) -> Value:
    if isinstance(v, Const):
        return _py(rt.to_float, v.value)
    assert isinstance(v, Col)
    if kind == "float":
        return v
    if kind == "int":
        return Col("float", v.data.astype(np.float64), v.err)
    data, err = quantity_to_float(v.data, v.den, v.bound)
    return Col("float", data, err_or(v.err, err))


def trunc_round(v: Value, kind: str, rounding: bool) -> Value:
    """``trunc(x)`` / ``round(x)`` (half away from zero) to int."""
    if isinstance(v, Const):
        return _py(rt.go_round if rounding else rt.go_trunc, v.value)
    assert isinstance(v, Col)
    if kind == "int":
        return v
    if kind == "float":
        x = v.data
        if x.size and float(amin(x)) >= 0.0 and float(amax(x)) < 2.0**62:
            # every row >= 0 and inside int64, no NaN (the min would be NaN) nor infinity (the usual score:
            # a sum of non-negative terms): two reductions instead of the flagging below, and no sign to
            # carry -- round adds 1 where the fraction is at least one half (x - trunc(x) is exact)
            if not rounding:
                return Col("int", x.astype(np.int64), v.err)
            t = np.trunc(x)
            return Col("int", (t + (x - t >= 0.5)).astype(np.int64), v.err)
        ok = np.abs(x) < 2.0**62  # False for NaN and the infinities too
        nok = int(count_nonzero(ok))
        safe = x if nok == x.size else np.where(ok, x, 0.0)  # only finite values reach the cast
        err = err_or(v.err, None if nok == x.size else ~ok)
        if not rounding:  # the cast of a finite float inside int64 truncates toward zero: trunc itself
            return Col("int", safe.astype(np.int64), err)
        t = np.trunc(safe)
        t = t + np.where(np.abs(safe - t) * 2 >= 1, np.sign(safe), 0.0)
        return Col("int", t.astype(np.int64), err)
    n, d = v.data, v.den
    if isinstance(d, int) and d == 1:
        return Col("int", n, v.err, 1, v.bound)
    if n.size and int(amin(n)) >= 0:  # no negative numerator (the usual case): no sign to take off and put back
        q = n // d
        if rounding:
            q = q + (2 * (n - q * d) >= d)
        return Col("int", q, v.err, 1, v.bound)
    an = np.abs(n)
    q = an // d
    if rounding:
        rem = an - q * d
        q = q + (2 * rem >= d)
    return Col("int", np.where(n < 0, -q, q), v.err, 1, v.bound)


def absolute(v: Value, kind: str) -> Value:
    if isinstance(v, Const):
        return _py(abs, v.value)
    assert isinstance(v, Col)
    return Col(kind, np.abs(v.data), v.err, v.den, v.bound)


def pick(values: list[Value], kind: str, smallest: bool, interner: Any) -> Value:
    """Python's ``min(a, b, ...)`` / ``max``: keep the current value unless an item is strictly better."""
    cur = values[0]
    for x in values[1:]:
        better = compare("<" if smallest else ">", x, kind, cur, kind, interner)
        cur = select(better, x, cur, kind, interner)
    return cur


def unary_map(fn: Callable[[Any], Any], v: Value, kind_in: str, kind_out: str, interner: Any) -> Value:
    """A scalar function applied once per distinct value (``ln``, ``sqrt``: libm, not numpy's SIMD log)."""
    if isinstance(v, Const):
        return _py(fn, v.value)
    assert isinstance(v, Col)
    from policyscheduler.evaluation.vector.kernels import map_values

    return map_values(fn, v, kind_in, kind_out, interner)
