"""Placed pods' terms that differ only in a ``NotIn`` requirement's values are answered as a family.

A pod matches ``S and k NotIn V`` exactly when it matches ``S`` and does not carry ``k`` with a value
in ``V``; so the state offers one stand-in term ``S`` with the members' summed counts, plus, for each
member whose ``V`` holds the pod's value of ``k``, a stand-in ``S and k In V`` with that member's counts
negated (indexes.TermIndex). The answers must equal the walk over the node records however the
members overlap (several values, shared values, pods without the label, two topology keys), as pods
carrying them come and go, and the memoised sums must follow; the number of candidates must not grow
with the members.
"""

from __future__ import annotations

import random
from typing import Any

from policyscheduler.objects import affinity, topology
from policyscheduler.objects.affinity import FilterState, IndexedFilterState, IndexedScoreState, ScoreState
from policyscheduler.state import ClusterSnapshot

Obj = dict[str, Any]
HOST, ZONE = topology.HOSTNAME, topology.ZONE
RELEASES = ("r0", "r1", "r2", "r3")


def _node(i: int) -> Obj:
    return {"kind": "Node", "metadata": {"name": f"n{i}", "labels": {HOST: f"n{i}", ZONE: f"z{i % 2}"}},
            "status": {"allocatable": {"cpu": "64", "memory": "64Gi", "pods": "500"}}}


def _selector(left_out: list[str], tier: bool) -> Obj:
    exprs: list[Obj] = [{"key": "release", "operator": "NotIn", "values": left_out}]
    if tier:
        exprs.insert(0, {"key": "tier", "operator": "In", "values": ["front"]})
    return {"matchExpressions": exprs}


def _placed(rng: random.Random, i: int) -> Obj:
    left_out = rng.sample(RELEASES, rng.choice((1, 1, 2)))
    term = {"topologyKey": rng.choice((HOST, ZONE)), "labelSelector": _selector(left_out, rng.random() < 0.7)}
    affinity: Obj
    if rng.random() < 0.25:
        affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    else:
        kind = rng.choice(("podAffinity", "podAntiAffinity"))
        affinity = {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": rng.randint(1, 100), "podAffinityTerm": term}]}}
    return {"kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "default", "uid": f"uid-p{i}",
                                        "labels": {"tier": "front", "release": rng.choice(RELEASES)}},
            "spec": {"nodeName": f"n{rng.randrange(5)}", "affinity": affinity,
                     "containers": [{"name": "c", "image": "img"}]}}


def _incoming(release: str | None, tier: str) -> Obj:
    labels = {"tier": tier} if release is None else {"tier": tier, "release": release}
    return {"kind": "Pod", "metadata": {"name": f"in-{release}-{tier}", "namespace": "default",
                                        "uid": f"uid-in-{release}-{tier}", "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "img"}]}}


def _check(snap: ClusterSnapshot) -> int:
    nodes, ns_labels, index = snap.nodes, snap.namespace_labels, snap.state
    counted = 0
    for release in (*RELEASES, None):
        for tier in ("front", "back"):
            pod = snap.pod_record(_incoming(release, tier))
            for _ in range(2):  # the second time from the memo
                plain, indexed = ScoreState(pod, nodes, ns_labels), IndexedScoreState(pod, nodes, ns_labels, index)
                assert indexed.maps() == plain.maps(), (release, tier)
                for name in ScoreState.MAPS:
                    want = [affinity.lookup(getattr(plain, name), node) for node in nodes]
                    assert indexed.column(name, len(nodes)).tolist() == want, (release, tier, name)
                plain_f = FilterState(pod, nodes, ns_labels)
                indexed_f = IndexedFilterState(pod, nodes, ns_labels, index)
                assert indexed_f.maps() == plain_f.maps(), (release, tier)
            counted += sum(bool(m) for m in plain.maps().values()) + bool(plain_f.existing_anti)
    return counted


def test_families_equal_the_walk_while_members_come_and_go() -> None:
    rng = random.Random(3)
    snap = ClusterSnapshot.from_objects([*(_node(i) for i in range(5)), *(_placed(rng, i) for i in range(30))])
    counted = _check(snap)
    for step in range(30):
        if rng.random() < 0.5:
            snap.add_pod(_placed(rng, 100 + step))
        else:
            victim = rng.choice([n for n in snap.nodes if n.pods])
            snap.state.remove_pod(rng.choice(victim.pods).uid)
        counted += _check(snap)
    for node in snap.nodes:  # every member leaves: the families go too
        for pod in node.pods:
            snap.state.remove_pod(pod.uid)
    _check(snap)
    terms = snap.state._terms
    assert terms is not None
    assert all(not families for families in terms._families)
    assert counted > 100  # the answers compared were not all empty


def test_candidates_do_not_grow_with_the_members() -> None:
    rng = random.Random(4)
    snap = ClusterSnapshot.from_objects([*(_node(i) for i in range(5)), *(_placed(rng, i) for i in range(200))])
    _check(snap)
    kinds = {2: "preferred_affinity_terms", 3: "preferred_anti_affinity_terms", 0: "required_anti_affinity_terms"}
    for kind, field in kinds.items():
        members = {t if kind == 0 else t.term for n in snap.nodes for p in n.pods for t in getattr(p, field)}
        families = {(t.topology_key, len(t._selector.requirements)) for t in members}
        assert len(members) > 2 * len(families), kind  # families have many members here
        # a release no member leaves out: one stand-in per family, whatever the number of members
        assert len(snap.state.existing_terms(kind, {"tier": "front", "release": "r9"}, "default")) == len(families)
        # r0: and one per member leaving r0 out
        leaving_r0 = [t for t in members if any("r0" in r.values for r in t._selector.requirements
                                                if r.operator == "NotIn")]
        found = snap.state.existing_terms(kind, {"tier": "front", "release": "r0"}, "default")
        assert len(found) == len(families) + len(leaving_r0), kind
