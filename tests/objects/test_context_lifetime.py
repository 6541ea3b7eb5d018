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
