"""The decision log: one structured line per scheduling attempt and per bind (logger
``policyscheduler.decisions``; :mod:`policyscheduler.kube.logs` writes them as JSON, buffered)."""

from __future__ import annotations

import logging
from typing import Any

from policyscheduler.cycle import Attempt

__all__ = ["decision_record", "log_decision"]

decisions = logging.getLogger("policyscheduler.decisions")


def log_decision(level: int, msg: str, fields: dict[str, Any]) -> None:
    """``decisions.log(level, msg, extra={"fields": fields})`` without the walk up the stack for the caller's
    file and line, which the JSON line never shows (two lines per pod)."""
    if decisions.isEnabledFor(level):
        decisions.handle(decisions.makeRecord(decisions.name, level, "(unknown file)", 0, msg, (), None,
                                              "(unknown function)", {"fields": fields}))


def decision_record(attempt: Attempt, digest: str) -> dict[str, Any]:
    """The structured log line of one decision (plain data)."""
    decision = attempt.decision
    record: dict[str, Any] = {
        "result": attempt.result,
        "pod": attempt.key,
        "node": attempt.node,
        "attempt": attempt.entry.attempts,
        "policy_digest": (decision.policy_digest if decision is not None else digest)[:12],
        "duration_ms": round(attempt.duration * 1000, 3),
    }
    if decision is not None:
        record["score"] = decision.score
        record["feasible"] = len(decision.feasible)
        record["nodes"] = attempt.nodes
        if decision.node is None:
            record["message"] = decision.message
    if attempt.reused:
        record["reused"] = True
    if attempt.queue:
        record["queue"] = attempt.queue
    if attempt.error:
        record["error"] = attempt.error
    return record
