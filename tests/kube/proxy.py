"""A TCP proxy between our HTTP client and the real API server, for tests that need connections to die
the way a load balancer or a restarting server kills them: TLS passes through it untouched."""

from __future__ import annotations

import dataclasses
import socket
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from policyscheduler.kube import RestClient, load_connection

if TYPE_CHECKING:
    from tests.controlplane.harness import ControlPlane


class Proxy:
    """Forwards TCP connections to ``target``; :meth:`cut_all` kills every connection (as a server
    closing idle ones does); :meth:`cut_next_request`: the next bytes a client sends on one of the
    connections open now kill it instead of being forwarded (the server vanished just as we sent);
    :meth:`cut_next_answer`: the next bytes the server sends on any connection kill it instead (the
    server acted on the request, its answer is lost)."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.accepted = 0
        self._armed: set[socket.socket] = set()
        self._answer_armed = False
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._lock = threading.Lock()
        serve_connections(self.listener, self._connected)

    def _connected(self, client: socket.socket) -> None:
        server = socket.create_connection(self.target)
        with self._lock:
            self.accepted += 1
            self._pairs.append((client, server))
        threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
        self._pump(server, client, False)

    def _pump(self, src: socket.socket, dst: socket.socket, from_client: bool) -> None:
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                break
            if not data:
                break
            if from_client and src in self._armed:
                self._armed.clear()
                break
            if not from_client and self._answer_armed:
                self._answer_armed = False
                break
            try:
                dst.sendall(data)
            except OSError:
                break
        _kill(src, dst)

    def cut_next_request(self) -> None:
        with self._lock:
            self._armed = {client for client, _ in self._pairs}

    def cut_next_answer(self) -> None:
        self._answer_armed = True

    def cut_all(self) -> None:
        with self._lock:
            for pair in self._pairs:
                _kill(*pair)

    def close(self) -> None:
        self.listener.close()
        self.cut_all()


def serve_connections(listener: socket.socket, handle: Callable[[socket.socket], None]) -> None:
    """Accept on ``listener`` until it is closed, each connection handled by ``handle`` on a thread of its own
    (the test servers' accept loop)."""

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()


def _kill(*socks: socket.socket) -> None:
    for sock in socks:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        sock.close()


def client_for(control_plane: ControlPlane, server: str | None = None) -> RestClient:
    """Our REST client with the harness's credentials, talking to ``server`` (default: the API server)."""
    connection = load_connection(str(control_plane.kubeconfig))
    return RestClient(dataclasses.replace(connection, server=server or connection.server))


def via(proxy: Proxy, control_plane: ControlPlane) -> RestClient:
    """Our REST client talking to the API server through ``proxy``."""
    return client_for(control_plane, f"https://127.0.0.1:{proxy.port}")


class ConnectProxy:
    """An HTTP CONNECT proxy on loopback that counts the tunnels it opened (``tunnels``) and the
    authorities asked for (``asked``). Every authority is sent to ``target`` (so a client may use a name
    only the proxy "resolves", as a corporate proxy does); ``auth``: the ``Proxy-Authorization`` value it
    requires (407 otherwise). Bounded: at most ``limit`` tunnels, a 10 s wait for each request head."""

    def __init__(self, target: tuple[str, int], *, auth: str | None = None, limit: int = 64) -> None:
        self.target = target
        self.auth = auth
        self.limit = limit
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.tunnels = 0
        self.asked: list[str] = []
        self.refused = 0
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self._lock:
                self._socks.append(client)
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        client.settimeout(10)
        head = b""
        try:
            while b"\r\n\r\n" not in head and len(head) < 16384:
                data = client.recv(4096)
                if not data:
                    client.close()
                    return
                head += data
        except OSError:
            client.close()
            return
        lines = head.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
        method, authority, _ = (lines[0].split(" ") + ["", ""])[:3]
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        with self._lock:
            self.asked.append(authority)
            over = self.tunnels >= self.limit
        if method != "CONNECT" or over:
            client.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            client.close()
            return
        if self.auth is not None and headers.get("proxy-authorization") != self.auth:
            with self._lock:
                self.refused += 1
            client.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n"
                           b"Connection: close\r\n\r\n")
            client.close()
            return
        server = socket.create_connection(self.target)
        with self._lock:
            self.tunnels += 1
            self._socks.append(server)
        client.settimeout(None)
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        threading.Thread(target=_pipe, args=(client, server), daemon=True).start()
        _pipe(server, client)

    def close(self) -> None:
        self.listener.close()
        with self._lock:
            _kill(*self._socks)
            self._socks.clear()


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    while True:
        try:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
        except OSError:
            break
    _kill(src, dst)
