"""Issue 24: the runtime budget per rule per pod, the second line of defence behind the static bound.

A rule whose lists are longer at run time than the schema assumes (300 labels where the cost model
assumes 64) does far more work than its static bound. Each node's evaluation has the per-node budget; on
top of it the rule has an allowance for the whole pod (all nodes together), so it cannot take the
per-node budget on every one of thousands of nodes. Past the allowance the rule fails on the remaining
nodes with a located ``budget`` error, reported like any filter failure."""

from __future__ import annotations

from typing import Any

import pytest

from policyscheduler.compiler import closures
from policyscheduler.evaluation import driver, make_evaluator
from policyscheduler.loader import load_policy_texts
from policyscheduler.simulate import simulate

HEAVY = """\
filter heavy
  reason "heavy"
  require count(a in node.labels where count(b in node.labels where a == b) == 1) > 0
"""


def _objects(nodes: int) -> list[dict[str, Any]]:
    labels = {f"l{i}": "x" for i in range(300)}
    objs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}", "labels": labels},
         "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}} for i in range(nodes)]
    objs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                 "spec": {"schedulerName": "policy-scheduler", "containers": [{"name": "c", "image": "i"}]}})
    return objs


def test_a_rule_past_its_pod_allowance_fails_on_the_remaining_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    result = load_policy_texts([("heavy.policy", HEAVY)])
    assert result.policy_set is not None, result.diagnostics
    (rule,) = result.policy_set.filters
    assert 2 * rule.cost * 3 < 120_000  # the static bound (64 labels) is far below what 300 labels take
    monkeypatch.setattr(driver, "POD_STEP_BUDGET", 120_000)  # each node takes 90,300 steps
    sim = simulate(result.policy_set, _objects(3), seed=0, evaluator=make_evaluator("reference"))
    (decision,) = sim.decisions
    assert decision.node == "n0"
    # n1 runs out inside the inner loop; n2 starts with nothing left and stops at the outer loop
    assert [(e.node, e.location) for e in decision.filter_errors] == [("n1", "heavy.policy:3:51"),
                                                                      ("n2", "heavy.policy:3:22")]
    assert decision.filter_errors[0].message.startswith(
        "budget: evaluation stopped at heavy.policy:3:51 after the rule took 120,000 steps")


def test_the_allowance_is_per_pod_and_never_below_twice_the_static_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    result = load_policy_texts([("heavy.policy", HEAVY)])
    assert result.policy_set is not None
    monkeypatch.setattr(driver, "POD_STEP_BUDGET", 100_000)
    objs = _objects(1)
    objs.append({**objs[-1], "metadata": {"name": "q", "namespace": "default"}})
    sim = simulate(result.policy_set, objs, seed=0, evaluator=make_evaluator("reference"))
    assert [d.node for d in sim.decisions] == ["n0", "n0"]  # a fresh allowance for the second pod
    assert all(not d.filter_errors for d in sim.decisions)
    (rule,) = result.policy_set.filters
    assert driver._allowance(rule, 1_000_000) == 2 * rule.cost * 1_000_000
    assert closures.BUDGET.allowance is None  # nothing left behind for evaluations outside a decision
