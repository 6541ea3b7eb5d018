"""Clusters and pending-pod workloads for the engine benchmark, modelled on kube-scheduler's scheduler_perf.

kube-scheduler's ``test/integration/scheduler_perf`` measures pods/s for a few canonical workloads on
clusters of fake nodes; issue 6 sets policyscheduler's targets against those thresholds, so the
workloads here mirror them (same kinds of constraints, same topology keys) rather than inventing new
ones. Everything is deterministic: the cluster is a function of the node count (and ``seed``), the
pending pods of the workload name and their count.

The running pods (ten per node by default) look like a real cluster's: Deployments (ReplicaSet owners)
spread over five namespaces, half of them behind a Service -- so default topology spreading has
selectors to look up -- with cpu / memory requests, and nodes in three zones with the usual well-known
labels, a few taints and a handful of images each.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["WORKLOADS", "HET_WORKLOADS", "TERMED_WORKLOADS", "TARGETS", "SCHEDULER_PERF_THRESHOLDS", "base_cluster",
           "iter_cluster", "pending_pods", "churn_plan", "scheduler_perf_threshold"]

Obj = dict[str, Any]

ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
HOSTNAME = "kubernetes.io/hostname"
ZONES = ("zone-0", "zone-1", "zone-2")
NAMESPACES = tuple(f"ns-{i}" for i in range(5))
APPS = 40
IMAGES = {f"registry.example.com/team/app-{i}:v{i % 3}": (20 + 37 * i % 900) * 2**20 for i in range(30)}
INSTANCE_TYPES = ("m5.xlarge", "m5.2xlarge", "c5.4xlarge", "r5.2xlarge")
RACK = "topology.example.com/rack"
RACKS = 40
SIZES = {"m5.xlarge": ("8", "32Gi"), "m5.2xlarge": ("16", "64Gi"), "c5.4xlarge": ("32", "64Gi"),
         "r5.2xlarge": ("16", "128Gi")}
"""Allocatable cpu / memory per instance type of a *varied* node (:func:`_node`)."""

HET_WORKLOADS = {"het-basic": "basic", "het-spreading": "spreading", "het-node-affinity": "node-affinity",
                 "het-preferred-affinity": "preferred-affinity", "het-anti-affinity": "required-anti-affinity",
                 "het-affinity": "required-affinity"}
"""The scheduler_perf-like workloads with heterogeneous pods, each mapped to the identical-pod workload (and
so the scheduler_perf case) whose kind of constraint every one of its pods carries: every pod a distinct
shape of one of many apps, on the cluster with running pods with terms, with churn (see :func:`_het_pod`)."""

WORKLOADS = ("basic", "node-affinity", "required-anti-affinity", "required-affinity",
             "preferred-affinity", "spreading", "mixed", "heterogeneous", *HET_WORKLOADS)
"""Workload names, in the order they are run and reported."""

TERMED_WORKLOADS = frozenset({"heterogeneous", *HET_WORKLOADS})
"""Workloads whose running pods carry inter-pod terms (:func:`base_cluster` with ``terms=True``); they
also have churn (:func:`churn_plan`)."""

SCHEDULER_PERF_THRESHOLDS = {"basic": 810, "spreading": 460, "node-affinity": 220, "preferred-affinity": 90,
                             "required-anti-affinity": 60, "required-affinity": 35}
"""kube-scheduler scheduler_perf pods/s thresholds at 5,000 nodes (its CI fails below them)."""

TARGETS = {"basic": 2500, "spreading": 920, "node-affinity": 440, "preferred-affinity": 180,
           "required-anti-affinity": 120, "required-affinity": 70}
"""Issue 6's targets at 5,000 nodes: basic at Gödel's 2,500 pods/s, the others twice scheduler_perf."""


def scheduler_perf_threshold(workload: str) -> int | None:
    """kube-scheduler's scheduler_perf threshold for the workload's kind of constraint (a heterogeneous
    variant has its identical-pod workload's), or None for a workload scheduler_perf has no case for."""
    return SCHEDULER_PERF_THRESHOLDS.get(HET_WORKLOADS.get(workload, workload))


def _node(i: int, rng: random.Random, varied: bool = False) -> Obj:
    """A node like scheduler_perf's node-default, with real-world labels, a few taints and images.

    ``varied``: a node of one of :data:`RACKS` racks, each rack in one zone and of one instance type whose
    allocatable differs (:data:`SIZES`), as in a real cluster; otherwise every node is 16 cpu / 64Gi and
    the zone and instance type go round-robin (what the identical-pod workloads were measured on)."""
    name = f"node-{i:05d}"
    rack = i % RACKS
    zone = ZONES[(rack if varied else i) % len(ZONES)]
    labels = {
        HOSTNAME: name,
        ZONE: zone,
        REGION: "region-1",
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": INSTANCE_TYPES[(rack if varied else i) % len(INSTANCE_TYPES)],
        "node-role": "infra" if i % 20 == 0 else "worker",
    }
    if varied:
        labels[RACK] = f"rack-{rack:02d}"
    taints: list[Obj] = []
    if i % 20 == 0:
        taints.append({"key": "dedicated", "value": "infra", "effect": "NoSchedule"})
    elif i % 10 == 3:
        taints.append({"key": "spot", "value": "true", "effect": "PreferNoSchedule"})
    images = [{"names": [name_], "sizeBytes": size} for name_, size in
              sorted(rng.sample(sorted(IMAGES.items()), 6))]
    cpu, memory = SIZES[labels["node.kubernetes.io/instance-type"]] if varied else ("16", "64Gi")
    alloc = {"cpu": cpu, "memory": memory, "pods": "110", "ephemeral-storage": "100Gi"}
    spec: Obj = {"taints": taints} if taints else {}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "spec": spec,
            "status": {"capacity": dict(alloc), "allocatable": alloc, "images": images,
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def _same_namespace(other: int, app: int) -> int:
    """The app next to ``other`` that shares ``app``'s namespace: a pod affinity term without
    ``namespaces`` only matches pods of its own pod's namespace, so a term towards an app of another
    namespace could never match (a required one would leave its pod unschedulable)."""
    return other - other % len(NAMESPACES) + app % len(NAMESPACES)


def _running_terms(app: int, rng: random.Random) -> Obj | None:
    """The inter-pod terms of a running pod of a cluster ``with terms``: about 2% carry a required
    hostname anti-affinity term against their own app (scheduler_perf's SchedulingPodAntiAffinity initial
    pods), about 5% preferred pod affinity towards another app by zone or hostname
    (SchedulingPreferredPodAffinity), with a weight and a selector of their own; the rest none."""
    draw = rng.random()
    if draw < 0.02:
        return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            _term({"app": f"app-{app}"}, HOSTNAME)]}}
    if draw < 0.07:
        other = _same_namespace(rng.randrange(APPS), app)
        selector: Obj = ({"matchLabels": {"app": f"app-{other}"}} if rng.random() < 0.7 else
                         {"matchExpressions": [{"key": "tier", "operator": "In",
                                                "values": [("frontend", "backend")[other % 2]]}],
                          "matchLabels": {"pod-template-hash": f"h{other}"}})
        term = {"labelSelector": selector, "topologyKey": rng.choice((ZONE, HOSTNAME))}
        return {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": rng.randint(1, 100), "podAffinityTerm": term}]}}
    return None


def _running_pod(node: str, j: int, rng: random.Random, terms: bool = False) -> Obj:
    """One of a node's running pods: a Deployment replica with requests and the usual labels (and, in a
    cluster with terms, sometimes inter-pod terms: :func:`_running_terms`)."""
    app = rng.randrange(APPS)
    ns = NAMESPACES[app % len(NAMESPACES)]
    image = sorted(IMAGES)[app % len(IMAGES)]
    affinity = _running_terms(app, rng) if terms else None
    extra: Obj = {"affinity": affinity} if affinity else {}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"{node}-run-{j}", "namespace": ns, "uid": f"uid-{node}-{j}",
                     "labels": {"app": f"app-{app}", "tier": ("frontend", "backend")[app % 2],
                                "pod-template-hash": f"h{app}"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"app-{app}-h{app}",
                                          "uid": f"rs-{app}", "controller": True}]},
        "spec": {"nodeName": node, **extra, "containers": [{
            "name": "main", "image": image,
            "resources": {"requests": {"cpu": rng.choice(("100m", "250m", "500m")),
                                       "memory": rng.choice(("128Mi", "256Mi", "1Gi"))}}}]},
        "status": {"phase": "Running"},
    }


def base_cluster(nodes: int, pods_per_node: int = 10, seed: int = 0, terms: bool = False,
                 varied: bool = False) -> list[Obj]:
    """Namespaces, Services, ReplicaSets, ``nodes`` nodes in three zones and their running pods (with
    ``terms``, some of them with inter-pod terms: :func:`_running_terms`; with ``varied``, nodes in racks
    of four sizes: :func:`_node`)."""
    return list(iter_cluster(nodes, pods_per_node, seed, terms, varied))


def iter_cluster(nodes: int, pods_per_node: int = 10, seed: int = 0, terms: bool = False,
                 varied: bool = False) -> Iterator[Obj]:
    """:func:`base_cluster`'s objects one at a time, in the same order and equal to them, the running pods
    made only when asked for: a consumer that drops each object after use (as a watch handler does)
    never holds the whole cluster's dicts (the state benchmark's ``memory`` mode measures the state
    alone that way)."""
    rng = random.Random(seed * 1_000_003 + nodes)
    objects: list[Obj] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {"team": ns}}}
                          for ns in NAMESPACES]
    for app in range(APPS):
        ns = NAMESPACES[app % len(NAMESPACES)]
        objects.append({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                        "metadata": {"name": f"app-{app}-h{app}", "namespace": ns},
                        "spec": {"selector": {"matchLabels": {"app": f"app-{app}", "pod-template-hash": f"h{app}"}}}})
        if app % 2 == 0:
            objects.append({"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"app-{app}", "namespace": ns},
                            "spec": {"selector": {"app": f"app-{app}"}}})
    node_objs = [_node(i, rng, varied) for i in range(nodes)]  # every node first: the draws' order is fixed
    yield from objects
    yield from node_objs
    names = [node["metadata"]["name"] for node in node_objs]
    del objects, node_objs
    for name in names:
        for j in range(pods_per_node):
            yield _running_pod(name, j, rng, terms)


# -- pending pods, one template per workload --------------------------------------------------------------


def _pod(name: str, labels: dict[str, str], **spec: Any) -> Obj:
    """A pending pod in namespace ``bench`` with scheduler_perf's pod-default requests."""
    container = {"name": "pause", "image": "registry.k8s.io/pause:3.10",
                 "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}}}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "bench", "uid": f"uid-{name}", "labels": labels},
            "spec": {"containers": [container], **spec}, "status": {"phase": "Pending"}}


def _term(labels: dict[str, str], key: str) -> Obj:
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": key}


def _basic(i: int) -> Obj:
    return _pod(f"basic-{i}", {"app": "bench-basic"})


def _node_affinity(i: int) -> Obj:
    req = {"nodeSelectorTerms": [{"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["zone-0", "zone-1"]}]}]}
    return _pod(f"node-affinity-{i}", {"app": "bench-node-affinity"},
                affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": req}})


def _required_anti_affinity(i: int) -> Obj:
    labels = {"color": "green"}
    return _pod(f"anti-affinity-{i}", labels, affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [_term(labels, HOSTNAME)]}})


def _required_affinity(i: int) -> Obj:
    labels = {"foo": "bar"}
    return _pod(f"affinity-{i}", labels, affinity={"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [_term(labels, ZONE)]}})


def _preferred_affinity(i: int) -> Obj:
    labels = {"color": "blue"}
    kind = "podAffinity" if i % 2 == 0 else "podAntiAffinity"
    return _pod(f"preferred-{i}", labels, affinity={kind: {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "podAffinityTerm": _term(labels, HOSTNAME)}]}})


def _spreading(i: int) -> Obj:
    labels = {"color": "blue-spread"}
    return _pod(f"spread-{i}", labels, topologySpreadConstraints=[{
        "maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": labels}}])


def _mixed(i: int) -> Obj:
    """Taints to tolerate, host ports that collide, priorities that reorder the queue, soft spreading."""
    pod = _pod(f"mixed-{i}", {"app": f"app-{i % APPS}", "tier": "frontend"})
    spec = pod["spec"]
    spec["priority"] = (0, 100, 1000)[i % 3]
    if i % 4 == 0:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"}]
    if i % 3 == 0:
        spec["containers"][0]["ports"] = [{"containerPort": 8080, "hostPort": 8000 + i % 7, "protocol": "TCP"}]
    if i % 5 == 0:
        spec["topologySpreadConstraints"] = [{"maxSkew": 2, "topologyKey": HOSTNAME,
                                              "whenUnsatisfiable": "ScheduleAnyway",
                                              "labelSelector": {"matchLabels": {"app": f"app-{i % APPS}"}}}]
    if i % 6 == 1:
        spec["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 50, "preference": {"matchExpressions": [
                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["c5.4xlarge"]}]}}]}}
    return pod


def _heterogeneous(i: int, seed: int = 0) -> Obj:
    """A pod of one of many apps, every one a distinct shape: random requests, its own labels, and one of
    ten constraint mixes (none, node affinity, required anti-affinity, required affinity, preferred
    affinity, preferred anti-affinity, zone spreading, hostname spreading, tolerations with a node
    selector, everything soft at once), with selectors that vary from pod to pod. Like the running pods
    it is a ReplicaSet replica in one of the shared namespaces, so default spreading has selectors too.
    A function of (``i``, ``seed``); seed 0 is what the engine benchmark has always measured."""
    rng = random.Random(7919 * i + 13 + 1_000_003 * seed)
    pod, app = _app_pod("het", i, rng)
    labels, spec = pod["metadata"]["labels"], pod["spec"]
    other = f"app-{_same_namespace(rng.randrange(APPS), app)}"
    key = rng.choice((ZONE, HOSTNAME))
    kind = i % 10
    if kind == 1:
        zones = rng.sample(ZONES, 2)
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": ZONE, "operator": "In", "values": zones}]}]}}}
    elif kind == 2:
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            _term({"app": labels["app"], "release": labels["release"]}, HOSTNAME)]}}
    elif kind == 3:
        spec["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            _term({"app": other}, ZONE)]}}
    elif kind in (4, 5):
        which = "podAffinity" if kind == 4 else "podAntiAffinity"
        spec["affinity"] = {which: {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": rng.randint(1, 100), "podAffinityTerm": _term({"app": other}, key)},
            {"weight": rng.randint(1, 100), "podAffinityTerm": {"labelSelector": {"matchExpressions": [
                {"key": "tier", "operator": "In", "values": [labels["tier"]]},
                {"key": "release", "operator": "NotIn", "values": [f"r{i - 1}"]}]}, "topologyKey": key}}]}}
    elif kind == 6:
        spec["topologySpreadConstraints"] = [{"maxSkew": rng.randint(1, 5), "topologyKey": ZONE,
                                              "whenUnsatisfiable": "DoNotSchedule",
                                              "labelSelector": {"matchLabels": {"app": labels["app"]}}}]
    elif kind == 7:
        spec["topologySpreadConstraints"] = [{"maxSkew": rng.randint(1, 3), "topologyKey": HOSTNAME,
                                              "whenUnsatisfiable": "ScheduleAnyway",
                                              "labelSelector": {"matchLabels": {"app": labels["app"],
                                                                                "release": labels["release"]}}}]
    elif kind == 8:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"}]
        spec["nodeSelector"] = {"node.kubernetes.io/instance-type": rng.choice(INSTANCE_TYPES)}
    elif kind == 9:
        spec["affinity"] = {
            "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": rng.randint(1, 100), "preference": {"matchExpressions": [
                    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [rng.choice(INSTANCE_TYPES)]}]}}]},
            "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": rng.randint(1, 100), "podAffinityTerm": _term({"app": labels["app"]}, HOSTNAME)}]}}
        spec["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway",
                                              "labelSelector": {"matchLabels": {"app": labels["app"]}}}]
    return pod


def _app_pod(prefix: str, i: int, rng: random.Random) -> tuple[Obj, int]:
    """A pending replica of a random app (and the app): a ReplicaSet's pod in the app's namespace with the
    app's labels plus a release label of its own, the app's image and random cpu / memory requests -- no
    constraint yet; the heterogeneous templates add one."""
    app = rng.randrange(APPS)
    labels = {"app": f"app-{app}", "tier": ("frontend", "backend")[app % 2], "pod-template-hash": f"h{app}",
              "release": f"r{i}"}
    container = {"name": "main", "image": sorted(IMAGES)[app % len(IMAGES)],
                 "resources": {"requests": {"cpu": f"{rng.randint(10, 1500)}m", "memory": f"{rng.randint(16, 3000)}Mi"}}}
    name = f"{prefix}-{i}"
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NAMESPACES[app % len(NAMESPACES)], "uid": f"uid-{name}",
                         "labels": labels,
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"app-{app}-h{app}",
                                              "uid": f"rs-{app}", "controller": True}]},
            "spec": {"containers": [container]}, "status": {"phase": "Pending"}}, app


def _app_selector(rng: random.Random, app: int, toward: int | None = None) -> Obj:
    """A label selector for the pods of ``app`` (or of the app ``toward``), spelled one of several ways
    (its app label; app and tier; app and template hash; an In expression over it and a neighbour of its
    namespace; the app label Exists-and-In), so selectors differ from pod to pod."""
    target = app if toward is None else toward
    name = f"app-{target}"
    draw = rng.random()
    if draw < 0.4:
        return {"matchLabels": {"app": name}}
    if draw < 0.6:
        return {"matchLabels": {"app": name, "tier": ("frontend", "backend")[target % 2]}}
    if draw < 0.75:
        return {"matchLabels": {"pod-template-hash": f"h{target}"}}
    if draw < 0.9:
        neighbour = f"app-{_same_namespace(rng.randrange(APPS), app)}"
        return {"matchExpressions": [{"key": "app", "operator": "In", "values": sorted({name, neighbour})}]}
    return {"matchExpressions": [{"key": "pod-template-hash", "operator": "Exists"},
                                 {"key": "app", "operator": "In", "values": [name]}]}


def _pod_term(rng: random.Random, app: int, key: str, toward: int | None = None) -> Obj:
    """A pod (anti-)affinity term over :func:`_app_selector`; a quarter of them name their namespaces
    (their own and the next one), as scheduler_perf's templates do, the rest default to their own."""
    term: Obj = {"labelSelector": _app_selector(rng, app, toward), "topologyKey": key}
    if rng.random() < 0.25:
        own = app % len(NAMESPACES)
        term["namespaces"] = [NAMESPACES[own], NAMESPACES[(own + 1) % len(NAMESPACES)]]
    return term


def _het_pod(workload: str, i: int, seed: int = 0) -> Obj:
    """The ``i``-th pod of a heterogeneous scheduler_perf-like workload (:data:`HET_WORKLOADS`): a replica
    of one of many apps in their namespaces, interleaved, with random requests (:func:`_app_pod`), carrying
    the constraint of its scheduler_perf case with parameters and selectors of its own:

    * ``het-basic`` (SchedulingBasic): none; a third of the pods have a sidecar container too;
    * ``het-spreading`` (TopologySpreading): a zone spread constraint, DoNotSchedule, maxSkew 1-5;
    * ``het-node-affinity`` (SchedulingNodeAffinity): required node affinity to two of the three zones, some
      with an instance-type clause, some with a second term (worker nodes of one instance type);
    * ``het-preferred-affinity`` (SchedulingPreferredPodAffinity, and its anti-affinity twin every other
      pod, as ``preferred-affinity`` does): one or two preferred terms, weight 1-100, hostname or zone,
      towards the pod's own app or a neighbour's;
    * ``het-anti-affinity`` (SchedulingPodAntiAffinity): required hostname anti-affinity against its own
      app (running replicas included), so an app's pods spread one per node;
    * ``het-affinity`` (SchedulingPodAffinity): required pod affinity by zone (a sixth by hostname) towards
      its own app or a neighbour of its namespace -- apps with running pods, so it is satisfiable.

    A function of (``workload``, ``i``, ``seed``)."""
    salt = 1 + list(HET_WORKLOADS).index(workload)
    rng = random.Random(7919 * i + 13 + 1_000_003 * seed + 104_729 * salt)
    pod, app = _app_pod(workload, i, rng)
    spec = pod["spec"]
    neighbour = _same_namespace(rng.randrange(APPS), app)
    if workload == "het-basic":
        if rng.random() < 0.33:
            spec["containers"].append({"name": "sidecar", "image": "registry.example.com/mesh/proxy:v1", "resources": {
                "requests": {"cpu": f"{rng.randint(5, 200)}m", "memory": f"{rng.randint(16, 256)}Mi"}}})
    elif workload == "het-spreading":
        spec["topologySpreadConstraints"] = [{"maxSkew": rng.randint(1, 5), "topologyKey": ZONE,
                                              "whenUnsatisfiable": "DoNotSchedule",
                                              "labelSelector": _app_selector(rng, app)}]
    elif workload == "het-node-affinity":
        clauses: list[Obj] = [{"key": ZONE, "operator": "In", "values": sorted(rng.sample(ZONES, 2))}]
        if rng.random() < 0.3:
            clauses.append({"key": "node.kubernetes.io/instance-type", "operator": "In",
                            "values": sorted(rng.sample(INSTANCE_TYPES, 3))})
        terms: list[Obj] = [{"matchExpressions": clauses}]
        if rng.random() < 0.2:
            terms.append({"matchExpressions": [
                {"key": "node-role", "operator": "NotIn", "values": ["infra"]},
                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [rng.choice(INSTANCE_TYPES)]}]})
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": terms}}}
    elif workload == "het-preferred-affinity":
        which = "podAffinity" if i % 2 == 0 else "podAntiAffinity"
        preferred = [{"weight": rng.randint(1, 100), "podAffinityTerm": _pod_term(
            rng, app, HOSTNAME if rng.random() < 0.7 else ZONE, rng.choice((None, neighbour)))}
            for _ in range(rng.randint(1, 2))]
        spec["affinity"] = {which: {"preferredDuringSchedulingIgnoredDuringExecution": preferred}}
    elif workload == "het-anti-affinity":
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            _pod_term(rng, app, HOSTNAME)]}}
    elif workload == "het-affinity":
        key = ZONE if rng.random() < 5 / 6 else HOSTNAME
        spec["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            _pod_term(rng, app, key, rng.choice((None, neighbour)))]}}
    else:
        raise KeyError(workload)
    return pod


_TEMPLATES: dict[str, Callable[[int], Obj]] = {
    "basic": _basic, "node-affinity": _node_affinity, "required-anti-affinity": _required_anti_affinity,
    "required-affinity": _required_affinity, "preferred-affinity": _preferred_affinity,
    "spreading": _spreading, "mixed": _mixed, "heterogeneous": _heterogeneous,
}


def pending_pods(workload: str, count: int, seed: int = 0, start: int = 0) -> list[Obj]:
    """``count`` pending pods of the named workload (KeyError for an unknown name), the template's
    ``start``-th pod first; ``seed`` varies the heterogeneous workloads' draws (the identical-pod workloads'
    pods are the same for every seed)."""
    if workload in HET_WORKLOADS:
        return [_het_pod(workload, i, seed) for i in range(start, start + count)]
    template = _TEMPLATES[workload]
    if workload == "heterogeneous":
        return [_heterogeneous(i, seed) for i in range(start, start + count)]
    return [template(i) for i in range(start, start + count)]


CHURN_EVERY = 4
"""In a workload with churn, one running pod is deleted after every ``CHURN_EVERY`` pods scheduled."""


def churn_plan(workload: str, cluster: list[Obj], count: int, seed: int = 0) -> dict[int, Obj]:
    """Running pods to delete while the workload is scheduled: after the pod at position ``i`` (0-based),
    delete ``plan[i]`` (scheduler_perf's SchedulingWithMixedChurn, pods only). Empty for the workloads
    without churn. Deterministic in (workload, cluster, count, seed); prefers pods with inter-pod terms
    every other time, so the term indexes change between pods."""
    if workload not in TERMED_WORKLOADS:
        return {}
    running = [o for o in cluster if o.get("kind") == "Pod"]
    if not running:
        return {}
    rng = random.Random(seed * 31 + count)
    termed = [o for o in running if o["spec"].get("affinity")]
    plan: dict[int, Obj] = {}
    used: set[str] = set()
    for i in range(CHURN_EVERY - 1, count, CHURN_EVERY):
        pool = termed if termed and (i // CHURN_EVERY) % 2 == 0 else running
        for _ in range(8):
            pick = rng.choice(pool)
            if pick["metadata"]["uid"] not in used:
                used.add(pick["metadata"]["uid"])
                plan[i] = pick
                break
    return plan
