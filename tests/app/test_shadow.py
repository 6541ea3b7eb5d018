"""Shadow judging without an API server: the comparison of our Decision with the other scheduler's node,
and the watch-order rule (judge a pod's first bind in the state before it, once)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from prometheus_client import generate_latest

from policyscheduler.app.shadow import ShadowProfile, Shadows, compare
from policyscheduler.cycle import ClusterCache
from policyscheduler.evaluation import make_evaluator
from policyscheduler.kube.metrics import SchedulerMetrics
from policyscheduler.state import ClusterSnapshot
from tests.evaluation.policies import default_policies, load

PREFER_SSD = 'score prefer_ssd weight 20 normalize none\n  value if node.labels["disk"] == "ssd" then 100 else 0\n'
NO_HDD = 'filter no_hdd\n  reason "hdd"\n  require node.labels["disk"] != "hdd"\n'


def node(name: str, disk: str, cpu: str = "4") -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "disk": disk}},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}


def pod(name: str, node_name: str | None = None, cpu: str = "1") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"}, "spec": spec}


NODES = [node("ssd", "ssd"), node("hdd-a", "hdd"), node("hdd-b", "hdd")]


@pytest.mark.parametrize("engine", ["reference", "vector"])
def test_agree_tie_disagree_and_the_rule_that_differs_most(engine: str) -> None:
    evaluator = make_evaluator(engine)
    snapshot = ClusterSnapshot.from_objects(NODES)
    plain = evaluator.evaluate(default_policies(), snapshot, pod("p"), rng=random.Random(0))
    assert plain.node is not None and len(plain.top) == 3  # three empty nodes of one size: a three-way tie
    assert compare(plain, plain.node)["agreement"] == "agree"
    other = next(n for n in plain.top if n != plain.node)
    tie = compare(plain, other)
    assert tie["agreement"] == "tie" and tie["score_difference"] == 0

    ssd = evaluator.evaluate(load(PREFER_SSD), snapshot, pod("p"), rng=random.Random(0))
    record = compare(ssd, "hdd-a")
    assert record["agreement"] == "disagree" and (record["ours"], record["theirs"]) == ("ssd", "hdd-a")
    assert (record["rule"], record["rule_difference"], record["score_difference"]) == ("prefer_ssd", 2000, 2000)

    strict = evaluator.evaluate(load(NO_HDD), snapshot, pod("p"), rng=random.Random(0))
    rejected = compare(strict, "hdd-b")
    assert rejected["agreement"] == "disagree" and rejected["their_score"] is None
    assert rejected["their_node_rejected_by"] == "no_hdd"

    none = evaluator.evaluate(load(NO_HDD), ClusterSnapshot.from_objects(NODES[1:]), pod("p"), rng=random.Random(0))
    assert compare(none, "hdd-a")["agreement"] == "unschedulable"


def test_a_pod_is_judged_once_at_its_first_bind_in_the_state_before_it() -> None:
    metrics = SchedulerMetrics("judge", pending=dict, cache=dict, leader=lambda: True)
    cache = ClusterCache()
    judge = ShadowProfile("judge", "default-scheduler", default_policies(), None)
    shadows = Shadows([judge], make_evaluator("reference"), cache, own_cache=True, metrics=metrics,
                      active=lambda: True, rng=random.Random(0))
    shadows.before_upsert("Node", node("n1", "hdd"))
    shadows.before_upsert("Node", node("n2", "hdd"))
    shadows.before_upsert("Pod", pod("a"))  # pending: remembered
    shadows.before_upsert("Pod", pod("a", "n1"))  # bound: judged with both nodes empty (judged after its own
    assert judge.counts["agree"] + judge.counts["tie"] == 1  # bind, n1 would hold it and n2 would win)
    shadows.before_upsert("Pod", pod("a", "n1"))  # an update of a bound pod: not judged again
    shadows.before_upsert("Pod", pod("old", "n2", cpu="100m"))  # bound when first seen: not judged
    shadows.before_upsert("Pod", pod("old", "n2", cpu="100m"))
    assert sum(judge.counts.values()) == 1
    shadows.on_delete("Pod", pod("old", "n2", cpu="100m"))
    # b goes to n1 too, where a already is (applied after a's judging): LeastAllocated says n2.
    shadows.before_upsert("Pod", pod("b"))
    shadows.before_upsert("Pod", pod("b", "n1"))
    assert judge.counts["disagree"] == 1
    text = generate_latest(metrics.registry).decode()
    assert 'policyscheduler_shadow_decisions_total{agreement="disagree",profile="judge"} 1.0' in text
    shadows.before_upsert("Pod", {"kind": "Pod", "metadata": {"name": "x", "uid": "u-x"},
                                  "spec": {"schedulerName": "someone-else"}})
    shadows.before_upsert("Pod", {"kind": "Pod", "metadata": {"name": "x", "uid": "u-x"},
                                  "spec": {"schedulerName": "someone-else", "nodeName": "n1"}})
    assert sum(judge.counts.values()) == 2  # not a shadowed scheduler's pod

