"""The vectorised backend against the reference, construct by construct, on small handmade clusters.

Each test loads a policy, checks that its rules take the path it expects (``lowering_report``), and
asserts that both backends return equal decisions (``diff_decisions`` empty, same tie-break draw) for
a few pending pods -- including runtime errors, numbers beyond int64 and incremental node updates.

The clusters here are small, and the vector backend hands rules over to the reference closures on up
to ``backend.SMALL`` nodes; every test therefore runs with ``SMALL = 0`` so that the array path itself
is what is compared.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from policyscheduler.compiler import PolicySet
from policyscheduler.evaluation import diff_decisions, make_evaluator
from policyscheduler.evaluation.vector import lowering_report
from policyscheduler.state import ClusterSnapshot
from tests.evaluation.policies import default_policies, load

Obj = dict[str, Any]


@pytest.fixture(autouse=True)
def _vector_path_on_small_clusters(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lowered rules take the array path on every cluster size (see the module docstring)."""
    from policyscheduler.evaluation.vector import backend

    monkeypatch.setattr(backend, "SMALL", 0)


def node(name: str, labels: dict[str, str] | None = None, *, cpu: str = "4", memory: str = "8Gi", pods: str = "110",
         taints: list[Obj] | None = None, unschedulable: bool = False, extra: dict[str, str] | None = None,
         images: list[Obj] | None = None) -> Obj:
    alloc = {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}
    return {"kind": "Node", "metadata": {"name": name, "labels": labels or {}},
            "spec": {"taints": taints or [], "unschedulable": unschedulable},
            "status": {"allocatable": alloc, "capacity": alloc, "images": images or []}}


def pod(name: str, *, on: str = "", labels: dict[str, str] | None = None, cpu: str = "", memory: str = "",
        ns: str = "default", ports: list[int] | None = None, tolerations: list[Obj] | None = None,
        priority: int = 0, **spec: Any) -> Obj:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    container: Obj = {"name": "c", "image": "app:1", "resources": {"requests": requests}}
    if ports:
        container["ports"] = [{"containerPort": p, "hostPort": p} for p in ports]
    body: Obj = {"containers": [container], "tolerations": tolerations or [], "priority": priority, **spec}
    if on:
        body["nodeName"] = on
    return {"kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": labels or {}}, "spec": body,
            "status": {"phase": "Running" if on else "Pending"}}


def agree(policies: PolicySet, objects: list[Obj], pending: list[Obj], *, expect_vector: bool = True) -> None:
    """Both backends decide every pending pod identically (one long-lived evaluator each, as in a
    scheduler; each pod is assumed where the reference put it, so later pods see updated nodes)."""
    if expect_vector:
        report = lowering_report(policies)
        slow = {k: v for k, v in report.items() if v[0] != "vector"}
        assert not slow, slow
    ref, vec = make_evaluator("reference"), make_evaluator("vector")
    left, right = ClusterSnapshot.from_objects(objects), ClusterSnapshot.from_objects(objects)
    for i, p in enumerate(pending):
        r1, r2 = random.Random(i), random.Random(i)
        a = ref.evaluate(policies, left, p, rng=r1)
        b = vec.evaluate(policies, right, p, rng=r2)
        assert diff_decisions(a, b) == [], (p["metadata"]["name"], diff_decisions(a, b))
        assert a == b
        assert r1.random() == r2.random()
        if a.node is not None:
            left.assume(p, a.node)
            right.assume(p, a.node)


CLUSTER = [
    node("n1", {"zone": "a", "team": "red", "kernel": "5", "gpu": "2"}, cpu="4", memory="8Gi"),
    node("n2", {"zone": "b", "team": "blue", "kernel": "10"}, cpu="500m", memory="1Gi",
         taints=[{"key": "spot", "value": "", "effect": "NoSchedule"}]),
    node("n3", {"zone": "a"}, cpu="0", memory="2Gi", extra={"example.com/gpu": "4"},
         taints=[{"key": "slow", "value": "x", "effect": "PreferNoSchedule"}]),
    node("n4", {}, cpu="16", memory="64Gi", unschedulable=True, pods="3"),
    pod("r1", on="n1", labels={"app": "web"}, cpu="1", memory="1Gi", ports=[8080]),
    pod("r2", on="n1", labels={"app": "web"}, cpu="500m"),
    pod("r3", on="n2", labels={"app": "db"}, memory="512Mi", priority=7),
    pod("r4", on="n4", labels={"app": "web"}, ns="other", priority=3),
]
PENDING = [
    pod("p1", labels={"app": "web", "team": "red"}, cpu="250m", memory="256Mi"),
    pod("p2", labels={"app": "db"}, cpu="3", memory="6Gi", ports=[8080]),
    pod("p3", labels={"app": "web"}, tolerations=[{"key": "spot", "operator": "Exists"}], cpu="100m"),
    pod("p4", labels={}, cpu="20", memory="100Gi", priority=2_000_000),
]


def test_default_policies_all_take_the_vector_path() -> None:
    report = lowering_report(default_policies())
    assert report and all(path == "vector" for path, _ in report.values()), report


def test_default_policies_agree_on_a_small_cluster() -> None:
    agree(default_policies(), CLUSTER, PENDING)


def test_labels_equality_membership_and_string_order() -> None:
    agree(load('''
filter labels
  reason "wrong labels"
  require not ("team" in node.labels) or node.labels["team"] in [pod.labels["team"], "shared"]
  require node.labels["kernel"] >= "10" or node.labels["zone"] == "a"
    else "kernel " + node.labels["kernel"] + " in zone " + node.labels["zone"]
score zone weight 2 normalize none
  value if node.labels["zone"] == "a" then 100 else if "zone" in node.labels then 40 else 0
'''), CLUSTER, PENDING)


def test_counts_over_node_pods() -> None:
    agree(load('''
filter density
  reason "crowded"
  require count(p in node.pods where p.labels["app"] == pod.labels["app"] and p.namespace == pod.namespace) < 2
score crowd weight 1 normalize reverse
  value sum(p in node.pods where p.priority >= 0: 1 + len(p.labels))
score lowest weight 1 normalize minmax
  value min(p in node.pods: p.priority)
score highest weight 1 normalize minmax
  value max(i, p in node.pods: p.priority * 10 + i, default -5)
'''), CLUSTER, PENDING)


def test_quantity_arithmetic_division_by_zero_and_floats() -> None:
    agree(load('''
filter per_core
  let per = node.allocatable["memory"] / node.allocatable["cpu"]
  require per >= 256Mi else "low memory per core"
score free weight 3 normalize scale
  value max(0, trunc((node.allocatable["cpu"] - node.requested["cpu"] - pod.requests["cpu"]) * 1000))
score pressure weight 1 normalize minmax
  ignore node when node.allocatable["memory"] == 0
  let used = float((node.requested["memory"] + pod.requests["memory"]) / node.allocatable["memory"])
  value round(100.0 * sqrt(min(used, 4.0))) - trunc(ln(float(node.pod_count + 1)) * 10.0)
score mixed weight 1 normalize minmax
  value round(node.allocatable["cpu"] * 1.5 + float(node.pod_count) / 3.0) % 7 - node.pod_count / 2
'''), CLUSTER, PENDING)


def test_trunc_and_round_of_signed_and_unsigned_quantities_and_floats() -> None:
    """trunc / round of quantity columns whose numerators are all non-negative (one floor division) and of
    columns with negative rows (the sign taken off and put back), with a halving that lands on .5; of
    floats (trunc by the int64 cast, round half away from zero); sums whose first item is on every row
    or on some rows only."""
    agree(load('''
score q_unsigned weight 1 normalize minmax
  value trunc(node.allocatable["cpu"] * 7 / 2) + round(node.allocatable["memory"] / 3Gi)
    + 100 * round(node.allocatable["cpu"] * 3)
score q_signed weight 1 normalize minmax
  value trunc((node.requested["cpu"] - pod.requests["cpu"] - 1) * 5 / 2)
    + round((node.requested["cpu"] - 2) * 3 / 2) + 100 * round((node.allocatable["cpu"] - 1) * 3)
score f_signed weight 1 normalize minmax
  value trunc(float(node.pod_count) * -1.5 + 2.5) + round(float(node.pod_count) * 0.5 - 1.5)
score sums weight 1 normalize minmax
  value sum(r in ["cpu", "memory"]: trunc(node.allocatable[r] / 1Mi))
    + sum(r in ["cpu", "memory"] where node.allocatable[r] > 2: trunc(node.requested[r] * 3 / 2))
'''), CLUSTER, PENDING)


def test_int_division_and_remainder_truncate_toward_zero_on_signed_rows() -> None:
    """Go's ``/`` and ``%`` on int columns: a dividend >= 0 on every row over a divisor > 0 takes numpy's
    floor division directly (the mean of a score); a dividend negative on some rows, or a divisor column,
    must still truncate toward zero and keep the dividend's sign."""
    agree(load('''
score unsigned weight 1 normalize minmax
  value (node.pod_count * 7 + 5) / 3 + (node.pod_count * 7 + 5) % 3 * 10
score signed weight 1 normalize minmax
  value (node.pod_count - 2) * 7 / 3 + (node.pod_count - 2) * 7 % 3 * 10
score by_column weight 1 normalize minmax
  value 100 / (node.pod_count + 1) + (0 - 100) / (node.pod_count + 1)
    + (node.pod_count * 5 - 7) % (node.pod_count + 2) * 1000
'''), CLUSTER, PENDING)


def test_an_if_taking_one_branch_on_every_row_keeps_that_branch_s_and_the_condition_s_error_rows() -> None:
    """A node-dependent ``if`` whose condition is the same on every row takes that branch's column as it
    is; a division by zero in that branch (n3 has no cpu), or in the condition itself, is still an error
    of that node in both backends."""
    agree(load('''
score then_errs weight 1 normalize minmax
  value if node.pod_count >= 0 then trunc(100 / node.allocatable["cpu"]) else 7
score else_errs weight 1 normalize minmax
  value if node.pod_count < 0 then 3 else trunc(100 / node.allocatable["cpu"])
score cond_errs weight 1 normalize minmax
  value if 100 / node.allocatable["cpu"] > 0 then node.pod_count else 5
'''), CLUSTER, PENDING)


def test_trunc_and_round_of_non_negative_floats_beyond_int64_or_not_finite_agree() -> None:
    """trunc / round of a float column that is >= 0 on every row take a shortcut (no sign to carry, no row
    to flag) only while every value is also below 2**62: rows beyond int64, infinite or NaN still go to the
    reference, which fails them."""
    agree(load('''
score beyond weight 1 normalize minmax
  value trunc(float(node.pod_count + 1) * 10000000000000000000.0) + round(float(node.pod_count) * 0.25 + 0.5)
score not_finite weight 1 normalize minmax
  let big = float(node.pod_count) * 100000000000000000000.0 * 100000000000000000000.0
  value round(big * big * big * big * big * big * big * big * big * big * big * big * big * big * big * big)
score nan weight 1 normalize minmax
  let inf = float(node.pod_count) * 100000000000000000000.0 * 100000000000000000000.0
  let huge = inf * inf * inf * inf * inf * inf * inf * inf * inf * inf * inf * inf * inf * inf * inf * inf
  value trunc(huge - huge)
'''), CLUSTER, PENDING)


def test_integers_beyond_int64_go_to_the_reference_and_still_agree() -> None:
    agree(load('''
score huge weight 1 normalize minmax
  value (node.pod_count + 4611686018427387904) * 4 / 8 - 2305843009213693952 * (node.pod_count + 4)
score huge_quantity weight 1 normalize minmax
  value trunc(node.allocatable["memory"] * 1000000000000 / 3)
'''), CLUSTER, PENDING)


def test_masked_lists_len_sum_index_first_and_reject_each() -> None:
    agree(load('''
filter fit
  reject "Too many pods" when node.pod_count + 1 > node.allocatable["pods"]
  reject each ["Insufficient " + r for r in ["cpu", "memory"] + pod.scalar_resources
    where pod.requests[r] > 0 and pod.requests[r] > node.allocatable[r] - node.requested[r]]
filter first_missing
  let missing = first([k for k in ["zone", "team", "kernel"] where not (k in node.labels)])
  require len(missing) == 0 or pod.labels["app"] != "db"
    else if (all k in missing: k == "zone") then "no zone" else "no " + missing[0]
score parts weight 1 normalize none
  let parts = [trunc((node.allocatable[r] - node.requested[r]) * 100 / node.allocatable[r])
    for r in ["cpu", "memory"] where node.allocatable[r] > 0]
  value if len(parts) == 0 then 0 else sum(s in parts: s) / len(parts)
score balanced weight 1 normalize none
  let fs = [min(1.0, float((node.requested[r] + pod.requests[r]) / node.allocatable[r]))
    for r in ["cpu", "memory"] where node.allocatable[r] > 0]
  value trunc((1.0 - (if len(fs) == 2 then abs((fs[0] - fs[1]) / 2.0) else 0.0)) * 100.0)
'''), CLUSTER, PENDING)


def test_taint_loops_tolerations_and_ragged_reasons() -> None:
    agree(load('''
filter hard_taints
  reject each ["untolerated taint " + t.key + ":" + t.effect for t in node.taints
    where t.effect != "PreferNoSchedule" and not (any tol in pod.tolerations: tol.tolerates(t))]
  reject "cordoned" when node.unschedulable
    and not pod.tolerates(taint("node.kubernetes.io/unschedulable", "", "NoSchedule"))
score soft weight 1 normalize minmax
  let soft = count(t in node.taints where t.effect == "PreferNoSchedule" and not pod.tolerates(t))
  let spot = any t in node.taints: t.key == "spot"
  value -10 * soft - (if spot then 25 else 0) + len(node.taints)
'''), CLUSTER, PENDING)


def test_node_dependent_lets_and_loop_items_read_inside_a_loop_over_a_node_list() -> None:
    """A let bound to a node column, and an item of a loop over a pod list, read in the body of a loop over
    ``node.taints``: each is taken onto the taint elements of its node (bound on the node rows, where
    :meth:`Ctx.bind` shares the parent's levels, they are read as level 0 from one level down)."""
    agree(load('''
filter per_taint
  let cpu = node.allocatable["cpu"]
  reject each ["taint " + t.key + " on " + str(cpu) for t in node.taints where cpu > quantity(1)]
score per_taint weight 1 normalize minmax
  let cpu = node.allocatable["cpu"]
  let big = node.allocatable["memory"] > quantity(1073741824)
  value count(t in node.taints where cpu < quantity(2) or big)
    + sum(k in ["spot", "slow"]: count(t in node.taints where t.key == k and cpu < quantity(1)))
'''), CLUSTER + [node("n5", {}, cpu="2", memory="4Gi", taints=[
        {"key": "spot", "value": "", "effect": "NoSchedule"}, {"key": "slow", "value": "y", "effect": "NoExecute"}])],
        PENDING)


def test_ports_node_selectors_and_affinity_terms() -> None:
    pending = [
        pod("a", ports=[8080], nodeSelector={"zone": "a"}),
        pod("b", affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "gpu", "operator": "Gt", "values": ["1"]}]},
            {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}],
             "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2", "n4"]}]}]}}}),
        pod("c", affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 5, "preference": {"matchExpressions": [{"key": "team", "operator": "Exists"}]}},
            {"weight": 2, "preference": {"matchExpressions": [{"key": "kernel", "operator": "Lt", "values": ["7"]}]}}]}}),
    ]
    agree(load('''
filter ports
  require all p in pod.host_ports: not node.port_conflict(p) else "port taken"
filter by_hand
  require all p in pod.host_ports: not (any u in node.used_ports: u.conflicts(p)) else "port taken by hand"
filter affinity
  reason "affinity"
  require pod.matches_node_affinity(node)
score preferred weight 1 normalize scale
  value sum(p in pod.preferred_node_affinity where p.preference.matches(node): p.weight)
score selector weight 1 normalize none
  applies when len(pod.node_selector) > 0
  let matched = count(k in pod.node_selector where node.labels[k] == pod.node_selector[k])
  value if (all k, v in pod.node_selector: node.labels[k] == v) then 100
    else matched * 100 / (len(pod.node_selector) + 1)
'''), CLUSTER, pending)


def test_runtime_errors_give_the_reference_verdicts() -> None:
    agree(load('''
filter divide
  reason "never"
  require 10 / (node.pod_count - 1) >= 0
score index weight 1 normalize minmax
  let xs = [node.pod_count for r in ["cpu"] where node.allocatable[r] > 0]
  value xs[0] + [1, 2][pod.priority % 3]
score podlevel weight 1 normalize minmax
  value if node.pod_count > 1 then pod.priority / (pod.priority - pod.priority) else 3
'''), CLUSTER, PENDING)


def test_unsupported_constructs_fall_back_per_rule_with_a_reason() -> None:
    policies = load('''
filter label_loop
  reason "too many labels"
  require count(k, v in node.labels where v != "") < 4
score fine weight 1 normalize none
  value if node.unschedulable then 0 else 100
''')
    report = lowering_report(policies)
    assert report["filter label_loop"][0] == "reference"
    assert "map" in report["filter label_loop"][1]
    assert report["score fine"][0] == "vector"
    agree(policies, CLUSTER, PENDING, expect_vector=False)


def test_node_updates_are_seen_incrementally() -> None:
    """One evaluator, one snapshot, many assumes: the cached columns follow every change."""
    pending = [pod(f"q{i}", labels={"app": "web"}, cpu="300m", memory="300Mi", ports=[9000 + i % 2])
               for i in range(12)]
    agree(default_policies(), CLUSTER, pending)
    agree(load('''
filter density
  reason "crowded"
  require count(p in node.pods where p.labels["app"] == pod.labels["app"]) < 3
score free weight 1 normalize scale
  value trunc((node.allocatable["memory"] - node.requested["memory"]) / 1Mi)
'''), CLUSTER, pending)


@pytest.mark.parametrize("seed", range(3))
def test_generated_clusters_with_the_default_policies(seed: int) -> None:
    from tests.gen import random_case

    case = random_case(seed + 500)
    objects = [o for o in case.objects]
    agree(default_policies(), objects, [case.pod])


def test_str_of_a_per_node_int_in_a_reason_with_two_distinct_values() -> None:
    """The bug report's repro: the failing nodes run 1 and 0 pods (str() was lowered as sqrt())."""
    agree(load('''
filter q
  require false else "node(s) run " + str(node.pod_count) + " pods"
'''), [node("n1"), node("n2"), pod("r", on="n1")], [pod("p")])


STR_CLUSTER = [
    *CLUSTER,
    node("n5", {"zone": "c", "team": "red"}, cpu="1500m", memory="3Gi", pods="7", unschedulable=True),
    pod("r5", on="n5", cpu="333m", priority=-4),
    pod("r6", on="n5", memory="1536Mi", priority=1_000_000),
    pod("r7", on="n5", priority=12),
]


STR_REASONS = {
    "ints": '''
filter ints
  require false else "pods=" + str(node.pod_count) + " neg=" + str(-node.pod_count * 1000000)
    + " sum=" + str(sum(p in node.pods: p.priority))
''',
    "floats": '''
filter floats
  let f = float(node.pod_count)
  require false else str(f / 3.0) + "|" + str(f * 1000000.0) + "|" + str(f / 100000.0) + "|"
    + str(float(1 - node.pod_count) * 0.0) + "|" + str(sqrt(f)) + "|" + str(f) + "|" + str(-f / 7.0)
''',
    "quantities": '''
filter quantities
  require false else str(node.allocatable["cpu"]) + " " + str(node.allocatable["memory"]) + " "
    + str(node.allocatable["cpu"] / 3) + " " + str(node.requested["cpu"]) + " " + str(node.allocatable["pods"] - 1)
    + " " + str(-node.requested["memory"] / 1000)
''',
    "bools": '''
filter bools
  require false else str(node.unschedulable) + "/" + str(node.pod_count > 1) + "/" + str("zone" in node.labels)
''',
    "strings": '''
filter strings
  require false else str(node.labels["zone"]) + str(len(str(node.pod_count * 7)))
''',
    "reject_when": '''
filter reject_when
  reject "node runs " + str(node.pod_count) + " pods, " + str(float(node.pod_count) / 4.0) + " quarters"
    when node.pod_count > 0
''',
    "reject_each_node_pods": '''
filter reject_each_node_pods
  reject each ["p" + str(p.priority) + ":" + str(p.requests["cpu"]) + ":" + str(float(p.priority) / 8.0)
    + ":" + str(p.priority > 5) for p in node.pods]
''',
    "reject_each_unrolled": '''
filter reject_each_unrolled
  reject each [r + "=" + str(node.allocatable[r]) + "/" + str(node.allocatable[r] > 1) + "/"
    + str(float(node.allocatable[r]) / 3.0) + "/" + str(node.pod_count) for r in ["cpu", "memory"]
    where node.allocatable[r] < 10]
''',
    "pod_level": '''
filter pod_level
  reject "prio " + str(pod.priority) + " cpu " + str(pod.requests["cpu"]) + " mem " + str(pod.requests["memory"])
    + " " + str(float(pod.priority) / 3.0) + " " + str(pod.priority > 0) when node.pod_count != 1
  reject each ["want " + str(x) + " " + str(float(x) * 0.1) for x in [pod.priority, len(pod.labels)]
    where node.pod_count > x]
''',
}


@pytest.mark.parametrize("rule", sorted(STR_REASONS))
def test_str_of_ints_floats_quantities_and_bools_in_reasons(rule: str) -> None:
    """str() in ``require ... else``, ``reject ... when`` and ``reject each`` reasons, per node, per item of
    the node's pods, per item of an unrolled pod-level list, and of pod-level values (one rule per policy:
    a filter only sees the nodes the ones before it passed)."""
    agree(load(STR_REASONS[rule]), STR_CLUSTER, PENDING)


def test_numeric_conversions_and_string_builtins_on_node_values() -> None:
    """int(), quantity(), lower(), starts_with() ... of per-node values are themselves (not sqrt())."""
    agree(load('''
filter text
  require not starts_with(node.labels["team"], "bl") else "blue-ish " + lower(node.labels["team"] + "X")
  require not ends_with(node.labels["zone"], "c") and not is_int(node.labels["kernel"] + "x")
    else "zone c or odd kernel " + str(is_int(node.labels["kernel"])) + str(is_quantity(node.labels["gpu"]))
    + str(is_float(node.labels["kernel"]))
score conversions weight 1 normalize none
  value int(node.allocatable["cpu"] * 10) + trunc(quantity(node.pod_count) * 1000 / 7) + int(float(node.pod_count) * 2.5)
score lengths weight 1 normalize minmax
  value len(str(node.allocatable["memory"])) + len(str(float(node.pod_count) / 7.0)) + len(lower(node.labels["zone"]))
'''), STR_CLUSTER, PENDING)


def test_a_loop_item_that_fails_on_every_row_errs_those_rows_in_both_backends() -> None:
    """An unrolled loop item whose body fails for the pod itself (``10 / x`` with ``x = 0``) is not
    skipped: every row that reaches it goes to the reference, which reports the failure, so the vector
    backend decides like the reference (one item of the sum, the count and the quantifier each)."""
    agree(load('''
filter poisoned_quantifier
  reason "too many taints"
  require all x in [0, 2]: len(node.taints) < 10 / x
score poisoned_sum weight 1 normalize none
  value sum(x in [0, 2]: len(node.taints) + 10 / x)
score poisoned_list weight 1 normalize none
  value len([len(node.taints) + 10 / x for x in [0, 2]])
'''), CLUSTER, PENDING)


def test_a_score_error_on_an_ignored_node_sends_no_row_to_the_reference() -> None:
    """An ignored node takes no part in the score: its value is not the rule's, so a division by zero
    there (n3 has no cpu) is no error row -- the vector backend decides every row itself, and both
    backends agree."""
    from policyscheduler.evaluation.driver import Driver
    from policyscheduler.evaluation.vector import VectorBackend

    policies = load('''
score per_core weight 1 normalize minmax
  ignore node when node.allocatable["cpu"] == 0
  value trunc(node.allocatable["memory"] / node.allocatable["cpu"] / 1Mi)
''')
    agree(policies, CLUSTER, PENDING)
    backend = VectorBackend()
    driver = Driver(backend)
    snapshot = ClusterSnapshot.from_objects(CLUSTER)
    for i, p in enumerate(PENDING):
        decision = driver.evaluate(policies, snapshot, p, rng=random.Random(i))
        assert not decision.score_errors, decision.score_errors
    assert backend.reference_rows["score per_core"] == 0, backend.reference_rows


def test_the_index_of_a_loop_over_a_list_whose_items_vary_by_node_counts_only_present_items() -> None:
    """``i, r in kept`` over a list built per node: on n3 (no cpu) "memory" is item 0, elsewhere item 1,
    so the index is a per-node count of the items before it, in both backends."""
    agree(load('''
score ranked weight 1 normalize minmax
  let kept = [r for r in ["cpu", "memory"] where node.allocatable[r] > 0]
  value sum(i, r in kept: (i + 1) * 10 + len(r))
'''), CLUSTER, PENDING)


def test_rules_run_on_every_node_when_a_few_are_left_out_and_answer_only_for_the_rest() -> None:
    """A rule asked about most nodes (here 9 of 12: three fail the first filter) runs on all 12 (no
    per-column copies; ``VectorRun._wide``). What it finds on the three left out -- a verdict of their
    own, a division by zero (an error, which would go to the reference and be reported) -- must not
    reach the decision: both backends still agree, and the filter's outcome names only verdicts that
    some asked node has."""
    policies = load('''
filter gate
  reason "gated"
  require node.labels["gate"] == "open"
filter roomy
  reject "too small" when node.allocatable["cpu"] < quantity("2")
  reject "odd" when node.labels["shape"] == "odd"
filter divide
  reason "never"
  require 10 / (node.allocatable["pods"] - 7) >= 0
score per_cpu weight 1 normalize minmax
  value trunc(100 / (node.allocatable["pods"] - 7))
''')
    nodes = [node(f"n{i}", {"gate": "open" if i >= 3 else "shut", "shape": "odd" if i == 0 else "even"},
                  cpu="1" if i in (1, 5) else "8", pods="7" if i < 3 else "110") for i in range(12)]
    pending = [pod(f"p{i}", cpu="100m") for i in range(3)]
    agree(policies, nodes, pending)

    from policyscheduler.evaluation.vector.backend import VectorBackend

    snapshot = ClusterSnapshot.from_objects(nodes)
    record = snapshot.pod_record(pending[0])
    backend = VectorBackend()
    run = backend.start(policies, snapshot, record, snapshot.context(record))
    asked = np.arange(3, 12, dtype=np.int64)
    filters = {r.name: r for r in policies.filters}
    out = run.filter(filters["roomy"], asked)
    named = {out.verdicts[c].reasons for c in out.codes.tolist() if c >= 0}
    assert named == {("too small",)}  # n5 only: n0's "odd" and n1's "too small" are not asked about
    assert len(out.verdicts) == len(named)
    # n0-n2 (pods 7) divide by zero, but they were not asked about: no row goes to the reference
    assert run.filter(filters["divide"], asked).verdicts == []
    assert run.score(policies.scores[0], asked).raw.tolist() == [0] * 9
    assert not backend.reference_rows, backend.reference_rows


def test_integers_just_past_two_to_the_53_are_not_taken_as_exact_floats() -> None:
    """2**53 + 1 is the first integer a float cannot hold: as a float it is 2**53, so a check "is this
    numerator exact as a float?" made on its float value passes it. ``float(q)`` of such a quantity over
    3 then rounds twice (...330.5) where the reference's exact quotient rounds once (...331.0); the row
    must go to the reference instead. Fails with the ``> 2**53`` test the vector backend had."""
    big = 2**53 + 1
    assert float(big) == 2.0**53 and float(big) / 3 != 3002399751580331.0  # the double rounding itself
    policies = load('''
filter exact
  reject "rounded once" when float(node.allocatable["memory"] / quantity("3")) == 3002399751580331.0
''')
    nodes = [node(f"n{i}", memory=str(big if i % 2 else 2**40)) for i in range(10)]
    agree(policies, nodes, [pod("p", cpu="100m")])
    decision = make_evaluator("vector").evaluate(policies, ClusterSnapshot.from_objects(nodes), pod("p"),
                                                 rng=random.Random(0))
    assert sorted(decision.feasible) == [f"n{i}" for i in range(0, 10, 2)]


def test_a_denominator_leaving_int64_goes_to_the_reference_without_a_numpy_warning(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Chained divisions by constants multiply the denominators (1e9 * 1e9 * 1e6 leaves int64). The
    guard must see that before numpy multiplies the two scalars: the multiplication itself would
    overflow and warn ("overflow encountered in scalar multiply" -- an error under pytest's
    ``filterwarnings = error``, a stray line on a scheduler's stderr). Fails with the product taken
    before its guard."""
    from policyscheduler.evaluation.vector import backend as vector_backend

    monkeypatch.setattr(vector_backend, "SMALL", 0)  # the lowered path even on these few nodes
    policies = load('''
filter tiny
  require node.allocatable["memory"] / 1000000000 / 1000000000 / 1000000 >= 0 else "negative memory"
''')
    agree(policies, CLUSTER, PENDING)
