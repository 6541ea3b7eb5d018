"""The REST client's kept connections, against a small local HTTP/1.1 server (the real API server is
exercised by every e2e test; this one can close connections on purpose and count them)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from urllib3.util.wait import wait_for_read

from policyscheduler.kube.config import Connection
from policyscheduler.kube.rest import ApiError, RestClient


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.peers: set[int] = set()  # client ports seen: one per TCP connection
        self.requests: list[tuple[str, str, dict[str, str], Any]] = []
        self.close_next = False  # answer the next request with "Connection: close", then close
        self.drop_next = False  # answer the next request as if keeping the connection, then close it


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    server: Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        self.server.peers.add(self.client_address[1])
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        self.server.requests.append((self.command, self.path, dict(self.headers), body))
        doc: dict[str, Any]
        if self.path.endswith("/missing"):
            status, doc = 404, {"kind": "Status", "reason": "NotFound", "message": 'pods "missing" not found'}
        else:
            status, doc = 201 if self.command == "POST" else 200, {"echo": body, "path": self.path}
        data = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if self.server.drop_next:
            self.server.drop_next = False
            self.close_connection = True
        if self.server.close_next:
            self.server.close_next = False
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = _answer


@pytest.fixture
def server() -> Iterator[Server]:
    srv = Server()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def client_for(url: str) -> RestClient:
    return RestClient(Connection(server=url, ca_file=None, cert_file=None, key_file=None, verify=True,
                                 token=lambda: "Bearer t0ken"))


def test_requests_reuse_one_kept_connection_and_send_json_and_the_token(server: Server) -> None:
    client = client_for(f"http://127.0.0.1:{server.server_port}")
    for i in range(5):
        answer = client.post("/api/v1/namespaces/ns/pods/p/binding", {"n": i})
        assert answer == {"echo": {"n": i}, "path": "/api/v1/namespaces/ns/pods/p/binding"}
    assert client.get("/api/v1/nodes", limit=2)["path"] == "/api/v1/nodes?limit=2"
    assert len(server.peers) == 1
    method, _, headers, _ = server.requests[0]
    assert method == "POST" and headers["Authorization"] == "Bearer t0ken"
    assert headers["Content-Type"] == "application/json"


def test_a_connection_the_server_closed_is_replaced_without_an_error(server: Server) -> None:
    client = client_for(f"http://127.0.0.1:{server.server_port}")
    client.get("/a")
    server.close_next = True
    client.get("/b")  # answered, then the server closes: the client must not keep that connection
    assert client.get("/c")["path"] == "/c"
    assert len(server.peers) == 2


def test_an_idle_connection_closed_by_the_server_is_detected_before_reuse(server: Server) -> None:
    client = client_for(f"http://127.0.0.1:{server.server_port}")
    server.drop_next = True
    client.get("/a")  # kept by the client (nothing said it would close), then closed by the server
    deadline = time.monotonic() + 5
    idle = client._connections._idle
    while not (idle and idle[0].sock is not None and wait_for_read(idle[0].sock, timeout=0.0)):
        assert time.monotonic() < deadline, "the server never closed the connection"
        time.sleep(0.01)
    assert client.get("/b")["path"] == "/b"  # a POST on that dead connection would fail: never reused
    assert len(server.peers) == 2


def test_errors_carry_the_status_and_the_servers_message(server: Server) -> None:
    client = client_for(f"http://127.0.0.1:{server.server_port}")
    with pytest.raises(ApiError) as info:
        client.get("/api/v1/namespaces/ns/pods/missing")
    assert info.value.status == 404 and info.value.reason == "NotFound"
    assert 'pods "missing" not found' in str(info.value)
    assert client.get("/after")["path"] == "/after"  # the connection survives a 404
    assert len(server.peers) == 1


def test_an_unreachable_server_is_status_0() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once closed
    with pytest.raises(ApiError) as info:
        client_for(f"http://127.0.0.1:{port}").get("/api/v1/nodes")
    assert info.value.status == 0


def test_a_path_prefix_in_the_server_address_is_kept(server: Server) -> None:
    client = client_for(f"http://127.0.0.1:{server.server_port}/k8s/clusters/c-1/")
    assert client.get("/api/v1/nodes")["path"] == "/k8s/clusters/c-1/api/v1/nodes"


def test_an_unreadable_ca_file_fails_each_request_as_a_connection_error(tmp_path: Any) -> None:
    client = RestClient(Connection(server="https://127.0.0.1:1", ca_file=str(tmp_path / "missing.crt"),
                                   cert_file=None, key_file=None, verify=True, token=lambda: None))
    with pytest.raises(ApiError) as info:
        client.get("/api/v1/nodes")
    assert info.value.status == 0 and "missing.crt" in str(info.value)
