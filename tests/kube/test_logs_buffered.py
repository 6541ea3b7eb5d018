"""The buffered JSON log handler: one write per batch, warnings at once, nothing lost at exit."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from policyscheduler.kube import logs
from policyscheduler.kube.logs import BufferedStreamHandler, JsonFormatter
from tests.kube.logcapture import configured_logs

REPO = Path(__file__).resolve().parents[2]


class CountingStream(io.StringIO):
    """A text stream that counts its ``write`` calls (each is a system call on stderr)."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


@pytest.fixture
def logger() -> Iterator[logging.Logger]:
    log = logging.getLogger("tests.buffered")
    log.propagate = False
    log.setLevel(logging.DEBUG)
    yield log
    for handler in log.handlers:
        handler.close()
    log.handlers[:] = []


def _handler(logger: logging.Logger, stream: io.StringIO, **kw: Any) -> BufferedStreamHandler:
    handler = BufferedStreamHandler(stream, **kw)
    handler.setFormatter(JsonFormatter())
    logger.handlers[:] = [handler]
    return handler


def _lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_lines_are_batched_into_one_write_and_keep_the_json_format(logger: logging.Logger) -> None:
    stream = CountingStream()
    handler = _handler(logger, stream, interval=60.0)
    for i in range(100):
        logger.info("bound", extra={"fields": {"pod": f"ns/p{i}", "node": "n1", "bind_ms": 1.5}})
    assert stream.writes == 0 and stream.getvalue() == ""
    handler.flush()
    assert stream.writes == 1
    lines = _lines(stream)
    assert [line["pod"] for line in lines] == [f"ns/p{i}" for i in range(100)]
    assert set(lines[0]) == {"ts", "level", "logger", "msg", "pod", "node", "bind_ms"}
    assert (lines[0]["level"], lines[0]["logger"], lines[0]["msg"]) == ("info", "tests.buffered", "bound")
    record = logger.makeRecord("tests.buffered", logging.INFO, "f", 1, "bound", (), None,
                               extra={"fields": {"pod": "ns/p0", "node": "n1", "bind_ms": 1.5}})
    record.created = time.time()
    unbuffered = json.loads(JsonFormatter().format(record))
    assert {k: v for k, v in unbuffered.items() if k != "ts"} == {k: v for k, v in lines[0].items() if k != "ts"}


def test_a_warning_writes_at_once_after_the_lines_before_it(logger: logging.Logger) -> None:
    stream = CountingStream()
    _handler(logger, stream, interval=60.0)
    logger.info("first")
    logger.info("second")
    logger.warning("trouble: %s", "x")
    assert stream.writes == 1
    assert [(line["level"], line["msg"]) for line in _lines(stream)] == [
        ("info", "first"), ("info", "second"), ("warning", "trouble: x")]


def test_the_flusher_writes_a_batch_after_the_interval(logger: logging.Logger) -> None:
    stream = CountingStream()
    _handler(logger, stream, interval=0.05)
    for i in range(20):
        logger.info("line %d", i)
    deadline = time.monotonic() + 5
    while not stream.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(_lines(stream)) == 20
    assert stream.writes == 1  # the whole batch at once, not a write per line
    logger.info("later")
    deadline = time.monotonic() + 5
    while len(_lines(stream)) < 21 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _lines(stream)[-1]["msg"] == "later" and stream.writes == 2


def test_a_full_buffer_is_written(logger: logging.Logger) -> None:
    stream = CountingStream()
    _handler(logger, stream, interval=60.0, max_bytes=4096)
    for i in range(200):
        logger.info("x" * 100, extra={"fields": {"i": i}})
    assert 3 <= stream.writes <= 10  # every ~4 KB, not per line
    assert len(_lines(stream)) >= 200 - 4096 // 100


def test_close_flushes_and_later_lines_are_written_directly(logger: logging.Logger) -> None:
    stream = CountingStream()
    handler = _handler(logger, stream, interval=60.0)
    logger.info("before close")
    handler.close()
    assert [line["msg"] for line in _lines(stream)] == ["before close"]
    logger.info("after close")  # e.g. from another atexit hook: not stranded in a buffer
    assert [line["msg"] for line in _lines(stream)] == ["before close", "after close"]


def test_a_broken_stream_does_not_raise(logger: logging.Logger) -> None:
    stream = io.StringIO()
    handler = _handler(logger, stream, interval=60.0)
    logger.info("lost")
    stream.close()
    handler.flush()  # ValueError from the closed stream is swallowed
    logger.warning("also lost")


def test_configure_installs_the_buffered_handler_and_flush_writes() -> None:
    with configured_logs() as stream:
        logging.getLogger("policyscheduler.decisions").info("scheduled", extra={"fields": {"pod": "a/b"}})
        logging.getLogger("policyscheduler.decisions").debug("hidden at -v 0")
        logs.flush()
        assert [(line["msg"], line["pod"]) for line in _lines(stream)] == [("scheduled", "a/b")]


CHILD = """
import logging, os, signal, sys, threading, time
from policyscheduler.kube.logs import configure
configure(0)
log = logging.getLogger("policyscheduler.decisions")
for i in range(500):
    log.info("bound", extra={"fields": {"pod": f"ns/p{i}"}})
mode = sys.argv[1]
if mode == "exit":
    sys.exit(0)
if mode == "raise":
    raise RuntimeError("boom")
if mode == "thread":  # the process ends while another thread is still logging
    def more():
        for i in range(500, 1000):
            log.info("bound", extra={"fields": {"pod": f"ns/p{i}"}})
    t = threading.Thread(target=more)
    t.start()
    t.join()
    sys.exit(3)
if mode == "sigterm":  # as `policyscheduler run`: a handler that makes the main thread return
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    os.kill(os.getpid(), signal.SIGTERM)
    stop.wait(10)
    log.info("stopped")
"""


@pytest.mark.parametrize(("mode", "status", "count"), [("exit", 0, 500), ("raise", 1, 500), ("thread", 3, 1000),
                                                       ("sigterm", 0, 501)])
def test_nothing_is_lost_when_the_process_ends(mode: str, status: int, count: int) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True, text=True, env=env, timeout=60,
                          check=False)
    assert done.returncode == status, done.stderr[-2000:]
    json_lines = []
    rest = []
    for line in done.stderr.splitlines():
        try:
            json_lines.append(json.loads(line))
        except ValueError:
            rest.append(line)
    assert len(json_lines) == count
    assert [line["pod"] for line in json_lines[:500]] == [f"ns/p{i}" for i in range(500)]
    if mode == "raise":  # the buffered lines come before the traceback
        assert done.stderr.index('"ns/p499"') < done.stderr.index("Traceback")
        assert rest[-1] == "RuntimeError: boom"
    else:
        assert rest == []
