"""``--now RFC3339``: the decision time of the offline commands (``simulate``, ``explain``, ``test``).

Rules read the decision time as ``now`` (grammar/LANGUAGE.md, "Time"). The live scheduler uses the
wall clock; an offline run uses a fixed instant, :data:`~policyscheduler.times.DEFAULT_NOW_TEXT` unless
``--now`` gives another, so that a run gives the same answer every day. Each command prints the instant
it used.
"""

from __future__ import annotations

import argparse

from policyscheduler.times import DEFAULT_NOW, DEFAULT_NOW_TEXT, format_timestamp, parse_timestamp

__all__ = ["add_now_argument", "chosen_now", "now_text"]


def _instant(text: str) -> int:
    value = parse_timestamp(text)
    if value is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not an RFC 3339 time (e.g. 2026-12-04T10:15:00Z) "
                                         "or 20261204T101500Z")
    return value


def add_now_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--now", metavar="RFC3339", type=_instant, default=None,
                        help=f"the decision time rules read as 'now' (default: {DEFAULT_NOW_TEXT}, fixed so that "
                        "results do not depend on the day they are computed)")


def chosen_now(args: argparse.Namespace) -> int:
    """The instant ``--now`` gave, else the fixed default."""
    value = getattr(args, "now", None)
    return DEFAULT_NOW if value is None else int(value)


def now_text(args: argparse.Namespace) -> str:
    """``2026-01-01T00:00:00Z (default)`` / ``... (--now)``: what the output says about ``now``."""
    given = getattr(args, "now", None) is not None
    return f"{format_timestamp(chosen_now(args))} ({'--now' if given else 'default; --now changes it'})"
