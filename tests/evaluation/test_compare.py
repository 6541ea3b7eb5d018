"""diff_decisions: the report a differential test prints when two evaluators disagree."""

from __future__ import annotations

import dataclasses
from typing import Any

from policyscheduler.evaluation import FEASIBLE, Decision, NodeVerdict, RuleScore
from policyscheduler.evaluation.compare import diff_decisions


def decision(**changes: Any) -> Decision:
    base = Decision(
        pod="ns/p", node="a",
        verdicts={"a": FEASIBLE, "b": NodeVerdict("f", ("no",))},
        feasible=["a"], scores={"s": {"a": RuleScore(3, 100, 200)}}, totals={"a": 200}, top=["a"],
        score=200, message=None, policy_digest="d",
    )
    return dataclasses.replace(base, **changes)


def test_equal_decisions_have_no_diff() -> None:
    assert diff_decisions(decision(), decision()) == []
    assert decision() == decision()


def test_differences_are_located() -> None:
    left = decision()
    right = decision(
        verdicts={"a": FEASIBLE, "b": NodeVerdict("g", ("no",))},
        scores={"s": {"a": RuleScore(3, 99, 198)}},
        totals={"a": 198}, score=198,
    )
    diff = diff_decisions(left, right)
    assert diff[0].startswith("verdicts['b']: ")
    assert diff[1].startswith("scores['s']['a']: RuleScore(raw=3, normalized=100")
    assert "totals: {'a': 200} != {'a': 198}" in diff
    assert "score: 200 != 198" in diff
    assert len(diff) == 4


def test_missing_entries_are_reported() -> None:
    right = decision(scores={})
    assert diff_decisions(decision(), right) == ["scores['s']['a']: left has RuleScore(raw=3, normalized=100, weighted=200, ignored=False), missing on the right"]
