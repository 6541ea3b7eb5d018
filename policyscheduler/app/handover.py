"""Stopping a live scheduler within a fixed time, whatever the API server does.

A Deployment gives a terminating pod ``terminationGracePeriodSeconds`` (30 s by default) and then
SIGKILLs it; a rollout waits for the old pod to go. So SIGTERM must end the process in a few seconds
even when the API server is down or accepts connections and never answers. The hand-over runs in
steps, each with its share of the budget (:data:`SHUTDOWN_BUDGET`, measured from the signal):

1. stop taking pods at once (the attempt in hand finishes);
2. wait for in-flight binds (until 40 % of the budget);
3. post the held-back events and condition patches, retrying failed ones at once (until 70 %);
4. release the Lease, when leading, so a standby need not wait it out (until 90 %);
5. stop the watches, the status server and the policy sources without waiting for them.

The steps run on a thread of their own; the caller waits for it until the budget is spent and then
reports what was not done -- ``shutdown: 12 events and 3 binds not sent`` -- whether the thread finished
or is still stuck in a request. Nothing is retried past the budget: what could not be sent is dropped
(a bind not sent leaves its pod pending, the next leader schedules it).

A lost lease uses the same steps with no release (the lease is not ours any more) and a short budget:
like kube-scheduler, the replica stops at once and exits 1.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from policyscheduler.app.scheduler import LiveScheduler

__all__ = ["LOST_LEASE_BUDGET", "SHUTDOWN_BUDGET", "Handover", "hand_over"]

log = logging.getLogger("policyscheduler.run")

SHUTDOWN_BUDGET = 4.0
"""Seconds from SIGTERM to the last log line (the process exits right after: within 5 s in all)."""

LOST_LEASE_BUDGET = 0.5
"""Seconds from a lost lease to the last log line: nothing new starts, and what is in flight gets a moment
at most (kube-scheduler exits at once: another replica may already lead)."""


@dataclasses.dataclass
class Handover:
    """What a bounded shutdown achieved: ``binds_not_sent`` / ``events_not_sent`` were still pending when
    the budget was spent (dropped); ``released``: the Lease was given up (None: not leading, nothing to
    release); ``seconds``: from the start of the shutdown to the report."""

    binds_not_sent: int = 0
    events_not_sent: int = 0
    released: bool | None = None
    seconds: float = 0.0
    finished: bool = False
    """All steps ran to their end within the budget."""

    @property
    def clean(self) -> bool:
        """Nothing dropped and, when leading, the Lease released: exit 0 on SIGTERM."""
        return self.binds_not_sent == 0 and self.events_not_sent == 0 and self.released is not False

    def summary(self) -> str:
        """The last log line's message."""
        if self.clean:
            return "shutdown: clean hand-over"
        text = f"shutdown: {self.events_not_sent} events and {self.binds_not_sent} binds not sent"
        if self.released is False:
            text += "; lease not released"
        return text


def _steps(scheduler: LiveScheduler, start: float, budget: float, release: bool, result: Handover) -> None:
    def until(share: float) -> float:
        return max(0.0, start + budget * share - time.monotonic())

    scheduler.join_loop(until(0.2))
    scheduler.binder.drain(until(0.4))
    for recorder in scheduler.recorders.values():
        recorder.hurry()  # writes backing off after an outage try again now
    for recorder in scheduler.recorders.values():
        recorder.flush(until(0.7))
    while any(recorder.unsent for recorder in scheduler.recorders.values()) and until(0.7) > 0:
        time.sleep(0.02)  # failure events and condition patches still being written
    elector = scheduler.elector
    if elector is not None:
        if release and elector.is_leader:
            result.released = elector.release(timeout=max(0.1, until(0.9)))
        else:
            elector.stop()
    for reflector in scheduler.reflectors:
        reflector.stop()
    if scheduler.server is not None:
        scheduler.server.stop()
    result.finished = True


def hand_over(scheduler: LiveScheduler, *, budget: float = SHUTDOWN_BUDGET, release: bool = True) -> Handover:
    """Stop ``scheduler`` within ``budget`` seconds (see the module docstring); what was not done."""
    start = time.monotonic()
    scheduler.stop_scheduling()
    leading = scheduler.elector is not None and scheduler.elector.is_leader
    result = Handover()
    worker = threading.Thread(target=_steps, args=(scheduler, start, budget, release, result),
                              name="shutdown", daemon=True)
    worker.start()
    worker.join(max(0.0, start + budget - time.monotonic()))
    result.binds_not_sent = scheduler.binder.in_flight
    result.events_not_sent = sum(recorder.unsent for recorder in scheduler.recorders.values())
    if release and leading and result.released is None:
        result.released = False  # still trying when the budget ran out
    for recorder in scheduler.recorders.values():
        recorder.shutdown(wait=False)  # drops the rest; their threads end with the process
    for _, sources in scheduler.sources:
        threading.Thread(target=sources.stop, name="sources-stop", daemon=True).start()
    result.seconds = time.monotonic() - start
    return result
