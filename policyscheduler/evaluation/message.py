"""The FailedScheduling text, in kube-scheduler's format (FitError.Error, no preemption suffix).

``0/N nodes are available: <histogram>.`` where the histogram counts every reason of every node's
first failing rule (one node may contribute several, e.g. "Insufficient cpu" and "Insufficient
memory"), formats each as ``"<count> <reason>"`` and sorts those strings *as strings* -- so
"10 x" sorts before "2 y", exactly like kube-scheduler, which users grep for. With no nodes at all the
text is kube-scheduler's ``no nodes available to schedule pods``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

__all__ = ["NO_NODES", "reason_histogram", "failed_scheduling_message", "pod_rejected_message"]

NO_NODES = "no nodes available to schedule pods"


def reason_histogram(reasons: Iterable[str]) -> list[str]:
    """``"<count> <reason>"`` strings for every distinct reason, sorted lexicographically."""
    counts = Counter(reasons)
    return sorted(f"{count} {reason}" for reason, count in counts.items())


def failed_scheduling_message(total_nodes: int, reasons: Iterable[str]) -> str:
    """The message for a pod no node accepts.

    ``reasons`` is the flat list of reasons over all nodes (each node's first failing rule's reasons,
    repeated per node). ``total_nodes`` is the number of nodes in the snapshot, feasible or not.
    """
    if total_nodes == 0:
        return NO_NODES
    histogram = reason_histogram(reasons)
    text = f"0/{total_nodes} nodes are available"
    if histogram:
        return f"{text}: {', '.join(histogram)}."
    return f"{text}."


def pod_rejected_message(total_nodes: int, reasons: Iterable[str]) -> str:
    """The message when a rule rejected the pod itself, before looking at any node.

    kube-scheduler's PreFilter rejection: ``0/N nodes are available: <reasons>.`` with the reasons
    joined by ", " and no per-node counts.
    """
    if total_nodes == 0:
        return NO_NODES
    return f"0/{total_nodes} nodes are available: {', '.join(reasons)}."
