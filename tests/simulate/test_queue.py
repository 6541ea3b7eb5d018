"""Queue order of pending pods: priority, then creation time, then input order."""

from __future__ import annotations

from typing import Any

from policyscheduler.simulate.queue import creation_instant, is_pending, queue_order


def _pod(name: str, *, priority: int | None = None, created: str | None = None, node: str | None = None,
         phase: str | None = None) -> dict[str, Any]:
    pod: dict[str, Any] = {"kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": {"containers": []}}
    if priority is not None:
        pod["spec"]["priority"] = priority
    if created is not None:
        pod["metadata"]["creationTimestamp"] = created
    if node is not None:
        pod["spec"]["nodeName"] = node
    if phase is not None:
        pod["status"] = {"phase": phase}
    return pod


def names(pods: list[dict[str, Any]]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def test_priority_first_then_time_then_input() -> None:
    pods = [
        _pod("late-low", created="2026-01-01T00:00:09Z"),
        _pod("early-low", created="2026-01-01T00:00:01Z"),
        _pod("high", priority=10, created="2026-01-01T00:00:30Z"),
        _pod("tie-a", created="2026-01-01T00:00:05Z"),
        _pod("tie-b", created="2026-01-01T00:00:05Z"),
        _pod("negative", priority=-5, created="2026-01-01T00:00:00Z"),
    ]
    assert names(queue_order(pods)) == ["high", "early-low", "tie-a", "tie-b", "late-low", "negative"]


def test_missing_timestamp_sorts_first_within_priority_and_keeps_input_order() -> None:
    pods = [
        _pod("dated", created="2026-01-01T00:00:00Z"),
        _pod("undated-1"),
        _pod("garbage", created="not a time"),
        _pod("undated-2"),
    ]
    assert names(queue_order(pods)) == ["undated-1", "garbage", "undated-2", "dated"]


def test_timestamps_compare_as_instants_not_strings() -> None:
    pods = [
        _pod("utc-later", created="2026-01-01T10:30:00Z"),
        _pod("offset-earlier", created="2026-01-01T11:00:00+01:00"),  # 10:00Z
    ]
    assert names(queue_order(pods)) == ["offset-earlier", "utc-later"]
    earlier, later = creation_instant(pods[1]), creation_instant(pods[0])
    assert earlier is not None and later is not None and earlier < later


def test_bool_priority_is_not_an_int() -> None:
    pods = [_pod("a", created="2026-01-01T00:00:01Z"), _pod("b", priority=True, created="2026-01-01T00:00:02Z")]
    assert names(queue_order(pods)) == ["a", "b"]


def test_is_pending() -> None:
    assert is_pending(_pod("p"))
    assert not is_pending(_pod("bound", node="n1"))
    assert not is_pending(_pod("done", phase="Succeeded"))
    assert not is_pending(_pod("failed", phase="Failed"))
    assert not is_pending({"kind": "Node", "metadata": {"name": "n"}})
