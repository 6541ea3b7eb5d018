"""Raw JSON over HTTPS to the API server (kept connections of our own HTTP/1.1 client, thread-safe).

Why not the client's API classes: they turn every object into model instances (~270 us per pod
against ~12 us for ``json.loads``), which alone would cap a watch at a few thousand events per
second. Requests and watch streams here are plain dicts in, plain dicts out.
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import ssl
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from policyscheduler.kube import http1
from policyscheduler.kube.config import Connection, Credential
from policyscheduler.kube.pipeline import Pipeline
from policyscheduler.kube.ratelimit import RateLimiter

__all__ = ["ApiError", "RestClient", "Stream"]

log = logging.getLogger("policyscheduler.rest")

CERT_CHECK_INTERVAL = 5.0
"""Seconds between checks of the client certificate files for new contents (a ``stat`` of each)."""


class ApiError(RuntimeError):
    """A non-2xx answer (``status`` is the HTTP status, ``reason`` the Status reason) or, with
    ``status == 0``, a connection failure."""

    def __init__(self, method: str, path: str, status: int, body: str = "", detail: str = "") -> None:
        self.status = status
        self.reason = ""
        message = detail
        try:
            doc = json.loads(body) if body else {}
            message = message or str(doc.get("message", ""))
            self.reason = str(doc.get("reason", ""))
        except ValueError:
            message = message or body[:300]
        self.message = message
        super().__init__(f"{method} {path}: HTTP {status}: {message}" if status else f"{method} {path}: {message}")


class Stream:
    """An open streaming response (a watch): iterate JSON lines; :meth:`close` from any thread.

    Why not urllib3's ``stream()``: it reads a chunk-size line and the chunk per watch event (the API
    server sends one chunk per event), with a wrapper's worth of Python around each. Here each ``recv``
    takes whatever arrived (up to 64 KB, often many events), the chunked framing is removed in bulk and
    the lines are split once per read."""

    def __init__(self, sock: socket.socket, decoder: http1.Decoder, initial: bytes, path: str) -> None:
        self._sock = sock
        self._decoder = decoder
        self._initial = initial  # payload that came with the response head
        self._path = path
        self._lock = threading.Lock()
        self._closed = False
        self._reading = False  # a thread is inside recv: close() must not close the socket under it
        self.pause: Callable[[], float] | None = None
        """Asked before each read once the events read so far are handled: seconds to wait first (0: read at
        once). A busy scheduler waits a few ms so that events arriving one at a time are read, and its
        thread woken, a handful at a time; every wake-up of a reader is a GIL hand-off the loop pays for."""

    def __iter__(self) -> Iterator[dict[str, Any]]:
        loads = json.loads
        decoder, recv, lock = self._decoder, self._sock.recv, self._lock
        buffer = b""
        payload, self._initial = self._initial, b""
        try:
            while True:
                if payload:
                    if b"\n" in payload:
                        lines = (buffer + payload if buffer else payload).split(b"\n")  # one split per read
                        buffer = lines.pop()
                        for line in lines:
                            if line and not line.isspace():
                                yield loads(line)
                    else:
                        buffer += payload
                if decoder.done:
                    break
                pause = self.pause
                if pause is not None:
                    wait = pause()
                    if wait > 0:
                        time.sleep(wait)
                with lock:
                    if self._closed:
                        return
                    self._reading = True
                try:
                    data = recv(http1.RECV_SIZE)
                except OSError as err:
                    if self._closed:
                        return
                    raise ApiError("GET", self._path, 0, detail=f"watch stream: {type(err).__name__}: {err}") from err
                finally:
                    with lock:
                        self._reading = False
                if self._closed:
                    return
                if not data:
                    try:
                        decoder.feed_eof()
                    except ConnectionError as err:
                        raise ApiError("GET", self._path, 0, detail=f"watch stream: {err}") from err
                    break
                try:
                    payload = decoder.feed(data)
                except http1.ProtocolError as err:
                    raise ApiError("GET", self._path, 0, detail=f"watch stream: {err}") from err
            if buffer and not buffer.isspace():
                yield loads(buffer)
        finally:
            self.close()

    def close(self) -> None:
        """End the stream: wakes a reader blocked in ``recv`` in another thread (``shutdown``); the socket
        itself is closed by whoever leaves it last, so no thread ever reads a closed (reused) descriptor."""
        with self._lock:
            if not self._closed:
                self._closed = True
                try:
                    self._sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass  # not connected any more
            if self._reading:
                return  # the reader wakes up, sees it closed and closes the socket on its way out
            self._sock.close()


class _Connections:
    """A pool of kept-alive :class:`http1.Http1Connection` s for plain requests (watches get their own).

    Why not urllib3 or ``http.client``: a request through urllib3's PoolManager cost ~0.6 ms of CPU and
    through ``http.client`` ~0.24 ms (header objects, ``email`` parsing, a ``readline`` per header); here
    a request is one buffer built from a pre-encoded header block, sent with one ``sendall``, and its
    answer is parsed by hand from one ``recv`` in the usual case. Each request takes an idle connection
    (dropping one the server closed meanwhile) or opens one, and gives it back when the server keeps it
    alive; at most ``maxsize`` stay idle."""

    def __init__(self, connection: Connection, *, maxsize: int, timeout: float, connect_timeout: float = 5.0,
                 cert_check_interval: float = CERT_CHECK_INTERVAL) -> None:
        self.host, self.port, self.prefix = "", 0, ""
        self.context: ssl.SSLContext | None = None
        self.problem: str | None = None
        """Why no connection can be made (bad address, unreadable CA or client certificate): every request
        then fails with it as a connection error (status 0), reported and retried like one, as before."""
        self.proxy = connection.proxy
        self.tls_generation = 0
        """Counts TLS context rebuilds (a rotated client certificate): connections opened under an older
        one are not reused (kube/pipeline.py drops its idle lanes too)."""
        self._connection = connection
        self._cert_check_interval = cert_check_interval
        self._tls_files: tuple[str | None, str | None] = (connection.cert_file, connection.key_file)
        self._tls_signature = _signature(self._tls_files)
        self._tls_checked = time.monotonic()
        self._tls_failed: tuple[tuple[str | None, str | None], tuple[tuple[int, int, int], ...]] | None = None
        self._https = False
        host_header = ""
        try:
            url = urlsplit(connection.server)
            if url.scheme not in ("http", "https") or not url.hostname:
                raise ValueError(f"unsupported API server address {connection.server!r}")
            self.host = url.hostname
            self.port = url.port or (443 if url.scheme == "https" else 80)
            self.prefix = url.path.rstrip("/")
            host_header = f"[{self.host}]" if ":" in self.host else self.host
            if url.port and url.port != (443 if url.scheme == "https" else 80):
                host_header += f":{url.port}"
            if url.scheme == "https":
                self._https = True
                self.context = _tls_context(connection, *self._tls_files)
            elif self.proxy is not None:
                self.prefix = f"http://{host_header}{self.prefix}"  # absolute-form: the proxy forwards it
        except ValueError as err:
            self.problem = str(err)
        except OSError as err:  # ssl.SSLError is one too
            self.problem = _tls_problem(connection, self._tls_files, err)
        self.server_hostname = connection.tls_server_name
        self.maxsize = maxsize
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self._fixed = f"Host: {host_header}\r\nUser-Agent: policyscheduler\r\nAccept: application/json\r\n"
        if self.proxy is not None and self.context is None and self.proxy.authorization:
            self._fixed += f"Proxy-Authorization: {self.proxy.authorization}\r\n"
        self._idle: list[http1.Http1Connection] = []
        self._lock = threading.Lock()
        weakref.finalize(self, _close_all, self._idle)  # a dropped client closes its sockets

    def encode(self, method: str, target: str, body: bytes | None, content_type: str | None) -> bytes:
        """The whole request as one buffer: request line, headers (the credential is asked for now, once:
        tokens rotate, and a changed client certificate rebuilds the TLS context first), body."""
        if _UNSAFE.search(target):
            raise http1.ProtocolError(f"request target with a space or control character: {target[:80]!r}")
        head = f"{method} {self.prefix}{target} HTTP/1.1\r\n{self._fixed}"
        credential = self._connection.credential()
        if self._https:
            self._follow_certificate(credential)
        token = credential.authorization
        if token:
            if "\r" in token or "\n" in token:
                raise http1.ProtocolError("the bearer token contains a line break")
            head += f"Authorization: {token}\r\n"
        if body is None:
            return (head + "\r\n").encode("latin-1")
        head += f"Content-Type: {content_type or 'application/json'}\r\nContent-Length: {len(body)}\r\n\r\n"
        return head.encode("latin-1") + body

    def unauthorized(self) -> None:
        """The API server answered 401: let the credential source start over (an exec plugin runs again)."""
        if self._connection.unauthorized is not None:
            self._connection.unauthorized()

    def _follow_certificate(self, credential: Credential) -> None:
        """Rebuild the TLS context when the client certificate changed: new paths (an exec plugin's new
        certificate), or, checked at most every ``cert_check_interval`` seconds, new contents of the same
        files (a rotated file on disk; client-go reloads those too). Idle connections made with the old
        certificate are closed; a certificate that cannot be loaded (a half-written file) keeps the old
        context until the next check."""
        files = (credential.cert_file, credential.key_file)
        now = time.monotonic()
        if files == self._tls_files:
            if now - self._tls_checked < self._cert_check_interval:
                return
            self._tls_checked = now
            signature = _signature(files)
            if signature == self._tls_signature:
                return
        else:
            signature = _signature(files)
            if (files, signature) == self._tls_failed and now - self._tls_checked < self._cert_check_interval:
                return  # failed to load a moment ago: not again on every request
        with self._lock:
            if (files, signature) == (self._tls_files, self._tls_signature):
                return  # another thread rebuilt it meanwhile
            try:
                context = _tls_context(self._connection, *files)
            except OSError as err:
                log.warning("client certificate changed but cannot be loaded; keeping the previous one: %s",
                            _tls_problem(self._connection, files, err))
                self._tls_checked, self._tls_failed = now, (files, signature)
                return
            self.context, self._tls_files, self._tls_signature, self._tls_checked = context, files, signature, now
            self.problem = None
            self.tls_generation += 1
            idle = list(self._idle)
            self._idle.clear()
        for conn in idle:
            conn.close()
        log.info("client certificate changed: TLS rebuilt (generation %d)", self.tls_generation)

    def open(self) -> http1.Http1Connection:
        """A new kept-alive connection (``OSError`` when none can be made)."""
        if self.problem is not None:
            raise OSError(self.problem)
        generation = self.tls_generation
        return http1.Http1Connection(http1.open_socket(self.host, self.port, self.context, self.server_hostname,
                                                       self.connect_timeout, self.timeout, self.proxy), generation)

    def _take(self) -> tuple[http1.Http1Connection, bool]:
        """An idle connection still open (True: reused) or a new one (False)."""
        if self.problem is not None:
            raise OSError(self.problem)
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                return self.open(), False
            if not conn.dropped():
                return conn, True  # quiet and open: reuse it
            conn.close()  # closed by the server (or stray bytes): never reuse

    def _give_back(self, conn: http1.Http1Connection) -> None:
        with self._lock:
            if len(self._idle) < self.maxsize and conn.generation == self.tls_generation:
                self._idle.append(conn)
                return
        conn.close()  # no room, or made with a client certificate that has been replaced since

    def _exchange(self, conn: http1.Http1Connection, data: bytes, timeout: float | None) -> http1.Response:
        try:
            if timeout is not None:
                conn.sock.settimeout(timeout)
            response = conn.exchange(data)
        except BaseException:
            conn.close()
            raise
        if response.will_close:
            conn.close()
        else:
            if timeout is not None:
                conn.sock.settimeout(self.timeout)
            self._give_back(conn)
        return response

    def request(self, method: str, target: str, body: bytes | None, content_type: str | None,
                timeout: float | None) -> tuple[int, bytes]:
        """(status, body bytes); ``OSError`` / :class:`http1.ProtocolError` when the connection fails.

        A GET that fails on a reused connection before any answer byte (the server closed it just as we
        sent) is sent once more on a new connection; other methods are not: a POST may have been acted
        upon, and its caller decides (the binder's retry finds a lost bind as a 409 on our node)."""
        data = self.encode(method, target, body, content_type)
        conn, reused = self._take()
        try:
            response = self._exchange(conn, data, timeout)
        except http1.StaleConnection:
            if not (reused and method == "GET"):
                raise
            response = self._exchange(self.open(), data, timeout)
        return response.status, response.body

    def stream(self, target: str, read_timeout: float) -> tuple[socket.socket, http1.Response]:
        """Send a GET on a new connection (a watch holds it for minutes) and read the answer's head;
        the socket and the answer (complete unless it is 2xx)."""
        if self.problem is not None:
            raise OSError(self.problem)
        data = self.encode("GET", target, None, None)
        sock = http1.open_socket(self.host, self.port, self.context, self.server_hostname,
                                 self.connect_timeout, read_timeout, self.proxy)
        try:
            sock.sendall(data)
            response = http1.Response()
            while response.decoder is None or not (200 <= response.status < 300 or response.decoder.done):
                chunk = sock.recv(http1.RECV_SIZE)
                if not chunk:
                    response.feed_eof()
                    break
                if response.feed(chunk):
                    break
        except BaseException:
            sock.close()
            raise
        return sock, response

    def close(self) -> None:
        """Close the idle connections (those in use close when their request ends and they find no room)."""
        with self._lock:
            idle = list(self._idle)
            self._idle.clear()
        _close_all(idle)


_UNSAFE = re.compile(r"[\x00-\x20\x7f]")


def _close_all(connections: list[http1.Http1Connection]) -> None:
    for conn in list(connections):
        conn.close()
    connections.clear()


def _signature(files: tuple[str | None, str | None]) -> tuple[tuple[int, int, int], ...]:
    """What identifies the contents of the certificate and key files cheaply: inode, size, mtime."""
    out = []
    for path in files:
        try:
            st = os.stat(path) if path else None
        except OSError:
            st = None
        out.append((st.st_ino, st.st_size, st.st_mtime_ns) if st else (0, 0, 0))
    return tuple(out)


def _tls_context(connection: Connection, cert_file: str | None, key_file: str | None) -> ssl.SSLContext:
    if connection.verify:
        context = ssl.create_default_context(cafile=connection.ca_file)
    else:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if cert_file:
        context.load_cert_chain(cert_file, key_file)
    return context


def _tls_problem(connection: Connection, files: tuple[str | None, str | None], err: OSError) -> str:
    named = ", ".join(f"{what} {path}" for what, path in (("CA file", connection.ca_file),
                      ("client certificate", files[0]), ("key", files[1])) if path)
    return f"cannot set up TLS ({named or 'system CA certificates'}): {type(err).__name__}: {err}"


class RestClient:
    """JSON requests to one API server with the resolved TLS settings and credentials: plain requests on
    kept connections (:class:`_Connections`), watch streams on a connection each (:class:`Stream`)."""

    def __init__(self, connection: Connection, *, maxsize: int = 32, timeout: float = 30.0,
                 cert_check_interval: float = CERT_CHECK_INTERVAL) -> None:
        self.connection = connection
        self.server = connection.server
        self.limiter: RateLimiter | None = None
        self._connections = _Connections(connection, maxsize=maxsize, timeout=timeout,
                                         cert_check_interval=cert_check_interval)

    def request(self, method: str, path: str, body: Any = None, *, query: Mapping[str, Any] | None = None,
                content_type: str = "application/json", timeout: float | None = None) -> Any:
        """One request; the decoded JSON body, or :class:`ApiError` (status 0 for connection errors)."""
        if self.limiter is not None:  # clientConnection qps/burst (kube/ratelimit.py); watches are not limited
            self.limiter.acquire()
        url = path  # the connections add the server's path prefix, if any
        if query:
            url += "?" + urlencode({k: v for k, v in query.items() if v is not None})
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        try:
            status, raw = self._connections.request(method, url, data, content_type, timeout)
        except (OSError, http1.ProtocolError) as err:
            raise ApiError(method, path, 0, detail=f"{self.server}: {type(err).__name__}: {err}") from err
        if not 200 <= status < 300:
            if status == 401:
                self._connections.unauthorized()  # an exec plugin's credential was refused: get a new one
            raise ApiError(method, path, status, raw.decode("utf-8", errors="replace"))
        return json.loads(raw) if raw else None

    def get(self, path: str, **query: Any) -> Any:
        return self.request("GET", path, query=query)

    def post(self, path: str, body: Any, **query: Any) -> Any:
        return self.request("POST", path, body, query=query or None)

    def put(self, path: str, body: Any) -> Any:
        return self.request("PUT", path, body)

    def patch(self, path: str, body: Any, *, kind: str = "strategic-merge-patch") -> Any:
        return self.request("PATCH", path, body, content_type=f"application/{kind}+json")

    def pipeline(self, *, lanes: int, depth: int, name: str = "pipeline", linger: float = 0.0,
                 fill: bool = False) -> Pipeline:
        """A :class:`Pipeline` on this client's server and credentials, under its rate limiter (the binder's
        path for its POSTs: kube/pipeline.py says why)."""
        return Pipeline(self._connections, lanes=lanes, depth=depth, limiter=lambda: self.limiter, name=name,
                        linger=linger, fill=fill)

    def stream(self, path: str, query: Mapping[str, Any], *, read_timeout: float) -> Stream:
        """Open a streaming GET (a watch); a non-2xx answer raises :class:`ApiError` with its body, a
        connection failure :class:`ApiError` with status 0."""
        url = path + "?" + urlencode({k: v for k, v in query.items() if v is not None})
        try:
            sock, response = self._connections.stream(url, read_timeout)
        except (OSError, http1.ProtocolError) as err:
            raise ApiError("GET", path, 0, detail=f"{self.server}: {type(err).__name__}: {err}") from err
        if not 200 <= response.status < 300:
            sock.close()
            if response.status == 401:
                self._connections.unauthorized()
            raise ApiError("GET", path, response.status, response.body.decode("utf-8", errors="replace"))
        assert response.decoder is not None  # the head was read
        return Stream(sock, response.decoder, response.take_body(), path)


def pod_path(namespace: str, name: str, sub: str = "") -> str:
    """``/api/v1/namespaces/<ns>/pods/<name>[/<sub>]`` with the names escaped."""
    base = f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}"
    return f"{base}/{sub}" if sub else base
