"""Issue 24: a filter that fails on some nodes is reported exactly like a failing score rule -- in
``Decision.filter_errors``, in ``simulate --output json`` (``filter_errors``) and as ``warning:`` lines on
stderr -- whichever backend evaluates it (12 nodes: the vector backend's column path, not its per-row
fallback for small clusters)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from policyscheduler.cli import main
from policyscheduler.evaluation.decision import FilterError
from policyscheduler.loader import load_policy_texts
from policyscheduler.simulate import simulate

# nodes whose "slots" label is "0" divide by zero: the filter cannot decide there
POLICY = """\
filter per_slot_room
  reason "not enough room per slot"
  require 100 / int(node.labels["slots"], default 1) > 10
"""


def _objects(nodes: int = 12) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": f"n{i:02d}", "labels": {"slots": "0" if i % 3 == 0 else "2"}},
         "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}} for i in range(nodes)]
    objs += [{"apiVersion": "v1", "kind": "Pod",
              "metadata": {"name": f"p{i}", "namespace": "default", "creationTimestamp": f"2024-01-01T00:00:0{i}Z"},
              "spec": {"schedulerName": "policy-scheduler", "containers": [{"name": "c", "image": "i"}]}}
             for i in range(2)]
    return objs


@pytest.mark.parametrize("engine", ["reference", "vector"])
def test_filter_errors_are_in_the_decision(engine: str) -> None:
    from policyscheduler.evaluation import make_evaluator

    result = load_policy_texts([("room.policy", POLICY)])
    assert result.policy_set is not None, result.diagnostics
    sim = simulate(result.policy_set, _objects(), seed=0, evaluator=make_evaluator(engine))
    for decision in sim.decisions:
        assert decision.node is not None and int(decision.node[1:]) % 3 != 0
        assert decision.filter_errors == tuple(
            FilterError("per_slot_room", f"n{i:02d}", "room.policy:3:15", "integer division by zero")
            for i in (0, 3, 6, 9))
        assert decision.to_json()["filter_errors"][0] == {
            "rule": "per_slot_room", "node": "n00", "location": "room.policy:3:15",
            "message": "integer division by zero"}


def test_no_filter_errors_key_when_nothing_failed() -> None:
    result = load_policy_texts([("room.policy", POLICY)])
    assert result.policy_set is not None
    objs = [o for o in _objects() if o["kind"] == "Pod" or o["metadata"]["labels"]["slots"] != "0"]
    sim = simulate(result.policy_set, objs, seed=0)
    assert all(d.filter_errors == () and "filter_errors" not in d.to_json() for d in sim.decisions)


def test_a_failing_applies_when_is_one_error_on_every_node() -> None:
    text = ('filter picky\n  reason "r"\n  applies when 1 / (len(pod.name) - 2) > 0\n  require true\n')
    result = load_policy_texts([("a.policy", text)])
    assert result.policy_set is not None, result.diagnostics
    sim = simulate(result.policy_set, _objects(3), seed=0)
    for decision in sim.decisions:
        assert decision.node is None
        assert decision.filter_errors == (FilterError("picky", None, "a.policy:3:18", "integer division by zero"),)


@pytest.mark.parametrize("engine", ["reference", "vector"])
def test_simulate_reports_filter_errors_on_stderr_and_in_json(tmp_path: Path, engine: str,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    pol = tmp_path / "room.policy"
    pol.write_text(POLICY)
    snap = tmp_path / "c.json"
    snap.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": _objects()}))
    assert main(["simulate", "--engine", engine, "--policies", str(pol), "-o", "json", str(snap)]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    errors = [e for p in doc["placements"] for e in p["filter_errors"]]
    assert len(errors) == 8 and {e["node"] for e in errors} == {"n00", "n03", "n06", "n09"}
    assert (f"warning: {pol}:3:15: filter rule per_slot_room failed: integer division by zero -- on 4 nodes for "
            "2 pods (e.g. node n00); those nodes were infeasible for those pods") in captured.err
