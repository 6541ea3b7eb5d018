"""The scheduling queue's rules, with a controlled clock."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from policyscheduler.cycle import QueuedPod, SchedulingQueue


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def pod(name: str, priority: int | None = None) -> dict[str, Any]:
    spec = {} if priority is None else {"priority": priority}
    return {"metadata": {"name": name, "namespace": "default"}, "spec": spec}


def drain(q: SchedulingQueue) -> list[Hashable]:
    out: list[Hashable] = []
    while (e := q.pop()) is not None:
        out.append(e.key)
        q.done(e)
    return out


def popped(q: SchedulingQueue) -> QueuedPod:
    """The next pod; these tests only pop when one is due."""
    e = q.pop()
    assert e is not None
    return e


def test_higher_priority_first_then_oldest() -> None:
    clock = Clock()
    q = SchedulingQueue(clock=clock)
    q.add("old", pod("old"))
    clock.now += 1
    q.add("new", pod("new"))
    q.add("vip", pod("vip", priority=10))
    assert drain(q) == ["vip", "old", "new"]


def test_active_count_is_the_active_queue_of_pending() -> None:
    """The hot callers' count follows the active queue through add, pop, backoff and delete."""
    clock = Clock()
    q = SchedulingQueue(clock=clock)
    q.add("a", pod("a"))
    q.add("b", pod("b"))
    assert q.active_count() == q.pending()["active"] == 2
    e = popped(q)
    assert q.active_count() == q.pending()["active"] == 1  # in flight is not active
    q.add_unschedulable(e)
    q.move_all("NodeAdd")  # backing off: not active either
    assert q.active_count() == 1 and q.pending()["backoff"] == 1
    q.delete("b")
    assert q.active_count() == q.pending()["active"] == 0
    clock.now += 10
    assert q.pop() is not None and q.active_count() == 0


def test_backoff_doubles_from_one_to_ten_seconds() -> None:
    q = SchedulingQueue()
    assert [q.backoff_duration(k) for k in range(7)] == [0, 1, 2, 4, 8, 10, 10]


def test_unschedulable_waits_for_an_event_then_backs_off() -> None:
    clock = Clock()
    q = SchedulingQueue(clock=clock)
    q.add("p", pod("p"))
    e = popped(q)
    assert q.add_unschedulable(e) == "unschedulable"
    clock.now += 60
    assert q.pop() is None  # no event: it stays
    assert q.pending() == {"active": 0, "backoff": 0, "unschedulable": 1, "gated": 0}
    assert q.move_all("NodeAdd") == 1
    e = popped(q)
    assert e is not None and e.attempts == 2
    q.add_unschedulable(e)
    q.move_all("NodeAdd")  # moved right after failing: still backing off (2 s after the 2nd attempt)
    assert q.pending()["backoff"] == 1 and q.pop() is None
    clock.now += 2
    assert q.pop() is not None


def test_event_during_the_attempt_sends_the_failed_pod_to_backoff_not_the_pool() -> None:
    clock = Clock()
    q = SchedulingQueue(clock=clock)
    q.add("p", pod("p"))
    e = popped(q)
    q.move_all("NodeAdd")  # arrives while p is in flight: its verdict may be stale
    assert q.add_unschedulable(e) == "backoff"
    clock.now += 1
    assert q.pop() is e


def test_unschedulable_flushed_after_five_minutes() -> None:
    clock = Clock()
    q = SchedulingQueue(clock=clock)
    q.add("p", pod("p"))
    q.add_unschedulable(popped(q))
    clock.now += 299
    assert q.pop() is None
    clock.now += 1
    assert q.pop() is not None
    assert q.moves == {"UnschedulableTimeout": 1}


def test_delete_and_update() -> None:
    clock = Clock()
    q = SchedulingQueue(clock=clock)
    q.add("a", pod("a"))
    q.add("b", pod("b"))
    assert q.delete("a")
    assert drain(q) == ["b"]
    q.add("c", pod("c"))
    e = popped(q)
    q.add_unschedulable(e)
    updated = pod("c", priority=5)
    assert q.add("c", updated) is False  # an update moves it back at once (no backoff left: 1 s passed? no)
    clock.now += 1
    e = popped(q)
    assert e is not None and e.pod is updated and e.priority == 5
    q.delete("c")  # deleted while in flight: a failure does not requeue it
    assert q.add_unschedulable(e) == "gone" and len(q) == 0


def test_failed_bind_retries_after_backoff() -> None:
    clock = Clock()
    q = SchedulingQueue(clock=clock)
    q.add("p", pod("p"))
    e = popped(q)
    assert q.add_backoff(e) == "backoff"
    assert q.pop() is None
    clock.now += 1
    assert q.pop() is e


def test_a_status_only_update_leaves_an_unschedulable_pod_in_the_pool() -> None:
    clock = Clock()
    q = SchedulingQueue(clock=clock)
    q.add("p", pod("p"))
    q.add_unschedulable(popped(q))
    # our own PodScheduled=False patch comes back through the watch: status and resourceVersion differ
    patched = pod("p")
    patched["metadata"]["resourceVersion"] = "42"
    patched["status"] = {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}
    assert q.add("p", patched) is False
    clock.now += 60
    assert q.pop() is None and q.pending()["unschedulable"] == 1
    relabelled = pod("p")
    relabelled["metadata"]["labels"] = {"tier": "web"}  # a change scheduling reads moves it back
    q.add("p", relabelled)
    assert q.pending()["unschedulable"] == 0
