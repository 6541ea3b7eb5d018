"""The pipeline's bookkeeping of requests in flight (kube/pipeline.py keeps a count, not a sum over its lanes
per round) and :meth:`Pipeline.submit_all` (several requests, one wake-up, written together). Against a
small local HTTP server that records, per connection, how many requests it had received and not answered
yet -- the ``depth`` the pipeline promises never to exceed -- and can close a connection mid-way."""

from __future__ import annotations

import threading
import time
from typing import Any

from policyscheduler.kube.pipeline import Pipeline
from tests.kube.plainhttp import CountingServer, PlainOpener


class Answers:
    def __init__(self) -> None:
        self.got: dict[str, tuple[int, bytes]] = {}
        self.lock = threading.Lock()

    def done(self, name: str) -> Any:
        def answered(status: int, body: bytes, detail: Any) -> None:
            with self.lock:
                self.got[name] = (status, body)
        return answered

    def wait(self, count: int, timeout: float = 10.0) -> dict[str, tuple[int, bytes]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.got) >= count:
                    return dict(self.got)
            time.sleep(0.005)
        raise AssertionError(f"only {len(self.got)} of {count} answers: {self.got}")


def test_no_connection_gets_more_than_depth_requests_and_every_one_is_answered() -> None:
    server = CountingServer()
    pipe = Pipeline(PlainOpener(server.port), lanes=2, depth=3, name="depth-test")
    answers = Answers()
    try:
        for i in range(40):
            pipe.submit("GET", f"/r{i}", None, answers.done(f"r{i}"))
        got = answers.wait(40)
        assert got == {f"r{i}": (200, f"/r{i}".encode()) for i in range(40)}
        assert 1 < server.most_waiting <= 3, server.most_waiting  # lanes filled, never beyond their depth
    finally:
        pipe.close()
        server.close()


def test_requests_failed_with_their_connection_free_their_room() -> None:
    """A dropped connection's waiting requests leave the count too: with one lane of depth 2, requests
    queued behind two that die with their connection still go out (a count that kept them would leave no
    room, and these would never be written)."""
    server = CountingServer(gap=0.05)
    pipe = Pipeline(PlainOpener(server.port), lanes=1, depth=2, name="drop-test")
    answers = Answers()
    try:
        pipe.submit_all([("GET", "/a/close", None, answers.done("a")), ("GET", "/b", None, answers.done("b"))])
        answers.wait(2)
        for round_ in range(3):
            for i in range(4):
                pipe.submit("GET", f"/after{round_}-{i}", None, answers.done(f"after{round_}-{i}"))
        got = answers.wait(14)
        assert got["a"][0] == 0 and got["b"][0] == 0  # failed with their connection
        assert all(got[f"after{r}-{i}"] == (200, f"/after{r}-{i}".encode()) for r in range(3) for i in range(4))
    finally:
        pipe.close()
        server.close()


def test_submit_all_writes_a_batch_together() -> None:
    server = CountingServer(gap=0.001)
    pipe = Pipeline(PlainOpener(server.port), lanes=1, depth=8, name="batch-test")
    answers = Answers()
    try:
        pipe.submit("GET", "/warm", None, answers.done("warm"))  # the connection is open, the thread asleep
        answers.wait(1)
        time.sleep(0.05)
        reads, rounds = server.reads, pipe.rounds
        pipe.submit_all([("GET", f"/r{i}", None, answers.done(f"r{i}")) for i in range(8)])
        got = answers.wait(9)
        assert got == {"warm": (200, b"/warm"), **{f"r{i}": (200, f"/r{i}".encode()) for i in range(8)}}
        assert server.reads - reads == 1  # one write brought all eight (one at a time: eight)
        assert server.most_waiting == 8
        assert pipe.rounds - rounds <= 10, pipe.rounds - rounds
    finally:
        pipe.close()
        server.close()


def test_fill_puts_a_batch_on_as_few_connections_as_depth_allows() -> None:
    server = CountingServer(gap=0.001)
    pipe = Pipeline(PlainOpener(server.port), lanes=4, depth=4, name="fill-test", fill=True)
    answers = Answers()
    try:
        pipe.submit("GET", "/warm", None, answers.done("warm"))
        answers.wait(1)
        time.sleep(0.05)
        reads = server.reads
        pipe.submit_all([("GET", f"/r{i}", None, answers.done(f"r{i}")) for i in range(6)])
        got = answers.wait(7)
        assert got == {"warm": (200, b"/warm"), **{f"r{i}": (200, f"/r{i}".encode()) for i in range(6)}}
        assert server.reads - reads == 2  # 4 on one connection, 2 on another (spread: 4 writes on 4)
        assert server.most_waiting == 4
        pipe.fill = False
        reads = server.reads
        pipe.submit_all([("GET", f"/s{i}", None, answers.done(f"s{i}")) for i in range(6)])
        answers.wait(13)
        assert server.reads - reads == 4  # what fill saves: the same batch spread over the four connections
    finally:
        pipe.close()
        server.close()

