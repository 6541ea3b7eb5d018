"""Which pods are pending, and in which order the simulator tries them.

kube-scheduler's PrioritySort pops the pod with the highest ``spec.priority`` first, then the one
queued earliest. A snapshot has no queue timestamps, so the pod's ``metadata.creationTimestamp``
stands in for them, and the order of the pods in the input breaks the remaining ties, which keeps
the order total and stable. Rules:

* priority: ``spec.priority`` (:func:`policyscheduler.kobjects.priority`: missing or malformed counts as 0);
* timestamp: compared as parsed RFC 3339 instants; a pod **without** a (parsable) creationTimestamp
  sorts **before** every pod that has one -- it is treated as the oldest, as if created before the
  snapshot's history began;
* then input order.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from typing import Any

from policyscheduler import kobjects

__all__ = ["is_pending", "queue_order", "creation_instant"]


def is_pending(obj: dict[str, Any]) -> bool:
    """A Pod waiting for a node (:func:`policyscheduler.kobjects.is_pending`: no ``spec.nodeName``, not
    finished, not being deleted); other kinds never are."""
    return obj.get("kind") == "Pod" and kobjects.is_pending(obj)


def creation_instant(pod: dict[str, Any]) -> float | None:
    """``metadata.creationTimestamp`` as POSIX seconds, or None when missing or unparsable."""
    stamp = (pod.get("metadata") or {}).get("creationTimestamp")
    if isinstance(stamp, _dt.datetime):
        moment = stamp
    elif isinstance(stamp, str) and stamp:
        try:
            moment = _dt.datetime.fromisoformat(stamp.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            return None
    else:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.UTC)
    return moment.timestamp()


def queue_order(pods: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``pods`` sorted by (higher priority, earlier creation, input order)."""

    def key(item: tuple[int, dict[str, Any]]) -> tuple[int, int, float, int]:
        index, pod = item
        instant = creation_instant(pod)
        return (-kobjects.priority(pod), 0 if instant is None else 1, instant or 0.0, index)

    return [pod for _, pod in sorted(enumerate(pods), key=key)]
