"""Issue 12: the static cost bound holds (measured steps never exceed it), and the runtime budget stops a rule
forced past it with a located error -- in ``simulate`` the pod gets a FailedScheduling message naming the
rule's location, and the next pods schedule normally."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from policyscheduler.cli import main
from policyscheduler.compiler import closures, program
from policyscheduler.diagnostics import PolicyRuntimeError
from policyscheduler.loader import load_policy_texts
from tests.schema_fixture import sample_env, test_schema

SCHEMA = test_schema()


# -- generated programs: measured steps <= the static bound ------------------------------------------

@st.composite
def programs(draw: st.DrawFn) -> str:
    """A score rule built from loops, comprehensions, list concatenation and string building."""
    counter = iter(range(1000))

    def fresh() -> str:
        return f"v{next(counter)}"

    def int_list(depth: int) -> str:
        choices = ["base", "base", "concat", "map", "filter"] if depth > 0 else ["base"]
        kind = draw(st.sampled_from(choices))
        if kind == "base":
            return draw(st.sampled_from(["[1, 2, 3]", "[len(t.key) for t in node.taints]",
                                         "[len(c.name) for c in pod.containers]",
                                         "[pod.priority, len(node.name)]"]))
        if kind == "concat":
            return f"({int_list(depth - 1)} + {int_list(depth - 1)})"
        x = fresh()
        if kind == "map":
            return f"[{x} * 2 + {int_expr(depth - 1)} for {x} in {int_list(depth - 1)}]"
        return f"[{x} for {x} in {int_list(depth - 1)} where {x} > {int_expr(depth - 1)}]"

    def string(depth: int) -> str:
        kind = draw(st.sampled_from(["lit", "field", "concat", "lower", "str"] if depth > 0 else ["lit", "field"]))
        if kind == "lit":
            return draw(st.sampled_from(['"a"', '"node-"', '""']))
        if kind == "field":
            return draw(st.sampled_from(["node.name", "pod.name", 'node.labels["zone"]']))
        if kind == "concat":
            return f"({string(depth - 1)} + {string(depth - 1)})"
        if kind == "lower":
            return f"lower({string(depth - 1)})"
        return f"str({int_expr(depth - 1)})"

    def int_expr(depth: int) -> str:
        choices = ["lit", "count", "sum", "len", "strlen", "nested"] if depth > 0 else ["lit"]
        kind = draw(st.sampled_from(choices))
        if kind == "lit":
            return draw(st.sampled_from(["0", "1", "7", "len(node.taints)"]))
        y = fresh()
        if kind == "count":
            return f"count({y} in {int_list(depth - 1)} where {y} > 1)"
        if kind == "sum":
            return f"sum({y} in {int_list(depth - 1)}: {y} % 5)"
        if kind == "len":
            return f"len({int_list(depth - 1)})"
        if kind == "strlen":
            return f"len({string(depth - 1)})"
        t = fresh()
        return f"count({t} in node.taints where ({int_expr(depth - 1)}) >= 0 and {t}.effect != \"\")"

    depth = draw(st.integers(1, 4))
    return f"score generated weight 1 normalize minmax\n  value {int_expr(depth)} % 100\n"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_measured_steps_never_exceed_the_static_bound(text: str) -> None:
    result = load_policy_texts([("g.policy", text)], schema=SCHEMA)
    # a program whose bound is over the load-time limit is refused (that refusal is tested elsewhere);
    # only programs that load have steps to measure
    assume(not any(d.code == "cost-limit" for d in result.diagnostics))
    assert result.policy_set is not None, [str(d) for d in result.diagnostics]
    (rule,) = result.policy_set.scores
    try:
        rule.raw(sample_env())
    except PolicyRuntimeError as err:
        assert "budget" not in err.message, err
    assert closures.steps_used() <= rule.cost, (text, closures.steps_used(), rule.cost)


def test_steps_are_counted() -> None:
    text = "score s weight 1 normalize minmax\n  value count(x in [1, 2, 3] + [4] where x > 0) % 100\n"
    policy_set = load_policy_texts([("s.policy", text)], schema=SCHEMA).policy_set
    assert policy_set is not None
    (rule,) = policy_set.scores
    assert rule.raw(sample_env()) == 4
    assert closures.steps_used() == 4 + 4  # the concatenation built 4 items, the loop visited 4


def test_concatenation_adds_bounds_and_doubling_is_refused() -> None:
    lets = "".join(f"  let l{i} = l{i - 1} + l{i - 1}\n" for i in range(1, 25))
    text = f"score s weight 1 normalize minmax\n  let l0 = [1, 2]\n{lets}  value len(l24) % 100\n"
    result = load_policy_texts([("d.policy", text)], schema=SCHEMA)
    assert result.policy_set is None
    assert any(d.code == "cost-limit" for d in result.diagnostics), result.diagnostics
    strings = "".join(f"  let s{i} = s{i - 1} + s{i - 1}\n" for i in range(1, 25))
    text = f'score s weight 1 normalize minmax\n  let s0 = node.name\n{strings}  value len(s24) % 100\n'
    result = load_policy_texts([("d.policy", text)], schema=SCHEMA)
    assert [d.message for d in result.diagnostics if d.code == "cost-limit"] == [
        "this may build a string of up to 2,097,152 characters (limit 1,048,576); concatenation adds the "
        "lengths of its operands"]


# -- the runtime budget in simulate --------------------------------------------------------------------

HEAVY = """\
filter heavy
  reason "heavy"
  applies when pod.labels["heavy"] == "yes"
  require count(a in node.labels where count(b in node.labels where a == b) == 1) > 0
"""


def _cluster(tmp_path: Path) -> Path:
    labels = {f"l{i}": "x" for i in range(300)}
    items: list[dict[str, object]] = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}", "labels": labels},
         "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}} for i in range(2)]
    for i, heavy in enumerate(["yes", "no", "no"]):
        items.append({"apiVersion": "v1", "kind": "Pod",
                      "metadata": {"name": f"p{i}", "namespace": "default", "labels": {"heavy": heavy},
                                   "creationTimestamp": f"2024-01-01T00:00:0{i}Z"},
                      "spec": {"schedulerName": "policy-scheduler",
                               "containers": [{"name": "c", "image": "i"}]}})
    f = tmp_path / "cluster.json"
    f.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return f


@pytest.mark.parametrize("engine", ["reference", "vector"])
def test_budget_stops_a_rule_in_simulate(tmp_path: Path, engine: str, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    # 300 labels: the rule takes 90,300 steps per node (the static bound assumes 64 labels); budget 50,000
    monkeypatch.setattr(closures, "STEP_BUDGET", 50_000)
    monkeypatch.setattr(program, "STEP_BUDGET", 50_000)
    pol = tmp_path / "heavy.policy"
    pol.write_text(HEAVY)
    status = main(["simulate", "--engine", engine, "--policies", str(pol), "-o", "json", str(_cluster(tmp_path))])
    assert status == 0
    doc = json.loads(capsys.readouterr().out)
    by_pod = {p["pod"]: p for p in doc["placements"]}
    assert by_pod["default/p1"]["node"] is not None and by_pod["default/p2"]["node"] is not None
    failed = by_pod["default/p0"]
    assert failed["node"] is None
    assert failed["message"] == (f"0/2 nodes are available: 2 policy error in rule heavy: budget: evaluation stopped "
                                 f"at {pol}:4:51 after 50,000 steps (loop items and list items built) on this node; "
                                 "the rule does more work than any rule may. "
                                 "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.")
    assert [p["pod"] for p in doc["placements"]] == ["default/p1", "default/p2", "default/p0"]
