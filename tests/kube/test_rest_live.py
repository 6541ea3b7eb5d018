"""Our HTTP/1.1 client against the real API server: kept connections, dropped connections, chunked
answers, errors and watch streams.

A small TCP proxy (tests/kube/proxy.py, the ``proxy`` fixture) sits between the client and the API server
where a test needs connections to die."""

from __future__ import annotations

import socket
import threading
import time
from typing import TYPE_CHECKING, Any

import pytest

from policyscheduler.kube.rest import ApiError
from tests.kube.proxy import Proxy, client_for, via

if TYPE_CHECKING:
    from tests.controlplane.harness import ControlPlane

pytestmark = pytest.mark.e2e




def pod(name: str, namespace: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"schedulerName": "nobody", "containers": [{"name": "c", "image": "pause"}]}}


def test_requests_share_one_kept_connection(proxy: Proxy, control_plane: ControlPlane, namespace: str) -> None:
    client = via(proxy, control_plane)
    for i in range(5):
        client.post(f"/api/v1/namespaces/{namespace}/pods", pod(f"p{i}", namespace))
        assert client.get(f"/api/v1/namespaces/{namespace}/pods/p{i}")["metadata"]["name"] == f"p{i}"
    assert proxy.accepted == 1


def test_an_idle_connection_the_server_closed_is_not_reused(proxy: Proxy, control_plane: ControlPlane,
                                                             namespace: str) -> None:
    client = via(proxy, control_plane)
    client.get(f"/api/v1/namespaces/{namespace}")
    proxy.cut_all()
    idle = client._connections._idle
    deadline = time.monotonic() + 5
    while not idle[0].dropped():
        assert time.monotonic() < deadline, "the close never reached the client"
        time.sleep(0.01)
    # a POST is never retried: had the dead connection been reused, this would fail with status 0
    assert client.post(f"/api/v1/namespaces/{namespace}/pods", pod("after-close", namespace))["metadata"]["uid"]
    assert proxy.accepted == 2


def test_a_get_lost_on_a_kept_connection_is_retried_once_a_post_is_not(proxy: Proxy, control_plane: ControlPlane,
                                                                      namespace: str) -> None:
    client = via(proxy, control_plane)
    client.get(f"/api/v1/namespaces/{namespace}")
    proxy.cut_next_request()
    assert client.get(f"/api/v1/namespaces/{namespace}")["metadata"]["name"] == namespace
    assert proxy.accepted == 2
    proxy.cut_next_request()
    with pytest.raises(ApiError) as info:
        client.post(f"/api/v1/namespaces/{namespace}/pods", pod("lost", namespace))
    assert info.value.status == 0 and "StaleConnection" in str(info.value)
    with pytest.raises(ApiError) as gone:  # it never reached the server
        client.get(f"/api/v1/namespaces/{namespace}/pods/lost")
    assert gone.value.status == 404


def test_chunked_answers_are_read_whole(control_plane: ControlPlane, namespace: str) -> None:
    client = client_for(control_plane)
    for i in range(20):
        client.post(f"/api/v1/namespaces/{namespace}/pods", pod(f"c{i}", namespace))
    connections = client._connections
    conn, _ = connections._take()
    try:
        response = conn.exchange(connections.encode("GET", f"/api/v1/namespaces/{namespace}/pods", None, None))
    finally:
        conn.close()
    assert response.status == 200 and response.headers.get(b"transfer-encoding") == b"chunked"  # the case under test
    assert response.body.startswith(b"{") and not response.will_close
    items = client.get(f"/api/v1/namespaces/{namespace}/pods")["items"]
    assert sorted(p["metadata"]["name"] for p in items) == sorted(f"c{i}" for i in range(20))


def test_a_non_2xx_answer_carries_the_servers_status(control_plane: ControlPlane, namespace: str) -> None:
    client = client_for(control_plane)
    with pytest.raises(ApiError) as info:
        client.get(f"/api/v1/namespaces/{namespace}/pods/missing")
    assert info.value.status == 404 and info.value.reason == "NotFound"
    assert 'pods "missing" not found' in str(info.value)
    client.post(f"/api/v1/namespaces/{namespace}/pods", pod("twice", namespace))
    with pytest.raises(ApiError) as conflict:
        client.post(f"/api/v1/namespaces/{namespace}/pods", pod("twice", namespace))
    assert conflict.value.status == 409 and conflict.value.reason == "AlreadyExists"


def test_connection_refused_is_status_0_and_names_the_server(control_plane: ControlPlane) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once closed
    client = client_for(control_plane, f"https://127.0.0.1:{port}")
    for call in (lambda: client.get("/api/v1/nodes"),
                 lambda: client.stream("/api/v1/pods", {"watch": "true"}, read_timeout=5)):
        with pytest.raises(ApiError) as info:
            call()
        assert info.value.status == 0
        assert f"https://127.0.0.1:{port}" in str(info.value) and "ConnectionRefusedError" in str(info.value)


def test_a_watch_delivers_events_and_ends_at_its_timeout(control_plane: ControlPlane, namespace: str) -> None:
    client = client_for(control_plane)
    version = client.get(f"/api/v1/namespaces/{namespace}/pods")["metadata"]["resourceVersion"]
    for i in range(30):
        client.post(f"/api/v1/namespaces/{namespace}/pods", pod(f"w{i}", namespace))
    stream = client.stream(f"/api/v1/namespaces/{namespace}/pods",
                           {"watch": "true", "resourceVersion": version, "timeoutSeconds": 2}, read_timeout=10)
    events = list(stream)  # ends by itself: the server closes the chunked stream after timeoutSeconds
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", f"w{i}") for i in range(30)]


def test_closing_a_watch_from_another_thread_ends_the_iteration(control_plane: ControlPlane, namespace: str) -> None:
    client = client_for(control_plane)
    stream = client.stream(f"/api/v1/namespaces/{namespace}/pods", {"watch": "true"}, read_timeout=60)
    seen: list[Any] = []
    done = threading.Event()

    def read() -> None:
        seen.extend(stream)
        done.set()

    threading.Thread(target=read, daemon=True).start()
    client.post(f"/api/v1/namespaces/{namespace}/pods", pod("one", namespace))
    deadline = time.monotonic() + 10
    while not seen:
        assert time.monotonic() < deadline, "the watch never delivered the event"
        time.sleep(0.01)
    time.sleep(0.1)  # the reader is blocked in recv again
    started = time.monotonic()
    stream.close()
    assert done.wait(5), "close() did not wake the reader"
    assert time.monotonic() - started < 2 and [e["object"]["metadata"]["name"] for e in seen] == ["one"]
    stream.close()  # twice is harmless


def test_watch_errors(control_plane: ControlPlane, namespace: str) -> None:
    client = client_for(control_plane)
    with pytest.raises(ApiError) as info:
        client.stream(f"/api/v1/namespaces/{namespace}/nothings", {"watch": "true"}, read_timeout=5)
    assert info.value.status == 404 and info.value.reason == "NotFound"
    quiet = client.stream(f"/api/v1/namespaces/{namespace}/pods", {"watch": "true"}, read_timeout=0.5)
    with pytest.raises(ApiError) as timeout:
        list(quiet)  # nothing happens in this namespace: the read timeout ends it as a connection error
    assert timeout.value.status == 0 and "timed out" in str(timeout.value)
