"""A small seeded generator of clusters dense in the cases the state's indexes must get right.

Few label values so selectors match often; topology labels sometimes missing or the empty string (the
"" score domain); terminating pods; namespaces with labels and terms with namespace selectors;
duplicate topology keys across constraints and terms; Services for the default spread selector.
"""

from __future__ import annotations

import random
from typing import Any

from policyscheduler.state import ClusterSnapshot

Obj = dict[str, Any]

NAMESPACES = ("default", "ns1", "ns2")
APPS = ("a", "b", "c")
KEYS = ("kubernetes.io/hostname", "topology.kubernetes.io/zone", "rack")


def node(rng: random.Random, name: str) -> Obj:
    labels = {"kubernetes.io/hostname": name}
    if rng.random() < 0.85:
        labels["topology.kubernetes.io/zone"] = rng.choice(("z1", "z2", "z3", ""))
    if rng.random() < 0.6:
        labels["rack"] = rng.choice(("r1", "r2"))
    taints = [{"key": "t", "value": "", "effect": "NoSchedule"}] if rng.random() < 0.15 else []
    images = [{"names": [f"img{i}:latest"], "sizeBytes": rng.randint(1, 10**9)} for i in range(3) if rng.random() < 0.5]
    return {"kind": "Node", "metadata": {"name": name, "labels": labels}, "spec": {"taints": taints},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}, "images": images}}


def selector(rng: random.Random) -> Obj | None:
    r = rng.random()
    if r < 0.05:
        return None
    if r < 0.1:
        return {}
    if r < 0.7:
        return {"matchLabels": {"app": rng.choice(APPS)}}
    return {"matchExpressions": [{"key": "tier", "operator": rng.choice(("In", "NotIn")), "values": ["web"]}]}


def term(rng: random.Random) -> Obj:
    t: Obj = {"topologyKey": rng.choice(KEYS)}
    sel = selector(rng)
    if sel is not None:
        t["labelSelector"] = sel
    r = rng.random()
    if r < 0.2:
        t["namespaces"] = rng.sample(NAMESPACES, rng.randint(1, 2))
    elif r < 0.35:
        t["namespaceSelector"] = rng.choice(({}, {"matchLabels": {"team": "x"}}))
    return t


def affinity(rng: random.Random, p: float) -> Obj:
    out: Obj = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        block: Obj = {}
        if rng.random() < p:
            block["requiredDuringSchedulingIgnoredDuringExecution"] = [term(rng) for _ in range(rng.randint(1, 2))]
        if rng.random() < p:
            block["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.randint(1, 100), "podAffinityTerm": term(rng)} for _ in range(rng.randint(1, 2))]
        if block:
            out[kind] = block
    return out


def spread(rng: random.Random) -> list[Obj]:
    out = []
    for _ in range(rng.randint(1, 3)):
        c: Obj = {"maxSkew": rng.randint(1, 3), "topologyKey": rng.choice(KEYS),
                  "whenUnsatisfiable": rng.choice(("DoNotSchedule", "ScheduleAnyway"))}
        sel = selector(rng)
        if sel is not None:
            c["labelSelector"] = sel
        if rng.random() < 0.3:
            c["nodeTaintsPolicy"] = "Honor"
        if rng.random() < 0.2:
            c["nodeAffinityPolicy"] = "Ignore"
        out.append(c)
    return out


def pod(rng: random.Random, name: str, node_name: str | None, p_affinity: float = 0.25) -> Obj:
    labels = {"app": rng.choice(APPS)}
    if rng.random() < 0.5:
        labels["tier"] = rng.choice(("web", "db"))
    meta: Obj = {"name": name, "namespace": rng.choice(NAMESPACES), "uid": f"uid-{name}", "labels": labels}
    if rng.random() < 0.05:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    spec: Obj = {"containers": [{"name": "c", "image": f"img{rng.randint(0, 3)}",
                                 "resources": {"requests": {"cpu": f"{rng.randint(1, 9) * 100}m"}}}]}
    if node_name:
        spec["nodeName"] = node_name
    aff = affinity(rng, p_affinity)
    if rng.random() < 0.3:
        aff["nodeAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}]}}
    if aff:
        spec["affinity"] = aff
    if rng.random() < 0.4:
        spec["topologySpreadConstraints"] = spread(rng)
    if rng.random() < 0.3:
        spec["tolerations"] = [{"key": "t", "operator": "Exists"}]
    return {"kind": "Pod", "metadata": meta, "spec": spec}


def cluster(rng: random.Random, nodes: int, pods_per_node: int) -> list[Obj]:
    names = [f"n{i}" for i in range(nodes)]
    objs: list[Obj] = [node(rng, n) for n in names]
    objs.append({"kind": "Namespace", "metadata": {"name": "ns1", "labels": {"team": "x"}}})
    objs.append({"kind": "Service", "metadata": {"name": "s", "namespace": "default"},
                 "spec": {"selector": {"app": "a"}}})
    for i in range(nodes * pods_per_node):
        objs.append(pod(rng, f"p{i}", rng.choice(names)))
    return objs


def mutated_snapshot(seed: int) -> ClusterSnapshot:
    """A random cluster after assumes, forgets, deletions, a node added and removed, a namespace relabelled."""
    rng = random.Random(seed)
    snap = ClusterSnapshot.from_objects(cluster(rng, rng.randint(3, 14), rng.randint(0, 5)))
    for step in range(rng.randint(5, 25)):
        r = rng.random()
        names = [n.name for n in snap.nodes]
        if r < 0.45 and names:
            snap.assume(pod(rng, f"new{step}", None, 0.4), rng.choice(names))
        elif r < 0.6 and names:
            victim = rng.choice(snap.nodes)
            if victim.pods:
                snap.state.remove_pod(rng.choice(victim.pods).uid)
        elif r < 0.7:
            snap.add_node(node(rng, f"extra{step}"))
        elif r < 0.8 and len(names) > 1:
            snap.remove_node({"kind": "Node", "metadata": {"name": rng.choice(names)}})
        elif r < 0.9:
            snap.add({"kind": "Namespace", "metadata": {"name": rng.choice(NAMESPACES),
                                                       "labels": {"team": rng.choice(("x", "y"))}}})
        elif names:
            snap.update_node(node(rng, rng.choice(names)))  # labels may move the node between domains
    return snap
