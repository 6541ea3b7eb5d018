"""The placed pods' terms are found by namespace as well as by label.

A term without a namespace selector counts only for incoming pods of the namespaces it lists (its
owner's by default), so the state files it under them: a pod does not test the terms of other
namespaces' apps that require the same label pair (a shared ``tier`` label, say). The candidates
must still include every term the pod can match -- the answers are compared with the walk over the
node records -- and must leave out the other namespaces' terms (that is the point of the filing).
"""

from __future__ import annotations

from typing import Any

from policyscheduler.objects import topology
from policyscheduler.objects.affinity import FilterState, IndexedFilterState, IndexedScoreState, ScoreState
from policyscheduler.state import ClusterSnapshot

Obj = dict[str, Any]
HOST = topology.HOSTNAME
KINDS = {"preferred": 2, "anti": 0}


def _node(name: str) -> Obj:
    return {"kind": "Node", "metadata": {"name": name, "labels": {HOST: name}},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}


def _term(**extra: Any) -> Obj:
    return {"topologyKey": HOST, "labelSelector": {"matchLabels": {"tier": "front"}}, **extra}


def _placed(name: str, ns: str, node: str, term: Obj, kind: str) -> Obj:
    if kind == "preferred":
        affinity = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 7, "podAffinityTerm": term}]}}
    else:
        affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return {"kind": "Pod", "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}",
                                        "labels": {"app": name}},
            "spec": {"nodeName": node, "affinity": affinity, "containers": [{"name": "c", "image": "img"}]}}


def _incoming(ns: str) -> Obj:
    return {"kind": "Pod", "metadata": {"name": f"in-{ns}", "namespace": ns, "uid": f"uid-in-{ns}",
                                        "labels": {"tier": "front"}},
            "spec": {"containers": [{"name": "c", "image": "img"}]}}


def _cluster(kind: str) -> ClusterSnapshot:
    snap = ClusterSnapshot.from_objects([
        {"kind": "Namespace", "metadata": {"name": "a", "labels": {"team": "x"}}},
        {"kind": "Namespace", "metadata": {"name": "b", "labels": {"team": "y"}}},
        *(_node(f"n{i}") for i in range(4)),
        _placed("own-a", "a", "n0", _term(), kind),  # own namespace only (a)
        _placed("own-b", "b", "n1", _term(), kind),  # own namespace only (b)
        _placed("listed", "b", "n2", _term(namespaces=["a", "c"]), kind),  # a and c, not its own b
        _placed("every", "b", "n3", _term(namespaceSelector={}), kind),  # every namespace
        _placed("team-x", "c", "n3", _term(namespaceSelector={"matchLabels": {"team": "x"}}), kind),
    ])
    return snap


def _owners(snap: ClusterSnapshot, kind: str, ns: str) -> set[str]:
    """The placed pods whose terms are candidates for a ``tier=front`` pod of ``ns``."""
    found = snap.state.existing_terms(KINDS[kind], {"tier": "front"}, ns)
    owners = set()
    for term, per_slot in found:
        for slot in per_slot:
            for pod in snap.nodes[slot].pods:
                terms = (pod.required_anti_affinity_terms if kind == "anti"
                         else [w.term for w in pod.preferred_affinity_terms])
                if term in terms:
                    owners.add(pod.name)
    return owners


def test_terms_are_candidates_only_in_the_namespaces_they_admit() -> None:
    for kind in KINDS:
        snap = _cluster(kind)
        # namespace selectors are matched later (against the pod's namespace labels): always candidates
        assert _owners(snap, kind, "a") == {"own-a", "listed", "every", "team-x"}, kind
        assert _owners(snap, kind, "b") == {"own-b", "every", "team-x"}, kind
        assert _owners(snap, kind, "c") == {"listed", "every", "team-x"}, kind


def test_answers_equal_the_walk_in_every_namespace() -> None:
    for kind in KINDS:
        snap = _cluster(kind)
        nodes, ns_labels = snap.nodes, snap.namespace_labels
        for ns in ("a", "b", "c"):
            pod = snap.pod_record(_incoming(ns))
            plain, indexed = ScoreState(pod, nodes, ns_labels), IndexedScoreState(pod, nodes, ns_labels, snap.state)
            assert indexed.maps() == plain.maps(), (kind, ns)
            plain_f = FilterState(pod, nodes, ns_labels)
            indexed_f = IndexedFilterState(pod, nodes, ns_labels, snap.state)
            assert indexed_f.maps() == plain_f.maps(), (kind, ns)
            assert any(plain.maps().values()) or any(plain_f.maps().values()), (kind, ns)  # something counted
        # a term removed from the state leaves its namespaces' candidates
        snap.state.remove_pod("uid-listed")
        assert "listed" not in _owners(snap, kind, "a") | _owners(snap, kind, "c"), kind
