"""ClusterSnapshot: the cluster state fed with plain Kubernetes object dicts.

``from_objects`` takes a whole snapshot (kinds Node, Pod, Namespace, Service, ReplicaSet, StatefulSet,
ReplicationController, PodDisruptionBudget and the storage kinds PersistentVolumeClaim, PersistentVolume,
StorageClass, CSINode, CSIDriver, CSIStorageCapacity, VolumeAttachment; ``List`` objects are unpacked;
other kinds are ignored). Pods with
``spec.nodeName`` are placed on that node unless they are in phase Succeeded/Failed (the scheduler's
informer filters those out; :func:`policyscheduler.kobjects.is_placed` decides). ``assume`` places a pending
pod (and its claim work: PVs it binds read as bound, claims it provisions as annotated, kube's
AssumePodVolumes) and ``forget`` takes both back; ``add`` / ``update`` / ``remove`` apply one watched object. Records of
the nodes made before a change stay as they were; ``nodes`` read after it shows the change.

Malformed objects never raise: the problem becomes a warning and the field a safe default. Raw object
dicts are converted as they arrive and not kept (a 50,000-pod snapshot would otherwise hold them all).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from cachetools import LRUCache

from policyscheduler.kobjects import cache_key, flatten_lists, is_placed, name_of, namespace_of, object_key, uid_of
from policyscheduler.objects.builders import build_node, build_pod, object_name
from policyscheduler.objects.cluster import Cluster, make_cluster
from policyscheduler.objects.records import Node, Pod
from policyscheduler.state.budgets import build_budget
from policyscheduler.state.storage import STORAGE_KINDS
from policyscheduler.state.store import ClusterState, pod_key, replace_fields
from policyscheduler.state.volumeplan import VolumePlan
from policyscheduler.state.volumes import plan_volumes

__all__ = ["ClusterSnapshot", "KINDS"]

KINDS = ("Node", "Pod", "Namespace", "Service", "ReplicaSet", "StatefulSet", "ReplicationController",
         "PodDisruptionBudget", *STORAGE_KINDS)
_RECORD_CACHE = 4096


def _mapping(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``obj[key]`` when it is a mapping, else an empty one (malformed objects never raise)."""
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}


def _start_time(obj: Mapping[str, Any]) -> float | None:
    """``status.startTime`` as seconds since the epoch (None when absent or unreadable)."""
    raw = _mapping(obj, "status").get("startTime")
    if not isinstance(raw, str) or not raw:
        return None
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _record_key(pod: Mapping[str, Any]) -> tuple[str, str] | None:
    """(uid, resourceVersion) when the object has both: the same version always reads the same."""
    meta = pod.get("metadata")
    if not isinstance(meta, Mapping):
        return None
    uid, version = meta.get("uid"), meta.get("resourceVersion")
    if isinstance(uid, str) and uid and isinstance(version, str) and version:
        return uid, version
    return None


class ClusterSnapshot:
    """Nodes (in input order) with per-node aggregates and indexes; see the module docstring."""

    def __init__(self) -> None:
        self.state = ClusterState()
        self.warnings: list[str] = []
        """Malformed input: a field the API server would have refused, replaced by a safe default."""
        self.notes: list[str] = []
        """Valid but worth saying: a node that admits no pod, a pod bound to a node not in the input."""
        self._seen_warnings: set[str] = set()
        # Bounded: a long-running scheduler sees millions of pod objects. Objects with a uid and a
        # resourceVersion are keyed by them; others by identity, the object kept so its id stays unique.
        self._records: LRUCache[Any, tuple[Any, Pod]] = LRUCache(maxsize=_RECORD_CACHE)
        self.now_ns: int | None = None
        """The decision time rules read as ``now`` (epoch nanoseconds): fixed by ``simulate``, ``explain`` and
        ``test`` (``--now``) so their results are reproducible; None (the scheduler's run) is the wall clock
        when each pod's context is made."""
        self.volume_plans: dict[str, VolumePlan] = {}
        """Pod key -> the claim work assumed with the pod (non-empty plans only): what the binder must
        write before the pod's Binding, and what :meth:`forget` takes back."""
        self.start_times: dict[str, float] = {}
        """Pod key -> ``status.startTime`` (epoch seconds) of placed pods that have one: preemption
        orders victims by it (a pod without one started "now", as kube's GetPodStartTime says)."""

    # -- construction -----------------------------------------------------------------------------------

    @classmethod
    def from_objects(cls, objs: Iterable[Mapping[str, Any]]) -> ClusterSnapshot:
        """Build a snapshot; malformed objects become warnings, never exceptions."""
        snap = cls()
        warnings: list[str] = []
        placed: list[str] = []
        for obj in flatten_lists(objs):
            if not isinstance(obj, Mapping):
                continue
            kind = obj.get("kind")
            if kind not in KINDS:
                continue
            if kind == "Pod":
                if is_placed(obj):
                    key = snap._place_object(obj, warnings)
                    if key is not None:
                        placed.append(key)
                continue
            try:
                if kind == "Node":
                    snap._add_node(obj, warnings)
                else:
                    snap._apply_other(str(kind), obj, warnings)
            except Exception as err:  # noqa: BLE001 - a bad object must never stop the snapshot
                warnings.append(f"{object_name(obj, str(kind))}: ignored ({type(err).__name__}: {err})")
        state = snap.state
        for key in placed:
            pod = state.pod(key)
            if pod is not None and state.slot_of(pod.node_name) is None:
                snap.notes.append(f"Pod {pod.key}: bound to node {pod.node_name!r}, which is not in the input; ignored")
                state.remove_pod(key)
        snap._warn(warnings)
        return snap

    def _warn(self, warnings: Iterable[str]) -> None:
        for w in warnings:
            if w not in self._seen_warnings:
                self._seen_warnings.add(w)
                self.warnings.append(w)

    def _add_node(self, obj: Mapping[str, Any], warnings: list[str], node: Node | None = None) -> None:
        """Add a Node object (``node``: its record, when the caller built it already)."""
        if node is None:
            node = build_node(obj, warnings)
        if not node.name:
            warnings.append("Node without metadata.name ignored")
        elif not self.state.add_node(node):
            warnings.append(f"Node {node.name}: duplicate node ignored")
        elif "pods" not in node.allocatable:
            self.notes.append(f"Node {node.name}: status.allocatable has no 'pods'; kube-scheduler then admits no pod on it")

    def _place_object(self, obj: Mapping[str, Any], warnings: list[str]) -> str | None:
        try:
            pod = build_pod(obj, warnings)
        except Exception as err:  # noqa: BLE001
            warnings.append(f"{object_name(obj, 'Pod')}: ignored ({type(err).__name__}: {err})")
            return None
        self.state.add_pod(pod)
        key = pod_key(pod)
        self.volume_plans.pop(key, None)  # the pod is bound for real: the watched claims and PVs carry the rest
        started = _start_time(obj)
        if started is None:
            self.start_times.pop(key, None)
        else:
            self.start_times[key] = started
        return key

    def _apply_other(self, kind: str, obj: Mapping[str, Any], warnings: list[str], *, remove: bool = False) -> None:
        ns, name = object_key(obj)
        state = self.state
        if kind in STORAGE_KINDS:
            state.apply_storage(kind, obj, warnings, remove=remove)
            return
        if kind == "Namespace":
            if remove:
                state.set_namespace(name, None)
                return
            labels = _mapping(_mapping(obj, "metadata"), "labels")
            state.set_namespace(name, {k: v for k, v in labels.items() if isinstance(k, str) and isinstance(v, str)})
            return
        if kind == "PodDisruptionBudget":
            state.set_budget(None if remove else build_budget(obj, warnings), ns, name)
            return
        spec = _mapping(obj, "spec")
        if kind in ("Service", "ReplicationController"):
            sel = spec.get("selector")
            if not remove and sel is not None and not (isinstance(sel, Mapping) and all(isinstance(v, str) for v in sel.values())):
                warnings.append(f"{kind} {ns}/{name}: spec.selector is not a map of strings; ignored")
                sel = None
            value = dict(sel) if isinstance(sel, Mapping) else None
            if kind == "Service":
                state.set_service(ns, name, value, remove=remove)
            else:
                state.set_controller(kind, ns, name, value, remove=remove)
        else:
            state.set_controller(kind, ns, name, spec.get("selector"), remove=remove)

    # -- watch events (raw object dicts) ----------------------------------------------------------------

    def add(self, obj: Mapping[str, Any], kind: str | None = None) -> None:
        """Apply an added or updated object of any kept kind (``kind`` when the object lacks one)."""
        kind = kind or str(obj.get("kind", ""))
        warnings: list[str] = []
        try:
            if kind == "Node":
                node = build_node(obj, warnings)
                if node.name and not self.state.update_node(node):
                    self._add_node(obj, [], node)
            elif kind == "Pod":
                if is_placed(obj):
                    self._place_object(obj, warnings)
                else:
                    self.state.remove_pod(self._key_of(obj))
                    self.start_times.pop(self._key_of(obj), None)
            elif kind in KINDS:
                self._apply_other(kind, obj, warnings)
        except Exception as err:  # noqa: BLE001 - one bad event must not stop the loop
            warnings.append(f"{object_name(obj, kind)}: ignored ({type(err).__name__}: {err})")
        self._warn(warnings)

    update = add

    def remove(self, obj: Mapping[str, Any], kind: str | None = None) -> None:
        """Apply a deleted object of any kept kind."""
        kind = kind or str(obj.get("kind", ""))
        if kind == "Node":
            self.state.remove_node(name_of(obj))
        elif kind == "Pod":
            self.state.remove_pod(self._key_of(obj))
            self.start_times.pop(self._key_of(obj), None)
            self.volume_plans.pop(self._key_of(obj), None)
        elif kind in KINDS:
            self._apply_other(kind, obj, [], remove=True)

    def add_node(self, obj: Mapping[str, Any]) -> None:
        """A Node was added (or updated)."""
        self.add(obj, "Node")

    update_node = add_node

    def remove_node(self, obj: Mapping[str, Any]) -> None:
        """A Node was deleted."""
        self.remove(obj, "Node")

    def add_pod(self, obj: Mapping[str, Any]) -> None:
        """A Pod was added or updated: placed if bound and running, dropped otherwise."""
        self.add(obj, "Pod")

    update_pod = add_pod

    def remove_pod(self, obj: Mapping[str, Any]) -> None:
        """A Pod was deleted."""
        self.remove(obj, "Pod")

    @staticmethod
    def _key_of(obj: Mapping[str, Any]) -> str:
        return cache_key(uid_of(obj), namespace_of(obj), name_of(obj))

    # -- public API -------------------------------------------------------------------------------------

    @property
    def nodes(self) -> list[Node]:
        """Node records in input order (read-only: change the snapshot through its methods)."""
        return self.state.nodes

    @property
    def generation(self) -> int:
        """Grows on every change; see :meth:`changed_nodes_since`."""
        return self.state.generation

    def changed_nodes_since(self, generation: int) -> list[int] | None:
        """Indexes into ``nodes`` whose record changed after ``generation``; None if nodes came or went."""
        return self.state.changed_nodes_since(generation)

    @property
    def services(self) -> list[tuple[str, dict[str, str] | None]]:
        """(namespace, selector) of every Service."""
        return self.state.services

    @property
    def replica_sets(self) -> dict[tuple[str, str], Any]:
        return self.state.replica_sets

    @property
    def stateful_sets(self) -> dict[tuple[str, str], Any]:
        return self.state.stateful_sets

    @property
    def replication_controllers(self) -> dict[tuple[str, str], dict[str, str] | None]:
        return self.state.replication_controllers

    @property
    def image_states(self) -> dict[str, tuple[int, int]]:
        """Image name -> (size in bytes, number of nodes holding it)."""
        return self.state.image_states

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        """Labels of a namespace; undeclared namespaces have just ``kubernetes.io/metadata.name``."""
        return self.state.namespace_labels(namespace)

    def pod_record(self, pod: Mapping[str, Any]) -> Pod:
        """The :class:`Pod` record of a pod object (problems go to ``warnings``).

        Remembered in a bounded cache: the simulator asks for the same pending pod when it queues it,
        on every attempt and when it assumes it. Objects are keyed by (uid, resourceVersion) when they
        have both, else by identity -- so such an object must not be edited in place afterwards.
        """
        version = _record_key(pod)
        cache_key: Any = version if version is not None else id(pod)
        known = self._records.get(cache_key)
        if known is not None and (version is not None or known[0] is pod):
            return known[1]
        warnings: list[str] = []
        try:
            record = build_pod(pod, warnings)
        except Exception as err:  # noqa: BLE001
            warnings.append(f"{object_name(pod, 'Pod')}: unreadable ({type(err).__name__}: {err})")
            record = build_pod({}, [])
        self._warn(warnings)
        self._records[cache_key] = (None if version is not None else pod, record)
        return record

    def assume(self, pod: Mapping[str, Any], node_name: str) -> None:
        """Place a pending pod on a node; later contexts see it (kube's assume)."""
        if self.state.slot_of(node_name) is None:
            self._warn([f"{object_name(pod, 'Pod')}: cannot assume on unknown node {node_name!r}"])
            return
        record = self.pod_record(pod)
        if record.volumes:
            self._assume_volumes(record, node_name)
        self.state.add_pod(replace_fields(record, node_name=node_name))

    def _assume_volumes(self, record: Pod, node_name: str) -> None:
        """Plan the pod's claim work on the node and treat it as done (kube's AssumePodVolumes), so the
        next pod does not take the same PersistentVolume."""
        key = pod_key(record)
        old = self.volume_plans.pop(key, None)
        if old is not None:
            self.state.storage.forget(old)
        decision = plan_volumes(self.state, record, node_name)
        if decision.plan is None:
            self._warn([f"Pod {record.key}: assumed on {node_name!r} although its volumes do not fit there "
                        f"({'; '.join(decision.reasons)})"])
            return
        if not decision.plan.empty:
            self.state.storage.assume(decision.plan)
            self.volume_plans[key] = decision.plan

    def forget(self, pod: Mapping[str, Any]) -> None:
        """Take back an assumed pod (kube's ForgetPod, when binding failed) and its assumed claim work."""
        key = pod_key(self.pod_record(pod))
        plan = self.volume_plans.pop(key, None)
        if plan is not None:
            self.state.storage.forget(plan)
        self.state.remove_pod(key)

    def volume_plan(self, pod: Mapping[str, Any]) -> VolumePlan | None:
        """The claim work assumed with ``pod`` (None: nothing to write before its Binding)."""
        return self.volume_plans.get(pod_key(self.pod_record(pod)))

    def settle_volumes(self, pod: Mapping[str, Any]) -> None:
        """The pod's claim work is done (its claims are bound): stop remembering the plan; the watched
        objects carry the result from now on."""
        self.volume_plans.pop(pod_key(self.pod_record(pod)), None)

    def context(self, pod: Pod) -> Cluster:
        """The per-pod ``cluster`` value over the current nodes, at the decision time :attr:`now_ns`."""
        return make_cluster(pod, self.state, self.now_ns if self.now_ns is not None else time.time_ns())
