"""Raw JSON over HTTPS to the API server (one pooled urllib3 manager, thread-safe).

Why not the client's API classes: they turn every object into model instances (~270 us per pod
against ~12 us for ``json.loads``), which alone would cap a watch at a few thousand events per
second. Requests and watch streams here are plain dicts in, plain dicts out.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import quote, urlencode

import urllib3

from policyscheduler.kube.config import Connection

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
        for chunk in self._response.stream(64 * 1024, decode_content=True):
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                if line.strip():
                    yield json.loads(line)
        if buffer.strip():
            yield json.loads(buffer)

    def close(self) -> None:
        """End the stream (wakes a reader blocked in another thread)."""
        try:
            self._response.shutdown()
        except Exception:  # noqa: BLE001 - already closed
            pass
        self._response.release_conn()


class RestClient:
    """JSON requests to one API server with the resolved TLS settings and credentials."""

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
        self._pool = urllib3.PoolManager(num_pools=4, maxsize=maxsize, block=False, retries=False,
                                         timeout=urllib3.Timeout(connect=5.0, read=timeout), **tls)

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
        url = self.server + path
        if query:
            url += "?" + urlencode({k: v for k, v in query.items() if v is not None})
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        try:
            resp = self._pool.request(method, url, body=data,
                                      headers=self._headers(content_type if data is not None else None),
                                      timeout=timeout if timeout is not None else urllib3.util.Timeout.DEFAULT_TIMEOUT)
        except urllib3.exceptions.HTTPError as err:
            raise ApiError(method, path, 0, detail=f"{type(err).__name__}: {err}") from err
        text = resp.data.decode("utf-8", errors="replace")
        if not 200 <= resp.status < 300:
            raise ApiError(method, path, resp.status, text)
        return json.loads(text) if text else None

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
