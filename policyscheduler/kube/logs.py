"""One JSON object per log line (structured logs a cluster's log pipeline can index).

Fields passed as ``extra={"fields": {...}}`` are merged into the line; every line has ``ts`` (RFC 3339,
UTC), ``level``, ``logger`` and ``msg``. Exceptions come as an ``error`` field with the traceback text.

The per-pod decision lines (logger ``policyscheduler.decisions``, below warning) are buffered
(:class:`BufferedStreamHandler`) and written together at most every 0.2 s: the scheduler logs two per pod,
and a ``write`` per line is a system call that hands the GIL to another thread in the middle of the
scheduling loop's work. kube-scheduler's klog buffers too (it flushes every 5 s). Every other line (rare:
start, reloads, watches, warnings) is written at once, after the buffered ones; the scheduler also calls
:func:`flush` when it runs out of pods, so the lines of a burst are out when its last bind is. Nothing is
lost at exit: :func:`logging.shutdown` (run at interpreter exit, also after an unhandled exception)
flushes, and an unhandled exception flushes before its traceback is printed, so the lines stay in order.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import sys
import threading
import time
import types
from typing import Any, TextIO

__all__ = ["JsonFormatter", "BufferedStreamHandler", "BUFFERED_LOGGERS", "configure", "flush"]


BUFFERED_LOGGERS = frozenset({"policyscheduler.decisions"})
"""The loggers whose lines (below warning) wait for the next batch: the per-pod ones."""

_encode = json.JSONEncoder(default=str).encode
"""One encoder for every line (``json.dumps`` with ``default=`` builds a new one per call)."""


class JsonFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__()
        self._second = -1
        self._prefix = ""

    def _timestamp(self, created: float) -> str:
        """RFC 3339 in UTC with milliseconds (``isoformat(timespec="milliseconds")``), the date and time
        formatted once per second: there are two lines per scheduled pod."""
        second = int(created)
        micros = round((created - second) * 1_000_000)  # as datetime.fromtimestamp rounds
        if micros >= 1_000_000 or created < 0:
            return _dt.datetime.fromtimestamp(created, _dt.UTC).isoformat(timespec="milliseconds")
        if second != self._second:
            self._prefix = _dt.datetime.fromtimestamp(second, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
            self._second = second
        return f"{self._prefix}.{micros // 1000:03d}+00:00"

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "ts": self._timestamp(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line.update(fields)
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return _encode(line)


class BufferedStreamHandler(logging.Handler):
    """Collects formatted lines and writes them to ``stream`` in one ``write``: ``interval`` seconds after
    the first line of a batch (a flusher thread sleeps meanwhile: no wake-up per line), at once for records
    at ``flush_level`` or above (a warning is seen now, after the lines before it) and for records of
    loggers not in ``buffered`` (None: every logger is buffered), when ``max_bytes`` are waiting, on
    :meth:`flush` and on :meth:`close` (:func:`logging.shutdown`). After ``close`` every line is written at
    once. A stream that fails to write loses that batch (there is nowhere left to say so)."""

    def __init__(self, stream: TextIO, *, interval: float = 0.2, max_bytes: int = 64 * 1024,
                 flush_level: int = logging.WARNING, buffered: frozenset[str] | None = None) -> None:
        super().__init__()
        self.stream = stream
        self.interval = interval
        self.max_bytes = max_bytes
        self.flush_level = flush_level
        self.buffered = buffered
        self._lines: list[str] = []
        self._size = 0
        self._pending = threading.Event()
        """Set when a batch starts (the buffer turns non-empty): the flusher's one reason to wake."""
        self._closed = False
        self._flusher: threading.Thread | None = None

    def emit(self, record: logging.LogRecord) -> None:
        # Called with the handler's lock held (Handler.handle).
        try:
            line = self.format(record)
        except Exception:  # noqa: BLE001 -- logging's contract (StreamHandler too): a bad record never raises
            self.handleError(record)
            return
        self._lines.append(line)
        self._size += len(line) + 1
        if (record.levelno >= self.flush_level or self._size >= self.max_bytes or self._closed
                or (self.buffered is not None and record.name not in self.buffered)):
            self._write_out()
        elif len(self._lines) == 1:
            if self._flusher is None:
                self._flusher = threading.Thread(target=self._flush_loop, name="log-flusher", daemon=True)
                self._flusher.start()
            self._pending.set()

    def _write_out(self) -> None:
        """Write the buffered lines in one call (the caller holds the lock)."""
        if not self._lines:
            return
        text = "\n".join(self._lines) + "\n"
        self._lines.clear()
        self._size = 0
        self._pending.clear()
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken stream: drop the batch, keep the process going
            pass

    def _flush_loop(self) -> None:
        while True:
            self._pending.wait()
            if self._closed:
                return
            time.sleep(self.interval)  # let the batch grow; other lines do not wake this thread
            self.acquire()
            try:
                if self._closed:
                    return
                self._write_out()
            finally:
                self.release()

    def flush(self) -> None:
        """Write what is buffered now."""
        self.acquire()
        try:
            self._write_out()
        finally:
            self.release()

    def close(self) -> None:
        """Flush and stop the flusher; later lines (during interpreter exit) are written unbuffered."""
        self.acquire()
        try:
            self._write_out()
            self._closed = True
            self._pending.set()  # the flusher sees ``_closed`` and ends
        finally:
            self.release()
        super().close()


def _handlers() -> list[BufferedStreamHandler]:
    return [h for h in logging.getLogger("policyscheduler").handlers if isinstance(h, BufferedStreamHandler)]


def flush() -> None:
    """Write every buffered log line now (e.g. before handing the stream back to a caller)."""
    for handler in _handlers():
        handler.flush()


_previous_excepthook: Any = None


def _flush_then_excepthook(kind: type[BaseException], value: BaseException, tb: types.TracebackType | None) -> None:
    """An unhandled exception: the buffered lines first, then the traceback, in the order they happened."""
    flush()
    (_previous_excepthook or sys.__excepthook__)(kind, value, tb)


def configure(verbosity: int, stream: TextIO | None = None) -> None:
    """Log to ``stream`` (stderr): decisions and warnings at -v 0, debug details from -v 4."""
    global _previous_excepthook
    handler = BufferedStreamHandler(stream or sys.stderr, buffered=BUFFERED_LOGGERS)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger("policyscheduler")
    for old in root.handlers:
        if isinstance(old, BufferedStreamHandler):
            old.close()  # its lines written, its flusher ended
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbosity >= 4 else logging.INFO)
    root.propagate = False
    # The lines show none of the process id, thread and process names that every LogRecord otherwise
    # looks up (a getpid system call and two lookups per line): logging's documented switches to skip them.
    logging.logProcesses = False
    logging.logThreads = False
    logging.logMultiprocessing = False
    if sys.excepthook is not _flush_then_excepthook:
        _previous_excepthook = sys.excepthook
        sys.excepthook = _flush_then_excepthook

