"""Where the live loop's extra evaluation time goes: the end-to-end benchmark's heterogeneous cluster,
evaluated in-process the way ``bench/engine.py`` feeds it and the way ``policyscheduler run`` is fed.

Usage (from the repository root)::

    .venv/bin/python bench/loop_gap.py [--nodes 1000] [--pods-per-node 10] [--pods 600] [--rounds 2]
                                       [--cases prepared,fed,confirmed,confirmed+python,confirmed+memory]
                                       [--out DIR]

Why: live, the scheduling loop thread spends more CPU per pod evaluating than the same engine in-process
on the same cluster (issue 25's closing notes: 1.7-2.0 ms against 1.1 ms). Each *case* here adds one
difference of the live loop, so the gap can be read off step by step:

* ``prepared``: every pending pod's record built before the clock starts (as ``simulate`` and
  ``bench/engine.py`` do), changes applied through the live :class:`ClusterCache`;
* ``fed``: the records built when a pod is first evaluated, as in ``run``;
* ``confirmed``: and the watch's confirmation of each bind arriving ``--lag`` pods later, carrying the
  zone and region labels the API server's PodTopologyLabels admission copies onto a pod it binds;
* ``+python`` / ``+memory``: and another process sharing the loop's CPU -- a pure-Python busy loop, or a
  numpy copy of 16 MB arrays (memory traffic like an API server's) -- as the API server, etcd and the
  pod creator share the two cores with the scheduler end to end.

Every case has the same churn (a running pod deleted after every fourth pod, as end to end) and runs in a
child process pinned to one CPU (its neighbour on the same CPU), so only the named difference varies.
Reported: the loop thread's CPU per pod (``time.thread_time``: a thread waiting for the CPU costs
nothing; what a neighbour adds is the cache it leaves behind) and its context switches per pod; the
median over ``--rounds`` interleaved rounds. Results go to ``OUT/loop-gap.json`` and ``OUT/loop-gap.md``.
numpy's BLAS kernel is printed first (see bench/engine.py on ``OPENBLAS_CORETYPE``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:  # bench/ is a folder of scripts: its siblings are imported as bench.*
    sys.path.append(str(ROOT))

VARIANTS = ("prepared", "fed", "confirmed")
NEIGHBOURS = ("python", "memory")
DEFAULT_CASES = "prepared,fed,confirmed,confirmed+python,confirmed+memory"
WARM = 50
"""Pods evaluated before the clock starts (the first builds the engine's tables)."""
ZONE_LABELS = ("topology.kubernetes.io/zone", "topology.kubernetes.io/region")


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def parse_case(case: str) -> tuple[str, str | None]:
    """``variant[+neighbour]`` -> (variant, neighbour or None); ValueError naming what is wrong."""
    variant, _, neighbour = case.partition("+")
    if variant not in VARIANTS:
        raise ValueError(f"unknown case {case!r}: the variant is one of {', '.join(VARIANTS)}")
    if neighbour and neighbour not in NEIGHBOURS:
        raise ValueError(f"unknown case {case!r}: the neighbour is one of {', '.join(NEIGHBOURS)}")
    return variant, neighbour or None


def _switches() -> tuple[int, int]:
    """(voluntary, involuntary) context switches of the calling thread so far."""
    fields = dict(line.split(":", 1) for line in Path("/proc/thread-self/status").read_text().splitlines()
                  if ":" in line)
    return int(fields["voluntary_ctxt_switches"]), int(fields["nonvoluntary_ctxt_switches"])


def neighbour(kind: str) -> None:
    """Run forever: the process that shares the measured loop's CPU."""
    if kind == "python":
        while True:
            pass
    import numpy as np

    src = np.ones(2_000_000)
    dst = np.empty_like(src)
    while True:
        np.copyto(dst, src)


def one_case(case: str, nodes: int, per_node: int, pods: int, lag: int, seed: int) -> dict[str, Any]:
    """Measure one case in this process (pinned to one CPU, its neighbour started beside it)."""
    from bench import workloads as wl
    from policyscheduler.app.heap import freeze_heap, relax_collector
    from policyscheduler.cycle import ClusterCache
    from policyscheduler.evaluation import make_evaluator
    from policyscheduler.loader import load_policy_set

    variant, kind = parse_case(case)
    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    relax_collector()
    loaded = load_policy_set([ROOT / "policies"])
    if loaded.policy_set is None:
        raise SystemExit("policies do not load:\n" + "\n".join(map(str, loaded.diagnostics)))
    policy_set = loaded.policy_set
    cluster = wl.base_cluster(nodes, per_node, seed, terms=True, varied=True)
    queue = wl.pending_pods("heterogeneous", WARM + pods, seed)
    churn = wl.churn_plan("heterogeneous", cluster, WARM + pods, seed)
    node_labels = {o["metadata"]["name"]: o["metadata"].get("labels") or {} for o in cluster if o["kind"] == "Node"}
    cache = ClusterCache(cluster)
    if variant == "prepared":
        snapshot = cache.snapshot()
        for pod in queue:
            snapshot.pod_record(pod)
    evaluator = make_evaluator("vector")
    freeze_heap(first=True)
    rng = random.Random(seed)
    waiting: list[dict[str, Any]] = []
    counts = {"placed": 0, "confirmed": 0, "deleted": 0}

    def schedule(lo: int, hi: int) -> None:
        for i in range(lo, hi):
            pod = queue[i]
            decision = evaluator.evaluate(policy_set, cache.snapshot(), pod, rng=rng)
            if decision.node is not None:
                cache.assume(pod, decision.node)
                counts["placed"] += 1
                if variant == "confirmed":
                    waiting.append(_bound(pod, decision.node, node_labels[decision.node]))
                    if len(waiting) > lag:
                        cache.upsert("Pod", waiting.pop(0))
                        counts["confirmed"] += 1
            gone = churn.get(i)
            if gone is not None:
                cache.remove("Pod", gone)
                counts["deleted"] += 1

    schedule(0, WARM)
    child = None
    if kind is not None:
        child = subprocess.Popen([sys.executable, __file__, "--neighbour", kind])
        os.sched_setaffinity(child.pid, {cpu})
        time.sleep(0.5)
    try:
        switches0, cpu0, wall0 = _switches(), time.thread_time(), time.perf_counter()
        schedule(WARM, WARM + pods)
        cpu1, wall1, switches1 = time.thread_time(), time.perf_counter(), _switches()
    finally:
        if child is not None:
            child.kill()
            child.wait()
    return {"case": case, "variant": variant, "neighbour": kind, "cpu": cpu, "pods": pods,
            "cpu_ms_per_pod": round(1000 * (cpu1 - cpu0) / pods, 4),
            "wall_ms_per_pod": round(1000 * (wall1 - wall0) / pods, 4),
            "voluntary_switches_per_pod": round((switches1[0] - switches0[0]) / pods, 2),
            "involuntary_switches_per_pod": round((switches1[1] - switches0[1]) / pods, 2), **counts}


def _bound(pod: dict[str, Any], node: str, labels: dict[str, str]) -> dict[str, Any]:
    """The pod as the watch shows it once bound: ``nodeName`` set, the node's zone and region labels added."""
    meta = pod["metadata"]
    added = {k: labels[k] for k in ZONE_LABELS if k in labels}
    return {**pod, "metadata": {**meta, "labels": {**(meta.get("labels") or {}), **added}},
            "spec": {**pod["spec"], "nodeName": node}}


def run_all(args: argparse.Namespace) -> dict[str, Any]:
    """Every case once per round, interleaved, each in a child process; medians per case."""
    from bench.engine import blas_info, blas_lines, machine_info

    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    for case in cases:
        parse_case(case)
    blas = blas_info()
    for line in blas_lines(blas):
        _say(line)
    rows: list[dict[str, Any]] = []
    for round_ in range(args.rounds):
        for case in cases:
            cmd = [sys.executable, __file__, "--one", case, "--nodes", str(args.nodes),
                   "--pods-per-node", str(args.pods_per_node), "--pods", str(args.pods), "--lag", str(args.lag),
                   "--seed", str(args.seed)]
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise SystemExit(f"case {case} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
            row = json.loads(done.stdout.strip().splitlines()[-1])
            row["round"] = round_
            rows.append(row)
            _say(f"  round {round_ + 1}/{args.rounds}  {case:<20} {row['cpu_ms_per_pod']:.3f} ms/pod CPU  "
                 f"switches {row['voluntary_switches_per_pod']} / {row['involuntary_switches_per_pod']} per pod")
    summary = []
    for case in cases:
        mine = [r for r in rows if r["case"] == case]
        values = [r["cpu_ms_per_pod"] for r in mine]
        summary.append({"case": case, "cpu_ms_per_pod": round(statistics.median(values), 3),
                        "range": [min(values), max(values)],
                        "voluntary_switches_per_pod": statistics.median(r["voluntary_switches_per_pod"] for r in mine),
                        "involuntary_switches_per_pod": statistics.median(r["involuntary_switches_per_pod"] for r in mine),
                        "confirmed": mine[0]["confirmed"], "placed": mine[0]["placed"]})
    return {"nodes": args.nodes, "pods_per_node": args.pods_per_node, "pods": args.pods, "lag": args.lag,
            "rounds": args.rounds, "seed": args.seed, "blas": blas, "machine": machine_info(),
            "command": "python bench/loop_gap.py " + " ".join(sys.argv[1:]), "runs": rows, "summary": summary}


def markdown(result: dict[str, Any]) -> str:
    """The summary table, each case against the first one."""
    base = result["summary"][0]["cpu_ms_per_pod"] if result["summary"] else 0.0
    lines = [f"Loop-thread CPU per pod, heterogeneous pods on the end-to-end cluster ({result['nodes']} nodes, "
             f"{result['pods_per_node']} running pods per node), {result['pods']} pods timed after {WARM}; "
             f"median of {result['rounds']} interleaved rounds; one CPU per case.", "",
             "| case | CPU ms per pod [range] | vs first | context switches per pod (voluntary / involuntary) |",
             "|---|---|---|---|"]
    for row in result["summary"]:
        lo, hi = row["range"]
        ratio = f"{row['cpu_ms_per_pod'] / base:.2f}" if base else "-"
        lines.append(f"| {row['case']} | {row['cpu_ms_per_pod']:.3f} [{lo:.3f}-{hi:.3f}] | {ratio} | "
                     f"{row['voluntary_switches_per_pod']} / {row['involuntary_switches_per_pod']} |")
    lines += ["", f"Command: `{result['command']}`; {result['machine']['cores']} cores, {result['machine']['cpu']}."]
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods-per-node", type=int, default=10)
    parser.add_argument("--pods", type=int, default=600, help=f"pods timed per case (after {WARM} untimed)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--lag", type=int, default=3, help="pods between a bind and its confirmation")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cases", default=DEFAULT_CASES)
    parser.add_argument("--out", default=None, help="write loop-gap.json and loop-gap.md here")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--neighbour", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for name in ("nodes", "pods_per_node", "pods", "rounds"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.lag < 0:
        parser.error("--lag must be at least 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.neighbour:
        neighbour(args.neighbour)
        return 0
    if args.one:
        print(json.dumps(one_case(args.one, args.nodes, args.pods_per_node, args.pods, args.lag, args.seed)))
        return 0
    try:
        result = run_all(args)
    except ValueError as err:
        _say(f"loop_gap: {err}")
        return 2
    table = markdown(result)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "loop-gap.json").write_text(json.dumps(result, indent=2) + "\n")
        (out / "loop-gap.md").write_text(table)
    print(table, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
