"""Runtime values of the vectorised backend: one value per row of a domain (nodes, or ragged elements).

A lowered expression evaluates to one of:

* :class:`Const` -- the same Python value on every row (pod-level parts, literals, unrolled loop items);
* :class:`Col` -- a typed numpy column: ``bool``, ``int`` (int64), ``float`` (float64), ``str`` (int32
  codes of a shared :class:`~.columns.Interner`) or ``q`` (an exact quantity ``data / den``: int64
  numerators over a positive int64 denominator, a Python int when it is one for the whole column);
* :class:`Rec` -- records of a table (the node itself, or an element of ``node.taints`` ...), by row;
* :class:`Path` -- a list or map field of such records (``node.labels``), read through :class:`Rec`;
* :class:`MList` -- a list whose items are known but whose *presence* varies per row: a comprehension
  over a pod-level list with a node-dependent ``where`` (item k is in row r's list iff ``mask[r]``);
* :class:`RList` -- a comprehension over a ragged node collection (only for ``reject each`` / ``len``).

Every :class:`Col` may carry ``err``: the rows on which computing it fails (division by zero, a number
leaving int64, a float that cannot be converted exactly). ``err`` may over-approximate: an erring row is
simply re-evaluated by the reference closures, which then produce the exact value or the exact error
verdict. A computation that fails on *every* row (a pod-level part raised) raises :class:`Poisoned`,
which the nearest enclosing mask boundary (``and``/``or``/``if``, a loop item, a clause) turns into
``err`` on exactly the rows that would have evaluated it.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Union

import numpy as np
import numpy.typing as npt

from policyscheduler.evaluation.arrays import amax, count_nonzero, filled

Arr = npt.NDArray[Any]
Bools = npt.NDArray[np.bool_]
Mask = Union[Bools, bool]  # noqa: UP007 -- a runtime alias mypy reads as a Union
"""Per row: an array, or the Python bool ``True``/``False`` for "every row" / "no row"."""

INT_GUARD = float(2**62)
"""A float estimate of an int64 result at or above this magnitude flags the row (int64 ends at 2**63)."""
EXACT_FLOAT = float(2**53)
"""Integers up to this magnitude convert to float64 exactly."""
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class Poisoned(Exception):
    """A value that cannot be computed on any row (a pod-level part failed, or left int64)."""


class Unsupported(Exception):
    """A construct the vectorised lowering does not handle; the rule falls back to the reference."""


class Const:
    """One Python value for every row (exactly what the reference closures compute)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def take(self, ix: Arr) -> Const:
        return self

    def __repr__(self) -> str:
        return f"Const({self.value!r})"


class Col:
    """A typed column over the rows of a domain; see the module docstring for the kinds."""

    __slots__ = ("bound", "data", "den", "err", "kind")

    def __init__(self, kind: str, data: Arr, err: Bools | None = None, den: Any = 1,
                 bound: float | None = None) -> None:
        self.kind = kind
        self.data = data
        self.err = err
        self.den = den
        self.bound = bound
        """For ``int`` / ``q``: an upper bound of ``|data|`` when known (then overflow guards that it
        proves unnecessary are skipped), else None."""

    def take(self, ix: Arr) -> Col:
        """The rows ``ix`` (int64 positions) of this column. ``ndarray.take`` gives what ``data[ix]`` gives
        for a 1-d array and an in-range integer index, a third faster (no fancy-indexing dispatch): every
        rule gathers its table columns on the filtered rows this way."""
        den = self.den.take(ix) if isinstance(self.den, np.ndarray) else self.den
        return Col(self.kind, self.data.take(ix), None if self.err is None else self.err.take(ix), den, self.bound)

    def __repr__(self) -> str:
        return f"Col({self.kind}, {self.data!r}, den={self.den!r}, err={self.err!r})"


class Rec:
    """Records of a table (``table.objects[rows]``): the node, or an element of a ragged node list."""

    __slots__ = ("full", "rows", "table")

    def __init__(self, table: Any, rows: Arr, full: bool = False) -> None:
        self.table = table
        self.rows = rows
        self.full = full
        """True when ``rows`` is every row of the table in order: columns are then used as they are."""

    def take(self, ix: Arr) -> Rec:
        return Rec(self.table, self.rows[ix])

    def gather(self, col: Col) -> Col:
        """The column's values on these records."""
        return col if self.full else col.take(self.rows)


class Path:
    """A list/map field of :class:`Rec` records, read only through ``[k]``, ``k in``, ``len`` or a loop."""

    __slots__ = ("field", "rec")

    def __init__(self, rec: Rec, field: str) -> None:
        self.rec = rec
        self.field = field

    def take(self, ix: Arr) -> Path:
        return Path(self.rec.take(ix), self.field)


class MList:
    """A list with per-row item presence: ``items[k] = (mask, value)``."""

    __slots__ = ("err", "items")

    def __init__(self, items: list[tuple[Mask, Any]], err: Bools | None = None) -> None:
        self.items = items
        self.err = err

    def take(self, ix: Arr) -> MList:
        return MList([(m if isinstance(m, bool) else m[ix], v.take(ix)) for m, v in self.items],
                     None if self.err is None else self.err[ix])


class RList:
    """A comprehension over a ragged node list: values over elements, grouped by node row."""

    __slots__ = ("err", "present", "segments", "value")

    def __init__(self, segments: Any, present: Mask, value: Any, err: Bools | None = None) -> None:
        self.segments = segments
        self.present = present
        self.value = value
        self.err = err

    def take(self, ix: Arr) -> RList:
        raise Poisoned("a ragged list cannot leave its loop")


Value = Union[Const, Col, Rec, Path, MList, RList]  # noqa: UP007

# ------------------------------------------------------------------------------------------ masks


def err_or(*errs: Bools | None) -> Bools | None:
    """The union of error masks (None = no row)."""
    out: Bools | None = None
    for e in errs:
        if e is None:
            continue
        out = e if out is None else (out | e)
    return out


def mask_and(a: Mask, b: Mask) -> Mask:
    if a is True:
        return b
    if b is True:
        return a
    if a is False or b is False:
        return False
    return a & b


def mask_array(a: Mask, m: int) -> Bools:
    if isinstance(a, bool):
        return filled(m, a, np.bool_)
    return a


def restrict(err: Bools | None, mask: Mask) -> Bools | None:
    """``err`` restricted to the rows of ``mask`` (the rows that actually evaluate it)."""
    if err is None or mask is False:
        return None
    if mask is True:
        return err
    return err & mask


def mask_not(m: Mask) -> Mask:
    return (not m) if isinstance(m, bool) else ~m


def mask_or(a: Mask, b: Mask) -> Mask:
    if a is True or b is True:
        return True
    if a is False:
        return b
    if b is False:
        return a
    return a | b


# ------------------------------------------------------------------------------------ conversions

KINDS = ("bool", "int", "float", "str", "q")


def const_int(x: int) -> np.int64:
    """A Python int as an int64 scalar, or Poisoned when it does not fit."""
    if not -(2**62) < x < 2**62:
        raise Poisoned(f"{x} leaves int64")
    return np.int64(x)


def const_q(x: Any) -> tuple[np.int64, int]:
    """An int or Fraction as (int64 numerator, Python int denominator)."""
    if type(x) is int:  # the common case, without Fraction's (ABC) isinstance and constructor
        if not -(2**62) < x < 2**62:
            raise Poisoned(f"{x} leaves int64")
        return np.int64(x), 1
    f = x if isinstance(x, Fraction) else Fraction(x)
    if not -(2**62) < f.numerator < 2**62 or f.denominator >= 2**62:
        raise Poisoned(f"{x} leaves int64")
    return np.int64(f.numerator), f.denominator


def as_ints(v: Value) -> tuple[Any, Bools | None]:
    if isinstance(v, Const):
        return const_int(v.value), None
    assert isinstance(v, Col) and v.kind == "int", v
    return v.data, v.err


def as_floats(v: Value) -> tuple[Any, Bools | None]:
    if isinstance(v, Const):
        return np.float64(v.value), None
    assert isinstance(v, Col) and v.kind == "float", v
    return v.data, v.err


def as_quantity(v: Value) -> tuple[Any, Any, Bools | None]:
    """(numerators, denominator, err) of an int or quantity value."""
    if isinstance(v, Const):
        n, d = const_q(v.value)
        return n, d, None
    assert isinstance(v, Col) and v.kind in ("int", "q"), v
    return v.data, (v.den if v.kind == "q" else 1), v.err


def as_bools(v: Value) -> tuple[Any, Bools | None]:
    if isinstance(v, Const):
        return bool(v.value), None
    assert isinstance(v, Col) and v.kind == "bool", v
    return v.data, v.err


def fl(x: Any) -> Any:
    """Float64 estimate of an int64 array or scalar (for overflow guards)."""
    return x.astype(np.float64) if isinstance(x, np.ndarray) else np.float64(x)


def guard(estimate: Any) -> Bools | None:
    """Rows whose float estimate leaves the int64 safety range."""
    bad = np.abs(estimate) >= INT_GUARD
    if isinstance(bad, np.ndarray):
        return bad if count_nonzero(bad) else None
    if bad:
        raise Poisoned("leaves int64")
    return None


def int_add(a: Any, b: Any, sub: bool = False, ba: float | None = None,
            bb: float | None = None) -> tuple[Any, Bools | None]:
    """``a ± b`` in int64; rows that may overflow are flagged unless the bounds ``ba``/``bb`` rule it out."""
    if ba is not None and bb is not None and ba + bb < INT_GUARD:
        return (a - b, None) if sub else (a + b, None)
    # the guard first: on two scalars it raises before numpy's scalar arithmetic could overflow (and
    # warn); an array operation wraps silently and the guard flags its rows
    if sub:
        e = guard(fl(a) - fl(b))
        return a - b, e
    e = guard(fl(a) + fl(b))
    return a + b, e


def int_mul(a: Any, b: Any, ba: float | None = None, bb: float | None = None) -> tuple[Any, Bools | None]:
    """``a * b`` in int64, guarded like :func:`int_add`. A factor that is the Python int 1 (a denominator
    of 1: cross-multiplying by a whole-valued quantity's denominator) gives the other operand itself, not
    a copy made by a pass over the rows: values are never updated in place."""
    if type(b) is int and b == 1:
        return a, None
    if type(a) is int and a == 1:
        return b, None
    if ba is not None and bb is not None and ba * bb < INT_GUARD:
        return a * b, None
    e = guard(fl(a) * fl(b))  # first, as in int_add: a scalar overflow raises Poisoned, never a warning
    return a * b, e


def bound_of(v: Value) -> float | None:
    """An upper bound of ``|numerator|`` of an int / quantity value, when known."""
    if type(v) is Col:
        return v.bound
    if isinstance(v, Const):
        x = v.value
        if type(x) is int:  # no isinstance against Fraction (an ABC check) for the common case
            return float(abs(x))
        return float(abs(x.numerator if isinstance(x, Fraction) else x))
    return v.bound if isinstance(v, Col) else None


def bound_of_array(data: Arr) -> float:
    return float(amax(np.abs(data))) if data.size else 0.0


def quantity_to_float(n: Any, d: Any, bound: float | None = None) -> tuple[Any, Bools | None]:
    """``float(n / d)`` correctly rounded: exact operands make IEEE division the one rounding."""
    if bound is not None and bound < EXACT_FLOAT and isinstance(d, int) and d <= EXACT_FLOAT:
        return fl(n) / float(d), None
    if bound is not None and bound < EXACT_FLOAT and isinstance(d, np.ndarray) and d.size \
            and int(amax(d)) <= EXACT_FLOAT:
        # per-row denominators (a quotient's), all exact: one check, no row flagged. Denominators are
        # positive (a row whose computation left that invariant is in ``err`` already), so the largest
        # one bounds them all
        return fl(n) / fl(d), None
    bad = (np.abs(fl(n)) >= EXACT_FLOAT) | (np.abs(fl(d)) >= EXACT_FLOAT)
    err = bad if isinstance(bad, np.ndarray) and count_nonzero(bad) else None
    if not isinstance(bad, np.ndarray) and bad:
        raise Poisoned("quantity too large for an exact float")
    return fl(n) / fl(d), err


def convert(v: Value, dst: str) -> Value:
    """The reference's ``as_type`` promotions: int -> float, int -> quantity, quantity -> float."""
    if isinstance(v, Const):
        x = v.value
        if dst == "float" and not isinstance(x, float) and isinstance(x, (int, Fraction)) and not isinstance(x, bool):
            try:
                return Const(float(x))
            except OverflowError as exc:
                raise Poisoned(str(exc)) from None
        if dst == "q" and isinstance(x, int) and not isinstance(x, bool):
            return Const(Fraction(x))
        return v
    if not isinstance(v, Col) or v.kind == dst:
        return v
    if v.kind == "int" and dst == "float":
        return Col("float", v.data.astype(np.float64), v.err)
    if v.kind == "int" and dst == "q":
        return Col("q", v.data, v.err, 1, v.bound)
    if v.kind == "q" and dst == "float":
        data, err = quantity_to_float(v.data, v.den, v.bound)
        return Col("float", data, err_or(v.err, err))
    return v


def from_python(values: list[Any], kind: str, interner: Any) -> Col:
    """A column from Python values of one static kind (rows that cannot be represented get ``err``)."""
    n = len(values)
    if kind == "bool":
        return Col("bool", np.fromiter((bool(x) for x in values), dtype=np.bool_, count=n))
    if kind == "str":
        return Col("str", interner.codes(values))
    if kind == "float":
        return Col("float", np.fromiter((float(x) for x in values), dtype=np.float64, count=n))
    if kind == "int":
        try:
            data = np.fromiter(values, dtype=np.int64, count=n)
            return Col("int", data, None, 1, bound_of_array(data))
        except OverflowError:
            data = np.array([x if -(2**62) < x < 2**62 else 0 for x in values], dtype=np.int64)
            return Col("int", data, np.array([not -(2**62) < x < 2**62 for x in values], dtype=np.bool_), 1,
                       bound_of_array(data))
    assert kind == "q", kind
    return fixed_point(values)


def fixed_point(values: list[Any]) -> Col:
    """Exact quantities as int64 numerators over one common denominator (rows that do not fit: err)."""
    den = 1
    for x in values:
        d = x.denominator if type(x) is int or isinstance(x, Fraction) else 1  # int.denominator is 1
        if den % d:
            den = den * d // math.gcd(den, d)
            if den > 10**12:
                break
    if den > 10**12:
        den = 10**9
    nums: list[int] = []
    bad: list[bool] = []
    any_bad = False
    for x in values:
        f = x if type(x) is int or isinstance(x, Fraction) else Fraction(x)  # an int is its own fraction
        num = f.numerator * (den // f.denominator) if den % f.denominator == 0 else None
        if num is None or not -(2**62) < num < 2**62:
            nums.append(0)
            bad.append(True)
            any_bad = True
        else:
            nums.append(num)
            bad.append(False)
    data = np.array(nums, dtype=np.int64)
    return Col("q", data, np.array(bad, dtype=np.bool_) if any_bad else None, den, bound_of_array(data))
