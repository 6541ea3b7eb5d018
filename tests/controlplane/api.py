"""A small raw-JSON client for the test API server.

Why not the ``kubernetes`` client's models: tests create thousands of objects and
turning each into a model class costs ~20x a ``json.loads``. This client speaks
plain dicts over one pooled, certificate-authenticated urllib3 connection pool,
which is safe to share between threads for bulk creation.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import urlencode

import urllib3


class ApiError(RuntimeError):
    """A non-2xx answer from the API server, with its Status body."""

    def __init__(self, method: str, path: str, status: int, body: str) -> None:
        self.status = status
        self.body = body
        try:
            detail = json.loads(body).get("message", body)
        except ValueError:
            detail = body
        super().__init__(f"{method} {path}: HTTP {status}: {detail[:500]}")


class Api:
    """JSON over HTTPS to one API server with a client certificate."""

    def __init__(self, server: str, ca_file: str, cert_file: str, key_file: str, maxsize: int = 16) -> None:
        self.server = server.rstrip("/")
        self._pool = urllib3.PoolManager(
            num_pools=2,
            maxsize=maxsize,
            block=True,
            cert_reqs="CERT_REQUIRED",
            ca_certs=ca_file,
            cert_file=cert_file,
            key_file=key_file,
            retries=False,
            timeout=urllib3.Timeout(connect=5.0, read=60.0),
        )

    def request(self, method: str, path: str, body: Any = None, *, query: Mapping[str, Any] | None = None,
                content_type: str = "application/json", ok: Iterable[int] = (200, 201, 202)) -> Any:
        """Send one request; return the decoded JSON body or raise :class:`ApiError`."""
        url = self.server + path
        if query:
            url += "?" + urlencode({k: v for k, v in query.items() if v is not None})
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type
        resp = self._pool.request(method, url, body=data, headers=headers)
        text = resp.data.decode("utf-8", errors="replace")
        if resp.status not in tuple(ok):
            raise ApiError(method, path, resp.status, text)
        return json.loads(text) if text else None

    def get(self, path: str, **query: Any) -> Any:
        return self.request("GET", path, query=query)

    def post(self, path: str, body: Any) -> Any:
        return self.request("POST", path, body)

    def patch(self, path: str, body: Any) -> Any:
        return self.request("PATCH", path, body, content_type="application/merge-patch+json")

    def delete(self, path: str, **query: Any) -> Any:
        """Delete; a missing object is not an error (teardown must be idempotent)."""
        return self.request("DELETE", path, query=query, ok=(200, 202, 404))

    def status(self, path: str) -> int:
        """HTTP status of a GET, without raising (for readiness probes)."""
        try:
            return self._pool.request("GET", self.server + path, retries=False).status
        except urllib3.exceptions.HTTPError:
            return 0

    def list_items(self, path: str, **query: Any) -> list[dict[str, Any]]:
        return list(self.get(path, **query).get("items") or [])

    def watch(self, path: str, resource_version: str, timeout: int = 30) -> Iterator[dict[str, Any]]:
        """The watch events of ``path`` after ``resource_version`` (ends after ``timeout`` seconds, or raises
        :class:`ApiError`, e.g. 410 when the version is too old)."""
        query = urlencode({"watch": "true", "resourceVersion": resource_version, "timeoutSeconds": timeout,
                           "allowWatchBookmarks": "true"})
        resp = self._pool.request("GET", f"{self.server}{path}?{query}", preload_content=False,
                                  timeout=urllib3.Timeout(connect=5.0, read=timeout + 30.0))
        try:
            if resp.status != 200:
                raise ApiError("WATCH", path, resp.status, resp.read().decode("utf-8", errors="replace"))
            buffer = b""
            for chunk in resp.stream(65536):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield json.loads(line)
        finally:
            resp.release_conn()


def wait_for(check: Callable[[], Any], *, timeout: float, interval: float = 0.1, what: str = "condition") -> Any:
    """Poll ``check`` until it returns something truthy; raise TimeoutError naming ``what``."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while True:
        try:
            value = check()
            if value:
                return value
        except (ApiError, urllib3.exceptions.HTTPError, OSError) as exc:
            last_error = exc
        if time.monotonic() >= deadline:
            suffix = f" (last error: {last_error})" if last_error else ""
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}{suffix}")
        time.sleep(interval)
