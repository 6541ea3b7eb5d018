"""Requests written HTTP/1.1-pipelined on a few kept connections, their answers read by one thread.

Why: the binder writes one request per scheduled pod. With a pool of threads each doing one request at
a time, a bind cost ~190 us of CPU and ~2 thread wake-ups, and each wake-up is a GIL hand-off that
interrupts the scheduling loop. Here one thread writes every queued request at once (several per
connection: pipelining, RFC 9112 section 9.3.2) and reads the answers of all connections after one
``poll``. While the scheduling loop holds the GIL, answers and new requests pile up until the thread
gets it back, so one wake-up typically writes and reads several. Measured with bench/http_bench.py
(1,000 binds fed by a thread spending 0.7 ms of CPU per pod; the binder's own CPU and its thread's
voluntary switches per bind): 8 threads one request each, 214 us and 3.6 switches; this pipeline on 4
connections, 100-135 us and 0.9-1.0. A pause between rounds (tried: 1 and 2 ms) bought nothing more.
The binder now keeps one request per connection on 16 (kube/binder.py: the API server and etcd spend
less per bind with more binds at once); the saving is the one thread and its one ``poll``, which holds
with or without pipelining.

Answers come back in request order on each connection (the API server handles a connection's requests
one after another, which is also why there are several connections, ``lanes``). Each request's ``done``
callback runs on the pipeline thread, so it must be short (the binder hands anything but a 2xx to
another thread).

Failures: when a connection fails (reset, end of stream, a read timeout, bytes that are not HTTP/1.1) or
the server says it closes it, every request on it still waiting for an answer is reported with status 0
and a detail. Such a request may or may not have been acted upon; the caller decides (the binder retries,
and a bind that did happen comes back as a 409 on our node). Requests are never sent twice here.
"""

from __future__ import annotations

import collections
import heapq
import logging
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from policyscheduler.kube import http1
from policyscheduler.kube.ratelimit import RateLimiter

__all__ = ["Done", "Pipeline"]

log = logging.getLogger("policyscheduler.pipeline")

Done = Callable[[int, bytes, str | None], None]
"""``done(status, body, detail)``: the answer's status and body, or status 0 and what went wrong."""


class Opener(Protocol):
    """What the pipeline needs from the REST client's connection pool (kube/rest.py ``_Connections``)."""

    timeout: float
    tls_generation: int

    def encode(self, method: str, target: str, body: bytes | None, content_type: str | None) -> bytes: ...

    def open(self) -> http1.Http1Connection: ...

    def unauthorized(self) -> None: ...


@dataclass(slots=True)
class _Request:
    method: str
    target: str
    body: bytes | None
    content_type: str | None
    done: Done
    due: float = 0.0
    """Monotonic time before which the rate limiter does not let it go (0: not asked yet)."""


@dataclass(slots=True)
class _Lane:
    """One connection and the requests written on it whose answers have not arrived, oldest first."""

    conn: http1.Http1Connection | None = None
    waiting: collections.deque[_Request] = field(default_factory=collections.deque)
    response: http1.Response = field(default_factory=lambda: http1.Response(pipelined=True))
    since: float = 0.0
    """When the oldest waiting request was written, or the last byte arrived (the read timeout's start)."""


class Pipeline:
    """Sends requests from any thread (:meth:`submit`); one thread writes and reads them."""

    def __init__(self, opener: Opener, *, lanes: int = 4, depth: int = 4,
                 limiter: Callable[[], RateLimiter | None] = lambda: None, name: str = "pipeline",
                 linger: float = 0.0, fill: bool = False) -> None:
        """``linger``: seconds the thread waits, once an answer has arrived, before it reads -- so that one
        round reads the answers that arrive meanwhile too, instead of waking once per answer. For requests
        nobody waits on (the Scheduled events); the binder keeps 0: a bind's answer is read at once.

        ``fill``: requests written together go on as few connections as possible (each filled up to ``depth``,
        the fullest first), one write each, rather than spread over the least loaded ones -- for requests
        nobody waits on (the Scheduled events), where the writes cost more than the parallelism buys."""
        if lanes < 1 or depth < 1:
            raise ValueError("a pipeline needs at least one lane and a depth of at least one")
        if linger < 0:
            raise ValueError("a pipeline's linger cannot be negative")
        self._opener = opener
        self.depth = depth
        self.linger = linger
        self.fill = fill
        self._limiter = limiter
        self._lanes = [_Lane() for _ in range(lanes)]
        self._queue: collections.deque[_Request] = collections.deque()
        self._lock = threading.Lock()
        self._blocked = False
        """The thread sleeps in ``poll`` and only a byte on the wake-up socket gets a new request out."""
        self._closing = False
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._poll = select.poll()
        self._poll.register(self._wake_r, select.POLLIN)
        self._fds: dict[int, _Lane] = {}
        self._capacity = lanes * depth
        self._waiting = 0
        """Requests written on the lanes and not answered yet (the sum of their ``waiting``; this thread's)."""
        self.rounds = 0
        """Rounds of the thread (diagnostics: wake-ups)."""
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, method: str, target: str, body: bytes | None, done: Done,
               content_type: str | None = "application/json") -> None:
        """Queue one request; ``done`` is called once with its answer (or status 0), on the pipeline thread
        (the request is encoded there too: the caller is the scheduling loop)."""
        self.submit_all([(method, target, body, done)], content_type)

    def submit_all(self, requests: list[tuple[str, str, bytes | None, Done]],
                   content_type: str | None = "application/json") -> None:
        """Queue several requests (method, target, body, done) at once, as :meth:`submit` queues one: one
        wake-up of the thread for all of them, which then writes them together (one ``sendall`` per
        connection) -- the event writer posts a batch of Scheduled events this way."""
        with self._lock:
            if self._closing:
                closed = True
            else:
                closed = False
                self._queue.extend(_Request(method, target, body, content_type, done)
                                   for method, target, body, done in requests)
                wake = self._blocked
                self._blocked = False
        if closed:
            for _, _, _, done in requests:
                _call(done, 0, b"", "the pipeline is closed")
        elif wake:
            self._wake()

    def close(self, timeout: float = 5.0) -> None:
        """Stop the thread: requests not yet answered get status 0 (callers drain first: see the binder)."""
        with self._lock:
            self._closing = True
        self._wake()
        self._thread.join(timeout)

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"x")
        except OSError:  # the thread is gone (closed, or stopped by a bug it logged): nothing to wake
            pass

    # -- the thread --------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while self._round():
                pass
        except Exception:  # a bug here must not strand callers: fail what is left and say so
            log.exception("the request pipeline stopped")
        finally:
            self._shut()

    def _round(self) -> bool:
        """Write what is queued, wait for answers (or new requests), read them; False once closing."""
        self.rounds += 1
        now = time.monotonic()
        deadline = self._send(now)
        if self._waiting:
            timeout = self._opener.timeout
            deadline = min([deadline] + [lane.since + timeout for lane in self._lanes if lane.waiting])
        timeout_ms = -1 if deadline == float("inf") else max(0, int((deadline - now) * 1000) + 1)
        with self._lock:
            if self._closing:
                return False
            room = self._waiting < self._capacity
            if room and self._queue and self._queue[0].due <= now:
                timeout_ms = 0  # requests came in meanwhile: go round at once
            # asleep with room for more: only a byte on the wake-up socket gets a new request out in time
            self._blocked = timeout_ms != 0 and room
        events = self._poll.poll(timeout_ms)
        with self._lock:
            self._blocked = False
        if self.linger and any(fd in self._fds for fd, _ in events):
            time.sleep(self.linger)  # more answers come in meanwhile: read them in this round
            events = self._poll.poll(0)
        for fd, _ in events:
            lane = self._fds.get(fd)
            if lane is None:
                self._drain_wake()
            else:
                self._read(lane)
        self._expire(time.monotonic())
        return True

    def _send(self, now: float) -> float:
        """Write queued requests on the lanes with the fewest waiting (up to ``depth`` each); the time the
        next held-back request may go (the rate limiter), or infinity."""
        with self._lock:
            if not self._queue:
                return float("inf")
            ready: list[_Request] = []
            limiter = self._limiter()  # clientConnection qps/burst, as for every other request
            room = self._capacity - self._waiting
            while self._queue and len(ready) < room:
                request = self._queue[0]
                if limiter is not None:
                    if request.due == 0.0:
                        request.due = now + limiter.reserve()
                    if request.due > now:
                        break
                ready.append(self._queue.popleft())
            held = self._queue[0].due if self._queue and self._queue[0].due > now else float("inf")
        if ready:
            self._write(ready, now)
        return held

    def _write(self, ready: list[_Request], now: float) -> None:
        batches: dict[int, list[tuple[_Request, bytes]]] = {}
        # the least loaded lane first, as a heap: one pop and push per request, not a scan of every lane
        load = [(len(lane.waiting), i) for i, lane in enumerate(self._lanes)]
        heapq.heapify(load)
        slots: list[int] = []
        if self.fill:  # each lane's free places, the fullest lane's first (``ready`` fits in them)
            for waiting, i in sorted(load, key=lambda x: (-x[0], x[1])):
                slots += [i] * (self.depth - waiting)
        taken = 0
        for request in ready:
            try:  # the bearer token is read now: it rotates
                data = self._opener.encode(request.method, request.target, request.body, request.content_type)
            except (http1.ProtocolError, OSError) as err:  # OSError: no credential (an exec plugin failed)
                _call(request.done, 0, b"", f"{type(err).__name__}: {err}")
                continue
            if slots:
                i = slots[taken]
                taken += 1
            else:
                waiting, i = load[0]
                heapq.heapreplace(load, (waiting + 1, i))
            batches.setdefault(i, []).append((request, data))
        for i, batch in batches.items():
            lane = self._lanes[i]
            if lane.conn is not None and not lane.waiting and (
                    lane.conn.dropped() or lane.conn.generation != self._opener.tls_generation):
                self._drop(lane, None)  # closed by the server while idle, or an old client certificate
            if lane.conn is None:
                try:
                    lane.conn = self._opener.open()
                except (OSError, http1.ProtocolError) as err:
                    for request, _ in batch:
                        _call(request.done, 0, b"", f"{type(err).__name__}: {err}")
                    continue
                self._fds[lane.conn.sock.fileno()] = lane
                self._poll.register(lane.conn.sock, select.POLLIN)
            if not lane.waiting:
                lane.since = now
            lane.waiting.extend(request for request, _ in batch)
            self._waiting += len(batch)
            try:
                lane.conn.sock.sendall(b"".join(data for _, data in batch))
            except (OSError, ssl.SSLError) as err:
                self._drop(lane, f"sending failed: {type(err).__name__}: {err}")

    def _read(self, lane: _Lane) -> None:
        """Take what arrived on ``lane`` and hand every complete answer to its request."""
        conn = lane.conn
        if conn is None:
            return
        sock = conn.sock
        try:
            data = sock.recv(http1.RECV_SIZE)
            if isinstance(sock, ssl.SSLSocket):
                while sock.pending():
                    data += sock.recv(http1.RECV_SIZE)
        except (OSError, ssl.SSLError) as err:
            self._drop(lane, f"reading the answer failed: {type(err).__name__}: {err}")
            return
        lane.since = time.monotonic()
        try:
            if not data:
                if lane.response.received:
                    lane.response.feed_eof()  # completes an answer framed by the end of the connection
                    self._answered(lane)
                self._drop(lane, "the server closed the connection")
                return
            while data:
                if not lane.waiting:
                    raise http1.ProtocolError("an answer arrived for no request")
                if not lane.response.feed(data):
                    return
                data = self._answered(lane)
                if lane.conn is None:
                    return
        except (OSError, http1.ProtocolError) as err:
            self._drop(lane, f"{type(err).__name__}: {err}")

    def _answered(self, lane: _Lane) -> bytes:
        """Deliver the lane's complete answer; the bytes after it (the next answers)."""
        response = lane.response
        request = lane.waiting.popleft()
        self._waiting -= 1
        rest = response.decoder.rest if response.decoder is not None else b""
        lane.response = http1.Response(pipelined=True)
        if response.status == 401:
            self._opener.unauthorized()  # an exec plugin's credential was refused: the next request gets a new one
        _call(request.done, response.status, response.body, None)
        if response.will_close:
            self._drop(lane, "the server closed the connection after an earlier answer")
            return b""
        return rest

    def _expire(self, now: float) -> None:
        timeout = self._opener.timeout
        for lane in self._lanes:
            if lane.waiting and now - lane.since > timeout:
                self._drop(lane, f"no answer within {timeout:g}s")

    def _drop(self, lane: _Lane, detail: str | None) -> None:
        """Close ``lane``'s connection; its waiting requests get status 0 with ``detail``."""
        conn, lane.conn = lane.conn, None
        if conn is not None:
            fd = conn.sock.fileno()
            if self._fds.pop(fd, None) is not None:
                self._poll.unregister(fd)
            conn.close()
        lane.response = http1.Response(pipelined=True)
        waiting, lane.waiting = lane.waiting, collections.deque()
        self._waiting -= len(waiting)
        for request in waiting:
            _call(request.done, 0, b"", detail or "the connection was closed")

    def _drain_wake(self) -> None:
        """Take the wake-up bytes: one ``recv`` (there is one byte per wake-up, and only the blocked thread
        is woken; should more than it takes be there, the next ``poll`` comes back at once for them)."""
        try:
            self._wake_r.recv(4096)
        except BlockingIOError:
            pass

    def _shut(self) -> None:
        with self._lock:
            self._closing = True
            queued, self._queue = self._queue, collections.deque()
        for lane in self._lanes:
            self._drop(lane, "the pipeline is closed")
        for request in queued:
            _call(request.done, 0, b"", "the pipeline is closed")
        self._wake_r.close()
        self._wake_w.close()


def _call(done: Done, status: int, body: bytes, detail: str | None) -> None:
    try:
        done(status, body, detail)
    except Exception:
        log.exception("a request's answer handler failed")
