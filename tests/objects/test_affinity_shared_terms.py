"""Equal (anti-)affinity terms of different pods are one object, and the indexed walks that match each
distinct term once per decision give the same maps as the plain walk over every pod of every node."""

from __future__ import annotations

import random
from typing import Any

from policyscheduler.objects.affinity import FilterState, IndexedFilterState, IndexedScoreState, ScoreState
from policyscheduler.state import ClusterSnapshot

from .conftest import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def term(labels: dict[str, str], key: str = ZONE, **extra: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": key, **extra}


def test_equal_terms_of_different_pods_are_one_object_and_different_ones_are_not() -> None:
    snap = ClusterSnapshot.from_objects([make_node("n1", {ZONE: "z1"})])

    def first_term(name: str, namespace: str, t: dict[str, Any]) -> Any:
        pod = make_pod(name, namespace=namespace, labels={"app": "x"},
                       affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [t]}})
        return snap.pod_record(pod).required_affinity_terms[0]

    a = first_term("a", "default", term({"app": "x"}))
    assert first_term("b", "default", term({"app": "x"})) is a
    assert first_term("c", "other", term({"app": "x"})) is not a  # another namespace: other names
    assert first_term("d", "default", term({"app": "y"})) is not a
    assert first_term("e", "default", term({"app": "x"}, HOST)) is not a


def cluster(seed: int) -> tuple[ClusterSnapshot, list[dict[str, Any]]]:
    """Nodes in three zones (one node without a zone) and pods with a mix of shared and distinct terms."""
    rng = random.Random(seed)
    objects: list[dict[str, Any]] = [{"kind": "Namespace", "metadata": {"name": "other", "labels": {"team": "b"}}}]
    objects += [make_node(f"n{i}", {ZONE: f"z{i % 3}"} if i else {}) for i in range(12)]
    apps = ["web", "db", "cache"]
    for i in range(120):
        kinds: dict[str, Any] = {}
        pick = rng.choice(apps)
        key = rng.choice([ZONE, HOST])
        shape = rng.randrange(5)
        if shape == 0:
            kinds["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [term({"app": pick}, key)]}
        elif shape == 1:
            kinds["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [term({"app": pick}, key)]}
        elif shape == 2:
            kinds["podAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": rng.randint(1, 100), "podAffinityTerm": term({"app": pick}, key)}]}
            kinds["podAntiAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": rng.randint(1, 100), "podAffinityTerm": term({"app": rng.choice(apps)}, ZONE)}]}
        elif shape == 3:  # all namespaces / a namespace selector
            kinds["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [
                term({"app": pick}, key, namespaceSelector={} if rng.random() < 0.5 else {"matchLabels": {"team": "b"}})]}
        pod = make_pod(f"p{i}", node=f"n{rng.randrange(12)}", namespace=rng.choice(["default", "other"]),
                       labels={"app": rng.choice(apps)}, **({"affinity": kinds} if kinds else {}))
        objects.append(pod)
    incoming = [make_pod(f"in-{app}-{ns}", namespace=ns, labels={"app": app}) for app in apps for ns in ("default", "other")]
    return ClusterSnapshot.from_objects(objects), incoming


def test_indexed_walks_agree_with_the_walk_over_every_pod() -> None:
    for seed in range(4):
        snap, incoming = cluster(seed)
        nodes, ns_labels, index = snap.nodes, snap.namespace_labels, snap.state
        for pod in incoming:
            record = snap.pod_record(pod)
            plain, indexed = ScoreState(record, nodes, ns_labels), IndexedScoreState(record, nodes, ns_labels, index)
            for field in ("existing_required", "existing_preferred", "existing_preferred_anti"):
                assert getattr(indexed, field) == getattr(plain, field), (seed, pod["metadata"]["name"], field)
            assert plain.existing_required or plain.existing_preferred  # the comparison is not vacuous
            filtered = FilterState(record, nodes, ns_labels).existing_anti
            assert IndexedFilterState(record, nodes, ns_labels, index).existing_anti == filtered
