"""PodTopologySpread counts, worked out by hand from kube-scheduler's PreFilter / PreScore rules."""

from __future__ import annotations

from typing import Any

from policyscheduler.objects.cluster import Cluster
from policyscheduler.objects.records import Pod
from policyscheduler.state import ClusterSnapshot

from .conftest import make_node, make_pod

WEB = {"app": "web"}


def spread(max_skew: int = 1, key: str = "topology.kubernetes.io/zone", when: str = "DoNotSchedule",
           **extra: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when,
         "labelSelector": {"matchLabels": {"app": "web"}}}
    c.update(extra)
    return c


def world(extra_objects: tuple[dict[str, Any], ...] | list[dict[str, Any]] = (),
          n3_taints: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    zone = "topology.kubernetes.io/zone"
    terminating = make_pod("gone", node="n2", labels=WEB)
    terminating["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return [
        make_node("n1", {zone: "a"}),
        make_node("n2", {zone: "a"}),
        make_node("n3", {zone: "b"}, taints=n3_taints),
        make_node("n4"),
        make_pod("w1", node="n1", labels=WEB),
        make_pod("w2", node="n1", labels=WEB),
        make_pod("w3", node="n3", labels=WEB),
        make_pod("x", node="n3", labels=WEB, namespace="other"),  # other namespace: not counted
        terminating,  # terminating: not counted
        *extra_objects,
    ]


def context(objects: list[dict[str, Any]], pod: dict[str, Any]) -> tuple[ClusterSnapshot, Pod, Cluster]:
    snap = ClusterSnapshot.from_objects(objects)
    rec = snap.pod_record(pod)
    return snap, rec, snap.context(rec)


def test_filter_counts_domains_and_minimum() -> None:
    snap, pod, cl = context(world(), make_pod("p", labels=WEB, topologySpreadConstraints=[spread()]))
    (c,) = cl.hard_spread_constraints
    n1, n2, n3, n4 = snap.nodes
    assert [cl.spread_count(c, n) for n in (n1, n2, n3, n4)] == [2, 2, 1, 0]
    assert cl.spread_domain_count(c) == 2 and cl.spread_min_count(c) == 1
    assert c.selects(pod) and c.min_domains == 1
    assert c.node_affinity_policy == "Honor" and c.node_taints_policy == "Ignore"


def test_min_domains_recorded() -> None:
    _, _, cl = context(world(), make_pod("p", labels=WEB, topologySpreadConstraints=[spread(minDomains=3)]))
    assert cl.hard_spread_constraints[0].min_domains == 3
    assert cl.spread_domain_count(cl.hard_spread_constraints[0]) == 2


def test_node_affinity_policy_honor_and_ignore() -> None:
    sel = {"topology.kubernetes.io/zone": "b"}
    _, _, honor = context(world(), make_pod("p", labels=WEB, nodeSelector=sel, topologySpreadConstraints=[spread()]))
    c = honor.hard_spread_constraints[0]
    assert honor.spread_domain_count(c) == 1 and honor.spread_min_count(c) == 1
    _, _, ignore = context(world(), make_pod("p", labels=WEB, nodeSelector=sel,
                                             topologySpreadConstraints=[spread(nodeAffinityPolicy="Ignore")]))
    c = ignore.hard_spread_constraints[0]
    assert ignore.spread_domain_count(c) == 2 and ignore.spread_min_count(c) == 1


def test_node_taints_policy_honor_skips_untolerated_nodes() -> None:
    taint = [{"key": "t", "value": "", "effect": "NoSchedule"}]
    snap, _, cl = context(world(n3_taints=taint),
                          make_pod("p", labels=WEB, topologySpreadConstraints=[spread(nodeTaintsPolicy="Honor")]))
    c = cl.hard_spread_constraints[0]
    assert cl.spread_domain_count(c) == 1 and cl.spread_min_count(c) == 2
    assert cl.spread_count(c, snap.nodes[2]) == 0


def test_match_label_keys_narrow_the_selector() -> None:
    objs = world()
    objs[4]["metadata"]["labels"] = {"app": "web", "version": "v1"}
    objs[5]["metadata"]["labels"] = {"app": "web", "version": "v1"}
    objs[6]["metadata"]["labels"] = {"app": "web", "version": "v2"}
    snap, pod, cl = context(objs, make_pod("p", labels={"app": "web", "version": "v2"},
                                           topologySpreadConstraints=[spread(matchLabelKeys=["version", "absent"])]))
    c = cl.hard_spread_constraints[0]
    assert [cl.spread_count(c, n) for n in snap.nodes[:3]] == [0, 0, 1]
    assert cl.spread_min_count(c) == 0 and cl.spread_domain_count(c) == 2  # zone a exists with 0 pods
    assert c.selects(pod)


def test_constraints_split_by_action_and_require_all() -> None:
    _, _, cl = context(world(), make_pod("p", labels=WEB, topologySpreadConstraints=[
        spread(), spread(2, "kubernetes.io/hostname", "ScheduleAnyway")]))
    assert [c.max_skew for c in cl.hard_spread_constraints] == [1]
    assert [c.max_skew for c in cl.soft_spread_constraints] == [2]
    assert cl.spread_require_all_topologies


def test_score_counts_domains_and_ignored_nodes() -> None:
    snap, _, cl = context(world(), make_pod("p", labels=WEB, topologySpreadConstraints=[
        spread(when="ScheduleAnyway"), spread(1, "kubernetes.io/hostname", "ScheduleAnyway")]))
    zone_c, host_c = cl.soft_spread_constraints
    cl.set_feasible(["n1", "n3", "n4"])  # n4 lacks the zone key: ignored (explicit constraints)
    n1, _n2, n3, _n4 = snap.nodes
    assert cl.spread_score_domain_count(zone_c) == 2  # a, b among feasible non-ignored
    assert cl.spread_score_domain_count(host_c) == 2  # n1, n3
    assert cl.spread_score_count(zone_c, n1) == 2  # counted over all nodes of zone a (n1 + n2)
    assert cl.spread_score_count(zone_c, n3) == 1
    assert cl.spread_score_count(host_c, n1) == 2 and cl.spread_score_count(host_c, n3) == 1


def test_score_domain_only_from_feasible_nodes() -> None:
    snap, _, cl = context(world(), make_pod("p", labels=WEB, topologySpreadConstraints=[spread(when="ScheduleAnyway")]))
    (c,) = cl.soft_spread_constraints
    cl.set_feasible(["n3"])
    assert cl.spread_score_domain_count(c) == 1
    assert cl.spread_score_count(c, snap.nodes[2]) == 1


def test_system_default_constraints_from_service() -> None:
    svc = {"kind": "Service", "metadata": {"name": "s", "namespace": "default"}, "spec": {"selector": {"app": "web"}}}
    _snap, _pod, cl = context(world([svc]), make_pod("p", labels={"app": "web", "x": "y"}))
    assert cl.hard_spread_constraints == ()
    assert [(c.topology_key, c.max_skew, c.when_unsatisfiable) for c in cl.soft_spread_constraints] == [
        ("kubernetes.io/hostname", 3, "ScheduleAnyway"), ("topology.kubernetes.io/zone", 5, "ScheduleAnyway")]
    assert not cl.spread_require_all_topologies
    cl.set_feasible(["n1", "n2", "n3", "n4"])
    host_c, zone_c = cl.soft_spread_constraints
    # not all topologies required: n4 (no zone) is scored and its "" zone counts as a domain
    assert cl.spread_score_domain_count(zone_c) == 3
    assert cl.spread_score_domain_count(host_c) == 4


def test_default_selector_from_replicaset_owner() -> None:
    rs = {"kind": "ReplicaSet", "apiVersion": "apps/v1", "metadata": {"name": "rs1", "namespace": "default"},
          "spec": {"selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}}}
    pod = make_pod("p", labels=WEB)
    pod["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs1", "controller": True}]
    snap, _rec, cl = context(world([rs]), pod)
    assert len(cl.soft_spread_constraints) == 2
    cl.set_feasible([n.name for n in snap.nodes])
    assert cl.spread_score_count(cl.soft_spread_constraints[0], snap.nodes[0]) == 2


def test_no_default_constraints_without_selecting_objects() -> None:
    svc = {"kind": "Service", "metadata": {"name": "s", "namespace": "other"}, "spec": {"selector": {"app": "web"}}}
    nil = {"kind": "Service", "metadata": {"name": "n", "namespace": "default"}, "spec": {}}
    _, _, cl = context(world([svc, nil]), make_pod("p", labels=WEB))
    assert cl.soft_spread_constraints == () and cl.hard_spread_constraints == ()


def test_nil_selector_with_match_label_keys_stays_nothing() -> None:
    c = {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
         "matchLabelKeys": ["app"]}
    snap, pod, cl = context(world(), make_pod("p", labels=WEB, topologySpreadConstraints=[c]))
    (sc,) = cl.hard_spread_constraints
    assert not sc.selects(pod)
    assert [cl.spread_count(sc, n) for n in snap.nodes] == [0, 0, 0, 0]


def test_empty_selector_counts_nothing_but_selects_itself() -> None:
    c = {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {}}
    snap, pod, cl = context(world(), make_pod("p", labels=WEB, topologySpreadConstraints=[c]))
    (sc,) = cl.hard_spread_constraints
    assert sc.selects(pod)
    assert cl.spread_count(sc, snap.nodes[0]) == 0 and cl.spread_domain_count(sc) == 2
