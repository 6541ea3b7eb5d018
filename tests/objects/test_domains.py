"""The topology primitives (objects/domains.py, ``cluster.pods_with`` / ``count_in_domain`` / ...).

* semantics on a small cluster whose every number is computed by hand below;
* the indexed tables equal the from-scratch walk, and ``Cluster.column`` equals the per-node scalar, on
  random clusters after random changes (tests/state/gen.py);
* policies using them decide the same in the reference and the vector backend;
* PodTopologySpread's hard constraint (one constraint, a matchLabels selector) written with the
  primitives agrees with the built-in rule, verdict and reason, on random clusters.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from policyscheduler.evaluation import diff_decisions, make_evaluator
from policyscheduler.loader import load_layered, load_policy_set, load_policy_texts
from policyscheduler.objects.cluster import COLUMNS, Cluster
from policyscheduler.objects.domains import PodSelector, walk_domains
from policyscheduler.state import ClusterSnapshot
from tests.objects.conftest import make_node, make_pod
from tests.state import gen

REPO_POLICIES = Path(__file__).resolve().parents[2] / "policies"
EXAMPLES = REPO_POLICIES.parent / "examples" / "policies"
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


# -- a hand-computed cluster ------------------------------------------------------------------------


def _terminating(pod: dict[str, Any]) -> dict[str, Any]:
    pod["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return pod


def small_cluster() -> ClusterSnapshot:
    """Racks r1 (a1, a2), r2 (b1), r3 (c1, no live pod), "" (e1); x1 has no rack. Zones z1, z2, z3.

    Pods of app=web in namespace default: a1 2 (one tier=front), a2 1, b1 1 (tier=front), x1 1, e1 1;
    one more on b1 in namespace other; a terminating one on c1; an app=db pod on e1.
    """
    return ClusterSnapshot.from_objects([
        make_node("a1", {"rack": "r1", ZONE: "z1"}),
        make_node("a2", {"rack": "r1", ZONE: "z1", "disk": "ssd"}),
        make_node("b1", {"rack": "r2", ZONE: "z2", "disk": "ssd"}),
        make_node("c1", {"rack": "r3", ZONE: "z2"}),
        make_node("x1", {ZONE: "z2"}),
        make_node("e1", {"rack": "", ZONE: "z3"}),
        make_pod("w1", node="a1", labels={"app": "web"}),
        make_pod("w2", node="a1", labels={"app": "web", "tier": "front"}),
        make_pod("w3", node="a2", labels={"app": "web"}),
        make_pod("w4", node="b1", labels={"app": "web", "tier": "front"}),
        make_pod("w5", node="x1", labels={"app": "web"}),
        make_pod("w6", node="e1", labels={"app": "web"}),
        make_pod("o1", node="b1", namespace="other", labels={"app": "web"}),
        _terminating(make_pod("t1", node="c1", labels={"app": "web"})),
        make_pod("d1", node="e1", labels={"app": "db"}),
    ])


def per_node(cl: Cluster, sel: PodSelector, key: str) -> dict[str, int]:
    return {n.name: cl.count_in_domain(sel, key, n) for n in cl.nodes}


def summary(cl: Cluster, sel: PodSelector, key: str) -> tuple[int, int, int]:
    return cl.domain_count(sel, key), cl.min_in_domains(sel, key), cl.max_in_domains(sel, key)


def incoming(**spec: Any) -> dict[str, Any]:
    return make_pod("incoming", labels={"app": "web"}, **spec)


def test_counts_per_rack_by_hand() -> None:
    snap = small_cluster()
    cl = snap.context(snap.pod_record(incoming()))
    web = cl.pods_with("app", "web")
    # r1: w1 w2 w3; r2: w4 (o1 is in another namespace); r3: none (t1 is terminating); "": w6; x1: no rack
    assert per_node(cl, web, "rack") == {"a1": 3, "a2": 3, "b1": 1, "c1": 0, "x1": 0, "e1": 1}
    assert summary(cl, web, "rack") == (4, 0, 3)  # r1, r2, r3 and "" are domains; r3 holds the minimum 0
    # zones: z1 = w1 w2 w3; z2 = w4 (b1) + w5 (x1); z3 = w6
    assert per_node(cl, web, ZONE) == {"a1": 3, "a2": 3, "b1": 2, "c1": 2, "x1": 2, "e1": 1}
    assert summary(cl, web, ZONE) == (3, 1, 3)
    # hostname: per node (the hostname label is the node's name here)
    assert per_node(cl, web, HOST) == {"a1": 2, "a2": 1, "b1": 1, "c1": 0, "x1": 1, "e1": 1}
    # a key no node carries: no domain at all
    assert per_node(cl, web, "row") == dict.fromkeys(per_node(cl, web, "row"), 0)
    assert summary(cl, web, "row") == (0, 0, 0)


def test_refinements_by_hand() -> None:
    snap = small_cluster()
    cl = snap.context(snap.pod_record(incoming()))
    web = cl.pods_with("app", "web")
    everywhere = web.in_all_namespaces()
    assert per_node(cl, everywhere, "rack") == {"a1": 3, "a2": 3, "b1": 2, "c1": 0, "x1": 0, "e1": 1}
    other = web.in_namespace("other")
    assert per_node(cl, other, "rack") == {"a1": 0, "a2": 0, "b1": 1, "c1": 0, "x1": 0, "e1": 0}
    assert summary(cl, other, "rack") == (4, 0, 1)
    front = web.with_label("tier", "front")
    assert per_node(cl, front, "rack") == {"a1": 1, "a2": 1, "b1": 1, "c1": 0, "x1": 0, "e1": 0}
    # with_label replaces the requirement on a key it already has
    assert web.with_label("app", "db") is cl.pods_with("app", "db")
    assert per_node(cl, cl.pods_with("app", "db"), "rack")["e1"] == 1
    # the visible fields
    assert (front.labels, list(front.namespaces), front.honors_node_affinity) == (
        {"app": "web", "tier": "front"}, ["default"], False)
    assert list(everywhere.namespaces) == []


def test_honor_node_affinity_counts_only_the_nodes_the_pod_may_use() -> None:
    snap = small_cluster()
    cl = snap.context(snap.pod_record(incoming(nodeSelector={"disk": "ssd"})))
    web = cl.pods_with("app", "web")
    honored = web.honor_node_affinity()
    # counted: a2 (r1) and b1 (r2) only; a1 reads its domain r1 (a2's count, not its own pods)
    assert per_node(cl, honored, "rack") == {"a1": 1, "a2": 1, "b1": 1, "c1": 0, "x1": 0, "e1": 0}
    assert summary(cl, honored, "rack") == (2, 1, 1)
    assert summary(cl, web, "rack") == (4, 0, 3)  # the plain selector still counts every node
    # required node affinity counts too (terms ORed), not just nodeSelector
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r2", "r3"]}]}]}}}
    cl2 = snap.context(snap.pod_record(incoming(affinity=affinity)))
    honored2 = cl2.pods_with("app", "web").honor_node_affinity()
    assert per_node(cl2, honored2, "rack") == {"a1": 0, "a2": 0, "b1": 1, "c1": 0, "x1": 0, "e1": 0}
    assert summary(cl2, honored2, "rack") == (2, 0, 1)


def test_matches_is_the_counting_test() -> None:
    snap = small_cluster()
    pod = snap.pod_record(incoming())
    cl = snap.context(pod)
    web = cl.pods_with("app", "web")
    others = {p.name: p for n in snap.nodes for p in n.pods}
    assert web.matches(pod)  # the scheduled pod would count itself
    assert [name for name, p in sorted(others.items()) if web.matches(p)] == ["w1", "w2", "w3", "w4", "w5", "w6"]
    assert not web.matches(others["o1"]) and web.in_all_namespaces().matches(others["o1"])
    assert not web.in_all_namespaces().matches(others["t1"])  # terminating pods never count
    assert not cl.pods_with("app", "").matches(pod)  # "" means the label with an empty value
    # count_in_domain by hostname == the node's pods that match (the definition, checked per node)
    for node in snap.nodes:
        assert cl.count_in_domain(web, HOST, node) == sum(1 for p in node.pods if web.matches(p))


def test_the_scheduled_pod_and_assumed_pods() -> None:
    snap = small_cluster()
    before = snap.context(snap.pod_record(incoming()))
    web = before.pods_with("app", "web")
    assert before.count_in_domain(web, "rack", snap.nodes[3]) == 0  # c1: the pod is on no node yet
    snap.assume(make_pod("w7", labels={"app": "web"}), "c1")
    after = snap.context(snap.pod_record(incoming()))
    web_after = after.pods_with("app", "web")
    assert per_node(after, web_after, "rack")["c1"] == 1
    assert summary(after, web_after, "rack") == (4, 1, 3)
    # a context made before the change keeps answering for the state it saw (it walks its own nodes)
    assert before._state.indexed is None
    assert summary(before, web, "rack") == (4, 0, 3)
    assert before.column("count_in_domain", web, "rack").tolist() == [3, 3, 1, 0, 0, 1]


def test_selectors_are_interned_per_context() -> None:
    snap = small_cluster()
    cl = snap.context(snap.pod_record(incoming()))
    a = cl.pods_with("app", "web").with_label("tier", "front").in_all_namespaces()
    b = cl.pods_with("tier", "front").in_namespace("x").with_label("app", "web").in_all_namespaces()
    assert a is b
    other = snap.context(snap.pod_record(incoming()))
    with pytest.raises(ValueError, match="cluster value that made it"):
        other.count_in_domain(a, "rack", snap.nodes[0])


def test_all_namespace_counts_survive_namespace_relabelling() -> None:
    """An all-namespaces selector's count array does not depend on namespace labels, so relabelling a
    namespace keeps it (state/indexes.py), and it stays exact afterwards."""
    snap = small_cluster()
    cl = snap.context(snap.pod_record(incoming()))
    everywhere = cl.pods_with("app", "web").in_all_namespaces()
    key = everywhere._key
    before = snap.state.match_counts(key)
    snap.add({"kind": "Namespace", "metadata": {"name": "other", "labels": {"team": "y"}}})
    assert snap.state.match_counts(key) is before
    snap.assume(make_pod("o2", namespace="other", labels={"app": "web"}), "c1")
    cl = snap.context(snap.pod_record(incoming()))
    assert cl.count_in_domain(cl.pods_with("app", "web").in_all_namespaces(), "rack", snap.nodes[3]) == 1


# -- random clusters: index == walk, column == scalar ---------------------------------------------------


def selectors(cl: Cluster, rng: random.Random) -> list[PodSelector]:
    """A handful of selectors exercising every refinement."""
    out = []
    for app in gen.APPS:
        sel = cl.pods_with("app", app)
        if rng.random() < 0.4:
            sel = sel.with_label("tier", rng.choice(("web", "db")))
        if rng.random() < 0.3:
            sel = sel.in_all_namespaces()
        elif rng.random() < 0.2:
            sel = sel.in_namespace(rng.choice(gen.NAMESPACES))
        if rng.random() < 0.5:
            sel = sel.honor_node_affinity()
        out.append(sel)
    return out


@pytest.mark.parametrize("seed", range(60))
def test_indexed_tables_and_columns_match_the_walk(seed: int) -> None:
    snap = gen.mutated_snapshot(seed)
    rng = random.Random(20_000 + seed)
    nodes = snap.nodes
    for i in range(3):
        pod = snap.pod_record(gen.pod(rng, f"incoming{i}", None, 0.6))
        cl = snap.context(pod)
        assert cl._state.indexed is not None
        for sel in selectors(cl, rng):
            for key in (*gen.KEYS, "absent"):
                ref = walk_domains(sel, key, nodes, pod)
                assert dict(cl._state.domains(sel, key).per_value) == dict(ref.per_value), (seed, sel, key)
                assert summary(cl, sel, key) == (ref.count, ref.minimum, ref.maximum)
                column = cl.column("count_in_domain", sel, key)
                assert column.dtype == np.int64
                assert column.tolist() == [cl.count_in_domain(sel, key, n) for n in nodes], (seed, key)
                assert column.tolist() == [ref.at(key, n) for n in nodes]


def test_count_in_domain_is_a_column_builtin() -> None:
    assert "count_in_domain" in COLUMNS
    for name in ("domain_count", "min_in_domains", "max_in_domains", "pods_with"):
        assert name not in COLUMNS  # pod-level: computed once per pod, not per node


# -- through the evaluators ---------------------------------------------------------------------------

CUSTOM = """
## Affinity by label: frontends only where the zone runs a cache.
filter frontend_near_cache
  reason "node(s) are in a zone without a cache pod"
  applies when pod.labels["tier"] == "web"
  require cluster.count_in_domain(cluster.pods_with("app", "a").in_all_namespaces(), "topology.kubernetes.io/zone", node) > 0

## Anti-affinity by label: prefer nodes without another pod of the app, and racks with fewer.
score app_apart weight 3 normalize scale
  let mine = cluster.pods_with("app", pod.labels["app"]).honor_node_affinity()
  value (cluster.max_in_domains(mine, "rack") - cluster.count_in_domain(mine, "rack", node)) * 10
    + (if cluster.count_in_domain(mine, "kubernetes.io/hostname", node) == 0 then 5 else 0)
    + cluster.domain_count(mine, "topology.kubernetes.io/zone") - cluster.min_in_domains(mine, "rack")
"""


def test_the_example_rules_run_vectorised() -> None:
    """The examples lower to whole-cluster operations (``count_in_domain`` as a column), no fallback."""
    from policyscheduler.evaluation.vector import lowering_report

    result = load_layered([EXAMPLES / "rack-soft-spread.policy", EXAMPLES / "rack-hard-spread.policy",
                           EXAMPLES / "zone-quota.policy"], texts=[("custom.policy", CUSTOM)])
    assert result.policy_set is not None
    report = lowering_report(result.policy_set)
    for rule in ("score rack_soft_spread", "filter rack_hard_spread", "filter zone_team_quota",
                 "filter frontend_near_cache", "score app_apart"):
        assert report[rule][0] == "vector", (rule, report[rule])


def test_reference_and_vector_backends_agree_on_policies_using_the_primitives() -> None:
    result = load_layered([EXAMPLES / "rack-soft-spread.policy", EXAMPLES / "rack-hard-spread.policy",
                           EXAMPLES / "zone-quota.policy"], texts=[("custom.policy", CUSTOM)])
    assert result.policy_set is not None, result.diagnostics
    policies = result.policy_set
    reference, vector = make_evaluator("reference"), make_evaluator("vector")
    unplaced = placed = 0
    for seed in range(40):
        rng = random.Random(seed)
        objects = gen.cluster(rng, rng.randint(3, 12), rng.randint(0, 4))
        for i in range(3):
            pod = gen.pod(rng, f"incoming{i}", None, 0.3)
            if rng.random() < 0.5:
                pod["metadata"]["labels"]["team"] = rng.choice(("t1", "t2"))
            left = reference.evaluate(policies, ClusterSnapshot.from_objects(objects), pod, rng=random.Random(seed))
            right = vector.evaluate(policies, ClusterSnapshot.from_objects(objects), pod, rng=random.Random(seed))
            assert not diff_decisions(left, right), (seed, i, diff_decisions(left, right)[:5])
            placed += left.node is not None
            unplaced += left.node is None
    assert placed and unplaced  # both outcomes were compared


# -- PodTopologySpread's hard constraint, written with the primitives ----------------------------------

SPREAD_BY_PRIMITIVES = """
## PodTopologySpread's filter for one DoNotSchedule constraint with matchLabels {app: A}, from the
## test pod's annotations (spread-key, spread-app, max-skew, min-domains).
filter spread_by_primitives
  reason "node(s) didn't match pod topology spread constraints"
  applies when "spread-key" in pod.annotations
  let key = pod.annotations["spread-key"]
  let sel = cluster.pods_with("app", pod.annotations["spread-app"]).honor_node_affinity()
  let minimum = if cluster.domain_count(sel, key) < int(pod.annotations["min-domains"]) then 0
    else cluster.min_in_domains(sel, key)
  require key in node.labels else "node(s) didn't match pod topology spread constraints (missing required label)"
  require cluster.count_in_domain(sel, key, node) + (if sel.matches(pod) then 1 else 0) - minimum
    <= int(pod.annotations["max-skew"])
"""


def spread_pair(rng: random.Random, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The same pending pod twice: with one DoNotSchedule constraint, and with the annotations instead."""
    pod = gen.pod(rng, name, None, 0.0)
    pod["metadata"].pop("deletionTimestamp", None)  # kube would not schedule a terminating pod
    pod["spec"].pop("topologySpreadConstraints", None)
    key, app = rng.choice(gen.KEYS), rng.choice(gen.APPS)
    skew, min_domains = rng.randint(1, 2), rng.choice((1, 1, 2, 3))
    constraint = {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
                  "labelSelector": {"matchLabels": {"app": app}}}
    if min_domains > 1:
        constraint["minDomains"] = min_domains
    if rng.random() < 0.3:
        pod["spec"]["nodeSelector"] = {"rack": rng.choice(("r1", "r2"))}
    builtin = {**pod, "spec": {**pod["spec"], "topologySpreadConstraints": [constraint]}}
    annotated = {**pod, "metadata": {**pod["metadata"], "annotations": {
        "spread-key": key, "spread-app": app, "max-skew": str(skew), "min-domains": str(min_domains)}}}
    return builtin, annotated


@pytest.mark.parametrize("engine", ["reference", "vector"])
def test_pod_topology_spread_hard_constraint_agrees_with_the_builtin(engine: str) -> None:
    builtin_set = load_policy_set([REPO_POLICIES / "70-pod-topology-spread.policy"]).policy_set
    primitives_set = load_policy_texts([("spread.policy", SPREAD_BY_PRIMITIVES)]).policy_set
    assert builtin_set is not None and primitives_set is not None
    evaluator = make_evaluator(engine)
    rejected = accepted = 0
    for seed in range(80):
        rng = random.Random(seed)
        objects = gen.cluster(rng, rng.randint(2, 12), rng.randint(0, 5))
        for i in range(3):
            with_constraint, annotated = spread_pair(rng, f"incoming{i}")
            left = evaluator.evaluate(builtin_set, ClusterSnapshot.from_objects(objects), with_constraint,
                                      rng=random.Random(0))
            right = evaluator.evaluate(primitives_set, ClusterSnapshot.from_objects(objects), annotated,
                                       rng=random.Random(0))
            verdicts = {n: (v.feasible, v.reasons) for n, v in left.verdicts.items()}
            assert verdicts == {n: (v.feasible, v.reasons) for n, v in right.verdicts.items()}, (seed, i)
            assert left.message == right.message
            rejected += sum(not v.feasible for v in left.verdicts.values())
            accepted += sum(v.feasible for v in left.verdicts.values())
    assert rejected > 50 and accepted > 50  # the comparison saw both verdicts often
