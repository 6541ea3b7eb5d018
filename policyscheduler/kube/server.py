"""The status endpoints, as kube-scheduler serves them (a daemon thread).

Paths: ``/healthz``, ``/healthz/ping``, ``/livez``, ``/readyz`` (open to anyone, as kube's
``--authorization-always-allow-paths``), ``/metrics``, ``/metrics/resources`` and ``/configz`` (our
effective configuration as JSON). With ``auth`` (secure serving, :mod:`.secure`) everything but the
health paths needs a bearer token the API server authenticates and authorizes for ``get`` on the path:
401 without (or with a bad) token, 403 when not allowed.

``/healthz`` and ``/livez`` fail when this replica leads but its last lease renewal is older than the
lease duration (the process is wedged); ``/readyz`` is 200 once every watch delivered its first list, the
cluster state was built from them and the policies are loaded (standbys are ready too: they are warm and
waiting); ``/healthz/ping`` is 200
while the process answers. Bodies are short reasons in plain text.
"""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from policyscheduler.kube.secure import DelegatedAuth

__all__ = ["PATHS", "StatusServer", "is_loopback", "parse_bind_address"]

PATHS = ("/healthz", "/healthz/ping", "/livez", "/readyz", "/configz", "/metrics", "/metrics/resources")

_TEXT = "text/plain; charset=utf-8"


def parse_bind_address(value: str) -> tuple[str, int]:
    """``host:port`` (``[v6]:port`` too) -> (host, port); ValueError with the reason."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--bind-address {value!r}: expected HOST:PORT")
    return host.strip("[]") or "0.0.0.0", int(port)


def is_loopback(host: str) -> bool:
    """True for localhost and loopback IPs (where plain HTTP is allowed)."""
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class StatusServer:
    """Serves :data:`PATHS`; ``health()`` / ``ready()`` return (ok, reason).

    ``tls``: serve HTTPS with this context; ``auth``: delegated authn/authz for the non-health paths;
    ``configz``: the effective configuration; ``resources``: the ``/metrics/resources`` registry."""

    def __init__(self, address: tuple[str, int], registry: CollectorRegistry,
                 health: Callable[[], tuple[bool, str]], ready: Callable[[], tuple[bool, str]], *,
                 tls: ssl.SSLContext | None = None, auth: DelegatedAuth | None = None,
                 configz: Callable[[], Any] | None = None, resources: CollectorRegistry | None = None) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            timeout = 30  # a client that connects and says nothing (or never finishes TLS) is dropped

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if auth is not None and path in PATHS:
                    verdict = auth.check(self.headers.get("Authorization"), path)
                    if verdict.code != 200:
                        self._send(verdict.code, (verdict.reason + "\n").encode(), _TEXT)
                        return
                code, body, ctype = outer._answer(path, registry, configz, resources)
                self._send(code, body, ctype)

            def _send(self, code: int, body: bytes, ctype: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return

        self._health, self._ready = health, ready
        self.httpd = ThreadingHTTPServer(address, Handler)
        self.httpd.daemon_threads = True
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True,
                                                 do_handshake_on_connect=False)  # in the handler thread
        self.secure = tls is not None
        self.address = self.httpd.server_address
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="status-server", daemon=True)

    def _answer(self, path: str, registry: CollectorRegistry, configz: Callable[[], Any] | None,
                resources: CollectorRegistry | None) -> tuple[int, bytes, str]:
        if path == "/metrics":
            return 200, generate_latest(registry), CONTENT_TYPE_LATEST
        if path == "/metrics/resources" and resources is not None:
            return 200, generate_latest(resources), CONTENT_TYPE_LATEST
        if path == "/healthz/ping":
            return 200, b"ok\n", _TEXT
        if path in ("/healthz", "/livez", "/readyz"):
            ok, reason = (self._ready if path == "/readyz" else self._health)()
            return (200 if ok else 503), (reason + "\n").encode(), _TEXT
        if path == "/configz" and configz is not None:
            return 200, (json.dumps(configz(), indent=2, sort_keys=True, default=str) + "\n").encode(), \
                "application/json"
        return 404, b"not found\n", _TEXT

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
