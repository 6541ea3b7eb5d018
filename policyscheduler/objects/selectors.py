"""Label selectors and node selector requirements, with apimachinery's matching rules.

Two flavours share one requirement type:

* ``metav1.LabelSelector`` (pods, spread constraints, affinity terms): matchLabels + matchExpressions
  with In / NotIn / Exists / DoesNotExist. ``None`` means *nothing* (a nil selector matches no pod), an
  empty selector means *everything*.
* ``v1.NodeSelectorRequirement`` (node affinity): the same operators plus Gt / Lt, which compare the
  node label parsed as a 64-bit integer with the single requirement value.

Malformed selectors never raise: :func:`compile_label_selector` returns ``(None, problem)`` and callers
treat the selector as matching nothing (kube-scheduler refuses such pods; we keep going and warn).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Requirement", "Selector", "compile_label_selector", "compile_requirement", "set_selector"]

_INT_RE = re.compile(r"^[+-]?\d+$")
_LABEL_OPS = ("In", "NotIn", "Exists", "DoesNotExist")
_NODE_OPS = _LABEL_OPS + ("Gt", "Lt")


def _parse_int64(text: str) -> int | None:
    if not _INT_RE.match(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def _cached_hash(obj: Any, fields: tuple[Any, ...]) -> int:
    """The hash of a frozen selector value, computed once per object. Selectors are dict keys of the
    state's per-pod indexes (inside match keys: :mod:`policyscheduler.state.indexes`), looked up for
    every pod placed or removed; the dataclass-generated hash rebuilt and hashed the field tuple, and
    each requirement's, on every lookup."""
    found: int | None = obj.__dict__.get("_hash")
    if found is None:
        found = hash(fields)
        object.__setattr__(obj, "_hash", found)
    return found


def _without_hash(obj: Any) -> dict[str, Any]:
    """The pickled state: the fields without the cached hash (string hashes differ between processes)."""
    return {k: v for k, v in obj.__dict__.items() if k != "_hash"}


@dataclass(frozen=True)
class Requirement:
    """One ANDed requirement: ``key OP values`` (Equals is In with one value)."""

    key: str
    operator: str
    values: frozenset[str]
    number: int = 0  # Gt / Lt operand

    def __hash__(self) -> int:
        return _cached_hash(self, (self.key, self.operator, self.values, self.number))

    def __getstate__(self) -> dict[str, Any]:
        return _without_hash(self)

    def matches(self, labels: Mapping[str, str]) -> bool:
        """apimachinery ``Requirement.Matches`` for this operator."""
        op = self.operator
        if op == "In":
            return self.key in labels and labels[self.key] in self.values
        if op == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        if self.key not in labels:
            return False
        value = _parse_int64(labels[self.key])
        if value is None:
            return False
        return value > self.number if op == "Gt" else value < self.number


@dataclass(frozen=True)
class Selector:
    """ANDed requirements; no requirements = matches everything (``Empty()`` in apimachinery)."""

    requirements: tuple[Requirement, ...] = ()

    def __hash__(self) -> int:
        return _cached_hash(self, self.requirements)

    def __getstate__(self) -> dict[str, Any]:
        return _without_hash(self)

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Every requirement matches (a plain loop: this runs per pod and node on the hot path)."""
        for r in self.requirements:
            if not r.matches(labels):
                return False
        return True

    def add(self, *reqs: Requirement) -> Selector:
        """A new selector with more ANDed requirements (``selector.Add``)."""
        return Selector(self.requirements + tuple(reqs))


def _str_list(raw: Any) -> list[str] | None:
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
        return None
    return list(raw)


def compile_requirement(expr: Any, *, node: bool) -> tuple[Requirement | None, str | None]:
    """A matchExpressions item -> Requirement, or (None, problem) when kube would reject it."""
    if not isinstance(expr, Mapping):
        return None, f"selector requirement is not a mapping: {expr!r}"
    key, op = expr.get("key"), expr.get("operator")
    values = _str_list(expr.get("values"))
    if not isinstance(key, str) or not key:
        return None, f"selector requirement has no key: {dict(expr)!r}"
    if values is None:
        return None, f"selector requirement {key!r} has non-string values"
    allowed = _NODE_OPS if node else _LABEL_OPS
    if not isinstance(op, str) or op not in allowed:
        return None, f"selector requirement {key!r} has unsupported operator {op!r}"
    if op in ("In", "NotIn") and not values:
        return None, f"selector requirement {key!r} {op} needs at least one value"
    if op in ("Exists", "DoesNotExist") and values:
        return None, f"selector requirement {key!r} {op} takes no values"
    if op in ("Gt", "Lt"):
        number = _parse_int64(values[0]) if len(values) == 1 else None
        if number is None:
            return None, f"selector requirement {key!r} {op} needs exactly one integer value"
        return Requirement(key, op, frozenset(values), number), None
    return Requirement(key, op, frozenset(values)), None


def compile_label_selector(raw: Any) -> tuple[Selector | None, str | None]:
    """``metav1.LabelSelectorAsSelector``: None (nil) -> (None, None) = matches nothing."""
    if raw is None:
        return None, None
    if not isinstance(raw, Mapping):
        return None, f"label selector is not a mapping: {raw!r}"
    reqs: list[Requirement] = []
    match_labels = raw.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        return None, "label selector matchLabels is not a mapping"
    for key in sorted(match_labels):
        value = match_labels[key]
        if not isinstance(key, str) or not isinstance(value, str):
            return None, f"label selector matchLabels entry {key!r} is not a string"
        reqs.append(Requirement(key, "In", frozenset([value])))
    exprs = raw.get("matchExpressions") or []
    if not isinstance(exprs, list):
        return None, "label selector matchExpressions is not a list"
    for expr in exprs:
        req, problem = compile_requirement(expr, node=False)
        if req is None:
            return None, problem
        reqs.append(req)
    return Selector(tuple(reqs)), None


def set_selector(labels: Mapping[str, str]) -> Selector:
    """``labels.Set(m).AsSelector()``: every key equals its value."""
    return Selector(tuple(Requirement(k, "In", frozenset([v])) for k, v in sorted(labels.items())))
