"""The event recorder's series (client-go's events.k8s.io correlation), its refusal to write a failure about
a pod that was bound or deleted meanwhile, and its bounded hold-back of Scheduled events."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from policyscheduler.kube import events as events_module
from policyscheduler.kube.events import EventRecorder
from policyscheduler.kube.rest import ApiError
from tests.kube.test_events import POD, FakeClient, wait


class FlakyClient(FakeClient):
    """Refuses connections (status 0, as an API server that is down) while ``down`` is set; a patch of an
    Event named in ``gone`` answers 404."""

    def __init__(self) -> None:
        super().__init__()
        self.down = threading.Event()
        self.refused = 0
        self.gone: set[str] = set()

    def _check(self, method: str, path: str) -> None:
        if self.down.is_set():
            with self.lock:
                self.refused += 1
            raise ApiError(method, path, 0, "", detail="Connection refused")
        if path.rsplit("/", 1)[-1] in self.gone:
            raise ApiError(method, path, 404, "not found")

    def post(self, path: str, body: Any, **query: Any) -> Any:
        self._check("POST", path)
        return super().post(path, body, **query)

    def patch(self, path: str, body: Any, *, kind: str = "strategic-merge-patch") -> Any:
        self._check("PATCH", path)
        return super().patch(path, body, kind=kind)


def event_patches(client: FakeClient) -> list[tuple[str, Any]]:
    return [(p, b) for p, b in client.patches if "/events/" in p]


def condition_patches(client: FakeClient) -> list[tuple[str, Any]]:
    return [(p, b) for p, b in client.patches if p.endswith("/status")]


@pytest.fixture
def quick_refresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(events_module, "SERIES_REFRESH", 0.5)


def test_ten_failures_make_one_event_series(quick_refresh: None) -> None:
    client = FakeClient()
    recorder = EventRecorder(client, "policy-scheduler")  # type: ignore[arg-type]
    try:
        recorder.failed(POD, "0/1 nodes are available: 1 Insufficient cpu.")
        wait(lambda: len(client.posts) == 1)
        for i in range(9):  # the note is not part of the key (client-go's): a changed message continues it
            pod = {**POD, "metadata": {**POD["metadata"], "resourceVersion": str(10 + i)}}  # nor is the version
            recorder.failed(pod, f"0/1 nodes are available: 1 Insufficient memory ({i}).")
        # the second occurrence makes the series at once, the count catches up within the refresh period
        wait(lambda: event_patches(client) and event_patches(client)[-1][1]["series"]["count"] == 10, timeout=5)
        assert len(client.posts) == 1
        created = client.posts[0][1]
        assert created["reason"] == "FailedScheduling" and "series" not in created
        path, first = event_patches(client)[0]
        assert path.endswith("/events/" + created["metadata"]["name"]) and first["series"]["count"] == 2
        assert set(first["series"]) == {"count", "lastObservedTime"}
        # the Scheduled event of another reason is an Event of its own
        recorder.scheduled(POD, "n1")
        wait(lambda: len(client.posts) == 2)
    finally:
        recorder.shutdown(wait=False)


def test_a_series_whose_event_was_removed_is_created_again_with_its_count() -> None:
    client = FlakyClient()
    recorder = EventRecorder(client, "s")  # type: ignore[arg-type]
    try:
        recorder.failed(POD, "no")
        wait(lambda: len(client.posts) == 1)
        client.gone.add(client.posts[0][1]["metadata"]["name"])  # expired (the API server's event TTL)
        recorder.failed(POD, "no")
        wait(lambda: len(client.posts) == 2)
        again = client.posts[1][1]
        assert again["metadata"]["name"] == client.posts[0][1]["metadata"]["name"] and again["series"]["count"] == 2
    finally:
        recorder.shutdown(wait=False)


def test_a_series_ends_after_six_quiet_minutes(monkeypatch: pytest.MonkeyPatch) -> None:
    client = FakeClient()
    recorder = EventRecorder(client, "s")  # type: ignore[arg-type]
    try:
        recorder.failed(POD, "no")
        wait(lambda: len(client.posts) == 1)
        monkeypatch.setattr(events_module, "SERIES_FINISH", 0.0)
        recorder.failed(POD, "no")  # the old series has ended: a new Event, not a count of 2
        wait(lambda: len(client.posts) == 2)
        assert client.posts[1][1]["metadata"]["name"] != client.posts[0][1]["metadata"]["name"]
        assert event_patches(client) == []
    finally:
        recorder.shutdown(wait=False)


def test_a_bind_cancels_the_queued_failure_writes() -> None:
    client = FlakyClient()
    pending = threading.Event()
    pending.set()
    recorder = EventRecorder(client, "s", pending=lambda pod: pending.is_set())  # type: ignore[arg-type]
    try:
        client.down.set()  # the API server is down: the writes wait and retry
        recorder.failed(POD, "Binding rejected: Connection refused", reason="SchedulerError")
        wait(lambda: client.refused >= 2)
        recorder.cancel(POD)  # the bind succeeded meanwhile
        client.down.clear()
        time.sleep(2.5)  # past the writer's next retry
        assert client.posts == [] and client.patches == []
        assert recorder.cancelled == 2 and recorder.errors == 0
    finally:
        recorder.shutdown(wait=False)


def test_the_writer_asks_whether_the_pod_still_waits_before_each_try() -> None:
    client = FlakyClient()
    pending = threading.Event()
    pending.set()
    recorder = EventRecorder(client, "s", pending=lambda pod: pending.is_set())  # type: ignore[arg-type]
    try:
        client.down.set()
        recorder.failed(POD, "0/1 nodes are available: 1 Insufficient cpu.")
        wait(lambda: client.refused >= 2)
        pending.clear()  # the watch shows it bound (or deleted); nobody called cancel
        client.down.clear()
        time.sleep(2.5)
        assert client.posts == [] and client.patches == []
        pending.set()  # a pod that still waits gets both writes
        recorder.failed({**POD, "metadata": {**POD["metadata"], "uid": "u2"}}, "0/1 nodes are available.")
        wait(lambda: len(client.posts) == 1 and len(condition_patches(client)) == 1)
    finally:
        recorder.shutdown(wait=False)


def test_only_the_newest_condition_of_a_pod_is_written() -> None:
    client = FlakyClient()
    recorder = EventRecorder(client, "s", workers=1)  # type: ignore[arg-type]
    try:
        client.down.set()
        for i in range(5):
            recorder.failed(POD, f"message {i}")
        wait(lambda: client.refused >= 1)
        client.down.clear()
        wait(lambda: len(condition_patches(client)) == 1)
        time.sleep(0.3)
        conditions = condition_patches(client)
        assert len(conditions) == 1
        assert conditions[0][1]["status"]["conditions"][0]["message"] == "message 4"
        # a reused decision counts in the series but writes no condition
        recorder.failed(POD, "message 4", condition=False)
        time.sleep(0.3)
        assert len(condition_patches(client)) == 1
    finally:
        recorder.shutdown(wait=False)


def test_scheduled_events_are_held_at_most_a_tenth_of_a_second_or_a_hundred() -> None:
    client = FakeClient()
    recorder = EventRecorder(client, "s", busy=lambda: True)  # type: ignore[arg-type]  # a burst that never ends
    try:
        started = time.monotonic()
        recorder.scheduled(POD, "n1")
        wait(lambda: len(client.posts) == 1)
        assert time.monotonic() - started < 0.5
        recorder.max_delay = 3600  # from now on only the batch size lets them go
        for i in range(99):
            recorder.scheduled(POD, f"n{i}")
        time.sleep(0.3)
        assert len(client.posts) == 1 and recorder.backlog == 99
        recorder.scheduled(POD, "n99")  # the hundredth: the batch goes out
        wait(lambda: len(client.posts) == 101)
    finally:
        recorder.shutdown(wait=False)


def test_held_events_go_out_with_the_oldest_when_it_is_due() -> None:
    """While busy, a Scheduled event waits ``max_delay``; when it is due, the ones queued after it go in the
    same batch (each at its own ``max_delay`` would post the second 0.6 s later here)."""
    client = FakeClient()
    recorder = EventRecorder(client, "s", busy=lambda: True, max_delay=1.0)  # type: ignore[arg-type]  # a burst
    try:
        started = time.monotonic()
        recorder.scheduled(POD, "n1")
        time.sleep(0.6)
        recorder.scheduled(POD, "n2")
        time.sleep(0.2)
        assert client.posts == []  # held: the oldest is 0.8 s old
        wait(lambda: len(client.posts) == 2)
        assert time.monotonic() - started < 1.45  # with the first (at 1.0 s), not at the second's own 1.6 s
        assert [body["note"] for _, body in client.posts] == ["Successfully assigned ns/p to n1",
                                                             "Successfully assigned ns/p to n2"]
    finally:
        recorder.shutdown(wait=False)


class HeldPatchClient(FakeClient):
    """A condition patch waits for ``release`` (the API server is slow to answer it); ``order`` records
    when each patch was answered."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.entered = threading.Event()
        self.order: list[str] = []

    def patch(self, path: str, body: Any, *, kind: str = "strategic-merge-patch") -> Any:
        if path.endswith("/status"):
            self.entered.set()
            assert self.release.wait(10)
            with self.lock:
                self.order.append("condition answered")
        return super().patch(path, body, kind=kind)


def test_a_bind_waits_for_the_condition_patch_on_the_wire() -> None:
    client = HeldPatchClient()
    binding = threading.Event()
    recorder = EventRecorder(client, "s", pending=lambda pod: not binding.is_set())  # type: ignore[arg-type]
    try:
        recorder.failed(POD, "0/1 nodes are available: 1 Insufficient cpu.")
        assert client.entered.wait(5)  # the PodScheduled=False patch is on the wire
        binding.set()  # the pod was decided again and goes to the binder
        recorder.after_failure_writes(POD, lambda: client.order.append("bind"))
        time.sleep(0.2)
        assert client.order == []  # the bind waits for the patch's answer
        client.release.set()
        wait(lambda: "bind" in client.order)
        assert client.order == ["condition answered", "bind"]
        # nothing on the wire: the bind goes at once; a failure write after it is dropped, not sent
        other = {**POD, "metadata": {**POD["metadata"], "uid": "u2"}}
        recorder.after_failure_writes(other, lambda: client.order.append("bind 2"))
        assert client.order[-1] == "bind 2"
        recorder.failed(other, "0/1 nodes are available: 1 Insufficient cpu.")
        wait(lambda: recorder.cancelled == 2)
        assert len(condition_patches(client)) == 1
    finally:
        client.release.set()
        recorder.shutdown(wait=False)
