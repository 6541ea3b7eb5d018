"""Time values of the policy language: ``timestamp`` and ``duration``, as int64 nanoseconds.

Both are plain Python ints at run time (nanoseconds since the Unix epoch, UTC; nanoseconds of
elapsed time), typed apart by the checker only. That keeps them exact, lets the reference closures use
the int operators with their 64-bit overflow checks, and lets the vector backend hold them in int64
columns with no new kind. The schema tells them from ints by the annotations :data:`Timestamp` and
:data:`Duration` (``NewType`` s of int).

Text forms, read by ``timestamp(s)`` / ``duration(s)`` and written by ``str(x)``:

* timestamps: RFC 3339 (``2026-12-04T10:15:00Z``, ``2026-12-04T10:15:00.25+01:00``; ``T``/``Z`` in
  either case; 1 to 9 fraction digits), as in ``metadata.creationTimestamp`` and annotations; and,
  because a label value cannot hold ``:`` or ``+``, the label-safe ISO 8601 basic form in UTC,
  ``20261204T101500Z``. ``str(t)`` is RFC 3339 in UTC with the fraction's trailing zeros dropped (Go's
  ``time.RFC3339Nano``). Instants outside int64 nanoseconds (before 1677-09-21, after 2262-04-11) do
  not parse.
* durations: Go's ``time.ParseDuration`` syntax -- a sign, then decimal numbers each with a unit
  ``ns us µs ms s m h`` (``10m``, ``1h30m``, ``1.5s``, ``-90s``; ``0`` alone) -- and ``str(d)`` is Go's
  ``Duration.String()`` (``10m0s``, ``1h30m0s``, ``1.5s``, ``500ms``, ``0s``).
"""

from __future__ import annotations

import functools
import re
from datetime import UTC, datetime, timedelta
from typing import NewType

__all__ = ["Timestamp", "Duration", "EPOCH", "SECOND", "DEFAULT_NOW_TEXT", "DEFAULT_NOW", "parse_timestamp",
           "parse_duration", "format_timestamp", "format_duration", "timestamp_of"]

Timestamp = NewType("Timestamp", int)
"""Nanoseconds since 1970-01-01T00:00:00Z (the policy type ``timestamp``)."""
Duration = NewType("Duration", int)
"""Nanoseconds of elapsed time, possibly negative (the policy type ``duration``)."""

SECOND = 1_000_000_000
EPOCH = Timestamp(0)
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

DEFAULT_NOW_TEXT = "2026-01-01T00:00:00Z"
"""The ``now`` of ``simulate``, ``explain`` and ``test`` unless ``--now`` (or a test file's ``now``) says
otherwise: a fixed instant, so their results never depend on the day they run."""

_EPOCH_DT = datetime(1970, 1, 1, tzinfo=UTC)
_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))")
_BASIC = re.compile(r"(\d{4})(\d{2})(\d{2})[Tt](\d{2})(\d{2})(\d{2})[Zz]")
_DURATION_PART = re.compile(r"([0-9]*)(?:\.([0-9]*))?(ns|us|µs|μs|ms|s|m|h)")
_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": SECOND, "m": 60 * SECOND,
          "h": 3600 * SECOND}


def _instant(parts: tuple[str, ...], fraction: str | None, offset_minutes: int) -> Timestamp | None:
    year, month, day, hour, minute, second = map(int, parts)
    try:
        wall = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError:  # month 13, February 30 ...
        return None
    # whole seconds: the float is exact (far below 2**53), and timestamp() is C code (the watch builds
    # every pod's creationTimestamp through here)
    seconds = int(wall.timestamp()) - offset_minutes * 60
    ns = seconds * SECOND + (int(fraction.ljust(9, "0")) if fraction else 0)
    return Timestamp(ns) if INT64_MIN <= ns <= INT64_MAX else None


@functools.lru_cache(maxsize=4096)
def parse_timestamp(text: str) -> Timestamp | None:
    """The instant ``text`` spells (RFC 3339, or ``20261204T101500Z``), None when it does not parse.

    Cached (a pure function of a short string): a label or annotation read on every node for every pod
    takes few distinct values."""
    if len(text) > 40:
        return None
    m = _RFC3339.fullmatch(text)
    if m is not None:
        offset = 0
        if m.group(9):
            hours, minutes = int(m.group(10)), int(m.group(11))
            if hours > 23 or minutes > 59:
                return None
            offset = (hours * 60 + minutes) * (1 if m.group(9) == "+" else -1)
        return _instant(m.groups()[:6], m.group(7), offset)
    m = _BASIC.fullmatch(text)
    if m is not None:
        return _instant(m.groups(), None, 0)
    return None


@functools.lru_cache(maxsize=4096)
def parse_duration(text: str) -> Duration | None:
    """The duration ``text`` spells in Go's ``time.ParseDuration`` syntax, None when it does not parse
    (cached like :func:`parse_timestamp`)."""
    if len(text) > 64:
        return None
    sign, rest = 1, text
    if rest[:1] in ("+", "-"):
        sign, rest = (-1 if rest[0] == "-" else 1), rest[1:]
    if rest == "0":
        return Duration(0)
    if not rest:
        return None
    total = 0
    pos = 0
    while pos < len(rest):
        m = _DURATION_PART.match(rest, pos)
        if m is None or (not m.group(1) and not m.group(2)):
            return None
        unit = _UNITS[m.group(3)]
        whole = int(m.group(1) or "0") * unit
        digits = m.group(2) or ""
        if digits:  # exact: the fraction's digits scaled by the unit, truncated to whole nanoseconds
            whole += int(digits) * unit // 10 ** len(digits)
        total += whole
        pos = m.end()
    total *= sign
    return Duration(total) if INT64_MIN <= total <= INT64_MAX else None


def _fraction(ns: int, digits: int) -> str:
    """``.25`` for 250000000 of 9 digits: trailing zeros dropped, "" for none."""
    text = str(ns).rjust(digits, "0").rstrip("0")
    return "." + text if text else ""


def format_timestamp(ns: int) -> str:
    """RFC 3339 in UTC, the fraction's trailing zeros dropped (Go's ``time.RFC3339Nano``)."""
    seconds, rest = divmod(ns, SECOND)
    wall = _EPOCH_DT + timedelta(seconds=seconds)
    return wall.strftime("%Y-%m-%dT%H:%M:%S") + _fraction(rest, 9) + "Z"


def format_duration(ns: int) -> str:
    """Go's ``Duration.String()``: ``1h30m0s``, ``10m0s``, ``1.5s``, ``500ms``, ``2µs``, ``0s``."""
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    u = abs(ns)
    if u < SECOND:
        for unit, size, digits in (("ns", 1, 0), ("µs", 1_000, 3), ("ms", 1_000_000, 6)):
            if u < size * 1_000:
                whole, rest = divmod(u, size)
                return f"{sign}{whole}{_fraction(rest, digits) if digits else ''}{unit}"
    hours, rest = divmod(u, 3600 * SECOND)
    minutes, rest = divmod(rest, 60 * SECOND)
    seconds, rest = divmod(rest, SECOND)
    text = f"{hours}h" if hours else ""
    if hours or minutes:
        text += f"{minutes}m"
    return f"{sign}{text}{seconds}{_fraction(rest, 9)}s"


def timestamp_of(value: object) -> Timestamp:
    """An object's timestamp field (``metadata.creationTimestamp``) as read by the builders: the instant,
    or the epoch when it is absent or does not parse (the builders warn about the latter)."""
    if isinstance(value, str):
        parsed = parse_timestamp(value)
        if parsed is not None:
            return parsed
    return EPOCH


DEFAULT_NOW = parse_timestamp(DEFAULT_NOW_TEXT) or EPOCH
