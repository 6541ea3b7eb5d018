"""Running the live scheduler until it is told to stop: signals, the ``started``/``stopped`` log lines and the
exit status.

SIGTERM/SIGINT: stop taking pods, finish in-flight binds, release the lease, exit 0. A lost lease: exit 1 at
once (like kube-scheduler, a replica that cannot renew stops and lets its Deployment restart it). SIGHUP:
every profile's policy sources load again now. Exit 2 when it could not start (:mod:`.startup` says why).
"""

from __future__ import annotations

import logging
import signal
import threading
from typing import TextIO

from policyscheduler.app.options import RunSettings
from policyscheduler.app.startup import start_scheduler
from policyscheduler.kube.logs import flush as flush_logs

__all__ = ["EXIT_LOST_LEASE", "EXIT_OK", "EXIT_USAGE", "run"]

EXIT_OK = 0
EXIT_LOST_LEASE = 1
EXIT_USAGE = 2

log = logging.getLogger("policyscheduler.run")


def run(settings: RunSettings, err: TextIO, *, ready: threading.Event | None = None) -> int:
    """Start, then block until SIGTERM/SIGINT or a lost lease; the exit status. ``ready`` is set once the
    scheduler runs (its threads started, the ``started`` line logged)."""
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
        if scheduler.exit_code == EXIT_LOST_LEASE:
            scheduler.shutdown(bind_timeout=5.0)
            return EXIT_LOST_LEASE
        log.info("stopping: finishing in-flight binds")
        status = scheduler.shutdown()
        log.info("stopped", extra={"fields": {"scheduled": scheduler.scheduled, "binds": scheduler.binder.counts}})
        return status
    finally:
        flush_logs()  # buffered decision lines (kube/logs.py) are written before run() returns
        for sig, handler in previous.items():
            signal.signal(sig, handler)
