"""What a decision reports (metrics, events) stays the same with the cheaper per-pod path, and the
low-priority event writer is not woken per pod while it holds events back."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from prometheus_client import generate_latest

from policyscheduler.kube.events import EventRecorder
from policyscheduler.kube.metrics import SchedulerMetrics
from tests.kube.test_events import POD, FakeClient, wait


def _metrics() -> SchedulerMetrics:
    return SchedulerMetrics("p1", pending=lambda: {}, cache=lambda: {}, leader=lambda: True, profiles=["p1", "p2"])


def _sample(text: str, name: str, **labels: str) -> float:
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith(f"{name}{{{wanted}}} ") or (not labels and line.startswith(f"{name} ")):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no sample {name}{{{wanted}}} in:\n{text}")


def test_metrics_count_per_label_with_cached_children() -> None:
    m = _metrics()
    for _ in range(3):
        m.attempt("scheduled", 0.003)
    m.attempt("scheduled", 0.5, "p2")
    m.attempt("unschedulable", 0.002, "p1")
    m.bound("bound", 0.01)
    m.bound("bound", 0.02)
    m.bound("error", 0.3)
    m.scheduled_sli(1, 0.05)
    m.scheduled_sli(20, 1.0)
    text = generate_latest(m.registry).decode()
    assert _sample(text, "scheduler_schedule_attempts_total", result="scheduled", profile="p1") == 3
    assert _sample(text, "scheduler_schedule_attempts_total", result="scheduled", profile="p2") == 1
    assert _sample(text, "scheduler_schedule_attempts_total", result="unschedulable", profile="p1") == 1
    assert _sample(text, "scheduler_scheduling_attempt_duration_seconds_count", result="scheduled",
                   profile="p1") == 3
    assert _sample(text, "scheduler_scheduling_attempt_duration_seconds_sum", result="scheduled",
                   profile="p2") == 0.5
    assert _sample(text, "scheduler_framework_extension_point_duration_seconds_count", extension_point="Bind",
                   profile="p1", status="Success") == 2
    assert _sample(text, "scheduler_framework_extension_point_duration_seconds_count", extension_point="Bind",
                   profile="p1", status="Error") == 1
    assert _sample(text, "scheduler_pod_scheduling_sli_duration_seconds_count", attempts="1") == 1
    assert _sample(text, "scheduler_pod_scheduling_sli_duration_seconds_count", attempts="15+") == 1


def _voluntary_switches(thread: threading.Thread) -> int:
    status = Path(f"/proc/self/task/{thread.native_id}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("voluntary_ctxt_switches")).split()[1])


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_the_lazy_event_worker_is_not_woken_per_pod_while_it_holds_back() -> None:
    client = FakeClient()
    busy = threading.Event()
    busy.set()
    recorder = EventRecorder(client, "s", busy=busy.is_set, max_delay=3600,  # type: ignore[arg-type]  # a fake RestClient
                             max_batch=10**6)
    try:
        recorder.scheduled(POD, "n0")  # the worker leaves its idle wait and starts holding back
        time.sleep(0.1)
        before = _voluntary_switches(recorder._lazy_thread)
        started = time.monotonic()
        for i in range(2000):  # a burst: one event per pod, ~0.4 s
            recorder.scheduled(POD, f"n{i}")
            if i % 20 == 0:
                time.sleep(0.004)
        elapsed = time.monotonic() - started
        switches = _voluntary_switches(recorder._lazy_thread) - before
        # it polls every 50 ms while holding back; a wake-up per event would be ~2000
        assert switches <= 3 * elapsed / 0.05 + 20, (switches, elapsed)  # measured: ~10 in 0.4 s (was ~200)
        assert client.posts == [] and recorder.backlog == 2001
        busy.clear()  # the burst ends: everything goes out
        wait(lambda: recorder.backlog == 0 and len(client.posts) == 2001, timeout=30)
        # idle again, then one event: the idle worker is woken for it
        recorder.scheduled(POD, "late")
        wait(lambda: len(client.posts) == 2002)
    finally:
        recorder.shutdown(wait=False)
