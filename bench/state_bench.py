"""Cluster-state micro-benchmark: per-pod context + every ``cluster.*`` builtin, and building big snapshots.

    .venv/bin/python bench/state_bench.py context [--nodes 1000] [--per-node 10] [--pods 50]
    .venv/bin/python bench/state_bench.py build   [--nodes 5000] [--per-node 10] [--file PATH]

``context`` times ``snapshot.context(pod)`` plus calling every builtin that takes a node on every node
(the scalar form, and ``Cluster.column`` where it exists), then assumes the pod, as ``simulate`` does.
``build`` times ``ClusterSnapshot.from_objects`` (and reading ``--file`` first, when given) and reports
the peak RSS of the process. Runs against whatever ``policyscheduler`` is on ``sys.path``, so the same
script measures an older checkout (``PYTHONPATH=/tmp/old``).
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import time
from typing import Any

ZONES = [f"zone-{i}" for i in range(10)]


def node(i: int) -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": f"node-{i}", "labels": {
        "kubernetes.io/hostname": f"node-{i}", "topology.kubernetes.io/zone": ZONES[i % 10],
        "topology.kubernetes.io/region": "r1", "kubernetes.io/os": "linux"}},
        "spec": {}, "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110", "ephemeral-storage": "100Gi"},
                               "images": [{"names": [f"registry/app-{k}:v1"], "sizeBytes": 100_000_000 + k} for k in range(5)]}}


def pod(rng: random.Random, name: str, node_name: str | None, kind: int) -> dict[str, Any]:
    app = f"app-{rng.randrange(50)}"
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": f"registry/app-{rng.randrange(8)}:v1",
                                            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}
    if node_name:
        spec["nodeName"] = node_name
    sel = {"matchLabels": {"app": app}}
    if kind == 1:
        spec["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                              "whenUnsatisfiable": "DoNotSchedule", "labelSelector": sel}]
    elif kind == 2:
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname", "labelSelector": sel}]}}
    elif kind == 3:
        spec["affinity"] = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "podAffinityTerm": {"topologyKey": "topology.kubernetes.io/zone", "labelSelector": sel}}]}}
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                                        "labels": {"app": app, "tier": "web"}}, "spec": spec}


def cluster(nodes: int, per_node: int, seed: int = 0) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    objs = [node(i) for i in range(nodes)]
    objs.append({"kind": "Service", "metadata": {"name": "svc", "namespace": "default"}, "spec": {"selector": {"tier": "web"}}})
    for i in range(nodes * per_node):
        kind = 2 if i % 100 == 0 else (1 if i % 7 == 0 else 0)  # 1% of running pods carry anti-affinity
        objs.append(pod(rng, f"run-{i}", f"node-{i % nodes}", kind))
    return objs


def builtin_calls(cl: Any, rec: Any) -> list[tuple[str, tuple[Any, ...]]]:
    calls: list[tuple[str, tuple[Any, ...]]] = []
    calls += [("spread_count", (c,)) for c in cl.hard_spread_constraints]
    calls += [("spread_score_count", (c,)) for c in cl.soft_spread_constraints]
    calls += [("affinity_count", (t,)) for t in rec.required_affinity_terms]
    calls += [("anti_affinity_count", (t,)) for t in rec.required_anti_affinity_terms]
    calls += [(n, ()) for n in ("existing_anti_affinity_count", "preferred_affinity_weight", "preferred_anti_affinity_weight",
                                "existing_required_affinity_count", "existing_preferred_affinity_weight",
                                "existing_preferred_anti_affinity_weight")]
    calls += [("scaled_image_size", (image,)) for image in rec.images]
    return calls


def run_context(args: argparse.Namespace) -> None:
    from policyscheduler.state import ClusterSnapshot

    snap = ClusterSnapshot.from_objects(cluster(args.nodes, args.per_node))
    rng = random.Random(1)
    pending = [pod(rng, f"new-{i}", None, i % 4) for i in range(args.pods)]
    scalar = column = pre = 0.0
    for i, obj in enumerate(pending):
        rec = snap.pod_record(obj)
        nodes = snap.nodes
        t = time.perf_counter()
        cl = snap.context(rec)  # the precomputations alone: every builtin on one node
        cl.set_feasible([n.name for n in nodes])
        for name, a in builtin_calls(cl, rec):
            m = getattr(cl, name)
            m(nodes[0], *a) if name == "scaled_image_size" else m(*a, nodes[0])
        t0 = time.perf_counter()
        pre += t0 - t
        cl = snap.context(rec)
        cl.has_existing_anti_affinity()
        cl.set_feasible([n.name for n in nodes])
        for name, a in builtin_calls(cl, rec):
            m = getattr(cl, name)
            for n in nodes:
                m(n, *a) if name == "scaled_image_size" else m(*a, n)
        t1 = time.perf_counter()
        scalar += t1 - t0
        if hasattr(cl, "column"):
            cl = snap.context(rec)
            cl.has_existing_anti_affinity()
            cl.set_feasible([n.name for n in nodes])
            for name, a in builtin_calls(cl, rec):
                cl.column(name, *a)
            column += time.perf_counter() - t1
        snap.assume(obj, nodes[i * 37 % len(nodes)].name)
    per = 1000 / len(pending)
    print(f"{args.nodes} nodes x {args.per_node} pods/node, {len(pending)} pods: context + every builtin on every node "
          f"(scalar) {scalar * per:.2f} ms/pod; precomputations only {pre * per:.2f} ms/pod" + (f"; with columns {column * per:.2f} ms/pod" if column else ""))


def run_build(args: argparse.Namespace) -> None:
    from policyscheduler.state import ClusterSnapshot

    t0 = time.perf_counter()
    if args.file:
        from policyscheduler.inputs import read_objects

        result = read_objects([args.file])
        objects = result.objects
    else:
        objects = cluster(args.nodes, args.per_node)
    t1 = time.perf_counter()
    snap = ClusterSnapshot.from_objects(objects)
    del objects
    t2 = time.perf_counter()
    pods = sum(n.pod_count for n in snap.nodes)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{len(snap.nodes)} nodes, {pods} pods: {'read' if args.file else 'generate'} {t1 - t0:.1f} s, "
          f"from_objects {t2 - t1:.1f} s, peak RSS {rss:.0f} MiB")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=("context", "build", "write"))
    p.add_argument("--nodes", type=int, default=None)
    p.add_argument("--per-node", type=int, default=10)
    p.add_argument("--pods", type=int, default=50)
    p.add_argument("--file")
    args = p.parse_args()
    if args.what == "context":
        args.nodes = args.nodes or 1000
        run_context(args)
    elif args.what == "build":
        args.nodes = args.nodes or 5000
        run_build(args)
    else:
        import json

        json.dump({"kind": "List", "items": cluster(args.nodes or 5000, args.per_node)}, sys.stdout)


if __name__ == "__main__":
    main()
