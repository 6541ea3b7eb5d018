"""ClusterSnapshot: nodes with their pods, plus the objects default topology spreading looks at.

``from_objects`` takes plain Kubernetes dicts (kinds Node, Pod, Namespace, Service, ReplicaSet,
StatefulSet, ReplicationController; ``List`` objects are unpacked; other kinds are ignored). Pods with
``spec.nodeName`` are placed on that node unless they are in phase Succeeded/Failed (the scheduler's
informer filters those out). ``assume`` places a pending pod; it replaces that node's frozen record, so
contexts made earlier keep seeing the old state and contexts made later see the new one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from policyscheduler.objects.builders import build_node, build_pod, object_name
from policyscheduler.objects.cluster import Cluster, make_cluster
from policyscheduler.objects.records import Node, Pod

__all__ = ["ClusterSnapshot"]

_KINDS = ("Node", "Pod", "Namespace", "Service", "ReplicaSet", "StatefulSet", "ReplicationController")


def _meta(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    name = meta.get("name") if isinstance(meta.get("name"), str) else ""
    ns = meta.get("namespace") if isinstance(meta.get("namespace"), str) else ""
    return ns or "default", name


def _flatten(objs: Iterable[Any]) -> Iterable[Mapping[str, Any]]:
    for obj in objs:
        if isinstance(obj, Mapping) and isinstance(obj.get("items"), list) and str(obj.get("kind", "")).endswith("List"):
            yield from _flatten(obj["items"])
        elif isinstance(obj, Mapping):
            yield obj


class ClusterSnapshot:
    """Nodes (in input order) with per-node aggregates; see the module docstring."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self.warnings: list[str] = []
        """Malformed input: a field the API server would have refused, replaced by a safe default."""
        self.notes: list[str] = []
        """Valid but worth saying: a node that admits no pod, a pod bound to a node not in the input."""
        self._index: dict[str, int] = {}
        self._namespaces: dict[str, dict[str, str]] = {}
        self.services: list[tuple[str, dict[str, str] | None]] = []
        self.replica_sets: dict[tuple[str, str], Any] = {}
        self.stateful_sets: dict[tuple[str, str], Any] = {}
        self.replication_controllers: dict[tuple[str, str], dict[str, str] | None] = {}
        self.image_states: dict[str, tuple[int, int]] = {}
        self._seen_warnings: set[str] = set()
        self._records: dict[int, tuple[Any, Pod]] = {}

    # -- construction -----------------------------------------------------------------------------------

    @classmethod
    def from_objects(cls, objs: Iterable[dict]) -> ClusterSnapshot:
        """Build a snapshot; malformed objects become warnings, never exceptions."""
        snap = cls()
        placed: list[Mapping[str, Any]] = []
        warnings: list[str] = []
        for obj in _flatten(objs):
            kind = obj.get("kind")
            if kind not in _KINDS:
                continue
            try:
                if kind == "Node":
                    node = build_node(obj, warnings)
                    if not node.name:
                        warnings.append("Node without metadata.name ignored")
                    elif node.name in snap._index:
                        warnings.append(f"Node {node.name}: duplicate node ignored")
                    else:
                        snap._index[node.name] = len(snap.nodes)
                        snap.nodes.append(node)
                        if "pods" not in node.allocatable:
                            snap.notes.append(f"Node {node.name}: status.allocatable has no 'pods'; "
                                              "kube-scheduler then admits no pod on it")
                elif kind == "Pod":
                    spec = obj.get("spec") if isinstance(obj.get("spec"), Mapping) else {}
                    status = obj.get("status") if isinstance(obj.get("status"), Mapping) else {}
                    if spec.get("nodeName") and status.get("phase") not in ("Succeeded", "Failed"):
                        placed.append(obj)
                else:
                    snap._add_other(kind, obj, warnings)
            except Exception as err:  # noqa: BLE001 - a bad object must never stop the snapshot
                warnings.append(f"{object_name(obj, str(kind))}: ignored ({type(err).__name__}: {err})")
        snap._record_images()
        for obj in placed:
            try:
                pod = build_pod(obj, warnings)
            except Exception as err:  # noqa: BLE001
                warnings.append(f"{object_name(obj, 'Pod')}: ignored ({type(err).__name__}: {err})")
                continue
            if pod.node_name not in snap._index:
                snap.notes.append(f"Pod {pod.key}: bound to node {pod.node_name!r}, which is not in the input; ignored")
                continue
            snap._place(pod)
        snap._warn(warnings)
        return snap

    def _warn(self, warnings: Iterable[str]) -> None:
        for w in warnings:
            if w not in self._seen_warnings:
                self._seen_warnings.add(w)
                self.warnings.append(w)

    def _add_other(self, kind: str, obj: Mapping[str, Any], warnings: list[str]) -> None:
        ns, name = _meta(obj)
        spec = obj.get("spec") if isinstance(obj.get("spec"), Mapping) else {}
        if kind == "Namespace":
            meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
            labels = meta.get("labels") if isinstance(meta.get("labels"), Mapping) else {}
            clean = {k: v for k, v in labels.items() if isinstance(k, str) and isinstance(v, str)}
            clean.setdefault("kubernetes.io/metadata.name", name)
            self._namespaces[name] = clean
        elif kind in ("Service", "ReplicationController"):
            sel = spec.get("selector")
            if sel is not None and not (isinstance(sel, Mapping) and all(isinstance(v, str) for v in sel.values())):
                warnings.append(f"{kind} {ns}/{name}: spec.selector is not a map of strings; ignored")
                sel = None
            value = dict(sel) if sel is not None else None
            if kind == "Service":
                self.services.append((ns, value))
            else:
                self.replication_controllers[(ns, name)] = value
        else:
            table = self.replica_sets if kind == "ReplicaSet" else self.stateful_sets
            table[(ns, name)] = spec.get("selector")

    def _record_images(self) -> None:
        sizes: dict[str, int] = {}
        holders: dict[str, int] = {}
        for node in self.nodes:
            for image, size in node.images.items():
                sizes.setdefault(image, size)
                holders[image] = holders.get(image, 0) + 1
        self.image_states = {image: (sizes[image], holders[image]) for image in sizes}

    def _place(self, pod: Pod) -> None:
        i = self._index[pod.node_name]
        node = self.nodes[i]
        requested = dict(node.requested)
        for name, value in pod.requests.items():
            requested[name] = requested.get(name, Fraction(0)) + value
        nonzero = {k: node.nonzero_requested.get(k, Fraction(0)) + pod.nonzero_requests.get(k, Fraction(0)) for k in ("cpu", "memory")}
        self.nodes[i] = dataclasses.replace(
            node,
            requested=requested,
            nonzero_requested=nonzero,
            pod_count=node.pod_count + 1,
            pods=node.pods + (pod,),
            used_ports=node.used_ports + tuple(pod.host_ports),
        )

    # -- public API -------------------------------------------------------------------------------------

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        """Labels of a namespace; undeclared namespaces have just ``kubernetes.io/metadata.name``."""
        labels = self._namespaces.get(namespace)
        return labels if labels is not None else {"kubernetes.io/metadata.name": namespace}

    def pod_record(self, pod: dict) -> Pod:
        """The :class:`Pod` record of a pod object (problems go to ``warnings``).

        Converted once per object: the simulator asks for the same pending pod when it queues it,
        on every attempt and when it assumes it, so records are remembered by object identity. A pod
        object handed to the snapshot must therefore not be edited in place afterwards.
        """
        known = self._records.get(id(pod))
        if known is not None and known[0] is pod:
            return known[1]
        warnings: list[str] = []
        try:
            record = build_pod(pod, warnings)
        except Exception as err:  # noqa: BLE001
            warnings.append(f"{object_name(pod, 'Pod')}: unreadable ({type(err).__name__}: {err})")
            record = build_pod({}, [])
        self._warn(warnings)
        self._records[id(pod)] = (pod, record)  # holding ``pod`` keeps its id from being reused
        return record

    def assume(self, pod: dict, node_name: str) -> None:
        """Place a pending pod on a node; later contexts see it (kube's assume)."""
        if node_name not in self._index:
            self._warn([f"{object_name(pod, 'Pod')}: cannot assume on unknown node {node_name!r}"])
            return
        self._place(dataclasses.replace(self.pod_record(pod), node_name=node_name))

    def context(self, pod: Pod) -> Cluster:
        """The per-pod ``cluster`` value over the current nodes."""
        return make_cluster(pod, self)
