"""Differential test on the benchmark's heterogeneous workloads: the default policies decide like the real
kube-scheduler v1.35.4, pod by pod, on a cluster with inter-pod terms that changes between pods.

bench/workloads.py's generator builds what issue 25's numbers are measured on: nodes in three zones with
taints and images, ReplicaSets and Services in five namespaces, running pods of 40 apps of which some
carry required hostname anti-affinity or preferred pod affinity terms (``base_cluster(terms=True)``),
and pending pods every one a distinct shape (``heterogeneous`` and the scheduler_perf-like ``het-*``
workloads: node affinity, required and preferred pod (anti-)affinity with selectors and namespaces of
their own, zone spreading, default spreading through their owners). A small such cluster (36 nodes in racks
of four sizes, 10 running pods each) is loaded into this module's own API server, the real
kube-scheduler is started on it (every node scored), and an interleaved stream of the workloads' pods goes
through :class:`parity_run.ParityRun`: our decision on the API server's listing must name kube-scheduler's
node among our best (ties are random on both sides), or give its FailedScheduling message. Running pods
are deleted between pods (the workloads' churn, pods with terms every other time) so the term indexes
change under the per-shape caches; each deletion is given a moment to reach kube-scheduler's informers.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench import workloads
from policyscheduler.kobjects import namespace_of
from policyscheduler.loader import load_policy_set
from policyscheduler.simulate.defaults import default_policies_dir
from tests.controlplane.harness import ControlPlane
from tests.e2e import parity_cluster as pc
from tests.e2e.parity_report import kube_scores
from tests.e2e.parity_run import ParityRun, coverage
from tests.e2e.test_kube_parity import SCHEDULER_ARGS, SCHEDULER_CONFIG

pytestmark = pytest.mark.e2e

NODES = 36
PODS_PER_NODE = 10
PER_WORKLOAD = 12
"""Pods per workload: 7 workloads x 12 = 84 pending pods."""
CHURN_EVERY = 3
"""A running pod is deleted after every third pod of the stream (taken from the workloads' churn plan)."""
SETTLE_SECONDS = 0.3
"""A deletion reaches kube-scheduler's pod informer before the next pod's creation does (one watch, in
order), but its cache and its queue are separate listeners of that informer: a margin for the cache's."""
STREAM = ("heterogeneous", *workloads.HET_WORKLOADS)
SEED = 0


def _for_api_server(obj: dict[str, Any]) -> dict[str, Any]:
    """A generated ReplicaSet or Service the API server accepts: a ReplicaSet needs a template whose labels
    its selector matches (no replicas: the generator's pods stand for them), a ClusterIP Service a port.
    The scheduler reads only their selectors, which stay as generated."""
    out = copy.deepcopy(obj)
    if out["kind"] == "ReplicaSet":
        selector = out["spec"]["selector"]
        out["spec"] = {"replicas": 0, "selector": selector, "template": {
            "metadata": {"labels": dict(selector["matchLabels"])},
            "spec": {"containers": [{"name": "main", "image": pc.PAUSE}]}}}
    elif out["kind"] == "Service":
        out["spec"] = {**out["spec"], "ports": [{"port": 80}]}
    return out


def _stream() -> list[dict[str, Any]]:
    """The workloads' pods interleaved: the first of each workload, then the second of each, ..."""
    per = {name: workloads.pending_pods(name, PER_WORKLOAD, seed=SEED) for name in STREAM}
    return [per[name][i] for i in range(PER_WORKLOAD) for name in STREAM]


@pytest.fixture(scope="module")
def loaded(cp: ControlPlane) -> Iterator[tuple[ParityRun, Any, list[dict[str, Any]]]]:
    """The generated cluster (nodes in racks of four sizes, as bench/e2e.py's) in this module's own API
    server, kube-scheduler running on it, and a ParityRun with the default policies."""
    policies = load_policy_set([default_policies_dir()])
    assert policies.policy_set is not None, policies.diagnostics
    objects = [_for_api_server(o) if o["kind"] in ("ReplicaSet", "Service") else o
               for o in workloads.base_cluster(NODES, PODS_PER_NODE, seed=SEED, terms=True, varied=True)]
    api = cp.api()
    cluster = pc.DemoCluster(api, objects)
    sched = None
    try:
        cluster.load()
        sched = cp.start_scheduler(SCHEDULER_CONFIG, args=SCHEDULER_ARGS)
        yield ParityRun(api, policies.policy_set, cluster), sched, objects
    finally:
        if sched is not None:
            cp.stop_scheduler(sched)
        cluster.delete()


def test_heterogeneous_pods_are_placed_as_kube_scheduler_places_them(
        loaded: tuple[ParityRun, Any, list[dict[str, Any]]]) -> None:
    run, sched, objects = loaded
    started = time.monotonic()
    stream = _stream()
    wanted = len(stream) // CHURN_EVERY
    plan = list(workloads.churn_plan("heterogeneous", objects, workloads.CHURN_EVERY * wanted, SEED).values())
    deleted = 0
    for index, pod in enumerate(stream):
        run.check(pc.adapt_pod(pod, run.cluster.owner_uids, pending=True), seed=index)
        if index % CHURN_EVERY == CHURN_EVERY - 1 and deleted < len(plan):
            gone = plan[deleted]
            pc.delete_pod(run.api, namespace_of(gone), gone["metadata"]["name"])
            deleted += 1
            time.sleep(SETTLE_SECONDS)
    summary = f"{run.summary(time.monotonic() - started)}; {deleted} running pods deleted"
    print(summary)
    if run.mismatches:
        scores = kube_scores(Path(sched.child.log_file))
        report = "\n".join(m.render(scores) for m in run.mismatches)
        pytest.fail(f"{len(run.mismatches)} of {len(run.decisions)} pods differ from kube-scheduler v1.35.4 "
                    f"({summary})\n{report}", pytrace=False)
    assert len(run.decisions) == len(stream) == len(STREAM) * PER_WORKLOAD
    assert run.outcomes["bound"] >= 0.8 * len(stream), run.outcomes
    assert deleted >= wanted - 1
    assert sum(1 for p in plan[:deleted] if p["spec"].get("affinity")) >= deleted // 3  # terms left the indexes
    # the stream made the constraint rules decide: some filter rejected nodes, and the inter-pod, spreading
    # and resource scores separated nodes
    seen = coverage(run.decisions)
    for rule in ("score inter_pod_affinity", "score pod_topology_spread", "score node_resources_fit"):
        assert seen.get(rule, 0) > 0, seen
    assert any(k.startswith("filter ") for k in seen), seen
