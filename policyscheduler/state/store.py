"""ClusterState: the incremental store behind every scheduling cycle (kube-scheduler's cache, in short).

Nodes live in *slots* (insertion order; removing a node closes the gap but keeps the others' order).
A node's spec (the frozen :class:`Node` record built from the object, with empty aggregates) is kept
apart from its aggregates (pods, requests, ports), which a pod change updates in O(size of the pod).
The public :class:`Node` record of a slot -- what policies see, pods included -- is rebuilt lazily, once
per view, only for the slots that changed since the last view.

Change tracking: ``generation`` grows on every change; ``changed_nodes_since(g)`` lists the slots whose
record changed after ``g``, or None when the node set itself changed (then a consumer rebuilds).

Pods are keyed by uid (``namespace/name`` when the uid is empty). Only pods on a node are stored (like
kube's cache); a pod bound to a node the store does not know yet waits for that node.
"""

from __future__ import annotations

import bisect
import dataclasses
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from fractions import Fraction
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from policyscheduler.kobjects import cache_key
from policyscheduler.objects.records import HostPort, Node, Pod, PodAffinityTerm
from policyscheduler.objects.topology import DefaultSelectorCache, LabelCodes, MatchKey
from policyscheduler.state.budgets import DisruptionBudget
from policyscheduler.state.indexes import LabelCodeCache, MatchCounts, TermIndex
from policyscheduler.state.storage import StorageState

__all__ = ["ClusterState", "pod_key"]

_ZERO = Fraction(0)
_JOURNAL_SLACK = 4096


def pod_key(pod: Pod) -> str:
    """The store's key of a pod record (:func:`policyscheduler.kobjects.cache_key`: its uid, or
    ``namespace/name`` for objects without one), the same key the snapshot computes from the raw object."""
    return cache_key(pod.uid, pod.namespace, pod.name)


def _same_terms(a: Pod, b: Pod) -> bool:
    """The two records carry the very same inter-pod terms (a relabelled copy keeps its term tuples)."""
    return (a.required_anti_affinity_terms is b.required_anti_affinity_terms
            and a.required_affinity_terms is b.required_affinity_terms
            and a.preferred_affinity_terms is b.preferred_affinity_terms
            and a.preferred_anti_affinity_terms is b.preferred_anti_affinity_terms)


def _has_affinity(pod: Pod) -> bool:
    """kube's HavePodsWithAffinity, minus required anti-affinity (kept in its own list)."""
    return bool(pod.required_affinity_terms or pod.preferred_affinity_terms or pod.preferred_anti_affinity_terms)


_R = TypeVar("_R")
_T = TypeVar("_T")


def replace_fields(record: _R, **changes: Any) -> _R:
    """``dataclasses.replace`` for the frozen record types (plain or slotted dataclasses without
    ``__post_init__`` or cached properties): a copy of the instance dict, or of the slots, with
    ``changes`` applied, without the generated ``__init__`` -- a node record is rebuilt and a pod record
    copied for every pod placed, and replace() is a tenth of a pod's scheduling time at 5,000 nodes."""
    kind = type(record)
    slots = _slots_of(kind)
    if slots == () or hasattr(kind, "__post_init__"):
        return dataclasses.replace(record, **changes)  # type: ignore[type-var]
    new = object.__new__(kind)
    if slots is not None:
        for name in changes:
            if name not in slots:
                raise TypeError(f"{kind.__name__} has no field {name!r}")
        setter = object.__setattr__
        for name in slots:
            setter(new, name, changes[name] if name in changes else getattr(record, name))
        return new
    attrs = new.__dict__
    attrs.update(record.__dict__)
    attrs.update(changes)
    return new


_SLOTS: dict[type, tuple[str, ...] | None] = {}


def _slots_of(kind: type) -> tuple[str, ...] | None:
    """The fields of a dataclass whose slots are exactly its fields (None for a class with an instance
    dict; a class with other slots is copied by ``dataclasses.replace``, which runs its ``__init__``)."""
    try:
        return _SLOTS[kind]
    except KeyError:
        pass
    slots = getattr(kind, "__slots__", None)
    found = None
    if slots is not None:
        found = tuple(f.name for f in dataclasses.fields(kind))
        if set(found) != set((slots,) if isinstance(slots, str) else slots):
            found = ()
    _SLOTS[kind] = found
    return found


class _Slot:
    """One node: its spec record, its aggregates, and the public record (None when stale)."""

    __slots__ = ("nonzero_cpu", "nonzero_mem", "pods", "ports", "record", "req_refs", "requested", "spec")

    def __init__(self, spec: Node) -> None:
        self.spec = spec
        self.pods: dict[str, Pod] = {}
        self.requested: dict[str, Fraction] = {}
        self.req_refs: dict[str, int] = {}  # pods contributing each resource: the key goes with the last one
        self.nonzero_cpu = _ZERO
        self.nonzero_mem = _ZERO
        self.ports: list[HostPort] = []
        self.record: Node | None = spec

    def add(self, key: str, pod: Pod) -> None:
        self.pods[key] = pod
        requested, refs = self.requested, self.req_refs
        for name, value in pod.requests.items():
            requested[name] = requested.get(name, _ZERO) + value
            refs[name] = refs.get(name, 0) + 1
        nz = pod.nonzero_requests
        self.nonzero_cpu += nz.get("cpu", _ZERO)
        self.nonzero_mem += nz.get("memory", _ZERO)
        if pod.host_ports:
            self.ports.extend(pod.host_ports)
        self.record = None

    def remove(self, key: str) -> Pod:
        pod = self.pods.pop(key)
        requested, refs = self.requested, self.req_refs
        for name, value in pod.requests.items():
            left = refs[name] - 1
            if left:
                refs[name] = left
                requested[name] -= value
            else:
                del refs[name], requested[name]
        nz = pod.nonzero_requests
        self.nonzero_cpu -= nz.get("cpu", _ZERO)
        self.nonzero_mem -= nz.get("memory", _ZERO)
        for port in pod.host_ports:
            self.ports.remove(port)  # records compare by identity: this removes exactly this pod's port
        self.record = None
        return pod

    def relabel(self, key: str, pod: Pod) -> Pod:
        """Swap in a new record of a stored pod with the same requests and ports (a label change): the
        aggregates are untouched, and the next record reuses the last one's aggregate objects, so the
        node's change shows in its ``pods`` only."""
        old = self.pods[key]
        self.pods[key] = pod
        if self.record is not None:
            self.record = replace_fields(self.record, pods=tuple(self.pods.values()))
        return old

    def materialise(self) -> Node:
        record = self.record
        if record is None:
            record = self.record = replace_fields(
                self.spec,
                requested=dict(self.requested),
                nonzero_requested={"cpu": self.nonzero_cpu, "memory": self.nonzero_mem},
                pod_count=len(self.pods),
                pods=tuple(self.pods.values()),  # lists are stored as tuples (records.py)
                used_ports=tuple(self.ports),
            )
        return record


class ClusterState:
    """Nodes, placed pods, namespaces, Services and controllers, with generations and indexes."""

    def __init__(self) -> None:
        self._slots: list[_Slot] = []
        self._slot_of: dict[str, int] = {}
        self._nodes: list[Node] = []
        self._borrowers: list[weakref.ref[object]] = []  # who keeps ``_nodes`` as it is (lend_nodes)
        self._stale: set[int] = set()
        self._pods: dict[str, str] = {}  # pod key -> node name
        self._waiting: dict[str, dict[str, Pod]] = {}  # node name -> pods bound to it before it exists
        self._namespaces: dict[str, dict[str, str]] = {}
        self._services: dict[tuple[str, str], dict[str, str] | None] = {}
        self._services_by_ns: dict[str, list[dict[str, str]]] | None = None
        self.replica_sets: dict[tuple[str, str], Any] = {}
        self.stateful_sets: dict[tuple[str, str], Any] = {}
        self.replication_controllers: dict[tuple[str, str], dict[str, str] | None] = {}
        self.default_selectors = DefaultSelectorCache()
        """Default spread selectors per app (objects.topology's default_selector); emptied whenever a
        Service or controller changes."""
        self.budgets: dict[tuple[str, str], DisruptionBudget] = {}
        """PodDisruptionBudgets by (namespace, name): preemption reads them, no rule does."""
        self._images: dict[str, list[int]] = {}  # image -> [size first seen, nodes holding it]
        self._image_states: dict[str, tuple[int, int]] | None = None
        self._image_slots: dict[str, npt.NDArray[np.bool_]] = {}  # image -> holds it, per slot (built on demand)
        self._image_slots_all = False  # every image some node held was indexed at once (image_presence)
        self._with_affinity: dict[str, Pod] = {}
        self._with_anti: dict[str, Pod] = {}
        self._counts = MatchCounts(self.namespace_labels)
        self._terms: TermIndex | None = TermIndex()  # None after a node removal shifted the slots: rebuilt on use
        self._codes = LabelCodeCache()
        self.node_masks: dict[Any, npt.NDArray[np.bool_]] = {}
        """Per-node masks of pod shapes (objects.topology._Included), valid while no node changes."""
        self._claim_users: dict[tuple[str, str], int] = {}  # (namespace, claim) -> placed pods using it
        self.storage = StorageState(self.claim_in_use)
        """Claims, volumes, classes, CSI objects (objects.volumes' StorageView)."""
        self.generation = 0
        self._journal: list[tuple[int, int]] = []  # (generation, slot) per node-record change
        self._floor = 0  # changed_nodes_since(g) needs g >= floor (node set stable and journal complete)

    # -- change tracking --------------------------------------------------------------------------------

    def _bump(self) -> int:
        self.generation += 1
        return self.generation

    def _node_changed(self, slot: int) -> None:
        gen = self._bump()
        self._stale.add(slot)
        self._journal.append((gen, slot))
        if len(self._journal) > len(self._slots) * 4 + _JOURNAL_SLACK:
            cut = len(self._journal) // 2
            self._floor = self._journal[cut - 1][0]
            del self._journal[:cut]

    def _node_set_changed(self) -> None:
        gen = self._bump()
        self._floor = gen
        self._journal.clear()
        self._clear_codes()
        self.node_masks.clear()
        self._image_slots.clear()
        self._image_slots_all = False

    def _clear_codes(self) -> None:
        """Node labels or the node list changed: label codes, and what was built with them, go."""
        self._codes.clear()
        if self._terms is not None:
            self._terms.forget_memo()

    def changed_nodes_since(self, generation: int) -> list[int] | None:
        """Slots whose node record changed after ``generation``; None if the node set changed since."""
        if generation < self._floor:
            return None
        start = bisect.bisect_right(self._journal, (generation, len(self._slots)))
        return sorted({slot for _, slot in self._journal[start:]})

    # -- nodes ------------------------------------------------------------------------------------------

    @property
    def nodes(self) -> list[Node]:
        """The node records in slot order (records of changed slots are rebuilt here, once)."""
        if self._stale:
            self._unlend()
            slots, nodes = self._slots, self._nodes
            for i in self._stale:
                nodes[i] = slots[i].materialise()
            self._stale.clear()
        return self._nodes

    def lend_nodes(self, borrower: object) -> list[Node]:
        """:attr:`nodes` for ``borrower`` to keep as they are now, without a copy: while the borrower
        lives, the state changes a new list, not this one (a per-pod context reads the nodes of its
        moment; it is usually gone before the state changes, so the copy is rarely made)."""
        nodes = self.nodes
        self._borrowers.append(weakref.ref(borrower))
        return nodes

    def _unlend(self) -> None:
        """Before ``_nodes`` is changed in place: a copy to change when a borrower still keeps it."""
        borrowers = self._borrowers
        if borrowers:
            if any(ref() is not None for ref in borrowers):
                self._nodes = list(self._nodes)
            borrowers.clear()

    def slot_of(self, name: str) -> int | None:
        """The slot of a node by name (None when unknown)."""
        return self._slot_of.get(name)

    def add_node(self, spec: Node) -> bool:
        """Add a node (its spec record; aggregates are ignored). False if the name is taken."""
        if spec.name in self._slot_of:
            return False
        slot = _Slot(self._bare(spec))
        self._slot_of[spec.name] = len(self._slots)
        self._slots.append(slot)
        self._unlend()
        self._nodes.append(slot.spec)
        self._add_images(spec)
        self._node_set_changed()
        self._counts.node_appended()
        for key, pod in self._waiting.pop(spec.name, {}).items():
            self._place(key, pod)
        return True

    def update_node(self, spec: Node) -> bool:
        """Replace a node's spec (labels, taints, allocatable, images ...); its pods stay. False if unknown."""
        i = self._slot_of.get(spec.name)
        if i is None:
            return False
        slot = self._slots[i]
        old = slot.spec
        self._remove_images(old)
        self._add_images(spec)
        if self._image_slots and old.images != spec.images:
            for image, has in self._image_slots.items():
                has[i] = image in spec.images
        slot.spec = self._bare(spec)
        slot.record = None
        self.node_masks.clear()
        if old.labels != spec.labels:
            self._clear_codes()
        self._node_changed(i)
        return True

    def remove_node(self, name: str) -> bool:
        """Remove a node; its pods wait for a node of that name to come back (kube's cache does the same)."""
        i = self._slot_of.pop(name, None)
        if i is None:
            return False
        slot = self._slots.pop(i)
        self._unlend()
        del self._nodes[i]
        for j in range(i, len(self._slots)):
            self._slot_of[self._slots[j].spec.name] = j
        self._stale = {j if j < i else j - 1 for j in self._stale if j != i}
        self._remove_images(slot.spec)
        for key, pod in slot.pods.items():
            self._unindex(key)
            if pod.volumes:
                self._count_claims(pod, -1)
            self._waiting.setdefault(name, {})[key] = pod
        self._counts.clear()
        self._terms = None
        self._node_set_changed()
        return True

    @staticmethod
    def _bare(spec: Node) -> Node:
        if not (spec.pods or spec.pod_count or spec.requested or spec.used_ports):
            return spec
        return dataclasses.replace(spec, requested={}, nonzero_requested={"cpu": _ZERO, "memory": _ZERO},
                                   pod_count=0, pods=(), used_ports=())  # type: ignore[arg-type]  # tuples, as records.py says

    # -- images (ImageLocality's imageStates: size from the first node reporting it, nodes holding it) ---

    def _add_images(self, node: Node) -> None:
        for image, size in node.images.items():
            state = self._images.get(image)
            if state is None:
                self._images[image] = [size, 1]
            else:
                state[1] += 1
        self._image_states = None

    def _remove_images(self, node: Node) -> None:
        for image in node.images:
            state = self._images[image]
            state[1] -= 1
            if not state[1]:
                del self._images[image]
        self._image_states = None

    def image_presence(self, image: str) -> npt.NDArray[np.bool_]:
        """Per slot, whether the node holds ``image`` (built once per image, kept up to date; read-only)."""
        has = self._image_slots.get(image)
        if has is None and not self._image_slots_all:
            # the first image asked for: every image the nodes hold, in one pass over the nodes (pods of
            # many apps ask for many images, each a pass of its own otherwise); later changes keep them
            self._image_slots_all = True
            where: dict[str, list[int]] = {}
            for i, slot in enumerate(self._slots):
                for name in slot.spec.images:
                    found = where.get(name)
                    if found is None:
                        where[name] = [i]
                    else:
                        found.append(i)
            for name, at in where.items():
                if name not in self._image_slots:
                    held = np.zeros(len(self._slots), dtype=np.bool_)
                    held[at] = True
                    self._image_slots[name] = held
            has = self._image_slots.get(image)
        if has is None:  # an image no node held then
            slots = self._slots
            has = np.fromiter((image in slot.spec.images for slot in slots), dtype=np.bool_, count=len(slots))
            self._image_slots[image] = has
        return has

    @property
    def image_states(self) -> dict[str, tuple[int, int]]:
        """Image name -> (size in bytes, number of nodes holding it)."""
        if self._image_states is None:
            self._image_states = {image: (size, holders) for image, (size, holders) in self._images.items()}
        return self._image_states

    # -- pods -------------------------------------------------------------------------------------------

    def add_pod(self, pod: Pod) -> None:
        """Add or replace a pod on ``pod.node_name`` (a pod without a node is dropped from the store)."""
        key = pod_key(pod)
        self.remove_pod(key)
        if pod.node_name:
            self._place(key, pod)

    def relabel_pod(self, pod: Pod) -> bool:
        """Replace a placed pod by a record that differs only in its labels (same node, requests, ports):
        what the API server does to a pod it binds (it adds the node's topology labels). Unlike
        :meth:`add_pod`, the node's resource aggregates keep their identity, so rules that read only
        resources keep their cached rows for the node. False (nothing done) when the pod is not stored
        on that node."""
        key = pod_key(pod)
        i = self._slot_of.get(pod.node_name) if self._pods.get(key) == pod.node_name else None
        if i is None:
            return False
        slot = self._slots[i]
        old = slot.pods[key]
        if (old.requests != pod.requests or old.nonzero_requests != pod.nonzero_requests
                or old.host_ports != pod.host_ports):
            return False
        if slot.record is None:  # aggregates changed since the last record: materialise them first
            slot.materialise()
        slot.relabel(key, pod)
        self._unindex(key)
        if pod.required_anti_affinity_terms:
            self._with_anti[key] = pod
        if _has_affinity(pod):
            self._with_affinity[key] = pod
        self._counts.pod_relabeled(i, old, pod)
        if self._terms is not None and not _same_terms(old, pod):
            self._terms.pod_changed(i, old, -1)
            self._terms.pod_changed(i, pod, 1)
        self._node_changed(i)
        return True

    def remove_pod(self, key: str) -> Pod | None:
        """Remove a pod by key (uid, or ns/name); returns its record, None if it was not stored."""
        node_name = self._pods.pop(key, None)
        if node_name is None:
            return None
        i = self._slot_of.get(node_name)
        if i is None:
            waiting = self._waiting.get(node_name, {})
            pod = waiting.pop(key)
            if not waiting:
                self._waiting.pop(node_name, None)
            self._bump()
            return pod
        pod = self._slots[i].remove(key)
        if pod.volumes:
            self._count_claims(pod, -1)
        self._unindex(key)
        self._counts.pod_changed(i, pod, -1)
        if self._terms is not None:
            self._terms.pod_changed(i, pod, -1)
        self._node_changed(i)
        return pod

    def pod_order(self, node_name: str) -> list[str]:
        """Keys of the pods on a node, in the order the node's record lists them."""
        i = self._slot_of.get(node_name)
        return [] if i is None else list(self._slots[i].pods)

    def restore_pod_order(self, node_name: str, keys: list[str]) -> None:
        """Put the pods of a node back in the order ``keys`` (as :meth:`pod_order` returned it before a
        what-if took pods away and gave them back): the node's record -- pods and used ports -- is then
        the one it was, not merely an equal multiset. Keys not stored on the node are skipped."""
        i = self._slot_of.get(node_name)
        if i is None:
            return
        slot = self._slots[i]
        if list(slot.pods) == keys:
            return
        pods = slot.pods
        ordered = {k: pods[k] for k in keys if k in pods}
        ordered.update((k, p) for k, p in pods.items() if k not in ordered)
        slot.pods = ordered
        slot.ports = [port for p in ordered.values() for port in p.host_ports]
        slot.record = None
        self._node_changed(i)

    def set_budget(self, budget: DisruptionBudget | None, namespace: str, name: str) -> None:
        """Add, update (a budget) or remove (None) a PodDisruptionBudget."""
        if budget is None:
            self.budgets.pop((namespace, name), None)
        else:
            self.budgets[(namespace, name)] = budget
        self._bump()  # no rule reads budgets, but a remembered unschedulable decision must not outlive one

    def pod(self, key: str) -> Pod | None:
        """The stored record of a pod (None when it is not on a node)."""
        node_name = self._pods.get(key)
        if node_name is None:
            return None
        i = self._slot_of.get(node_name)
        return self._slots[i].pods.get(key) if i is not None else self._waiting[node_name][key]

    def _place(self, key: str, pod: Pod) -> None:
        self._pods[key] = pod.node_name
        i = self._slot_of.get(pod.node_name)
        if i is None:
            self._waiting.setdefault(pod.node_name, {})[key] = pod
            self._bump()
            return
        self._slots[i].add(key, pod)
        if pod.volumes:
            self._count_claims(pod, 1)
        if pod.required_anti_affinity_terms:
            self._with_anti[key] = pod
        if _has_affinity(pod):
            self._with_affinity[key] = pod
        self._counts.pod_changed(i, pod, 1)
        if self._terms is not None:
            self._terms.pod_changed(i, pod, 1)
        self._node_changed(i)

    def _count_claims(self, pod: Pod, delta: int) -> None:
        """Count the pod's ``persistentVolumeClaim`` volumes in or out (kube's NodeInfo PVCRefCounts)."""
        users = self._claim_users
        for v in pod.volumes:
            if v.source == "persistentVolumeClaim":
                key = (pod.namespace, v.claim_name)
                n = users.get(key, 0) + delta
                if n > 0:
                    users[key] = n
                else:
                    users.pop(key, None)

    def claim_in_use(self, namespace: str, name: str) -> bool:
        """True if a pod on a known node uses the claim (VolumeRestrictions' IsPVCUsedByPods)."""
        return (namespace, name) in self._claim_users

    def apply_storage(self, kind: str, obj: Mapping[str, Any], warnings: list[str], *, remove: bool = False) -> None:
        """Add, update or remove a storage object (:data:`~policyscheduler.state.storage.STORAGE_KINDS`)."""
        self.storage.apply(kind, obj, warnings, remove=remove)
        self._bump()

    def _unindex(self, key: str) -> None:
        self._with_anti.pop(key, None)
        self._with_affinity.pop(key, None)

    # -- namespaces, Services, controllers --------------------------------------------------------------

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        """Labels of a namespace; undeclared namespaces have just ``kubernetes.io/metadata.name``."""
        labels = self._namespaces.get(namespace)
        return labels if labels is not None else {"kubernetes.io/metadata.name": namespace}

    def set_namespace(self, name: str, labels: Mapping[str, str] | None) -> None:
        """Add or update (labels) or remove (None) a namespace."""
        if labels is None:
            self._namespaces.pop(name, None)
        else:
            clean = dict(labels)
            clean.setdefault("kubernetes.io/metadata.name", name)
            self._namespaces[name] = clean
        self._counts.namespaces_changed()
        if self._terms is not None:
            self._terms.forget_matched()
        self._bump()

    def set_service(self, namespace: str, name: str, selector: dict[str, str] | None, *, remove: bool = False) -> None:
        """Add, update or remove a Service (its selector; None selects nothing)."""
        if remove:
            self._services.pop((namespace, name), None)
        else:
            self._services[(namespace, name)] = selector
        self._services_by_ns = None
        self.default_selectors.clear()
        self._bump()

    @property
    def services(self) -> list[tuple[str, dict[str, str] | None]]:
        """(namespace, selector) of every Service."""
        return [(ns, sel) for (ns, _), sel in self._services.items()]

    def service_selectors(self, namespace: str) -> list[dict[str, str]]:
        """The (non-nil) selectors of the Services in one namespace (DefaultSelector's Service scan)."""
        if self._services_by_ns is None:
            by_ns: dict[str, list[dict[str, str]]] = {}
            for (ns, _), sel in self._services.items():
                if sel is not None:
                    by_ns.setdefault(ns, []).append(sel)
            self._services_by_ns = by_ns
        return self._services_by_ns.get(namespace, [])

    def set_controller(self, kind: str, namespace: str, name: str, selector: Any, *, remove: bool = False) -> None:
        """Add, update or remove a ReplicaSet, StatefulSet or ReplicationController (by its selector)."""
        table: dict[tuple[str, str], Any] = {
            "ReplicaSet": self.replica_sets, "StatefulSet": self.stateful_sets,
            "ReplicationController": self.replication_controllers,
        }[kind]
        if remove:
            table.pop((namespace, name), None)
        else:
            table[(namespace, name)] = selector
        self.default_selectors.clear()
        self._bump()

    # -- index queries (the ClusterIndex protocol of objects.cluster) -----------------------------------

    def match_counts(self, key: MatchKey) -> npt.NDArray[np.int64]:
        """Per slot, how many placed pods match ``key`` (kept up to date; see MatchCounts)."""
        return self._counts.get(key, len(self._slots), self._pods_by_slot)

    def match_totals(self, key: MatchKey, codes: LabelCodes) -> npt.NDArray[np.int64]:
        """:meth:`match_counts` summed per domain of ``codes`` (from :meth:`label_codes`), the nodes without
        the key last; kept up to date like the counts. Read-only, valid until the next change."""
        return self._counts.totals(key, codes, len(self._slots), self._pods_by_slot)

    def _pods_by_slot(self) -> Iterator[tuple[int, Iterable[Pod]]]:
        for i, slot in enumerate(self._slots):
            if slot.pods:
                yield i, slot.pods.values()

    def label_codes(self, key: str) -> LabelCodes:
        """A topology key's values on every node, as categorical codes per slot."""
        return self._codes.get(key, lambda: (slot.spec.labels for slot in self._slots))

    def existing_terms(self, kind: int, labels: Mapping[str, str],
                       namespace: str) -> list[tuple[PodAffinityTerm, Mapping[int, int]]]:
        """The placed pods' terms of ``TERM_KINDS[kind]`` (objects.topology) that a pod of ``namespace``
        with ``labels`` may match (a superset, found by label and namespace), each with the slots of the
        pods carrying it and their counts or weights (kept up to date per pod change; see TermIndex)."""
        terms = self._terms
        if terms is None:
            terms = self._terms = TermIndex()
            seen: set[str] = set()
            for key, pod in [*self._with_anti.items(), *self._with_affinity.items()]:
                if key not in seen:
                    seen.add(key)
                    terms.pod_changed(self._slot_of[pod.node_name], pod, 1)
        return terms.candidates(kind, labels, namespace)

    def existing_terms_memo(self, kind: int, terms: frozenset[PodAffinityTerm], build: Callable[[], _T]) -> _T:
        """``build()`` memoised per (kind, set of placed pods' terms) while none of the terms gains or loses
        a pod and no node changes its labels (objects.topology.ClusterIndex); shared, read-only."""
        if self._terms is None:
            self.existing_terms(kind, {}, "")  # rebuilds the term index
        assert self._terms is not None
        return self._terms.memo(kind, terms, build)

    def existing_terms_recall(self, kind: int, labels: Mapping[str, str],
                              namespace: str) -> tuple[frozenset[PodAffinityTerm], Any] | None:
        """The terms of ``kind`` a pod matches and their memoised value (None when not valid), when a pod of
        the same namespace whose labels the terms read alike was matched since the kind's distinct terms
        last changed (objects.topology.ClusterIndex); None when not known."""
        terms = self._terms
        return terms.recall(kind, labels, namespace) if terms is not None else None

    def existing_term_sums(self, kind: int, term: PodAffinityTerm, codes: LabelCodes) -> npt.NDArray[np.int64] | None:
        """A placed pods' term's per-slot values summed per domain of ``codes`` (objects.topology.ClusterIndex),
        kept up to date per pod change; read-only."""
        if self._terms is None:
            self.existing_terms(kind, {}, "")  # rebuilds the term index
        assert self._terms is not None
        return self._terms.domain_sums(kind, term, codes)

    def existing_terms_remember(self, kind: int, labels: Mapping[str, str], namespace: str,
                                terms: frozenset[PodAffinityTerm]) -> None:
        """Remember that a pod matched exactly ``terms`` of ``kind`` (for :meth:`existing_terms_recall`)."""
        if self._terms is not None:
            self._terms.remember(kind, labels, namespace, terms)

    def has_anti_affinity_pods(self) -> bool:
        """True if some placed pod has a required anti-affinity term."""
        return bool(self._with_anti)
