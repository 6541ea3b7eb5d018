"""A term joining or leaving the placed pods forgets only the remembered matches it can change.

``TermIndex`` remembers, per read key (the pod's labels as the kind's terms read them), which terms a pod
matched. A new distinct term, or one whose last pod left, used to forget everything the kind remembered;
now it forgets the read keys holding a value every pod it concerns carries (an In requirement's values,
a family member's NotIn values) or a value that became or stopped being mentioned, and keeps the others.
Every test asks the indexed answers of incoming pods right after a change and compares them with the
walk over the node records: a key kept that the change made wrong gives a pod stale terms.
"""

from __future__ import annotations

from typing import Any

from policyscheduler.state import ClusterSnapshot
from tests.state.test_term_recall import _same_as_walk  # the indexed answers, checked against the walk

Obj = dict[str, Any]
HOST = "kubernetes.io/hostname"


def _node(name: str) -> Obj:
    return {"kind": "Node", "metadata": {"name": name, "labels": {HOST: name}},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}


def _placed(name: str, node: str, selector: Obj, *, anti: bool = False) -> Obj:
    term: Obj = {"topologyKey": HOST, "labelSelector": selector}
    if anti:
        affinity: Obj = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    else:
        affinity = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 5, "podAffinityTerm": term}]}}
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                                        "labels": {"role": "x"}},
            "spec": {"nodeName": node, "affinity": affinity, "containers": [{"name": "c", "image": "img"}]}}


def _incoming(name: str, labels: dict[str, str]) -> Obj:
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "img"}]}}


def _not_in(*values: str) -> Obj:
    return {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]},
                                 {"key": "release", "operator": "NotIn", "values": list(values)}]}


def _cluster(*placed: Obj) -> ClusterSnapshot:
    return ClusterSnapshot.from_objects([_node("n0"), _node("n1"), _node("n2"), *placed])


def _remembered(snap: ClusterSnapshot, kind: int) -> int:
    terms = snap.state._terms
    assert terms is not None
    return len(terms._matched[kind])


def test_a_new_term_forgets_the_pods_it_selects_and_keeps_the_others() -> None:
    snap = _cluster(_placed("p0", "n0", {"matchLabels": {"app": "web"}}),
                    _placed("p1", "n1", {"matchLabels": {"app": "api"}}))
    web = _same_as_walk(snap, _incoming("a", {"app": "web", "release": "r1"}))
    api = _same_as_walk(snap, _incoming("b", {"app": "api", "release": "r1"}))
    assert _remembered(snap, 2) == 2
    # a new distinct term on the app key (read already), selecting web: web's key goes, api's stays
    snap.add_pod(_placed("p2", "n2", {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "db"]}]}))
    assert _remembered(snap, 2) == 1
    assert _same_as_walk(snap, _incoming("c", {"app": "web", "release": "r2"})) != web
    assert _same_as_walk(snap, _incoming("d", {"app": "api", "release": "r2"})) == api
    snap.state.remove_pod("uid-p2")  # and back: the web pods lose it again
    assert _same_as_walk(snap, _incoming("e", {"app": "web", "release": "r3"})) == web


def test_a_family_member_forgets_the_pods_carrying_its_values() -> None:
    snap = _cluster(_placed("p0", "n0", _not_in("r1")), _placed("p1", "n1", _not_in("r2", "r9")))
    named = _same_as_walk(snap, _incoming("a", {"app": "web", "release": "r2"}))  # p1 excludes it
    other = _same_as_walk(snap, _incoming("b", {"app": "web", "release": "r5"}))  # no member excludes it
    snap.add_pod(_placed("p2", "n2", _not_in("r2")))  # a member of the same family naming r2 again
    # excluded by p2 too (a key recalled from ``a`` would miss that exclusion and count p2's node)
    assert _same_as_walk(snap, _incoming("c", {"app": "web", "release": "r2"})) == named
    assert _same_as_walk(snap, _incoming("d", {"app": "web", "release": "r5"})) != other  # p2 counts for it
    snap.state.remove_pod("uid-p2")  # the member leaves, the family stays
    assert _same_as_walk(snap, _incoming("e", {"app": "web", "release": "r2"})) == named
    assert _same_as_walk(snap, _incoming("f", {"app": "web", "release": "r5"})) == other


def test_a_term_without_an_in_requirement_forgets_everything() -> None:
    snap = _cluster(_placed("p0", "n0", {"matchLabels": {"app": "web"}}))
    before = _same_as_walk(snap, _incoming("a", {"app": "web", "canary": "y"}))
    snap.add_pod(_placed("p1", "n1", {"matchExpressions": [{"key": "app", "operator": "Exists"}]}))
    assert _same_as_walk(snap, _incoming("b", {"app": "web", "canary": "y"})) != before


def test_required_anti_affinity_terms_of_one_app_and_release_each() -> None:
    """The heterogeneous workload's shape: every placed replica's anti-affinity names its own release;
    a new one forgets only the keys holding that release (none of the incoming pods' keys)."""
    snap = _cluster(_placed("p0", "n0", {"matchLabels": {"app": "web", "release": "r0"}}, anti=True))
    first = _same_as_walk(snap, _incoming("a", {"app": "web", "release": "r7"}))
    for i, node in ((1, "n1"), (2, "n2")):
        kept = _remembered(snap, 0)
        snap.add_pod(_placed(f"p{i}", node, {"matchLabels": {"app": "web", "release": f"r{i}"}}, anti=True))
        assert _remembered(snap, 0) == kept  # no remembered key holds the new release: all stay
        assert _same_as_walk(snap, _incoming(f"b{i}", {"app": "web", "release": "r7"})) == first
        _same_as_walk(snap, _incoming(f"c{i}", {"app": "web", "release": f"r{i}"}))  # the new term's own pods
