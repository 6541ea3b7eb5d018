"""The reference evaluator on small hand-written policies (real loader, real object model)."""

from __future__ import annotations

import random
from typing import Any, cast

import pytest

from policyscheduler.compiler import PolicySet
from policyscheduler.compiler.program import Env
from policyscheduler.evaluation import Decision, NodeVerdict, RuleScore, evaluate
from policyscheduler.evaluation.decision import ScoreError
from policyscheduler.state import ClusterSnapshot
from tests.evaluation.policies import load


def snapshot(*nodes: tuple[str, dict[str, str]], pods: tuple[dict[str, Any], ...] = ()) -> ClusterSnapshot:
    objs = [
        {"kind": "Node", "metadata": {"name": name, "labels": labels},
         "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
        for name, labels in nodes
    ]
    return ClusterSnapshot.from_objects([*objs, *pods])


def pod(name: str = "p", labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "ns", "labels": labels or {}},
            "spec": {"containers": [{"name": "c", "image": "x"}]}}


FILTERS = '''
filter no_red
  reason "node(s) are red"
  require node.labels["color"] != "red"

filter no_blue_or_cold
  reject "node(s) are blue" when node.labels["color"] == "blue"
  reject "node(s) are cold" when node.labels["temp"] == "cold"
'''

PICKY = '''
filter picky
  reason "node(s) are not green"
  applies when pod.labels["picky"] == "yes"
  require node.labels["color"] == "green"
'''

PICKY_POD = '''
filter picky
  reason "node(s) are not green"
  reject pod "pod is too picky" when pod.labels["picky"] == "yes"
  require node.labels["color"] == "green"
'''

GREEN_BEST = '''
score green_best weight 2 normalize scale
  value if node.labels["color"] == "green" then 10 else 5
'''


def run(policy_set: PolicySet, snap: ClusterSnapshot, p: dict[str, Any], seed: int = 0) -> Decision:
    return evaluate(policy_set, snap, p, rng=random.Random(seed))


def test_first_failing_filter_is_the_verdict_and_reasons_accumulate() -> None:
    ps = load(FILTERS)
    snap = snapshot(("red", {"color": "red", "temp": "cold"}), ("blue", {"color": "blue", "temp": "cold"}),
                    ("green", {"color": "green"}))
    d = run(ps, snap, pod())
    assert d.pod == "ns/p"
    assert d.verdicts["red"] == NodeVerdict("no_red", ("node(s) are red",), None)
    assert d.verdicts["blue"] == NodeVerdict("no_blue_or_cold", ("node(s) are blue", "node(s) are cold"), None)
    assert d.verdicts["green"].rule is None
    assert d.feasible == ["green"] and d.node == "green" and d.top == ["green"]
    assert d.message is None and d.policy_digest == ps.digest


def test_message_when_nothing_fits() -> None:
    ps = load(FILTERS)
    snap = snapshot(("r1", {"color": "red"}), ("r2", {"color": "red"}), ("b", {"color": "blue", "temp": "cold"}))
    d = run(ps, snap, pod())
    assert d.node is None and d.score is None and d.feasible == [] and d.top == []
    assert d.message == "0/3 nodes are available: 1 node(s) are blue, 1 node(s) are cold, 2 node(s) are red."


def test_zero_nodes() -> None:
    d = run(load(FILTERS), snapshot(), pod())
    assert d.node is None and d.message == "no nodes available to schedule pods"


def test_applies_when_false_passes_every_node() -> None:
    ps = load(PICKY)
    snap = snapshot(("g", {"color": "green"}), ("r", {"color": "red"}))
    assert run(ps, snap, pod()).feasible == ["g", "r"]
    assert run(ps, snap, pod(labels={"picky": "yes"})).feasible == ["g"]


def test_applies_is_evaluated_once_per_pod_not_per_node() -> None:
    ps = load(PICKY)
    rule = ps.filters[0]
    calls: list[Env] = []

    class Counting:  # forwards to the real compiled rule, counting `applies` calls
        def __getattr__(self, name: str) -> Any:
            return getattr(rule, name)

        def applies(self, env: Env) -> bool:
            calls.append(env)
            return rule.applies(env)

    counted = type("PS", (), {"filters": (Counting(),), "scores": (), "digest": ps.digest})()
    snap = snapshot(*((f"n{i}", {"color": "green"}) for i in range(5)))
    run(cast(PolicySet, counted), snap, pod(labels={"picky": "yes"}))
    assert len(calls) == 1 and "node" not in calls[0]


def test_scores_are_normalised_weighted_and_summed() -> None:
    ps = load(GREEN_BEST, '''
score taste weight 1 normalize reverse
  value if node.labels["color"] == "green" then 1 else 0
''')
    snap = snapshot(("g", {"color": "green"}), ("r", {"color": "red"}))
    d = run(ps, snap, pod())
    # green_best: raw 10, 5 -> scale 100, 50 -> x2 = 200, 100
    assert d.scores["green_best"] == {"g": RuleScore(10, 100, 200, False), "r": RuleScore(5, 50, 100, False)}
    # taste: raw 1, 0 -> reverse 0, 100 -> x1
    assert d.scores["taste"] == {"g": RuleScore(1, 0, 0, False), "r": RuleScore(0, 100, 100, False)}
    assert d.totals == {"g": 200, "r": 200}
    assert d.top == ["g", "r"] and d.score == 200 and d.node in {"g", "r"}


def test_scores_only_over_feasible_nodes() -> None:
    ps = load(FILTERS, GREEN_BEST)
    snap = snapshot(("red", {"color": "red"}), ("g", {"color": "green"}), ("y", {"color": "yellow"}))
    d = run(ps, snap, pod())
    assert set(d.scores["green_best"]) == {"g", "y"}
    assert d.node == "g" and d.top == ["g"] and d.score == 200


def test_ignored_nodes_get_zero_and_leave_normalisation() -> None:
    ps = load('''
score spread_like weight 1 normalize spread
  ignore node when node.labels["color"] == "yellow"
  value if node.labels["color"] == "green" then 4 else 2
''')
    snap = snapshot(("g", {"color": "green"}), ("r", {"color": "red"}), ("y", {"color": "yellow"}))
    d = run(ps, snap, pod())
    # over g,r: max 4, min 2: g -> 100*(6-4)/4 = 50, r -> 100*(6-2)/4 = 100
    assert d.scores["spread_like"] == {"g": RuleScore(4, 50, 50, False), "r": RuleScore(2, 100, 100, False),
                                       "y": RuleScore(0, 0, 0, True)}
    assert d.node == "r"


def test_score_applies_false_gives_zero_everywhere() -> None:
    ps = load('''
score only_special weight 5 normalize scale
  applies when pod.labels["special"] == "yes"
  value if node.labels["color"] == "green" then 10 else 5
''')
    snap = snapshot(("g", {"color": "green"}), ("r", {"color": "red"}))
    d = run(ps, snap, pod())
    assert d.scores["only_special"] == {"g": RuleScore(0, 0, 0, False), "r": RuleScore(0, 0, 0, False)}
    assert d.top == ["g", "r"]
    assert run(ps, snap, pod(labels={"special": "yes"})).top == ["g"]


def test_ties_are_broken_by_the_rng_reproducibly() -> None:
    ps = load(GREEN_BEST)
    snap = snapshot(*((f"n{i}", {"color": "green"}) for i in range(8)))
    chosen = {run(ps, snap, pod(), seed=s).node for s in range(40)}
    assert len(chosen) > 1
    assert run(ps, snap, pod(), seed=3) == run(ps, snap, pod(), seed=3)
    assert run(ps, snap, pod(), seed=3).node == random.Random(3).choice([f"n{i}" for i in range(8)])


def test_out_of_range_raw_score_costs_the_rules_points_and_is_reported() -> None:
    ps = load('''
score too_big weight 1
  value if node.labels["color"] == "red" then 150 else 40
''')
    snap = snapshot(("r", {"color": "red"}), ("g", {"color": "green"}))
    d = run(ps, snap, pod())
    assert d.verdicts["r"].feasible and d.feasible == ["r", "g"] and d.node == "g"
    assert d.scores["too_big"]["r"] == RuleScore(0, 0, 0, False)
    (e,) = d.score_errors
    assert (e.rule, e.node, e.location) == ("too_big", "r", "00-test.policy:3:9")
    assert "out of range 0..100" in e.message


def test_division_by_zero_in_a_score_leaves_the_node_feasible_with_zero_and_says_where() -> None:
    """The issue's example: a preference dividing by a resource some nodes lack must not filter them."""
    ps = load('''
score gpu_share weight 1 normalize scale
  value 100 / len(node.labels["gpus"])
''', GREEN_BEST)
    snap = snapshot(("plain", {"color": "green"}), ("gpu", {"color": "yellow", "gpus": "xxxx"}))
    d = run(ps, snap, pod())
    assert d.feasible == ["plain", "gpu"] and d.verdicts["plain"].feasible
    assert d.scores["gpu_share"]["plain"] == RuleScore(0, 0, 0, False)
    assert d.scores["gpu_share"]["gpu"] == RuleScore(25, 100, 100, False)
    assert d.score_errors == (ScoreError("gpu_share", "plain", "00-test.policy:3:13", "integer division by zero"),)
    # plain: 0 + green 100*2; gpu: 100 + yellow 50*2 -- the failing rule only cost "plain" its points
    assert d.totals == {"plain": 200, "gpu": 200}
    assert run(ps, snapshot(("gpu", {"gpus": "x"})), pod()).to_json().get("score_errors") is None
    assert d.to_json()["score_errors"] == [{"rule": "gpu_share", "node": "plain", "location": "00-test.policy:3:13",
                                            "message": "integer division by zero"}]


def test_runtime_error_in_filter_makes_the_node_infeasible_with_a_reason() -> None:
    ps = load('''
filter divide
  reason "never"
  require 10 / (len(node.labels["color"]) - 4) > 0
''')
    snap = snapshot(("blue", {"color": "blue"}), ("green", {"color": "green"}))
    d = run(ps, snap, pod())
    v = d.verdicts["blue"]
    assert v.rule == "divide" and v.error
    assert v.reasons and v.reasons[0].startswith("policy error in rule divide: ")
    assert d.feasible == ["green"]
    only_blue = run(ps, snapshot(("blue", {"color": "blue"})), pod())
    assert only_blue.node is None and only_blue.message is not None
    assert only_blue.message.startswith("0/1 nodes are available: 1 policy error in rule divide: ")


@pytest.mark.parametrize("seed", [0, 1])
def test_decision_is_plain_comparable_data(seed: int) -> None:
    ps = load(FILTERS, GREEN_BEST)
    snap = snapshot(("g", {"color": "green"}), ("y", {"color": "yellow"}))
    a, b = run(ps, snap, pod(), seed), run(ps, snap, pod(), seed)
    assert a == b and a is not b
    assert a.to_json() == {"pod": "ns/p", "node": "g", "score": 200, "top": ["g"], "message": None}


def test_pod_level_rejection_beats_earlier_node_verdicts() -> None:
    """A `reject pod` clause rejects the pod before any node, even where an earlier filter failed."""
    ps = load(FILTERS, PICKY_POD)
    snap = snapshot(("red", {"color": "red"}), ("green", {"color": "green"}))
    d = run(ps, snap, pod(labels={"picky": "yes"}))
    assert d.node is None and d.feasible == []
    assert d.message == "0/2 nodes are available: pod is too picky."
    assert all(v == NodeVerdict("picky", ("pod is too picky",)) for v in d.verdicts.values())
    # without the pod-level failure, node verdicts are as usual
    assert run(ps, snap, pod()).verdicts["red"].rule == "no_red"



def test_runtime_error_in_a_filters_applies_fails_every_node_that_reaches_it() -> None:
    ps = load(FILTERS, '''
filter broken_applies
  reason "never"
  applies when 10 / (len(pod.labels["x"]) - 1) > 0
  require true
''')
    snap = snapshot(("red", {"color": "red"}), ("g1", {"color": "green"}), ("g2", {"color": "green"}))
    d = run(ps, snap, pod(labels={"x": "a"}))
    assert d.verdicts["red"].rule == "no_red"  # rejected by an earlier filter: never reaches it
    for name in ("g1", "g2"):
        v = d.verdicts[name]
        assert v.rule == "broken_applies" and v.error and v.reasons[0].startswith("policy error in rule broken_applies: ")
    assert d.node is None and d.message is not None
    assert d.message.startswith("0/3 nodes are available: 1 node(s) are red, 2 policy error in rule broken_applies: ")


def test_runtime_error_in_a_scores_applies_gives_zero_everywhere_and_is_reported_once() -> None:
    ps = load(FILTERS, GREEN_BEST, '''
score broken_applies weight 1
  applies when 10 / (len(pod.labels["x"]) - 1) > 0
  value 1
''')
    snap = snapshot(("red", {"color": "red"}), ("g", {"color": "green"}), ("y", {"color": "yellow"}))
    d = run(ps, snap, pod(labels={"x": "a"}))
    assert d.verdicts["red"].rule == "no_red"
    assert d.feasible == ["g", "y"] and d.node == "g"
    assert d.scores["broken_applies"]["g"] == RuleScore(0, 0, 0, False)
    (e,) = d.score_errors
    assert (e.rule, e.node, e.location, e.message) == ("broken_applies", None, "02-test.policy:3:19",
                                                       "integer division by zero")


def test_node_failing_one_score_rule_keeps_its_other_rules() -> None:
    ps = load('''
score too_big weight 1
  value if node.labels["color"] == "red" then 150 else 40
''', GREEN_BEST)
    snap = snapshot(("r", {"color": "red"}), ("g", {"color": "green"}), ("y", {"color": "yellow"}))
    d = run(ps, snap, pod())
    assert d.verdicts["r"].feasible and d.feasible == ["r", "g", "y"]
    assert set(d.scores["too_big"]) == set(d.scores["green_best"]) == {"r", "g", "y"}
    assert d.scores["too_big"]["r"] == RuleScore(0, 0, 0, False)
    # green_best still scores r: 10 -> 100, 5 -> 50 (scale over r, g, y), weight 2
    assert d.scores["green_best"]["r"] == RuleScore(5, 50, 100, False)
    assert d.totals == {"r": 0 + 100, "g": 40 + 200, "y": 40 + 100} and d.node == "g"
    assert [(e.rule, e.node) for e in d.score_errors] == [("too_big", "r")]
