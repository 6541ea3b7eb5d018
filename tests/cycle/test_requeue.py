"""Requeue by what rules read: an unschedulable pod moves only on events that can change its verdict."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from policyscheduler.compiler import PolicySet
from policyscheduler.cycle import UNSCHEDULABLE, ClusterCache, Cycle, SchedulingQueue
from policyscheduler.cycle.events import ClusterEvent, Interest, facets_of_reads, node_facets_changed
from policyscheduler.cycle.queue import QueuedPod
from policyscheduler.evaluation import make_evaluator
from policyscheduler.loader import load_policy_set, load_policy_texts
from tests.evaluation.policies import default_policies


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def node(name: str, cpu: str = "2", labels: dict[str, str] | None = None,
         taints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
           "spec": {}, "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}
    if taints:
        obj["spec"]["taints"] = taints
    return obj


def pod(name: str, cpu: str = "1", selector: dict[str, str] | None = None,
        node_name: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]}
    if selector:
        spec["nodeSelector"] = selector
    if node_name:
        spec["nodeName"] = node_name
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"}, "spec": spec}


def unschedulable(objects: list[dict[str, Any]], pending: dict[str, Any],
                  policy_set: PolicySet | None = None) -> tuple[Cycle, SchedulingQueue]:
    queue = SchedulingQueue(clock=Clock())
    cycle = Cycle(queue, ClusterCache(objects), make_evaluator("reference"), policy_set or default_policies(),
                  lambda a: None, rng=random.Random(0))
    queue.add("p", pending)
    attempt = cycle.schedule_one()
    assert attempt is not None and attempt.result == UNSCHEDULABLE and attempt.queue == "unschedulable"
    return cycle, queue


def test_facets_of_the_default_rules() -> None:
    ps = default_policies()
    fit = ps.analyses["filter node_resources_fit"].reads
    assert facets_of_reads(fit) == {"allocatable", "pods+", "pods-", "pods~"}
    assert facets_of_reads(ps.analyses["filter node_affinity"].reads) == {"labels"}
    assert facets_of_reads(ps.analyses["filter taint_toleration"].reads) == {"taints"}
    assert "cluster" in facets_of_reads(ps.analyses["filter pod_topology_spread"].reads)
    assert facets_of_reads(["Node.brand_new_field"]) == {"node"}


def test_node_diff_ignores_heartbeats() -> None:
    a = node("n1")
    b = {**a, "status": {**a["status"], "conditions": [{"type": "Ready", "status": "True"}]}}
    assert node_facets_changed(a, b) == frozenset()
    c = {**a, "metadata": {**a["metadata"], "labels": {"x": "y"}}}
    assert node_facets_changed(a, c) == {"labels", "cluster", "node"}
    d = {**a, "status": {"allocatable": {"cpu": "4"}}}
    assert node_facets_changed(a, d) == {"allocatable", "node"}


def test_label_change_does_not_move_a_pod_rejected_for_cpu() -> None:
    _, queue = unschedulable([node("n1", cpu="1")], pod("p", cpu="2"))
    assert queue.move(ClusterEvent.node_updated("n1", frozenset({"labels", "cluster", "node"}))) == 0
    assert queue.move(ClusterEvent.node_updated("n1", frozenset({"taints", "cluster", "node"}))) == 0
    assert queue.pending()["unschedulable"] == 1
    # more allocatable on the node that rejected it for cpu: back it goes
    assert queue.move(ClusterEvent.node_updated("n1", frozenset({"allocatable", "node"}))) == 1


def test_label_change_moves_a_pod_rejected_by_node_affinity_only_for_that_node() -> None:
    objects = [node("n1", cpu="1"), node("n2")]
    _, queue = unschedulable(objects, pod("p", selector={"disk": "ssd"}))
    # n1 and n2 were both rejected by node_affinity (the first failing filter)
    assert queue.move(ClusterEvent.node_updated("n2", frozenset({"allocatable", "node"}))) == 0
    assert queue.move(ClusterEvent.node_updated("n2", frozenset({"labels", "cluster", "node"}))) == 1


def test_pod_events_are_local_to_their_node() -> None:
    tainted = node("n2", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])
    _, queue = unschedulable([node("n1", cpu="1"), tainted], pod("p", cpu="2"))
    # n2 (taint) does not care about pods; n1 (cpu) does
    assert queue.move(ClusterEvent.assigned_pod("AssignedPodDelete", "n2")) == 0
    assert queue.move(ClusterEvent.assigned_pod("AssignedPodDelete", "n1")) == 1


def test_node_added_and_policy_reload_always_move() -> None:
    _, queue = unschedulable([node("n1", cpu="1")], pod("p", cpu="2"))
    assert queue.move(ClusterEvent.node_added("n9")) == 1
    Clock.now += 2
    assert queue.pop() is not None


def spreading_pod() -> dict[str, Any]:
    """Pod ``s`` (label app=s), spread over ``zone`` with maxSkew 1 against the pods of its app."""
    spread = pod("s")
    spread["metadata"]["labels"] = {"app": "s"}
    spread["spec"]["topologySpreadConstraints"] = [{
        "maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "s"}}}]
    return spread


def test_node_deleted_or_namespace_change_moves_only_cluster_readers() -> None:
    _, queue = unschedulable([node("n1", cpu="1")], pod("p", cpu="2"))
    assert queue.move(ClusterEvent.node_deleted("n1")) == 0
    assert queue.move(ClusterEvent.cluster("NamespaceChange")) == 0
    spread = spreading_pod()
    objects = [node("a", cpu="8", labels={"zone": "a"}), node("b", cpu="0", labels={"zone": "b"}),
               pod("x", node_name="a"), {**pod("y", node_name="a"), "metadata": {
                   "name": "y", "namespace": "default", "uid": "uid-y", "labels": {"app": "s"}}}]
    objects[2]["metadata"]["labels"] = {"app": "s"}
    _, queue = unschedulable(objects, spread)
    assert queue.move(ClusterEvent.cluster("NamespaceChange")) == 1


def test_a_user_rule_reading_new_members_is_honoured(tmp_path: Path) -> None:
    (tmp_path / "gpu.policy").write_text(
        '## Only nodes labelled gpu.\n'
        'filter wants_gpu\n'
        '  reason "node(s) without a gpu label"\n'
        '  require "gpu" in node.labels\n')
    loaded = load_policy_set([tmp_path])
    assert loaded.policy_set is not None, loaded.diagnostics
    _, queue = unschedulable([node("n1")], pod("p"), loaded.policy_set)
    assert queue.move(ClusterEvent.assigned_pod("AssignedPodDelete", "n1")) == 0
    assert queue.move(ClusterEvent.node_updated("n1", frozenset({"labels", "cluster", "node"}))) == 1


def popped_too_big() -> tuple[Cycle, SchedulingQueue, QueuedPod]:
    """A 2-CPU pod popped for its attempt on a cluster of one 1-CPU node (it will not fit)."""
    queue = SchedulingQueue(clock=Clock())
    cycle = Cycle(queue, ClusterCache([node("n1", cpu="1")]), make_evaluator("reference"), default_policies(),
                  lambda a: None, rng=random.Random(0))
    queue.add("p", pod("p", cpu="2"))
    entry = queue.pop()
    assert entry is not None
    return cycle, queue, entry


def test_event_during_the_attempt_is_checked_against_the_pods_interest() -> None:
    cycle, queue, entry = popped_too_big()
    queue.move(ClusterEvent.node_updated("n1", frozenset({"labels", "cluster", "node"})))  # irrelevant
    attempt = cycle.attempt(entry)
    assert attempt.queue == "unschedulable"
    queue.move(ClusterEvent.node_added("n2"))
    Clock.now += 5
    again = queue.pop()
    assert again is not None
    queue.move(ClusterEvent.assigned_pod("AssignedPodDelete", "n1"))  # relevant, arrives mid-attempt
    assert cycle.attempt(again).queue == "backoff"


def test_interest_without_nodes_waits_for_a_node() -> None:
    _, queue = unschedulable([], pod("p"))
    assert queue.move(ClusterEvent.cluster("NamespaceChange")) == 0
    assert queue.move(ClusterEvent.assigned_pod("AssignedPodDelete", "n1")) == 0
    assert queue.move(ClusterEvent.node_added("n1")) == 1


@pytest.mark.parametrize("rule", [None, "no_such_rule"])
def test_unknown_rule_is_conservative(rule: str | None) -> None:
    interest = Interest({"n1": rule}, {rule: facets_of_reads(["Node.labels"]) if rule is None else
                                       frozenset({"labels", "taints", "allocatable", "pods+", "cluster", "node",
                                                  "images", "annotations", "unschedulable"})},
                        frozenset({"labels"}))
    assert interest.wants(ClusterEvent.node_updated("n1", frozenset({"labels"})))


def test_every_move_is_a_debug_line_naming_the_event_and_the_pods(caplog: pytest.LogCaptureFixture) -> None:
    """Why a pod was tried again must be answerable from the log (``-v 4``): the event that moved it out of
    the unschedulable pool, or the one that arrived during its attempt and sent it to backoff."""
    cycle, queue, entry = popped_too_big()
    with caplog.at_level("DEBUG", logger="policyscheduler.queue"):
        queue.move(ClusterEvent.assigned_pod("AssignedPodDelete", "n1"))  # mid-attempt
        assert cycle.attempt(entry).queue == "backoff"
        Clock.now += 5
        again = queue.pop()
        assert again is not None and cycle.attempt(again).queue == "unschedulable"
        queue.move(ClusterEvent.node_updated("n1", frozenset({"labels", "node"})))  # irrelevant: no line
        queue.move(ClusterEvent.assigned_pod("AssignedPodDelete", "n1"))
    moves = [(r.fields["event"], r.fields["node"], r.fields["pods"])  # type: ignore[attr-defined]
             for r in caplog.records if r.getMessage() == "queue move"]
    assert moves == [("in flight: AssignedPodDelete", "n1", ["default/p"]), ("AssignedPodDelete", "n1", ["default/p"])]


# -- direction: a pod added to a node vs one leaving it (pods+ / pods- / pods~) ------------------------------

LABELS_ONLY = frozenset({"pods~"})
"""What the watch router sends for an assigned pod whose labels alone changed (app/pods.py update_facets)."""


def test_a_pod_fit_rejected_waits_for_a_pod_to_leave_not_for_one_to_arrive() -> None:
    """kube-scheduler's NodeResourcesFit registers pod Delete (and scale-down), never Add: a pod added to
    the node can only use more of it."""
    _, queue = unschedulable([node("n1", cpu="1")], pod("p", cpu="2"))
    assert queue.move(ClusterEvent.assigned_pod("AssignedPodAdd", "n1")) == 0
    assert queue.move(ClusterEvent.assigned_pod("AssignedPodUpdate", "n1", LABELS_ONLY)) == 0
    assert queue.move(ClusterEvent.assigned_pod("AssignedPodAdd", "elsewhere")) == 0
    assert queue.pending()["unschedulable"] == 1
    assert queue.move(ClusterEvent.assigned_pod("AssignedPodDelete", "n1")) == 1


def test_a_resize_of_unknown_direction_moves_a_fit_rejected_pod() -> None:
    _, queue = unschedulable([node("n1", cpu="1")], pod("p", cpu="2"))
    assert queue.move(ClusterEvent.assigned_pod("AssignedPodUpdate", "n1")) == 1  # all directions


def test_a_pod_ports_rejected_waits_for_a_pod_to_leave() -> None:
    def with_port(p: dict[str, Any]) -> dict[str, Any]:
        p["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 80}]
        return p
    objects = [node("n1"), with_port(pod("a", cpu="100m", node_name="n1"))]
    _, queue = unschedulable(objects, with_port(pod("p", cpu="100m")))
    assert queue.move(ClusterEvent.assigned_pod("AssignedPodAdd", "n1")) == 0
    assert queue.move(ClusterEvent.assigned_pod("AssignedPodDelete", "n1")) == 1


def test_a_pod_spreading_rejected_is_still_retried_when_a_pod_arrives() -> None:
    """PodTopologySpread and InterPodAffinity register pod Add: a pod added can satisfy them. Their rules
    read ``cluster`` counts, and the assigned-pod events keep the ``cluster`` facet."""
    spread = spreading_pod()
    objects = [node("a", cpu="8", labels={"zone": "a"}), node("b", cpu="0", labels={"zone": "b"}),
               {**pod("y", node_name="a"), "metadata": {"name": "y", "namespace": "default", "uid": "uid-y",
                                                          "labels": {"app": "s"}}}]
    _, queue = unschedulable(objects, spread)
    assert queue.move(ClusterEvent.assigned_pod("AssignedPodAdd", "b")) == 1
    affine = pod("q")
    affine["spec"]["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}]}}
    _, queue = unschedulable([node("a", labels={"zone": "a"})], affine)
    assert queue.move(ClusterEvent.assigned_pod("AssignedPodAdd", "a")) == 1


def _only(rule: str) -> PolicySet:
    loaded = load_policy_texts([("t.policy", f"filter f\n  reason \"no\"\n  {rule}\n")])
    assert loaded.policy_set is not None, loaded.diagnostics
    return loaded.policy_set


def test_a_rule_growth_helps_waits_for_a_pod_to_arrive() -> None:
    _, queue = unschedulable([node("n1")], pod("p"), _only("require node.pod_count > 0"))
    assert queue.move(ClusterEvent.assigned_pod("AssignedPodDelete", "n1")) == 0
    assert queue.move(ClusterEvent.assigned_pod("AssignedPodUpdate", "n1", LABELS_ONLY)) == 0
    assert queue.move(ClusterEvent.assigned_pod("AssignedPodAdd", "n1")) == 1


def test_an_unproven_rule_takes_every_pod_event() -> None:
    _, queue = unschedulable([node("n1")], pod("p"), _only('require (all q in node.pods: q.labels["x"] == "y") '
                                                          'and node.pod_count == 1'))
    assert queue.move(ClusterEvent.assigned_pod("AssignedPodUpdate", "n1", LABELS_ONLY)) == 1


def test_a_node_where_the_rule_failed_keeps_every_pod_event() -> None:
    """The polarity proof is about rejections. This rule is 'up' but fails (int64 overflow) on an empty
    node, and a pod added there makes it pass: the failure must not be treated as a rejection."""
    rule = "require node.pod_count - 9223372036854775807 - 2 < 0"
    policy_set = _only(rule)
    assert policy_set.analyses["filter f"].pods_polarity == "up"
    _, queue = unschedulable([node("n1")], pod("p"), policy_set)
    interest = next(iter(queue._unschedulable.values())).interest
    assert interest is not None and interest.rule_by_node["n1"] == "f (failed)"
    assert queue.move(ClusterEvent.assigned_pod("AssignedPodAdd", "n1")) == 1
