"""Run ``logs.configure`` in-process for a test and put the logging state back afterwards."""

from __future__ import annotations

import io
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from policyscheduler.kube import logs


@contextmanager
def configured_logs(verbosity: int = 0) -> Iterator[io.StringIO]:
    """``logs.configure(verbosity, stream)``; the stream. On exit the ``policyscheduler`` logger's handlers,
    level and propagation, ``sys.excepthook`` and logging's record flags are as they were."""
    root = logging.getLogger("policyscheduler")
    saved = (root.handlers[:], root.level, root.propagate, sys.excepthook)
    flags = (logging.logThreads, logging.logProcesses, logging.logMultiprocessing)
    stream = io.StringIO()
    logs.configure(verbosity, stream)
    try:
        yield stream
    finally:
        for handler in root.handlers:
            handler.close()
        root.handlers[:], level, root.propagate, sys.excepthook = saved
        root.setLevel(level)
        logging.logThreads, logging.logProcesses, logging.logMultiprocessing = flags
