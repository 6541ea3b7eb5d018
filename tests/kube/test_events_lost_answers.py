"""An event write whose answer is lost (the API server created the Event, then the connection died) is
retried under the same name, so the retry's 409 AlreadyExists ends it: never a second Event.

Found by tests/e2e/test_run_resilience.py: after an API server restart three pods had two Scheduled events,
because each retry built a new body with a new name. Here the loss is made exactly, with a proxy that
forwards the POST and cuts the connection instead of relaying its answer.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import pytest

from policyscheduler.kube.events import EventRecorder
from tests.controlplane import fakes
from tests.kube.live import events
from tests.kube.proxy import Proxy, via

if TYPE_CHECKING:
    from tests.controlplane.harness import ControlPlane

pytestmark = pytest.mark.e2e


def _pods(control_plane: ControlPlane, namespace: str) -> list[dict[str, Any]]:
    """Two pods: the first one's write opens (and keeps) the connection, the second one's answer is cut --
    cutting the first would only cut a TLS handshake, before any request was sent."""
    return fakes.create_all(control_plane.api(), fakes.make_pods(2, namespace, prefix="lost", scheduler_name="nobody"))


def _wait_sent(recorder: EventRecorder, count: int) -> None:
    deadline = time.monotonic() + 20.0  # retries back off 1 s first
    while recorder.sent < count and recorder.errors == 0:
        assert time.monotonic() < deadline, f"only {recorder.sent} of {count} writes went out"
        time.sleep(0.05)


def _written(recorder: EventRecorder, control_plane: ControlPlane, namespace: str, reason: str,
             about: str) -> list[dict[str, Any]]:
    """The Events of ``reason`` about ``about`` once the recorder has written both."""
    _wait_sent(recorder, 2)
    time.sleep(1.5)  # a late second try would land now
    return [e for e in events(control_plane.api(), namespace)
            if e.get("reason") == reason and e["regarding"]["name"] == about]


def test_a_scheduled_event_whose_answer_was_lost_is_not_written_twice(proxy: Proxy, control_plane: ControlPlane,
                                                                       namespace: str) -> None:
    warm, pod = _pods(control_plane, namespace)
    recorder = EventRecorder(via(proxy, control_plane), "lost-answers")
    try:
        recorder.scheduled(warm, "node-x")
        _wait_sent(recorder, 1)
        proxy.cut_next_answer()  # the next POST creates the Event; its answer never arrives
        recorder.scheduled(pod, "node-x")
        written = _written(recorder, control_plane, namespace, "Scheduled", pod["metadata"]["name"])
    finally:
        recorder.shutdown()
    assert len(written) == 1, [e["metadata"]["name"] for e in written]
    assert (recorder.sent, recorder.errors) == (2, 0)
    assert written[0]["note"] == f"Successfully assigned {namespace}/{pod['metadata']['name']} to node-x"


def test_a_failure_event_whose_answer_was_lost_is_not_written_twice(proxy: Proxy, control_plane: ControlPlane,
                                                                     namespace: str) -> None:
    warm, pod = _pods(control_plane, namespace)
    recorder = EventRecorder(via(proxy, control_plane), "lost-answers", workers=1)
    try:
        recorder.failed(warm, "0/3 nodes are available: 3 Insufficient cpu.", condition=False)
        _wait_sent(recorder, 1)
        proxy.cut_next_answer()
        recorder.failed(pod, "0/3 nodes are available: 3 Insufficient cpu.", condition=False)
        written = _written(recorder, control_plane, namespace, "FailedScheduling", pod["metadata"]["name"])
    finally:
        recorder.shutdown()
    assert len(written) == 1, [e["metadata"]["name"] for e in written]
    assert (recorder.sent, recorder.errors) == (2, 0)


def test_an_object_event_whose_answer_was_lost_is_not_written_twice(proxy: Proxy, control_plane: ControlPlane,
                                                                     namespace: str) -> None:
    regarding = {"apiVersion": "v1", "kind": "ConfigMap", "namespace": namespace, "name": "policies"}
    recorder = EventRecorder(via(proxy, control_plane), "lost-answers", workers=1)
    try:
        recorder.object_event(regarding, "Normal", "PolicyReloaded", "Reload", "policy set abc loaded")
        _wait_sent(recorder, 1)
        proxy.cut_next_answer()
        recorder.object_event(regarding, "Normal", "PolicyReloaded", "Reload", "policy set def loaded")
        written = _written(recorder, control_plane, namespace, "PolicyReloaded", "policies")
    finally:
        recorder.shutdown()
    assert [e["note"] for e in written] == ["policy set abc loaded", "policy set def loaded"]
    assert (recorder.sent, recorder.errors) == (2, 0)
