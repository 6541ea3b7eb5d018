"""InterPodAffinity counts and scores, worked out by hand from kube-scheduler's rules."""

from __future__ import annotations

from typing import Any

from policyscheduler.objects.cluster import Cluster
from policyscheduler.objects.records import Node, Pod
from policyscheduler.state import ClusterSnapshot

from .conftest import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def term(labels: dict[str, str], key: str = ZONE, **extra: Any) -> dict[str, Any]:
    t = {"labelSelector": {"matchLabels": labels}, "topologyKey": key}
    t.update(extra)
    return t


def base(extra: tuple[dict[str, Any], ...] | list[dict[str, Any]] = ()) -> list[dict[str, Any]]:
    e3 = make_pod("e3", node="n2", labels={"app": "cache"},
                  affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term({"app": "web"})]}})
    return [
        {"kind": "Namespace", "metadata": {"name": "default", "labels": {"team": "a"}}},
        {"kind": "Namespace", "metadata": {"name": "other", "labels": {"team": "b"}}},
        make_node("n1", {ZONE: "z1"}),
        make_node("n2", {ZONE: "z1"}),
        make_node("n3", {ZONE: "z2"}),
        make_pod("e1", node="n1", labels={"app": "db"}),
        make_pod("e2", node="n3", labels={"app": "db"}, namespace="other"),
        e3,
        *extra,
    ]


def ctx(pod: dict[str, Any], objects: list[dict[str, Any]] | None = None) -> tuple[list[Node], Pod, Cluster]:
    snap = ClusterSnapshot.from_objects(objects if objects is not None else base())
    rec = snap.pod_record(pod)
    return snap.nodes, rec, snap.context(rec)


def web(affinity: dict[str, Any]) -> dict[str, Any]:
    return make_pod("web", labels={"app": "web"}, affinity=affinity)


def test_required_affinity_default_namespace() -> None:
    nodes, pod, cl = ctx(web({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term({"app": "db"})]}}))
    (t,) = pod.required_affinity_terms
    assert [cl.affinity_count(t, n) for n in nodes] == [1, 1, 0]  # e2 is in another namespace
    assert cl.has_affinity_matches()


def test_required_affinity_all_namespaces_selector() -> None:
    nodes, pod, cl = ctx(web({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        term({"app": "db"}, namespaceSelector={})]}}))
    (t,) = pod.required_affinity_terms
    assert [cl.affinity_count(t, n) for n in nodes] == [1, 1, 1]


def test_required_affinity_namespace_selector_labels() -> None:
    nodes, pod, cl = ctx(web({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        term({"app": "db"}, namespaceSelector={"matchLabels": {"team": "b"}})]}}))
    (t,) = pod.required_affinity_terms
    assert [cl.affinity_count(t, n) for n in nodes] == [0, 0, 1]


def test_explicit_namespaces_list() -> None:
    nodes, pod, cl = ctx(web({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        term({"app": "db"}, namespaces=["other"])]}}))
    (t,) = pod.required_affinity_terms
    assert [cl.affinity_count(t, n) for n in nodes] == [0, 0, 1]


def test_affinity_counts_need_all_terms() -> None:
    # e1 matches app=db but not the second term -> no pod matches all terms
    _nodes, _pod, cl = ctx(web({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        term({"app": "db"}), term({"tier": "x"}, HOST)]}}))
    assert not cl.has_affinity_matches()
    assert not cl.pod_matches_own_affinity


def test_first_pod_of_self_affine_group() -> None:
    nodes, pod, cl = ctx(web({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term({"app": "web"})]}}))
    (t,) = pod.required_affinity_terms
    assert not cl.has_affinity_matches() and cl.pod_matches_own_affinity
    assert [cl.affinity_count(t, n) for n in nodes] == [0, 0, 0]


def test_anti_affinity_counts() -> None:
    nodes, pod, cl = ctx(web({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term({"app": "cache"}, HOST)]}}))
    (t,) = pod.required_anti_affinity_terms
    assert [cl.anti_affinity_count(t, n) for n in nodes] == [0, 1, 0]


def test_existing_pods_anti_affinity_symmetry() -> None:
    nodes, _pod, cl = ctx(web({}))
    assert cl.has_existing_anti_affinity()
    assert [cl.existing_anti_affinity_count(n) for n in nodes] == [1, 1, 0]  # e3's zone z1
    other_ns = make_pod("web", namespace="other", labels={"app": "web"})
    nodes, _, cl = ctx(other_ns)
    assert not cl.has_existing_anti_affinity()  # e3's term only covers its own namespace


def test_preferred_scores_both_directions() -> None:
    e4 = make_pod("e4", node="n3", labels={"app": "api"}, affinity={
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [term({"app": "web"})],
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 7, "podAffinityTerm": term({"app": "web"}, HOST)}],
        },
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 3, "podAffinityTerm": term({"app": "web"})}],
        },
    })
    pod = web({
        "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "podAffinityTerm": term({"app": "db"})}]},
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "podAffinityTerm": term({"app": "cache"}, HOST)}]},
    })
    nodes, _rec, cl = ctx(pod, base([e4]))
    assert [cl.preferred_affinity_weight(n) for n in nodes] == [10, 10, 0]  # e1 in z1
    assert [cl.preferred_anti_affinity_weight(n) for n in nodes] == [0, 5, 0]  # e3 on n2
    assert [cl.existing_required_affinity_count(n) for n in nodes] == [0, 0, 1]  # e4's zone z2
    assert [cl.existing_preferred_affinity_weight(n) for n in nodes] == [0, 0, 7]  # e4's host n3
    assert [cl.existing_preferred_anti_affinity_weight(n) for n in nodes] == [0, 0, 3]


def test_match_label_keys_and_mismatch_label_keys() -> None:
    extra = [make_pod("v2db", node="n3", labels={"app": "db", "version": "v2"})]
    pod = make_pod("web", labels={"app": "web", "version": "v2"}, affinity={"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [term({"app": "db"}, matchLabelKeys=["version"])]}})
    nodes, rec, cl = ctx(pod, base(extra))
    (t,) = rec.required_affinity_terms
    assert [cl.affinity_count(t, n) for n in nodes] == [0, 0, 1]  # e1 (no version) no longer matches
    anti = make_pod("web", labels={"app": "web", "version": "v2"}, affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [term({"app": "db"}, HOST, mismatchLabelKeys=["version"])]}})
    nodes, rec, cl = ctx(anti, base(extra))
    (t,) = rec.required_anti_affinity_terms
    assert [cl.anti_affinity_count(t, n) for n in nodes] == [1, 0, 0]  # e1 differs in version; v2db does not


def test_nil_label_selector_matches_nothing() -> None:
    pod = web({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": ZONE}]}})
    _nodes, _rec, cl = ctx(pod)
    assert not cl.has_affinity_matches() and not cl.pod_matches_own_affinity
