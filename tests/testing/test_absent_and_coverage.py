"""``want.absent`` (a rule disabled or never there), coverage of filters and scores apart, and a bounded
reader: the test-file side of the stories where two default scores are turned off."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from policyscheduler.cli import main

NODES = """objects:
  - {kind: Node, metadata: {name: a}, status: {allocatable: {cpu: "2", memory: 2Gi, pods: "10"}}}
  - {kind: Node, metadata: {name: b}, status: {allocatable: {cpu: "4", memory: 4Gi, pods: "10"}}}
"""
POD = "{kind: Pod, metadata: {name: p}, spec: {containers: [{name: c, image: x}]}}"
TWO_OFF = "disable score image_locality\ndisable score node_resources_balanced_allocation\n"


def _suite(want: str) -> str:
    return NODES + f"cases:\n  - name: case\n    pod: {POD}\n    want: {want}\n"


def test_absent_passes_for_disabled_rules_and_coverage_says_no_rules(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "off.policy").write_text(TWO_OFF)
    (tmp_path / "t.yaml").write_text(_suite("{absent: [image_locality, node_resources_balanced_allocation], "
                                            "feasible: [a, b]}"))
    assert main(["test", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "1/1 cases passed" in out
    assert "coverage: no rules under test" in out and "(0/0)" not in out and "100.0%" not in out


def test_absent_fails_when_the_rule_is_there(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "off.policy").write_text("disable score image_locality\n")
    (tmp_path / "t.yaml").write_text(_suite("{absent: [image_locality, node_resources_balanced_allocation]}"))
    assert main(["test", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert 'FAIL' in out and '  absent:\n    - expected: ["image_locality", "node_resources_balanced_allocation"]\n' \
        '    + actual:   ["node_resources_balanced_allocation"]' in out


def test_absent_with_a_name_that_is_no_rule_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "off.policy").write_text(TWO_OFF)
    (tmp_path / "t.yaml").write_text(_suite("{absent: [image_localty]}"))
    assert main(["test", str(tmp_path)]) == 2
    out = capsys.readouterr().out
    assert f"{tmp_path / 't.yaml'}:7:21:" in out and "'image_localty' is no rule of the bundled defaults" in out


def test_naming_a_disabled_rule_points_to_absent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "off.policy").write_text(TWO_OFF)
    (tmp_path / "t.yaml").write_text(_suite("{scores: {image_locality: {a: 0}}}"))
    assert main(["test", str(tmp_path)]) == 2
    out = capsys.readouterr().out
    assert "no score rule 'image_locality' in the set under test (a bundled default rule, not in the set under " \
           "test: disabled? assert that with want.absent: [image_locality])" in out


def test_filter_named_as_a_score_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "t.yaml").write_text(_suite("{scores: {node_unschedulable: {a: 0}}}"))
    assert main(["test", str(tmp_path)]) == 2
    assert "('node_unschedulable' is a filter of the set)" in capsys.readouterr().out


def test_coverage_counts_filters_and_scores_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "mine.policy").write_text(
        "## Never node b.\nfilter not_b\n  reason \"node(s) are b\"\n  require node.name != \"b\"\n\n"
        "## Never node c.\nfilter not_c\n  reason \"node(s) are c\"\n  require node.name != \"c\"\n\n"
        "## Bigger is better.\nscore big weight 1 normalize scale\n  value node.pod_count + 1\n")
    (tmp_path / "t.yaml").write_text(_suite("{feasible: [a], rejected: {b: {rule: not_b}}}"))
    assert main(["test", str(tmp_path), "-o", "json"]) == 0
    cov = json.loads(capsys.readouterr().out)["coverage"]
    # not_b rejected b; not_c never rejected anything; big scored a (the only feasible node)
    assert cov["filters"] == {"covered": 1, "total": 2, "percent": 50.0}
    assert cov["scores"] == {"covered": 1, "total": 1, "percent": 100.0}
    assert cov["uncovered_rules"][0]["rule"] == "filter not_c" and "rejected a node" in cov["meaning"]
    assert main(["test", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "coverage: filters 50.0% (1/2), scores 100.0% (1/1), clauses" in out
    assert "not covered: filter not_c" in out


def test_an_alias_bomb_in_a_test_file_is_refused_quickly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    (tmp_path / "t.yaml").write_text("\n".join(lines) + "\ncases: [*a9]\n")
    assert main(["test", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "aliases expand to more than" in err and f"{tmp_path / 't.yaml'}:" in err
