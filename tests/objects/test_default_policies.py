"""The default policy set end to end on tiny clusters; expected numbers worked out by hand."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from policyscheduler.compiler import PolicySet
from policyscheduler.evaluation import Decision, evaluate
from policyscheduler.loader import load_policy_set
from policyscheduler.state import ClusterSnapshot

from .conftest import make_node, make_pod

POLICIES = Path(__file__).resolve().parents[2] / "policies"
MiB = 1024 * 1024


@pytest.fixture(scope="module")
def policy_set() -> PolicySet:
    result = load_policy_set([POLICIES])
    assert result.policy_set is not None, [str(d) for d in result.diagnostics]
    assert result.diagnostics == []
    return result.policy_set


def run(policy_set: PolicySet, objects: list[dict[str, Any]], pod: dict[str, Any]) -> Decision:
    snap = ClusterSnapshot.from_objects(objects)
    return evaluate(policy_set, snap, pod, rng=random.Random(0))


def test_rule_names_and_weights(policy_set: PolicySet) -> None:
    assert [r.name for r in policy_set.filters] == [
        "node_affinity_node_names", "node_unschedulable", "node_name", "taint_toleration", "node_affinity",
        "node_ports", "node_resources_fit", "volume_restrictions", "node_volume_limits", "volume_binding",
        "volume_zone", "pod_topology_spread", "inter_pod_affinity", "dynamic_resources"]
    assert [(r.name, r.weight, r.normalize) for r in policy_set.scores] == [
        ("taint_toleration", 3, "reverse"), ("node_affinity", 2, "scale"), ("node_resources_fit", 1, "none"),
        ("pod_topology_spread", 2, "spread"), ("inter_pod_affinity", 2, "minmax"),
        ("node_resources_balanced_allocation", 1, "none"), ("image_locality", 1, "none")]


def test_fit_reports_every_shortage(policy_set: PolicySet) -> None:
    objects = [make_node("n1", cpu="1", memory="1Gi", pods="2"),
               make_pod("a", node="n1"), make_pod("b", node="n1")]
    objects[0]["status"]["allocatable"]["example.com/foo"] = "1"
    pod = make_pod("p", requests={"cpu": "2", "memory": "512Mi", "example.com/foo": "2", "example.com/bar": "1"})
    d = run(policy_set, objects, pod)
    v = d.verdicts["n1"]
    assert v.rule == "node_resources_fit"
    assert sorted(v.reasons) == ["Insufficient cpu", "Insufficient example.com/bar", "Insufficient example.com/foo", "Too many pods"]
    assert d.message == ("0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient example.com/bar, "
                         "1 Insufficient example.com/foo, 1 Too many pods.")


def test_filters_in_kube_order(policy_set: PolicySet) -> None:
    objects = [
        make_node("cordoned", unschedulable=True),
        make_node("tainted", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
        make_node("ok"),
    ]
    d = run(policy_set, objects, make_pod("p"))
    assert d.verdicts["cordoned"].reasons == ("node(s) were unschedulable",)
    assert d.verdicts["tainted"].reasons == ("node(s) had untolerated taint(s)",)
    assert d.node == "ok"


def test_daemonset_pinning_reason(policy_set: PolicySet) -> None:
    pod = make_pod("ds", affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}}})
    tainted = make_node("n1", taints=[{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}])
    d = run(policy_set, [tainted, make_node("n2", cpu="0")], pod)
    # excluded by PreFilter before TaintToleration ever runs on n1
    assert d.verdicts["n1"].reasons == ("node(s) didn't satisfy plugin(s) [NodeAffinity]",)
    assert d.node == "n2"


def test_spread_filter_reasons(policy_set: PolicySet) -> None:
    zone = "topology.kubernetes.io/zone"
    web = {"app": "web"}
    objects = [make_node("n1", {zone: "a"}), make_node("n2", {zone: "b"}), make_node("n3"),
               make_pod("w1", node="n1", labels=web)]
    c = {"maxSkew": 1, "topologyKey": zone, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": web}}
    d = run(policy_set, objects, make_pod("p", labels=web, topologySpreadConstraints=[c]))
    # zone a: 1 + 1 - min(1, 0) = 2 > 1; zone b: 0 + 1 - 0 = 1; n3 lacks the key
    assert d.verdicts["n1"].reasons == ("node(s) didn't match pod topology spread constraints",)
    assert d.verdicts["n3"].reasons == ("node(s) didn't match pod topology spread constraints (missing required label)",)
    assert d.feasible == ["n2"]
    c3 = dict(c, minDomains=3)  # 2 domains < 3: global minimum 0, so zone b still fits, zone a does not
    d = run(policy_set, objects, make_pod("p", labels=web, topologySpreadConstraints=[c3]))
    assert d.feasible == ["n2"]


def test_scores_by_hand(policy_set: PolicySet) -> None:
    zone = "topology.kubernetes.io/zone"
    web = {"app": "web"}
    objects = [
        make_node("a", {zone: "z1"}, images=[{"names": ["nginx:latest"], "sizeBytes": 500 * MiB}]),
        make_node("b", {zone: "z1"}),
        make_node("c", {zone: "z2"}, taints=[{"key": "k", "value": "v", "effect": "PreferNoSchedule"}]),
        make_pod("e1", node="a", labels=web, requests={"cpu": "500m", "memory": "1Gi"}),
        make_pod("e2", node="b", labels=web, requests={"cpu": "500m", "memory": "1Gi"}),
        {"kind": "Service", "metadata": {"name": "s", "namespace": "default"}, "spec": {"selector": web}},
    ]
    pod = make_pod("new", labels=web, requests={"cpu": "1", "memory": "1Gi"},
                   containers=[{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
                   affinity={"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                       {"weight": 10, "podAffinityTerm": {"labelSelector": {"matchLabels": web},
                                                          "topologyKey": "kubernetes.io/hostname"}}]}})
    d = run(policy_set, objects, pod)
    raw = {rule: {n: s.raw for n, s in per.items()} for rule, per in d.scores.items()}
    norm = {rule: {n: s.normalized for n, s in per.items()} for rule, per in d.scores.items()}
    assert raw["taint_toleration"] == {"a": 0, "b": 0, "c": 1} and norm["taint_toleration"] == {"a": 100, "b": 100, "c": 0}
    # LeastAllocated: a: cpu (4-1.5)/4 -> 62, mem (8-2)/8 -> 75, mean 68; c: cpu 75, mem 87 -> 81
    assert raw["node_resources_fit"] == {"a": 68, "b": 68, "c": 81}
    # BalancedAllocation: a: |0.375 - 0.25| / 2 = 0.0625 -> 93; c: |0.25 - 0.125| / 2 -> 93
    assert raw["node_resources_balanced_allocation"] == {"a": 93, "b": 93, "c": 93}
    # system default spreading: hostname weight ln(3+2), zone weight ln(2+2)
    # a: 1*ln5 + 2 + 2*ln4 + 4 = 10.38 -> 10 ; c: 0 + 2 + 0 + 4 = 6 ; spread: a = 100*(10+6-10)/10 = 60
    assert raw["pod_topology_spread"] == {"a": 10, "b": 10, "c": 6}
    assert norm["pod_topology_spread"] == {"a": 60, "b": 60, "c": 100}
    assert raw["inter_pod_affinity"] == {"a": -10, "b": -10, "c": 0}
    assert norm["inter_pod_affinity"] == {"a": 0, "b": 0, "c": 100}
    # ImageLocality: 500MiB on 1 of 3 nodes -> 174762666; 100*(174762666-23MiB)/(1000MiB-23MiB) = 14
    assert raw["image_locality"] == {"a": 14, "b": 0, "c": 0}
    # totals: a = 3*100 + 68 + 2*60 + 2*0 + 93 + 14 = 595; b = 581; c = 0 + 81 + 200 + 200 + 93 = 574
    assert d.totals == {"a": 595, "b": 581, "c": 574} and d.node == "a"


def test_balanced_allocation_skips_best_effort(policy_set: PolicySet) -> None:
    d = run(policy_set, [make_node("a"), make_node("b")], make_pod("p"))
    scores = d.scores["node_resources_balanced_allocation"]
    assert {n: s.raw for n, s in scores.items()} == {"a": 0, "b": 0}
    # LeastAllocated still uses the non-zero requests: cpu (4-0.1)/4 -> 97, memory (8Gi-200Mi)/8Gi -> 97
    assert {n: s.raw for n, s in d.scores["node_resources_fit"].items()} == {"a": 97, "b": 97}
