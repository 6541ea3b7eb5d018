"""Match keys nobody asks for again leave the state's cache early (indexes._PROBATION).

In a cluster of distinct pods most match keys are one incoming pod's own terms: built for its
evaluation, never asked for again, yet every later placement of a pod they may match would test and
update them. A key asked for again after a pod change joins the LRU; the others leave after
``_PROBATION`` newer keys. Counts stay exact either way (an evicted key is rebuilt on demand).
"""

from __future__ import annotations

from typing import Any

from policyscheduler.objects.selectors import Requirement, Selector
from policyscheduler.objects.topology import MatchKey, match_key_matches
from policyscheduler.state import ClusterSnapshot, indexes

Obj = dict[str, Any]


def _node(name: str) -> Obj:
    return {"kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": "64", "memory": "64Gi", "pods": "500"}}}


def _pod(name: str, node: str, release: str) -> Obj:
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                                        "labels": {"tier": "front", "release": release}},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "img"}]}}


def _key(name: str) -> MatchKey:
    """``tier=front, !name`` in ``default``: a distinct key that every placed pod matches."""
    sel = Selector((Requirement("tier", "In", frozenset(["front"])), Requirement(name, "DoesNotExist", frozenset())))
    return (False, ((frozenset(["default"]), None, sel),))


def _brute(snap: ClusterSnapshot, key: MatchKey) -> list[int]:
    return [sum(1 for p in n.pods if match_key_matches(key, p, snap.namespace_labels)) for n in snap.nodes]


def test_one_off_keys_leave_and_keys_asked_again_stay() -> None:
    snap = ClusterSnapshot.from_objects([_node("n0"), _node("n1"), _pod("p0", "n0", "r0")])
    state = snap.state
    counts = state._counts
    kept, twice = _key("kept"), _key("twice")
    assert state.match_counts(kept).tolist() == [1, 0]
    assert state.match_counts(twice).tolist() == [1, 0]
    state.match_counts(twice)  # asked again, but no pod changed since it was built: still on probation
    snap.add_pod(_pod("p1", "n1", "r1"))
    assert state.match_counts(kept).tolist() == [1, 1]  # asked again after a pod change: it joins the LRU
    for i in range(indexes._PROBATION + 1):
        assert state.match_counts(_key(f"once{i}")).tolist() == [1, 1]
    cached = counts._entries
    assert kept in cached  # promoted keys stay
    assert twice not in cached  # reading a key twice for one pod does not keep it
    assert _key("once0") not in cached  # the oldest one-off key left
    assert len(counts) <= indexes._PROBATION + 1
    # a placed pod tests only the cached keys (the evicted ones left the trigger table too)
    assert set(counts._keys.candidates({"tier": "front"}, "default")) == set(cached.values())
    # counts stay exact: the kept key is updated, an evicted one is rebuilt
    snap.add_pod(_pod("p2", "n1", "r2"))
    for key in (kept, twice, _key("once0"), _key("once1")):
        assert state.match_counts(key).tolist() == _brute(snap, key), key
