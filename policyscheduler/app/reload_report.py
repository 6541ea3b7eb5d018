"""How a policy reload is reported where operators look: a log line, metrics, and (leader only) an Event.

* log (logger ``policyscheduler.policies``): ``policies reloaded`` / ``policy reload failed`` (with the
  diagnostics) / ``policy source missing``, each with the digest in force and the ``profile``;
* metrics ``policyscheduler_policy_reloads_total{result,profile}`` and
  ``policyscheduler_policy_last_reload_successful{profile}``;
* events.k8s.io/v1 Events regarding the ConfigMap (or, for ``--policies`` alone, the scheduler's own Pod
  when ``POD_NAME``/``POD_NAMESPACE`` are set through the downward API): Normal ``PoliciesLoaded``, Warning
  ``PolicyLoadFailed`` with the first diagnostics (:func:`reload_note`, cut to the 1 KiB note limit),
  Warning ``PolicySourceMissing``; posted by the profile's own recorder.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from policyscheduler.app.host import SchedulerHost
from policyscheduler.kube.events import NOTE_LIMIT
from policyscheduler.reload import Outcome, format_diagnostics

__all__ = ["ReloadReporter", "reload_note"]

log = logging.getLogger("policyscheduler.policies")


def reload_note(outcome: Outcome, source: str, limit: int = NOTE_LIMIT) -> str:
    """The event note of a reload outcome (whole diagnostic lines while they fit in ``limit``)."""
    if outcome.result == "success":
        if outcome.changed:
            note = (f"policy set {outcome.digest[:12]} in force (was {outcome.previous[:12]}): {outcome.rules} rules "
                    f"from {source}")
            if outcome.requeued:
                note += f"; {outcome.requeued} unschedulable pod(s) retried"
            return note
        return f"policies from {source} load again; policy set {outcome.digest[:12]} stays in force"
    if outcome.result == "missing":
        return f"{source} is gone; keeping policy set {outcome.digest[:12]} until it is back"
    errors = outcome.errors
    head = (f"{source} not loaded ({len(errors)} error{'s' if len(errors) != 1 else ''}); "
            f"keeping policy set {outcome.digest[:12]}:")
    lines = [head]
    used = len(head)
    for line in format_diagnostics(outcome.diagnostics):
        if used + 1 + len(line) > limit - 4:
            if len(lines) == 1:  # not even one line fits: cut it
                lines.append(line[: max(0, limit - used - 5)])
            lines.append("...")
            break
        lines.append(line)
        used += 1 + len(line)
    return "\n".join(lines)[:limit]


def own_pod() -> dict[str, Any] | None:
    """The scheduler's own Pod (downward API ``POD_NAME``/``POD_NAMESPACE``), or None outside a Pod."""
    name, namespace = os.environ.get("POD_NAME"), os.environ.get("POD_NAMESPACE")
    if name and namespace:
        return {"apiVersion": "v1", "kind": "Pod", "namespace": namespace, "name": name}
    return None


class ReloadReporter:
    """Reports every reload outcome of one profile's sources.

    ``source``: the sources' description (log field, note); ``ref()``: the ConfigMap's ``ns/name`` (``-``
    without one); ``regarding()``: what the events regard, None for the scheduler's own Pod.
    """

    def __init__(self, scheduler: SchedulerHost, profile: str, source: str, ref: Callable[[], str],
                 regarding: Callable[[], dict[str, Any] | None]) -> None:
        self.scheduler = scheduler
        self.profile = profile
        self.source = source
        self._ref = ref
        self._regarding = regarding

    def report(self, outcome: Outcome) -> None:
        """Log, count and (leader only, when there is something to regard) post an event for ``outcome``."""
        scheduler = self.scheduler
        source = self.source
        fields: dict[str, Any] = {"policy_digest": outcome.digest[:12], "trigger": outcome.trigger, "source": source,
                                  "profile": self.profile}
        metrics = scheduler.metrics
        if outcome.result == "success":
            metrics.policy_reloads.labels("success", self.profile).inc()
            metrics.reload_ok[self.profile] = True
            fields.update(previous_digest=outcome.previous[:12], rules=outcome.rules, requeued=outcome.requeued,
                          load_ms=round(outcome.seconds * 1000, 1))
            if outcome.changed or outcome.notify:
                msg = ("policies reloaded" if outcome.changed else
                       "policies load again" if outcome.recovered else "policies unchanged")
                log.info(msg, extra={"fields": fields})
            else:
                log.debug("policies unchanged", extra={"fields": fields})
        elif outcome.result == "error":
            metrics.policy_reloads.labels("error", self.profile).inc()
            metrics.reload_ok[self.profile] = False
            fields["errors"] = format_diagnostics(outcome.errors, 10)
            fields["error_count"] = len(outcome.errors)
            log.error("policy reload failed; keeping the running set", extra={"fields": fields})
        else:
            metrics.reload_ok[self.profile] = False
            if outcome.notify:
                log.warning("policy source missing; keeping the running set", extra={"fields": fields})
        if not outcome.notify or not scheduler.leading:
            return
        regarding = self._regarding() or own_pod()
        if regarding is None:
            return
        note = reload_note(outcome, f"ConfigMap {self._ref()}" if outcome.result == "missing" else source)
        recorder = scheduler.recorders.get(self.profile, scheduler.recorder)
        if outcome.result == "success":
            recorder.object_event(regarding, "Normal", "PoliciesLoaded", "Reload", note)
        elif outcome.result == "error":
            recorder.object_event(regarding, "Warning", "PolicyLoadFailed", "Reload", note)
        else:
            recorder.object_event(regarding, "Warning", "PolicySourceMissing", "Reload", note)
