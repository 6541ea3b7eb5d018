"""The request pipeline (kube/pipeline.py) against the real API server: answers matched to their
requests in order, few connections, connections that die mid-pipeline, an unreachable server, the
rate limiter, closing."""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import TYPE_CHECKING, Any

import pytest

from policyscheduler.kube.pipeline import Pipeline
from policyscheduler.kube.ratelimit import RateLimiter
from tests.controlplane import fakes
from tests.kube.proxy import Proxy, client_for, via

if TYPE_CHECKING:
    from tests.controlplane.harness import ControlPlane

pytestmark = pytest.mark.e2e




class Answers:
    """Collects ``done`` calls by request label; :meth:`wait` until ``n`` arrived."""

    def __init__(self) -> None:
        self.got: dict[str, list[tuple[int, bytes, str | None]]] = {}
        self._cond = threading.Condition()

    def done(self, label: str) -> Any:
        def call(status: int, body: bytes, detail: str | None) -> None:
            with self._cond:
                self.got.setdefault(label, []).append((status, body, detail))
                self._cond.notify_all()
        return call

    def wait(self, n: int, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while sum(len(v) for v in self.got.values()) < n:
                left = deadline - time.monotonic()
                assert left > 0, f"only {sum(len(v) for v in self.got.values())} of {n} answers arrived"
                self._cond.wait(left)


def make_pods(control_plane: ControlPlane, namespace: str, n: int, prefix: str = "p") -> list[str]:
    pods = fakes.create_all(control_plane.api(), fakes.make_pods(n, namespace, prefix=prefix, scheduler_name="nobody"))
    return [p["metadata"]["name"] for p in pods]


def test_answers_come_back_to_their_requests_over_few_connections(proxy: Proxy, control_plane: ControlPlane,
                                                                  namespace: str) -> None:
    names = make_pods(control_plane, namespace, 40)
    pipe = via(proxy, control_plane).pipeline(lanes=2, depth=8)
    answers = Answers()
    for name in names:  # GETs: each answer names its pod, so a mix-up shows
        pipe.submit("GET", f"/api/v1/namespaces/{namespace}/pods/{name}", None, answers.done(name))
    answers.wait(len(names))
    for name in names:
        [(status, body, detail)] = answers.got[name]
        assert (status, detail) == (200, None)
        assert json.loads(body)["metadata"]["name"] == name
    assert proxy.accepted == 2
    for name in names:
        body = json.dumps({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                           "target": {"apiVersion": "v1", "kind": "Node", "name": "node-x"}}).encode()
        pipe.submit("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/binding", body, answers.done("bind " + name))
    answers.wait(2 * len(names))
    assert {answers.got["bind " + name][0][0] for name in names} == {201}
    pods = control_plane.api().list_items(f"/api/v1/namespaces/{namespace}/pods")
    assert {p["spec"].get("nodeName") for p in pods} == {"node-x"}
    assert proxy.accepted == 2
    pipe.close()


def test_a_connection_dying_mid_pipeline_reports_every_waiting_request_once(proxy: Proxy, control_plane: ControlPlane,
                                                                            namespace: str) -> None:
    names = make_pods(control_plane, namespace, 12)
    pipe = via(proxy, control_plane).pipeline(lanes=1, depth=12)
    answers = Answers()
    pipe.submit("GET", f"/api/v1/namespaces/{namespace}", None, answers.done("warm"))
    answers.wait(1)
    proxy.cut_next_answer()  # the server acts on the first request; its answer never arrives
    for name in names:
        pipe.submit("GET", f"/api/v1/namespaces/{namespace}/pods/{name}", None, answers.done(name))
    answers.wait(1 + len(names))
    time.sleep(0.2)  # a second call for the same request would show up here
    assert all(len(calls) == 1 for calls in answers.got.values())
    lost = [name for name in names if answers.got[name][0][0] == 0]
    assert lost and lost[0] == names[0], answers.got
    assert all(answers.got[name][0][2] for name in lost)  # each says why
    for name in names:
        status, body, _ = answers.got[name][0]
        assert status in (0, 200)
        if status == 200:  # sent on a new connection after the first died: still its own answer
            assert json.loads(body)["metadata"]["name"] == name
    # the pipeline goes on on a new connection
    pipe.submit("GET", f"/api/v1/namespaces/{namespace}", None, answers.done("after"))
    answers.wait(2 + len(names))
    assert answers.got["after"][0][0] == 200
    assert proxy.accepted >= 2
    pipe.close()


def test_an_idle_connection_the_server_closed_is_not_written_on(proxy: Proxy, control_plane: ControlPlane,
                                                                 namespace: str) -> None:
    pipe = via(proxy, control_plane).pipeline(lanes=1, depth=4)
    answers = Answers()
    pipe.submit("GET", f"/api/v1/namespaces/{namespace}", None, answers.done("first"))
    answers.wait(1)
    proxy.cut_all()
    time.sleep(0.3)  # the close reaches the client
    # a POST on the dead connection would come back as status 0
    body = json.dumps(fakes.make_pod("after-close", namespace, scheduler_name="nobody")).encode()
    pipe.submit("POST", f"/api/v1/namespaces/{namespace}/pods", body, answers.done("post"))
    answers.wait(2)
    assert answers.got["post"][0][0] == 201, answers.got["post"]
    assert proxy.accepted == 2
    pipe.close()


def test_an_unreachable_server_answers_status_0_with_the_reason(control_plane: ControlPlane) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once closed
    pipe = client_for(control_plane, f"https://127.0.0.1:{port}").pipeline(lanes=2, depth=2)
    answers = Answers()
    for i in range(5):
        pipe.submit("GET", "/api/v1/namespaces", None, answers.done(str(i)))
    answers.wait(5)
    for calls in answers.got.values():
        [(status, _, detail)] = calls
        assert status == 0 and detail is not None and "ConnectionRefusedError" in detail
    pipe.close()


def test_the_rate_limiter_spaces_pipelined_requests(control_plane: ControlPlane, namespace: str) -> None:
    client = client_for(control_plane)
    client.limiter = RateLimiter(qps=20, burst=1)
    pipe = client.pipeline(lanes=2, depth=8)
    answers = Answers()
    started = time.monotonic()
    for i in range(6):
        pipe.submit("GET", f"/api/v1/namespaces/{namespace}", None, answers.done(str(i)))
    answers.wait(6)
    assert time.monotonic() - started >= 0.24  # 5 waits of 50 ms after the first token
    assert {calls[0][0] for calls in answers.got.values()} == {200}
    pipe.close()


def test_after_close_requests_fail_at_once(control_plane: ControlPlane, namespace: str) -> None:
    pipe: Pipeline = client_for(control_plane).pipeline(lanes=1, depth=1)
    pipe.close()
    answers = Answers()
    pipe.submit("GET", f"/api/v1/namespaces/{namespace}", None, answers.done("late"))
    answers.wait(1, timeout=1)
    assert answers.got["late"] == [(0, b"", "the pipeline is closed")]


def test_a_request_that_cannot_be_encoded_fails_alone(control_plane: ControlPlane, namespace: str) -> None:
    pipe = client_for(control_plane).pipeline(lanes=1, depth=4)
    answers = Answers()
    pipe.submit("GET", "/api/v1/namespaces/bad name", None, answers.done("bad"))
    pipe.submit("GET", f"/api/v1/namespaces/{namespace}", None, answers.done("good"))
    answers.wait(2)
    [(status, _, detail)] = answers.got["bad"]
    assert status == 0 and detail is not None and "ProtocolError" in detail
    assert answers.got["good"][0][0] == 200
    pipe.close()
