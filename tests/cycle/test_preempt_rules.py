"""Preempt rules narrow DefaultPreemption's victim set: the real cycle on both backends, the bundled
defaults layered under one user ``preempt`` rule (tests/cycle/test_preemption.py covers the kube behaviour
the defaults reproduce)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from policyscheduler.compiler import PolicySet
from policyscheduler.cycle import UNSCHEDULABLE, Attempt, ClusterCache, Cycle, SchedulingQueue
from policyscheduler.cycle.preemption import NO_VICTIMS, NOT_HELPFUL
from policyscheduler.evaluation import make_evaluator
from policyscheduler.loader import load_layered
from tests.cycle.test_preemption import ENGINES, Clock, node, pod

PAYMENTS = """\
## Payments pods are never evicted for anyone.
preempt protect_payments
  reason "pods of namespace payments are never preempted"
  victim target.namespace != "payments"
"""

BATCH = """\
preempt batch_evicts_batch
  applies when pod.labels["tier"] == "batch"
  victim target.labels["tier"] == "batch"
"""


def policies(text: str) -> PolicySet:
    result = load_layered(texts=[("user.policy", text)])
    assert result.policy_set is not None, "\n".join(map(str, result.diagnostics))
    return result.policy_set


def in_ns(obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    obj["metadata"]["namespace"] = namespace
    return obj


def attempt(objects: list[dict[str, Any]], preemptor: dict[str, Any], engine: str, text: str) -> Attempt:
    cycle = Cycle(SchedulingQueue(clock=Clock()), ClusterCache(objects), make_evaluator(engine),
                  policies(text), lambda a: None, rng=random.Random(0))
    cycle.queue.add("p", preemptor)
    result = cycle.schedule_one()
    assert result is not None
    return result


BIG = pod("big", cpu="2", priority=1000)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_protected_pod_is_never_a_victim_and_another_node_is_chosen(engine: str) -> None:
    # n1's low-priority pod is the better victim by kube's order (priority 1 < 5), but it is in payments
    objects = [node("n1", cpu="2"), node("n2", cpu="2"),
               in_ns(pod("pay", cpu="2", priority=1, on="n1"), "payments"), pod("other", cpu="2", priority=5, on="n2")]
    plain = attempt(objects, BIG, engine, "")
    assert plain.nominated_node == "n1" and [v.key for v in plain.victims] == ["payments/pay"]
    a = attempt(objects, BIG, engine, PAYMENTS)
    assert a.nominated_node == "n2" and [v.key for v in a.victims] == ["default/other"]
    assert a.preemption is not None
    [kept] = a.preemption.protected
    assert (kept.pod, kept.node, kept.rule, kept.span.file, kept.span.line) == (
        "payments/pay", "n1", "protect_payments", "user.policy", 2)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_rules_reason_is_the_nodes_reason_when_protection_is_what_failed_it(engine: str) -> None:
    objects = [node("n1", cpu="2"), node("n2", cpu="2"), in_ns(pod("pay", cpu="2", priority=1, on="n1"), "payments"),
               in_ns(pod("pay2", cpu="1", priority=1, on="n2"), "payments"), pod("free", cpu="1", priority=1, on="n2")]
    a = attempt(objects, BIG, engine, PAYMENTS)
    assert a.result == UNSCHEDULABLE and a.nominated_node is None and a.victims == ()
    assert a.decision is not None and a.decision.message == (
        "0/2 nodes are available: 2 Insufficient cpu. "
        "preemption: 0/2 nodes are available: 2 pods of namespace payments are never preempted.")
    assert a.preemption is not None and {p.pod for p in a.preemption.protected} == {"payments/pay", "payments/pay2"}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_node_that_fails_anyway_keeps_kubes_reason(engine: str) -> None:
    # a 4-cpu node with a protected 1-cpu pod and an equal-priority 3-cpu pod: even with the protected pod gone
    # the peer's 3 cpu stay, so the rule did not decide the node: kube's text, as if the pod were not lower
    objects = [node("n1", cpu="4"), in_ns(pod("pay", cpu="1", priority=1, on="n1"), "payments"),
               pod("peer", cpu="3", priority=1000, on="n1")]
    a = attempt(objects, BIG, engine, PAYMENTS)
    assert a.decision is not None and (a.decision.message or "").endswith(
        f"preemption: 0/1 nodes are available: 1 {NO_VICTIMS}.")
    # with an evictable pod beside it that is not enough, the filter's reason
    objects.append(pod("low", cpu="0", priority=1, on="n1"))
    b = attempt(objects, BIG, engine, PAYMENTS)
    assert b.decision is not None and (b.decision.message or "").endswith(
        "preemption: 0/1 nodes are available: 1 Insufficient cpu.")


@pytest.mark.parametrize("engine", ENGINES)
def test_applies_when_limits_the_rule_to_some_preemptors(engine: str) -> None:
    objects = [node("n1", cpu="2"), pod("web", cpu="2", priority=1, on="n1", labels={"tier": "web"})]
    batch = pod("bigbatch", cpu="2", priority=1000, labels={"tier": "batch"})
    a = attempt(objects, batch, engine, BATCH)
    assert a.nominated_node is None
    assert a.decision is not None and (a.decision.message or "").endswith(
        "preemption: 0/1 nodes are available: 1 protected by preempt rule 'batch_evicts_batch'.")
    web = attempt(objects, pod("bigweb", cpu="2", priority=1000, labels={"tier": "web"}), engine, BATCH)
    assert web.nominated_node == "n1" and [v.name for v in web.victims] == ["web"]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_rule_that_fails_at_run_time_protects(engine: str) -> None:
    text = 'preempt strict\n  reason "r"\n  victim int(target.labels["age"]) > 10\n'
    objects = [node("n1", cpu="2"), pod("low", cpu="2", priority=1, on="n1")]
    a = attempt(objects, BIG, engine, text)
    assert a.nominated_node is None and a.preemption is not None
    [kept] = a.preemption.protected
    assert kept.error is not None and "strict" in kept.error
    assert NOT_HELPFUL not in ((a.decision.message or "") if a.decision else "")


def test_simulate_evicts_another_victim_when_a_rule_protects_kubes_choice() -> None:
    from policyscheduler.simulate.run import simulate

    objects = [node("n1", cpu="2"), node("n2", cpu="2"),
               in_ns(pod("pay", cpu="2", priority=1, on="n1"), "payments"), pod("other", cpu="2", priority=5, on="n2"),
               pod("big", cpu="2", priority=1000)]
    plain = {p["pod"]: p for p in simulate(policies(""), objects, seed=0).to_json()["placements"]}
    assert plain["default/big"]["node"] == "n1" and plain["default/big"]["preempted"] == ["payments/pay"]
    ruled = {p["pod"]: p for p in simulate(policies(PAYMENTS), objects, seed=0).to_json()["placements"]}
    assert ruled["default/big"]["node"] == "n2" and ruled["default/big"]["preempted"] == ["default/other"]


def test_explain_names_the_rule_and_its_line_for_a_protected_pod(tmp_path: Any, capsys: Any) -> None:
    import json

    import yaml

    from policyscheduler.cli import main

    policy = tmp_path / "no-evict.policy"
    policy.write_text(PAYMENTS)
    objects = [node("n1", cpu="2"), node("n2", cpu="2"),
               in_ns(pod("pay", cpu="2", priority=1, on="n1"), "payments"), pod("other", cpu="2", priority=5, on="n2"),
               pod("big", cpu="2", priority=1000)]
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
    args = ["explain", "--cluster", str(cluster), "--policies", str(policy), "default/big"]
    assert main([*args, "-o", "json"]) == 0
    pre = json.loads(capsys.readouterr().out)["preemption"]
    assert pre["node"] == "n2" and [v["pod"] for v in pre["victims"]] == ["default/other"]
    assert [(p["pod"], p["rule"], p["line"]) for p in pre["protected"]] == [("payments/pay", "preempt protect_payments", 2)]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "preemption: would nominate n2 and evict default/other (priority 5)" in text
    assert f"protected: payments/pay on n1 by preempt protect_payments ({policy}:2)" in text


def test_policy_test_checks_want_preemption_and_reports_a_wrong_victim(tmp_path: Any, capsys: Any) -> None:
    import json

    from policyscheduler.cli import main

    example = Path(__file__).resolve().parents[2] / "examples" / "policies"
    case = (example / "tests" / "no-evict-payments" / "no-evict-payments.test.yaml").read_text()
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "snapshot.yaml").write_text((example / "tests" / "no-evict-payments" / "snapshot.yaml").read_text())
    wrong = case.replace("../../no-evict-payments.policy", str(example / "no-evict-payments.policy")).replace(
        "victims: [web/shop]", "victims: [payments/ledger]")
    (folder / "wrong.test.yaml").write_text(wrong)
    assert main(["test", str(folder), "-o", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    [failed] = [c for c in doc["cases"] if c["status"] == "fail"]
    assert [f["path"] for f in failed["failures"]] == ["preemption.victims"]
    assert failed["failures"][0]["actual"] == ["web/shop"]
    (folder / "wrong.test.yaml").write_text(wrong.replace("preemption: {node: n2", "preemption: {nod: n2"))
    assert main(["test", str(folder)]) == 2
    assert "want.preemption" in capsys.readouterr().err
