"""What-if views: the cluster with some pods taken away, or with some pods added, for one evaluation.

Preemption asks "would the pod fit on this node if these pods were gone?" many times per attempt (all
lower-priority pods away, then each one given back), and nominated pods ask "... and with these pods
that are about to land here?". Rebuilding a cluster per question would cost a full snapshot each time;
instead the state itself changes -- the same ``remove_pod`` / ``add_pod`` path a watch event takes, so
every aggregate and index (requests, ports, per-domain match counts) moves exactly -- and changes back
when the view closes. Both backends evaluate through it unchanged: the vector backend sees the touched
slots in the change journal like any other change.

On exit the state holds the same pods, in the same order on each node, as before (the node records
compare equal to the ones before the view); only ``generation`` has grown. Views may nest.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from policyscheduler.objects.records import Pod
from policyscheduler.state.store import ClusterState, pod_key, replace_fields

__all__ = ["pods_added", "pods_removed"]


@contextmanager
def pods_removed(state: ClusterState, keys: Iterable[str]) -> Iterator[list[Pod]]:
    """The state without the pods of ``keys`` (store keys; unknown keys are ignored) while the block
    runs; yields the records taken away."""
    orders: dict[str, list[str]] = {}
    taken: list[Pod] = []
    for key in keys:
        pod = state.pod(key)
        if pod is None:
            continue
        if pod.node_name not in orders:
            orders[pod.node_name] = state.pod_order(pod.node_name)
        state.remove_pod(key)
        taken.append(pod)
    try:
        yield taken
    finally:
        for pod in taken:
            state.add_pod(pod)
        for node, order in orders.items():
            state.restore_pod_order(node, order)


@contextmanager
def pods_added(state: ClusterState, placements: Iterable[tuple[Pod, str]]) -> Iterator[list[Pod]]:
    """The state with each ``(pod, node)`` placed while the block runs (pods already stored are left
    as they are); yields the records added."""
    added: list[Pod] = []
    for pod, node in placements:
        record = replace_fields(pod, node_name=node)
        if state.pod(pod_key(record)) is not None or state.slot_of(node) is None:
            continue
        state.add_pod(record)
        added.append(record)
    try:
        yield added
    finally:
        for record in reversed(added):
            state.remove_pod(pod_key(record))
