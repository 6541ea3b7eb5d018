"""Our HTTP/1.1 client against the real API server: kept connections, dropped connections, chunked
answers, errors and watch streams.

A small TCP proxy sits between the client and the API server where a test needs connections to die
the way a load balancer or a restarting server kills them: TLS passes through it untouched."""

from __future__ import annotations

import dataclasses
import socket
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from policyscheduler.kube import RestClient, load_connection
from policyscheduler.kube.rest import ApiError

if TYPE_CHECKING:
    from tests.controlplane.harness import ControlPlane

pytestmark = pytest.mark.e2e


class Proxy:
    """Forwards TCP connections to ``target``; :meth:`cut_all` kills every connection (as a server
    closing idle ones does); :meth:`cut_next_request`: the next bytes a client sends on one of the
    connections open now kill it instead of being forwarded (the server vanished just as we sent)."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.accepted = 0
        self._armed: set[socket.socket] = set()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            with self._lock:
                self.accepted += 1
                self._pairs.append((client, server))
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, from_client: bool) -> None:
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                break
            if not data:
                break
            if from_client and src in self._armed:
                self._armed.clear()
                break
            try:
                dst.sendall(data)
            except OSError:
                break
        _kill(src, dst)

    def cut_next_request(self) -> None:
        with self._lock:
            self._armed = {client for client, _ in self._pairs}

    def cut_all(self) -> None:
        with self._lock:
            for pair in self._pairs:
                _kill(*pair)

    def close(self) -> None:
        self.listener.close()
        self.cut_all()


def _kill(*socks: socket.socket) -> None:
    for sock in socks:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        sock.close()


@pytest.fixture
def proxy(control_plane: ControlPlane) -> Iterator[Proxy]:
    host, port = control_plane.server.removeprefix("https://").rsplit(":", 1)
    p = Proxy((host, int(port)))
    yield p
    p.close()


def client_for(control_plane: ControlPlane, server: str | None = None) -> RestClient:
    connection = load_connection(str(control_plane.kubeconfig))
    return RestClient(dataclasses.replace(connection, server=server or connection.server))


def via(proxy: Proxy, control_plane: ControlPlane) -> RestClient:
    return client_for(control_plane, f"https://127.0.0.1:{proxy.port}")


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
