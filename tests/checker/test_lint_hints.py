"""Issue 23, item 4: lint's sharper diagnostics -- the cases that must stay quiet, and what must not be said.

The broken-policy side (each item with its expected code, message and position) is in the corpus,
tests/checker/broken/: warnings_with_errors, possible_division_*, division_literal_zero (at the `/`),
parse_*_needs_parens, disable_*_of_a_*, override_filter_of_a_score, unknown_function_string_method,
unknown_method_call_suggests_methods, cost_limit and cost_budget_at_loop (at the loop).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from policyscheduler.cli import lint
from policyscheduler.diagnostics import close_names

pytestmark = pytest.mark.usefixtures("cli_schema")


def _lint(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[dict[str, Any]]]:
    f = tmp_path / "case.policy"
    f.write_text(text)
    status = lint.main([str(f), "--format", "json"])
    return status, json.loads(capsys.readouterr().out)["diagnostics"]


GUARDED = {
    "a non-zero default": 'score s weight 1 normalize scale\n  value 100 / int(node.labels["slots"], default 1)\n',
    "if d == 0 then ... else n / d": ('score s weight 1 normalize scale\n  let d = int(node.labels["slots"], default 0)\n'
                                      '  value if d == 0 then 0 else 100 / d\n'),
    "if len(x) > 0": 'score s weight 1 normalize scale\n  value if len(node.taints) > 0 then 100 / len(node.taints) else 0\n',
    "d != 0 and": ('filter f\n  reason "r"\n  let d = count(t in node.taints)\n'
                   '  require d != 0 and node.pod_count / d < 3\n'),
    "d == 0 or": 'filter f\n  reason "r"\n  require len(node.taints) == 0 or 100 / len(node.taints) > 3\n',
    "max(len(x), 1)": 'score s weight 1 normalize scale\n  value 100 / max(len(node.taints), 1)\n',
    "len(x) + 1": 'score s weight 1 normalize scale\n  value 100 / (len(node.taints) + 1)\n',
    "applies when": ('score s weight 1 normalize scale\n  applies when len(pod.labels) > 0\n'
                     '  value 100 / len(pod.labels)\n'),
    "ignore node when": ('score s weight 1 normalize scale\n  ignore node when len(node.taints) == 0\n'
                         '  value 100 / len(node.taints)\n'),
    "a divisor lint cannot place": 'score s weight 1 normalize scale\n  value 100 / int(node.labels["slots"])\n',
}


@pytest.mark.parametrize("name", sorted(GUARDED))
def test_a_divisor_that_cannot_be_zero_here_passes(name: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    status, diags = _lint(tmp_path, GUARDED[name], capsys)
    assert status == 0 and not [d for d in diags if "division" in d["code"]], diags


def test_the_same_divisions_unguarded_are_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The guarded cases are quiet because of their guard: without it the same divisor is reported."""
    text = ('score s weight 1 normalize scale\n  let d = int(node.labels["slots"], default 0)\n'
            '  value if node.pod_count == 0 then 0 else 100 / d\n')
    status, diags = _lint(tmp_path, text, capsys)
    assert status == 0
    assert [(d["code"], d["line"], d["col"]) for d in diags] == [("possible-division-by-zero", 3, 48)]


def test_a_runtime_division_by_zero_is_located_at_the_operator(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """What lint warns about is what fails at run time, at the same line and column (the `/`)."""
    from policyscheduler.cli import main

    pol = tmp_path / "slots.policy"
    pol.write_text('score per_slot weight 1 normalize scale\n  value 100 / int(node.labels["slots"], default 0)\n')
    snap = tmp_path / "c.json"
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"schedulerName": "policy-scheduler", "containers": [{"name": "c", "image": "i"}]}}
    snap.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [node, pod]}))
    assert main(["simulate", "--policies", str(pol), "-o", "json", str(snap)]) == 0
    err = capsys.readouterr().err
    assert f"{pol}:2:13: score rule per_slot failed: integer division by zero" in err
    lint.main([str(pol), "--format", "json"])
    (d,) = json.loads(capsys.readouterr().out)["diagnostics"]
    assert (d["code"], d["line"], d["col"]) == ("possible-division-by-zero", 2, 13)


def test_no_suggestion_across_unrelated_words(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, diags = _lint(tmp_path, 'filter f\n  reason "r"\n  require startswith(node.name, "a")\n', capsys)
    (d,) = diags
    assert "starts_with(s, prefix)" in d["message"] and "taint" not in d["message"]
    # a read suggests fields, a call methods
    _, diags = _lint(tmp_path, 'filter f\n  reason "r"\n  require node.nme == "a"\n', capsys)
    assert "did you mean 'name'?" in diags[0]["message"]


@pytest.mark.parametrize(("name", "options", "expected"), [
    ("startswith", ["taint", "starts_with", "ends_with"], ["starts_with"]),
    ("lables", ["labels", "taints", "name"], ["labels"]),
    ("to_int", ["int", "is_int", "taint"], ["int"]),
    ("x", ["y", "pod", "node"], ["y"]),
    ("nod", ["node", "pod"], ["node", "pod"]),
    ("zone", ["zones_total", "name"], []),
    ("startswith", ["taint"], []),
])
def test_close_names_is_relative_to_the_length(name: str, options: list[str], expected: list[str]) -> None:
    assert close_names(name, options) == expected
