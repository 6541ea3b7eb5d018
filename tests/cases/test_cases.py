"""The conformance corpus, run by ``policyscheduler test`` (the policy test runner).

Every ``tests/cases/<topic>/*.yaml`` file is one small cluster, one pending pod and the outcome
kube-scheduler v1.35 would produce, computed by hand from the upstream formulas (each case's ``note``
shows the arithmetic). They are single-case files of the runner's format
(:mod:`policyscheduler.testing.runner`): ``note``, ``objects``, ``pod`` and ``want`` (``feasible``,
``rejected``, ``scores``, ``raw``, ``totals``, ``chosen``, ``message``). This module only makes CI run
them: one pytest item per case through the runner, and the command itself over the whole folder.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

from policyscheduler.cli import main
from policyscheduler.testing.runner import Case, collect, run_case, validate

CASES_DIR = Path(__file__).resolve().parent
REPO = CASES_DIR.parents[1]
POLICY_TESTS = REPO / "policies" / "tests"
"""The default set's own test files (one per plugin, several cases each): with this corpus, what covers the set.
The volume plugins and the DRA rejection are pinned there (policies/tests/volume_*.yaml, node_volume_limits.yaml,
dynamic_resources.yaml), beside the storage objects their cases need."""


@functools.lru_cache(maxsize=1)
def default_policy_set() -> Any:
    from policyscheduler.loader import load_layered

    result = load_layered([])
    assert result.policy_set is not None, result.diagnostics
    return result.policy_set


SUITES = collect([CASES_DIR])[0]
CASES: list[Case] = [c for s in SUITES for c in s.cases]


@pytest.mark.parametrize("case", CASES, ids=[str(Path(c.file).relative_to(CASES_DIR)) for c in CASES])
def test_case(case: Case) -> None:
    result = run_case(case, default_policy_set())
    if result.status != "pass":
        detail = result.error or "\n".join(f"{f.path}: expected {f.expected!r}, actual {f.actual!r}"
                                           for f in result.failures)
        pytest.fail(detail, pytrace=False)


def test_the_command_runs_the_corpus(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["test", str(CASES_DIR), "--output", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["passed"] == len(CASES) >= 170 and doc["failed"] == 0


def test_the_corpus_and_the_sets_own_tests_cover_every_rule_and_clause(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["test", str(CASES_DIR), str(POLICY_TESTS), "--output", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["failed"] == 0
    cov = doc["coverage"]
    assert cov["rule_percent"] == 100.0 and cov["clause_percent"] == 100.0, cov


def test_every_rule_is_pinned_by_three_cases() -> None:
    """Coverage counts what ran; this counts what the cases *assert* about each rule."""
    ps = default_policy_set()
    count = {f"filter {r.name}": 0 for r in ps.filters} | {f"score {r.name}": 0 for r in ps.scores}
    for case in CASES + [c for s in collect([POLICY_TESTS])[0] for c in s.cases]:
        want = case.data["want"]
        rules = {f"filter {v['rule']}" for v in (want.get("rejected") or {}).values()}
        rules |= {f"score {r}" for k in ("scores", "raw") for r in (want.get(k) or {})}
        for r in rules:
            if r in count:
                count[r] += 1
    thin = {r: n for r, n in count.items() if n < 3 and r != "filter node_affinity_node_names"}
    assert not thin, f"rules pinned by fewer than 3 cases: {thin}"


def test_validation_rejects_typos() -> None:
    """The validator must catch a misspelt key, or typos would silently pass."""
    node = {"kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"pods": "1"}}}
    pod = {"kind": "Pod", "metadata": {"name": "p"}}

    def problems(want: dict[str, Any]) -> list[str]:
        return validate(Case("x.yaml", "x", {"want": want}, [node], pod, ()), default_policy_set())

    assert problems({"feasible": ["n1"]}) == []
    assert problems({"feasable": ["n1"]})
    assert problems({"scores": {"taint_tolerations": {"n1": 1}}})
    assert problems({"rejected": {"n1": {"reasons": ["x"]}}})
    assert problems({"rejected": {"n1": {"rule": "no_such_filter"}}})
    assert problems({"totals": {"n2": 1}})
    assert problems({"scores": {"image_locality": {"n1": {"min": 1, "maxx": 3}}}})
