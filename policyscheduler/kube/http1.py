"""A minimal HTTP/1.1 client: one ``sendall`` per request, few ``recv`` s per answer, headers parsed by hand.

Why not ``http.client``: the scheduler's throughput is bound by the GIL, and a bind through it cost
~240 us of CPU, most of it in header objects (``putheader``, ``email.feedparser``), ``readline`` per
header line and response wrappers. Every blocking socket call also hands the GIL over, which wakes
and interrupts the other threads. Here a request is one pre-encoded buffer sent at once, and an answer
is read 64 KB at a time and parsed in a handful of ``bytes`` operations.

What it speaks: requests with a ``Content-Length`` body (or none); answers framed by ``Content-Length``,
``Transfer-Encoding: chunked`` or the end of the connection; interim ``1xx`` answers are skipped; several
answers back to back on one connection for a pipelined sender (``Response(pipelined=True)`` keeps the
bytes after its answer in ``decoder.rest``; kube/pipeline.py). What it does not: compression (we never ask
for it), HTTP/2. Bytes that are not HTTP/1.1 raise
:class:`ProtocolError` with what was wrong, never a hang. Through an HTTP proxy (kube/proxies.py chooses
it): a ``CONNECT`` tunnel, then TLS inside it (:func:`open_socket`).
"""

from __future__ import annotations

import re
import select
import socket
import ssl

from policyscheduler.kube.proxies import ProxyRoute

__all__ = ["ChunkedDecoder", "Http1Connection", "LengthDecoder", "ProtocolError", "ProxyRefused", "Response",
           "StaleConnection", "UntilCloseDecoder", "open_socket"]

RECV_SIZE = 64 * 1024
MAX_HEAD = 64 * 1024
"""Longest response head (status line and headers) accepted: a server sending more is not one we talk to."""
MAX_LINE = 4096
"""Longest chunk-size or trailer line accepted."""

_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")
_DIGITS = re.compile(rb"[0-9]{1,18}")


class ProtocolError(Exception):
    """The server's bytes are not HTTP/1.1 as we understand it; the message says what was wrong."""


class StaleConnection(ConnectionError):
    """The connection failed before any byte of the answer arrived: typically a kept-alive connection
    the server closed meanwhile. Only then may an idempotent request be retried on a fresh one."""


class LengthDecoder:
    """A body of ``length`` bytes (``Content-Length``)."""

    __slots__ = ("_left", "done", "rest")

    def __init__(self, length: int) -> None:
        self._left = length
        self.done = length == 0
        self.rest = b""
        """Bytes received after the end of the body (none in a well-behaved exchange)."""

    def feed(self, data: bytes) -> bytes:
        """The body bytes in ``data``."""
        left = self._left
        if len(data) < left:
            self._left = left - len(data)
            return data
        self._left = 0
        self.done = True
        if len(data) > left:
            self.rest = data[left:]
            return data[:left]
        return data

    def feed_eof(self) -> None:
        if not self.done:
            raise ConnectionError(f"the server closed the connection {self._left} bytes before the end of the body")


class UntilCloseDecoder:
    """A body that ends when the server closes the connection (neither length nor chunked)."""

    __slots__ = ("done", "rest")

    def __init__(self) -> None:
        self.done = False
        self.rest = b""

    def feed(self, data: bytes) -> bytes:
        return data

    def feed_eof(self) -> None:
        self.done = True


class ChunkedDecoder:
    """``Transfer-Encoding: chunked``, decoded incrementally: :meth:`feed` takes whatever arrived (any
    split, any number of chunks) and returns the payload bytes complete so far, in one piece.

    Why by hand and in bulk: the API server sends one chunk per watch event, and a reader that makes a
    ``readline`` and a ``read`` per chunk spends more time in framing than in the event's JSON."""

    __slots__ = ("_left", "_pending", "_state", "done", "rest")

    _SIZE, _DATA, _CRLF, _TRAILER, _DONE = range(5)

    def __init__(self) -> None:
        self.done = False
        self.rest = b""
        self._pending = b""  # an incomplete size line, CRLF or trailer line
        self._left = 0  # payload bytes still to come in the current chunk
        self._state = self._SIZE

    def feed(self, data: bytes) -> bytes:
        """The payload in ``data`` (with what was pending); sets :attr:`done` at the last chunk."""
        if self._pending:
            data = self._pending + data
            self._pending = b""
        out: list[bytes] = []
        pos, end = 0, len(data)
        state, left = self._state, self._left
        while pos < end:
            if state == 1:  # _DATA
                stop = pos + left
                if stop >= end:
                    out.append(data[pos:] if pos else data)
                    left -= end - pos
                    pos = end
                    if left == 0:
                        state = 2
                    break
                out.append(data[pos:stop])
                pos, left, state = stop, 0, 2
            elif state == 2:  # _CRLF after the data
                if end - pos < 2:
                    break
                if data[pos:pos + 2] != b"\r\n":
                    raise ProtocolError(f"chunk data not followed by CRLF: {data[pos:pos + 20]!r}")
                pos += 2
                state = 0
            elif state == 0:  # _SIZE line: hex size [; extensions]
                eol = data.find(b"\r\n", pos)
                if eol < 0:
                    if end - pos > MAX_LINE:
                        raise ProtocolError(f"chunk size line longer than {MAX_LINE} bytes")
                    break
                size = data[pos:eol].split(b";", 1)[0].strip(b" \t")
                if not _HEX.fullmatch(size):
                    raise ProtocolError(f"bad chunk size line {data[pos:eol][:40]!r}")
                left = int(size, 16)
                pos = eol + 2
                state = 1 if left else 3
            elif state == 3:  # _TRAILER lines, up to an empty one
                eol = data.find(b"\r\n", pos)
                if eol < 0:
                    if end - pos > MAX_LINE:
                        raise ProtocolError(f"chunked trailer line longer than {MAX_LINE} bytes")
                    break
                empty = eol == pos
                pos = eol + 2
                if empty:
                    state = 4
                    break
            else:
                break
        self._state, self._left = state, left
        if state == 4:
            self.done = True
            self.rest = data[pos:]
        elif pos < end:
            self._pending = data[pos:]
        if len(out) == 1:
            return out[0]
        return b"".join(out)

    def feed_eof(self) -> None:
        if not self.done:
            raise ConnectionError("the server closed the connection in the middle of a chunked body")


Decoder = LengthDecoder | UntilCloseDecoder | ChunkedDecoder


def parse_head(block: bytes) -> tuple[bytes, int, dict[bytes, bytes]]:
    """(version, status, headers with lower-case names) of a response head without its final CRLFCRLF;
    repeated headers are joined with ``, ``."""
    lines = block.split(b"\r\n")
    status_line = lines[0]
    version, _, rest = status_line.partition(b" ")
    code = rest[:3]
    if version not in (b"HTTP/1.1", b"HTTP/1.0") or not code.isdigit() or len(code) != 3 or rest[3:4] not in (b"", b" "):
        raise ProtocolError(f"not an HTTP/1.x status line: {status_line[:80]!r}")
    headers: dict[bytes, bytes] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not name or name[-1:] in (b" ", b"\t") or name[:1] in (b" ", b"\t"):
            raise ProtocolError(f"bad header line {line[:80]!r}")
        key = name.lower()
        value = value.strip(b" \t")
        old = headers.get(key)
        headers[key] = value if old is None else old + b", " + value
    return version, int(code), headers


class Response:
    """One answer being read: :meth:`feed` the bytes as they arrive until it returns True (or
    :meth:`feed_eof` when the server closes); then :attr:`status`, :attr:`headers`, :attr:`body`,
    :attr:`will_close` (the connection must not be reused)."""

    __slots__ = ("_head", "_parts", "body", "decoder", "headers", "pipelined", "received", "status", "will_close")

    def __init__(self, *, pipelined: bool = False) -> None:
        self.pipelined = pipelined
        """Bytes after the answer are the next answer's (kept in ``decoder.rest``), not a reason to drop
        the connection."""
        self.status = 0
        self.headers: dict[bytes, bytes] = {}
        self.body = b""
        self.will_close = False
        self.received = 0
        """Bytes received so far (0: nothing of the answer arrived)."""
        self.decoder: Decoder | None = None
        """Set once the head is complete."""
        self._head = b""
        self._parts: list[bytes] = []

    def feed(self, data: bytes) -> bool:
        """Take the next bytes; True once the answer is complete."""
        self.received += len(data)
        decoder = self.decoder
        if decoder is None:
            if self._head:
                data = self._head + data
            while True:
                end = data.find(b"\r\n\r\n")
                if end < 0:
                    if len(data) > MAX_HEAD:
                        raise ProtocolError(f"response head longer than {MAX_HEAD} bytes")
                    self._head = data
                    return False
                version, status, headers = parse_head(data[:end])
                data = data[end + 4:]
                if not 100 <= status < 200 or status == 101:
                    break
                # an interim answer (100 Continue, 103 Early Hints): the real one follows
            self._head = b""
            self.status, self.headers = status, headers
            decoder = self.decoder = self._framing(version, status, headers)
        payload = decoder.feed(data) if data else b""
        if payload:
            self._parts.append(payload)
        if decoder.done:
            self._finish(decoder)
            return True
        return False

    def feed_eof(self) -> None:
        """The server closed the connection: complete the answer when its framing allows it; otherwise
        :class:`StaleConnection` (nothing arrived) or :class:`ConnectionError` (cut short)."""
        if self.received == 0:
            raise StaleConnection("the server closed the connection without answering")
        if self.decoder is None:
            raise ConnectionError("the server closed the connection in the middle of the response head")
        self.decoder.feed_eof()
        self.will_close = True
        self._finish(self.decoder)

    def take_body(self) -> bytes:
        """The body bytes decoded so far (and forget them): what a stream reader starts with."""
        parts, self._parts = self._parts, []
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def _finish(self, decoder: Decoder) -> None:
        self.body = self.take_body()
        if decoder.rest and not self.pipelined:
            self.will_close = True  # bytes after the answer: nothing we can reuse the connection for

    def _framing(self, version: bytes, status: int, headers: dict[bytes, bytes]) -> Decoder:
        tokens = headers.get(b"connection", b"").lower()
        if b"close" in tokens or (version == b"HTTP/1.0" and b"keep-alive" not in tokens):
            self.will_close = True
        if status in (204, 304):
            return LengthDecoder(0)
        coding = headers.get(b"transfer-encoding")
        if coding is not None:
            if coding.lower().rsplit(b",", 1)[-1].strip() != b"chunked":
                raise ProtocolError(f"unsupported Transfer-Encoding {coding[:40]!r}")
            return ChunkedDecoder()
        length = headers.get(b"content-length")
        if length is not None:
            values = {v.strip() for v in length.split(b",")}
            value = values.pop()
            if values or not _DIGITS.fullmatch(value):
                raise ProtocolError(f"bad Content-Length {length[:40]!r}")
            return LengthDecoder(int(value))
        self.will_close = True
        return UntilCloseDecoder()


def open_socket(host: str, port: int, context: ssl.SSLContext | None, server_hostname: str | None,
                connect_timeout: float, read_timeout: float, proxy: ProxyRoute | None = None) -> socket.socket:
    """A connected socket (TLS when ``context`` is set; ``server_hostname`` names the server for SNI and
    the certificate check, as kubeconfig's ``tls-server-name`` does), with TCP_NODELAY: a request is
    one write, so Nagle's algorithm could only delay it.

    With ``proxy``: the TCP connection goes to the proxy; for TLS it asks for a tunnel to ``host:port``
    (``CONNECT``) and TLS runs inside it; without TLS the caller sends absolute-form requests."""
    sock = socket.create_connection((proxy.host, proxy.port) if proxy else (host, port), connect_timeout)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if proxy is not None and context is not None:
            _connect_tunnel(sock, host, port, proxy)
        if context is not None:
            sock = context.wrap_socket(sock, server_hostname=server_hostname or host)
    except BaseException:
        sock.close()
        raise
    sock.settimeout(read_timeout)
    return sock


class ProxyRefused(ConnectionError):
    """The proxy did not open the tunnel (its status line is in the message)."""


def _connect_tunnel(sock: socket.socket, host: str, port: int, proxy: ProxyRoute) -> None:
    """``CONNECT host:port`` through an HTTP proxy; returns once the proxy answered 2xx."""
    authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    request = f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n"
    if proxy.authorization:
        request += f"Proxy-Authorization: {proxy.authorization}\r\n"
    sock.sendall((request + "\r\n").encode("latin-1"))
    head = b""
    while b"\r\n\r\n" not in head:
        data = sock.recv(4096)
        if not data:
            raise ProxyRefused(f"the proxy {proxy.host}:{proxy.port} ({proxy.source}) closed the connection "
                               f"instead of answering CONNECT {authority}")
        head += data
        if len(head) > MAX_HEAD:
            raise ProtocolError(f"the proxy's answer to CONNECT is longer than {MAX_HEAD} bytes")
    block, _, extra = head.partition(b"\r\n\r\n")
    _, status, _ = parse_head(block)
    if not 200 <= status < 300:
        line = block.split(b"\r\n", 1)[0].decode("latin-1")
        raise ProxyRefused(f"the proxy {proxy.host}:{proxy.port} ({proxy.source}) refused CONNECT {authority}: {line}")
    if extra:
        raise ProtocolError("the proxy sent bytes after its answer to CONNECT, before the TLS handshake")


class Http1Connection:
    """One kept-alive connection: :meth:`exchange` sends a request buffer and reads its answer."""

    __slots__ = ("_poll", "generation", "sock")

    def __init__(self, sock: socket.socket, generation: int = 0) -> None:
        self.sock = sock
        self.generation = generation
        """The pool's TLS generation when it was opened (kube/rest.py: a rotated certificate retires it)."""
        self._poll = select.poll()
        self._poll.register(sock, select.POLLIN)

    def dropped(self) -> bool:
        """True when an idle connection became readable: the server closed it (or sent stray bytes);
        either way a request on it would fail or be misread, so it must not be reused."""
        return bool(self._poll.poll(0))

    def exchange(self, request: bytes) -> Response:
        """Send ``request`` (request line, headers and body in one buffer) and read the whole answer.

        Raises :class:`StaleConnection` when the connection fails before any answer byte arrived,
        other ``OSError`` s (timeouts, resets mid-answer) and :class:`ProtocolError`."""
        sock = self.sock
        response = Response()
        try:
            sock.sendall(request)
        except (ConnectionError, ssl.SSLEOFError, ssl.SSLZeroReturnError) as err:
            raise StaleConnection(f"sending the request failed: {type(err).__name__}: {err}") from err
        recv = sock.recv
        while True:
            try:
                data = recv(RECV_SIZE)
            except (ConnectionError, ssl.SSLEOFError, ssl.SSLZeroReturnError) as err:
                if response.received == 0:
                    raise StaleConnection(f"no answer: {type(err).__name__}: {err}") from err
                raise
            if not data:
                response.feed_eof()
                return response
            if response.feed(data):
                return response

    def close(self) -> None:
        try:
            self._poll.unregister(self.sock)
        except (KeyError, ValueError):
            pass
        self.sock.close()
