"""Data-driven conformance cases: the default policy set against kube-scheduler v1.35.

Every ``tests/cases/<topic>/*.yaml`` file is one small cluster, one pending pod and the outcome
kube-scheduler v1.35 would produce, computed by hand from the upstream formulas (each case's
``note`` shows the arithmetic so a reviewer can check it without running anything). The runner
feeds the case through the real loader, object model and evaluator, so a failure points either at
a wrong hand computation or at a divergence from kube-scheduler -- never at a mock.

Case layout (unknown keys are an error, so typos cannot hide)::

    note: str                 # the hand computation
    objects: [k8s objects]    # Nodes, bound Pods, Namespaces, Services, ReplicaSets, StatefulSets
    pod: {k8s Pod}            # the pod being scheduled
    want:
      feasible: [node]        # exact set
      rejected: {node: {rule: str, reasons: [str]}}
      scores: {rule: {node: int}}     # normalised, before weight
      raw: {rule: {node: int}}
      totals: {node: int}
      chosen: node | [node]   # the unique best node, or exactly the nodes that tie for best
      message: str            # FailedScheduling text when nothing fits
"""

from __future__ import annotations

import functools
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

CASES_DIR = Path(__file__).resolve().parent
REPO = CASES_DIR.parents[1]
POLICIES = REPO / "policies"

TOP_KEYS = {"note", "objects", "pod", "want"}
REQUIRED_TOP_KEYS = {"note", "objects", "pod", "want"}
WANT_KEYS = {"feasible", "rejected", "scores", "raw", "totals", "chosen", "message"}

FILTER_RULES: dict[str, tuple[str, ...]] = {
    "node_unschedulable": ("node(s) were unschedulable",),
    "node_name": ("node(s) didn't match the requested node name",),
    "taint_toleration": ("node(s) had untolerated taint(s)",),
    "node_affinity": ("node(s) didn't match Pod's node affinity/selector",),
    "node_ports": ("node(s) didn't have free ports for the requested pod ports",),
    "node_resources_fit": ("Too many pods", "Insufficient "),
    "pod_topology_spread": ("node(s) didn't match pod topology spread constraints",),
    "inter_pod_affinity": (
        "node(s) didn't match pod affinity rules",
        "node(s) didn't match pod anti-affinity rules",
        "node(s) didn't satisfy existing pods anti-affinity rules",
    ),
}
SCORE_RULES = (
    "taint_toleration",
    "node_affinity",
    "node_resources_fit",
    "pod_topology_spread",
    "inter_pod_affinity",
    "node_resources_balanced_allocation",
    "image_locality",
)


def case_files() -> list[Path]:
    """Every case file, in a stable order so test ids do not move between runs."""
    return sorted(p for p in CASES_DIR.rglob("*.yaml") if p.is_file())


def load_case(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    if not isinstance(data, dict):
        raise TypeError(f"{path}: a case must be a mapping")
    return data


def structure_problems(case: Any) -> list[str]:
    """What is wrong with the shape of a case (empty list when well formed)."""
    problems: list[str] = []
    if not isinstance(case, dict):
        return ["case is not a mapping"]
    unknown = set(case) - TOP_KEYS
    if unknown:
        problems.append(f"unknown top-level keys {sorted(unknown)}")
    missing = REQUIRED_TOP_KEYS - set(case)
    if missing:
        problems.append(f"missing top-level keys {sorted(missing)}")
    if not isinstance(case.get("note"), str) or not case.get("note", "").strip():
        problems.append("note must be a non-empty string with the hand computation")
    objects = case.get("objects")
    if not isinstance(objects, list) or not all(isinstance(o, dict) and "kind" in o for o in objects):
        problems.append("objects must be a list of Kubernetes objects with a kind")
    else:
        for o in objects:
            if o.get("kind") == "Node":
                alloc = ((o.get("status") or {}).get("allocatable")) or {}
                if "pods" not in alloc:
                    problems.append(f"node {o.get('metadata', {}).get('name')} has no allocatable pods")
    pod = case.get("pod")
    if not isinstance(pod, dict) or pod.get("kind") != "Pod":
        problems.append("pod must be a Pod object")
    want = case.get("want")
    if not isinstance(want, dict) or not want:
        problems.append("want must be a non-empty mapping")
        return problems
    unknown_want = set(want) - WANT_KEYS
    if unknown_want:
        problems.append(f"unknown want keys {sorted(unknown_want)}")
    node_names = {
        (o.get("metadata") or {}).get("name")
        for o in (objects if isinstance(objects, list) else [])
        if isinstance(o, dict) and o.get("kind") == "Node"
    }
    if "feasible" in want and (
        not isinstance(want["feasible"], list) or not set(want["feasible"]) <= node_names
    ):
        problems.append("want.feasible must list node names of the case")
    if "rejected" in want:
        rej = want["rejected"]
        if not isinstance(rej, dict):
            problems.append("want.rejected must be a mapping")
        else:
            for node, v in rej.items():
                if node not in node_names:
                    problems.append(f"want.rejected names unknown node {node}")
                if not isinstance(v, dict) or set(v) != {"rule", "reasons"}:
                    problems.append(f"want.rejected.{node} needs exactly rule and reasons")
                elif v["rule"] not in FILTER_RULES:
                    problems.append(f"want.rejected.{node}.rule {v['rule']!r} is not a default filter")
                elif not isinstance(v["reasons"], list) or not v["reasons"]:
                    problems.append(f"want.rejected.{node}.reasons must be a non-empty list")
    for key in ("scores", "raw"):
        if key in want:
            block = want[key]
            if not isinstance(block, dict):
                problems.append(f"want.{key} must be a mapping")
                continue
            for rule, per_node in block.items():
                if rule not in SCORE_RULES:
                    problems.append(f"want.{key} names unknown score rule {rule!r}")
                if not isinstance(per_node, dict) or not set(per_node) <= node_names:
                    problems.append(f"want.{key}.{rule} must map node names of the case to ints")
                elif not all(isinstance(x, int) and not isinstance(x, bool) for x in per_node.values()):
                    problems.append(f"want.{key}.{rule} values must be ints")
    if "totals" in want:
        t = want["totals"]
        if not isinstance(t, dict) or not set(t) <= node_names:
            problems.append("want.totals must map node names to ints")
    if "chosen" in want:
        c = want["chosen"]
        allowed = c if isinstance(c, list) else [c]
        if not allowed or not set(allowed) <= node_names:
            problems.append("want.chosen must name nodes of the case")
    if "message" in want and not isinstance(want["message"], str):
        problems.append("want.message must be a string")
    return problems


@functools.lru_cache(maxsize=1)
def default_policy_set() -> Any:
    """The default policy set, loaded once through the same loader the scheduler uses."""
    from policyscheduler.loader import load_policy_set

    result = load_policy_set([POLICIES])
    errors = [d for d in result.diagnostics if d.severity == "error"]
    assert not errors, "default policies do not load:\n" + "\n".join(map(str, errors))
    assert result.policy_set is not None
    return result.policy_set


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(CASES_DIR)) for p in paths]


CASE_FILES = case_files()


@pytest.mark.parametrize("path", CASE_FILES, ids=_ids(CASE_FILES))
def test_case_is_well_formed(path: Path) -> None:
    problems = structure_problems(load_case(path))
    assert not problems, "; ".join(problems)


@pytest.mark.parametrize("path", CASE_FILES, ids=_ids(CASE_FILES))
def test_case(path: Path) -> None:
    case = load_case(path)
    problems = structure_problems(case)
    assert not problems, "; ".join(problems)

    from policyscheduler.evaluation import evaluate
    from policyscheduler.objects import ClusterSnapshot

    policy_set = default_policy_set()
    snapshot = ClusterSnapshot.from_objects(case["objects"])
    decision = evaluate(policy_set, snapshot, case["pod"], rng=random.Random(0))
    want = case["want"]
    failures: list[str] = []

    errors = {n: v.error for n, v in decision.verdicts.items() if v.error}
    if errors:
        failures.append(f"runtime errors in rules: {errors}")

    if "feasible" in want:
        got = set(decision.feasible)
        if got != set(want["feasible"]):
            failures.append(f"feasible: got {sorted(got)}, want {sorted(want['feasible'])}")

    for node, exp in (want.get("rejected") or {}).items():
        v = decision.verdicts.get(node)
        if v is None:
            failures.append(f"rejected.{node}: no verdict for node")
            continue
        if v.rule != exp["rule"] or set(v.reasons) != set(exp["reasons"]):
            failures.append(
                f"rejected.{node}: got rule={v.rule!r} reasons={sorted(v.reasons)}, "
                f"want rule={exp['rule']!r} reasons={sorted(exp['reasons'])}"
            )

    for key, attr in (("scores", "normalized"), ("raw", "raw")):
        for rule, per_node in (want.get(key) or {}).items():
            got_rule = decision.scores.get(rule)
            if got_rule is None:
                failures.append(f"{key}.{rule}: rule has no scores (scored: {sorted(decision.scores)})")
                continue
            got = {n: getattr(got_rule[n], attr) for n in per_node if n in got_rule}
            if got != per_node:
                failures.append(f"{key}.{rule}: got {got}, want {per_node}")

    if "totals" in want:
        got_totals = {n: decision.totals.get(n) for n in want["totals"]}
        if got_totals != want["totals"]:
            failures.append(f"totals: got {got_totals}, want {want['totals']}")

    if "chosen" in want:
        c = want["chosen"]
        allowed = set(c) if isinstance(c, list) else {c}
        if decision.node not in allowed:
            failures.append(f"chosen: got {decision.node!r}, want one of {sorted(allowed)}")
        # A single node means a unique best total; a list means exactly these nodes tie.
        if set(decision.top) != allowed:
            failures.append(f"top: got {sorted(decision.top)}, want {sorted(allowed)}")

    if "message" in want and decision.message != want["message"]:
        failures.append(f"message:\n  got  {decision.message!r}\n  want {want['message']!r}")

    if failures:
        detail = {
            n: (v.rule, list(v.reasons)) for n, v in decision.verdicts.items() if v.rule is not None
        }
        scores = {r: {n: (s.raw, s.normalized) for n, s in per.items()} for r, per in decision.scores.items()}
        pytest.fail(
            "\n".join(failures)
            + f"\n-- rejected: {detail}\n-- scores (raw, normalized): {scores}\n-- totals: {decision.totals}",
            pytrace=False,
        )


def _exercised(case: dict[str, Any]) -> tuple[set[str], set[str]]:
    """Which filter rules and which score rules a case pins down."""
    want = case.get("want") or {}
    filters = {v["rule"] for v in (want.get("rejected") or {}).values() if isinstance(v, dict) and "rule" in v}
    msg = want.get("message") or ""
    for rule, reasons in FILTER_RULES.items():
        if any(r in msg for r in reasons):
            filters.add(rule)
    scores = set(want.get("scores") or {}) | set(want.get("raw") or {})
    return filters, scores


def test_corpus_size_and_coverage() -> None:
    cases = [load_case(p) for p in CASE_FILES]
    assert len(cases) >= 80, f"only {len(cases)} cases"
    filter_count = {r: 0 for r in FILTER_RULES}
    score_count = {r: 0 for r in SCORE_RULES}
    for case in cases:
        filters, scores = _exercised(case)
        for r in filters:
            if r in filter_count:
                filter_count[r] += 1
        for r in scores:
            if r in score_count:
                score_count[r] += 1
    thin_filters = {r: n for r, n in filter_count.items() if n < 3}
    thin_scores = {r: n for r, n in score_count.items() if n < 3}
    assert not thin_filters, f"filter rules exercised by fewer than 3 cases: {thin_filters}"
    assert not thin_scores, f"score rules exercised by fewer than 3 cases: {thin_scores}"


def test_structure_check_rejects_typos() -> None:
    """The validator itself must catch a misspelt want key, or typos would silently pass."""
    good = {
        "note": "x",
        "objects": [{"kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"pods": "1"}}}],
        "pod": {"kind": "Pod", "metadata": {"name": "p"}},
        "want": {"feasible": ["n1"]},
    }
    assert structure_problems(good) == []
    assert structure_problems({**good, "want": {"feasable": ["n1"]}})
    assert structure_problems({**good, "wants": {}})
    assert structure_problems({**good, "want": {"scores": {"taint_tolerations": {"n1": 1}}}})
    assert structure_problems({**good, "want": {"rejected": {"n1": {"rule": "taint_toleration"}}}})
