"""Text <-> value conversions of the language (``int(s)``, ``float(s)``, ``quantity(s)``, ``str(x)``).

They live with the checker because both sides need them: the checker folds conversions of string
literals at lint time, and the compiled closures call the same functions at run time, so a label
value parses the same way in ``lint`` and in the scheduler. The semantics are Go's, as in
kube-scheduler (which compares label values with ``strconv.ParseInt`` in NodeAffinity ``Gt``/``Lt``):

* ``parse_int`` -- ``strconv.ParseInt(s, 10, 64)``: an optional sign and decimal digits, within int64;
  no spaces, no underscores, no ``0x``.
* ``parse_float`` -- decimal or exponent notation (``1.5``, ``-2e3``, ``.5``); ``Inf``/``NaN`` and hex
  floats (which Go would accept) do not parse, so a result is always a finite number.
* ``parse_quantity`` -- a Kubernetes quantity (``500m``, ``2Gi``, ``1e3``), exactly as object fields are
  read (:mod:`policyscheduler.quantity`).
* ``format_value`` -- ``str(x)``: ints in decimal, floats like Go's ``strconv.FormatFloat(x, 'g', -1, 64)``
  (``0.5``, ``1e+06``), quantities as an exact decimal with the largest SI suffix that keeps them whole
  (``500m``, ``2147483648`` for ``2Gi``), booleans as ``true``/``false``.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

from policyscheduler.quantity import parse_quantity

__all__ = ["format_value", "parse_float", "parse_int", "parse_quantity"]

_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_INT64 = (-(2**63), 2**63 - 1)


def parse_int(text: str) -> int | None:
    """The int ``text`` spells (Go ``strconv.ParseInt(s, 10, 64)``), None when it does not parse."""
    if len(text) > 20 or not _INT.fullmatch(text):  # int64 has 19 digits (and a sign); int() of 5,000 digits raises
        return None
    value = int(text)
    return value if _INT64[0] <= value <= _INT64[1] else None


def parse_float(text: str) -> float | None:
    """The finite float ``text`` spells (decimal or exponent form), None when it does not parse."""
    if not _FLOAT.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def _format_float(x: float) -> str:
    """Go's ``strconv.FormatFloat(x, 'g', -1, 64)``: shortest digits; exponent form when exp < -4 or >= 6."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "+Inf" if x > 0 else "-Inf"
    if x == 0:
        return "-0" if math.copysign(1.0, x) < 0 else "0"
    sign = "-" if x < 0 else ""
    # shortest round-tripping digits: repr gives them; re-derive the decimal exponent from it
    digits_repr = repr(abs(x))
    if "e" in digits_repr:
        m, _, e = digits_repr.partition("e")
        digits = m.replace(".", "").lstrip("0")
        exp = int(e) + (len(m.split(".")[0].lstrip("0")) - 1 if m.split(".")[0].lstrip("0") else 0)
    else:
        whole, _, frac = digits_repr.partition(".")
        frac = frac.rstrip("0") if frac != "0" else ""
        if whole.strip("0"):
            digits = (whole.lstrip("0") + frac).rstrip("0") or "0"
            exp = len(whole.lstrip("0")) - 1
        else:
            stripped = frac.lstrip("0")
            digits = stripped
            exp = -(len(frac) - len(stripped)) - 1
    digits = digits.rstrip("0") or "0"
    if exp < -4 or exp >= 6:  # strconv: with the shortest precision, eprec is 6
        body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{body}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if exp >= 0:
        if len(digits) <= exp + 1:
            return sign + digits + "0" * (exp + 1 - len(digits))
        return sign + digits[: exp + 1] + "." + digits[exp + 1:]
    return sign + "0." + "0" * (-exp - 1) + digits


_SI = ((Fraction(1), ""), (Fraction(1, 1000), "m"), (Fraction(1, 10**6), "u"), (Fraction(1, 10**9), "n"))


def _format_quantity(q: Fraction) -> str:
    for unit, suffix in _SI:
        scaled = q / unit
        if scaled.denominator == 1:
            return f"{scaled.numerator}{suffix}"
    return _format_float(float(q))


def format_value(x: object) -> str:
    """``str(x)`` of a language value (see the module docstring)."""
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        return _format_float(x)
    if isinstance(x, Fraction):
        return _format_quantity(x)
    if isinstance(x, str):
        return x
    return str(x)
