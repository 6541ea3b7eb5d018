"""Which cluster events can change an unschedulable pod's verdict: requeueing by what rules read.

kube-scheduler lets each plugin register the events that may make a pod it rejected schedulable
(``EventsToRegister``) and moves a pod out of the unschedulable pool only on such an event for one of
the plugins that rejected it. Here the plugins are policy rules and the registration is computed, not
written: the checker records the schema members every rule reads (``PolicySet.analyses[...].reads``:
``"Node.labels"``, ``"Node.requested"``, ``"Cluster.spread_count()"`` ...). This module maps those members
onto **facets** -- the parts of the cluster a watch event can change -- and decides per pod and event:

* ``labels`` (node labels; also ``NodeSelectorTerm.matches()`` / ``Pod.matches_node_affinity()``, which
  read them), ``annotations``, ``unschedulable`` (``spec.unschedulable``), ``taints``, ``allocatable``,
  ``images``: one node's object changed (a node update diffs them; heartbeats change none);
* ``pods+`` / ``pods-`` / ``pods~``: what sits on one node (``Node.requested``, ``nonzero_requested``,
  ``pod_count``, ``pods``, ``used_ports``, ``port_conflict()``), split by **direction**. ``pods+``: the
  node's pod aggregates can only have grown (an assigned pod added; an update that grew its requests);
  ``pods-``: they can only have shrunk (a pod deleted or moved off, a failed bind freeing its assumption;
  an update that shrank it); ``pods~``: only the items of ``Node.pods`` changed (a label update: no
  aggregate moved). An event that cannot tell (an update of requests, which may grow one resource and
  shrink another) carries all three. A rule reading these members wants all three, except what the
  checker's polarity analysis (``PolicySet.analyses[...].pods_polarity``,
  :mod:`policyscheduler.checker.polarity`) proves cannot help: a rule whose rejection only grows with the
  aggregates (``"up"``: NodeResourcesFit, NodePorts) wants only ``pods-`` -- kube-scheduler's Fit and
  NodePorts register pod Delete (and scale-down), never Add -- one whose rejection only shrinks with
  them (``"down"``) only ``pods+``, one proven not to depend on them none; a proven rule never reads
  ``Node.pods`` items, so ``pods~`` is left to the unproven ones. A node on which the rule *failed* at
  run time (an error, not a rejection) keeps every facet the rule reads;
* ``cluster``: any ``Cluster.*`` member (counts per topology domain, affinity matches, image spread, node
  count): they aggregate over nodes and pods, so node label/taint/image changes, node deletion, assigned
  pod changes, namespace labels and the objects default spreading reads (Services, ReplicaSets, ...) touch it;
* ``storage``: the ``cluster`` builtins of the volume plugins (``Cluster.volume_*()``, ``claims()``, ...)
  and the fields of claims, volumes, classes and CSI nodes: a PersistentVolumeClaim, PersistentVolume,
  StorageClass, CSINode, CSIDriver, CSIStorageCapacity or VolumeAttachment changed (kube's VolumeBinding,
  VolumeZone, NodeVolumeLimits and VolumeRestrictions register these events);
* ``node``: a ``Node.*`` member this module does not know (a newer schema): any node change touches it.

Members that never change for a pending pod (``Node.name``, ``Node.created``, the pod's own fields,
sub-records reached through them) are no facet: the pod's own update always moves it (kube-scheduler does
the same). ``now`` (the decision time) is no facet either: no event says time passed, so a pod a
time-dependent rule rejected is retried by the periodic flush of the unschedulable pods (5 minutes).

**Per node.** A decision says which rule rejected each node (the first filter that failed there). A
node-local event (node X updated, a pod added to or removed from X) can only change the verdict on X, so
it moves the pod only when the rule that rejected X reads a facet the event changed; a change of rule B on
a node that rule A rejects changes nothing. ``cluster`` facets are not local: they move the pod when any
rule that rejected it reads one.

**Kept from kube-scheduler, where it is stricter or simply true:** a node added moves every pod (a new
node is a new candidate whatever the rules read); a policy reload moves every pod; a pod whose
decision saw no nodes waits for a node; every pod is flushed from the pool after 5 minutes
(:class:`~policyscheduler.cycle.queue.SchedulingQueue`); an event that arrives while a pod is being
scheduled is checked against that pod when it fails (kube's in-flight events), so a verdict computed
before the event is never parked on a stale basis. An unknown event name, or a rule whose analysis is
missing, moves the pod (conservative).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from policyscheduler.state.storage import STORAGE_KINDS

if TYPE_CHECKING:
    from policyscheduler.compiler import PolicySet
    from policyscheduler.evaluation import Decision

__all__ = [
    "ClusterEvent",
    "Interest",
    "NODE_FACETS",
    "POD_CHANGED",
    "POD_FACETS",
    "POD_GREW",
    "POD_SHRANK",
    "refine_pod_facets",
    "facets_of_reads",
    "node_facets_changed",
    "node_facet_view",
    "ALL_FACETS",
    "STORAGE_KINDS",
]

NODE_FACETS = ("labels", "annotations", "unschedulable", "taints", "allocatable", "images")
"""Facets of a node object that a node update can change (see :func:`node_facets_changed`)."""

POD_GREW, POD_SHRANK, POD_CHANGED = "pods+", "pods-", "pods~"
POD_FACETS = frozenset({POD_GREW, POD_SHRANK, POD_CHANGED})
"""The node-local facets of the pods on a node, by direction (module docstring)."""

ALL_FACETS = frozenset(NODE_FACETS) | POD_FACETS | {"cluster", "node", "storage"}

_STORAGE_MEMBERS = frozenset({
    "Cluster.claims()", "Cluster.bound_volumes()", "Cluster.missing_claim()", "Cluster.read_write_once_pod_conflict()",
    "Cluster.disk_conflict()", "Cluster.volume_limit_exceeded()", "Cluster.volume_binding_error()",
    "Cluster.volume_node_conflict()", "Cluster.volume_bind_conflict()", "Cluster.volume_capacity_short()",
    "Cluster.volume_pv_missing()", "Cluster.volume_zone_error()", "Cluster.volume_zone_conflict()",
})
"""The ``cluster`` builtins that read storage objects (objects/volumes.py): facets ``storage`` and ``cluster``
(they also read node labels and the pods on nodes)."""

_STORAGE_RECORDS = ("PersistentVolumeClaim.", "PersistentVolume.", "StorageClass.", "CSINode.")

_MEMBER_FACETS: dict[str, frozenset[str]] = {
    "Node.labels": frozenset({"labels"}),
    "NodeSelectorTerm.matches()": frozenset({"labels"}),
    "Pod.matches_node_affinity()": frozenset({"labels"}),
    "Node.annotations": frozenset({"annotations"}),
    "Node.unschedulable": frozenset({"unschedulable"}),
    "Node.taints": frozenset({"taints"}),
    "Node.allocatable": frozenset({"allocatable"}),
    "Node.images": frozenset({"images"}),
    "Node.requested": POD_FACETS,
    "Node.nonzero_requested": POD_FACETS,
    "Node.pod_count": POD_FACETS,
    "Node.pods": POD_FACETS,
    "Node.used_ports": POD_FACETS,
    "Node.port_conflict()": POD_FACETS,
    "HostPort.conflicts()": POD_FACETS,
    "Volume.conflicts()": POD_FACETS,
    "Node.name": frozenset(),
    "Node.created": frozenset(),
}

_PROVEN: dict[str, frozenset[str]] = {
    "up": frozenset({POD_SHRANK}),
    "down": frozenset({POD_GREW}),
    "const": frozenset(),
}
"""The pod facets a rule of a proven pods polarity still wants (checker/polarity.py)."""


def facets_of_reads(reads: Iterable[str]) -> frozenset[str]:
    """The facets whose change can change the value of an expression reading ``reads``."""
    found: set[str] = set()
    for member in reads:
        known = _MEMBER_FACETS.get(member)
        if known is not None:
            found |= known
        elif member in _STORAGE_MEMBERS:
            found.update(("storage", "cluster"))
        elif member.startswith(_STORAGE_RECORDS):
            found.add("storage")
        elif member.startswith("Cluster."):
            found.add("cluster")
        elif member.startswith("Node."):
            found.add("node")
    return frozenset(found)


def refine_pod_facets(facets: frozenset[str], polarity: str) -> frozenset[str]:
    """``facets`` (of a rule's reads) without the pod directions its ``pods_polarity`` proves cannot turn
    its rejection into a pass (module docstring); unchanged when nothing is proven."""
    kept = _PROVEN.get(polarity)
    if kept is None or not facets & POD_FACETS:
        return facets
    return (facets - POD_FACETS) | kept


def _part(obj: Mapping[str, Any], *path: str) -> Any:
    cur: Any = obj
    for key in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(key)
    return cur


_NODE_PARTS: dict[str, tuple[str, ...]] = {
    "labels": ("metadata", "labels"),
    "annotations": ("metadata", "annotations"),
    "unschedulable": ("spec", "unschedulable"),
    "taints": ("spec", "taints"),
    "allocatable": ("status", "allocatable"),
    "images": ("status", "images"),
}


def node_facet_view(node: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a node :func:`node_facets_changed` compares (keep this instead of the whole node)."""
    return {facet: _part(node, *path) for facet, path in _NODE_PARTS.items()}


def node_facets_changed(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> frozenset[str]:
    """The facets a node update changed (empty for a heartbeat: conditions, times, versions); ``old``
    and ``new`` are nodes or their :func:`node_facet_view`.

    Label, taint, unschedulable and image changes also change ``cluster`` aggregates (topology domains,
    the nodes spreading counts, image spread); any change touches the unknown-member facet ``node``."""
    if old is None:
        return ALL_FACETS
    before = old if "metadata" not in old else node_facet_view(old)
    after = new if "metadata" not in new else node_facet_view(new)
    changed = {facet for facet in _NODE_PARTS if (before.get(facet) or None) != (after.get(facet) or None)}
    if changed & {"labels", "taints", "unschedulable", "images"}:
        changed.add("cluster")
    if changed:
        changed.add("node")
    return frozenset(changed)


_POD_EVENT_FACETS = {"AssignedPodAdd": frozenset({POD_GREW}), "AssignedPodDelete": frozenset({POD_SHRANK})}


@dataclasses.dataclass(frozen=True)
class ClusterEvent:
    """A change of the cluster, as the queue sees it.

    ``facets``: what may have changed (:data:`ALL_FACETS` members); ``node``: the node those node-local
    facets belong to (None: not local to one node); ``everything``: moves every pod (node added,
    policies reloaded); ``profile``: only the pods of this scheduler name (one profile's policies were
    reloaded: the other profiles' verdicts cannot change); ``max_priority``: only pods of at most this
    priority (a nominated pod deleted released room only for the pods its nomination held it against)."""

    name: str
    facets: frozenset[str] = frozenset()
    node: str | None = None
    everything: bool = False
    profile: str | None = None
    max_priority: int | None = None

    @classmethod
    def all(cls, name: str, profile: str | None = None) -> ClusterEvent:
        """An event that moves every unschedulable pod (of ``profile`` only, when given)."""
        return cls(name, ALL_FACETS, None, True, profile)

    @classmethod
    def node_added(cls, node: str) -> ClusterEvent:
        return cls("NodeAdd", ALL_FACETS, node, True)

    @classmethod
    def node_updated(cls, node: str, facets: frozenset[str]) -> ClusterEvent:
        return cls("NodeUpdate", facets, node)

    @classmethod
    def node_deleted(cls, node: str) -> ClusterEvent:
        # The node is gone: no verdict on it matters; only aggregates over nodes change.
        return cls("NodeDelete", frozenset({"cluster"}), node)

    @classmethod
    def assigned_pod(cls, name: str, node: str | None, pods: frozenset[str] | None = None) -> ClusterEvent:
        """An assigned pod was added to, removed from or changed on ``node`` (``AssignedPodAdd``: facet
        ``pods+``; ``AssignedPodDelete``, also a failed bind freeing what its assumption held: ``pods-``;
        ``AssignedPodUpdate``: ``pods``, what the caller saw change, else all three directions)."""
        if pods is None:
            pods = _POD_EVENT_FACETS.get(name, POD_FACETS)
        return cls(name, pods | {"cluster"}, node)

    @classmethod
    def nominated_pod_deleted(cls, node: str, priority: int) -> ClusterEvent:
        """A pending pod nominated to ``node`` (by a preemption) was deleted: the room its nomination held
        against pods of lower or equal priority is free. kube-scheduler moves those pods with an
        ``AssignedPodDelete`` (``deletePodFromSchedulingQueue``); so do we, for the rules that read the pods
        on that node (a held node's verdict is the filters' with the nominated pods placed there) and the
        aggregates (they saw the nominated pods there too)."""
        return cls("AssignedPodDelete", frozenset({POD_SHRANK, "cluster"}), node, max_priority=priority)

    @classmethod
    def storage(cls, name: str) -> ClusterEvent:
        """A claim, volume, class or CSI object was added, changed or deleted (``name``: e.g.
        ``PersistentVolumeClaimUpdate``): it moves the pods a storage-reading rule rejected."""
        return cls(name, frozenset({"storage"}))

    @classmethod
    def cluster(cls, name: str) -> ClusterEvent:
        """A change that only aggregates see (namespace labels, Services / ReplicaSets / ...)."""
        return cls(name, frozenset({"cluster"}))


_FAILED = " (failed)"


@dataclasses.dataclass(frozen=True)
class Interest:
    """What an unschedulable pod waits for: per node the rule that rejected it, per rule its facets.

    Built from the failed :class:`Decision` and the policy set that produced it (:meth:`of`)."""

    rule_by_node: Mapping[str, str | None]
    facets_by_rule: Mapping[str | None, frozenset[str]]
    facets: frozenset[str]
    """Union over the rules that rejected some node."""

    @classmethod
    def of(cls, decision: Decision, policy_set: PolicySet) -> Interest:
        """A node whose rule failed at run time is keyed ``"RULE (failed)"``: the polarity proof is about
        rejections, so it keeps every facet the rule reads."""
        rule_by_node = {name: verdict.rule if verdict.error is None or verdict.rule is None
                        else f"{verdict.rule}{_FAILED}" for name, verdict in decision.verdicts.items()}
        analyses = policy_set.analyses
        facets_by_rule: dict[str | None, frozenset[str]] = {}
        for key in set(rule_by_node.values()):
            failed = key is not None and key.endswith(_FAILED)
            rule = key[:-len(_FAILED)] if key is not None and failed else key
            analysis = None if rule is None else (analyses.get(f"filter {rule}") or analyses.get(f"score {rule}"))
            if analysis is None:
                facets_by_rule[key] = ALL_FACETS
            else:
                facets = facets_of_reads(analysis.reads)
                facets_by_rule[key] = facets if failed else refine_pod_facets(facets, analysis.pods_polarity)
        union = frozenset().union(*facets_by_rule.values()) if facets_by_rule else frozenset()
        return cls(rule_by_node, facets_by_rule, union)

    def wants(self, event: ClusterEvent) -> bool:
        """True when ``event`` may change this pod's verdict."""
        if event.everything:
            return True
        if not self.rule_by_node:
            return False  # no nodes at decision time: only a node added (everything) can help
        if "cluster" in event.facets and "cluster" in self.facets:
            return True
        local = event.facets - {"cluster"}
        if not local:
            return False
        if event.node is None:
            return bool(local & self.facets)
        if event.node not in self.rule_by_node:
            if local <= POD_FACETS:
                # a pod bound to (or leaving) a node the decision did not see: that node becomes a candidate
                # only through its own NodeAdd (which moves everyone); what a bind changes, only the rules
                # that read it care about (a node-affinity rejection is not retried on unrelated binds)
                return bool(local & self.facets)
            return bool(local)  # a node object the decision did not see: a new candidate
        rule = self.rule_by_node[event.node]
        return bool(local & self.facets_by_rule.get(rule, ALL_FACETS))
