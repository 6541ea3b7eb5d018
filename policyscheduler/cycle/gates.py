"""PreEnqueue: scheduling gates keep a pod out of the active queue (kube-scheduler's SchedulingGates).

A pod whose ``spec.schedulingGates`` is not empty is never decided: the queue keeps it in its *gated*
pool (``pending_pods{queue="gated"}``) and the update that removes the last gate moves it to the active
queue at once. This is kube-scheduler v1.35's ``SchedulingGates`` PreEnqueue plugin and its queue:

* the plugin rejects a pod with gates with the status ``waiting for scheduling gates: [a b]`` (Go's
  ``%v`` of the gate names: brackets, space separated) -- :func:`gate_message`; kube-scheduler only logs
  it, at ``-v=4``; we log it (``gated``) once when the pod enters the pool and once when it leaves;
* a gated pod is never attempted, so kube-scheduler never writes a condition or an event for it. The
  ``PodScheduled`` condition such a pod carries (status False, reason :data:`GATED_REASON`, message
  :data:`GATED_CONDITION_MESSAGE`) is written by the **API server** when the pod is created with gates
  (``applySchedulingGatedCondition`` in the pod strategy), for every scheduler alike. We write nothing
  either: the condition stays the API server's, exactly as beside kube-scheduler;
* cluster events never move a gated pod (only the pod's own update can remove a gate), and the
  unschedulable pool's 5-minute flush does not apply to it;
* once ungated it is an ordinary pending pod: never attempted before, so no backoff -- straight to active.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policyscheduler.kobjects import scheduling_gates

__all__ = ["GATED_CONDITION_MESSAGE", "GATED_REASON", "gate_log_fields", "gate_message", "scheduling_gates"]

GATED_REASON = "SchedulingGated"
"""``PodScheduled`` condition reason of a gated pod (``v1.PodReasonSchedulingGated``)."""

GATED_CONDITION_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"
"""The message the API server writes into a gated pod's ``PodScheduled`` condition at creation."""


def gate_message(gates: tuple[str, ...] | list[str]) -> str:
    """kube-scheduler's PreEnqueue status for a gated pod: ``waiting for scheduling gates: [a b]``."""
    return f"waiting for scheduling gates: [{' '.join(gates)}]"


def gate_log_fields(pod: Mapping[str, Any], gates: tuple[str, ...], gated: bool) -> dict[str, Any]:
    """The decision log line of a pod entering (``gated``) or leaving (``ungated``) the gated pool."""
    meta = pod.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    fields: dict[str, Any] = {"result": "gated" if gated else "ungated",
                              "pod": f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}",
                              "queue": "gated" if gated else "active"}
    if gated:
        fields["gates"] = list(gates)
        fields["message"] = gate_message(gates)
    return fields
