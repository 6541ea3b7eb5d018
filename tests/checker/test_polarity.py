"""The pods polarity of filter rules (checker/polarity.py): how a rule's rejection moves as the pods on the
node grow. "up" must only be answered when growth provably cannot turn a rejection into a pass (the queue
then skips a pod added to that node); anything unproven is "unknown"."""

from __future__ import annotations

import random
from typing import Any

import pytest

from policyscheduler.checker.polarity import CONST, DOWN, UNKNOWN, UP
from policyscheduler.compiler import PolicySet
from policyscheduler.evaluation import evaluate
from policyscheduler.loader import load_policy_set, load_policy_texts
from policyscheduler.state import ClusterSnapshot


def polarity(body: str, kind: str = "filter f") -> str:
    head = f"{kind}\n" + ("  reason \"no\"\n" if kind.startswith("filter") else "")
    text = head + "".join(f"  {line}\n" for line in body.strip().splitlines())
    result = load_policy_texts([("t.policy", text)])
    assert result.policy_set is not None, result.diagnostics
    return result.policy_set.analyses[kind.split(" weight")[0]].pods_polarity


GROWTH_ONLY_REJECTS_MORE = [
    'reject "Too many pods" when node.pod_count + 1 > node.allocatable["pods"]',
    "require node.pod_count < 10",
    "require 10 > node.pod_count",
    "require not (node.pod_count >= 10)",
    "require node.pod_count <= node.allocatable[\"pods\"] - 1",
    'require node.allocatable["cpu"] - node.requested["cpu"] >= pod.requests["cpu"]',
    'require pod.requests["cpu"] <= node.allocatable["cpu"] - node.nonzero_requested["cpu"]',
    "require all p in pod.host_ports: not node.port_conflict(p)",
    "require not (any u in node.used_ports: u.port == 80)",
    "require all u in node.used_ports: u.port != 80",
    "require all p in pod.host_ports: all u in node.used_ports: not u.conflicts(p)",
    "require len(node.pods) < 5",
    "require len(node.used_ports) + node.pod_count < 5",
    "require count(u in node.used_ports where u.port > 0) <= 3",
    'let used = node.requested["cpu"]\nrequire used * 2 <= node.allocatable["cpu"]',
    'let free = node.allocatable["cpu"] - node.requested["cpu"]\nrequire free > 0',
    "require -node.pod_count > -10",
    "require node.pod_count * -1 > -10",
    "require node.pod_count / 2 < 10",
    'require max(node.pod_count, 3) < 10',
    'require trunc(float(node.pod_count) * 1.5) < 10',
    'require node.pod_count < 10 and "a" in node.labels',
    'require node.pod_count < 10 or "a" in node.labels',
    'require not ("cpu" in node.requested)',
    'require sum(r in ["cpu", "memory"]: node.requested[r]) < 5Gi',
    'require (if "big" in node.labels then 20 else 10) > node.pod_count',
    'reject each ["Insufficient " + r for r in ["cpu", "memory"] + pod.scalar_resources '
    'where pod.requests[r] > 0 and pod.requests[r] > node.allocatable[r] - node.requested[r]]',
    'reject each ["full: " + str(node.pod_count) for r in ["x"] where node.pod_count > 3]',
    'reject "busy" when any u in node.used_ports: u.port == 80',
    'applies when len(pod.host_ports) > 0\nrequire all p in pod.host_ports: not node.port_conflict(p)',
]

GROWTH_ONLY_REJECTS_LESS = [
    "require node.pod_count > 0",
    "require len(node.pods) >= 1",
    "require any u in node.used_ports: u.port == 80",
    'reject "empty" when node.pod_count < 1',
    "require not (node.pod_count < 1)",
    '''require "cpu" in node.requested''',
    "require count(u in node.used_ports) * -2 < -1",
    "require 1 - node.pod_count < 0",
]

INDEPENDENT = [
    'require "a" in node.labels',
    "require node.pod_count * 0 < 5",
    "require not node.unschedulable",
    "require all t in node.taints: pod.tolerates(t)",
]

UNPROVEN = [
    "require node.pod_count != 3",
    "require node.pod_count == 3",
    "require node.pod_count * pod.priority < 100",
    "require (if node.pod_count > 3 then 1 else 0) < 1",
    'require all p in node.pods: p.labels["x"] != "y"',
    "require count(p in node.pods) < 3",
    "require node.pod_count < 10 or node.pod_count > 20",
    "require node.pod_count < 10 and not (node.pod_count < 3)",
    "require abs(node.pod_count - 5) < 3",
    "require node.pod_count % 2 == 0",
    "require 100 / (node.pod_count + 1) > 3",
    'require str(node.pod_count) != "3"',
    "require pod.matches_node_affinity(node) and node.pod_count < 3",
    "require max(u in node.used_ports: u.port, default 0) < 100",
    'require node.pod_count < 10\nreject "crowded" when node.pod_count < 1',
    'let n = node\nrequire n.pod_count < 3 and n.pod_count > 1',
]


EXTRA = [  # not monotone: the analysis must not call them "up" or "down"
    "require node.pod_count != 1",
    "require node.pod_count < 2 or node.pod_count > 3",
    'require (if node.pod_count > 1 then 0 else 2) + node.pod_count < 3',
    "require sum(u in node.used_ports: 0 - u.port) > -100",
    'require (if node.pod_count > 1 then 0 else 700m) + node.requested["cpu"] < 1500m',
    "require len(node.used_ports) * (pod.priority - 1) < 1",
]


@pytest.mark.parametrize("body", GROWTH_ONLY_REJECTS_MORE)
def test_growth_only_rejects_more(body: str) -> None:
    assert polarity(body) == UP


@pytest.mark.parametrize("body", GROWTH_ONLY_REJECTS_LESS)
def test_growth_only_rejects_less(body: str) -> None:
    assert polarity(body) == DOWN


@pytest.mark.parametrize("body", INDEPENDENT)
def test_rules_that_do_not_depend_on_the_pods(body: str) -> None:
    assert polarity(body) == CONST


@pytest.mark.parametrize("body", UNPROVEN + EXTRA)
def test_what_cannot_be_proven_may_help(body: str) -> None:
    assert polarity(body) == UNKNOWN


def test_lets_carry_their_direction() -> None:
    assert polarity("let n = node\nrequire n.pod_count < 3") == UP
    assert polarity("let c = -node.pod_count\nrequire c < -3") == DOWN
    assert polarity("let c = node.pod_count\nlet d = 5 - c\nrequire d > 0") == UP


def test_only_filters_have_a_polarity() -> None:
    assert polarity("value node.pod_count", "score s weight 1") == UNKNOWN


def test_default_rules() -> None:
    """Fit and NodePorts: growth only rejects more (kube-scheduler registers pod Delete, never Add, for
    them); the rules reading ``cluster`` (spread, inter-pod affinity) keep their ``cluster`` facet anyway."""
    ps = load_policy_set(["policies"]).policy_set
    assert ps is not None
    analyses = ps.analyses
    assert analyses["filter node_resources_fit"].pods_polarity == UP
    assert analyses["filter node_ports"].pods_polarity == UP
    assert analyses["filter taint_toleration"].pods_polarity == CONST


# -- the proof against the evaluator: a pod added to the node never turns an "up" rule's rejection into a pass



def _pod(rng: random.Random, name: str, node: str | None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "i",
                                 "resources": {"requests": {"cpu": f"{rng.choice([0, 100, 400, 700, 1500])}m"}}}
    port = rng.choice([None, 80, 443])
    if port is not None:
        container["ports"] = [{"containerPort": port, "hostPort": port}]
    spec: dict[str, Any] = {"containers": [container], "priority": rng.choice([0, 1, 2])}
    if node is not None:
        spec["nodeName"] = node
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "ns", "uid": name}, "spec": spec}


def _rejected(policy_set: PolicySet, objects: list[dict[str, Any]], pending: dict[str, Any]) -> bool | None:
    """Whether filter ``f`` rejects node n1 for ``pending``; None when it failed at run time."""
    decision = evaluate(policy_set, ClusterSnapshot.from_objects(objects), pending, rng=random.Random(0))
    verdict = decision.verdicts["n1"]
    return None if verdict.error is not None else verdict.rule == "f"


@pytest.mark.parametrize("body", GROWTH_ONLY_REJECTS_MORE + GROWTH_ONLY_REJECTS_LESS + INDEPENDENT + UNPROVEN + EXTRA)
def test_a_proven_direction_holds_when_a_pod_is_added(body: str) -> None:
    """For every rule the analysis proves, on random nodes: a pod added to the node never turns an "up"
    rule's rejection into a pass, nor a "down" rule's pass into a rejection, nor changes a "const" rule's
    answer (a rule that fails at run time is no rejection: the queue keeps every event for it)."""
    result = load_policy_texts([("t.policy", "filter f\n  reason \"no\"\n" + "".join(
        f"  {line}\n" for line in body.splitlines()))])
    assert result.policy_set is not None, result.diagnostics
    proven = result.policy_set.analyses["filter f"].pods_polarity
    if proven == UNKNOWN:
        return
    rng = random.Random(body)
    for _ in range(40):
        node = {"kind": "Node", "metadata": {"name": "n1", "labels": {"a": "1"} if rng.random() < 0.5 else {}},
                "spec": {}, "status": {"allocatable": {"cpu": rng.choice(["1", "2"]), "memory": "8Gi",
                                                       "pods": str(rng.choice([2, 3, 5]))}}}
        placed = [_pod(rng, f"q{i}", "n1") for i in range(rng.randrange(4))]
        pending = _pod(rng, "p", None)
        before = _rejected(result.policy_set, [node, *placed], pending)
        after = _rejected(result.policy_set, [node, *placed, _pod(rng, "added", "n1")], pending)
        if before is None or after is None:
            continue
        if proven == UP:
            assert after or not before, (body, placed, pending)
        elif proven == DOWN:
            assert before or not after, (body, placed, pending)
        else:
            assert before == after, (body, placed, pending)
