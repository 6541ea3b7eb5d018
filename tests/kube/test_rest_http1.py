"""The HTTP/1.1 response parser and chunked decoder (policyscheduler/kube/http1.py), byte by byte.

The bytes come from the network in any split; every test here feeds each answer in every two-piece
split and one byte at a time, and bad framing must raise a clear error, never wait for more."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from policyscheduler.kube.http1 import (
    ChunkedDecoder,
    Http1Connection,
    ProtocolError,
    Response,
    StaleConnection,
)


def splits(data: bytes) -> Iterator[list[bytes]]:
    """Every two-piece split of ``data``, and one byte at a time."""
    for i in range(len(data) + 1):
        yield [data[:i], data[i:]]
    yield [data[i:i + 1] for i in range(len(data))]


def parse(pieces: list[bytes]) -> Response:
    response = Response()
    for n, piece in enumerate(pieces):
        if response.feed(piece):
            assert not any(pieces[n + 1:]), "complete before the last byte"
            return response
    raise AssertionError("incomplete after every byte")


def test_content_length_in_every_split() -> None:
    raw = (b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 11\r\n"
           b"X-Two: a\r\nx-two:  b \r\n\r\n{\"a\": \"b\"}\n")
    for pieces in splits(raw):
        response = parse(pieces)
        assert (response.status, response.body, response.will_close) == (201, b'{"a": "b"}\n', False)
        assert response.headers[b"content-type"] == b"application/json"
        assert response.headers[b"x-two"] == b"a, b"


def test_chunked_with_extensions_and_trailers_in_every_split() -> None:
    raw = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
           b"5\r\nhello\r\n1;ext=1\r\n \r\nA\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n")
    for pieces in splits(raw):
        response = parse(pieces)
        assert (response.status, response.body, response.will_close) == (200, b"hello 0123456789", False)


def test_interim_answers_are_skipped_and_empty_statuses_have_no_body() -> None:
    raw = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nX: y\r\n\r\n"
    for pieces in splits(raw):
        response = parse(pieces)
        assert (response.status, response.body, response.headers) == (204, b"", {b"x": b"y"})


def test_connection_close_and_http_1_0_are_not_kept() -> None:
    close = parse([b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"])
    old = parse([b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"])
    kept = parse([b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nok"])
    assert (close.will_close, old.will_close, kept.will_close) == (True, True, False)


def test_bytes_after_the_answer_forbid_reuse() -> None:
    response = parse([b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n"])
    assert response.body == b"ok" and response.will_close


def test_a_body_without_framing_ends_with_the_connection() -> None:
    response = Response()
    assert not response.feed(b"HTTP/1.1 200 OK\r\n\r\nsome")
    assert not response.feed(b" body")
    response.feed_eof()
    assert response.body == b"some body" and response.will_close


def test_the_end_of_the_connection_before_or_inside_an_answer() -> None:
    with pytest.raises(StaleConnection):
        Response().feed_eof()  # nothing arrived: a kept connection the server had closed
    for partial in (b"HTTP/1.1 200 OK\r\nContent-Le", b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nabc",
                    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab"):
        response = Response()
        assert not response.feed(partial)
        with pytest.raises(ConnectionError) as info:
            response.feed_eof()
        assert not isinstance(info.value, StaleConnection), partial


@pytest.mark.parametrize(("raw", "message"), [
    (b"HTTP/2 200\r\n\r\n", "status line"),
    (b"ICY 200 OK\r\n\r\n", "status line"),
    (b"HTTP/1.1 2x0 OK\r\n\r\n", "status line"),
    (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "bad header line"),
    (b"HTTP/1.1 200 OK\r\nName : v\r\n\r\n", "bad header line"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "Content-Length"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 1, 2\r\n\r\n", "Content-Length"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", "Transfer-Encoding"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "chunk size"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\n", "chunk size"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n", "chunk size"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n", "CRLF"),
])
def test_bad_framing_is_a_clear_error_in_every_split(raw: bytes, message: str) -> None:
    for pieces in splits(raw):
        response = Response()
        with pytest.raises(ProtocolError, match=message):
            for piece in pieces:
                response.feed(piece)


def test_endless_lines_are_refused_not_waited_for() -> None:
    with pytest.raises(ProtocolError, match="head longer"):
        Response().feed(b"HTTP/1.1 200 OK\r\nX: " + b"a" * 70_000)
    response = Response()
    response.feed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
    with pytest.raises(ProtocolError, match="size line longer"):
        response.feed(b"1" * 5000)


def test_the_chunked_decoder_hands_out_payload_as_it_arrives() -> None:
    """What a watch reader relies on: the payload of partial chunks comes out at once, whole chunks in bulk."""
    decoder = ChunkedDecoder()
    events = b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in (b'{"n":1}\n', b'{"n":2}\n', b'{"n":3}\n'))
    assert decoder.feed(events[:20]) == b'{"n":1}\n{"n"'  # one whole event and the start of the next
    assert decoder.feed(events[20:]) == b':2}\n{"n":3}\n'
    assert not decoder.done
    assert decoder.feed(b"0\r\n\r\nextra") == b"" and decoder.done and decoder.rest == b"extra"


def test_a_connection_reads_an_answer_written_in_pieces() -> None:
    """The socket side: one request buffer goes out whole; an answer written in pieces is read whole."""
    ours, theirs = socket.socketpair()
    received: list[bytes] = []

    def server() -> None:
        received.append(theirs.recv(65536))
        for piece in (b"HTTP/1.1 200 OK\r\nTransfer-", b"Encoding: chunked\r\n\r\n3\r\nabc", b"\r\n0\r\n\r\n"):
            theirs.sendall(piece)
        theirs.close()

    thread = threading.Thread(target=server)
    thread.start()
    conn = Http1Connection(ours)
    try:
        response = conn.exchange(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    finally:
        thread.join()
    assert received == [b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"]
    assert (response.status, response.body) == (200, b"abc")
    assert conn.dropped()  # the server closed it afterwards: the pool must not reuse it
    with pytest.raises(StaleConnection):
        conn.exchange(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")  # nothing comes back: safe to retry a GET
    conn.close()


def test_a_paused_watch_stream_reads_the_events_that_arrived_meanwhile_at_once() -> None:
    """``Stream.pause``: before each read the reader may wait; events sent meanwhile come out of one read
    (one wake-up of the reading thread for several events), and none is lost or reordered."""
    from policyscheduler.kube.rest import Stream

    ours, theirs = socket.socketpair()
    first_read = threading.Event()

    def chunk(n: int) -> bytes:
        line = b'{"type":"MODIFIED","object":{"n":%d}}\n' % n
        return b"%x\r\n%s\r\n" % (len(line), line)

    def server() -> None:
        theirs.sendall(chunk(0))
        first_read.wait(5)
        for n in range(1, 6):  # while the reader pauses, 20 ms apart (an unpaused reader reads them one by one)
            theirs.sendall(chunk(n))
            time.sleep(0.02)
        time.sleep(0.3)
        theirs.sendall(b"0\r\n\r\n")
        theirs.close()

    pauses: list[float] = []

    def pause() -> float:
        pauses.append(time.monotonic())
        if len(pauses) == 2:  # after the first event: let the next five pile up
            first_read.set()
            return 0.3
        return 0.0

    thread = threading.Thread(target=server)
    thread.start()
    stream = Stream(ours, ChunkedDecoder(), b"", "/api/v1/pods")
    stream.pause = pause
    try:
        seen = [event["object"]["n"] for event in stream]
    finally:
        thread.join()
        stream.close()
    assert seen == [0, 1, 2, 3, 4, 5]
    assert 3 <= len(pauses) <= 4  # reads: event 0, the five together, the end (one more if the end came apart)
