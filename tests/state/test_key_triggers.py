"""A new match key is built from the groups carrying the rarest label pair one of its ``In``
requirements needs (indexes._fewest_groups), and filed under it.

Any ``In`` requirement of a key finds a superset of the pod groups it matches; the one whose pairs the
fewest groups carry gives the fewest groups to test, and files the key where the fewest placements
test it. The counts must still equal the walk, whichever requirement (in whichever clause) is rarest.
"""

from __future__ import annotations

from typing import Any

from policyscheduler.objects.selectors import Requirement, Selector
from policyscheduler.objects.topology import MatchKey, match_key_matches
from policyscheduler.state import ClusterSnapshot

Obj = dict[str, Any]


def _node(i: int) -> Obj:
    return {"kind": "Node", "metadata": {"name": f"n{i}", "labels": {"kubernetes.io/hostname": f"n{i}"}},
            "status": {"allocatable": {"cpu": "64", "memory": "64Gi", "pods": "500"}}}


def _pod(i: int) -> Obj:
    # one app, a release per pod: the app pair is carried by every group, a release pair by one
    return {"kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "default", "uid": f"uid-p{i}",
                                        "labels": {"app": "web", "release": f"r{i % 10}", "tier": "front"}},
            "spec": {"nodeName": f"n{i % 4}", "containers": [{"name": "c", "image": "img"}]}}


def _in(key: str, *values: str) -> Requirement:
    return Requirement(key, "In", frozenset(values))


def test_keys_are_built_and_filed_by_their_rarest_pair() -> None:
    snap = ClusterSnapshot.from_objects([*(_node(i) for i in range(4)), *(_pod(i) for i in range(40))])
    state = snap.state
    ns = frozenset(["default"])
    keys: list[tuple[MatchKey, list[tuple[str, str]]]] = [
        ((False, ((ns, None, Selector((_in("app", "web"), _in("release", "r3")))),)), [("release", "r3")]),
        ((False, ((ns, None, Selector((_in("app", "web"), _in("release", "r1", "r2")))),)),
         [("release", "r1"), ("release", "r2")]),
        # the rarest requirement in the second clause
        ((True, ((ns, None, Selector((_in("tier", "front"),))), (ns, None, Selector((_in("release", "r4"),))))),
         [("release", "r4")]),
        # no group carries the pair: nothing to test at all
        ((False, ((ns, None, Selector((_in("app", "web"), _in("release", "gone")))),)), [("release", "gone")]),
    ]
    for key, rarest in keys:
        want = [sum(1 for p in n.pods if match_key_matches(key, p, snap.namespace_labels)) for n in snap.nodes]
        assert state.match_counts(key).tolist() == want, key
        assert sorted(state._counts._entries[key].pairs or []) == sorted(rarest), key
    # filed under the rare pair, the keys are updated exactly as pods of that release come and go
    snap.add_pod(_pod(43))  # release r3
    snap.state.remove_pod("uid-p13")  # release r3
    snap.add_pod(_pod(44))  # release r4
    for key, _ in keys:
        want = [sum(1 for p in n.pods if match_key_matches(key, p, snap.namespace_labels)) for n in snap.nodes]
        assert state.match_counts(key).tolist() == want, key
