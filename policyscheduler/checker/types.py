"""The static type lattice of the policy language.

``ERROR`` is the type of an expression that already produced a diagnostic: it is compatible with
everything, so one mistake yields one diagnostic rather than a cascade. ``NOTHING`` is the element type
of the empty list literal ``[]`` and joins with any element type.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction


@dataclasses.dataclass(frozen=True)
class Prim:
    name: str  # bool | int | float | string | quantity | timestamp | duration

    def __str__(self) -> str:
        return self.name


@dataclasses.dataclass(frozen=True)
class ListT:
    elem: Type
    bound: int | None = dataclasses.field(default=None, compare=False)

    def __str__(self) -> str:
        return f"list[{self.elem}]"


@dataclasses.dataclass(frozen=True)
class MapT:
    value: Type

    def __str__(self) -> str:
        return f"map[string, {self.value}]"


@dataclasses.dataclass(frozen=True)
class RecordT:
    name: str

    def __str__(self) -> str:
        return self.name


@dataclasses.dataclass(frozen=True)
class Special:
    name: str  # "error" | "nothing"

    def __str__(self) -> str:
        return "<error>" if self.name == "error" else "nothing"


Type = Prim | ListT | MapT | RecordT | Special

BOOL = Prim("bool")
INT = Prim("int")
FLOAT = Prim("float")
STRING = Prim("string")
QUANTITY = Prim("quantity")
TIMESTAMP = Prim("timestamp")
DURATION = Prim("duration")
ERROR = Special("error")
NOTHING = Special("nothing")

NUMERIC = (INT, FLOAT, QUANTITY)
TIME = (TIMESTAMP, DURATION)
"""Time types (policyscheduler/times.py): int64 nanoseconds at run time, typed apart from ints here."""
INT_LIKE = (INT, TIMESTAMP, DURATION)
"""Types whose values are Python ints at run time (the int operators, with their 64-bit checks, apply)."""


def is_numeric(t: Type) -> bool:
    return t in NUMERIC


def assignable(src: Type, dst: Type) -> bool:
    """Can a value of ``src`` be used where ``dst`` is expected (with int promotion)?"""
    if src == dst or src in (ERROR, NOTHING) or dst == ERROR:
        return True
    if src == INT and dst in (FLOAT, QUANTITY):
        return True
    if isinstance(src, ListT) and isinstance(dst, ListT):
        return assignable(src.elem, dst.elem)
    if isinstance(src, MapT) and isinstance(dst, MapT):
        return assignable(src.value, dst.value)
    return False


def join(a: Type, b: Type) -> Type | None:
    """The least common type of two values (if-then-else branches, list items), None if none."""
    if a == ERROR or b == ERROR:
        return ERROR
    if assignable(a, b):
        return _with_bound(b, a)
    if assignable(b, a):
        return _with_bound(a, b)
    if is_numeric(a) and is_numeric(b):
        return FLOAT  # float with quantity
    if isinstance(a, ListT) and isinstance(b, ListT):
        e = join(a.elem, b.elem)
        return None if e is None else ListT(e, _add_bounds(a.bound, b.bound))
    return None


def _with_bound(t: Type, other: Type) -> Type:
    """``t`` with every list bound (its own and its items', nested) the larger of ``t``'s and ``other``'s:
    a value of the joined type may be either, so the cost model must allow for the longer one at every level."""
    if isinstance(t, ListT) and isinstance(other, ListT):
        return ListT(_with_bound(t.elem, other.elem), _max_bound(t.bound, other.bound))
    return t


def _max_bound(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else max(a, b)


def _add_bounds(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


def arith(a: Type, b: Type) -> Type | None:
    """Result of + - * / between numbers: int op int is int, a float anywhere is float, else quantity."""
    if not (is_numeric(a) and is_numeric(b)):
        return None
    if a == INT and b == INT:
        return INT
    if FLOAT in (a, b):
        return FLOAT
    return QUANTITY


def time_arith(op: str, a: Type, b: Type) -> Type | None:
    """Result of ``+ - * /`` with a time operand, None if the operation has no meaning: timestamp - timestamp
    is a duration; timestamp ± duration a timestamp; durations add and subtract, and scale by an int
    (``d * n``, ``n * d``, ``d / n`` truncating)."""
    if op == "-" and a == b == TIMESTAMP:
        return DURATION
    if op in ("+", "-") and a == TIMESTAMP and b == DURATION:
        return TIMESTAMP
    if op == "+" and a == DURATION and b == TIMESTAMP:
        return TIMESTAMP
    if op in ("+", "-") and a == b == DURATION:
        return DURATION
    if op == "*" and {a, b} == {DURATION, INT}:
        return DURATION
    if op == "/" and a == DURATION and b == INT:
        return DURATION
    return None


def zero_value(t: Type) -> object | None:
    """What reading a missing map key gives (None: the type has no zero value)."""
    if t == STRING:
        return ""
    if t == INT:
        return 0
    if t == FLOAT:
        return 0.0
    if t == BOOL:
        return False
    if t == QUANTITY:
        return Fraction(0)
    if isinstance(t, ListT):
        return ()
    if isinstance(t, MapT):
        return {}
    return None
