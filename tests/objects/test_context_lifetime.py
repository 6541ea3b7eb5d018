"""A per-pod context is freed as soon as nobody holds it, not at the garbage collector's next run.

The context keeps its precomputations (spread counts, inter-pod sums, node masks); a reference cycle
among them would keep every context of a busy scheduler alive until a collection, and the collections
themselves (one every few pods) cost a share of each pod's scheduling time.
"""

from __future__ import annotations

import gc
import weakref
from typing import Any

import numpy as np

from policyscheduler.state import ClusterSnapshot

Obj = dict[str, Any]
ZONE = "topology.kubernetes.io/zone"


def _node(name: str, zone: str) -> Obj:
    return {"kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, ZONE: zone}},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}


def _pod(name: str, node: str | None = None, **spec: Any) -> Obj:
    body: Obj = {"containers": [{"name": "c", "image": "img"}], **spec}
    if node is not None:
        body["nodeName"] = node
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                                        "labels": {"app": "web"}}, "spec": body}


def test_a_context_with_its_precomputations_is_freed_without_a_collection() -> None:
    term = {"topologyKey": ZONE, "labelSelector": {"matchLabels": {"app": "web"}}}
    spread = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "web"}}, "nodeAffinityPolicy": "Honor"},
              {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway",
               "labelSelector": {"matchLabels": {"app": "web"}}}]
    snap = ClusterSnapshot.from_objects([
        _node("n0", "a"), _node("n1", "b"),
        _pod("p0", "n0", affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})])
    incoming = _pod("new", nodeSelector={ZONE: "a"}, topologySpreadConstraints=spread,
                    affinity={"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 3, "podAffinityTerm": term}]}})
    enabled = gc.isenabled()
    gc.disable()
    try:
        cluster = snap.context(snap.pod_record(incoming))
        state = cluster._state
        cluster.set_feasible_mask(np.ones(2, dtype=bool))
        for name in ("included", "spread_filter", "spread_score", "affinity_filter", "affinity_score"):
            assert getattr(state, name) is not None
        state.included(cluster.hard_spread_constraints[0])  # a node mask through the state's cache
        assert cluster.column("spread_count", cluster.hard_spread_constraints[0]).tolist() == [1, 0]
        gone = weakref.ref(state)
        del cluster, state
        assert gone() is None, "a reference cycle keeps the context alive until a collection"
    finally:
        if enabled:
            gc.enable()


def _records(snap: ClusterSnapshot) -> tuple[Any, ...]:
    return tuple(snap.nodes)


def test_a_context_keeps_the_nodes_of_its_moment_while_the_state_changes() -> None:
    """The state lends a context its list of node records (no copy per pod); while a context lives, the
    state changes a copy: each context still sees the records it was made with -- through a pod placed
    (with a later context of the same moment gone), a node added and a node removed -- and its fallback
    precomputations (the index moved on) walk those records."""
    spread = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "web"}}}]
    snap = ClusterSnapshot.from_objects([_node("n0", "a"), _node("n1", "b"), _pod("p0", "n0")])
    incoming = snap.pod_record(_pod("new", topologySpreadConstraints=spread))
    first, seen_first = snap.context(incoming), _records(snap)
    later = snap.context(incoming)  # the same list lent twice; the later borrower goes first
    del later
    snap.assume(_pod("p1", None), "n1")
    second, seen_second = snap.context(incoming), _records(snap)
    assert seen_second != seen_first and tuple(first.nodes) == seen_first
    snap.add(_node("n2", "c"))
    third, seen_third = snap.context(incoming), _records(snap)
    snap.remove({"kind": "Node", "metadata": {"name": "n0"}})
    assert [tuple(cl.nodes) for cl in (first, second, third)] == [seen_first, seen_second, seen_third]
    c = first.hard_spread_constraints[0]
    assert first.column("spread_count", c).tolist() == [1, 0]  # p0 only, from the records it saw
    assert second.column("spread_count", c).tolist() == [1, 1]
    assert third.column("spread_count", c).tolist() == [1, 1, 0]
    del first, second, third
    now = snap.context(incoming)
    assert tuple(now.nodes) == _records(snap) and now.column("spread_count", c).tolist() == [1, 0]
