"""What the live scheduler reports of a decision and a bind (the same log fields, once each), that an idle
loop applies the watches' changes itself, and that the Pod watch batches only while pods wait."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import generate_latest

from policyscheduler.app import LiveScheduler, Options
from policyscheduler.app.scheduler import WATCH_BATCH_BACKLOG, WATCH_BATCH_SECONDS
from policyscheduler.cycle.queue import QueuedPod
from policyscheduler.cycle.schedule import Attempt
from policyscheduler.evaluation import make_evaluator
from policyscheduler.evaluation.decision import Decision
from policyscheduler.kube import logs
from policyscheduler.loader import load_layered
from tests.kube.logcapture import configured_logs
from tests.kube.test_events import FakeClient, wait
from tests.kube.test_report_cost import _sample


@pytest.fixture
def scheduler() -> Iterator[tuple[LiveScheduler, io.StringIO, FakeClient]]:
    loaded = load_layered([])
    assert loaded.policy_set is not None
    client = FakeClient()
    sched = LiveScheduler(client, loaded.policy_set, make_evaluator("reference"),  # type: ignore[arg-type]  # a fake RestClient
                          Options(bind_address=None))
    try:
        with configured_logs() as stream:
            yield sched, stream, client
    finally:
        for recorder in sched.recorders.values():
            recorder.shutdown(wait=False)
        sched.binder.shutdown()


def _attempt(sched: LiveScheduler, result: str, node: str | None, *, message: str | None = None) -> Attempt:
    pod = {"metadata": {"name": "p1", "namespace": "ns", "uid": "u-1"}, "spec": {"schedulerName": "policy-scheduler"}}
    entry = QueuedPod(key="u-1", pod=pod, priority=0, timestamp=0.0, seq=1, attempts=2,
                      initial_attempt=time.monotonic() - 1.0)
    digest = sched.cycle.policy_set_for(pod).digest
    decision = Decision(pod="ns/p1", node=node, verdicts={}, feasible=["n1", "n2"] if node else [], scores={},
                        totals={}, top=[node] if node else [], score=42 if node else None, message=message,
                        policy_digest=digest)
    return Attempt(entry=entry, pod=pod, result=result, decision=decision, node=node, duration=0.0123, nodes=3,
                   queue=None if node else "unschedulable")


def _lines(stream: io.StringIO) -> list[dict[str, Any]]:
    logs.flush()
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_report_and_bind_done_log_the_same_fields(scheduler: tuple[LiveScheduler, io.StringIO, FakeClient]) -> None:
    sched, stream, client = scheduler
    digest = sched.cycle.policy_set_for({}).digest[:12]
    ok = _attempt(sched, "scheduled", "n1")
    sched._report(ok)
    sched._bind_done(ok, "bound", 0.0042, None)
    failed = _attempt(sched, "unschedulable", None, message="0/3 nodes are available: 3 Insufficient cpu.")
    sched._report(failed)
    sched._bind_done(ok, "error", 0.5, "conflict")
    lines = _lines(stream)
    for line in lines:
        assert line.pop("ts")
    assert lines == [
        {"level": "info", "logger": "policyscheduler.decisions", "msg": "scheduled", "result": "scheduled",
         "pod": "ns/p1", "node": "n1", "attempt": 2, "policy_digest": digest, "duration_ms": 12.3, "score": 42,
         "feasible": 2, "nodes": 3, "profile": "policy-scheduler"},
        {"level": "info", "logger": "policyscheduler.decisions", "msg": "bound", "pod": "ns/p1", "node": "n1",
         "result": "bound", "bind_ms": 4.2, "policy_digest": digest, "profile": "policy-scheduler"},
        {"level": "info", "logger": "policyscheduler.decisions", "msg": "unschedulable", "result": "unschedulable",
         "pod": "ns/p1", "node": None, "attempt": 2, "policy_digest": digest, "duration_ms": 12.3, "score": None,
         "feasible": 0, "nodes": 3, "message": "0/3 nodes are available: 3 Insufficient cpu.",
         "queue": "unschedulable", "profile": "policy-scheduler"},
        {"level": "warning", "logger": "policyscheduler.decisions", "msg": "bind error", "pod": "ns/p1", "node": "n1",
         "result": "error", "bind_ms": 500.0, "policy_digest": digest, "profile": "policy-scheduler",
         "error": "conflict"},
    ]
    assert (sched.scheduled, sched.failures) == (1, 1)
    text = generate_latest(sched.metrics.registry).decode()
    assert _sample(text, "scheduler_schedule_attempts_total", result="scheduled",
                   profile="policy-scheduler") == 1
    assert _sample(text, "scheduler_schedule_attempts_total", result="unschedulable",
                   profile="policy-scheduler") == 1
    assert _sample(text, "scheduler_framework_extension_point_duration_seconds_count", extension_point="Bind",
                   profile="policy-scheduler", status="Success") == 1
    assert _sample(text, "scheduler_pod_scheduling_sli_duration_seconds_count", attempts="2") == 1
    # Scheduled (not busy: at once); the pod was bound by us and is in no queue: the later failure reports
    # (a stale decision, a stale bind error) write neither a FailedScheduling event nor a condition
    wait(lambda: [body["reason"] for _, body in client.posts] == ["Scheduled"])
    time.sleep(0.3)
    assert [body["reason"] for _, body in client.posts] == ["Scheduled"] and client.patches == []
    assert sched.recorder.cancelled == 4  # event and condition of the decision and of the bind error



def test_an_idle_loop_applies_the_recorded_watch_changes(scheduler: tuple[LiveScheduler, io.StringIO, FakeClient]) -> None:
    """Changes the watches record are applied by the next attempt; with no pod coming the loop applies them
    itself within about half a second, so the first pod after a burst does not pay for the burst's
    confirmations."""
    sched, _, _ = scheduler
    for reflector in sched.reflectors:  # as if every first list had arrived (no watch thread runs here)
        reflector.synced.set()
    sched._loop_thread.start()
    try:
        node = {"kind": "Node", "metadata": {"name": "n1", "labels": {}},
                "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
        sched.cache.upsert("Node", node)
        assert sched.cache.pending == 1
        deadline = time.monotonic() + 5
        while sched.cache.pending and time.monotonic() < deadline:
            time.sleep(0.02)
        assert sched.cache.pending == 0
        assert [n.name for n in sched.cache.snapshot().nodes] == ["n1"]
    finally:
        sched._stopping.set()
        sched._loop_thread.join(timeout=5)


def test_the_pod_watch_batches_only_while_pods_wait(scheduler: tuple[LiveScheduler, io.StringIO, FakeClient]) -> None:
    """The Pod watch waits between reads during a burst (a backlog in the active queue), never just because
    a bind is out or the one pod just added waits: a pod created meanwhile must be seen at once."""
    sched, _, _ = scheduler
    pause = sched.reflectors[[r.kind for r in sched.reflectors].index("Pod")].pause
    assert pause is not None
    assert pause() == 0.0
    sched.binder._in_flight = 1  # a bind out, nothing waiting: no pause
    assert pause() == 0.0
    sched.binder._in_flight = 0
    pods = [{"metadata": {"name": f"w{i}", "namespace": "ns", "uid": f"u-w{i}"},
             "spec": {"schedulerName": "policy-scheduler"}} for i in range(WATCH_BATCH_BACKLOG)]
    sched.queue.add("u-w0", pods[0])  # the one pod just added: decided at once, the next must be seen at once
    assert WATCH_BATCH_BACKLOG > 1
    assert pause() == 0.0
    for pod in pods[1:]:
        sched.queue.add(pod["metadata"]["uid"], pod)
    assert pause() == WATCH_BATCH_SECONDS > 0
