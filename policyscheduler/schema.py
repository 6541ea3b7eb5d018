"""What a policy is allowed to see: the contract between the checker and the object model.

The checker never guesses at Python objects. Everything a `.policy` file can name is declared here,
by decorators applied in `policyscheduler.objects`:

* ``@record`` marks a frozen dataclass as a policy-visible record type (``Pod``, ``Node``, ``Taint`` ...).
  Its *annotated public fields* are the fields a policy can read, with the annotation as the static type.
  Fields whose name starts with ``_`` are invisible.
* ``@exposed`` marks a method of a record as callable from a policy (``pod.tolerates(t)``). Its parameter
  and return annotations are its signature; its docstring is what ``lint``/docs show.
* ``@builtin`` registers a free function (``taint(key, value, effect)``) the same way.
* ``ROOTS`` maps the names a rule starts from (``pod``, ``node``, ``cluster``) to their record types.

Allowed annotation vocabulary (anything else is a bug in the object model, reported by a test):
``bool``, ``int``, ``float``, ``str``, ``Quantity`` (below), ``Timestamp`` and ``Duration``
(policyscheduler/times.py: ints of nanoseconds, typed ``timestamp`` / ``duration``), ``list[T]``,
``dict[str, T]``, a ``@record`` class, and ``Annotated[list[T], Bound(n)]`` to tell the cost model that a list holds at most ``n`` items.

Runtime values: ``Quantity`` is :class:`fractions.Fraction` (exact, so kube-scheduler's integer
arithmetic on milli-cpu and bytes is reproduced without rounding surprises); int promotes to it.
Because this module only declares, it imports nothing from the rest of the package: both the checker
(static side) and the objects package (runtime side) depend on it, never the other way round.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from fractions import Fraction
from typing import Any, TypeVar

__all__ = [
    "Quantity",
    "Bound",
    "RECORDS",
    "BUILTINS",
    "ROOTS",
    "record",
    "exposed",
    "builtin",
    "is_exposed",
]

Quantity = Fraction
"""A Kubernetes resource quantity ("500m", "2Gi") as an exact rational number of base units."""


@dataclasses.dataclass(frozen=True)
class Bound:
    """``Annotated`` metadata: the most items a list field can hold, for the load-time cost bound."""

    max_items: int


RECORDS: dict[str, type] = {}
"""Policy-visible record types by the name policies and diagnostics use (the class name)."""

BUILTINS: dict[str, Callable[..., Any]] = {}
"""Free functions callable from policies, by name."""

ROOTS: dict[str, type] = {}
"""Variables every rule can use, by name (``pod``, ``node``, ``cluster``); filled by the objects package."""

_T = TypeVar("_T")
_F = TypeVar("_F", bound=Callable[..., Any])


def record(cls: type[_T]) -> type[_T]:
    """Register a dataclass as a record type visible to policies."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"@record needs a dataclass, got {cls.__name__}")
    RECORDS[cls.__name__] = cls
    return cls


def exposed(fn: _F) -> _F:
    """Mark a record method as callable from policies."""
    fn.__policy_exposed__ = True  # type: ignore[attr-defined]
    return fn


def is_exposed(fn: object) -> bool:
    """True for a method marked with :func:`exposed`."""
    return bool(getattr(fn, "__policy_exposed__", False))


def builtin(fn: _F) -> _F:
    """Register a free function callable from policies under its own name."""
    BUILTINS[fn.__name__] = fn
    return fn
