"""One JSON object per log line (structured logs a cluster's log pipeline can index).

Fields passed as ``extra={"fields": {...}}`` are merged into the line; every line has ``ts`` (RFC 3339,
UTC), ``level``, ``logger`` and ``msg``. Exceptions come as an ``error`` field with the traceback text.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import sys
from typing import TextIO

__all__ = ["JsonFormatter", "configure"]


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


def configure(verbosity: int, stream: TextIO | None = None) -> None:
    """Log to ``stream`` (stderr): decisions and warnings at -v 0, debug details from -v 4."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger("policyscheduler")
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbosity >= 4 else logging.INFO)
    root.propagate = False
