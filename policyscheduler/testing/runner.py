"""The policy test runner behind ``policyscheduler test [PATH...]``.

**Where tests are.** Every ``*.yaml`` / ``*.yml`` file under the PATHs whose top level is a mapping with
``cases:`` (a suite) or with ``pod:`` and ``want:`` (a single case, named after the file) is a test file;
other YAML files are left alone (they may be cluster snapshots a test refers to). The ``*.policy`` files
under the same PATHs are the policies under test, layered on the bundled defaults exactly as ``lint``,
``simulate`` and ``run`` layer them (:func:`policyscheduler.loader.load_layered`).

**Format** (unknown keys are errors, so a typo cannot make a test pass)::

    policies: [extra.policy]          # optional: more policy files/folders (relative to this file)
    objects_from: [cluster.yaml]      # optional: objects shared by every case (files or folders)
    objects: [...]                    # optional: inline objects shared by every case
    cases:
      - name: a tainted node is off limits
        note: why the expectations are what they are (free text)
        objects: [...]                # Nodes, bound Pods, Namespaces, Services, ReplicaSets, StatefulSets
        objects_from: [more.yaml]
        pod: {kind: Pod, ...}         # or pod_from: pod.yaml (a file holding one Pod)
        want:
          feasible: [node, ...]               # the exact feasible set
          rejected:                           # first failing filter per node (as the scheduler reports it)
            node-a: {rule: NAME, reasons: [...], line: 12}   # reasons and line (of the clause) optional
          filters:                            # each filter on its own, whatever ran before it
            NAME: {node-a: pass, node-b: [reason, ...], node-c: skip}
          scores: {RULE: {node: 100}}         # normalised 0..100 (before the weight)
          raw: {RULE: {node: 3}}              # raw values
          weighted: {RULE: {node: 300}}       # normalised x weight
          totals: {node: 412}
          chosen: node | [node, ...]          # the unique best node, or exactly the nodes tying for it
          message: "0/3 nodes are available: ..."

Every number may be a range instead: ``{min: 10, max: 20}`` (either bound optional).

**Evaluation.** A case is one scheduling decision by the scheduler's own evaluator
(:func:`policyscheduler.evaluation.make_evaluator`, the vector engine unless told otherwise) on a snapshot
of the case's objects (pods with ``spec.nodeName`` are running; others are ignored). ``filters`` and
coverage re-run each filter clause by clause with the reference closures
(:func:`policyscheduler.compiler.program.trace_rule`).

**Coverage.** A filter is covered when some case saw it reject a node, a score rule when some case saw it
score a node; a clause when some case saw it act (a check emit its reason, a ``let``/``value`` computed, an
``applies when``/``ignore node when`` hold). Rule coverage of the set under test is reported, with the rules
and clauses no case exercised.
"""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

__all__ = ["Case", "CaseResult", "Coverage", "Failure", "Suite", "TestRun", "collect", "run_tests", "validate"]

SUITE_KEYS = {"policies", "objects_from", "objects", "cases"}
CASE_KEYS = {"name", "note", "objects", "objects_from", "pod", "pod_from", "want"}
SINGLE_KEYS = CASE_KEYS | {"policies"}
WANT_KEYS = {"feasible", "rejected", "filters", "scores", "raw", "weighted", "totals", "chosen", "message"}
REJECTED_KEYS = {"rule", "reasons", "line"}


class TestInputError(Exception):
    """A test file that cannot be read or is malformed (exit 2)."""

    __test__ = False


@dataclasses.dataclass
class Case:
    file: str
    name: str
    data: dict[str, Any]
    objects: list[dict[str, Any]]
    pod: dict[str, Any] | None
    policies: tuple[str, ...]
    problems: list[str] = dataclasses.field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.file}::{self.name}"


@dataclasses.dataclass
class Suite:
    file: str
    cases: list[Case]


@dataclasses.dataclass(frozen=True)
class Failure:
    path: str
    expected: Any
    actual: Any

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "expected": self.expected, "actual": self.actual}


@dataclasses.dataclass
class CaseResult:
    case: Case
    status: str  # "pass" | "fail" | "error"
    failures: list[Failure] = dataclasses.field(default_factory=list)
    error: str | None = None
    digest: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"file": self.case.file, "name": self.case.name, "status": self.status,
                "failures": [f.to_json() for f in self.failures], "error": self.error, "policy_digest": self.digest}


@dataclasses.dataclass
class Coverage:
    """Rules and clauses of the sets under test, and which ones some case exercised."""

    rules: dict[str, str] = dataclasses.field(default_factory=dict)  # "filter x" -> location
    clauses: dict[str, str] = dataclasses.field(default_factory=dict)  # location -> "filter x: keyword"
    rules_hit: set[str] = dataclasses.field(default_factory=set)
    clauses_hit: set[str] = dataclasses.field(default_factory=set)

    @staticmethod
    def _pct(hit: int, total: int) -> float:
        return 100.0 if total == 0 else round(100.0 * hit / total, 1)

    @property
    def rule_percent(self) -> float:
        return self._pct(len(self.rules_hit & set(self.rules)), len(self.rules))

    @property
    def clause_percent(self) -> float:
        return self._pct(len(self.clauses_hit & set(self.clauses)), len(self.clauses))

    def to_json(self) -> dict[str, Any]:
        return {
            "rule_percent": self.rule_percent,
            "clause_percent": self.clause_percent,
            "rules": {r: r in self.rules_hit for r in self.rules},
            "uncovered_rules": [{"rule": r, "location": loc} for r, loc in self.rules.items() if r not in self.rules_hit],
            "uncovered_clauses": [{"clause": what, "location": loc} for loc, what in self.clauses.items()
                                  if loc not in self.clauses_hit],
        }


@dataclasses.dataclass
class TestRun:
    results: list[CaseResult]
    coverage: Coverage
    digests: list[str]

    __test__ = False

    @property
    def failed(self) -> list[CaseResult]:
        return [r for r in self.results if r.status != "pass"]

    def to_json(self) -> dict[str, Any]:
        return {
            "passed": sum(1 for r in self.results if r.status == "pass"),
            "failed": sum(1 for r in self.results if r.status == "fail"),
            "errors": sum(1 for r in self.results if r.status == "error"),
            "policy_digests": self.digests,
            "cases": [r.to_json() for r in self.results],
            "coverage": self.coverage.to_json(),
        }


# ------------------------------------------------------------------------------------------- reading


def _load_yaml(path: Path) -> Any:
    from policyscheduler.inputs.reader import _Loader  # the snapshot reader's YAML flavour (timestamps as text)

    try:
        docs = list(yaml.load_all(path.read_text(encoding="utf-8"), Loader=_Loader))
        return docs[0] if len(docs) == 1 else None  # several documents: a snapshot, not a test file
    except (OSError, UnicodeDecodeError) as exc:
        raise TestInputError(f"{path}: cannot read: {exc}") from None
    except yaml.YAMLError as exc:
        raise TestInputError(f"{path}: not valid YAML: {str(exc).splitlines()[0]}") from None


def is_test_document(doc: Any) -> bool:
    return isinstance(doc, dict) and ("cases" in doc or (("pod" in doc or "pod_from" in doc) and "want" in doc))


def _yaml_files(paths: Sequence[str | Path]) -> tuple[list[Path], list[Path], list[str]]:
    """(YAML files, .policy files, missing paths) under ``paths``."""
    yamls: list[Path] = []
    policies: list[Path] = []
    missing: list[str] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            for f in sorted(p.rglob("*")):
                if any(part.startswith(".") for part in f.relative_to(p).parts) or not f.is_file():
                    continue
                if f.suffix in (".yaml", ".yml"):
                    yamls.append(f)
                elif f.suffix == ".policy":
                    policies.append(f)
        elif p.is_file():
            (policies if p.suffix == ".policy" else yamls).append(p)
        else:
            missing.append(str(raw))
    return yamls, policies, missing


def _objects_from(base: Path, refs: Any, where: str) -> list[dict[str, Any]]:
    from policyscheduler.inputs import read_objects

    if refs is None:
        return []
    if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
        raise TestInputError(f"{where}: objects_from must be a list of paths")
    read = read_objects([base / r for r in refs])
    if read.errors:
        raise TestInputError(f"{where}: " + "; ".join(read.errors))
    return list(read.objects)


def _inline(objects: Any, where: str) -> list[dict[str, Any]]:
    if objects is None:
        return []
    if not isinstance(objects, list) or not all(isinstance(o, dict) and "kind" in o for o in objects):
        raise TestInputError(f"{where}: objects must be a list of Kubernetes objects, each with a kind")
    out: list[dict[str, Any]] = []
    for o in objects:
        if o.get("kind") == "List":
            out.extend(i for i in o.get("items") or [] if isinstance(i, dict))
        else:
            out.append(o)
    return out


def _case(path: Path, base_objects: list[dict[str, Any]], raw: Any, name: str, policies: tuple[str, ...],
          allowed: set[str]) -> Case:
    where = f"{path}: case {name!r}"
    if not isinstance(raw, dict):
        raise TestInputError(f"{where}: a case must be a mapping")
    case = Case(str(path), name, raw, [], None, policies)
    unknown = set(raw) - allowed
    if unknown:
        case.problems.append(f"unknown keys {sorted(unknown)} (known: {', '.join(sorted(allowed))})")
    case.objects = base_objects + _objects_from(path.parent, raw.get("objects_from"), where) + _inline(
        raw.get("objects"), where)
    pod = raw.get("pod")
    if "pod_from" in raw:
        found = [o for o in _objects_from(path.parent, [raw["pod_from"]], where) if o.get("kind") == "Pod"]
        if len(found) != 1:
            raise TestInputError(f"{where}: pod_from must name a file holding exactly one Pod")
        pod = found[0]
    if not isinstance(pod, dict) or pod.get("kind") != "Pod":
        case.problems.append("pod must be a Pod object (or pod_from a file with one)")
    else:
        case.pod = pod
    want = raw.get("want")
    if not isinstance(want, dict) or not want:
        case.problems.append("want must be a non-empty mapping")
    return case


def read_suite(path: Path) -> Suite | None:
    """The cases of one test file (None when the YAML file is not a test file)."""
    doc = _load_yaml(path)
    if not is_test_document(doc):
        return None
    assert isinstance(doc, dict)
    if "cases" not in doc:
        policies = tuple(str(path.parent / p) for p in doc.get("policies") or [])
        return Suite(str(path), [_case(path, [], doc, path.stem, policies, SINGLE_KEYS)])
    unknown = set(doc) - SUITE_KEYS
    if unknown:
        raise TestInputError(f"{path}: unknown top-level keys {sorted(unknown)} (known: {', '.join(sorted(SUITE_KEYS))})")
    refs = doc.get("policies") or []
    if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
        raise TestInputError(f"{path}: policies must be a list of paths")
    policies = tuple(str(path.parent / p) for p in refs)
    shared = _objects_from(path.parent, doc.get("objects_from"), str(path)) + _inline(doc.get("objects"), str(path))
    cases = doc.get("cases")
    if not isinstance(cases, list) or not cases:
        raise TestInputError(f"{path}: cases must be a non-empty list")
    out: list[Case] = []
    seen: set[str] = set()
    for k, raw in enumerate(cases):
        name = raw.get("name") if isinstance(raw, dict) else None
        name = name if isinstance(name, str) and name else f"case {k + 1}"
        if name in seen:
            raise TestInputError(f"{path}: two cases are named {name!r}")
        seen.add(name)
        out.append(_case(path, shared, raw, name, policies, CASE_KEYS))
    return Suite(str(path), out)


def collect(paths: Sequence[str | Path]) -> tuple[list[Suite], list[Path], list[str]]:
    """(test suites, policy files under test, missing paths) for ``paths``."""
    yamls, policies, missing = _yaml_files(paths)
    suites = [s for s in (read_suite(f) for f in yamls) if s is not None]
    return suites, policies, missing


# ---------------------------------------------------------------------------------------- validation


def _is_num(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_expect_num(x: Any) -> bool:
    return _is_num(x) or (isinstance(x, dict) and bool(x) and set(x) <= {"min", "max"}
                          and all(_is_num(v) for v in x.values()))


def validate(case: Case, policy_set: Any) -> list[str]:
    """What is wrong with a case's expectations, given the policy set (names of rules and nodes)."""
    problems = list(case.problems)
    want = case.data.get("want")
    if not isinstance(want, dict):
        return problems
    unknown = set(want) - WANT_KEYS
    if unknown:
        problems.append(f"unknown want keys {sorted(unknown)} (known: {', '.join(sorted(WANT_KEYS))})")
    nodes = {(o.get("metadata") or {}).get("name") for o in case.objects if o.get("kind") == "Node"}
    filters = {r.name for r in policy_set.filters}
    scores = {r.name for r in policy_set.scores}

    def names_nodes(what: str, value: Any) -> None:
        if not isinstance(value, dict) or not set(value) <= nodes:
            extra = sorted(set(value) - nodes) if isinstance(value, dict) else value
            problems.append(f"want.{what} must map node names of the case (unknown: {extra})")

    if "feasible" in want and (not isinstance(want["feasible"], list) or not set(want["feasible"]) <= nodes):
        problems.append("want.feasible must list node names of the case")
    for node, v in (want.get("rejected") or {}).items() if isinstance(want.get("rejected", {}), dict) else ():
        if node not in nodes:
            problems.append(f"want.rejected names unknown node {node!r}")
        if not isinstance(v, dict) or "rule" not in v or not set(v) <= REJECTED_KEYS:
            problems.append(f"want.rejected.{node} needs rule (and optionally reasons, line)")
        elif v["rule"] not in filters:
            problems.append(f"want.rejected.{node}.rule {v['rule']!r} is not a filter of the policy set")
        elif "reasons" in v and (not isinstance(v["reasons"], list) or not v["reasons"]):
            problems.append(f"want.rejected.{node}.reasons must be a non-empty list")
    if not isinstance(want.get("rejected", {}), dict):
        problems.append("want.rejected must be a mapping")
    for rule, per_node in (want.get("filters") or {}).items():
        if rule not in filters:
            problems.append(f"want.filters names unknown filter {rule!r}")
        names_nodes(f"filters.{rule}", per_node)
        if isinstance(per_node, dict):
            for node, v in per_node.items():
                if v not in ("pass", "skip") and not (isinstance(v, list) and v):
                    problems.append(f"want.filters.{rule}.{node} must be pass, skip or a list of reasons")
    for key in ("scores", "raw", "weighted"):
        block = want.get(key)
        if block is None:
            continue
        if not isinstance(block, dict):
            problems.append(f"want.{key} must be a mapping")
            continue
        for rule, per_node in block.items():
            if rule not in scores:
                problems.append(f"want.{key} names unknown score rule {rule!r}")
            names_nodes(f"{key}.{rule}", per_node)
            if isinstance(per_node, dict) and not all(_is_expect_num(x) for x in per_node.values()):
                problems.append(f"want.{key}.{rule} values must be ints or {{min, max}} ranges")
    if "totals" in want:
        names_nodes("totals", want["totals"])
        if isinstance(want["totals"], dict) and not all(_is_expect_num(x) for x in want["totals"].values()):
            problems.append("want.totals values must be ints or {min, max} ranges")
    if "chosen" in want:
        c = want["chosen"]
        allowed = c if isinstance(c, list) else [c]
        if not allowed or not set(allowed) <= nodes:
            problems.append("want.chosen must name nodes of the case")
    if "message" in want and not isinstance(want["message"], str):
        problems.append("want.message must be a string")
    return problems


# ------------------------------------------------------------------------------------------- running


def _num_ok(want: Any, got: Any) -> bool:
    if isinstance(want, dict):
        return _is_num(got) and want.get("min", got) <= got <= want.get("max", got)
    return bool(want == got)


def _filter_verdict(trace: Any) -> Any:
    if not trace.applies:
        return "skip"
    if trace.error is not None:
        return [f"policy error in rule {trace.rule}: {trace.error.message}"]
    return list(trace.reasons) if trace.reasons else "pass"


def _location(span: Any) -> str:
    return f"{span.file}:{span.line}:{span.col}"


def _register(cov: Coverage, policy_set: Any, under_test: set[str] | None) -> None:
    from policyscheduler.syntax import ast as syn

    for r in policy_set.rules:
        if under_test is not None and not ({str(Path(r.span.file).resolve()), Path(r.span.file).name} & under_test):
            continue
        key = f"{'filter' if r in policy_set.filters else 'score'} {r.name}"
        cov.rules.setdefault(key, _location(r.span))
        if r.checked is None:
            continue
        for c in r.checked.rule.clauses:
            if isinstance(c, syn.Reason):
                continue
            cov.clauses.setdefault(_location(c.span), f"{key}: {syn.CLAUSE_KEYWORDS[type(c)]}")


def run_case(case: Case, policy_set: Any, cov: Coverage | None = None, engine: str = "vector") -> CaseResult:
    """Evaluate one case and compare with its expectations."""
    from policyscheduler.compiler.program import trace_rule
    from policyscheduler.evaluation import make_evaluator
    from policyscheduler.state import ClusterSnapshot

    problems = validate(case, policy_set)
    if problems:
        return CaseResult(case, "error", error="; ".join(problems), digest=policy_set.digest)
    assert case.pod is not None
    snapshot = ClusterSnapshot.from_objects([o for o in case.objects if not (
        o.get("kind") == "Pod" and not (o.get("spec") or {}).get("nodeName"))])
    if snapshot.warnings:
        return CaseResult(case, "error", error="fields that cannot be read: " + "; ".join(snapshot.warnings),
                          digest=policy_set.digest)
    decision = make_evaluator(engine).evaluate(policy_set, snapshot, case.pod, rng=random.Random(0))
    want = case.data["want"]
    fails: list[Failure] = []

    def check(path: str, expected: Any, actual: Any, ok: bool | None = None) -> None:
        if not (expected == actual if ok is None else ok):
            fails.append(Failure(path, expected, actual))

    # traces: each filter on each node on its own (for `filters`, `line` and coverage)
    pod_rec = snapshot.pod_record(case.pod)
    traces: dict[tuple[str, str], Any] = {}
    for node in snapshot.nodes:
        env = {"pod": pod_rec, "node": node, "cluster": snapshot.context(pod_rec)}
        for rule in policy_set.filters:
            if rule.checked is not None:
                traces[(rule.name, node.name)] = trace_rule(rule, env)
    if cov is not None:
        pod_env = {"pod": pod_rec, "cluster": snapshot.context(pod_rec)}
        applies: dict[str, bool] = {}
        for srule in policy_set.scores:
            try:
                applies[srule.name] = bool(srule.applies(pod_env))
            except Exception:  # noqa: BLE001 -- a failing applies is the decision's score error, not ours
                applies[srule.name] = False
        _cover(cov, policy_set, decision, traces, applies)

    if "feasible" in want:
        check("feasible", sorted(want["feasible"]), sorted(decision.feasible))
    for node, exp in (want.get("rejected") or {}).items():
        v = decision.verdicts.get(node)
        got_rule = v.rule if v is not None else None
        check(f"rejected.{node}.rule", exp["rule"], got_rule)
        if "reasons" in exp:
            got_reasons: Any = sorted(v.reasons) if v is not None else []
            check(f"rejected.{node}.reasons", sorted(exp["reasons"]), got_reasons)
        if "line" in exp:
            tr = traces.get((exp["rule"], node))
            lines = [c.span.line for c in tr.rejecting] if tr is not None else []
            check(f"rejected.{node}.line", exp["line"], lines[0] if len(lines) == 1 else lines, exp["line"] in lines)
    for rule, per_node in (want.get("filters") or {}).items():
        for node, exp in per_node.items():
            tr = traces.get((rule, node))
            verdict: Any = _filter_verdict(tr) if tr is not None else None
            check(f"filters.{rule}.{node}", exp, verdict,
                  (sorted(exp) == sorted(verdict)) if isinstance(exp, list) and isinstance(verdict, list)
                  else exp == verdict)
    for key, attr in (("scores", "normalized"), ("raw", "raw"), ("weighted", "weighted")):
        for rule, per_node in (want.get(key) or {}).items():
            rule_scores = decision.scores.get(rule)
            for node, exp in per_node.items():
                score = rule_scores.get(node) if rule_scores is not None else None
                value: Any = getattr(score, attr) if score is not None else None
                check(f"{key}.{rule}.{node}", exp, value, _num_ok(exp, value))
    for node, exp in (want.get("totals") or {}).items():
        total: Any = decision.totals.get(node)
        check(f"totals.{node}", exp, total, _num_ok(exp, total))
    if "chosen" in want:
        c = want["chosen"]
        allowed = sorted(c) if isinstance(c, list) else [c]
        check("chosen", c, decision.node if len(decision.top) <= 1 else sorted(decision.top),
              decision.node in allowed and sorted(decision.top) == allowed)
    if "message" in want:
        check("message", want["message"], decision.message)
    errors = {n: v.error for n, v in decision.verdicts.items() if v.error}
    if errors and not any(f.path.startswith("rejected") for f in fails):
        expected_errors = any("policy error" in r for e in (want.get("rejected") or {}).values()
                              for r in e.get("reasons", []))
        if not expected_errors:
            fails.append(Failure("runtime errors", {}, errors))
    return CaseResult(case, "fail" if fails else "pass", fails, digest=policy_set.digest)


def _cover(cov: Coverage, policy_set: Any, decision: Any, traces: dict[tuple[str, str], Any],
           applies: dict[str, bool]) -> None:
    for (rule, _node), tr in traces.items():
        key = f"filter {rule}"
        if tr.rejecting:
            cov.rules_hit.add(key)
        for c in tr.clauses:
            if c.outcome in ("fail", "bound", "true", "value"):
                cov.clauses_hit.add(_location(c.span))
    feasible = set(decision.feasible)
    if not feasible:
        return
    for rule in policy_set.scores:
        per_node = decision.scores.get(rule.name) or {}
        if rule.checked is None:
            continue
        on = applies.get(rule.name, False)
        if any(not s.ignored for s in per_node.values()) and on:
            cov.rules_hit.add(f"score {rule.name}")
        for c in rule.checked.rule.clauses:
            name = type(c).__name__
            if (name == "Applies" and on) or (name == "IgnoreWhen" and any(s.ignored for s in per_node.values())) or (name in ("Let", "Value") and on and any(not s.ignored for s in per_node.values())):
                cov.clauses_hit.add(_location(c.span))


def run_tests(paths: Sequence[str | Path], *, extra_policies: Sequence[str | Path] = (), run: str | None = None,
              engine: str = "vector") -> tuple[TestRun | None, list[str]]:
    """Run every case under ``paths``. Returns the run (None when nothing could run) and input errors."""
    from policyscheduler.diagnostics import render_text
    from policyscheduler.loader import load_layered

    errors: list[str] = []
    try:
        suites, policy_files, missing = collect(paths)
    except TestInputError as exc:
        return None, [str(exc)]
    errors += [f"{m}: no such file or directory" for m in missing]
    if errors:
        return None, errors
    pattern = re.compile(run) if run else None
    cases = [c for s in suites for c in s.cases if pattern is None or pattern.search(c.id)]
    if not cases:
        return None, ["no test cases found" + (f" matching {run!r}" if run else "") + " under "
                      + " ".join(map(str, paths)) + " (a test file is a YAML mapping with 'cases:', or with "
                      "'pod:' and 'want:')"]
    base = [*map(str, policy_files), *map(str, extra_policies)]
    under_test = {str(Path(p).resolve()) for p in policy_files} | {Path(p).name for p in policy_files} or None
    sets: dict[tuple[str, ...], Any] = {}
    cov = Coverage()
    results: list[CaseResult] = []
    for case in cases:
        key = tuple(base) + case.policies
        if key not in sets:
            loaded = load_layered(list(key))
            if loaded.policy_set is None:
                return None, [render_text(loaded.errors, loaded.sources)]
            sets[key] = loaded.policy_set
            scope = under_test
            if under_test is not None and case.policies:
                scope = under_test | {str(p.resolve()) for p in _expand(case.policies)}
            _register(cov, loaded.policy_set, scope)
        results.append(run_case(case, sets[key], cov, engine))
    return TestRun(results, cov, sorted({ps.digest for ps in sets.values()})), []


def _expand(paths: Sequence[str]) -> list[Path]:
    out: list[Path] = []
    for p in map(Path, paths):
        out.extend(sorted(p.rglob("*.policy")) if p.is_dir() else [p])
    return out
