"""Preemption in ``schedule_one`` (DefaultPreemption): candidates, victims, node order, messages, nominations.

Each scenario runs the real cycle (queue, cache, evaluator, the default policies) on both backends; the
expected victims and nodes are worked out by hand from kube-scheduler v1.35's rules in the comments.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from policyscheduler.cycle import SCHEDULED, UNSCHEDULABLE, Attempt, ClusterCache, Cycle, SchedulingQueue
from policyscheduler.cycle.preemption import NEVER, NO_VICTIMS, NOT_HELPFUL, unresolvable
from policyscheduler.evaluation import NodeVerdict, make_evaluator
from tests.evaluation.policies import default_policies

ENGINES = ["reference", "vector"]


def node(name: str, cpu: str = "4", taint: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if taint:
        spec["taints"] = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    return {"kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}, "spec": spec,
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}


def pod(name: str, cpu: str = "1", priority: int = 0, on: str | None = None, start: int | None = None,
        labels: dict[str, str] | None = None, **spec_extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"priority": priority, "containers": [
        {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}], **spec_extra}
    obj: dict[str, Any] = {"kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                                                       "labels": labels or {"app": name}}, "spec": spec}
    if on is not None:
        spec["nodeName"] = on
        obj["status"] = {"phase": "Running"}
        if start is not None:
            obj["status"]["startTime"] = f"2026-01-01T00:{start // 60:02d}:{start % 60:02d}Z"
    return obj


def pdb(name: str, app: str, allowed: int) -> dict[str, Any]:
    return {"kind": "PodDisruptionBudget", "apiVersion": "policy/v1", "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": app}}}, "status": {"disruptionsAllowed": allowed}}


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def make(objects: list[dict[str, Any]], engine: str, seed: int = 0) -> tuple[Cycle, list[Attempt]]:
    bound: list[Attempt] = []
    cycle = Cycle(SchedulingQueue(clock=Clock()), ClusterCache(objects), make_evaluator(engine),
                  default_policies(), bound.append, rng=random.Random(seed))
    return cycle, bound


def attempt(objects: list[dict[str, Any]], preemptor: dict[str, Any], engine: str, seed: int = 0) -> Attempt:
    cycle, _ = make(objects, engine, seed)
    cycle.queue.add("p", preemptor)
    result = cycle.schedule_one()
    assert result is not None
    return result


def victims(a: Attempt) -> list[str]:
    return [v.name for v in a.victims]


BIG = pod("big", cpu="2", priority=1000)


# -- candidates and the message --------------------------------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_unresolvable_nodes_are_no_candidates_and_the_message_is_kubes(engine: str) -> None:
    # t: tainted (TaintToleration is UnschedulableAndUnresolvable), small: 1 cpu < the pod's 2 (too big for
    # the node, unresolvable), peer: only a pod of the same priority (no victim)
    objects = [node("t", taint=True), node("small", cpu="1"), node("peer", cpu="2"),
               pod("low-t", cpu="4", priority=1, on="t"), pod("same", cpu="2", priority=1000, on="peer")]
    a = attempt(objects, BIG, engine)
    assert a.result == UNSCHEDULABLE and a.nominated_node is None and a.victims == ()
    assert a.decision is not None and a.decision.message == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. "
        f"preemption: 0/3 nodes are available: 1 {NO_VICTIMS}, 2 {NOT_HELPFUL}.")
    assert a.preemption is not None and dict(a.preemption.statuses) == {"peer": (NO_VICTIMS,)}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_node_where_removing_every_lower_pod_is_not_enough_reports_the_filters_reason(engine: str) -> None:
    objects = [node("n1", cpu="3"), pod("low", cpu="1", priority=1, on="n1"), pod("same", cpu="2", priority=1000, on="n1")]
    a = attempt(objects, pod("big", cpu="3", priority=1000), engine)
    assert a.decision is not None and a.decision.message == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 Insufficient cpu.")


@pytest.mark.parametrize("engine", ENGINES)
def test_preemption_policy_never_does_not_preempt(engine: str) -> None:
    objects = [node("n1", cpu="2"), pod("low", cpu="2", priority=1, on="n1")]
    a = attempt(objects, pod("big", cpu="2", priority=1000, preemptionPolicy="Never"), engine)
    assert a.nominated_node is None and a.victims == ()
    assert a.decision is not None and a.decision.message == f"0/1 nodes are available: 1 Insufficient cpu. preemption: {NEVER}"


def test_insufficient_is_unresolvable_only_when_the_request_exceeds_the_whole_node() -> None:
    from policyscheduler.state import ClusterSnapshot

    snap = ClusterSnapshot.from_objects([node("n1", cpu="2")])
    verdict = NodeVerdict(rule="node_resources_fit", reasons=("Insufficient cpu",))
    assert unresolvable(verdict, snap.pod_record(pod("a", cpu="3")), snap.nodes[0])
    assert not unresolvable(verdict, snap.pod_record(pod("b", cpu="2")), snap.nodes[0])
    taint = NodeVerdict(rule="taint_toleration", reasons=("node(s) had untolerated taint(s)",))
    assert unresolvable(taint, snap.pod_record(pod("c")), snap.nodes[0])
    custom = NodeVerdict(rule="mine", reasons=("node(s) are busy",))
    assert not unresolvable(custom, snap.pod_record(pod("d")), snap.nodes[0])


# -- victims: all lower pods away, then reprieved most important first, PDB-violating ones first --------------

@pytest.mark.parametrize("engine", ENGINES)
def test_reprieve_gives_back_the_most_important_pods_first(engine: str) -> None:
    # 4 cpu: a (prio 30, 2 cpu), b (20, 1), c (10, 1); the pod needs 2. Back in order a, b, c: a fits (2 used),
    # b does not (3 used), c does not -> victims b, c. (Least important first would evict a alone.)
    objects = [node("n1"), pod("a", cpu="2", priority=30, on="n1"), pod("b", priority=20, on="n1"),
               pod("c", priority=10, on="n1")]
    a = attempt(objects, BIG, engine)
    assert a.result == UNSCHEDULABLE and a.nominated_node == "n1"
    assert victims(a) == ["b", "c"]
    assert a.decision is not None and a.decision.message == "0/1 nodes are available: 1 Insufficient cpu."


@pytest.mark.parametrize("engine", ENGINES)
def test_pods_whose_eviction_breaks_a_budget_are_reprieved_first(engine: str) -> None:
    # same node, but c is protected by a PDB with no disruption left: c goes back first (fits: 1 used), then
    # a (3 used: victim), then b (2 used: fits) -> victim a only, no PDB violation
    objects = [node("n1"), pod("a", cpu="2", priority=30, on="n1"), pod("b", priority=20, on="n1"),
               pod("c", priority=10, on="n1"), pdb("keep-c", "c", 0)]
    a = attempt(objects, BIG, engine)
    assert victims(a) == ["a"]
    assert a.preemption is not None and a.preemption.pdb_violations == 0
    assert [v.pdb_violation for v in a.victims] == [False]


@pytest.mark.parametrize("engine", ENGINES)
def test_equal_priority_pods_are_reprieved_oldest_first(engine: str) -> None:
    objects = [node("n1"), pod("young", cpu="2", priority=10, on="n1", start=50),
               pod("old", cpu="2", priority=10, on="n1", start=10)]
    a = attempt(objects, BIG, engine)
    assert victims(a) == ["young"]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_budget_with_disruptions_left_spends_them_in_importance_order(engine: str) -> None:
    # both pods are needed gone (4 cpu, the pod needs 4); the budget allows 1: the more important one (x,
    # first in order) spends it, y breaks the budget
    objects = [node("n1"), pod("x", cpu="2", priority=20, on="n1", labels={"app": "w"}),
               pod("y", cpu="2", priority=10, on="n1", labels={"app": "w"}), pdb("w", "w", 1)]
    a = attempt(objects, pod("big", cpu="4", priority=1000), engine)
    assert victims(a) == ["x", "y"]
    assert [v.pdb_violation for v in a.victims] == [False, True]
    assert a.preemption is not None and a.preemption.pdb_violations == 1


# -- the node: kube's order of criteria --------------------------------------------------------------------

def two_nodes(left: list[dict[str, Any]], right: list[dict[str, Any]], *extra: dict[str, Any]) -> list[dict[str, Any]]:
    return [node("n1", cpu="2"), node("n2", cpu="2"), *left, *right, *extra]


@pytest.mark.parametrize("engine", ENGINES)
def test_fewest_pdb_violations_wins_over_lower_priority(engine: str) -> None:
    objects = two_nodes([pod("cheap", cpu="2", priority=1, on="n1")], [pod("dear", cpu="2", priority=500, on="n2")],
                        pdb("keep-cheap", "cheap", 0))
    a = attempt(objects, BIG, engine)
    assert a.nominated_node == "n2" and victims(a) == ["dear"]


@pytest.mark.parametrize("engine", ENGINES)
def test_lowest_highest_victim_priority_wins_over_fewer_victims(engine: str) -> None:
    objects = two_nodes([pod("one", cpu="2", priority=50, on="n1")],
                        [pod("two-a", priority=20, on="n2"), pod("two-b", priority=20, on="n2")])
    a = attempt(objects, BIG, engine)
    assert a.nominated_node == "n2" and sorted(victims(a)) == ["two-a", "two-b"]


@pytest.mark.parametrize("engine", ENGINES)
def test_smallest_priority_sum_then_latest_start(engine: str) -> None:
    objects = two_nodes([pod("a1", priority=20, on="n1"), pod("a2", priority=15, on="n1")],
                        [pod("b1", priority=20, on="n2"), pod("b2", priority=10, on="n2")])
    assert attempt(objects, BIG, engine).nominated_node == "n2"  # 30 < 35 (each + 2^31)
    objects = two_nodes([pod("early", cpu="2", priority=20, on="n1", start=5)],
                        [pod("late", cpu="2", priority=20, on="n2", start=9)])
    a = attempt(objects, BIG, engine)
    assert a.nominated_node == "n2" and victims(a) == ["late"] and a.preemption is not None and a.preemption.tied == ()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_full_tie_is_broken_at_random_and_reported(engine: str) -> None:
    objects = two_nodes([pod("l", cpu="2", priority=20, on="n1", start=5)], [pod("r", cpu="2", priority=20, on="n2", start=5)])
    chosen = set()
    for seed in range(12):
        a = attempt(objects, BIG, engine, seed)
        assert a.preemption is not None and sorted(a.preemption.tied) == ["n1", "n2"]
        chosen.add(a.nominated_node)
    assert chosen == {"n1", "n2"}


# -- nominated pods ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_the_nominated_room_is_held_against_lower_priority_pods_and_tried_first(engine: str) -> None:
    cycle, _ = make([node("n1", cpu="2"), node("n2", cpu="1"), pod("low", cpu="2", priority=1, on="n1")], engine)
    cycle.queue.add("big", BIG)
    first = cycle.schedule_one()
    assert first is not None and first.nominated_node == "n1" and victims(first) == ["low"]
    assert cycle.nominated == {"default/big": "n1"}
    cycle.cache.remove("Pod", pod("low", cpu="2", priority=1, on="n1"))  # the live side deletes the victim
    cycle.queue.add("small", pod("small", cpu="2", priority=5))  # lower priority: the room is held for big
    small = cycle.schedule_one()
    assert small is not None and small.entry.key == "small" and small.result == UNSCHEDULABLE
    assert small.decision is not None and small.decision.message is not None
    assert small.decision.message.startswith("0/2 nodes are available: 2 Insufficient cpu.")
    cycle.queue.move_all("test")
    cycle.queue._clock.now += 10  # type: ignore[attr-defined]  # past any backoff
    again = [cycle.schedule_one() for _ in range(2)]
    placed = {a.entry.key: a for a in again if a is not None and a.result == SCHEDULED}
    assert set(placed) == {"big"} and placed["big"].node == "n1" and placed["big"].from_nomination
    assert cycle.nominated == {}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_higher_priority_preemptor_displaces_a_lower_nomination(engine: str) -> None:
    cycle, _ = make([node("n1", cpu="2"), pod("low", cpu="2", priority=1, on="n1")], engine)
    cycle.queue.add("mid", pod("mid", cpu="2", priority=100))
    mid = cycle.schedule_one()
    assert mid is not None and mid.nominated_node == "n1"
    cycle.queue.add("top", pod("top", cpu="2", priority=1000))
    top = cycle.schedule_one()
    assert top is not None and top.entry.key == "top" and top.nominated_node == "n1"
    assert top.cleared_nominations == ("default/mid",)
    assert cycle.nominated == {"default/top": "n1"}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_nominated_pod_waits_for_its_terminating_victim_instead_of_preempting_again(engine: str) -> None:
    low = pod("low", cpu="2", priority=1, on="n1")
    cycle, _ = make([node("n1", cpu="2"), low], engine)
    cycle.queue.add("big", BIG)
    first = cycle.schedule_one()
    assert first is not None and victims(first) == ["low"]
    terminating = {**low, "metadata": {**low["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    cycle.cache.upsert("Pod", terminating)  # the live side deleted it; it is still on the node
    cycle.queue.move_all("test")
    cycle.queue._clock.now += 10  # type: ignore[attr-defined]
    again = cycle.schedule_one()
    assert again is not None and again.result == UNSCHEDULABLE and again.victims == () and again.nominated_node is None
    assert again.decision is not None and again.decision.message == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "preemption: not eligible due to a terminating pod on the nominated node.")
    assert cycle.nominated == {"default/big": "n1"} and not again.clear_nomination


@pytest.mark.parametrize("engine", ENGINES)
def test_a_deleted_preemptor_no_longer_holds_its_room(engine: str) -> None:
    low = pod("low", cpu="2", priority=1, on="n1")
    cycle, bound = make([node("n1", cpu="2"), low], engine)
    cycle.queue.add("big", BIG)
    first = cycle.schedule_one()
    assert first is not None and first.nominated_node == "n1"
    cycle.cache.remove("Pod", low)
    cycle.queue.delete("big")  # the preemptor was deleted
    cycle.queue.add("small", pod("small", cpu="2", priority=5))
    small = cycle.schedule_one()
    assert small is not None and small.result == SCHEDULED and small.node == "n1"
    assert cycle.nominated == {} and [a.entry.key for a in bound] == ["small"]
