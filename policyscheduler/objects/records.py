"""The records a policy can see: pods, nodes and their parts (frozen; see policyscheduler/schema.py).

Lists are stored as tuples (immutable) but annotated ``list[T]`` as the schema vocabulary requires;
maps are plain dicts that nothing mutates after construction. Fields starting with ``_`` hold compiled
selectors (and a pod's controller reference) and are invisible to policies. Records compare by identity (``eq=False``) so they hash.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from policyscheduler.kobjects import join_key
from policyscheduler.objects.selectors import Selector
from policyscheduler.schema import Quantity, exposed, record
from policyscheduler.times import EPOCH, Timestamp

__all__ = [
    "Taint",
    "Toleration",
    "HostPort",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "PreferredSchedulingTerm",
    "PodAffinityTerm",
    "WeightedPodAffinityTerm",
    "SpreadConstraint",
    "Volume",
    "Pod",
    "Node",
]

_FROZEN = dict(frozen=True, eq=False)


@record
@dataclass(**_FROZEN)
class Taint:
    """A node taint: ``key=value:effect`` (effect NoSchedule, PreferNoSchedule or NoExecute)."""

    key: str
    value: str
    effect: str


@record
@dataclass(**_FROZEN)
class Toleration:
    """A pod toleration; operator "" means Equal."""

    key: str
    operator: str
    value: str
    effect: str

    @exposed
    def tolerates(self, taint: Taint) -> bool:
        """True if this toleration matches the taint (v1 ``Toleration.ToleratesTaint``)."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator in ("", "Equal"):
            return self.value == taint.value
        return self.operator == "Exists"


@record
@dataclass(**_FROZEN)
class HostPort:
    """A host port a container binds; host_ip "" is stored as "0.0.0.0", protocol "" as "TCP"."""

    host_ip: str
    protocol: str
    port: int

    @exposed
    def conflicts(self, other: HostPort) -> bool:
        """Same protocol and port, and same IP or either IP is the wildcard 0.0.0.0 (NodePorts)."""
        if self.port <= 0 or self.port != other.port or self.protocol != other.protocol:
            return False
        return self.host_ip == other.host_ip or "0.0.0.0" in (self.host_ip, other.host_ip)


@record
@dataclass(**_FROZEN)
class NodeSelectorRequirement:
    """One node selector requirement (``matchExpressions`` or ``matchFields`` item)."""

    key: str
    operator: str
    values: list[str]


@record
@dataclass(**_FROZEN)
class NodeSelectorTerm:
    """A node selector term: its expressions and fields are ANDed; an empty term matches nothing."""

    match_expressions: list[NodeSelectorRequirement]
    match_fields: list[NodeSelectorRequirement]
    _labels: Selector | None = field(default=None, repr=False)
    _fields: Selector | None = field(default=None, repr=False)
    _valid: bool = field(default=True, repr=False)

    @exposed
    def matches(self, node: Node) -> bool:
        """component-helpers nodeaffinity term matching: labels via expressions, metadata.name via fields."""
        if not self.match_expressions and not self.match_fields:
            return False
        if not self._valid:
            return False
        if self._labels is not None and not self._labels.matches(node.labels):
            return False
        if self._fields is not None and not self._fields.matches({"metadata.name": node.name}):
            return False
        return True


@record
@dataclass(**_FROZEN)
class PreferredSchedulingTerm:
    """A preferred node affinity term with its weight (1..100)."""

    weight: int
    preference: NodeSelectorTerm


@record
@dataclass(**_FROZEN)
class PodAffinityTerm:
    """An inter-pod (anti-)affinity term. ``namespaces`` as written; matching lives on ``cluster``."""

    topology_key: str
    namespaces: list[str]
    _selector: Selector | None = field(default=None, repr=False)
    _ns_selector: Selector | None = field(default=None, repr=False)
    _names: frozenset[str] = field(default=frozenset(), repr=False)


@record
@dataclass(**_FROZEN)
class WeightedPodAffinityTerm:
    """A preferred inter-pod (anti-)affinity term with its weight."""

    weight: int
    term: PodAffinityTerm


@record
@dataclass(**_FROZEN)
class SpreadConstraint:
    """A topology spread constraint with defaults applied (minDomains 1, Honor/Ignore policies)."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    min_domains: int
    node_affinity_policy: str
    node_taints_policy: str
    match_label_keys: list[str]
    _selector: Selector | None = field(default=None, repr=False)

    @exposed
    def selects(self, pod: Pod) -> bool:
        """True if the constraint's selector (matchLabelKeys merged in) matches the pod's labels."""
        return self._selector is not None and self._selector.matches(pod.labels)


@record
@dataclass(**_FROZEN)
class Volume:
    """One entry of a pod's ``spec.volumes``, as the volume plugins read it.

    ``source`` is the API field that defines it (``persistentVolumeClaim``, ``ephemeral``,
    ``gcePersistentDisk``, ``awsElasticBlockStore``, ``rbd``, ``iscsi``, ``csi``, ``emptyDir`` ...; ``other``
    for a field this model does not list). ``claim_name`` is the PersistentVolumeClaim it uses: the named
    claim, or ``<pod>-<volume>`` for a generic ephemeral volume; ``""`` otherwise.
    """

    name: str
    source: str
    claim_name: str
    read_only: bool
    _disk: tuple[Any, ...] | None = field(default=None, repr=False)
    _in_tree: tuple[str, str, str] | None = field(default=None, repr=False)  # (plugin, CSI driver, handle)

    @property
    def ephemeral(self) -> bool:
        """A generic ephemeral volume (its claim is made by the ephemeral volume controller)."""
        return self.source == "ephemeral"

    @exposed
    def conflicts(self, other: Volume) -> bool:
        """True if this volume and ``other`` use the same disk in a way one node cannot serve
        (VolumeRestrictions' disk conflict): the same GCE PD or iSCSI IQN unless both are read-only, the
        same AWS EBS volume id, the same RBD image and pool with a shared monitor unless both read-only."""
        a, b = self._disk, other._disk
        if a is None or b is None or a[0] != b[0]:
            return False
        kind = a[0]
        if kind in ("gce", "iscsi"):
            return bool(a[1] == b[1] and not (a[2] and b[2]))
        if kind == "aws":
            return bool(a[1] == b[1])
        # rbd: (kind, monitors, pool, image, read_only)
        return bool(a[1] & b[1]) and a[2] == b[2] and a[3] == b[3] and not (a[4] and b[4])


@record
@dataclass(**_FROZEN, slots=True)
class Pod:
    """A pod as the scheduler sees it. Requests are kube PodRequests, cpu in cores (500m = 1/2).

    Slotted: the state holds one per running pod (150,000 at 5,000 nodes), and with 30 fields an
    instance dict no longer shares its keys with the class's other instances (CPython shares at most
    29), so each would cost a private 1.5 KiB hash table; slots cost 8 bytes a field."""

    name: str
    namespace: str
    uid: str
    labels: dict[str, str]
    annotations: dict[str, str]
    node_name: str
    scheduler_name: str
    priority: int
    terminating: bool
    node_selector: dict[str, str]
    has_required_node_affinity: bool
    required_node_affinity: list[NodeSelectorTerm]
    preferred_node_affinity: list[PreferredSchedulingTerm]
    pins_node_names: bool
    pinned_node_names: list[str]
    tolerations: list[Toleration]
    requests: dict[str, Quantity]
    nonzero_requests: dict[str, Quantity]
    scalar_resources: list[str]
    host_ports: list[HostPort]
    images: list[str]
    required_affinity_terms: list[PodAffinityTerm]
    required_anti_affinity_terms: list[PodAffinityTerm]
    preferred_affinity_terms: list[WeightedPodAffinityTerm]
    preferred_anti_affinity_terms: list[WeightedPodAffinityTerm]
    spread_constraints: list[SpreadConstraint]
    volumes: list[Volume]
    resource_claims: list[str]
    created: Timestamp = EPOCH
    """``metadata.creationTimestamp`` (a ``timestamp``; the epoch when absent): ``now - target.created`` is a
    victim's age in a preempt rule."""
    _owner: tuple[str, str, str] | None = field(default=None, repr=False)  # (apiVersion, kind, name)

    @exposed
    def tolerates(self, taint: Taint) -> bool:
        """True if any of the pod's tolerations tolerates the taint."""
        return any(t.tolerates(taint) for t in self.tolerations)

    @exposed
    def matches_node_affinity(self, node: Node) -> bool:
        """nodeSelector AND required node affinity (terms ORed) match the node (NodeAffinity filter)."""
        return pod_matches_required_node_affinity(self, node)

    @property
    def key(self) -> str:
        """``namespace/name``, for notes and warnings (a property, so policies cannot see it)."""
        return join_key(self.namespace, self.name)


@record
@dataclass(**_FROZEN)
class Node:
    """A node with the aggregates of the pods assigned or assumed on it.

    ``requested`` is the sum of the pods' PodRequests (Fit filter, BalancedAllocation);
    ``nonzero_requested`` holds cpu/memory with 100m / 200Mi per container lacking a request (Fit score).
    ``images`` maps every image name the node reports to its size in bytes.
    """

    name: str
    labels: dict[str, str]
    annotations: dict[str, str]
    unschedulable: bool
    taints: list[Taint]
    allocatable: dict[str, Quantity]
    requested: dict[str, Quantity]
    nonzero_requested: dict[str, Quantity]
    pod_count: int
    pods: list[Pod]
    used_ports: list[HostPort]
    images: dict[str, int]
    created: Timestamp = EPOCH
    """``metadata.creationTimestamp`` (a ``timestamp``; the epoch when absent)."""

    @exposed
    def port_conflict(self, port: HostPort) -> bool:
        """True if a pod on the node already uses a host port that conflicts with ``port``."""
        return any(port.conflicts(used) for used in self.used_ports)


def pod_matches_required_node_affinity(pod: Pod, node: Node) -> bool:
    """``GetRequiredNodeAffinity(pod).Match(node)``: nodeSelector labels, then the ORed terms."""
    labels = node.labels
    for key, value in pod.node_selector.items():
        if labels.get(key) != value:
            return False
    if pod.has_required_node_affinity:
        return any(term.matches(node) for term in pod.required_node_affinity)
    return True
