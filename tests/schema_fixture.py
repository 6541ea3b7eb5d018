"""A small, test-only object model, so language tests do not depend on policyscheduler.objects."""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Annotated

from policyscheduler.checker.env import Schema, build_schema
from policyscheduler.schema import Bound, Quantity, exposed


@dataclasses.dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclasses.dataclass(frozen=True)
class Toleration:
    key: str
    effect: str


@dataclasses.dataclass(frozen=True)
class Container:
    name: str
    image: str
    requests: dict[str, Quantity]


@dataclasses.dataclass(frozen=True)
class Pod:
    name: str
    labels: dict[str, str]
    containers: Annotated[list[Container], Bound(16)]
    tolerations: list[Toleration]
    priority: int
    ratio: float
    _secret: str = "hidden"

    @exposed
    def tolerates(self, taint: Taint) -> bool:
        """True when some toleration matches the taint's key and effect."""
        return any(t.key == taint.key and t.effect in ("", taint.effect) for t in self.tolerations)

    @exposed
    def explode(self) -> int:
        raise RuntimeError("boom")

    def not_exposed(self) -> int:
        return 1


@dataclasses.dataclass(frozen=True)
class Node:
    name: str
    labels: dict[str, str]
    taints: Annotated[list[Taint], Bound(32)]
    allocatable: dict[str, Quantity]
    unschedulable: bool
    pods: Annotated[list[Pod], Bound(110)]


@dataclasses.dataclass(frozen=True)
class Cluster:
    nodes: Annotated[list[Node], Bound(5000)]
    zones: list[str]


def taint(key: str, value: str, effect: str) -> Taint:
    """Build a taint."""
    return Taint(key, value, effect)


def scaled(x: Quantity, factor: int = 1) -> Quantity:
    """x times factor (exercises default parameters)."""
    return x * factor


def test_schema() -> Schema:
    records = {c.__name__: c for c in (Taint, Toleration, Container, Pod, Node, Cluster)}
    return build_schema(records, {"pod": Pod, "node": Node, "cluster": Cluster},
                        {"taint": taint, "scaled": scaled})


test_schema.__test__ = False  # type: ignore[attr-defined]  # pytest's marker; mypy has no function attributes


def sample_env() -> dict[str, object]:
    pod = Pod("web", {"app": "web", "tier": "front"},
              [Container("c1", "nginx", {"cpu": Fraction(1, 2), "memory": Fraction(2**30)}),
               Container("c2", "sidecar", {"cpu": Fraction(1, 10)})],
              [Toleration("dedicated", "NoSchedule")], 5, 0.25)
    node = Node("n1", {"zone": "a", "disk": "ssd"},
                [Taint("dedicated", "gpu", "NoSchedule"), Taint("spot", "", "PreferNoSchedule")],
                {"cpu": Fraction(4), "memory": Fraction(8 * 2**30)}, False, [])
    cluster = Cluster([node], ["a", "b"])
    return {"pod": pod, "node": node, "cluster": cluster}
