"""Explain how two decisions differ -- the oracle check between evaluator implementations.

A faster evaluator is correct when it returns a :class:`Decision` equal to the reference's for the
same policy set, snapshot, pod and seed. ``==`` says *whether*; :func:`diff_decisions` says *where*,
field by field and node by node, so a failing differential test points at the rule and node at fault.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policyscheduler.evaluation.decision import Decision

__all__ = ["diff_decisions"]

_SCALARS = ("pod", "node", "feasible", "totals", "top", "score", "message", "policy_digest")


def _diff_maps(label: str, a: Mapping[str, Any], b: Mapping[str, Any], out: list[str]) -> None:
    for key in sorted(set(a) | set(b)):
        if key not in a:
            out.append(f"{label}[{key!r}]: missing on the left, right has {b[key]!r}")
        elif key not in b:
            out.append(f"{label}[{key!r}]: left has {a[key]!r}, missing on the right")
        elif a[key] != b[key]:
            out.append(f"{label}[{key!r}]: {a[key]!r} != {b[key]!r}")


def diff_decisions(left: Decision, right: Decision) -> list[str]:
    """Human-readable differences between two decisions ([] iff they are equal)."""
    out: list[str] = []
    _diff_maps("verdicts", left.verdicts, right.verdicts, out)
    for rule in sorted(set(left.scores) | set(right.scores)):
        _diff_maps(f"scores[{rule!r}]", left.scores.get(rule, {}), right.scores.get(rule, {}), out)
    for name in _SCALARS:
        a, b = getattr(left, name), getattr(right, name)
        if a != b:
            out.append(f"{name}: {a!r} != {b!r}")
    return out
