"""Cluster-state micro-benchmark: per-pod context + every ``cluster.*`` builtin, building big snapshots,
what the live scheduler's state holds in memory, and what a pod change costs as the cluster grows.

    .venv/bin/python bench/state_bench.py context [--nodes 1000] [--per-node 10] [--pods 50]
    .venv/bin/python bench/state_bench.py build   [--nodes 5000] [--per-node 10] [--file PATH]
    .venv/bin/python bench/state_bench.py memory  [--nodes 5000] [--per-node 30] [--pods 200] [--page 500]
                                                  [--state-only] [--tracemalloc] [--out DIR]
    .venv/bin/python bench/state_bench.py scaling [--sizes 1000,2000,5000] [--per-node 30] [--pods 1000]
                                                  [--warm 100] [--out DIR]

``context`` times ``snapshot.context(pod)`` plus calling every builtin that takes a node on every node
(the scalar form, and ``Cluster.column`` where it exists), then assumes the pod, as ``simulate`` does.
``build`` times ``ClusterSnapshot.from_objects`` (and reading ``--file`` first, when given) and reports
the peak RSS of the process. ``memory`` (:func:`run_memory`) and ``scaling`` (:func:`scaling_size`) use
the engine benchmark's heterogeneous cluster with terms (``workloads.iter_cluster``), fed to the live
scheduler's cache as watch events; see bench/README.md. Runs against whatever ``policyscheduler`` is on
``sys.path``, so the same script measures an older checkout (``PYTHONPATH=/tmp/old``; ``memory`` and
``scaling`` need a checkout with ``kube.watch._remember``).
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import resource
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:  # bench/ is a folder of scripts: its siblings are imported as bench.*
    sys.path.append(str(ROOT))

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


def rss_mib() -> float:
    """The resident set size of this process now, in MiB (Linux ``/proc``; 0 where it is missing)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def peak_mib() -> float:
    """The peak resident set size of this process so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _bound(pod: dict[str, Any], node: str) -> dict[str, Any]:
    """The object the watch shows once the API server bound ``pod`` to ``node``."""
    return {**pod, "spec": {**pod["spec"], "nodeName": node}, "status": {"phase": "Running"}}


def _keep(keep: dict[str, Any], obj: dict[str, Any]) -> None:
    """What the live scheduler's watch bookkeeping keeps of a watched object: the reflector's stub
    (``kube.watch``) and, for a bound pod, the watch router's assigned view (``app.watching``)."""
    from policyscheduler.app.pods import assigned_view, pod_queue_key
    from policyscheduler.kube.watch import _remember

    meta = obj["metadata"]
    keep["stubs"][(meta.get("namespace", ""), meta["name"])] = _remember(obj, obj["kind"])
    if obj["kind"] == "Pod":
        keep["bound"][pod_queue_key(obj)] = assigned_view(obj)


def _watched(objects: Iterator[dict[str, Any]], cache: Any, page: int, keep: dict[str, Any] | None) -> int:
    """Feed ``objects`` to ``cache`` as the live scheduler's watch handler does -- ``upsert`` records each
    one, the loop's next ``snapshot()`` applies them -- a list page at a time, dropping every object once
    applied. ``keep``: also hold what the scheduler's watch bookkeeping keeps per object (the
    reflector's stub, and for a bound pod the router's assigned view), as ``run`` does."""
    count = 0
    for obj in objects:
        cache.upsert(obj["kind"], obj)
        if keep is not None:
            _keep(keep, obj)
        count += 1
        if page and count % page == 0:
            cache.snapshot()
    cache.snapshot()
    return count


def _top_allocations(snapshot: Any, limit: int) -> list[dict[str, Any]]:
    """The biggest allocation sites (tracemalloc, by line) still alive."""
    import tracemalloc

    rows = []
    for stat in snapshot.statistics("lineno")[:limit]:
        assert isinstance(stat, tracemalloc.Statistic)
        frame = stat.traceback[0]
        where = "/".join(Path(frame.filename).parts[-2:])  # package/module.py: short, and no machine path
        rows.append({"where": f"{where}:{frame.lineno}", "mib": round(stat.size / 2**20, 1), "blocks": stat.count})
    return rows


def run_memory(args: argparse.Namespace) -> dict[str, Any]:
    """What ``policyscheduler run`` holds for a cluster: its cache built from watch events, then after
    scheduling ``--pods`` heterogeneous pods with the vector engine (each assumed, then confirmed by a
    "bound" watch event, as a live bind is). The cluster's objects are generated one at a time and
    dropped once applied (``workloads.iter_cluster``), so the process holds the scheduler's state, not
    the input: RSS after the build and after the pods, and the peak (``ru_maxrss``)."""
    from bench.workloads import iter_cluster, pending_pods
    from policyscheduler.cycle import ClusterCache
    from policyscheduler.evaluation import make_evaluator
    from policyscheduler.loader import load_policy_set

    loaded = load_policy_set([Path(args.policies)])
    if loaded.policy_set is None:
        raise SystemExit("policies do not load:\n" + "\n".join(map(str, loaded.diagnostics)))
    policy_set = loaded.policy_set
    evaluator = make_evaluator("vector")
    if args.tracemalloc:
        import tracemalloc

        tracemalloc.start()
    gc.collect()
    result: dict[str, Any] = {"nodes": args.nodes, "pods_per_node": args.per_node,
                              "running_pods": args.nodes * args.per_node, "terms": True,
                              "watch_bookkeeping": not args.state_only, "rss_start_mib": round(rss_mib(), 1)}
    cache = ClusterCache()
    keep: dict[str, Any] | None = None if args.state_only else {"stubs": {}, "bound": {}}
    t0 = time.perf_counter()
    objects = _watched(iter_cluster(args.nodes, args.per_node, seed=args.seed, terms=True), cache, args.page, keep)
    snap = cache.snapshot()
    gc.collect()
    result.update(objects=objects, build_s=round(time.perf_counter() - t0, 1),
                  placed_pods=sum(n.pod_count for n in snap.nodes), rss_after_build_mib=round(rss_mib(), 1),
                  peak_after_build_mib=round(peak_mib(), 1))
    if args.tracemalloc:
        import tracemalloc

        result["top_after_build"] = _top_allocations(tracemalloc.take_snapshot(), args.top)
    rng = random.Random(args.seed)
    placed = 0
    t1 = time.perf_counter()
    for pod in pending_pods("heterogeneous", args.pods, seed=args.seed):
        snap = cache.snapshot()
        decision = evaluator.evaluate(policy_set, snap, pod, rng=rng)
        if decision.node is not None:
            cache.assume(pod, decision.node)
            bound = _bound(pod, decision.node)
            cache.upsert("Pod", bound)  # the watch confirms the bind
            if keep is not None:
                _keep(keep, bound)
            placed += 1
    cache.snapshot()
    gc.collect()
    result.update(pods=args.pods, placed=placed, schedule_s=round(time.perf_counter() - t1, 1),
                  rss_after_pods_mib=round(rss_mib(), 1), peak_mib=round(peak_mib(), 1))
    if args.tracemalloc:
        import tracemalloc

        result["top_after_pods"] = _top_allocations(tracemalloc.take_snapshot(), args.top)
        result["traced_peak_mib"] = round(tracemalloc.get_traced_memory()[1] / 2**20, 1)
    return result


def _print_memory(result: dict[str, Any]) -> None:
    print(f"{result['nodes']} nodes x {result['pods_per_node']} running pods/node (with terms), "
          f"{result['objects']} objects fed as watch events{'' if result['watch_bookkeeping'] else ' (state only)'}: "
          f"built in {result['build_s']} s; RSS {result['rss_start_mib']} MiB at start, "
          f"{result['rss_after_build_mib']} after the build, {result['rss_after_pods_mib']} after "
          f"{result['pods']} heterogeneous pods ({result['placed']} placed, {result['schedule_s']} s); "
          f"peak {result['peak_mib']} MiB")
    for when in ("top_after_build", "top_after_pods"):
        if when in result:
            print(f"tracemalloc, {when.replace('_', ' ')}:")
            for row in result[when]:
                print(f"  {row['mib']:8.1f} MiB {row['blocks']:>9} blocks  {row['where']}")


SCALING_OPS = ("add", "remove", "assume", "forget")
"""The state changes the scaling mode times: a watch event adds a bound pod / deletes it (the cache
applies it, as ``run``'s loop does before its next decision), the scheduler assumes a pending pod on
its node / forgets it (a failed bind)."""


def _termed(pod: dict[str, Any]) -> bool:
    """Whether a pod carries inter-pod (anti-)affinity terms or topology spread constraints."""
    spec = pod["spec"]
    affinity = spec.get("affinity") or {}
    return bool(spec.get("topologySpreadConstraints") or affinity.get("podAffinity") or affinity.get("podAntiAffinity"))


def _scaling_pods(count: int, termed: bool, start: int) -> list[dict[str, Any]]:
    """``count`` heterogeneous pods with (``termed``) or without inter-pod terms and spread constraints,
    distinct from the warm-up pods (their positions start at ``start``)."""
    from bench.workloads import pending_pods

    found: list[dict[str, Any]] = []
    i = start
    while len(found) < count:
        found.extend(p for p in pending_pods("heterogeneous", 100, start=i) if _termed(p) == termed)
        i += 100
    return found[:count]


def _time_ops(pods: list[tuple[dict[str, Any], dict[str, Any]]], op: Any) -> dict[str, float]:
    """Time ``op(pending, bound)`` once per pod: median wall and mean CPU microseconds per call."""
    walls: list[float] = []
    clock, cpu = time.perf_counter, time.process_time
    cpu0 = cpu()
    for pending, bound in pods:
        t = clock()
        op(pending, bound)
        walls.append(clock() - t)
    spent = cpu() - cpu0
    walls.sort()
    return {"median_us": round(1e6 * walls[len(walls) // 2], 1), "cpu_mean_us": round(1e6 * spent / len(walls), 1),
            "p90_us": round(1e6 * walls[int(len(walls) * 0.9)], 1)}


def scaling_size(nodes: int, per_node: int, pods: int, warm: int, policies: str, seed: int = 0) -> dict[str, Any]:
    """One row of the scaling table: build the cache of a ``nodes`` cluster with terms from watch
    events, schedule ``warm`` heterogeneous pods with the vector engine (so the indexes hold what a
    running scheduler's do: match-count arrays of their selectors, the term index), then time each of
    :data:`SCALING_OPS` for ``pods`` pods without and ``pods`` pods with inter-pod terms or spread
    constraints. Every timed change is followed by the node view the next decision reads (``nodes``),
    so the lazy part of the update is counted too."""
    from bench.workloads import iter_cluster, pending_pods
    from policyscheduler.cycle import ClusterCache
    from policyscheduler.evaluation import make_evaluator
    from policyscheduler.loader import load_policy_set

    loaded = load_policy_set([Path(policies)])
    if loaded.policy_set is None:
        raise SystemExit("policies do not load:\n" + "\n".join(map(str, loaded.diagnostics)))
    cache = ClusterCache()
    t0 = time.perf_counter()
    _watched(iter_cluster(nodes, per_node, seed=seed, terms=True), cache, 500, None)
    snap = cache.snapshot()
    build = time.perf_counter() - t0
    evaluator, rng = make_evaluator("vector"), random.Random(seed)
    for pod in pending_pods("heterogeneous", warm, seed=seed):
        decision = evaluator.evaluate(loaded.policy_set, cache.snapshot(), pod, rng=rng)
        if decision.node is not None:
            cache.assume(pod, decision.node)
            cache.upsert("Pod", _bound(pod, decision.node))
    cache.snapshot()
    names = [n.name for n in snap.nodes]
    gc.collect()
    gc.freeze()  # as run does once synced (app/heap.py): the state is out of the collector's way
    row: dict[str, Any] = {"nodes": nodes, "running_pods": nodes * per_node, "pods": pods, "warm_pods": warm,
                           "build_s": round(build, 1), "match_count_arrays": len(snap.state._counts),
                           "term_kinds": [len(snap.state._terms.table(k)) if snap.state._terms else 0 for k in range(4)]}

    def add(pending: dict[str, Any], bound: dict[str, Any]) -> object:
        cache.upsert("Pod", bound)
        return cache.snapshot().nodes  # the view the next decision reads: stale node records rebuilt

    def remove(pending: dict[str, Any], bound: dict[str, Any]) -> object:
        cache.remove("Pod", bound)
        return cache.snapshot().nodes

    def assume(pending: dict[str, Any], bound: dict[str, Any]) -> object:
        cache.assume(pending, bound["spec"]["nodeName"])
        return cache.snapshot().nodes

    def forget(pending: dict[str, Any], bound: dict[str, Any]) -> object:
        cache.forget(pending)
        return cache.snapshot().nodes

    ops = {"add": add, "remove": remove, "assume": assume, "forget": forget}
    for label, termed in (("plain", False), ("terms", True)):
        chosen = _scaling_pods(pods, termed, 1_000_000 if termed else 2_000_000)
        pairs = [(p, _bound(p, names[(i * 7919) % len(names)])) for i, p in enumerate(chosen)]
        for pending, _ in pairs:
            snap.pod_record(pending)  # the decision parsed it already: assume does not pay for that
        for name in SCALING_OPS:
            row[f"{label}_{name}"] = _time_ops(pairs, ops[name])
    gc.unfreeze()
    return row


def run_scaling(args: argparse.Namespace) -> dict[str, Any]:
    sizes = [int(n) for n in str(args.sizes).split(",")]
    rows = []
    for nodes in sizes:
        row = scaling_size(nodes, args.per_node, args.pods, args.warm, args.policies, args.seed)
        rows.append(row)
        print(f"[{nodes} nodes] built in {row['build_s']} s; " + ", ".join(
            f"{k} {v['median_us']} us" for k, v in row.items() if isinstance(v, dict)), flush=True)
        gc.collect()
    return {"per_node": args.per_node, "pods": args.pods, "warm_pods": args.warm, "rows": rows}


def scaling_table(result: dict[str, Any]) -> str:
    """The scaling result as a markdown table: per size, median wall / mean CPU microseconds per change."""
    head = "| nodes | running pods | " + " | ".join(f"{op} ({kind})" for kind in ("plain", "terms") for op in SCALING_OPS) + " |"
    lines = [head, "|" + "---|" * (2 + 2 * len(SCALING_OPS))]
    for row in result["rows"]:
        cells = [f"{row[f'{kind}_{op}']['median_us']:.0f} / {row[f'{kind}_{op}']['cpu_mean_us']:.0f}"
                 for kind in ("plain", "terms") for op in SCALING_OPS]
        lines.append(f"| {row['nodes']:,} | {row['running_pods']:,} | " + " | ".join(cells) + " |")
    rows = result["rows"]
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        ratios = [f"{last[f'{kind}_{op}']['median_us'] / max(first[f'{kind}_{op}']['median_us'], 0.1):.2f}"
                  for kind in ("plain", "terms") for op in SCALING_OPS]
        lines.append(f"| {last['nodes']:,} / {first['nodes']:,} | | " + " | ".join(ratios) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=("context", "build", "write", "memory", "scaling"))
    p.add_argument("--nodes", type=int, default=None)
    p.add_argument("--per-node", type=int, default=None, help="running pods per node (10; memory: 30)")
    p.add_argument("--pods", type=int, default=None, help="pending pods (50; memory: 200)")
    p.add_argument("--file")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--page", type=int, default=500, help="memory: watch events applied per snapshot() (500; 0: all at the end, as run's first list is)")
    p.add_argument("--state-only", action="store_true", help="memory: without the watch bookkeeping")
    p.add_argument("--tracemalloc", action="store_true", help="memory: trace allocations (slower, more RSS)")
    p.add_argument("--top", type=int, default=15, help="memory: allocation sites listed with --tracemalloc")
    p.add_argument("--policies", default=str(ROOT / "policies"))
    p.add_argument("--sizes", default="1000,2000,5000", help="scaling: node counts (1000,2000,5000)")
    p.add_argument("--warm", type=int, default=100, help="scaling: pods scheduled before timing (100)")
    p.add_argument("--out", default=None, help="write the result as JSON (scaling: and markdown) into this folder")
    args = p.parse_args()
    if args.what == "memory":
        args.nodes = args.nodes or 5000
        args.per_node = args.per_node if args.per_node is not None else 30
        args.pods = args.pods if args.pods is not None else 200
        result = run_memory(args)
        _print_memory(result)
        _write(args.out, f"state-memory-{args.nodes}", result)
        return
    if args.what == "scaling":
        args.per_node = args.per_node if args.per_node is not None else 30
        args.pods = args.pods if args.pods is not None else 1000
        result = run_scaling(args)
        table = scaling_table(result)
        print("\nmedian wall / mean CPU microseconds per change (add, remove: a watch event applied; assume, forget: "
              "the scheduler's), pods without (plain) and with inter-pod terms or spread constraints (terms)\n")
        print(table)
        _write(args.out, "state-scaling", result, table)
        return
    args.per_node = args.per_node if args.per_node is not None else 10
    args.pods = args.pods if args.pods is not None else 50
    if args.what == "context":
        args.nodes = args.nodes or 1000
        run_context(args)
    elif args.what == "build":
        args.nodes = args.nodes or 5000
        run_build(args)
    else:
        json.dump({"kind": "List", "items": cluster(args.nodes or 5000, args.per_node)}, sys.stdout)


def _write(out: str | None, name: str, result: dict[str, Any], table: str | None = None) -> None:
    if out is None:
        return
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(result, indent=1) + "\n")
    if table is not None:
        (folder / f"{name}.md").write_text(table)


if __name__ == "__main__":
    main()
