"""The event recorder: failures at once, Scheduled events held back while the scheduler is busy."""

from __future__ import annotations

import threading
import time
from typing import Any

from policyscheduler.kube.events import EventRecorder, truncate_note


class FakeClient:
    def __init__(self) -> None:
        self.posts: list[tuple[str, Any]] = []
        self.patches: list[tuple[str, Any]] = []
        self.lock = threading.Lock()

    def post(self, path: str, body: Any, **query: Any) -> Any:
        with self.lock:
            self.posts.append((path, body))
        return body

    def patch(self, path: str, body: Any, *, kind: str = "strategic-merge-patch") -> Any:
        with self.lock:
            self.patches.append((path, body))
        return body


POD = {"metadata": {"name": "p", "namespace": "ns", "uid": "u1"}, "status": {}}


def wait(check: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_scheduled_events_wait_while_busy_then_go() -> None:
    busy = threading.Event()
    busy.set()
    client = FakeClient()
    recorder = EventRecorder(client, "policy-scheduler", busy=busy.is_set, max_delay=30)  # type: ignore[arg-type]  # a fake RestClient
    recorder.scheduled(POD, "n1")
    recorder.failed(POD, "0/1 nodes are available: 1 Insufficient cpu.")
    wait(lambda: len(client.posts) == 1 and len(client.patches) == 1)  # the failure is not held back
    assert client.posts[0][1]["reason"] == "FailedScheduling"
    time.sleep(0.2)
    assert recorder.backlog == 1 and len(client.posts) == 1
    busy.clear()
    wait(lambda: len(client.posts) == 2)
    event = client.posts[1][1]
    assert event["reason"] == "Scheduled" and event["note"] == "Successfully assigned ns/p to n1"
    assert event["reportingController"] == "policy-scheduler" and event["regarding"]["uid"] == "u1"
    recorder.shutdown()


def test_max_delay_and_shutdown_flush() -> None:
    client = FakeClient()
    recorder = EventRecorder(client, "s", busy=lambda: True, max_delay=0.1)  # type: ignore[arg-type]  # a fake RestClient
    recorder.scheduled(POD, "n1")
    wait(lambda: len(client.posts) == 1)  # busy forever, but not later than max_delay
    recorder.max_delay = 3600
    for i in range(20):
        recorder.scheduled(POD, f"n{i}")
    recorder.shutdown(wait=True)  # SIGTERM: everything held back is posted
    assert len(client.posts) == 21 and recorder.backlog == 0


def test_note_truncation_matches_kube_scheduler() -> None:
    assert truncate_note("x" * 1024) == "x" * 1024
    assert truncate_note("x" * 2000) == "x" * 1020 + " ..."
