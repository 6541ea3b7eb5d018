"""What the API side of a reload report writes: events regarding an object (and decision events carrying the
digest) and the policy metrics."""

from __future__ import annotations

from prometheus_client import generate_latest

from policyscheduler.kube.events import DIGEST_ANNOTATION, NOTE_LIMIT, EventRecorder
from policyscheduler.kube.metrics import SchedulerMetrics
from tests.kube.test_events import FakeClient, wait


def test_reload_events_regard_the_object_and_decision_events_carry_the_digest() -> None:
    client = FakeClient()
    recorder = EventRecorder(client, "policy-scheduler")  # type: ignore[arg-type]  # a fake RestClient
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "sys", "name": "pols", "uid": "u9"}
    recorder.object_event(cm, "Warning", "PolicyLoadFailed", "Reload", "x" * 5000)
    pod = {"metadata": {"name": "p", "namespace": "ns", "uid": "u1"}, "status": {}}
    recorder.scheduled(pod, "n1", digest="0123456789abcdef")
    recorder.failed(pod, "0/1 nodes are available: 1 Insufficient cpu.", digest="fedcba9876543210")
    recorder.flush(5)
    wait(lambda: len(client.posts) == 3)
    recorder.shutdown()
    by_reason = {body["reason"]: (path, body) for path, body in client.posts}
    path, body = by_reason["PolicyLoadFailed"]
    assert path == "/apis/events.k8s.io/v1/namespaces/sys/events"
    assert body["regarding"] == cm and body["type"] == "Warning" and len(body["note"]) == NOTE_LIMIT
    assert "annotations" not in body["metadata"]
    assert by_reason["Scheduled"][1]["metadata"]["annotations"] == {DIGEST_ANNOTATION: "0123456789ab"}
    assert by_reason["FailedScheduling"][1]["metadata"]["annotations"] == {DIGEST_ANNOTATION: "fedcba987654"}
    assert by_reason["Scheduled"][1]["regarding"]["kind"] == "Pod"


def test_policy_metrics() -> None:
    digest = ["d" * 64]
    metrics = SchedulerMetrics("p", pending=dict, cache=dict, leader=lambda: True, policy_digest=lambda: digest[0])
    text = generate_latest(metrics.registry).decode()
    assert 'policyscheduler_policy_info{digest="dddddddddddd",profile="p"} 1.0' in text
    assert 'policyscheduler_policy_reloads_total{profile="p",result="error"} 0.0' in text
    assert 'policyscheduler_policy_last_reload_successful{profile="p"} 1.0' in text
    digest[0] = "e" * 64
    metrics.policy_reloads.labels("success", "p").inc()
    metrics.reload_ok["p"] = False
    text = generate_latest(metrics.registry).decode()
    assert 'policyscheduler_policy_info{digest="eeeeeeeeeeee",profile="p"} 1.0' in text and "dddddddd" not in text
    assert 'policyscheduler_policy_reloads_total{profile="p",result="success"} 1.0' in text
    assert 'policyscheduler_policy_last_reload_successful{profile="p"} 0.0' in text
