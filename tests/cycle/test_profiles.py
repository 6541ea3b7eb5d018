"""One cycle, one queue, one cache, a policy set per scheduler name (kube-scheduler's profiles)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from policyscheduler.compiler import PolicySet
from policyscheduler.cycle import SCHEDULED, UNSCHEDULABLE, Attempt, ClusterCache, Cycle, SchedulingQueue
from policyscheduler.cycle.queue import scheduler_name_of
from policyscheduler.evaluation import make_evaluator
from tests.evaluation.policies import default_policies, load

SSD = 'score prefer_ssd weight 50 normalize none\n  value if node.labels["disk"] == "ssd" then 100 else 0\n'
ONLY_NVME = 'filter only_nvme\n  reason "node(s) are not nvme"\n  require node.labels["disk"] == "nvme"\n'


def node(name: str, disk: str, cpu: str = "4") -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "disk": disk}},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}


def pod(name: str, scheduler: str | None, cpu: str = "1") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]}
    if scheduler:
        spec["schedulerName"] = scheduler
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"}, "spec": spec}


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def make(sets: PolicySet | dict[str, PolicySet]) -> tuple[Cycle, list[Attempt]]:
    bound: list[Attempt] = []
    # hdd-0 is emptier than ssd-0: the default LeastAllocated score prefers it.
    objects = [node("ssd-0", "ssd", cpu="2"), node("hdd-0", "hdd", cpu="8")]
    cycle = Cycle(SchedulingQueue(clock=Clock()), ClusterCache(objects), make_evaluator("reference"), sets,
                  bound.append, rng=random.Random(0))
    return cycle, bound


def test_each_pod_is_decided_by_its_scheduler_names_policy_set() -> None:
    ssd = load(SSD)
    cycle, _ = make({"plain": default_policies(), "ssd-lover": ssd})
    cycle.queue.add("a", pod("a", "plain"))
    cycle.queue.add("b", pod("b", "ssd-lover"))
    first, second = cycle.schedule_one(), cycle.schedule_one()
    assert first is not None and second is not None
    placed = {a.entry.key: (a.node, a.decision.policy_digest if a.decision else None) for a in (first, second)}
    assert placed == {"a": ("hdd-0", default_policies().digest), "b": ("ssd-0", ssd.digest)}
    assert cycle.policy_set_for(pod("x", "ssd-lover")) is ssd
    assert cycle.policy_set_for(pod("x", None)) is default_policies()  # no profile: the first one
    assert cycle.policy_sets == {"plain": default_policies(), "ssd-lover": ssd}


def test_a_reload_of_one_profile_moves_only_its_unschedulable_pods_and_keeps_the_others_set() -> None:
    strict = load(ONLY_NVME)
    cycle, _ = make({"plain": default_policies(), "strict": strict})
    # No node is nvme; plain's pod fails too because it wants 9 cpus.
    cycle.queue.add("p", pod("p", "plain", cpu="9"))
    cycle.queue.add("s", pod("s", "strict", cpu="3"))
    results = {a.entry.key: a for a in (cycle.schedule_one(), cycle.schedule_one()) if a is not None}
    assert {k: a.result for k, a in results.items()} == {"p": UNSCHEDULABLE, "s": UNSCHEDULABLE}
    assert results["s"].decision is not None and "not nvme" in (results["s"].decision.message or "")
    relaxed = load('filter only_nvme\n  reason "never"\n  require true\n')
    assert cycle.set_policy_set(relaxed, "strict") == 1  # s moved, p stays in the pool
    assert [e.key for e in cycle.queue.unschedulable()] == ["p"]
    assert cycle.policy_sets["plain"] is default_policies() and cycle.policy_sets["strict"] is relaxed
    clock = cycle.queue._clock
    assert isinstance(clock, Clock)
    clock.now += 2  # backoff over
    again = cycle.schedule_one()
    assert again is not None and again.entry.key == "s" and again.result == SCHEDULED
    assert cycle.set_policy_set(relaxed, "strict") == 0  # the same digest: nothing moves
    with pytest.raises(KeyError):
        cycle.set_policy_set(relaxed, "nobody")


def test_requeue_by_reads_uses_the_pods_own_policy_set() -> None:
    strict = load(ONLY_NVME)
    cycle, _ = make({"plain": default_policies(), "strict": strict})
    cycle.queue.add("s", pod("s", "strict", cpu="3"))
    attempt = cycle.schedule_one()
    assert attempt is not None and attempt.result == UNSCHEDULABLE
    interest = attempt.entry.interest
    assert interest is not None and interest.rule_by_node["hdd-0"] == "only_nvme"
    # only_nvme reads node labels: a label change on hdd-0 moves the pod, a pod added there does not.
    from policyscheduler.cycle.events import ClusterEvent

    assert cycle.queue.move(ClusterEvent.assigned_pod("AssignedPodAdd", "hdd-0")) == 0
    assert cycle.queue.move(ClusterEvent.node_updated("hdd-0", frozenset({"labels", "cluster", "node"}))) == 1


def test_one_policy_set_decides_every_pod_as_before() -> None:
    cycle, _ = make(default_policies())
    cycle.queue.add("a", pod("a", "anyone"))
    attempt = cycle.schedule_one()
    assert attempt is not None and attempt.node == "hdd-0"
    assert cycle.policy_sets == {} and cycle.policy_set is default_policies()
    assert scheduler_name_of(pod("x", None)) == "default-scheduler"
