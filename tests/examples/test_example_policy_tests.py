"""Every example policy (examples/policies/*.policy) has a small snapshot and a `policyscheduler test` file
in examples/policies/tests/<name>/, and they pass on both engines with every rule of the example covered.

These run in `make test` (and `make test-fast`): the README's claim that each example is tested against a
small snapshot is checked, not trusted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from policyscheduler.cli import main
from policyscheduler.loader import load_layered

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "policies"
POLICIES = sorted(EXAMPLES.glob("*.policy"))


def test_every_example_has_a_test_folder_and_nothing_else_does() -> None:
    assert len(POLICIES) >= 10
    assert {p.stem for p in POLICIES} == {d.name for d in (EXAMPLES / "tests").iterdir() if d.is_dir()}


@pytest.mark.parametrize("engine", ["vector", "reference"])
@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: p.stem)
def test_example_passes_its_tests_with_full_coverage(policy: Path, engine: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    folder = EXAMPLES / "tests" / policy.stem
    tests = sorted(folder.glob("*.test.yaml"))
    assert tests and (folder / "snapshot.yaml").is_file()
    assert all(f"policies: [../../{policy.name}]" in t.read_text() for t in tests)  # the example, not a copy
    assert main(["test", str(folder), "--engine", engine, "-o", "json"]) == 0, capsys.readouterr()
    doc = json.loads(capsys.readouterr().out)
    assert doc["failed"] == doc["errors"] == 0 and doc["passed"] >= 1
    own = load_layered([policy], defaults_dir=None)
    assert own.policy_set is not None
    # the rules the example defines are the rules under test, and every one is covered
    ps = own.policy_set
    defined = {f"{'filter' if r in ps.filters else 'score' if r in ps.scores else 'preempt'} {r.name}"
               for r in ps.every_rule if Path(r.span.file).resolve() == policy.resolve()}
    assert set(doc["coverage"]["rules"]) == defined
    assert all(doc["coverage"]["rules"].values()) and doc["coverage"]["clause_percent"] == 100.0
