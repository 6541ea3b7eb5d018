"""Seeded random clusters and pending pods, as plain Kubernetes object dicts.

Every function takes a ``random.Random`` and draws from it in a fixed order, so one integer seed names
one cluster forever (on one Python version): a failing differential case is reproduced by its seed
alone, and hypothesis can shrink over seeds (see :mod:`tests.gen.strategies`). The objects are what
the API server would hold -- valid, defaulted where the object model expects it -- because malformed
input is the subject of ``tests/evaluation/test_malformed_objects.py``, not of these generators.

Edge cases are drawn on purpose rather than left to luck: nodes with zero allocatable, nodes missing
topology labels or the ``pods`` resource, cordoned nodes, pods that fit nowhere (huge requests,
``nodeName`` of a missing node, conflicting node-name pins), and "uniform" clusters of identical nodes
whose scores tie so the tie-break (one ``rng.choice``) is exercised.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tests.gen import vocabulary as v

__all__ = [
    "Case",
    "random_case",
    "random_cluster",
    "random_node",
    "random_pod",
    "random_workload",
    "node_names",
]

Obj = dict[str, Any]


def _chance(rng: random.Random, p: float) -> bool:
    """True with probability ``p`` (one draw, so the stream stays aligned whatever ``p`` is)."""
    return rng.random() < p


def _some(rng: random.Random, items: Sequence[Any], lo: int, hi: int) -> list[Any]:
    """A random sample of ``lo..hi`` distinct items, in the order of ``items`` (deterministic)."""
    k = rng.randint(lo, min(hi, len(items)))
    picked = set(rng.sample(range(len(items)), k))
    return [item for i, item in enumerate(items) if i in picked]


# -- nodes ---------------------------------------------------------------------------------------------


def _node_labels(rng: random.Random, name: str) -> dict[str, str]:
    """Topology and user labels; each topology label is sometimes missing (spread / affinity edge cases)."""
    labels: dict[str, str] = {}
    if not _chance(rng, 0.05):
        labels[v.HOSTNAME] = name
    zone = rng.choice(v.ZONES)
    if not _chance(rng, 0.1):
        labels[v.ZONE] = zone
    if not _chance(rng, 0.1):
        labels[v.REGION] = v.REGION_OF_ZONE[zone]
    if not _chance(rng, 0.15):
        labels[v.RACK] = rng.choice(v.RACKS)
    if _chance(rng, 0.6):
        labels[v.GPU_COUNT] = rng.choice(v.GPU_COUNTS)
    if _chance(rng, 0.8):
        labels[v.KERNEL_MAJOR] = rng.choice(v.KERNELS)
    if _chance(rng, 0.7):
        labels[v.NODE_ROLE] = rng.choice(v.ROLES)
    if _chance(rng, 0.4):
        labels[v.TEAM] = rng.choice(v.TEAMS)
    return labels


def _taints(rng: random.Random) -> list[Obj]:
    """0-3 taints of every effect, with and without values; keys are distinct per (key, effect)."""
    taints: list[Obj] = []
    seen: set[tuple[str, str]] = set()
    for _ in range(rng.choice((0, 0, 0, 0, 0, 1, 1, 2))):
        key, effect = rng.choice(v.TAINT_KEYS), rng.choice(v.EFFECTS)
        value = rng.choice(v.TAINT_VALUES)
        if (key, effect) in seen:
            continue
        seen.add((key, effect))
        taint: Obj = {"key": key, "effect": effect}
        if value:
            taint["value"] = value
        taints.append(taint)
    return taints


def _allocatable(rng: random.Random) -> dict[str, str]:
    """Allocatable resources; zero cpu / memory and a missing ``pods`` entry happen on purpose."""
    alloc = {
        "cpu": rng.choice(v.CPU_ALLOCATABLE),
        "memory": rng.choice(v.MEMORY_ALLOCATABLE),
        "pods": rng.choice(v.PODS_ALLOCATABLE),
    }
    edge = rng.random()
    if edge < 0.03:
        alloc["cpu"] = "0"
    elif edge < 0.06:
        alloc["memory"] = "0"
    elif edge < 0.08:
        alloc["pods"] = "0"
    elif edge < 0.1:
        del alloc["pods"]
    if _chance(rng, 0.5):
        alloc["ephemeral-storage"] = rng.choice(("0", "10Gi", "100Gi"))
    if _chance(rng, 0.35):
        alloc[v.GPU] = rng.choice(("0", "1", "2", "4"))
    if _chance(rng, 0.15):
        alloc[v.HUGEPAGES] = rng.choice(("0", "64Mi", "1Gi"))
    return alloc


def _node_images(rng: random.Random) -> list[Obj]:
    """``status.images``: a few known images, sometimes with a second (tagless) name."""
    images: list[Obj] = []
    for name in _some(rng, list(v.IMAGES), 0, 4):
        names = [name]
        if name == "busybox:latest" and _chance(rng, 0.5):
            names.append("busybox")
        images.append({"names": names, "sizeBytes": v.IMAGES[name]})
    return images


def random_node(rng: random.Random, name: str) -> Obj:
    """One Node object with labels, taints, allocatable (also as capacity), images and maybe cordoned."""
    labels = _node_labels(rng, name)
    allocatable = _allocatable(rng)
    spec: Obj = {}
    if _chance(rng, 0.06):
        spec["unschedulable"] = True
    taints = _taints(rng)
    if taints:
        spec["taints"] = taints
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {
            "capacity": dict(allocatable),
            "allocatable": allocatable,
            "images": _node_images(rng),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def node_names(objects: Sequence[Obj]) -> list[str]:
    """The names of the Node objects among ``objects``, in input order."""
    return [o["metadata"]["name"] for o in objects if o.get("kind") == "Node"]


# -- pod parts -----------------------------------------------------------------------------------------


def _label_selector(rng: random.Random) -> Obj | None:
    """A label selector over app/tier/version: matchLabels, matchExpressions, empty (all) or None (nothing)."""
    kind = rng.random()
    if kind < 0.05:
        return None
    if kind < 0.1:
        return {}
    if kind < 0.65:
        return {"matchLabels": {"app": rng.choice(v.APPS)}}
    key = rng.choice(("app", "tier", "version"))
    values = {"app": v.APPS, "tier": v.TIERS, "version": v.VERSIONS}[key]
    op = rng.choice(("In", "In", "NotIn", "Exists", "DoesNotExist"))
    expr: Obj = {"key": key, "operator": op}
    if op in ("In", "NotIn"):
        expr["values"] = _some(rng, list(values), 1, 2)
    return {"matchExpressions": [expr]}


def _topology_key(rng: random.Random) -> str:
    """Mostly real topology keys; rarely one no node carries."""
    if _chance(rng, 0.05):
        return v.MISSING_KEY
    return rng.choice(v.TOPOLOGY_KEYS)


def _pod_affinity_term(rng: random.Random) -> Obj:
    """An inter-pod affinity term with a selector and namespaces / a namespace selector."""
    term: Obj = {"topologyKey": _topology_key(rng)}
    selector = _label_selector(rng)
    if selector is not None:
        term["labelSelector"] = selector
    scope = rng.random()
    if scope < 0.2:
        term["namespaces"] = _some(rng, list(v.NAMESPACES), 1, 2)
    elif scope < 0.3:
        term["namespaceSelector"] = {}
    elif scope < 0.4:
        term["namespaceSelector"] = {"matchLabels": {"team": rng.choice(("alpha", "beta"))}}
    return term


def _pod_affinity(rng: random.Random, p: float) -> Obj:
    """``spec.affinity.podAffinity`` / ``podAntiAffinity`` blocks; each part present with chance ``p``."""
    out: Obj = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        block: Obj = {}
        if _chance(rng, p):
            block["requiredDuringSchedulingIgnoredDuringExecution"] = [
                _pod_affinity_term(rng) for _ in range(rng.randint(1, 2))]
        if _chance(rng, p):
            block["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.randint(1, 100), "podAffinityTerm": _pod_affinity_term(rng)}
                for _ in range(rng.randint(1, 2))]
        if block:
            out[kind] = block
    return out


def _node_requirement(rng: random.Random) -> Obj:
    """One nodeSelectorRequirement over the node label vocabulary, every operator."""
    op = rng.choice(("In", "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"))
    if op in ("Gt", "Lt"):
        key = rng.choice((v.GPU_COUNT, v.KERNEL_MAJOR))
        return {"key": key, "operator": op, "values": [rng.choice(("0", "1", "2", "4", "5"))]}
    key = rng.choice((v.ZONE, v.REGION, v.RACK, v.NODE_ROLE, v.TEAM, v.GPU_COUNT, v.KERNEL_MAJOR))
    if op in ("Exists", "DoesNotExist"):
        return {"key": key, "operator": op}
    pool = {v.ZONE: v.ZONES, v.REGION: ("region-1", "region-2"), v.RACK: v.RACKS, v.NODE_ROLE: v.ROLES,
            v.TEAM: v.TEAMS, v.GPU_COUNT: v.GPU_COUNTS, v.KERNEL_MAJOR: v.KERNELS}[key]
    return {"key": key, "operator": op, "values": _some(rng, list(pool), 1, 2)}


def _node_selector_term(rng: random.Random, names: Sequence[str]) -> Obj:
    """matchExpressions and/or matchFields (metadata.name In / NotIn); rarely empty (matches nothing)."""
    term: Obj = {}
    if _chance(rng, 0.85):
        term["matchExpressions"] = [_node_requirement(rng) for _ in range(rng.randint(1, 2))]
    if names and _chance(rng, 0.2):
        term["matchFields"] = [{"key": "metadata.name", "operator": rng.choice(("In", "NotIn")),
                                "values": _some(rng, list(names), 1, 3)}]
    return term


def _node_affinity(rng: random.Random, names: Sequence[str]) -> Obj:
    """Required (terms ORed) and preferred node affinity; sometimes a pure node-name pin (DaemonSet style)."""
    out: Obj = {}
    if _chance(rng, 0.15):
        if names and _chance(rng, 0.2):
            # DaemonSet-style pins; a second requirement may leave a term no name (PreFilter rejection)
            terms = [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": _some(rng, [*names, "node-gone"], 1, 2)}
                                      for _ in range(rng.choice((1, 1, 2)))]}
                     for _ in range(rng.randint(1, 2))]
            if _chance(rng, 0.3):  # one term, two disjoint name sets: no node can match
                terms = [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [names[0]]},
                                          {"key": "metadata.name", "operator": "In", "values": ["node-gone"]}]}]
        else:
            terms = [_node_selector_term(rng, names) for _ in range(rng.randint(1, 2))]
        out["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": terms}
    if _chance(rng, 0.3):
        out["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": rng.randint(1, 100), "preference": _node_selector_term(rng, names)}
            for _ in range(rng.randint(1, 3))]
    return out


def _tolerations(rng: random.Random) -> list[Obj]:
    """Tolerations: Equal / Exists, with and without key and effect (an empty Exists tolerates everything)."""
    out: list[Obj] = []
    for _ in range(rng.choice((0, 1, 1, 2, 3))):
        shape = rng.random()
        if shape < 0.08:
            out.append({"operator": "Exists"})
            continue
        tol: Obj = {"key": rng.choice((*v.TAINT_KEYS, "node.kubernetes.io/unschedulable"))}
        if shape < 0.5:
            tol["operator"] = "Exists"
        else:
            if _chance(rng, 0.5):
                tol["operator"] = "Equal"
            value = rng.choice(v.TAINT_VALUES)
            if value:
                tol["value"] = value
        if _chance(rng, 0.7):
            tol["effect"] = rng.choice(v.EFFECTS)
        out.append(tol)
    return out


def _spread_constraints(rng: random.Random) -> list[Obj]:
    """Hard and soft topology spread constraints with minDomains, matchLabelKeys and the node policies."""
    out: list[Obj] = []
    used: set[tuple[str, str]] = set()
    for _ in range(rng.randint(1, 2)):
        key = _topology_key(rng)
        when = rng.choice(("DoNotSchedule", "ScheduleAnyway"))
        if (key, when) in used:
            continue
        used.add((key, when))
        c: Obj = {"maxSkew": rng.randint(1, 3), "topologyKey": key, "whenUnsatisfiable": when}
        selector = _label_selector(rng)
        if selector is not None:
            c["labelSelector"] = selector
        if when == "DoNotSchedule" and _chance(rng, 0.3):
            c["minDomains"] = rng.randint(1, 4)
        if _chance(rng, 0.2):
            c["matchLabelKeys"] = ["version"]
        if _chance(rng, 0.2):
            c["nodeAffinityPolicy"] = rng.choice(("Honor", "Ignore"))
        if _chance(rng, 0.2):
            c["nodeTaintsPolicy"] = rng.choice(("Honor", "Ignore"))
        out.append(c)
    return out


def _requests(rng: random.Random, big: bool) -> dict[str, str]:
    """Container requests; sometimes none (best effort), sometimes extended resources or a huge cpu ask."""
    req: dict[str, str] = {}
    if _chance(rng, 0.8):
        req["cpu"] = "64" if big else rng.choice(v.CPU_REQUESTS)
    elif big:
        req["memory"] = "1Ti"
    if _chance(rng, 0.7):
        req["memory"] = rng.choice(v.MEMORY_REQUESTS)
    if _chance(rng, 0.04):
        req["ephemeral-storage"] = rng.choice(("1Gi", "20Gi"))
    if _chance(rng, 0.04):
        req[v.GPU] = rng.choice(("1", "2", "9"))
    if _chance(rng, 0.02):
        req[v.HUGEPAGES] = "128Mi"
    return req


def _container(rng: random.Random, name: str, ports: bool, big: bool = False) -> Obj:
    """A container with an image, requests (sometimes given only as limits) and maybe host ports."""
    c: Obj = {"name": name, "image": rng.choice(v.POD_IMAGES)}
    req = _requests(rng, big)
    if req:
        c["resources"] = {"limits": req} if _chance(rng, 0.15) else {"requests": req}
    if ports and _chance(rng, 0.5):
        c["ports"] = []
        for port in _some(rng, list(v.PORTS), 1, 2):
            p: Obj = {"containerPort": port, "hostPort": port, "protocol": rng.choice(v.PROTOCOLS)}
            ip = rng.choice(v.HOST_IPS)
            if ip:
                p["hostIP"] = ip
            c["ports"].append(p)
    return c


def _pod_labels(rng: random.Random, app: str) -> dict[str, str]:
    labels = {"app": app}
    if _chance(rng, 0.7):
        labels["tier"] = rng.choice(v.TIERS)
    if _chance(rng, 0.6):
        labels["version"] = rng.choice(v.VERSIONS)
    if _chance(rng, 0.3):
        labels["team"] = rng.choice(v.TEAMS)
    if _chance(rng, 0.04):
        labels["accelerator"] = "nvidia"
    return labels


# -- running pods --------------------------------------------------------------------------------------


def _running_pod(rng: random.Random, name: str, node: str, owners: dict[str, Obj]) -> Obj:
    """A pod bound to ``node``: requests, labels, ports, (anti-)affinity terms, a controller owner."""
    app = rng.choice(v.APPS)
    namespace = rng.choice(v.NAMESPACES)
    meta: Obj = {"name": name, "namespace": namespace, "uid": f"uid-{name}", "labels": _pod_labels(rng, app)}
    owner = owners.get(f"{namespace}/{app}")
    if owner is not None and _chance(rng, 0.7):
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner["kind"],
                                    "name": owner["metadata"]["name"], "uid": f"uid-{owner['metadata']['name']}",
                                    "controller": True}]
    spec: Obj = {"nodeName": node, "schedulerName": rng.choice(v.SCHEDULER_NAMES),
                 "containers": [_container(rng, f"c{i}", ports=_chance(rng, 0.3)) for i in range(rng.randint(1, 2))]}
    affinity = _pod_affinity(rng, 0.12)
    if affinity:
        spec["affinity"] = affinity
    if _chance(rng, 0.1):
        spec["topologySpreadConstraints"] = _spread_constraints(rng)
    if _chance(rng, 0.3):
        spec["priority"] = rng.choice((0, 100, 1000))
    phase = "Succeeded" if _chance(rng, 0.03) else "Running"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": phase}}


def _controllers(rng: random.Random) -> tuple[list[Obj], dict[str, Obj]]:
    """Namespaces, Services and ReplicaSets/StatefulSets so default topology spreading has selectors.

    Returns the objects and, per ``namespace/app``, the controller that owns that app's pods.
    """
    objects: list[Obj] = []
    for ns in v.NAMESPACES:
        if ns != "default" or _chance(rng, 0.5):
            objects.append({"apiVersion": "v1", "kind": "Namespace",
                            "metadata": {"name": ns, "labels": dict(v.NAMESPACE_LABELS[ns])}})
    owners: dict[str, Obj] = {}
    for ns in v.NAMESPACES:
        for app in v.APPS:
            r = rng.random()
            if r < 0.25:
                objects.append({"apiVersion": "v1", "kind": "Service",
                                "metadata": {"name": f"svc-{app}", "namespace": ns},
                                "spec": {"selector": {"app": app}}})
            elif r < 0.45:
                kind = "StatefulSet" if app == "db" else "ReplicaSet"
                owner = {"apiVersion": "apps/v1", "kind": kind,
                         "metadata": {"name": f"{app}-set", "namespace": ns},
                         "spec": {"selector": {"matchLabels": {"app": app}}}}
                objects.append(owner)
                owners[f"{ns}/{app}"] = owner
    return objects, owners


def random_cluster(
    rng: random.Random,
    *,
    nodes: int | None = None,
    max_pods_per_node: int = 4,
    uniform: bool | None = None,
) -> list[Obj]:
    """A random cluster: namespaces, controllers, ``nodes`` (default 2-12) nodes and running pods.

    ``uniform`` (default: one cluster in eight) makes every node a copy of the first apart from its
    name and hostname label, and leaves them empty, so many nodes tie on every score.
    """
    count = rng.randint(2, 12) if nodes is None else nodes
    if uniform is None:
        uniform = _chance(rng, 0.125)
    objects, owners = _controllers(rng)
    names = [f"node-{i}" for i in range(count)]
    node_objs: list[Obj] = []
    for i, name in enumerate(names):
        if uniform and i > 0:
            first = node_objs[0]
            labels = {k: (name if k == v.HOSTNAME else val) for k, val in first["metadata"]["labels"].items()}
            node_objs.append({**first, "metadata": {"name": name, "labels": labels}})
        else:
            node_objs.append(random_node(rng, name))
    objects.extend(node_objs)
    if uniform:
        return objects
    for i, name in enumerate(names):
        for j in range(rng.randint(0, max_pods_per_node)):
            objects.append(_running_pod(rng, f"run-{i}-{j}", name, owners))
    return objects


# -- pending pods --------------------------------------------------------------------------------------


def random_pod(rng: random.Random, names: Sequence[str] = (), *, name: str = "pending") -> Obj:
    """A pending pod asking for a random mix of everything the default and user policies look at.

    ``names`` are the cluster's node names, for ``nodeName`` and ``matchFields`` on ``metadata.name``.
    """
    app = rng.choice(v.APPS)
    namespace = rng.choice(v.NAMESPACES)
    meta: Obj = {"name": name, "namespace": namespace, "uid": f"uid-{name}", "labels": _pod_labels(rng, app)}
    if _chance(rng, 0.15):
        meta["annotations"] = {"min-kernel": rng.choice(v.KERNELS)}
    big = _chance(rng, 0.04)
    spec: Obj = {"schedulerName": rng.choice(v.SCHEDULER_NAMES),
                 "containers": [_container(rng, f"c{i}", ports=_chance(rng, 0.25), big=big and i == 0)
                                for i in range(rng.choice((1, 1, 2, 3)))]}
    if _chance(rng, 0.2):
        inits = []
        for i in range(rng.randint(1, 2)):
            init = _container(rng, f"init{i}", ports=False)
            if _chance(rng, 0.3):
                init["restartPolicy"] = "Always"  # a sidecar: its requests add up, its ports count
                if _chance(rng, 0.5):
                    init["ports"] = [{"containerPort": 9090, "hostPort": 9090}]
            inits.append(init)
        spec["initContainers"] = inits
    if _chance(rng, 0.05):
        spec["overhead"] = {"cpu": "50m", "memory": "32Mi"}
    if _chance(rng, 0.12):
        keys = _some(rng, [v.ZONE, v.NODE_ROLE, v.RACK, v.TEAM, v.GPU_COUNT], 1, 2)
        pools = {v.ZONE: v.ZONES, v.NODE_ROLE: v.ROLES, v.RACK: v.RACKS, v.TEAM: v.TEAMS, v.GPU_COUNT: v.GPU_COUNTS}
        spec["nodeSelector"] = {k: rng.choice(pools[k]) for k in keys}
    if _chance(rng, 0.03):
        spec["nodeName"] = rng.choice([*names, "node-gone"]) if names else "node-gone"
    affinity: Obj = {}
    node_aff = _node_affinity(rng, names)
    if node_aff:
        affinity["nodeAffinity"] = node_aff
    affinity.update(_pod_affinity(rng, 0.2))
    if affinity:
        spec["affinity"] = affinity
    tolerations = _tolerations(rng)
    if tolerations:
        spec["tolerations"] = tolerations
    if _chance(rng, 0.3):
        spec["topologySpreadConstraints"] = _spread_constraints(rng)
    if _chance(rng, 0.4):
        spec["priority"] = rng.choice((-10, 0, 100, 1000, 2000000000))
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": "Pending"}}


@dataclass(frozen=True)
class Case:
    """One differential case: the cluster's objects and the pending pod to place on it."""

    seed: int
    objects: list[Obj]
    pod: Obj


def random_case(seed: int, *, nodes: int | None = None) -> Case:
    """The cluster and pending pod named by ``seed`` (one ``random.Random(seed)`` draws both)."""
    rng = random.Random(seed)
    objects = random_cluster(rng, nodes=nodes)
    return Case(seed, objects, random_pod(rng, node_names(objects)))


def random_workload(rng: random.Random, *, pending: int = 8, nodes: int | None = None) -> list[Obj]:
    """A cluster plus ``pending`` pending pods (for whole ``simulate`` runs), in one object list."""
    objects = random_cluster(rng, nodes=nodes)
    names = node_names(objects)
    objects.extend(random_pod(rng, names, name=f"pending-{i}") for i in range(pending))
    return objects
