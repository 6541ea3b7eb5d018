"""Answers the state shares between pods of one app stay exact when the cluster changes between them.

Two pods of one app differ only in a per-pod label (``release``) that no selector reads: the second
reuses what the first built -- the sums of the placed pods' terms they both match (memoised per set of
matched terms) and the per-domain totals of their spread selector (kept up to date per pod change). Each
change between the two pods touches exactly what those answers are made of; after every one the second
pod's answers must equal the from-scratch walk over the node records.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from policyscheduler.objects import affinity, topology
from policyscheduler.state import ClusterSnapshot

Obj = dict[str, Any]
HOST, ZONE = topology.HOSTNAME, topology.ZONE


def _node(name: str, zone: str | None) -> Obj:
    labels = {HOST: name} if zone is None else {HOST: name, ZONE: zone}
    return {"kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}


def _pod(name: str, labels: dict[str, str], node: str | None = None, prefer: str | None = None,
         weight: int = 10) -> Obj:
    spec: Obj = {"containers": [{"name": "c", "image": "img"}]}
    if node is not None:
        spec["nodeName"] = node
    if prefer is not None:  # a preferred affinity term towards app=web by ``prefer``
        spec["affinity"] = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": weight, "podAffinityTerm": {"topologyKey": prefer,
                                                   "labelSelector": {"matchLabels": {"app": "web"}}}}]}}
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                                        "labels": labels}, "spec": spec}


def _web(release: str, node: str | None = None) -> Obj:
    obj = _pod(f"web-{release}", {"app": "web", "tier": "front", "release": release}, node)
    obj["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-rs",
                                           "uid": "rs-web", "controller": True}]
    return obj


def _replica_set(labels: dict[str, str]) -> Obj:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web-rs", "namespace": "default"},
            "spec": {"selector": {"matchLabels": labels}}}


def _service(name: str, selector: dict[str, str]) -> Obj:
    return {"kind": "Service", "metadata": {"name": name, "namespace": "default"}, "spec": {"selector": selector}}


def _cluster() -> ClusterSnapshot:
    objs: list[Obj] = [_node("n0", "z1"), _node("n1", "z1"), _node("n2", "z2"), _node("n3", None)]
    objs += [_service("web", {"app": "web"}), _replica_set({"app": "web"})]
    objs += [_web("old0", "n0"), _web("old1", "n2"), _web("old2", "n3")]
    objs += [_pod("fan0", {"app": "fan"}, "n1", prefer=HOST), _pod("fan1", {"app": "fan"}, "n2", prefer=ZONE, weight=7)]
    return ClusterSnapshot.from_objects(objs)


def _answers(snap: ClusterSnapshot, obj: Obj) -> dict[str, Any]:
    """The indexed answers a context gives the pod (through the state's shared parts)."""
    state = snap.context(snap.pod_record(obj))._state
    n = len(state.nodes)
    state.feasible_mask = np.ones(n, dtype=bool)
    score = state.affinity_score
    assert isinstance(score, affinity.IndexedScoreState)
    spread = state.spread_score
    assert isinstance(spread, topology.IndexedScoreCounts)
    return {"maps": score.maps(), "columns": {name: score.column(name, n).tolist() for name in score.MAPS},
            "zero": {name: (score.is_zero(name), score.is_zero(name)) for name in score.MAPS},  # twice: told once
            "spread": (spread.pairs, [spread.column(c).tolist() for c in state.soft])}


class _Uncached:
    """The state's Services and controllers without its cache of default selectors (made afresh)."""

    def __init__(self, snap: ClusterSnapshot) -> None:
        state = snap.state
        self.replica_sets, self.stateful_sets = state.replica_sets, state.stateful_sets
        self.replication_controllers = state.replication_controllers
        self.service_selectors = state.service_selectors


def _walk(snap: ClusterSnapshot, obj: Obj) -> dict[str, Any]:
    """The same answers from the reference walk over the node records."""
    pod = snap.pod_record(obj)
    nodes = snap.nodes
    score = affinity.ScoreState(pod, nodes, snap.namespace_labels)
    _, soft, require_all = topology.effective_constraints(pod, _Uncached(snap))
    spread = topology.ScoreCounts(pod, soft, nodes, nodes, require_all)
    return {"maps": score.maps(),
            "columns": {name: [affinity.lookup(getattr(score, name), node) for node in nodes] for name in score.MAPS},
            "zero": {name: (not any(v for inner in getattr(score, name).values() for v in inner.values()),) * 2
                     for name in score.MAPS},
            "spread": (spread.pairs, [[spread.count(c, node, pod) for node in nodes] for c in soft])}


CHANGES: dict[str, Callable[[ClusterSnapshot], object]] = {
    "a placed pod of the app (its spread totals)": lambda s: s.assume(_web("new", None), "n1"),
    "a placed pod of the app removed": lambda s: s.state.remove_pod("uid-web-old1"),
    "a placed pod carrying the matched term": lambda s: s.add_pod(_pod("fan2", {"app": "fan"}, "n3", prefer=HOST)),
    "a placed pod carrying it removed": lambda s: s.state.remove_pod("uid-fan0"),
    "a node moved to another zone": lambda s: s.update_node(_node("n1", "z2")),
    "a node added": lambda s: s.add_node(_node("n4", "z3")),
    "a node removed": lambda s: s.remove_node({"kind": "Node", "metadata": {"name": "n0"}}),
    "a Service selecting the pod by its release": lambda s: s.add(_service("r2", {"release": "r2"})),
    "the Service's selector changed": lambda s: s.add(_service("web", {"app": "web", "release": "r2"})),
    "the ReplicaSet's selector changed": lambda s: s.add(_replica_set({"release": "old0"})),
}



@pytest.mark.parametrize("change", list(CHANGES))
def test_the_second_pod_of_an_app_sees_the_change(change: str) -> None:
    snap = _cluster()
    first, second = _web("r1"), _web("r2")
    assert _answers(snap, first) == _walk(snap, first)  # warms the memo and the totals
    assert _answers(snap, second) == _walk(snap, second)
    CHANGES[change](snap)
    want = _walk(snap, second)
    assert _answers(snap, second) == want, change
    assert want != _walk(_cluster(), second), "the change must move an answer, or the test proves nothing"


def test_a_context_keeps_the_sums_of_its_moment_while_the_state_changes_after() -> None:
    """The shared sums are made from per-term sums the state keeps up to date in place: a context made
    before a change (its maps built lazily, after it) still answers for its moment; the next pod sees the change."""
    snap = _cluster()
    first = _web("r1")
    want = _walk(snap, first)
    state = snap.context(snap.pod_record(first))._state
    score = state.affinity_score  # the sums made (nothing read of them yet)
    assert isinstance(score, affinity.IndexedScoreState)
    # the matched terms gain a pod each, in domains that already hold one
    snap.add_pod(_pod("fan2", {"app": "fan"}, "n1", prefer=HOST))
    snap.add_pod(_pod("fan3", {"app": "fan"}, "n2", prefer=ZONE, weight=7))
    n = len(state.nodes)
    assert score.maps() == want["maps"]
    assert {name: score.column(name, n).tolist() for name in score.MAPS} == want["columns"]
    second = _web("r2")
    assert _answers(snap, second) == _walk(snap, second) != want


def test_pods_of_one_app_share_the_sums_of_the_terms_they_match() -> None:
    snap = _cluster()
    shared = []
    for release in ("r1", "r2"):
        state = snap.context(snap.pod_record(_web(release)))._state
        score = state.affinity_score
        assert isinstance(score, affinity.IndexedScoreState)
        shared.append(score._sums["existing_preferred"])
    assert shared[0], "the pods match the placed pods' preferred terms"
    assert shared[0] is shared[1]  # memoised: the second pod summed nothing


def test_pods_differing_in_a_label_a_service_reads_get_their_own_default_selector() -> None:
    snap = _cluster()
    snap.add(_service("canary", {"app": "web", "release": "r2"}))
    seen = []
    for release in ("r1", "r2", "r1", "r3", "r2"):
        pod = snap.pod_record(_web(release))
        got = topology.effective_constraints(pod, snap.state)[1][0]._selector
        assert got == topology.effective_constraints(pod, _Uncached(snap))[1][0]._selector, release
        seen.append(got)
    assert seen[0] is seen[2] and seen[1] is seen[4]  # the same values of the labels Services read
    assert seen[3] == seen[0] and seen[1] != seen[0]  # the canary Service selects release r2 only


def test_pods_differing_in_labels_no_service_reads_share_the_default_selector() -> None:
    snap = _cluster()
    got = [topology.effective_constraints(snap.pod_record(_web(r)), snap.state)[1][0]._selector for r in ("r1", "r2")]
    assert got[0] is got[1]


def _zones_cluster(sizes: tuple[int, ...], without: int) -> ClusterSnapshot:
    """Zones of ``sizes`` nodes and ``without`` nodes without a zone, web pods on some of them."""
    names: list[tuple[str, str | None]] = [(f"z{z}n{i}", f"z{z}") for z, size in enumerate(sizes) for i in range(size)]
    names += [(f"x{i}", None) for i in range(without)]
    objs: list[Obj] = [_node(name, zone) for name, zone in names]
    objs += [_service("web", {"app": "web"}), _replica_set({"app": "web"})]
    objs += [_web(f"old{i}", name) for i, (name, _) in enumerate(names) if i % 3 != 1]
    objs.append(_web("twice", names[-1][0]))
    return ClusterSnapshot.from_objects(objs)


@pytest.mark.parametrize(("sizes", "without"), [((2, 3, 3), 3), ((3, 3, 4), 2), ((2, 3), 0)])
def test_spread_score_domains_of_every_feasible_set(sizes: tuple[int, ...], without: int) -> None:
    """The domains the feasible nodes create are told from the domain sizes when fewer nodes failed than
    the smallest domain holds (no pass over the nodes): every feasible set -- failed counts on both sides
    of the smallest zone's size and of the number of nodes without a zone -- gives the walk's domains,
    counts and columns."""
    snap = _zones_cluster(sizes, without)
    nodes = snap.nodes
    pod = snap.pod_record(_web("new"))
    _, soft, require_all = topology.effective_constraints(pod, snap.state)
    assert (snap.state.label_codes(ZONE).smallest, snap.state.label_codes(ZONE).missing) == (min(sizes), without)
    assert [c.topology_key for c in soft] == [HOST, ZONE]
    for bits in range(1, 2 ** len(nodes)):
        feasible = np.array([bool(bits >> i & 1) for i in range(len(nodes))])
        want = topology.ScoreCounts(pod, soft, [n for n, f in zip(nodes, feasible) if f], nodes, require_all)
        got = topology.IndexedScoreCounts(pod, soft, feasible, nodes, require_all, snap.state)
        assert (got.pairs, [got.domains[id(c)] for c in soft]) == (want.pairs, [want.domains[id(c)] for c in soft]), bits
        for c in soft:
            assert got.column(c).tolist() == [want.count(c, node, pod) for node in nodes], bits


def test_shared_sums_of_zero_are_told_zero() -> None:
    """A placed pod's term the web pods match, on a node without the term's topology key, adds to no
    domain: the shared sums are all 0 (and is_zero says so, for both pods of the app, once told); a second
    such pod on a node with the key makes them non-zero for the next pod."""
    snap = _cluster()
    snap.state.remove_pod("uid-fan1")
    snap.add_pod(_pod("fan3", {"app": "fan"}, "n3", prefer=ZONE, weight=7))
    for release in ("r1", "r2"):
        assert _answers(snap, _web(release)) == _walk(snap, _web(release))
        assert _answers(snap, _web(release))["zero"]["existing_preferred"] == (False, False)  # fan0 by hostname
    snap.state.remove_pod("uid-fan0")
    for release in ("r1", "r2"):
        got = _answers(snap, _web(release))
        assert got == _walk(snap, _web(release))
        assert got["zero"]["existing_preferred"] == (True, True)
    snap.add_pod(_pod("fan4", {"app": "fan"}, "n2", prefer=ZONE, weight=3))
    got = _answers(snap, _web("r3"))
    assert got == _walk(snap, _web("r3")) and got["zero"]["existing_preferred"] == (False, False)


def test_pods_of_one_app_share_their_default_constraints() -> None:
    """The default constraints are one tuple per selector value: the pods of an app get the same objects;
    a changed ReplicaSet selector gives new ones over the new selector."""
    snap = _cluster()
    got = [topology.effective_constraints(snap.pod_record(_web(r)), snap.state)[1] for r in ("r1", "r2")]
    assert got[0] is got[1]
    assert [(c.topology_key, c.max_skew) for c in got[0]] == [(HOST, 3), (ZONE, 5)]
    snap.add(_replica_set({"release": "old0"}))
    pod = snap.pod_record(_web("r1"))
    after = topology.effective_constraints(pod, snap.state)[1]
    assert after is not got[0]
    assert [c._selector for c in after] == [c._selector for c in topology.effective_constraints(pod, _Uncached(snap))[1]]
    assert after[0]._selector != got[0][0]._selector
