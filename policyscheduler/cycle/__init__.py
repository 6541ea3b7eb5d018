"""The scheduling cycle: one queue and one ``schedule_one``, shared by ``simulate`` and ``run``.

* :mod:`.queue`: active / backoff / unschedulable / gated, kube-scheduler's rules, a clock parameter.
* :mod:`.gates`: PreEnqueue -- scheduling gates keep a pod in the gated pool, never decided.
* :mod:`.cache`: watch events in, one cluster snapshot view per cycle out (assume / forget).
* :mod:`.schedule`: pop -> evaluate -> assume -> binder, or back to the queue with the message.
* :mod:`.preemption`: PostFilter -- DefaultPreemption's candidates, victims and node, nominated pods.

Nothing here talks to the API server (that is :mod:`policyscheduler.kube`), so every rule of the
cycle is tested in-process with a controlled clock.
"""

from __future__ import annotations

from policyscheduler.cycle.cache import ClusterCache, is_placed, object_key
from policyscheduler.cycle.queue import QUEUES, QueuedPod, SchedulingQueue, pod_priority, priority_order
from policyscheduler.cycle.schedule import ERROR, SCHEDULED, SKIPPED, UNSCHEDULABLE, Attempt, Cycle

__all__ = [
    "Attempt",
    "ClusterCache",
    "Cycle",
    "ERROR",
    "QUEUES",
    "QueuedPod",
    "SCHEDULED",
    "SKIPPED",
    "SchedulingQueue",
    "UNSCHEDULABLE",
    "is_placed",
    "object_key",
    "pod_priority",
    "priority_order",
]
