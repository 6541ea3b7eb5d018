"""A small local HTTP/1.1 server and the pipeline's view of a plain-HTTP connection pool, for the tests of
kube/pipeline.py (linger, depth, batches) that need answers timed by the test rather than by an API server."""

from __future__ import annotations

import socket
import threading
import time

from policyscheduler.kube import http1
from tests.kube.proxy import serve_connections


class CountingServer:
    """Answers each GET with 200 and its path, ``gap`` s after the previous answer on the connection. Records
    the most requests a connection had waiting (received, not answered) and the ``recv`` calls that brought
    request bytes; a path ending in ``/close`` gets no answer: the connection is closed instead."""

    def __init__(self, gap: float = 0.005) -> None:
        self.gap = gap
        self.most_waiting = 0
        self.reads = 0
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        serve_connections(self.listener, self._serve)

    def _serve(self, conn: socket.socket) -> None:
        data = b""
        with conn:
            while True:
                while b"\r\n\r\n" not in data:
                    more = conn.recv(65536)
                    if not more:
                        return
                    with self.lock:
                        self.reads += 1
                    data += more
                conn.setblocking(False)  # whatever else arrived meanwhile is waiting too
                try:
                    while more := conn.recv(65536):
                        data += more
                except BlockingIOError:
                    pass
                conn.setblocking(True)
                with self.lock:
                    self.most_waiting = max(self.most_waiting, data.count(b"\r\n\r\n"))
                head, _, data = data.partition(b"\r\n\r\n")
                path = head.split(b" ")[1]
                if path.endswith(b"/close"):
                    return
                time.sleep(self.gap)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(path), path))

    def close(self) -> None:
        self.listener.close()


class PlainOpener:
    """The pipeline's view of a connection pool, for a plain-HTTP server."""

    timeout = 10.0
    tls_generation = 0

    def __init__(self, port: int) -> None:
        self.port = port

    def encode(self, method: str, target: str, body: bytes | None, content_type: str | None) -> bytes:
        return f"{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n".encode()

    def open(self) -> http1.Http1Connection:
        return http1.Http1Connection(http1.open_socket("127.0.0.1", self.port, None, None, 5.0, 10.0))

    def unauthorized(self) -> None:
        pass
