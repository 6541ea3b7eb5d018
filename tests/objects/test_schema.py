"""Every policy-visible annotation uses the schema vocabulary, and records are immutable."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from fractions import Fraction
from typing import Any

import pytest

import policyscheduler.objects  # noqa: F401 - registers the records
from policyscheduler import schema, times

SCALARS = {bool, int, float, str, Fraction, times.Timestamp, times.Duration}


def allowed(tp: object) -> bool:
    if tp in SCALARS:
        return True
    if isinstance(tp, type) and tp.__name__ in schema.RECORDS and schema.RECORDS[tp.__name__] is tp:
        return True
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        return allowed(args[0]) and any(isinstance(a, schema.Bound) for a in args[1:])
    if origin is list:
        return allowed(args[0])
    if origin is dict:
        return args[0] is str and allowed(args[1])
    return False


def public_fields(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls, include_extras=True)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls) if not f.name.startswith("_")}


@pytest.mark.parametrize("name", sorted(schema.RECORDS))
def test_record_annotations_use_vocabulary(name: str) -> None:
    cls = schema.RECORDS[name]
    for field, tp in public_fields(cls).items():
        assert allowed(tp), f"{name}.{field}: {tp}"
    for attr, fn in inspect.getmembers(cls, inspect.isfunction):
        if schema.is_exposed(fn):
            hints = typing.get_type_hints(fn, include_extras=True)
            assert "return" in hints, f"{name}.{attr} lacks a return annotation"
            for param, tp in hints.items():
                assert allowed(tp), f"{name}.{attr}({param}): {tp}"
            assert fn.__doc__, f"{name}.{attr} has no docstring"


def test_builtins_and_roots() -> None:
    assert set(schema.ROOTS) == {"pod", "node", "cluster"}
    for name, fn in schema.BUILTINS.items():
        for param, tp in typing.get_type_hints(fn).items():
            assert allowed(tp), f"{name}({param}): {tp}"


@pytest.mark.parametrize("name", sorted(schema.RECORDS))
def test_records_are_frozen(name: str) -> None:
    # the dataclass machinery's own attribute: not declared on `type` in typeshed
    params = schema.RECORDS[name].__dataclass_params__  # type: ignore[attr-defined]
    assert params.frozen
