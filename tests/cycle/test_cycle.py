"""``schedule_one`` with the reference evaluator and the cluster cache (no API server)."""

from __future__ import annotations

import random
from typing import Any

from policyscheduler.cycle import SCHEDULED, UNSCHEDULABLE, Attempt, ClusterCache, Cycle, SchedulingQueue
from policyscheduler.evaluation import make_evaluator
from tests.evaluation.policies import default_policies


def node(name: str, cpu: str = "2") -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}


def pod(name: str, cpu: str = "1", node_name: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"}, "spec": spec}


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def make(objects: list[dict[str, Any]]) -> tuple[Cycle, list[Attempt]]:
    bound: list[Attempt] = []
    cycle = Cycle(SchedulingQueue(clock=Clock()), ClusterCache(objects), make_evaluator("reference"),
                  default_policies(), bound.append, rng=random.Random(0))
    return cycle, bound


def later(cycle: Cycle, seconds: float = 1.0) -> None:
    """Let the first backoff (1 s) pass."""
    clock = cycle.queue._clock
    assert isinstance(clock, Clock)
    clock.now += seconds


def test_assumed_pod_occupies_its_node_until_the_bind_fails() -> None:
    cycle, bound = make([node("n1")])
    for name in ("a", "b", "c"):
        cycle.queue.add(name, pod(name))
    results = [cycle.schedule_one() for _ in range(3)]
    assert [r.result if r else None for r in results] == [SCHEDULED, SCHEDULED, UNSCHEDULABLE]
    last = results[2]
    assert last is not None and last.decision is not None
    assert last.decision.message == "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    # a's bind fails: its cpu is free again and c (unschedulable) is moved back
    assert cycle.binding_failed(bound[0], retry=False, reason="409") == "gone"
    later(cycle)
    again = cycle.schedule_one()
    assert again is not None and again.entry.key == "c" and again.result == SCHEDULED


def test_watch_confirmation_keeps_the_pod_and_a_relisted_delete_frees_it() -> None:
    cycle, bound = make([node("n1")])
    cycle.queue.add("a", pod("a"))
    cycle.schedule_one()
    cycle.binding_succeeded(bound[0])
    confirmed = pod("a", node_name="n1")
    cycle.cache.upsert("Pod", confirmed)
    cycle.cache.forget(bound[0].pod)  # a late failure after the confirmation must not free the node
    snap = cycle.cache.snapshot()
    assert snap.nodes[0].pod_count == 1
    cycle.cache.remove("Pod", confirmed)
    assert cycle.cache.snapshot().nodes[0].pod_count == 0


def test_unchanged_cluster_reuses_the_previous_decision() -> None:
    cycle, _ = make([node("n1", cpu="1")])
    cycle.queue.add("big", pod("big", cpu="4"))
    first = cycle.schedule_one()
    cycle.queue.move_all("Test")
    later(cycle)
    second = cycle.schedule_one()
    assert first is not None and second is not None
    assert second.reused and second.decision is first.decision
    cycle.cache.upsert("Node", node("n2", cpu="8"))
    cycle.queue.move_all("NodeAdd")
    later(cycle, 2.0)
    third = cycle.schedule_one()
    assert third is not None and not third.reused and third.node == "n2"
