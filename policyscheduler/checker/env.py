"""The schema a policy is checked against: record fields, methods, builtins and roots.

Built from the registries of :mod:`policyscheduler.schema` (filled when ``policyscheduler.objects`` is
imported) by reading dataclass annotations and ``@exposed`` signatures with ``typing.get_type_hints``,
or from explicit dicts (tests use a small schema of their own). The checker consults only this object.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
import typing
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

from policyscheduler import schema as registry
from policyscheduler import times
from policyscheduler.checker.types import (
    BOOL,
    DURATION,
    ERROR,
    FLOAT,
    INT,
    QUANTITY,
    STRING,
    TIMESTAMP,
    ListT,
    MapT,
    RecordT,
    Type,
)

GENERIC_DOCS: dict[str, str] = {
    "len": "len(x): items of a list or map, characters of a string",
    "abs": "abs(x): absolute value of a number",
    "min": "min(a, b, ...): the smallest of numbers or strings (min(x in L: V) is the aggregate)",
    "max": "max(a, b, ...): the largest of numbers or strings (max(x in L: V) is the aggregate)",
    "trunc": "trunc(x): a number toward zero, as an int",
    "round": "round(x): a number to the nearest int, half away from zero (Go math.Round)",
    "float": "float(x) / float(s, default D): a number as a float; a string parsed as a decimal number",
    "int": "int(x) / int(s, default D): a number truncated to an int; a string parsed as a decimal integer",
    "quantity": "quantity(s, default D): a string parsed as a Kubernetes quantity (\"500m\", \"2Gi\")",
    "is_int": "is_int(s): does the string parse with int(s)",
    "is_float": "is_float(s): does the string parse with float(s)",
    "is_quantity": "is_quantity(s): does the string parse with quantity(s)",
    "str": "str(x): a number or bool as a string (for reasons: \"has \" + str(n) + \" pods\")",
    "starts_with": "starts_with(s, prefix): bool",
    "ends_with": "ends_with(s, suffix): bool",
    "split": "split(s, sep): the parts of s between the separators, as a list of strings",
    "lower": "lower(s): s in lower case",
    "ln": "ln(x): natural logarithm of a positive number, as a float",
    "sqrt": "sqrt(x): square root of a non-negative number, as a float",
    "first": "first(L): a list of L's first item, or an empty list",
    "timestamp": "timestamp(s, default D): a string parsed as an instant: RFC 3339 (\"2026-12-04T10:15:00Z\") or the "
                 "label-safe 20261204T101500Z",
    "duration": "duration(s, default D): a string parsed as a duration, Go syntax (\"10m\", \"1h30m\", \"1.5s\")",
    "seconds": "seconds(d): a duration in whole seconds, as an int (toward zero)",
}
"""The language's own builtins with a one-line signature each (diagnostics list them; LANGUAGE.md's
"Builtins" section documents them, and a test keeps the two in step)."""

GENERIC_BUILTINS = tuple(GENERIC_DOCS)


@dataclasses.dataclass(frozen=True)
class FuncSig:
    """A callable's static signature; ``min_args`` < len(params) when trailing params have defaults."""

    name: str
    params: tuple[Type, ...]
    ret: Type
    min_args: int
    doc: str
    fn: Callable[..., Any] | None = None


@dataclasses.dataclass(frozen=True)
class RecordInfo:
    name: str
    cls: type
    fields: Mapping[str, Type]
    methods: Mapping[str, FuncSig]
    doc: str


@dataclasses.dataclass(frozen=True)
class Schema:
    records: Mapping[str, RecordInfo]
    roots: Mapping[str, Type]
    builtins: Mapping[str, FuncSig]
    problems: tuple[str, ...] = ()
    """Annotations outside the allowed vocabulary (a bug in the object model, not in a policy)."""


class _Converter:
    def __init__(self, records: Mapping[str, type]) -> None:
        self.by_class = {cls: name for name, cls in records.items()}
        self.problems: list[str] = []

    def convert(self, ann: Any, where: str) -> Type:
        origin = typing.get_origin(ann)
        if origin is typing.Annotated:
            base, *meta = typing.get_args(ann)
            t = self.convert(base, where)
            for m in meta:
                if isinstance(m, registry.Bound) and isinstance(t, ListT):
                    return ListT(t.elem, m.max_items)
            return t
        if ann is bool:
            return BOOL
        if ann is int:
            return INT
        if ann is float:
            return FLOAT
        if ann is str:
            return STRING
        if ann is Fraction:
            return QUANTITY
        if ann is times.Timestamp:
            return TIMESTAMP
        if ann is times.Duration:
            return DURATION
        if origin in (list, tuple) and typing.get_args(ann):
            args = typing.get_args(ann)
            if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
                self.problems.append(f"{where}: only tuple[T, ...] is allowed, got {ann!r}")
                return ERROR
            return ListT(self.convert(args[0], where))
        if origin is dict:
            k, v = typing.get_args(ann)
            if k is not str:
                self.problems.append(f"{where}: map keys must be str, got {ann!r}")
            return MapT(self.convert(v, where))
        if isinstance(ann, type) and ann in self.by_class:
            return RecordT(self.by_class[ann])
        self.problems.append(f"{where}: annotation {ann!r} is not in the policy type vocabulary")
        return ERROR

    def signature(self, name: str, fn: Callable[..., Any], skip_self: bool, where: str) -> FuncSig:
        try:
            hints = typing.get_type_hints(fn, include_extras=True)
            params = list(inspect.signature(fn).parameters.values())
        except Exception as exc:  # noqa: BLE001 -- a broken annotation in the object model is reported
            self.problems.append(f"{where}: cannot read signature: {exc}")
            return FuncSig(name, (), ERROR, 0, "", fn)
        if skip_self and params:
            params = params[1:]
        types = tuple(self.convert(hints.get(p.name, Any), f"{where}({p.name})") for p in params)
        required = sum(1 for p in params if p.default is inspect.Parameter.empty)
        ret = self.convert(hints.get("return", Any), f"{where} return")
        return FuncSig(name, types, ret, required, inspect.getdoc(fn) or "", fn)


def _field_hints(cls: type, records: Mapping[str, type], problems: list[str]) -> dict[str, Any]:
    """Resolved annotations of a record; if a private field's annotation cannot be resolved, the public
    ones are resolved on their own (private fields are invisible to policies anyway)."""
    localns = dict(records)
    try:
        return typing.get_type_hints(cls, localns=localns, include_extras=True)
    except Exception:  # noqa: BLE001 -- fall back to resolving field by field below
        pass
    globalns = vars(sys.modules[cls.__module__]) if cls.__module__ in sys.modules else {}
    hints: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        for fname, ann in getattr(klass, "__annotations__", {}).items():
            if fname.startswith("_"):
                continue
            try:
                shim = type("_Shim", (), {"__annotations__": {fname: ann}, "__module__": klass.__module__})
                hints.update(typing.get_type_hints(shim, globalns=globalns, localns=localns, include_extras=True))
            except Exception as exc:  # noqa: BLE001 -- reported as a schema problem
                problems.append(f"{cls.__name__}.{fname}: cannot resolve annotation {ann!r}: {exc}")
    return hints


def build_schema(records: Mapping[str, type], roots: Mapping[str, type],
                 builtins: Mapping[str, Callable[..., Any]]) -> Schema:
    """A schema from explicit registries (the global ones, or a test's own)."""
    conv = _Converter(records)
    infos: dict[str, RecordInfo] = {}
    for name, cls in records.items():
        hints = _field_hints(cls, records, conv.problems)
        fields: dict[str, Type] = {}
        for f in dataclasses.fields(cls):
            if f.name.startswith("_"):
                continue
            fields[f.name] = conv.convert(hints.get(f.name, Any), f"{name}.{f.name}")
        methods: dict[str, FuncSig] = {}
        for attr in dir(cls):
            if attr.startswith("_"):
                continue
            fn = getattr(cls, attr, None)
            if callable(fn) and registry.is_exposed(fn):
                methods[attr] = conv.signature(attr, fn, True, f"{name}.{attr}")
        infos[name] = RecordInfo(name, cls, fields, methods, inspect.getdoc(cls) or "")
    root_types: dict[str, Type] = {}
    for name, cls in roots.items():
        root_types[name] = RecordT(conv.by_class[cls]) if cls in conv.by_class else conv.convert(cls, f"root {name}")
    sigs: dict[str, FuncSig] = {}
    for name, fn in builtins.items():
        if name in GENERIC_BUILTINS:
            conv.problems.append(f"builtin {name} shadows a generic builtin and is ignored")
            continue
        sigs[name] = conv.signature(name, fn, False, f"builtin {name}")
    return Schema(infos, root_types, sigs, tuple(conv.problems))


def global_schema() -> Schema:
    """The schema from policyscheduler.schema's registries, as filled by policyscheduler.objects."""
    return build_schema(dict(registry.RECORDS), dict(registry.ROOTS), dict(registry.BUILTINS))
