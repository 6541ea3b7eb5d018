"""Runtime implementations of the generic builtins and operators, with Go's integer semantics.

kube-scheduler's formulas are Go integer arithmetic; reproducing them needs truncating division, Go's
remainder sign and ``math.Round``'s half-away-from-zero. Failures raise :class:`EvalFailure`, which the
compiled rule turns into a :class:`~policyscheduler.diagnostics.PolicyRuntimeError` with a span.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from policyscheduler.checker.conversions import format_value, parse_float, parse_int, parse_quantity
from policyscheduler.times import SECOND


class EvalFailure(Exception):
    """A runtime failure inside an expression (caught and located by closures.py)."""


def go_div(a: int, b: int) -> int:
    """Integer division truncating toward zero (Go ``/``)."""
    if b == 0:
        raise EvalFailure("integer division by zero")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def go_mod(a: int, b: int) -> int:
    """Integer remainder with the sign of the dividend (Go ``%``)."""
    if b == 0:
        raise EvalFailure("integer remainder by zero")
    r = abs(a) % abs(b)
    return r if a >= 0 else -r


def real_div(a: Any, b: Any) -> Any:
    """Float or exact quantity division; zero divisors are errors rather than Inf."""
    if b == 0:
        raise EvalFailure("division by zero")
    return a / b


def go_round(x: Any) -> int:
    """Round half away from zero (Go ``math.Round``), exactly."""
    if isinstance(x, int):
        return x
    _finite(x, "round")
    t = math.trunc(x)
    if abs(x - t) * 2 >= 1:
        t += 1 if x > 0 else -1
    return int(t)


def go_trunc(x: Any) -> int:
    """Toward zero, as an int."""
    if isinstance(x, int):
        return x
    _finite(x, "trunc")
    whole: int = math.trunc(x)
    return whole


def _finite(x: float | Fraction, what: str) -> None:
    if isinstance(x, float) and not math.isfinite(x):
        raise EvalFailure(f"{what} of {x}")


def to_float(x: Any) -> float:
    """float(): one correctly rounded conversion (so float(a / b) of quantities is Go's float64(a)/float64(b))."""
    try:
        return float(x)
    except OverflowError:
        raise EvalFailure(f"{x} is too large for a float") from None


def ln(x: Any) -> float:
    if x <= 0:
        raise EvalFailure(f"ln of a non-positive number ({x})")
    return math.log(x) if not isinstance(x, Fraction) else math.log(x.numerator) - math.log(x.denominator)


def sqrt(x: Any) -> float:
    if x < 0:
        raise EvalFailure(f"sqrt of a negative number ({x})")
    return math.sqrt(x)


def seconds(d: int) -> int:
    """``seconds(d)``: a duration (int nanoseconds) in whole seconds, toward zero."""
    return go_div(d, SECOND)


def first(xs: Sequence[Any]) -> tuple[Any, ...]:
    """A list holding the first item, or an empty list."""
    return tuple(xs[:1])


def equal(a: Any, b: Any) -> bool:
    """``==`` where a list is a list whether the object model stores it as a list or a tuple."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b))
    return bool(a == b)


def member(item: Any, container: Any) -> bool:
    """``in``: list membership (list-aware equality), map key, or substring."""
    if isinstance(container, (str, dict)):
        return item in container
    if isinstance(item, (list, tuple)):
        return any(equal(item, x) for x in container)
    return item in container


def to_str(x: Any) -> str:
    """``str(x)``: see :func:`policyscheduler.checker.conversions.format_value` (Go formatting)."""
    return format_value(x)


def is_int(s: str) -> bool:
    """``is_int(s)``: would ``int(s)`` parse."""
    return parse_int(s) is not None


def is_float(s: str) -> bool:
    """``is_float(s)``: would ``float(s)`` parse."""
    return parse_float(s) is not None


def is_quantity(s: str) -> bool:
    """``is_quantity(s)``: would ``quantity(s)`` parse."""
    return parse_quantity(s) is not None


def split(s: str, sep: str) -> tuple[str, ...]:
    """Go ``strings.Split``: an empty separator splits after each character; "" gives [""]."""
    if sep == "":
        return tuple(s)
    return tuple(s.split(sep))
