"""build_pod's fast paths (plain dicts, cached quantities, absent fields skipped) give exactly the records
and warnings of the generic paths.

The generic paths are the ones any non-dict ``Mapping`` takes (``isinstance`` checks, copies, no
shortcuts), so building the same pods once as plain dicts and once wrapped in a read-only ``Mapping``
must agree record for record and warning for warning -- over API-server-shaped pods, rich ones and
thousands of randomly corrupted variants. A few tricky inputs are pinned explicitly besides.
"""

from __future__ import annotations

import copy
import dataclasses
import random
from collections.abc import Iterator, Mapping
from fractions import Fraction
from typing import Any

import pytest

from policyscheduler.objects.builders import build_node, build_pod

# A pod as the API server returns it (kubectl get -o json item): managedFields, default tolerations,
# status, priority, preemptionPolicy ...
API_POD: dict[str, Any] = {
    "metadata": {
        "creationTimestamp": "2026-11-30T21:04:29Z", "generation": 1, "labels": {"app": "app-22", "tier": "frontend"},
        "managedFields": [{"apiVersion": "v1", "fieldsType": "FieldsV1", "manager": "bench", "operation": "Update",
                           "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}},
                           "time": "2026-11-30T21:04:29Z"}],
        "name": "mixed-102", "namespace": "mixed", "resourceVersion": "2290",
        "uid": "587d96ff-394e-4250-9f31-ef8e34ce009f",
    },
    "spec": {
        "containers": [{"image": "registry.k8s.io/pause:3.10", "imagePullPolicy": "IfNotPresent", "name": "pause",
                        "ports": [{"containerPort": 8080, "hostPort": 8004, "protocol": "TCP"}],
                        "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}},
                        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
        "dnsPolicy": "ClusterFirst", "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority",
        "priority": 0, "priorityClassName": "bench-low", "restartPolicy": "Always",
        "schedulerName": "policy-scheduler", "securityContext": {}, "terminationGracePeriodSeconds": 0,
        "tolerations": [
            {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists",
             "tolerationSeconds": 300},
            {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists",
             "tolerationSeconds": 300},
        ],
    },
    "status": {"phase": "Pending", "qosClass": "Burstable"},
}

RICH: dict[str, Any] = {
    "metadata": {"name": "rich", "namespace": "ns", "labels": {"app": "a", "tier": "t", "n": 5},
                 "annotations": {"x": "y", "f": 1.5, "b": True}, "uid": "u1",
                 "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "controller": True}]},
    "spec": {
        "priority": 10, "nodeSelector": {"disk": "ssd"}, "hostNetwork": True,
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}],
                     "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]},
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 5, "preference": {"matchExpressions": [{"key": "k", "operator": "Exists"}]}}]},
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "zone", "matchLabelKeys": ["tier"]}],
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 3, "podAffinityTerm": {"labelSelector": {"matchExpressions": [
                        {"key": "app", "operator": "In", "values": ["b"]}]}, "topologyKey": "host", "namespaces": ["x"]}}]},
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "kubernetes.io/hostname",
                 "mismatchLabelKeys": ["app"], "namespaceSelector": {}}]},
        },
        "initContainers": [
            {"name": "i1", "image": "busybox", "resources": {"requests": {"cpu": "200m"}, "limits": {"memory": "1Gi"}}},
            {"name": "sc", "image": "envoy:1.2", "restartPolicy": "Always", "ports": [{"containerPort": 9000}],
             "resources": {"requests": {"cpu": "50m", "memory": "64Mi", "example.com/gpu": "1"}}},
        ],
        "containers": [
            {"name": "c1", "image": "reg:5000/app",
             "resources": {"requests": {"cpu": "1.5", "memory": "1e3", "hugepages-2Mi": "4Mi"},
                           "limits": {"cpu": "2", "ephemeral-storage": "1G"}},
             "ports": [{"containerPort": 80, "hostIP": "1.2.3.4", "protocol": "UDP"},
                       {"containerPort": 81, "hostPort": 8081}]},
            {"name": "c2", "image": "x/y@sha256:abc", "resources": {"requests": {"cpu": 0.25, "memory": 1024}}},
        ],
        "overhead": {"cpu": "10m", "memory": "1Mi"},
        "tolerations": [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}, {"operator": "Exists"}],
        "topologySpreadConstraints": [
            {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway",
             "labelSelector": {"matchLabels": {"app": "a"}}, "matchLabelKeys": ["tier"], "minDomains": 2,
             "nodeAffinityPolicy": "Ignore"}],
    },
    "status": {"containerStatuses": [{"name": "c1", "resources": {"requests": {"cpu": "3", "memory": "2e3"}},
                                      "allocatedResources": {"cpu": "2500m"}}],
               "conditions": [{"type": "PodResizePending", "reason": "Deferred"}]},
}

POD_LEVEL: dict[str, Any] = {
    "metadata": {"name": "podlevel", "deletionTimestamp": "2020-01-01T00:00:00Z"},
    "spec": {"resources": {"requests": {"cpu": "3", "memory": "3Gi"}}, "schedulerName": "other", "nodeName": "n1",
             "containers": [{"name": "a", "image": "a",
                             "resources": {"requests": {"cpu": "1m", "foo": "5", "nvidia.com/gpu": "2"}}}]},
    "status": {"containerStatuses": [{"name": "a", "resources": {"requests": {"cpu": "7"}}}],
               "conditions": [{"type": "PodResizePending", "reason": "Infeasible"}]},
}

JUNK: list[Any] = [None, 1, -3, 2**40, "x", "", [], {}, True, False, "-1", "1.5.5", "12Q", 3.7, -0.5, "1e70",
                   "9" * 50, [1, "a"], {"a": 1}, "  5  ", "0", "0.0001", "1n"]


class Frozen(Mapping[str, Any]):
    """A read-only mapping that is not a dict: build_pod must take its generic (``isinstance``) paths."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:  # warnings quote odd values: show the same text as for the dict
        return repr(self._data)


def _wrap(value: Any) -> Any:
    if isinstance(value, dict):
        return Frozen({k: _wrap(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


def _canon(value: Any) -> Any:
    """A record as plain, comparable data (records compare by identity)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__, {f.name: _canon(getattr(value, f.name)) for f in dataclasses.fields(value)})
    if isinstance(value, Fraction):
        return ("F", str(value))
    if isinstance(value, Mapping):
        return ("map", [(k, _canon(v)) for k, v in value.items()])
    if isinstance(value, (frozenset, set)):
        return ("set", sorted((_canon(v) for v in value), key=repr))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_canon(v) for v in value])
    return (type(value).__name__, value)


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, (*prefix, i))


def _corrupted(rng: random.Random, base: dict[str, Any]) -> Any:
    """``base`` with one to three values replaced by junk (or removed)."""
    pod: Any = copy.deepcopy(base)
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(list(_paths(pod)))
        if not path:
            pod = copy.deepcopy(rng.choice(JUNK))
            continue
        parent = pod
        for step in path[:-1]:
            parent = parent[step]
        if isinstance(parent, dict) and rng.random() < 0.15:
            del parent[path[-1]]
        else:
            parent[path[-1]] = copy.deepcopy(rng.choice(JUNK))
    return pod


def _corpus() -> list[Any]:
    rng = random.Random(20261130)
    bases = [API_POD, RICH, POD_LEVEL]
    pods: list[Any] = [copy.deepcopy(p) for p in bases]
    pods += [_corrupted(rng, rng.choice(bases)) for _ in range(1500)]
    pods += [None, 5, "pod", [], {}, {"metadata": None, "spec": None}, {"metadata": [], "spec": "x", "status": 3}]
    return pods


def _built(obj: Any) -> tuple[Any, list[str]]:
    warnings: list[str] = []
    return _canon(build_pod(obj, warnings)), warnings


def test_plain_dicts_and_generic_mappings_give_the_same_records_and_warnings() -> None:
    corpus = _corpus()
    warned = 0
    for i, pod in enumerate(corpus):
        fast = _built(pod)
        generic = _built(_wrap(pod))
        assert fast == generic, f"pod #{i}: {pod!r}"
        fast_again = _built(pod)  # quantities now cached: still the same
        assert fast_again == fast, f"pod #{i} (second build): {pod!r}"
        warned += bool(fast[1])
    assert warned > 300  # the corruptions do reach the warning paths


def test_nodes_too() -> None:
    node = {"metadata": {"name": "n1", "labels": {"zone": "a"}},
            "spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}, "junk"]},
            "status": {"allocatable": {"cpu": "3900m", "memory": "15Gi", "pods": "110", "bad": "1.2.3", "neg": "-1"},
                       "images": [{"names": ["a:1", 5], "sizeBytes": 100}, {"names": ["b"], "sizeBytes": "x"}]}}
    rng = random.Random(7)
    for obj in [node] + [_corrupted(rng, node) for _ in range(300)]:
        fast: list[str] = []
        generic: list[str] = []
        assert _canon(build_node(obj, fast)) == _canon(build_node(_wrap(obj), generic)), obj
        assert fast == generic


def test_api_server_pod() -> None:
    warnings: list[str] = []
    pod = build_pod(copy.deepcopy(API_POD), warnings)
    assert warnings == []
    assert (pod.name, pod.namespace, pod.scheduler_name, pod.priority) == ("mixed-102", "mixed", "policy-scheduler", 0)
    assert pod.requests == {"cpu": Fraction(1, 10), "memory": 500 * 2**20}
    assert pod.nonzero_requests == {"cpu": Fraction(1, 10), "memory": 500 * 2**20}
    assert [(t.key, t.operator, t.value, t.effect) for t in pod.tolerations] == [
        ("node.kubernetes.io/not-ready", "Exists", "", "NoExecute"),
        ("node.kubernetes.io/unreachable", "Exists", "", "NoExecute")]
    assert [(p.host_ip, p.protocol, p.port) for p in pod.host_ports] == [("0.0.0.0", "TCP", 8004)]
    assert pod.images == ("registry.k8s.io/pause:3.10",)
    assert pod.scalar_resources == () and not pod.has_required_node_affinity


def test_rich_pod_requests() -> None:
    warnings: list[str] = []
    pod = build_pod(copy.deepcopy(RICH), warnings)
    assert warnings == ["Pod ns/rich: metadata.annotations entry 'b' is not a string; ignored"]
    # c1 counts max(spec 1.5, actual 3, allocated 2.5) cpu; the sidecar adds; + overhead
    assert pod.requests["cpu"] == Fraction(3) + Fraction(1, 4) + Fraction(50, 1000) + Fraction(10, 1000)
    assert pod.scalar_resources == ("example.com/gpu", "hugepages-2Mi")
    # memory: the init container's 1Gi (request = limit) outweighs 2000 + 1024 + the sidecar's 64Mi; + overhead
    assert pod.nonzero_requests["memory"] == 2**30 + 2**20


@pytest.mark.parametrize(("requests", "warnings"), [
    ({"cpu": "1.5.5"}, ["spec.containers[0].resources.requests[cpu]: invalid quantity '1.5.5'; ignored"]),
    ({"cpu": "-1"}, ["spec.containers[0].resources.requests[cpu]: -1 is negative (must be greater than or equal "
                     "to 0); ignored"]),
    ({"cpu": True}, ["spec.containers[0].resources.requests[cpu]: invalid quantity True; ignored"]),
    ({"memory": ["1"]}, ["spec.containers[0].resources.requests[memory]: invalid quantity ['1'] (expected a "
                         "string); ignored"]),
])
def test_bad_quantities_warn_every_time(requests: dict[str, Any], warnings: list[str]) -> None:
    pod = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": [{"resources": {"requests": requests}}]}}
    for _ in range(2):  # never cached: the second pod warns the same
        got: list[str] = []
        record = build_pod(copy.deepcopy(pod), got)
        assert got == [f"Pod ns/p: {w}" for w in warnings]
        assert record.requests == {}


@pytest.mark.parametrize(("toleration", "expected", "warnings"), [
    ({"key": 5, "operator": "Exists"}, ("", "Exists", "", ""), ["key is not a string; ignored"]),
    ({"key": "k", "effect": ["NoSchedule"]}, ("k", "", "", ""), ["effect is not a string; ignored"]),
    ({"key": "", "operator": None, "value": "v"}, ("", "", "v", ""), []),
    ("NoSchedule", None, ["spec.tolerations[0] is not a mapping; ignored"]),
])
def test_odd_tolerations(toleration: Any, expected: tuple[str, ...] | None, warnings: list[str]) -> None:
    got: list[str] = []
    pod = build_pod({"metadata": {"name": "p"}, "spec": {"tolerations": [toleration]}}, got)
    assert got == [f"Pod default/p: {w}" for w in warnings]
    assert [(t.key, t.operator, t.value, t.effect) for t in pod.tolerations] == ([expected] if expected else [])


def test_building_leaves_the_object_unchanged() -> None:
    """The fast paths read the object's own dicts instead of copies: they must not write into them."""
    for base in (API_POD, RICH, POD_LEVEL):
        obj = copy.deepcopy(base)
        build_pod(obj, [])
        assert obj == base
