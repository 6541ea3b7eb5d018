"""Raw JSON over HTTPS to the API server (one pooled urllib3 manager, thread-safe).

Why not the client's API classes: they turn every object into model instances (~270 us per pod
against ~12 us for ``json.loads``), which alone would cap a watch at a few thousand events per
second. Requests and watch streams here are plain dicts in, plain dicts out.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
import weakref
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import urllib3
from urllib3.util.wait import wait_for_read

from policyscheduler.kube.config import Connection
from policyscheduler.kube.ratelimit import RateLimiter

__all__ = ["ApiError", "RestClient", "Stream"]


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
    """An open streaming response (a watch): iterate JSON lines; :meth:`close` from any thread."""

    def __init__(self, response: urllib3.BaseHTTPResponse) -> None:
        self._response = response

    def __iter__(self) -> Iterator[dict[str, Any]]:
        buffer = b""
        loads = json.loads
        for chunk in self._response.stream(64 * 1024, decode_content=True):
            if b"\n" not in chunk:
                buffer += chunk
                continue
            lines = (buffer + chunk).split(b"\n")  # one split per chunk: no re-copy of the rest per line
            buffer = lines.pop()
            for line in lines:
                if line.strip():
                    yield loads(line)
        if buffer.strip():
            yield loads(buffer)

    def close(self) -> None:
        """End the stream (wakes a reader blocked in another thread)."""
        try:
            self._response.shutdown()
        except Exception:  # noqa: BLE001 - already closed
            pass
        self._response.release_conn()


class _Connection(http.client.HTTPConnection):
    """One keep-alive connection to the API server; TLS when ``context`` is set (``server_hostname``
    names the server for SNI and the certificate check, as ``tls-server-name`` does)."""

    def __init__(self, host: str, port: int, context: ssl.SSLContext | None, server_hostname: str | None,
                 connect_timeout: float, timeout: float) -> None:
        super().__init__(host, port, timeout=connect_timeout)
        self._context = context
        self._server_hostname = server_hostname or host
        self._connect_timeout = connect_timeout
        self._read_timeout = timeout

    def connect(self) -> None:
        sock = socket.create_connection((self.host, self.port), self._connect_timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._context is not None:
                sock = self._context.wrap_socket(sock, server_hostname=self._server_hostname)
        except BaseException:
            sock.close()
            raise
        sock.settimeout(self._read_timeout)
        self.sock = sock

    def set_read_timeout(self, seconds: float) -> None:
        """Socket timeout of the reads (and writes) from now on, this connection open or not yet."""
        self._read_timeout = seconds
        if self.sock is not None:
            self.sock.settimeout(seconds)


class _Connections:
    """A pool of keep-alive :class:`_Connection` s for plain requests (not watches).

    Why not urllib3 here: a request through its PoolManager costs ~0.6 ms of CPU (URL parsing, pool
    lookup, header objects, response wrappers) against ~0.3 ms for ``http.client`` on a kept connection;
    with a bind, an event and sometimes a status patch per pod, that was a fifth of the scheduler's CPU.
    Each request takes an idle connection (dropping one the server closed meanwhile, as urllib3 does)
    or opens one, and gives it back when the server keeps it alive; at most ``maxsize`` stay idle."""

    def __init__(self, connection: Connection, *, maxsize: int, timeout: float, connect_timeout: float = 5.0) -> None:
        self.host, self.port, self.prefix = "", 0, ""
        self.context: ssl.SSLContext | None = None
        self.problem: str | None = None
        """Why no connection can be made (bad address, unreadable CA or client certificate): every request
        then fails with it as a connection error (status 0), reported and retried like one, as before."""
        try:
            url = urlsplit(connection.server)
            if url.scheme not in ("http", "https") or not url.hostname:
                raise ValueError(f"unsupported API server address {connection.server!r}")
            self.host = url.hostname
            self.port = url.port or (443 if url.scheme == "https" else 80)
            self.prefix = url.path.rstrip("/")
            if url.scheme == "https":
                if connection.verify:
                    context = ssl.create_default_context(cafile=connection.ca_file)
                else:
                    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
                    context.check_hostname = False
                    context.verify_mode = ssl.CERT_NONE
                if connection.cert_file:
                    context.load_cert_chain(connection.cert_file, connection.key_file)
                self.context = context
        except ValueError as err:
            self.problem = str(err)
        except OSError as err:  # ssl.SSLError is one too
            files = ", ".join(f"{what} {path}" for what, path in (("CA file", connection.ca_file),
                              ("client certificate", connection.cert_file), ("key", connection.key_file)) if path)
            self.problem = f"cannot set up TLS ({files or 'system CA certificates'}): {type(err).__name__}: {err}"
        self.server_hostname = connection.tls_server_name
        self.maxsize = maxsize
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self._idle: list[_Connection] = []
        self._lock = threading.Lock()
        weakref.finalize(self, _close_all, self._idle)  # a dropped client closes its sockets, as urllib3 does

    def _take(self) -> _Connection:
        if self.problem is not None:
            raise OSError(self.problem)
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                return _Connection(self.host, self.port, self.context, self.server_hostname,
                                   self.connect_timeout, self.timeout)
            if conn.sock is not None and not wait_for_read(conn.sock, timeout=0.0):
                return conn  # quiet and open: reuse it
            conn.close()  # closed by the server (or stray bytes): never reuse

    def _give_back(self, conn: _Connection) -> None:
        with self._lock:
            if len(self._idle) < self.maxsize:
                self._idle.append(conn)
                return
        conn.close()

    def request(self, method: str, path: str, body: bytes | None, headers: dict[str, str],
                timeout: float | None) -> tuple[int, bytes]:
        """(status, body bytes); OSError / HTTPException when the connection fails."""
        conn = self._take()
        try:
            if timeout is not None:
                conn.set_read_timeout(timeout)
            conn.request(method, self.prefix + path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
        except BaseException:
            conn.close()
            raise
        if resp.will_close:
            conn.close()
        else:
            if timeout is not None:
                conn.set_read_timeout(self.timeout)
            self._give_back(conn)
        return resp.status, data

    def close(self) -> None:
        """Close the idle connections (those in use close when their request ends and they find no room)."""
        with self._lock:
            idle = list(self._idle)
            self._idle.clear()
        _close_all(idle)


def _close_all(connections: list[_Connection]) -> None:
    for conn in list(connections):
        conn.close()
    connections.clear()


class RestClient:
    """JSON requests to one API server with the resolved TLS settings and credentials: plain requests
    on kept ``http.client`` connections (:class:`_Connections`), watch streams through urllib3."""

    def __init__(self, connection: Connection, *, maxsize: int = 32, timeout: float = 30.0) -> None:
        self.connection = connection
        self.server = connection.server
        tls: dict[str, Any] = {}
        if connection.server.startswith("https"):
            tls = {"cert_reqs": "CERT_REQUIRED" if connection.verify else "CERT_NONE",
                   "ca_certs": connection.ca_file, "cert_file": connection.cert_file,
                   "key_file": connection.key_file}
            if connection.tls_server_name:
                tls["server_hostname"] = connection.tls_server_name
        if not connection.verify:
            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
        self.limiter: RateLimiter | None = None
        self._pool = urllib3.PoolManager(num_pools=4, maxsize=maxsize, block=False, retries=False,
                                         timeout=urllib3.Timeout(connect=5.0, read=timeout), **tls)
        self._connections = _Connections(connection, maxsize=maxsize, timeout=timeout)

    def _headers(self, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": "policyscheduler"}
        if content_type:
            headers["Content-Type"] = content_type
        token = self.connection.token()
        if token:
            headers["Authorization"] = token
        return headers

    def request(self, method: str, path: str, body: Any = None, *, query: Mapping[str, Any] | None = None,
                content_type: str = "application/json", timeout: float | None = None) -> Any:
        """One request; the decoded JSON body, or :class:`ApiError` (status 0 for connection errors)."""
        if self.limiter is not None:  # clientConnection qps/burst (kube/ratelimit.py); watches are not limited
            self.limiter.acquire()
        url = path  # the connections add the server (and its path prefix, if any)
        if query:
            url += "?" + urlencode({k: v for k, v in query.items() if v is not None})
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        try:
            status, raw = self._connections.request(method, url, data,
                                                    self._headers(content_type if data is not None else None), timeout)
        except (OSError, http.client.HTTPException) as err:
            raise ApiError(method, path, 0, detail=f"{type(err).__name__}: {err}") from err
        if not 200 <= status < 300:
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

    def stream(self, path: str, query: Mapping[str, Any], *, read_timeout: float) -> Stream:
        """Open a streaming GET (a watch); a non-2xx answer raises :class:`ApiError`."""
        url = self.server + path + "?" + urlencode({k: v for k, v in query.items() if v is not None})
        try:
            resp = self._pool.request("GET", url, headers=self._headers(None), preload_content=False,
                                      timeout=urllib3.Timeout(connect=5.0, read=read_timeout))
        except urllib3.exceptions.HTTPError as err:
            raise ApiError("GET", path, 0, detail=f"{type(err).__name__}: {err}") from err
        if not 200 <= resp.status < 300:
            text = resp.read().decode("utf-8", errors="replace")
            resp.release_conn()
            raise ApiError("GET", path, resp.status, text)
        return Stream(resp)


def pod_path(namespace: str, name: str, sub: str = "") -> str:
    """``/api/v1/namespaces/<ns>/pods/<name>[/<sub>]`` with the names escaped."""
    base = f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}"
    return f"{base}/{sub}" if sub else base
