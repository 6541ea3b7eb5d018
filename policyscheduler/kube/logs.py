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


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {
            "ts": _dt.datetime.fromtimestamp(record.created, _dt.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line.update(fields)
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def configure(verbosity: int, stream: TextIO | None = None) -> None:
    """Log to ``stream`` (stderr): decisions and warnings at -v 0, debug details from -v 4."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger("policyscheduler")
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbosity >= 4 else logging.INFO)
    root.propagate = False
