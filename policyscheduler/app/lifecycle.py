"""Running the live scheduler until it is told to stop: signals, the ``started`` and ``shutdown: ...`` log
lines and the exit status.

SIGTERM/SIGINT: stop taking pods, finish in-flight binds, post held-back events, release the lease -- all
within :data:`~policyscheduler.app.handover.SHUTDOWN_BUDGET` (4 s) whatever the API server does
(:mod:`.handover`); the last log line says what was dropped. Exit 0 after a clean hand-over, 3 when the
budget ran out first (binds or events dropped, or the lease not released: a standby then waits out the lease
duration). A lost lease (no renewal within the renew deadline, also while the API server is unreachable):
scheduling stops at once and the process exits 1, as kube-scheduler does (``Leaderelection lost``,
``klog.FlushAndExit(..., 1)``); its Deployment restarts it as a candidate. SIGHUP: every profile's policy
sources load again now. Exit 2 when it could not start (:mod:`.startup` says why).

``exit_process``: the command line ends the process with :func:`os._exit` once the last line is written, so
a thread stuck in a request to an unresponsive server (an event writer, a watch) cannot hold the exit.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from typing import TextIO

from policyscheduler.app.handover import LOST_LEASE_BUDGET, SHUTDOWN_BUDGET, hand_over
from policyscheduler.app.options import RunSettings
from policyscheduler.app.startup import start_scheduler
from policyscheduler.kube.logs import flush as flush_logs

__all__ = ["EXIT_INCOMPLETE", "EXIT_LOST_LEASE", "EXIT_OK", "EXIT_USAGE", "run"]

EXIT_OK = 0
EXIT_LOST_LEASE = 1
EXIT_USAGE = 2
EXIT_INCOMPLETE = 3
"""SIGTERM, but the hand-over did not complete within the budget (the last log line says what was dropped)."""

log = logging.getLogger("policyscheduler.run")


def run(settings: RunSettings, err: TextIO, *, ready: threading.Event | None = None,
        exit_process: bool = False) -> int:
    """Start, then block until SIGTERM/SIGINT or a lost lease; the exit status. ``ready`` is set once the
    scheduler runs (its threads started, the ``started`` line logged); ``exit_process``: see the module
    docstring."""
    status = _run(settings, err, ready)
    if exit_process and status != EXIT_USAGE:
        for stream in (sys.stdout, sys.stderr, err):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(status)
    return status


def _run(settings: RunSettings, err: TextIO, ready: threading.Event | None) -> int:
    started = start_scheduler(settings, err)
    if started is None:
        return EXIT_USAGE
    scheduler, options, sources = started.scheduler, settings.options, started.sources
    first = started.profiles[0]
    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()

    def on_hup(signum: int, frame: object) -> None:
        for each in sources.values():
            each.reload("SIGHUP")

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    previous[signal.SIGHUP] = signal.signal(signal.SIGHUP, on_hup)
    try:
        scheduler.start()
        address = scheduler.server.address if scheduler.server is not None else None
        limiter = started.client.limiter
        log.info("started", extra={"fields": {
            "scheduler_name": options.scheduler_name, "policy_digest": first.policy_set.digest[:12],
            "engine": started.engine, "rules": len(first.policy_set.filters) + len(first.policy_set.scores),
            "policy_sources": sources[first.name].description, "server": started.connection.server,
            "status_address": f"{address[0]!s}:{address[1]}" if address else None,
            "leader_elect": options.leader_elect, "lease_name": scheduler.lease_name,
            "kube_api_qps": settings.qps, "kube_api_burst": limiter.burst if limiter is not None else None,
            "profiles": [{"name": p.name, "mode": "shadow" if p.shadows else "schedule", "shadows": p.shadows,
                          "policy_digest": p.policy_set.digest[:12], "policy_sources": sources[p.name].description}
                         for p in started.profiles]}})
        if ready is not None:
            ready.set()
        while not stop.wait(0.2):
            if scheduler.wait(0):
                break  # lost the lease
        lost = scheduler.exit_code == EXIT_LOST_LEASE
        if not lost:
            log.info("stopping: finishing in-flight binds and events, releasing the lease")
        result = hand_over(scheduler, budget=LOST_LEASE_BUDGET if lost else SHUTDOWN_BUDGET, release=not lost)
        status = EXIT_LOST_LEASE if lost else EXIT_OK if result.clean else EXIT_INCOMPLETE
        fields = {"reason": "leaderelection lost" if lost else "signal", "exit_code": status,
                  "binds_not_sent": result.binds_not_sent, "events_not_sent": result.events_not_sent,
                  "lease_released": result.released, "seconds": round(result.seconds, 2),
                  "scheduled": scheduler.scheduled, "binds": dict(scheduler.binder.counts)}
        log.log(logging.INFO if result.clean else logging.WARNING, result.summary(), extra={"fields": fields})
        return status
    finally:
        flush_logs()  # buffered decision lines (kube/logs.py) are written before run() returns
        for sig, handler in previous.items():
            signal.signal(sig, handler)
