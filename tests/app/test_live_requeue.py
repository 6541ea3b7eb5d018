"""The live scheduler never decides a pod twice after its own bind succeeded, writes no failure about a pod it
placed, and a pod only node affinity rejects is not retried on binds elsewhere."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from typing import Any

import pytest

from policyscheduler.app import LiveScheduler, Options
from policyscheduler.cycle import UNSCHEDULABLE, ClusterCache, Cycle, SchedulingQueue
from policyscheduler.cycle.events import ClusterEvent
from policyscheduler.cycle.schedule import Attempt
from policyscheduler.evaluation import make_evaluator
from policyscheduler.loader import load_layered
from tests.evaluation.policies import default_policies
from tests.kube.test_events import FakeClient


def pod(name: str, *, uid: str | None = None, node: str | None = None, labels: dict[str, str] | None = None,
        cpu: str = "100m", affinity: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "policy-scheduler",
                            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]}
    if node:
        spec["nodeName"] = node
    if affinity:
        spec["affinity"] = affinity
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "ns", "uid": uid or f"uid-{name}",
                                        "labels": labels or {}}, "spec": spec, "status": {}}


def node(name: str, cpu: str = "2") -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}, "spec": {},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}


@pytest.fixture
def sched() -> Iterator[LiveScheduler]:
    loaded = load_layered([])
    assert loaded.policy_set is not None
    s = LiveScheduler(FakeClient(), loaded.policy_set, make_evaluator("reference"),  # type: ignore[arg-type]
                      Options(bind_address=None))
    try:
        yield s
    finally:
        for recorder in s.recorders.values():
            recorder.shutdown(wait=False)
        s.binder.shutdown()


def test_an_update_from_before_our_bind_does_not_queue_the_pod_again(sched: LiveScheduler) -> None:
    created = pod("p")
    sched.watch.on_upsert("Pod", created)
    entry = sched.queue.pop()
    assert entry is not None and entry.key == "uid-p"
    sched.queue.binding(entry)
    attempt = Attempt(entry, created, "scheduled", None, "n1", 0.001)
    # what the binder does on a 201: the cycle lets the pod go, then the scheduler hears of it
    sched.cycle.binding_succeeded(attempt)
    sched._bind_done(attempt, "bound", 0.001, None)
    assert not sched._still_pending(created)  # no failure write about it goes out any more
    # the watch now delivers the label patch made before the bind (no nodeName yet): not ours to decide again
    sched.watch.on_upsert("Pod", pod("p", labels={"touched": "yes"}))
    assert "uid-p" not in sched.queue and sched.queue.pending()["active"] == 0
    # then the bind itself; the pod is placed, nothing is remembered for it any more
    sched.watch.on_upsert("Pod", pod("p", labels={"touched": "yes"}, node="n1"))
    assert "uid-p" not in sched.queue and "uid-p" not in sched._settled
    # a pod recreated under the same name is another pod (another uid): it is queued
    sched.watch.on_upsert("Pod", pod("p", uid="uid-p2"))
    assert "uid-p2" in sched.queue


def test_a_deleted_pod_gets_no_failure_write(sched: LiveScheduler) -> None:
    waiting = pod("q")
    sched.watch.on_upsert("Pod", waiting)
    assert sched._still_pending(waiting)
    sched.watch.on_delete("Pod", waiting)
    assert not sched._still_pending(waiting)
    sched.recorder.failed(waiting, "0/0 nodes are available.")
    time.sleep(0.3)
    assert sched.client.posts == [] and sched.client.patches == []  # type: ignore[attr-defined]


NOWHERE = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "disktype", "operator": "In", "values": ["nvme"]}]}]}}}


def unschedulable(pending: dict[str, Any]) -> SchedulingQueue:
    queue = SchedulingQueue(clock=lambda: 0.0)
    cycle = Cycle(queue, ClusterCache([node("n1"), node("n2", cpu="100m")]), make_evaluator("reference"),
                  default_policies(), lambda a: None, rng=random.Random(0))
    queue.add("p", pending)
    attempt = cycle.schedule_one()
    assert attempt is not None and attempt.result == UNSCHEDULABLE and attempt.queue == "unschedulable"
    return queue


def test_a_node_affinity_rejection_is_not_retried_on_binds_to_nodes_it_did_not_see() -> None:
    queue = unschedulable(pod("p", affinity=NOWHERE))
    for name in ("AssignedPodAdd", "AssignedPodDelete", "AssignedPodUpdate"):
        assert queue.move(ClusterEvent.assigned_pod(name, "n1")) == 0
        assert queue.move(ClusterEvent.assigned_pod(name, "elsewhere")) == 0  # a node the decision did not see
    assert queue.move(ClusterEvent.node_updated("elsewhere", frozenset({"labels", "cluster", "node"}))) == 1


def test_a_resource_rejection_is_still_retried_when_pods_leave_any_node() -> None:
    queue = unschedulable(pod("p", cpu="3"))
    assert queue.move(ClusterEvent.assigned_pod("AssignedPodDelete", "elsewhere")) == 1


def test_the_watch_gives_assigned_pod_events_their_direction(sched: LiveScheduler) -> None:
    """A pod bound to the node where a pod was rejected for cpu, or relabelled there, cannot help it
    (kube-scheduler's Fit registers no pod Add); a resize (direction unknown) or a delete may."""
    sched.watch.on_upsert("Node", node("n1", cpu="1"))
    sched.watch.on_upsert("Pod", pod("a", node="n1", cpu="600m"))
    sched.watch.on_upsert("Pod", pod("p", cpu="600m"))
    attempt = sched.cycle.schedule_one()
    assert attempt is not None and attempt.result == UNSCHEDULABLE
    assert sched.queue.pending()["unschedulable"] == 1
    sched.watch.on_upsert("Pod", pod("b", node="n1", cpu="100m"))  # added
    sched.watch.on_upsert("Pod", pod("a", node="n1", cpu="600m", labels={"x": "y"}))  # relabelled
    assert sched.queue.pending()["unschedulable"] == 1
    sched.watch.on_upsert("Pod", pod("a", node="n1", cpu="300m", labels={"x": "y"}))  # resized
    assert sched.queue.pending()["unschedulable"] == 0


def test_the_watch_moves_a_fit_rejected_pod_when_a_pod_leaves(sched: LiveScheduler) -> None:
    sched.watch.on_upsert("Node", node("n1", cpu="1"))
    sched.watch.on_upsert("Pod", pod("a", node="n1", cpu="600m"))
    sched.watch.on_upsert("Pod", pod("p", cpu="600m"))
    attempt = sched.cycle.schedule_one()
    assert attempt is not None and attempt.result == UNSCHEDULABLE
    sched.watch.on_delete("Pod", pod("a", node="n1", cpu="600m"))
    assert sched.queue.pending()["unschedulable"] == 0


def test_a_deleted_nominated_pod_moves_the_pods_of_lower_or_equal_priority_it_held_room_against(
        sched: LiveScheduler) -> None:
    """kube-scheduler's ``deletePodFromSchedulingQueue``: a pending pod with ``status.nominatedNodeName``
    deleted moves the pods of priority <= its own (an ``AssignedPodDelete``); a pending pod without a
    nomination moves nobody, and neither does a nominated one of lower priority."""
    sched.watch.on_upsert("Node", node("n1", cpu="1"))
    sched.watch.on_upsert("Pod", pod("a", node="n1", cpu="600m"))
    for name, prio in (("low", 10), ("high", 1000)):
        waiting = pod(name, cpu="600m")
        waiting["spec"]["priority"] = prio
        sched.watch.on_upsert("Pod", waiting)
        attempt = sched.cycle.schedule_one()
        assert attempt is not None and attempt.result == UNSCHEDULABLE
    assert sched.queue.pending()["unschedulable"] == 2

    def gone(name: str, prio: int, nominated: str | None) -> int:
        deleted = pod(name, cpu="600m")
        deleted["spec"]["priority"] = prio
        deleted["status"] = {"nominatedNodeName": nominated} if nominated else {}
        before = sched.queue.pending()["unschedulable"]
        sched.watch.on_delete("Pod", deleted)  # the watch's last view of it: pending, nominated (or not)
        return before - sched.queue.pending()["unschedulable"]

    assert gone("plain", 5000, None) == 0  # never nominated: it held no room
    assert gone("lesser", 5, "n1") == 0  # it held room against no pod of higher priority
    assert gone("peer", 10, "n1") == 1
    assert [e.key for e in sched.queue.unschedulable()] == ["uid-high"]  # low (10 <= 10) moved, high stays
    other = pod("theirs", cpu="600m")
    other["spec"].update(priority=5000, schedulerName="default-scheduler")
    other["status"] = {"nominatedNodeName": "n1"}
    sched.watch.on_upsert("Pod", other)
    sched.watch.on_delete("Pod", other)  # another scheduler's nomination held no room in our cycle
    assert sched.queue.pending()["unschedulable"] == 1
    assert gone("boss", 1000, "n1") == 1  # now high
