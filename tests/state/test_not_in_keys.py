"""Counts of a key with a ``NotIn`` requirement come from two keys without it (indexes._split_not_in).

``k NotIn V`` fails exactly when ``k In V`` holds, so the count of ``S and k NotIn V`` is the count of
``S`` less that of ``S and k In V``; the state answers such keys that way and caches no array of their
own. The answers must equal the walk over the node records for every shape: ``NotIn`` alone, beside
other requirements, twice in a selector, with several values, in the second clause of a multi-clause
key, for pods without the label, for live-only keys with terminating pods -- before and after pods
come and go.
"""

from __future__ import annotations

import random
from typing import Any

from policyscheduler.objects.selectors import Requirement, Selector
from policyscheduler.objects.topology import HOSTNAME, ZONE, MatchKey, match_key_matches
from policyscheduler.state import ClusterSnapshot, indexes

Obj = dict[str, Any]
TIERS = ("front", "back", None)
RELEASES = ("r0", "r1", "r2", None)


def _node(i: int) -> Obj:
    return {"kind": "Node", "metadata": {"name": f"n{i}", "labels": {HOSTNAME: f"n{i}", ZONE: f"z{i % 3}"}},
            "status": {"allocatable": {"cpu": "64", "memory": "64Gi", "pods": "500"}}}


def _pod(rng: random.Random, i: int) -> Obj:
    labels = {}
    for key, values in (("tier", TIERS), ("release", RELEASES)):
        value = rng.choice(values)
        if value is not None:
            labels[key] = value
    meta: Obj = {"name": f"p{i}", "namespace": rng.choice(("a", "b")), "uid": f"uid-p{i}", "labels": labels}
    if rng.random() < 0.2:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return {"kind": "Pod", "metadata": meta,
            "spec": {"nodeName": f"n{rng.randrange(6)}", "containers": [{"name": "c", "image": "img"}]}}


def _req(key: str, op: str, *values: str) -> Requirement:
    return Requirement(key, op, frozenset(values))


def _keys() -> list[MatchKey]:
    a, ab = frozenset(["a"]), frozenset(["a", "b"])
    front = _req("tier", "In", "front")
    not_r0 = _req("release", "NotIn", "r0")
    return [
        (False, ((a, None, Selector((not_r0,))),)),
        (True, ((ab, None, Selector((front, not_r0))),)),
        (False, ((ab, None, Selector((_req("tier", "NotIn", "back"), _req("release", "NotIn", "r1", "r2")))),)),
        (True, ((a, None, Selector((_req("release", "Exists"),))), (ab, None, Selector((front, not_r0))))),
        (False, ((ab, Selector(()), Selector((not_r0, _req("tier", "Exists")))),)),
    ]


def _brute(snap: ClusterSnapshot, key: MatchKey) -> list[int]:
    return [sum(1 for p in n.pods if match_key_matches(key, p, snap.namespace_labels)) for n in snap.nodes]


def _check(snap: ClusterSnapshot) -> None:
    state = snap.state
    for key in _keys():
        want = _brute(snap, key)
        assert state.match_counts(key).tolist() == want, key
        for topology_key in (ZONE, HOSTNAME):
            codes = state.label_codes(topology_key)
            per_domain = [0] * (len(codes.values) + 1)
            for slot, count in enumerate(want):
                per_domain[int(codes.filled[slot])] += count
            assert state.match_totals(key, codes).tolist() == per_domain, (key, topology_key)


def test_not_in_keys_equal_the_walk_while_pods_come_and_go() -> None:
    rng = random.Random(5)
    snap = ClusterSnapshot.from_objects([*(_node(i) for i in range(6)), *(_pod(rng, i) for i in range(40))])
    _check(snap)
    for step in range(40):
        if rng.random() < 0.5:
            snap.add_pod(_pod(rng, 100 + step))
        else:
            victim = rng.choice([n for n in snap.nodes if n.pods])
            snap.state.remove_pod(rng.choice(victim.pods).uid)
        _check(snap)


def test_not_in_keys_cache_no_array_of_their_own() -> None:
    rng = random.Random(6)
    snap = ClusterSnapshot.from_objects([*(_node(i) for i in range(6)), *(_pod(rng, i) for i in range(40))])
    _check(snap)
    cached = snap.state._counts._entries
    assert cached, "the keys without NotIn are cached"
    assert not any(r.operator == "NotIn" for _, clauses in cached for _, _, sel in clauses for r in sel.requirements)
    for key in _keys():
        split = indexes._split_not_in(key)
        assert split is not None, key
        # the In key is found by the left-out requirement's own label pair, not by the rest's
        left_out = next(r for _, _, sel in key[1] for r in sel.requirements if r.operator == "NotIn")
        assert sorted(indexes._key_trigger(split[1]) or []) == sorted((left_out.key, v) for v in left_out.values)
