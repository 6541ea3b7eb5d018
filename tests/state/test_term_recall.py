"""The terms a pod matched are recalled for the next pod whose labels the terms read alike.

An incoming pod matches the placed pods' distinct terms of each kind; the state remembers which, keyed by
the pod's namespace and its labels *as the terms read them* (the keys their selectors test; a value only
when some requirement names it), while the kind keeps its distinct terms and the namespaces their labels.
Every test here asks the indexed answers of a sequence of incoming pods, each right after the other, and
compares them with the walk over the node records: a key too coarse (a value or the namespace left
out), or a recall that outlives a new term or a namespace relabel, gives a pod another pod's terms.
"""

from __future__ import annotations

from typing import Any

from policyscheduler.objects.affinity import FilterState, IndexedFilterState, IndexedScoreState, ScoreState
from policyscheduler.state import ClusterSnapshot

Obj = dict[str, Any]
HOST = "kubernetes.io/hostname"
SCORE_MAPS = ("existing_required", "existing_preferred", "existing_preferred_anti")


def _node(name: str) -> Obj:
    return {"kind": "Node", "metadata": {"name": name, "labels": {HOST: name}},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}


def _placed(name: str, node: str, selector: Obj, *, anti: bool = False, ns: str = "default", **extra: Any) -> Obj:
    term = {"topologyKey": HOST, "labelSelector": selector, **extra}
    if anti:
        affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    else:
        affinity = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 5, "podAffinityTerm": term}]}}
    return {"kind": "Pod", "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}", "labels": {"role": "x"}},
            "spec": {"nodeName": node, "affinity": affinity, "containers": [{"name": "c", "image": "img"}]}}


def _incoming(name: str, labels: dict[str, str], ns: str = "default") -> Obj:
    return {"kind": "Pod", "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}", "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "img"}]}}


def _namespace(name: str, labels: dict[str, str]) -> Obj:
    return {"kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def _cluster() -> ClusterSnapshot:
    objs: list[Obj] = [_node("n0"), _node("n1"), _node("n2"),
                       _namespace("default", {"team": "a"}), _namespace("other", {"team": "a"})]
    objs.append(_placed("p0", "n0", {"matchLabels": {"app": "web"}}))
    objs.append(_placed("p1", "n1", {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]},
                                                          {"key": "release", "operator": "NotIn", "values": ["r1"]}]}))
    objs.append(_placed("p2", "n2", {"matchExpressions": [{"key": "canary", "operator": "Exists"}]}, anti=True))
    objs.append(_placed("p3", "n1", {"matchLabels": {"app": "web"}}, namespaceSelector={"matchLabels": {"team": "b"}}))
    return ClusterSnapshot.from_objects(objs)


def _same_as_walk(snap: ClusterSnapshot, obj: Obj) -> dict[str, Any]:
    pod = snap.pod_record(obj)
    nodes, ns_labels, index = snap.nodes, snap.namespace_labels, snap.state
    got_s, want_s = IndexedScoreState(pod, nodes, ns_labels, index), ScoreState(pod, nodes, ns_labels)
    got_f, want_f = IndexedFilterState(pod, nodes, ns_labels, index), FilterState(pod, nodes, ns_labels)
    got = {name: getattr(got_s, name) for name in SCORE_MAPS} | {"existing_anti": got_f.existing_anti}
    want = {name: getattr(want_s, name) for name in SCORE_MAPS} | {"existing_anti": want_f.existing_anti}
    assert got == want, obj["metadata"]["name"]
    return got


def test_pods_reading_alike_recall_and_pods_reading_otherwise_do_not() -> None:
    snap = _cluster()
    pods = [_incoming("a", {"app": "web", "release": "r2"}), _incoming("b", {"app": "web", "release": "r3"}),
            _incoming("c", {"app": "web", "release": "r1"}),  # a value a NotIn names
            _incoming("d", {"app": "api", "release": "r2"}),  # a value an In names, another one
            _incoming("e", {"app": "web"}),  # no release: the NotIn passes
            _incoming("f", {"app": "web", "release": "r2", "canary": "y"}),  # a key an Exists reads
            _incoming("g", {"app": "web", "release": "r2"}, ns="other"),  # the default namespace's terms: none
            _incoming("h", {"app": "web", "release": "r4", "unread": "z"})]
    answers = [_same_as_walk(snap, obj) for obj in pods + pods]  # the second round recalls every one
    first = answers[:len(pods)]
    assert first[0] == first[1] == first[7] and first[0]["existing_preferred"]  # recalled, and non-trivial
    assert first[4] == first[0]  # no release: the NotIn passes, as for an unnamed value
    assert all(first[i] != first[0] for i in (2, 3, 5, 6))  # each matches other terms than ``a``
    state = snap.state._terms
    assert state is not None and any(state._matched), "pods were remembered"


def test_a_new_distinct_term_is_matched_not_recalled() -> None:
    snap = _cluster()
    pod = _incoming("a", {"app": "web", "release": "r2"})
    before = _same_as_walk(snap, pod)
    snap.add_pod(_placed("p4", "n2", {"matchLabels": {"release": "r2"}}))  # a new term this pod matches
    assert _same_as_walk(snap, _incoming("b", {"app": "web", "release": "r2"})) != before
    snap.state.remove_pod("uid-p4")
    assert _same_as_walk(snap, _incoming("c", {"app": "web", "release": "r2"})) == before


def test_a_namespace_relabel_is_matched_not_recalled() -> None:
    snap = _cluster()
    before = _same_as_walk(snap, _incoming("a", {"app": "web", "release": "r2"}))
    snap.add(_namespace("default", {"team": "b"}))  # p3's namespace selector now selects the pods
    after = _same_as_walk(snap, _incoming("b", {"app": "web", "release": "r2"}))
    assert after != before
