"""The API writes of a preemption (app/preemption.py), against a recording stand-in for the API server:
kube's order and texts, the uid preconditions, 404/409 ending the work on a pod, retries of 5xx, and the
scheduler handing every preemption attempt to the writer from its report."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import generate_latest

from policyscheduler.app import LiveScheduler, Options
from policyscheduler.app.preemption import PreemptionWriter, preempted_note
from policyscheduler.cycle.preemption import Preemption, Victim
from policyscheduler.cycle.queue import QueuedPod
from policyscheduler.cycle.schedule import Attempt
from policyscheduler.evaluation import make_evaluator
from policyscheduler.evaluation.decision import Decision
from policyscheduler.kube.rest import ApiError
from policyscheduler.loader import load_layered
from tests.kube.test_events import wait
from tests.kube.test_report_cost import _sample

PREEMPTOR = {"metadata": {"name": "big", "namespace": "ns", "uid": "u-big"},
             "spec": {"schedulerName": "policy-scheduler", "priority": 1000000}, "status": {}}
V1 = Victim("ns", "low-1", "u-1", "n2", 100, False)
V2 = Victim("ns", "low-2", "u-2", "n2", 100, True)


class ApiStandIn:
    """Records every write; ``fail`` maps (method, path) to the statuses to answer before succeeding."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any]] = []
        self.fail: dict[tuple[str, str], list[int]] = {}
        self.lock = threading.Lock()

    def _answer(self, method: str, path: str, body: Any) -> Any:
        with self.lock:
            self.calls.append((method, path, body))
            statuses = self.fail.get((method, path))
            if statuses:
                raise ApiError(method, path, statuses.pop(0), "")
        return body

    def patch(self, path: str, body: Any, *, kind: str = "strategic-merge-patch") -> Any:
        return self._answer("PATCH", path, body)

    def post(self, path: str, body: Any, **query: Any) -> Any:
        return self._answer("POST", path, body)

    def request(self, method: str, path: str, body: Any = None, **kwargs: Any) -> Any:
        return self._answer(method, path, body)


def _attempt(*, node: str | None = "n2", victims: tuple[Victim, ...] = (V1, V2), clear: bool = False,
             cleared: tuple[str, ...] = (), eligible: bool = True) -> Attempt:
    entry = QueuedPod(key="u-big", pod=PREEMPTOR, priority=1000000, timestamp=0.0, seq=1, attempts=1,
                      initial_attempt=time.monotonic())
    decision = Decision(pod="ns/big", node=None, verdicts={}, feasible=[], scores={}, totals={}, top=[],
                        score=None, message="0/3 nodes are available: 3 Insufficient cpu.", policy_digest="d" * 64)
    preemption = Preemption(node=node, victims=victims, eligible=eligible)
    return Attempt(entry=entry, pod=PREEMPTOR, result="unschedulable", decision=decision, node=None, duration=0.01,
                   nominated_node=node, victims=victims, clear_nomination=clear, cleared_nominations=cleared,
                   preemption=preemption, queue="unschedulable")


def _writer(api: ApiStandIn) -> PreemptionWriter:
    return PreemptionWriter(api, backoff=0.01)  # type: ignore[arg-type]


def test_victims_get_the_condition_then_are_deleted_then_get_the_event_then_the_preemptor_is_nominated() -> None:
    api = ApiStandIn()
    writer = _writer(api)
    writer.submit(_attempt(cleared=("ns/mid",)), "policy-scheduler")
    writer.shutdown(wait=True)
    shape = [(m, p) for m, p, _ in api.calls]
    v1, v2 = "/api/v1/namespaces/ns/pods/low-1", "/api/v1/namespaces/ns/pods/low-2"
    events = "/apis/events.k8s.io/v1/namespaces/ns/events"
    assert shape == [("PATCH", v1 + "/status"), ("DELETE", v1), ("POST", events),
                     ("PATCH", v2 + "/status"), ("DELETE", v2), ("POST", events),
                     ("PATCH", "/api/v1/namespaces/ns/pods/mid/status"),
                     ("PATCH", "/api/v1/namespaces/ns/pods/big/status")]
    condition_patch = api.calls[0][2]
    assert condition_patch["metadata"] == {"uid": "u-1"}  # never the condition of a recreated pod
    [condition] = condition_patch["status"]["conditions"]
    assert {k: condition[k] for k in ("type", "status", "reason", "message")} == {
        "type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
        "message": "policy-scheduler: preempting to accommodate a higher priority pod"}
    assert api.calls[1][2]["preconditions"] == {"uid": "u-1"}
    event = api.calls[2][2]
    assert (event["reason"], event["action"], event["type"]) == ("Preempted", "Preempting", "Normal")
    assert event["note"] == "Preempted by pod u-big on node n2" == preempted_note("u-big", "n2")
    assert event["regarding"]["name"] == "low-1" and event["regarding"]["uid"] == "u-1"
    assert event["related"] == {"apiVersion": "v1", "kind": "Pod", "namespace": "ns", "name": "big", "uid": "u-big"}
    assert event["reportingController"] == "policy-scheduler"
    assert api.calls[6][2] == {"status": {"nominatedNodeName": None}}
    assert api.calls[7][2] == {"status": {"nominatedNodeName": "n2"}, "metadata": {"uid": "u-big"}}


def test_a_victim_already_gone_is_skipped_and_the_others_still_go() -> None:
    api = ApiStandIn()
    api.fail[("PATCH", "/api/v1/namespaces/ns/pods/low-1/status")] = [404]
    api.fail[("DELETE", "/api/v1/namespaces/ns/pods/low-2")] = [409]  # recreated under the same name
    writer = _writer(api)
    writer.submit(_attempt(), "policy-scheduler")
    writer.shutdown(wait=True)
    shape = [(m, p.rsplit("/", 2)[-1] if "events" not in p else "event") for m, p, _ in api.calls]
    assert shape == [("PATCH", "status"), ("PATCH", "status"), ("DELETE", "low-2"), ("PATCH", "status")]
    assert writer.failed == 0  # gone is not a failure


def test_server_errors_are_retried_other_errors_are_given_up() -> None:
    api = ApiStandIn()
    api.fail[("DELETE", "/api/v1/namespaces/ns/pods/low-1")] = [503, 0]
    api.fail[("DELETE", "/api/v1/namespaces/ns/pods/low-2")] = [403]
    writer = _writer(api)
    writer.submit(_attempt(), "policy-scheduler")
    writer.shutdown(wait=True)
    deletes = [p for m, p, _ in api.calls if m == "DELETE"]
    assert deletes.count("/api/v1/namespaces/ns/pods/low-1") == 3
    assert deletes.count("/api/v1/namespaces/ns/pods/low-2") == 1
    events = [b["regarding"]["name"] for m, p, b in api.calls if m == "POST"]
    assert events == ["low-1"]  # no Preempted event for a victim that was not deleted
    assert writer.failed == 1


def test_a_failed_preemption_clears_the_preemptors_nomination_and_nothing_else() -> None:
    api = ApiStandIn()
    writer = _writer(api)
    writer.submit(_attempt(node=None, victims=(), clear=True), "policy-scheduler")
    writer.submit(_attempt(node=None, victims=(), eligible=False), "policy-scheduler")  # Never: nothing at all
    writer.shutdown(wait=True)
    assert api.calls == [("PATCH", "/api/v1/namespaces/ns/pods/big/status",
                          {"status": {"nominatedNodeName": None}, "metadata": {"uid": "u-big"}})]


@pytest.fixture
def scheduler() -> Iterator[tuple[LiveScheduler, ApiStandIn]]:
    loaded = load_layered([])
    assert loaded.policy_set is not None
    api = ApiStandIn()
    sched = LiveScheduler(api, loaded.policy_set, make_evaluator("reference"),  # type: ignore[arg-type]
                          Options(bind_address=None))
    try:
        yield sched, api
    finally:
        for recorder in sched.recorders.values():
            recorder.shutdown(wait=False)
        sched.preemptions.shutdown(wait=False)
        sched.binder.shutdown()


def test_the_scheduler_hands_each_preemption_to_the_writer_and_counts_it(
        scheduler: tuple[LiveScheduler, ApiStandIn]) -> None:
    sched, api = scheduler
    sched._report(_attempt())
    sched._report(_attempt(node=None, victims=()))  # tried, no candidate
    sched._report(_attempt(node=None, victims=(), eligible=False))  # preemptionPolicy: Never (kube counts it)
    wait(lambda: sum(1 for m, _, _ in api.calls if m == "DELETE") == 2)
    text = generate_latest(sched.metrics.registry).decode()
    assert _sample(text, "scheduler_preemption_attempts_total") == 3
    assert _sample(text, "scheduler_preemption_victims_count") == 1
    assert _sample(text, "scheduler_preemption_victims_sum") == 2
