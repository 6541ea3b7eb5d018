"""Kubernetes resource quantities ("500m", "2Gi", "1e3") as exact fractions.

kube-scheduler reads quantities through ``resource.Quantity``: exact decimal arithmetic, then
``MilliValue()`` for cpu and ``Value()`` for everything else, both rounding *up*. We parse into
:class:`fractions.Fraction` (exact) and round the same way, so integer formulas give kube's numbers.

One parser for both sides: the checker reads quantity literals in policies (``2Gi``) with it and the
object model reads resource values in Kubernetes objects, so a literal and a field mean the same number.
Like :mod:`policyscheduler.schema`, it sits below both and imports nothing of the package.
"""

from __future__ import annotations

import re
from fractions import Fraction
from math import ceil

__all__ = ["parse_quantity", "QuantityError", "to_quantity", "round_resource"]

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
# sign, then "1", "1.", "1.5" or ".5", then an optional suffix or decimal exponent.
_RE = re.compile(r"^([+-]?)(\d+\.?\d*|\.\d+)(?:([eE])([+-]?\d+)|([A-Za-z]*))$")


MAX_DIGITS = 40
"""Digits a quantity may have: the API server keeps quantities in 64 bits (about 19 digits, plus a scale);
a 5,000-digit number would make every comparison slow (and Python's int() refuses more than 4,300)."""

MAX_EXPONENT = 60
"""Largest decimal exponent (``1e60``): beyond, a quantity cannot be a real amount of anything."""


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity (message says why, for snapshot warnings)."""


def _parse(text: str) -> Fraction:
    m = _RE.match(text.strip())
    if not m:
        raise QuantityError(f"invalid quantity {text!r}")
    sign, number, exp_mark, exponent, suffix = m.groups()
    if len(number) > MAX_DIGITS:
        raise QuantityError(f"quantity too large: {len(number):,} digits (at most {MAX_DIGITS})")
    value = Fraction(number)
    if exp_mark:
        if len(exponent.lstrip("+-")) > 4 or abs(int(exponent)) > MAX_EXPONENT:
            raise QuantityError(f"quantity too large: exponent out of range in {text!r} (at most {MAX_EXPONENT})")
        value *= Fraction(10) ** int(exponent)
    elif suffix in _BINARY:
        value *= _BINARY[suffix]
    elif suffix in _DECIMAL:
        value *= _DECIMAL[suffix]
    else:
        raise QuantityError(f"invalid quantity {text!r}: unknown suffix {suffix!r}")
    return -value if sign == "-" else value


def parse_quantity(text: str) -> Fraction | None:
    """The exact value of a quantity string, or None when it is not one."""
    if not isinstance(text, str):
        return None
    try:
        return _parse(text)
    except QuantityError:
        return None


def to_quantity(raw: object) -> Fraction:
    """Parse a quantity as found in a Kubernetes object: a string, or a bare YAML number.

    Raises :class:`QuantityError` for anything else (booleans, lists, bad strings).
    """
    if isinstance(raw, bool):
        raise QuantityError(f"invalid quantity {raw!r}")
    if isinstance(raw, int):
        return Fraction(raw)
    if isinstance(raw, float):
        if raw != raw or raw in (float("inf"), float("-inf")):
            raise QuantityError(f"invalid quantity {raw!r}")
        return Fraction(repr(raw))
    if isinstance(raw, str):
        return _parse(raw)
    raise QuantityError(f"invalid quantity {raw!r} (expected a string)")


def round_resource(name: str, value: Fraction) -> Fraction:
    """Round like kube-scheduler reads a resource: cpu up to whole millicores, others up to integers."""
    if name == "cpu":
        return Fraction(ceil(value * 1000), 1000)
    return Fraction(ceil(value))
