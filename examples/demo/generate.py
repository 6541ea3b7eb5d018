#!/usr/bin/env python3
"""Generate the bundled demo cluster (policyscheduler/data/demo/*.yaml), deterministically.

Run ``python3 examples/demo/generate.py [OUTDIR]`` (default OUTDIR: policyscheduler/data/demo). The output is committed, so
``policyscheduler simulate`` needs no generation at run time; rerun this script (same seed, same output)
after changing it.

The cluster is a small but realistic production-ish picture designed to exercise every default rule:

* 38 nodes: three zones x (4 small general, 4 large general, 2 memory-optimised, 1 GPU with a
  ``dedicated=gpu:NoSchedule`` taint, 1 spot node with a ``PreferNoSchedule`` taint), one cordoned node,
  and an edge node without a zone label (``missing required label`` for zone spreading) and 4 pod slots;
  numeric ``example.com/cpu-generation`` labels for ``Gt``; node images with sizes.
* Namespaces with team/env labels (for ``namespaceSelector``); Services, ReplicaSets, StatefulSets and a
  ReplicationController whose pods get kube-scheduler's system default spreading.
* ~40 running pods (ingress with host ports, caches, a StatefulSet, a GPU job, a pod whose required
  anti-affinity repels batch pods) and ~200 pending pods mixing nodeSelector, node affinity
  (In/NotIn/Exists/Gt, preferred), tolerations, host ports, init and sidecar containers, extended
  resources, topology spread (DoNotSchedule/ScheduleAnyway, minDomains), pod (anti-)affinity
  (required/preferred, namespaceSelector), images, priorities, and a few pods that fit nowhere.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import yaml

SEED = 20261129
OUT = Path(__file__).resolve().parents[2] / "policyscheduler" / "data" / "demo"
ZONES = ["eu-west-1a", "eu-west-1b", "eu-west-1c"]
REGION = "eu-west-1"
MiB = 1024 * 1024

rng = random.Random(SEED)
_clock = [0]


def stamp(step: int = 7) -> str:
    """Increasing creation timestamps (seconds after 2026-11-01T08:00:00Z)."""
    _clock[0] += step
    sec = _clock[0]
    return f"2026-11-01T{8 + sec // 3600:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}Z"


IMAGES = {
    "pause": ("registry.k8s.io/pause:3.10", 320_000),
    "proxy": ("registry.k8s.io/kube-proxy:v1.35.0", 30 * MiB),
    "web": ("registry.example.com/shop/web:2.14.1", 180 * MiB),
    "api": ("registry.example.com/shop/api:5.2.0", 420 * MiB),
    "cart": ("registry.example.com/shop/cart:1.9.3", 210 * MiB),
    "search": ("registry.example.com/shop/search:8.11.0", 900 * MiB),
    "cache": ("docker.io/library/redis:7.4", 140 * MiB),
    "envoy": ("docker.io/envoyproxy/envoy:v1.32.1", 190 * MiB),
    "ledger": ("registry.example.com/payments/ledger:3.0.7", 650 * MiB),
    "fraud": ("registry.example.com/payments/fraud:0.9.0", 1200 * MiB),
    "report": ("registry.example.com/data/report:2026.11", 1500 * MiB),
    "train": ("nvcr.io/nvidia/pytorch:25.10-py3", 9800 * MiB),
    "job": ("docker.io/library/python:3.13-slim", 130 * MiB),
    "ingress": ("registry.k8s.io/ingress-nginx/controller:v1.12.0", 320 * MiB),
    "legacy": ("registry.example.com/legacy/app:1.0", 700 * MiB),
    "busybox": ("docker.io/library/busybox:1.37", 4 * MiB),
}

NODE_TYPES = {
    # type: (cpu, memory, pods, ephemeral, instance-type, count per zone)
    "small": ("1930m", "7068Mi", "29", "95Gi", "m6i.large", 4),
    "large": ("7910m", "29580Mi", "58", "190Gi", "m6i.2xlarge", 4),
    "mem": ("7910m", "61900Mi", "58", "190Gi", "r6i.2xlarge", 2),
    "gpu": ("7910m", "59000Mi", "58", "400Gi", "p3.2xlarge", 1),
    "spot": ("1930m", "3500Mi", "17", "45Gi", "t3.medium", 1),
}


def node(name: str, kind: str, zone: str | None, *, unschedulable: bool = False) -> dict[str, Any]:
    cpu, mem, pods, eph, itype, _ = NODE_TYPES[kind]
    labels = {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "kubernetes.io/hostname": name,
        "node.kubernetes.io/instance-type": itype,
        "example.com/cpu-generation": str(rng.choice([2, 3, 3, 4])),
        "disktype": "ssd" if kind != "spot" and rng.random() < 0.6 else "hdd",
    }
    if zone is not None:
        labels["topology.kubernetes.io/zone"] = zone
        labels["topology.kubernetes.io/region"] = REGION
    if kind == "mem":
        labels["workload-class"] = "memory"
    if kind == "gpu":
        labels["accelerator"] = "nvidia-tesla-v100"
    if kind == "spot":
        labels["lifecycle"] = "spot"
    taints = []
    if kind == "gpu":
        taints.append({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"})
    if kind == "spot":
        taints.append({"key": "lifecycle", "value": "spot", "effect": "PreferNoSchedule"})
    if unschedulable:
        taints.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": "2026-11-01T07:00:00Z"})
    allocatable = {"cpu": cpu, "memory": mem, "pods": pods, "ephemeral-storage": eph}
    if kind == "gpu":
        allocatable["nvidia.com/gpu"] = "1"
    images = [IMAGES["pause"], IMAGES["proxy"]]
    for key in ("web", "api", "cart", "cache", "search", "ledger", "report", "job", "envoy"):
        if rng.random() < 0.35:
            images.append(IMAGES[key])
    if kind == "gpu":
        images.append(IMAGES["train"])
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "creationTimestamp": "2026-10-01T00:00:00Z"},
        "spec": {},
        "status": {
            "capacity": dict(allocatable),
            "allocatable": allocatable,
            "images": [{"names": [image], "sizeBytes": size} for image, size in images],
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    if taints:
        obj["spec"]["taints"] = taints
    if unschedulable:
        obj["spec"]["unschedulable"] = True
    return obj


def nodes() -> list[dict[str, Any]]:
    out = []
    for zone in ZONES:
        z = zone[-1]
        for kind, spec in NODE_TYPES.items():
            for i in range(1, spec[5] + 1):
                out.append(node(f"{kind}-{z}-{i}", kind, zone))
    out.append(node("large-c-5", "large", "eu-west-1c", unschedulable=True))  # cordoned for maintenance
    edge = node("edge-1", "small", None)  # no zone label, few pod slots ("Too many pods")
    edge["status"]["allocatable"]["pods"] = edge["status"]["capacity"]["pods"] = "4"
    out.append(edge)
    return out


def namespaces() -> list[dict[str, Any]]:
    spec = {
        "default": {},
        "kube-system": {},
        "shop": {"team": "shop", "env": "prod"},
        "payments": {"team": "payments", "env": "prod", "compliance": "pci"},
        "analytics": {"team": "data", "env": "staging"},
        "ml": {"team": "ml", "env": "prod"},
        "batch": {"team": "data", "env": "prod"},
    }
    return [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name, **labels}},
        }
        for name, labels in spec.items()
    ]


def container(name: str, image: str, cpu: str | None = None, mem: str | None = None, **extra: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": IMAGES[image][0]}
    requests = {}
    if cpu:
        requests["cpu"] = cpu
    if mem:
        requests["memory"] = mem
    requests.update(extra.pop("more", {}))
    if requests:
        c["resources"] = {"requests": requests}
    c.update(extra)
    return c


def pod(ns: str, name: str, labels: dict[str, str], containers: list[dict[str, Any]], *,
        owner: tuple[str, str] | None = None, node_name: str | None = None, priority: int | None = None,
        created: str | None = "auto", **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "labels": dict(labels), "uid": f"uid-{ns}-{name}"}
    if created == "auto":
        created = stamp()
    if created is not None:
        meta["creationTimestamp"] = created
    if owner is not None:
        meta["ownerReferences"] = [
            {"apiVersion": "apps/v1" if owner[0] != "ReplicationController" else "v1", "kind": owner[0],
             "name": owner[1], "uid": f"uid-{ns}-{owner[1]}", "controller": True}
        ]
    body: dict[str, Any] = {"schedulerName": "policy-scheduler", "containers": containers}
    if node_name:
        body["nodeName"] = node_name
    if priority is not None:
        body["priority"] = priority
    body.update(spec)
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body}
    obj["status"] = {"phase": "Running" if node_name else "Pending"}
    return obj


def controller(kind: str, ns: str, name: str, labels: dict[str, str], replicas: int) -> dict[str, Any]:
    api = "v1" if kind == "ReplicationController" else "apps/v1"
    selector: dict[str, Any] = dict(labels) if kind == "ReplicationController" else {"matchLabels": dict(labels)}
    spec: dict[str, Any] = {"replicas": replicas, "selector": selector, "template": {"metadata": {"labels": dict(labels)}}}
    if kind == "StatefulSet":
        spec["serviceName"] = name
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}"}, "spec": spec}


def service(ns: str, name: str, selector: dict[str, str], port: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
            "spec": {"selector": dict(selector), "ports": [{"port": port, "protocol": "TCP"}]}}


def suffix() -> str:
    return "".join(rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))


def workloads() -> list[dict[str, Any]]:
    return [
        service("shop", "web", {"app": "web"}, 80),
        service("shop", "api", {"app": "api"}, 8080),
        service("shop", "cache", {"app": "cache"}, 6379),
        service("payments", "ledger", {"app": "ledger"}, 5432),
        controller("ReplicaSet", "shop", "web-6d8f9c", {"app": "web", "pod-template-hash": "6d8f9c"}, 40),
        controller("ReplicaSet", "shop", "api-84b7d5", {"app": "api", "pod-template-hash": "84b7d5"}, 30),
        controller("ReplicaSet", "shop", "cart-5f6c7b", {"app": "cart", "pod-template-hash": "5f6c7b"}, 12),
        controller("StatefulSet", "shop", "cache", {"app": "cache"}, 6),
        controller("StatefulSet", "payments", "ledger", {"app": "ledger"}, 6),
        controller("ReplicationController", "default", "legacy", {"app": "legacy"}, 6),
    ]


def running(all_nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    names = [n["metadata"]["name"] for n in all_nodes]
    # ingress controllers with host ports on three nodes
    for host in ["large-a-1", "large-b-1", "large-c-1"]:
        ports = [{"containerPort": 80, "hostPort": 80, "protocol": "TCP"}, {"containerPort": 443, "hostPort": 443}]
        out.append(pod("kube-system", f"ingress-nginx-{suffix()}", {"app": "ingress-nginx"},
                       [container("controller", "ingress", "200m", "256Mi", ports=ports)],
                       node_name=host, priority=2000000000, created=stamp()))
    # the shop cache StatefulSet (targets of the cart pods' required pod affinity): zones a and b only
    for i, host in enumerate(["large-a-2", "large-a-3", "large-b-2", "large-b-3"]):
        out.append(pod("shop", f"cache-{i}", {"app": "cache"}, [container("redis", "cache", "500m", "2Gi")],
                       owner=("StatefulSet", "cache"), node_name=host, priority=1000))
    # two existing ledger replicas
    for i, host in enumerate(["mem-a-1", "mem-b-1"]):
        out.append(pod("payments", f"ledger-{i}", {"app": "ledger"}, [container("ledger", "ledger", "2", "8Gi")],
                       owner=("StatefulSet", "ledger"), node_name=host, priority=1000))
    # a GPU training job already holding the GPU of zone a
    out.append(pod("ml", "train-warmup", {"app": "train"},
                   [container("train", "train", "4", "32Gi", more={"nvidia.com/gpu": "1"})],
                   node_name="gpu-a-1", tolerations=[{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]))
    # an exclusive analytics pod that repels batch jobs from its node (existing pods' anti-affinity)
    out.append(pod("analytics", "exclusive-profiler", {"app": "profiler"}, [container("profiler", "report", "1", "4Gi")],
                   node_name="large-b-4",
                   affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                       {"labelSelector": {"matchLabels": {"app": "batch-job"}}, "topologyKey": "kubernetes.io/hostname",
                        "namespaceSelector": {}}]}}))
    # web replicas already running
    for host in rng.sample([n for n in names if n.startswith(("small", "large")) and n != "large-c-5"], 12):
        out.append(pod("shop", f"web-6d8f9c-{suffix()}", {"app": "web", "pod-template-hash": "6d8f9c"},
                       [container("web", "web", "250m", "256Mi")], owner=("ReplicaSet", "web-6d8f9c"), node_name=host))
    # legacy app pods and misc pods filling the small nodes a bit
    for host in ["small-a-1", "small-b-1", "small-c-1"]:
        out.append(pod("default", f"legacy-{suffix()}", {"app": "legacy"}, [container("app", "legacy", "600m", "1Gi")],
                       owner=("ReplicationController", "legacy"), node_name=host))
    for host in ["small-a-2", "small-a-3", "small-b-2", "small-c-2", "small-c-3", "spot-a-1", "spot-b-1"]:
        out.append(pod("batch", f"cron-{suffix()}", {"app": "cron"}, [container("job", "job", "900m", "1500Mi")], node_name=host))
    # node monitoring agents (no owner, small requests)
    for host in ["small-a-4", "small-b-3", "large-a-4", "large-b-2", "mem-c-1", "gpu-b-1"]:
        out.append(pod("kube-system", f"node-exporter-{suffix()}", {"app": "node-exporter"},
                       [container("exporter", "busybox", "50m", "64Mi")], node_name=host,
                       tolerations=[{"operator": "Exists"}]))
    # a finished pod (ignored by the snapshot) and a busy large node
    done = pod("batch", "report-2026-10-31", {"app": "cron"}, [container("job", "job", "4", "4Gi")], node_name="large-c-2")
    done["status"]["phase"] = "Succeeded"
    out.append(done)
    out.append(pod("analytics", "warehouse-loader", {"app": "loader"}, [container("loader", "report", "6", "20Gi")], node_name="large-c-3"))
    return out


def toleration(key: str, value: str, effect: str) -> dict[str, Any]:
    return {"key": key, "operator": "Equal", "value": value, "effect": effect}


def pending() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    ssd = {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 50, "preference": {"matchExpressions": [{"key": "disktype", "operator": "In", "values": ["ssd"]}]}}]}
    # web: ReplicaSet + Service => system default spreading; preferred ssd nodes; image locality
    for _ in range(36):
        out.append(pod("shop", f"web-6d8f9c-{suffix()}", {"app": "web", "pod-template-hash": "6d8f9c"},
                       [container("web", "web", "250m", "256Mi")], owner=("ReplicaSet", "web-6d8f9c"),
                       priority=100, affinity={"nodeAffinity": ssd}))
    # api: explicit zone spreading (DoNotSchedule) + hostname ScheduleAnyway; init + sidecar containers
    spread = [
        {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "api"}}},
        {"maxSkew": 2, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
         "labelSelector": {"matchLabels": {"app": "api"}}},
    ]
    for _ in range(30):
        out.append(pod("shop", f"api-84b7d5-{suffix()}", {"app": "api", "pod-template-hash": "84b7d5"},
                       [container("api", "api", "400m", "512Mi")], owner=("ReplicaSet", "api-84b7d5"), priority=100,
                       initContainers=[
                           container("migrate", "api", "1", "256Mi"),
                           container("envoy", "envoy", "100m", "128Mi", restartPolicy="Always"),
                       ],
                       topologySpreadConstraints=spread))
    # ledger: StatefulSet, required anti-affinity per host, required instance types, high priority
    for i in range(2, 8):
        out.append(pod("payments", f"ledger-{i}", {"app": "ledger"}, [container("ledger", "ledger", "2", "8Gi")],
                       owner=("StatefulSet", "ledger"), priority=1000, affinity={
                           "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                               {"matchExpressions": [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                                                      "values": ["r6i.2xlarge", "m6i.2xlarge"]}]}]}},
                           "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                               {"labelSelector": {"matchLabels": {"app": "ledger"}}, "topologyKey": "kubernetes.io/hostname"}]}}))
    # cart: required pod affinity to the cache (zone), preferred anti-affinity among themselves
    for _ in range(12):
        out.append(pod("shop", f"cart-5f6c7b-{suffix()}", {"app": "cart", "pod-template-hash": "5f6c7b"},
                       [container("cart", "cart", "300m", "384Mi")], owner=("ReplicaSet", "cart-5f6c7b"), priority=100,
                       affinity={
                           "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                               {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": "topology.kubernetes.io/zone"}]},
                           "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                               {"weight": 100, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "cart"}},
                                                                  "topologyKey": "kubernetes.io/hostname"}}]}}))
    # fraud: pod affinity across namespaces (namespaceSelector), preferred away from web
    for _ in range(8):
        out.append(pod("payments", f"fraud-{suffix()}", {"app": "fraud"}, [container("fraud", "fraud", "1", "2Gi")],
                       priority=500, affinity={
                           "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                               {"weight": 40, "podAffinityTerm": {
                                   "labelSelector": {"matchLabels": {"app": "cache"}},
                                   "namespaceSelector": {"matchLabels": {"team": "shop"}},
                                   "topologyKey": "topology.kubernetes.io/zone"}}]},
                           "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                               {"weight": 60, "podAffinityTerm": {
                                   "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]},
                                   "namespaceSelector": {"matchLabels": {"env": "prod"}},
                                   "topologyKey": "kubernetes.io/hostname"}}]}}))
    # report: memory-class nodes only (more demand than supply: some fit nowhere)
    for i in range(16):
        out.append(pod("analytics", f"report-{i:02d}", {"app": "report"}, [container("report", "report", "3", "12Gi")],
                       nodeSelector={"workload-class": "memory"}, created=None if i < 2 else "auto"))
    # GPU training: needs the GPU and the toleration; three GPUs, one in use
    for i in range(4):
        out.append(pod("ml", f"train-{i}", {"app": "train"},
                       [container("train", "train", "4", "24Gi", more={"nvidia.com/gpu": "1"})], priority=500,
                       tolerations=[toleration("dedicated", "gpu", "NoSchedule")]))
    # batch jobs: low priority, like spot nodes (tolerate + prefer), repelled by the profiler pod
    for _ in range(34):
        out.append(pod("batch", f"job-{suffix()}", {"app": "batch-job"}, [container("job", "job", "200m", "300Mi")],
                       priority=-10, tolerations=[toleration("lifecycle", "spot", "PreferNoSchedule")],
                       affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                           {"weight": 80, "preference": {"matchExpressions": [{"key": "lifecycle", "operator": "In", "values": ["spot"]}]}}]}}))
    # more ingress controllers: host ports conflict with the running ones
    for _ in range(4):
        ports = [{"containerPort": 80, "hostPort": 80}, {"containerPort": 443, "hostPort": 443}]
        out.append(pod("kube-system", f"ingress-nginx-{suffix()}", {"app": "ingress-nginx"},
                       [container("controller", "ingress", "200m", "256Mi", ports=ports)], priority=2000000000,
                       nodeSelector={"node.kubernetes.io/instance-type": "m6i.2xlarge"}))
    # search: zone spreading with minDomains 4 in a 3-zone cluster => at most one per zone
    for _ in range(6):
        out.append(pod("shop", f"search-{suffix()}", {"app": "search"}, [container("search", "search", "500m", "1Gi")],
                       priority=100, topologySpreadConstraints=[
                           {"maxSkew": 1, "minDomains": 4, "topologyKey": "topology.kubernetes.io/zone",
                            "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "search"}}}]))
    # newer-generation CPUs outside zone c, on nodes with a disktype label (Gt, NotIn, Exists)
    for _ in range(8):
        out.append(pod("default", f"compute-{suffix()}", {"app": "compute"}, [container("compute", "job", "700m", "1Gi")],
                       affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                           {"matchExpressions": [
                               {"key": "example.com/cpu-generation", "operator": "Gt", "values": ["2"]},
                               {"key": "topology.kubernetes.io/zone", "operator": "NotIn", "values": ["eu-west-1c"]},
                               {"key": "disktype", "operator": "Exists"}]}]}}}))
    # legacy RC pods (default spreading through the ReplicationController)
    for _ in range(3):
        out.append(pod("default", f"legacy-{suffix()}", {"app": "legacy"}, [container("app", "legacy", "600m", "1Gi")],
                       owner=("ReplicationController", "legacy")))
    # best-effort helpers (no requests: balanced allocation skips them, Fit counts 100m/200Mi)
    for _ in range(24):
        out.append(pod("shop", f"worker-{suffix()}", {"app": "worker"}, [container("worker", "busybox")],
                       created="2026-11-01T09:00:00Z"))
    # session stores: zone spreading that must skip the zone-less edge node ("missing required label")
    for _ in range(4):
        out.append(pod("shop", f"session-{suffix()}", {"app": "session"}, [container("session", "cache", "50m", "64Mi")],
                       priority=200, topologySpreadConstraints=[
                           {"maxSkew": 2, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
                            "labelSelector": {"matchLabels": {"app": "session"}}}]))
    # a debug pod pinned to two nodes by name (node affinity matchFields metadata.name, one term per node)
    out.append(pod("default", "debug-pinned", {"app": "debug"}, [container("debug", "busybox", "10m", "16Mi")],
                   affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                       {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [name]}]}
                       for name in ("small-a-2", "small-b-2")]}}}))
    # pods that fit nowhere
    out.append(pod("analytics", "giant-query", {"app": "adhoc"}, [container("q", "report", "64", "256Gi")]))
    out.append(pod("default", "needs-arm", {"app": "adhoc"}, [container("x", "busybox", "100m", "64Mi")],
                   nodeSelector={"kubernetes.io/arch": "arm64"}))
    out.append(pod("ml", "gpu-no-toleration", {"app": "adhoc"},
                   [container("x", "train", "1", "4Gi", more={"nvidia.com/gpu": "1"})]))
    out.append(pod("default", "huge-scratch", {"app": "adhoc"},
                   [container("x", "busybox", "100m", "64Mi", more={"ephemeral-storage": "2Ti"})]))
    # a few pods submitted at the same instant, in input order
    rng.shuffle(out)
    return out


def dump(name: str, docs: list[dict[str, Any]], header: str) -> None:
    text = yaml.safe_dump_all(docs, sort_keys=False, default_flow_style=False, width=120)
    (OUT / name).write_text(f"# {header}\n# Generated by examples/demo/generate.py; do not edit by hand.\n{text}", encoding="utf-8")


def main(argv: list[str]) -> int:
    """``generate.py [OUTDIR]`` (default: policyscheduler/data/demo of this checkout)."""
    global OUT
    if argv:
        OUT = Path(argv[0])
    OUT.mkdir(parents=True, exist_ok=True)
    all_nodes = nodes()
    dump("10-namespaces.yaml", namespaces(), "Namespaces with team/env labels.")
    dump("20-nodes.yaml", all_nodes, f"{len(all_nodes)} nodes in 3 zones.")
    dump("30-workloads.yaml", workloads(), "Services and controllers (system default spreading looks at them).")
    run = running(all_nodes)
    dump("40-running-pods.yaml", run, f"{len(run)} pods already bound to nodes.")
    todo = pending()
    # one List document, like `kubectl get pods -o yaml`
    doc = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": todo}
    dump("50-pending-pods.yaml", [doc], f"{len(todo)} pending pods (a kind: List, like kubectl -o yaml).")
    print(f"wrote {len(all_nodes)} nodes, {len(run)} running and {len(todo)} pending pods to {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
