"""The pipeline's ``linger`` (kube/pipeline.py): once an answer arrives, the thread waits that long and
reads every answer that came meanwhile in the same round -- the events pipeline's answers arrive one at
a time, and a round (a wake-up of its thread) per answer was most of its CPU. Against a small local HTTP
server that answers a connection's requests 10 ms apart."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

from policyscheduler.kube import http1
from policyscheduler.kube.pipeline import Pipeline
from tests.kube.proxy import serve_connections

ANSWER_GAP = 0.01


class SlowServer:
    """Plain HTTP/1.1 on 127.0.0.1: answers each GET with 200 and the request's path, ``ANSWER_GAP`` s
    after the previous answer on the same connection."""

    def __init__(self) -> None:
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
                    data += more
                head, _, data = data.partition(b"\r\n\r\n")
                path = head.split(b" ")[1]
                time.sleep(ANSWER_GAP)
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


def rounds_to_answer(linger: float, count: int = 8) -> tuple[int, list[tuple[int, bytes]]]:
    """Rounds the pipeline thread took to write ``count`` GETs on one connection and read their answers."""
    server = SlowServer()
    pipe = Pipeline(PlainOpener(server.port), lanes=1, depth=count, linger=linger, name="linger-test")
    got: list[tuple[int, bytes]] = []
    done = threading.Event()

    def answered(status: int, body: bytes, detail: Any) -> None:
        got.append((status, body))
        if len(got) == count:
            done.set()

    try:
        time.sleep(0.05)  # the thread is asleep in poll
        before = pipe.rounds
        # queued at once (one wake-up): one submit per request lets a busy machine wake the thread
        # between them, and the rounds would count the submissions, not the reading of the answers
        pipe.submit_all([("GET", f"/r{i}", None, answered) for i in range(count)])
        assert done.wait(10), got
        return pipe.rounds - before, got
    finally:
        pipe.close()
        server.close()


def test_lingering_reads_answers_that_arrive_one_at_a_time_in_one_round() -> None:
    rounds, got = rounds_to_answer(linger=0.5)  # the 8 answers come within ~80 ms
    assert got == [(200, f"/r{i}".encode()) for i in range(8)]  # each to its own request, in order
    assert rounds <= 3, rounds  # write, read all (a wake-up byte may cost one more)


def test_without_linger_each_answer_costs_a_round() -> None:
    """The setting the binder keeps (a bind's answer is read at once): also what shows the test above
    measures something."""
    rounds, got = rounds_to_answer(linger=0.0)
    assert got == [(200, f"/r{i}".encode()) for i in range(8)]
    assert rounds >= 6, rounds
