"""``policyscheduler explain``: the scheduler's own decision, with the rejecting clause per node."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from policyscheduler.cli import main
from policyscheduler.cli.explain import explain, to_json
from policyscheduler.compiler import PolicySet
from policyscheduler.evaluation import make_evaluator
from policyscheduler.inputs import read_objects
from policyscheduler.loader import load_layered
from policyscheduler.simulate.defaults import demo_cluster_dir
from policyscheduler.simulate.run import prepare
from policyscheduler.source import SourceFile
from policyscheduler.state import ClusterSnapshot

REPO = Path(__file__).resolve().parents[2]

# the default policy set, the demo cluster's snapshot, its pending pods, the policy sources
Demo = tuple[PolicySet, ClusterSnapshot, list[dict[str, Any]], dict[str, SourceFile]]


@pytest.fixture(scope="module")
def demo() -> Demo:
    loaded = load_layered([])
    assert loaded.policy_set is not None
    objects = read_objects([demo_cluster_dir()]).objects
    prepared = prepare(objects)
    pending = [p for p in prepared.queue if (p.get("spec") or {}).get("schedulerName") == "policy-scheduler"]
    return loaded.policy_set, prepared.snapshot, pending, loaded.sources


def test_explain_equals_the_scheduler_decision_for_every_demo_pod(demo: Demo) -> None:
    policy_set, snapshot, pending, sources = demo
    assert len(pending) == 200
    scheduler = make_evaluator("vector")
    unschedulable = 0
    for pod in pending:
        decision = scheduler.evaluate(policy_set, snapshot, pod, rng=random.Random(0))
        doc = to_json(explain(policy_set, snapshot, pod, engine="vector", sources=sources))
        assert doc["pod"] == decision.pod and doc["node"] == decision.node and doc["top"] == list(decision.top)
        assert doc["score"] == decision.score
        if decision.node is None:  # the FailedScheduling text the cycle posts: the filters' part, then preemption's
            assert decision.message and doc["message"] == doc["preemption"]["message"]
            assert doc["message"].startswith(decision.message + " preemption: ")
        else:
            assert doc["message"] is None and decision.message is None
        assert doc["policy_digest"] == policy_set.digest
        if decision.node is None:
            unschedulable += 1
        for n in doc["nodes"]:
            v = decision.verdicts[n["name"]]
            assert n["feasible"] == v.feasible
            assert n["rule"] == v.rule and n["reasons"] == list(v.reasons)
            assert "trace_mismatch" not in n
            if v.rule is not None:
                # the exact rule, clause and line: the clauses' reasons are the verdict's reasons
                assert n["clauses"], n
                assert [r for c in n["clauses"] for r in c["reasons"]] == list(v.reasons)
                for c in n["clauses"]:
                    file, line, _col = c["location"].rsplit(":", 2)
                    # the whole clause, every line of it (a multi-line clause is not cut after its first line)
                    first = sources[file].line(int(line)).strip()
                    assert c["source"].splitlines()[0] == first
                    assert len(c["source"].splitlines()) == c["source"].count("\n") + 1
            else:
                assert n["total"] == decision.totals[n["name"]]
                for rule, s in n["scores"].items():
                    rs = decision.scores[rule][n["name"]]
                    assert (s["raw"], s["normalized"], s["weighted"], s["ignored"]) == (
                        rs.raw, rs.normalized, rs.weighted, rs.ignored)
    assert unschedulable > 0  # the demo has pods that fit nowhere on the empty-of-pending snapshot


def test_reference_engine_explains_the_same(demo: Demo) -> None:
    policy_set, snapshot, pending, sources = demo
    for pod in pending[:: 25]:
        a = to_json(explain(policy_set, snapshot, pod, engine="vector", sources=sources))
        b = to_json(explain(policy_set, snapshot, pod, engine="reference", sources=sources))
        a.pop("engine"), b.pop("engine")
        assert a == b


def test_cli_json_and_node_filter(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "ml/train-2", "-o", "json", "--node", "small-a-1", "--docs"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [n["name"] for n in doc["nodes"]] == ["small-a-1"]
    node = doc["nodes"][0]
    assert node["rule"] == "node_resources_fit"
    assert node["clauses"][0]["keyword"] == "reject each"
    assert node["clauses"][0]["location"].endswith("60-node-resources-fit.policy:11:3")
    assert "filter node_resources_fit" in doc["rules"] and doc["rules"]["filter node_resources_fit"]["doc"]


def test_cli_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "shop/web-6d8f9c-jxw4s", "--docs"]) == 0
    out = capsys.readouterr().out
    assert "chosen:" in out and "feasible, total" in out and "rules:" in out


@pytest.mark.parametrize("argv, needle", [
    (["explain", "shop/nope"], "no pod shop/nope"),
    (["explain", "shop/web-6d8f9c-jxw4s", "--cluster", "/does/not/exist.yaml"], "bad input"),
    (["explain", "shop/web-6d8f9c-jxw4s", "--node", "nope"], "no node nope"),
])
def test_cli_failures_exit_2(argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_cli_broken_policy_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad.policy").write_text("filter x\n  require node.lables[\"a\"] == \"b\"\n")
    assert main(["explain", "shop/web-6d8f9c-jxw4s", "--policies", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "unknown-field" in err and "Traceback" not in err


def test_cli_snapshot_with_bound_pod(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snap = tmp_path / "snap.yaml"
    snap.write_text("""
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/hostname: n1}}
status: {allocatable: {cpu: "1", memory: 1Gi, pods: "10"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2, labels: {kubernetes.io/hostname: n2}}
spec: {unschedulable: true}
status: {allocatable: {cpu: "1", memory: 1Gi, pods: "10"}}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec: {nodeName: n1, containers: [{name: c, image: x}]}
""")
    assert main(["explain", "p", "--cluster", str(snap), "-o", "json"]) == 0
    captured = capsys.readouterr()
    assert "explained as if it were pending" in captured.err
    doc = json.loads(captured.out)
    assert doc["node"] == "n1"
    n2 = next(n for n in doc["nodes"] if n["name"] == "n2")
    assert n2["rule"] == "node_unschedulable" and n2["clauses"][0]["keyword"] == "require"
