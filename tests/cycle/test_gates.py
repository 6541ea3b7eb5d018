"""The queue's gated pool (kube-scheduler's SchedulingGates PreEnqueue), with a controlled clock."""

from __future__ import annotations

import threading
import time
from typing import Any

from policyscheduler.cycle import SchedulingQueue
from policyscheduler.cycle.events import ClusterEvent
from policyscheduler.cycle.gates import gate_message, scheduling_gates


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def pod(name: str, *gates: str, priority: int = 0) -> dict[str, Any]:
    spec: dict[str, Any] = {"priority": priority}
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    return {"metadata": {"name": name, "namespace": "default"}, "spec": spec}


def test_a_gated_pod_is_never_popped_and_counts_as_gated() -> None:
    q = SchedulingQueue(clock=Clock())
    assert q.add("g", pod("g", "example.com/quota")) is True
    q.add("free", pod("free"))
    assert q.pending() == {"active": 1, "backoff": 0, "unschedulable": 0, "gated": 1}
    e = q.pop()
    assert e is not None and e.key == "free"
    q.done(e)
    assert q.pop() is None
    assert [x.key for x in q.gated()] == ["g"] and "g" in q and len(q) == 1
    assert q.gated()[0].attempts == 0 and q.gated()[0].gates == ("example.com/quota",)


def test_removing_one_of_two_gates_keeps_it_gated_removing_the_last_queues_it_at_once() -> None:
    clock = Clock()
    q = SchedulingQueue(clock=clock)
    q.add("g", pod("g", "a", "b"))
    assert q.add("g", pod("g", "b")) is False
    assert q.pending()["gated"] == 1 and q.pop() is None and q.gated()[0].gates == ("b",)
    q.add("g", pod("g"))
    assert q.pending() == {"active": 1, "backoff": 0, "unschedulable": 0, "gated": 0}
    e = q.pop()  # no backoff: it was never attempted
    assert e is not None and e.key == "g" and e.attempts == 1
    assert q.moves == {"SchedulingGatesEliminated": 1}


def test_status_updates_of_a_gated_pod_do_not_release_it() -> None:
    q = SchedulingQueue(clock=Clock())
    q.add("g", pod("g", "a"))
    updated = pod("g", "a")
    updated["status"] = {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}
    updated["metadata"]["labels"] = {"x": "y"}
    q.add("g", updated)
    assert q.pop() is None and q.pending()["gated"] == 1
    assert q.gated()[0].pod is updated  # the latest object is kept for when it is released


def test_cluster_events_and_the_unschedulable_flush_never_move_a_gated_pod() -> None:
    clock = Clock()
    q = SchedulingQueue(clock=clock)
    q.add("g", pod("g", "a"))
    assert q.move_all("PolicyReload") == 0
    assert q.move(ClusterEvent.node_added("n1")) == 0
    clock.now += 3600
    q.flush()
    assert q.pop() is None and q.pending()["gated"] == 1


def test_deleting_a_gated_pod_forgets_it() -> None:
    q = SchedulingQueue(clock=Clock())
    q.add("g", pod("g", "a"))
    assert q.delete("g") is True
    assert q.pending()["gated"] == 0 and "g" not in q and len(q) == 0
    q.add("g", pod("g"))  # recreated without gates: a new pod, active
    assert q.pending()["active"] == 1


def test_released_pod_keeps_its_queue_timestamp_and_priority_order() -> None:
    clock = Clock()
    q = SchedulingQueue(clock=clock)
    q.add("gated-first", pod("gated-first", "a"))
    clock.now += 5
    q.add("later", pod("later"))
    q.add("gated-first", pod("gated-first"))  # released after "later" was queued
    first = q.pop()
    assert first is not None and first.key == "gated-first"  # kube keeps the first enqueue time


def test_on_gate_reports_entering_and_leaving_outside_the_lock() -> None:
    seen: list[tuple[str, bool, tuple[str, ...]]] = []
    q: SchedulingQueue

    def on_gate(entry: Any, gated: bool) -> None:
        other = threading.Thread(target=q.pending)  # blocks while this thread holds the queue's lock
        other.start()
        other.join(2.0)
        assert not other.is_alive()
        seen.append((entry.key, gated, entry.gates))

    q = SchedulingQueue(clock=Clock(), on_gate=on_gate)
    q.add("g", pod("g", "a", "b"))
    q.add("g", pod("g", "b"))
    q.add("g", pod("g"))
    q.add("free", pod("free"))
    assert seen == [("g", True, ("a", "b")), ("g", False, ())]


def test_a_waiting_pop_wakes_up_when_the_last_gate_is_removed() -> None:
    q = SchedulingQueue()
    q.add("g", pod("g", "a"))
    got: list[Any] = []
    t = threading.Thread(target=lambda: got.append(q.pop(timeout=5.0)))
    t.start()
    time.sleep(0.05)
    released = time.monotonic()
    q.add("g", pod("g"))
    t.join(5)
    assert got and got[0] is not None and got[0].key == "g"
    assert time.monotonic() - released < 0.5


def test_gate_names_and_kube_schedulers_message() -> None:
    assert scheduling_gates(pod("p")) == ()
    assert scheduling_gates(pod("p", "a", "example.com/b")) == ("a", "example.com/b")
    assert scheduling_gates({"spec": {"schedulingGates": []}}) == ()
    assert scheduling_gates({"spec": {"schedulingGates": [{"nome": "x"}, "y"]}}) == ("", "")  # unreadable: still gated
    assert gate_message(("a", "example.com/b")) == "waiting for scheduling gates: [a example.com/b]"
