"""``/metrics``, ``/healthz`` and ``/readyz`` on ``--bind-address`` (plain HTTP, a daemon thread).

``/healthz`` fails when this replica leads but its last lease renewal is older than the lease duration
(the process is wedged); ``/readyz`` is 200 once every watch delivered its first list and the policies
are loaded (standbys are ready too: they are warm and waiting). Bodies are short reasons in plain text.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

__all__ = ["StatusServer", "parse_bind_address"]


def parse_bind_address(value: str) -> tuple[str, int]:
    """``host:port`` (``[v6]:port`` too) -> (host, port); ValueError with the reason."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--bind-address {value!r}: expected HOST:PORT")
    return host.strip("[]") or "0.0.0.0", int(port)


class StatusServer:
    """Serves the three endpoints; ``health()`` / ``ready()`` return (ok, reason)."""

    def __init__(self, address: tuple[str, int], registry: CollectorRegistry,
                 health: Callable[[], tuple[bool, str]], ready: Callable[[], tuple[bool, str]]) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    body, ctype, code = generate_latest(registry), CONTENT_TYPE_LATEST, 200
                elif path in ("/healthz", "/livez", "/readyz"):
                    ok, reason = (outer._ready if path == "/readyz" else outer._health)()
                    body, ctype, code = (reason + "\n").encode(), "text/plain; charset=utf-8", 200 if ok else 503
                else:
                    body, ctype, code = b"not found\n", "text/plain; charset=utf-8", 404
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
        self.address = self.httpd.server_address
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="status-server", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
