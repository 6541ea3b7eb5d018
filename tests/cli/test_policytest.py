"""``policyscheduler test``: PASS/FAIL with a diff, --run, JSON, coverage, and the failure paths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from policyscheduler.cli import main

REPO = Path(__file__).resolve().parents[2]

NODES = """
objects:
  - kind: Node
    metadata: {name: a, labels: {kubernetes.io/hostname: a}}
    status: {allocatable: {cpu: "2", memory: 2Gi, pods: "10"}}
  - kind: Node
    metadata: {name: b, labels: {kubernetes.io/hostname: b}}
    spec: {unschedulable: true}
    status: {allocatable: {cpu: "2", memory: 2Gi, pods: "10"}}
"""

SUITE = NODES + """
cases:
  - name: cordoned node
    pod: {kind: Pod, metadata: {name: p}, spec: {containers: [{name: c, image: x}]}}
    want:
      feasible: [a]
      rejected: {b: {rule: node_unschedulable, reasons: ["node(s) were unschedulable"], line: 7}}
      filters: {node_unschedulable: {a: pass, b: ["node(s) were unschedulable"]}, inter_pod_affinity: {a: skip}}
      chosen: a
      totals: {a: {min: 1}}
  - name: wrong on purpose
    pod: {kind: Pod, metadata: {name: p}, spec: {containers: [{name: c, image: x}]}}
    want:
      chosen: b
      scores: {node_resources_fit: {a: {max: 5}}}
"""


def test_default_set_passes_with_full_rule_coverage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["test", str(REPO / "policies")]) == 0
    out = capsys.readouterr().out
    assert "coverage: filters 100.0% (14/14), scores 100.0% (7/7), clauses 100.0%" in out and "failed" not in out
    assert "covered = a filter rejected a node" in out  # the output says what covered means


def test_planted_wrong_expectation_fails_with_a_diff(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "t.yaml").write_text(SUITE)
    assert main(["test", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "FAIL " in out and "::wrong on purpose" in out and "cordoned node" not in out.split("FAIL")[1]
    assert '  chosen:\n    - expected: "b"\n    + actual:   "a"' in out
    assert "scores.node_resources_fit.a:\n    - expected: {\"max\": 5}" in out
    assert "1/2 cases passed, 1 failed" in out


def test_run_filter_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "t.yaml").write_text(SUITE)
    assert main(["test", str(tmp_path), "--run", "cordoned", "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [c["name"] for c in doc["cases"]] == ["cordoned node"] and doc["passed"] == 1
    assert doc["coverage"]["rules"]["filter node_unschedulable"] is True
    assert main(["test", str(tmp_path), "--run", "nothing-matches"]) == 2


def test_suite_with_own_policies_and_objects_from(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "nodes.yaml").write_text(NODES.replace("objects:\n", "").replace("  - kind", "---\nkind")
                                         .replace("\n    ", "\n"))
    (tmp_path / "extra.policy").write_text('filter no_b\n  reason "no b"\n  require node.name != "a"\n')
    (tmp_path / "t.yaml").write_text("""
objects_from: [nodes.yaml]
cases:
  - name: extra rule rejects a
    pod: {kind: Pod, metadata: {name: p}, spec: {containers: [{name: c, image: x}]}}
    want:
      feasible: []
      rejected: {a: {rule: no_b}, b: {rule: node_unschedulable}}
      message: "0/2 nodes are available: 1 no b, 1 node(s) were unschedulable."
""")
    assert main(["test", str(tmp_path), "--coverage"]) == 0
    out = capsys.readouterr().out
    # coverage of the rules under test only (the one filter of extra.policy, no score)
    assert "1/1 cases passed" in out and "coverage: filters 100.0% (1/1), scores 100.0% (0/0)" in out


@pytest.mark.parametrize("content, needle", [
    ("cases: [{name: x, pod: {kind: Pod, metadata: {name: p}}, want: {feasable: []}}]",
     "t.yaml:1:65: unknown key 'feasable' in want"),
    ("cases: [{name: x, pod: {kind: Pod, metadata: {name: p}}, want: {}}]", "t.yaml:1:58: want must be a non-empty mapping of expectations (feasible, rejected, filters, scores, raw, weighted, totals, chosen, message, absent, preemption), but it is empty"),
    ("cases: [{nmae: x, pod: {kind: Pod, metadata: {name: p}}, want: {feasible: []}}]",
     "t.yaml:1:10: unknown key 'nmae' in a case"),
])
def test_malformed_cases_are_located_errors(tmp_path: Path, content: str, needle: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "t.yaml").write_text(content)
    assert main(["test", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert needle in captured.err and "nothing was run" in captured.err and captured.out == ""


def test_bad_inputs_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["test", str(tmp_path / "missing")]) == 2
    assert "no such file" in capsys.readouterr().err
    (tmp_path / "t.yaml").write_text("cases: [\n")
    assert main(["test", str(tmp_path)]) == 2
    assert "t.yaml:2:1: invalid YAML" in capsys.readouterr().err
    (tmp_path / "t.yaml").write_text(SUITE)
    (tmp_path / "bad.policy").write_text("filter x\n  require node.lables == 1\n")
    assert main(["test", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "unknown-field" in err and "Traceback" not in err
