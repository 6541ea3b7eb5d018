"""Malformed test files are located errors with exit 2 -- never a crash (exit 70), never a silent pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from policyscheduler.cli import main
from policyscheduler.testing import TestInputError, collect

NODE = '{kind: Node, metadata: {name: a}, status: {allocatable: {cpu: "2", memory: 2Gi, pods: "10"}}}'
POD = "{kind: Pod, metadata: {name: p}, spec: {containers: [{name: c, image: x}]}}"


def _case(**parts: str) -> str:
    fields = {"name": "x", "pod": POD, "want": "{feasible: [a]}", **parts}
    body = ", ".join(f"{k}: {v}" for k, v in fields.items())
    return f"objects: [{NODE}]\ncases:\n  - {{{body}}}\n"


# (file text, the located message expected on stderr); the first four are issue 24's crash shapes
MALFORMED = [
    (_case(want="{filters: [a]}"), "want.filters (node name -> expectation) must be a mapping, not a list"),
    (_case(want="{chosen: {a: 1}}"), "want.chosen must be a node name or a list"),
    (_case(want="{feasible: [[a]]}"), "want.feasible[0] must be a non-empty string, not a list"),
    (_case(want="{rejected: [a]}"), "want.rejected (node name -> expectation) must be a mapping, not a list"),
    (_case(want="{rejected: {a: [x]}}"), "want.rejected.a must be a mapping {rule: NAME"),
    (_case(want="{filters: {node_unschedulable: {a: 3}}}"), "must be pass, skip or a non-empty list of reasons"),
    (_case(want="{scores: {image_locality: {a: high}}}"), "want.scores.image_locality.a must be an integer or a range"),
    (_case(want="{totals: {a: {min: 5, max: 1}}}"), "min 5 is above max 1"),
    (_case(want="{message: [x]}"), "want.message must be a string, not a list"),
    (_case(want="{absent: []}"), "want.absent must not be empty"),
    (_case(objects="{a: 1}"), "objects must be a list of Kubernetes objects, not a mapping"),
    (_case(objects="[{kind: List, items: {a: 1}}]"), "kind List is not one the scheduler reads"),
    (_case(objects="[{kind: Deployment, metadata: {name: d}}]"), "kind Deployment is not one the scheduler reads"),
    (_case(name="[x]"), "name must be a non-empty string, not a list"),
    (_case(note="3"), "note must be a string, not an integer"),
    (_case(pod_from="[a]"), "exactly one of pod"),
    ("cases: {x: 1}\n", "t.yaml:1:1: cases must be a non-empty list of cases, not a mapping"),
    ("cases: []\n", "cases must be a non-empty list of cases, but it is empty"),
    ("cases: [3]\n", "t.yaml:1:9: a case must be a mapping"),
    (f"policies: {{a: 1}}\ncases: [{{name: x, pod: {POD}, want: {{feasible: []}}}}]\n",
     "t.yaml:1:1: policies must be a list of strings, not a mapping"),
    (f"pod: {POD}\nwant: {{feasible: []}}\npolicies: x.policy\n", "t.yaml:3:1: policies must be a list of strings"),
    (_case() + f"  - {{name: x, pod: {POD}, want: {{feasible: []}}}}\n", "two cases are named 'x'"),
    (_case(extra="1"), "unknown key 'extra' in a case (known: name, note, now, objects, objects_from, pod, pod_from, want)"),
    ("cases: &a [*a]\n", "t.yaml:1:12: recursive YAML anchor"),
    ("a: &x 1\na: 2\ncases: [1]\n", "t.yaml:2:1: duplicate key 'a'"),
    ("cases: [\n", "t.yaml:2:1: invalid YAML"),
    ("cases: [!!binary aGVsbG8=]\n", "a bytes value"),
]


@pytest.mark.parametrize("text, needle", MALFORMED, ids=[f"m{i}" for i in range(len(MALFORMED))])
def test_malformed_file_is_a_located_error_exit_2(tmp_path: Path, text: str, needle: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "t.yaml").write_text(text)
    assert main(["test", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert needle in captured.err, captured.err
    assert "Traceback" not in captured.err and "internal error" not in captured.err
    first = captured.err.splitlines()[0]
    prefix = f"error: {tmp_path / 't.yaml'}:"
    assert first.startswith(prefix), first  # every message names the file ...
    line, col = first[len(prefix):].split(":")[:2]
    assert line.isdigit() and col.isdigit(), first  # ... the line and the column


def test_every_problem_of_every_file_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.yaml").write_text(_case(want="{filters: [a], chosen: {a: 1}}"))
    (tmp_path / "b.yaml").write_text(_case(note="3"))
    assert main(["test", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "a.yaml:3:" in err and "want.filters" in err and "want.chosen" in err and "b.yaml:3:" in err


@pytest.mark.parametrize("pod, needle", [
    ("{kind: Pod, metadata: {name: Bad_Name}}", "metadata.name is not a valid name"),
    ("{kind: Pod, metadata: {name: p}, spec: {priority: high}}", "spec.priority: 'high' (must be a 32-bit integer)"),
    ("{kind: Pod, metadata: {name: p}, spec: {containers: [{name: c, resources: {requests: {cpu: '-1'}}}]}}",
     "is negative"),
    ("{kind: Pod}", "Pod has no metadata.name"),
    ("{kind: Node, metadata: {name: n}}", "pod must be a Pod object (kind: Pod), not kind 'Node'"),
])
def test_invalid_case_pod_is_refused_like_a_snapshot_pod(tmp_path: Path, pod: str, needle: str,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "t.yaml").write_text(_case(pod=pod))
    assert main(["test", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert needle in err and f"{tmp_path / 't.yaml'}:3:" in err, err


def test_a_pod_field_the_scheduler_cannot_read_is_an_error_not_absent(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    pod = "{kind: Pod, metadata: {name: p}, spec: {containers: [{name: c, resources: {requests: {cpu: 5Xi}}}]}}"
    (tmp_path / "t.yaml").write_text(_case(pod=pod))
    assert main(["test", str(tmp_path)]) == 2
    out = capsys.readouterr().out
    assert "ERROR" in out and "fields that cannot be read" in out and "5Xi" in out


def test_snapshots_next_to_tests_are_not_test_files(tmp_path: Path) -> None:
    (tmp_path / "nodes.yaml").write_text(f"---\n{NODE}\n---\n{NODE.replace('name: a', 'name: b')}\n")
    (tmp_path / "t.yaml").write_text("objects_from: [nodes.yaml]\ncases:\n"
                                     f"  - {{name: x, pod: {POD}, want: {{feasible: [a, b]}}}}\n")
    suites, _, _ = collect([tmp_path])
    assert [s.file for s in suites] == [str(tmp_path / "t.yaml")]
    assert [o["metadata"]["name"] for o in suites[0].cases[0].objects] == ["a", "b"]


def test_objects_from_problems_are_located_at_the_key(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text("objects_from: [missing.yaml]\ncases:\n"
                                     f"  - {{name: x, pod: {POD}, want: {{feasible: []}}}}\n")
    with pytest.raises(TestInputError) as info:
        collect([tmp_path])
    assert info.value.problems[0].startswith(f"{tmp_path / 't.yaml'}:1:1: objects_from: ")


def test_testing_reads_through_the_public_inputs_api() -> None:
    """Issue 22: no private loader of ``inputs`` imported by ``testing``."""
    package = Path(__file__).resolve().parents[2] / "policyscheduler" / "testing"
    for module in package.glob("*.py"):
        text = module.read_text()
        assert "inputs.reader" not in text and "_Loader" not in text and "import yaml" not in text, module.name


def test_a_case_built_in_code_is_checked_too() -> None:
    """run_case on a Case that did not come from a file: its shapes and its pod are checked, never assumed."""
    from policyscheduler.loader import load_layered
    from policyscheduler.testing.runner import Case, run_case

    policy_set = load_layered([]).policy_set
    node = {"kind": "Node", "metadata": {"name": "a"}, "status": {"allocatable": {"pods": "1"}}}
    no_pod = run_case(Case("x.yaml", "x", {"want": {"feasible": ["a"]}}, [node], None, ()), policy_set)
    assert no_pod.status == "error" and "the case has no pod" in (no_pod.error or "")
    bad_shape = run_case(Case("x.yaml", "x", {"want": {"chosen": {"a": 1}}}, [node], {"kind": "Pod"}, ()), policy_set)
    assert bad_shape.status == "error" and "want.chosen must be a node name" in (bad_shape.error or "")
