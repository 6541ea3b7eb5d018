"""PodTopologySpread primitives (kube-scheduler v1.35 ``podtopologyspread`` PreFilter / PreScore).

Faithful to kube's bookkeeping, including its quirks: counts are keyed by the (topologyKey, value) pair,
so two constraints on the same key share their domain counts; a domain exists for the filter as soon as
an eligible node carries it (even with 0 matching pods); for scoring, a node without a key (when not
all topologies are required) counts into the "" domain of that key for the domain count.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from policyscheduler.objects.records import Node, Pod, SpreadConstraint, pod_matches_required_node_affinity
from policyscheduler.objects.selectors import Selector, compile_label_selector, set_selector

if TYPE_CHECKING:
    from policyscheduler.objects.snapshot import ClusterSnapshot

__all__ = [
    "HOSTNAME",
    "ZONE",
    "count_matching",
    "node_included",
    "default_selector",
    "effective_constraints",
    "FilterCounts",
    "ScoreCounts",
]

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
_NO_SCHEDULE = ("NoSchedule", "NoExecute")


def count_matching(pods: Iterable[Pod], selector: Selector | None, namespace: str) -> int:
    """``countPodsMatchSelector``: same namespace, not terminating; an empty or nil selector counts 0."""
    if selector is None or selector.empty:
        return 0
    return sum(1 for p in pods if not p.terminating and p.namespace == namespace and selector.matches(p.labels))


def node_included(c: SpreadConstraint, pod: Pod, node: Node) -> bool:
    """nodeAffinityPolicy (Honor: node must match the pod's required affinity) and nodeTaintsPolicy."""
    if c.node_affinity_policy == "Honor" and not pod_matches_required_node_affinity(pod, node):
        return False
    if c.node_taints_policy == "Honor":
        for taint in node.taints:
            if taint.effect in _NO_SCHEDULE and not pod.tolerates(taint):
                return False
    return True


def default_selector(pod: Pod, objects: ClusterSnapshot) -> Selector:
    """``helper.DefaultSelector``: Services selecting the pod, plus its controller RC / RS / StatefulSet."""
    merged: dict[str, str] = {}
    for ns, sel in objects.services:
        if ns == pod.namespace and sel is not None and all(pod.labels.get(k) == v for k, v in sel.items()):
            merged.update(sel)
    selector = set_selector(merged)
    if pod._owner is None:
        return selector
    api_version, kind, name = pod._owner
    key = (pod.namespace, name)
    if kind == "ReplicationController" and api_version == "v1":
        rc = objects.replication_controllers.get(key)
        if rc is not None:
            merged.update(rc)
            selector = set_selector(merged)
    elif kind in ("ReplicaSet", "StatefulSet") and api_version == "apps/v1":
        table = objects.replica_sets if kind == "ReplicaSet" else objects.stateful_sets
        if key in table:
            other, _ = compile_label_selector(table[key])
            if other is not None:
                selector = selector.add(*other.requirements)
    return selector


def effective_constraints(pod: Pod, objects: ClusterSnapshot) -> tuple[tuple[SpreadConstraint, ...], tuple[SpreadConstraint, ...], bool]:
    """(DoNotSchedule constraints, ScheduleAnyway constraints, requireAllTopologies).

    With no constraints on the pod the system defaults apply (hostname maxSkew 3, zone maxSkew 5,
    ScheduleAnyway) if a default selector can be built; requireAllTopologies is then false.
    """
    own = pod.spread_constraints
    if own:
        hard = tuple(c for c in own if c.when_unsatisfiable == "DoNotSchedule")
        soft = tuple(c for c in own if c.when_unsatisfiable == "ScheduleAnyway")
        return hard, soft, True
    selector = default_selector(pod, objects)
    if selector.empty:
        return (), (), False
    defaults = tuple(
        SpreadConstraint(skew, key, "ScheduleAnyway", 1, "Honor", "Ignore", (), selector)
        for key, skew in ((HOSTNAME, 3), (ZONE, 5))
    )
    return (), defaults, False


class FilterCounts:
    """PreFilter state: matching pods per (key, value) over eligible nodes, domains and minimum per key."""

    def __init__(self, pod: Pod, constraints: Sequence[SpreadConstraint], nodes: Sequence[Node]) -> None:
        self.pairs: dict[tuple[str, str], int] = {}
        for node in nodes:
            labels = node.labels
            if not all(c.topology_key in labels for c in constraints):
                continue
            per_node: dict[tuple[str, str], int] = {}
            for c in constraints:
                if node_included(c, pod, node):
                    per_node[(c.topology_key, labels[c.topology_key])] = count_matching(node.pods, c._selector, pod.namespace)
            for pair, n in per_node.items():
                self.pairs[pair] = self.pairs.get(pair, 0) + n
        self.domains: dict[str, int] = {}
        self.minimum: dict[str, int] = {}
        for (key, _), n in self.pairs.items():
            self.domains[key] = self.domains.get(key, 0) + 1
            self.minimum[key] = min(self.minimum.get(key, n), n)

    def count(self, c: SpreadConstraint, node: Node) -> int:
        value = node.labels.get(c.topology_key)
        return 0 if value is None else self.pairs.get((c.topology_key, value), 0)


class ScoreCounts:
    """PreScore state over the feasible ("filtered") nodes; counts over all nodes."""

    def __init__(
        self,
        pod: Pod,
        constraints: Sequence[SpreadConstraint],
        feasible: Sequence[Node],
        nodes: Sequence[Node],
        require_all: bool,
    ) -> None:
        self.ignored: set[str] = set()
        self.pairs: dict[tuple[str, str], int] = {}
        sizes = [0] * len(constraints)
        keys = [c.topology_key for c in constraints]
        for node in feasible:
            if require_all and not all(k in node.labels for k in keys):
                self.ignored.add(node.name)
                continue
            for i, c in enumerate(constraints):
                if c.topology_key == HOSTNAME:
                    continue
                pair = (c.topology_key, node.labels.get(c.topology_key, ""))
                if pair not in self.pairs:
                    self.pairs[pair] = 0
                    sizes[i] += 1
        self.domains = {
            id(c): (len(feasible) - len(self.ignored) if c.topology_key == HOSTNAME else sizes[i])
            for i, c in enumerate(constraints)
        }
        for node in nodes:
            if require_all and not all(k in node.labels for k in keys):
                continue
            for c in constraints:
                if not node_included(c, pod, node):
                    continue
                pair = (c.topology_key, node.labels.get(c.topology_key, ""))
                if pair in self.pairs:
                    self.pairs[pair] += count_matching(node.pods, c._selector, pod.namespace)

    def count(self, c: SpreadConstraint, node: Node, pod: Pod) -> int:
        if c.topology_key == HOSTNAME:
            return count_matching(node.pods, c._selector, pod.namespace)
        value = node.labels.get(c.topology_key)
        return 0 if value is None else self.pairs.get((c.topology_key, value), 0)


