"""Realistic fake Nodes and Pods, built as plain dicts and created in bulk.

No kubelet runs, so a fake node is just a Node object whose status already says
what a kubelet would report: capacity/allocatable, Ready and pressure conditions,
addresses, node info and cached images (the API server keeps a Node's status on
create). Nothing heartbeats, and without kube-controller-manager nothing marks
the nodes NotReady, so they stay Ready for the life of the control plane.

Every object carries ``policyscheduler.test/owner=<owner>`` so a test can delete
exactly what it created.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tests.controlplane.api import Api, wait_for

OWNER_LABEL = "policyscheduler.test/owner"
FAKE_LABEL = "policyscheduler.test/fake"
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
KUBE_VERSION = "v1.35.4"

# kind -> (API path prefix, plural, namespaced)
_RESOURCES: dict[str, tuple[str, str, bool]] = {
    "Namespace": ("/api/v1", "namespaces", False),
    "Node": ("/api/v1", "nodes", False),
    "Pod": ("/api/v1", "pods", True),
    "Service": ("/api/v1", "services", True),
    "ReplicationController": ("/api/v1", "replicationcontrollers", True),
    "ReplicaSet": ("/apis/apps/v1", "replicasets", True),
    "StatefulSet": ("/apis/apps/v1", "statefulsets", True),
    "PriorityClass": ("/apis/scheduling.k8s.io/v1", "priorityclasses", False),
    "RuntimeClass": ("/apis/node.k8s.io/v1", "runtimeclasses", False),
}


def collection_path(kind: str, namespace: str | None = None) -> str:
    """The REST collection URL for ``kind`` (in ``namespace`` when namespaced)."""
    prefix, plural, namespaced = _RESOURCES[kind]
    if namespaced:
        return f"{prefix}/namespaces/{namespace or 'default'}/{plural}"
    return f"{prefix}/{plural}"


def list_path(kind: str) -> str:
    """The REST URL listing every ``kind`` object in the cluster (all namespaces)."""
    prefix, plural, _ = _RESOURCES[kind]
    return f"{prefix}/{plural}"


def object_path(obj: Mapping[str, Any]) -> str:
    """The REST URL of one object, from its ``kind``, ``metadata.namespace`` and ``metadata.name``."""
    meta = obj["metadata"]
    return f"{collection_path(str(obj['kind']), meta.get('namespace'))}/{meta['name']}"


def make_node(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "32Gi",
    pods: int = 110,
    ephemeral_storage: str = "100Gi",
    allocatable: Mapping[str, str] | None = None,
    extended: Mapping[str, str] | None = None,
    zone: str | None = None,
    region: str | None = None,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
    images: Sequence[tuple[Sequence[str], int]] = (),
    ready: bool = True,
    unschedulable: bool = False,
    owner: str | None = None,
    address: str | None = None,
) -> dict[str, Any]:
    """A Node as a kubelet would register it. ``allocatable`` defaults to capacity."""
    capacity = {"cpu": cpu, "memory": memory, "pods": str(pods), "ephemeral-storage": ephemeral_storage,
                **dict(extended or {})}
    all_labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": "fake.standard",
        FAKE_LABEL: "true",
    }
    if zone is not None:
        all_labels["topology.kubernetes.io/zone"] = zone
    if region is not None:
        all_labels["topology.kubernetes.io/region"] = region
    if owner is not None:
        all_labels[OWNER_LABEL] = owner
    all_labels.update(labels or {})
    stamp = "2026-01-01T00:00:00Z"

    def condition(kind: str, status: bool, reason: str) -> dict[str, str]:
        return {"type": kind, "status": "True" if status else "False", "reason": reason,
                "message": reason, "lastHeartbeatTime": stamp, "lastTransitionTime": stamp}

    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": all_labels},
        "spec": {"unschedulable": unschedulable, "taints": [dict(t) for t in taints]},
        "status": {
            "capacity": capacity,
            "allocatable": {**capacity, **dict(allocatable or {})},
            "conditions": [
                condition("MemoryPressure", False, "KubeletHasSufficientMemory"),
                condition("DiskPressure", False, "KubeletHasNoDiskPressure"),
                condition("PIDPressure", False, "KubeletHasSufficientPID"),
                condition("Ready", ready, "KubeletReady" if ready else "KubeletNotReady"),
            ],
            "addresses": [{"type": "InternalIP", "address": address or "10.0.0.1"},
                          {"type": "Hostname", "address": name}],
            "nodeInfo": {
                "machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "6.1.0",
                "osImage": "Fake Linux", "containerRuntimeVersion": "containerd://2.0.0",
                "kubeletVersion": KUBE_VERSION, "kubeProxyVersion": "",
                "operatingSystem": "linux", "architecture": "amd64",
            },
            "images": [{"names": list(names), "sizeBytes": int(size)} for names, size in images],
            "phase": "Running",
        },
    }


def make_nodes(count: int, *, prefix: str = "node", zones: Sequence[str] = ("zone-a", "zone-b", "zone-c"),
               region: str = "region-1", **kwargs: Any) -> list[dict[str, Any]]:
    """``count`` nodes named ``<prefix>-<i>``, spread round-robin over ``zones``."""
    zone_cycle = itertools.cycle(zones) if zones else itertools.repeat(None)
    return [
        make_node(f"{prefix}-{i}", zone=next(zone_cycle), region=region,
                  address=f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}", **kwargs)
        for i in range(count)
    ]


def make_pod(
    name: str,
    namespace: str = "default",
    *,
    cpu: str | None = "100m",
    memory: str | None = "128Mi",
    limits: Mapping[str, str] | None = None,
    image: str = PAUSE_IMAGE,
    labels: Mapping[str, str] | None = None,
    scheduler_name: str | None = None,
    node_name: str | None = None,
    node_selector: Mapping[str, str] | None = None,
    tolerations: Sequence[Mapping[str, Any]] = (),
    affinity: Mapping[str, Any] | None = None,
    topology_spread: Sequence[Mapping[str, Any]] = (),
    ports: Sequence[int] = (),
    priority: int | None = None,
    owner: str | None = None,
) -> dict[str, Any]:
    """A single-container Pod; ``node_name`` makes it already bound ("running")."""
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    container: dict[str, Any] = {"name": "main", "image": image, "resources": {"requests": requests}}
    if limits:
        container["resources"]["limits"] = dict(limits)
    if ports:
        container["ports"] = [{"containerPort": p, "hostPort": p, "protocol": "TCP"} for p in ports]
    all_labels = dict(labels or {})
    if owner is not None:
        all_labels[OWNER_LABEL] = owner
    spec: dict[str, Any] = {"containers": [container], "terminationGracePeriodSeconds": 0}
    if scheduler_name:
        spec["schedulerName"] = scheduler_name
    if node_name:
        spec["nodeName"] = node_name
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    if affinity:
        spec["affinity"] = dict(affinity)
    if topology_spread:
        spec["topologySpreadConstraints"] = [dict(t) for t in topology_spread]
    if priority is not None:
        spec["priority"] = priority
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": all_labels}, "spec": spec}


def make_pods(count: int, namespace: str = "default", *, prefix: str = "pod", **kwargs: Any) -> list[dict[str, Any]]:
    """``count`` identical pods named ``<prefix>-<i>``."""
    return [make_pod(f"{prefix}-{i}", namespace, **kwargs) for i in range(count)]


def create(api: Api, obj: Mapping[str, Any]) -> dict[str, Any]:
    """POST one object to its collection and return what the server stored."""
    ns = obj.get("metadata", {}).get("namespace")
    stored: dict[str, Any] = api.post(collection_path(str(obj["kind"]), ns), obj)
    return stored


def create_all(api: Api, objs: Iterable[Mapping[str, Any]], *, workers: int = 8) -> list[dict[str, Any]]:
    """Create many objects concurrently (order of the result matches the input)."""
    items = list(objs)
    if len(items) <= 1 or workers <= 1:
        return [create(api, o) for o in items]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda o: create(api, o), items))


def bind(api: Api, namespace: str, pod: str, node: str) -> None:
    """Bind a pending pod the way a scheduler does (pods/binding subresource)."""
    api.post(f"/api/v1/namespaces/{namespace}/pods/{pod}/binding", {
        "apiVersion": "v1", "kind": "Binding", "metadata": {"name": pod, "namespace": namespace},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node}})


def set_pod_phase(api: Api, namespace: str, pod: str, phase: str = "Running") -> None:
    """Pretend a kubelet ran the pod (status is only writable through /status)."""
    api.patch(f"/api/v1/namespaces/{namespace}/pods/{pod}/status", {"status": {"phase": phase}})


def wait_bound(api: Api, namespace: str, names: Sequence[str], *, timeout: float = 30.0) -> dict[str, str]:
    """Wait until every named pod has ``spec.nodeName``; return pod -> node."""
    wanted = set(names)

    def check() -> dict[str, str] | None:
        pods = api.list_items(f"/api/v1/namespaces/{namespace}/pods")
        bound = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in pods if p["metadata"]["name"] in wanted}
        if len(bound) == len(wanted) and all(bound.values()):
            return {k: str(v) for k, v in bound.items()}
        return None

    bound: dict[str, str] = wait_for(check, timeout=timeout, interval=0.2, what=f"pods {sorted(wanted)[:5]} to be bound")
    return bound


def delete_owned(api: Api, owner: str) -> None:
    """Delete the nodes and pods labelled with ``owner`` (pods immediately, no grace)."""
    selector = f"{OWNER_LABEL}={owner}"
    api.delete("/api/v1/nodes", labelSelector=selector)
    for pod in api.list_items("/api/v1/pods", labelSelector=selector):
        meta = pod["metadata"]
        api.delete(f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}", gracePeriodSeconds=0)
