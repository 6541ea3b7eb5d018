"""The policy test runner behind ``policyscheduler test [PATH...]``.

**Where tests are.** Every ``*.yaml`` / ``*.yml`` file under the PATHs whose top level is a mapping with
``cases:`` (a suite) or with ``pod:`` and ``want:`` (a single case, named after the file) is a test file;
other YAML files are left alone (they may be cluster snapshots a test refers to). The ``*.policy`` files
under the same PATHs are the policies under test, layered on the bundled defaults exactly as ``lint``,
``simulate`` and ``run`` layer them (:func:`policyscheduler.loader.load_layered`).

**Format**: the README's "Testing policies" section (with an example that CI runs); reading and the
shape checks are :mod:`policyscheduler.testing.casefile`, coverage :mod:`policyscheduler.testing.coverage`.
This module checks what needs the policy set (rule and node names) and runs the cases.

**Evaluation.** A case is one scheduling decision by the scheduler's own evaluator
(:func:`policyscheduler.evaluation.make_evaluator`, the vector engine unless told otherwise) on a snapshot
of the case's objects (pods with ``spec.nodeName`` are running; others are ignored). ``filters`` and
coverage re-run each filter clause by clause with the reference closures
(:func:`policyscheduler.compiler.program.trace_rule`).
"""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from policyscheduler.kobjects import is_bound
from policyscheduler.testing.casefile import Case, Suite, TestInputError, collect
from policyscheduler.testing.coverage import Coverage
from policyscheduler.times import DEFAULT_NOW, format_timestamp

__all__ = ["Case", "CaseResult", "Coverage", "Failure", "Suite", "TestInputError", "TestRun", "collect",
           "run_tests", "validate"]


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
    now: str | None = None
    """The decision time the case ran at (RFC 3339): rules read it as ``now``."""

    def to_json(self) -> dict[str, Any]:
        return {"file": self.case.file, "name": self.case.name, "status": self.status,
                "failures": [f.to_json() for f in self.failures], "error": self.error, "policy_digest": self.digest,
                "now": self.now}


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


# ---------------------------------------------------------------------------------------- validation


def _is_num(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _rule_hint(name: str, kind: str, policy_set: Any, defaults: frozenset[str]) -> str:
    other = {r.name for r in (policy_set.scores if kind == "filter" else policy_set.filters)}
    if name in other:
        return f" ({name!r} is a {'score rule' if kind == 'filter' else 'filter'} of the set)"
    if name in defaults:
        return f" (a bundled default rule, not in the set under test: disabled? assert that with want.absent: [{name}])"
    return ""


def validate(case: Case, policy_set: Any, defaults: frozenset[str] = frozenset()) -> list[str]:
    """What is wrong with a case's expectations given the policy set: names of rules and nodes that do not
    exist, each located (``file:line:col``). The shapes were checked when the file was read
    (:mod:`policyscheduler.testing.casefile`). ``defaults``: the rule names of the bundled default set, for
    ``absent`` (a name that is no rule anywhere is a typo, not an assertion) and for the hints."""
    from policyscheduler.inputs import Document
    from policyscheduler.testing.casefile import shape_problems

    want = case.data.get("want")
    doc = case.doc if case.doc is not None else Document(case.file, case.data, {})
    problems = shape_problems(doc, want, (*case.at, "want"))
    if problems:  # a case built in code, not read from a file: its shapes were never checked
        return problems
    assert isinstance(want, dict)
    nodes = {(o.get("metadata") or {}).get("name") for o in case.objects if o.get("kind") == "Node"}
    filters = {r.name for r in policy_set.filters}
    scores = {r.name for r in policy_set.scores}

    def bad(path: tuple[Any, ...], message: str) -> None:
        problems.append(f"{case.where('want', *path)}: {message}")

    def node_names(path: tuple[Any, ...], names: Any) -> None:
        for name in names:
            if name not in nodes:
                bad((*path, name) if isinstance(names, dict) else path,
                    f"want.{'.'.join(map(str, path))} names {name!r}, which is no node of the case "
                    f"(nodes: {', '.join(sorted(n for n in nodes if n)) or 'none'})")

    if "feasible" in want:
        node_names(("feasible",), want["feasible"])
    if "chosen" in want:
        node_names(("chosen",), want["chosen"] if isinstance(want["chosen"], list) else [want["chosen"]])
    if "totals" in want:
        node_names(("totals",), want["totals"])
    for node, exp in (want.get("rejected") or {}).items():
        node_names(("rejected",), {node: exp})
        if exp["rule"] not in filters:
            bad(("rejected", node, "rule"), f"want.rejected.{node}.rule: no filter {exp['rule']!r} in the set under "
                                            f"test{_rule_hint(exp['rule'], 'filter', policy_set, defaults)}")
    for rule, per_node in (want.get("filters") or {}).items():
        if rule not in filters:
            bad(("filters", rule), f"want.filters: no filter {rule!r} in the set under test"
                                   f"{_rule_hint(rule, 'filter', policy_set, defaults)}")
        node_names(("filters", rule), per_node)
    for key in ("scores", "raw", "weighted"):
        for rule, per_node in (want.get(key) or {}).items():
            if rule not in scores:
                bad((key, rule), f"want.{key}: no score rule {rule!r} in the set under test"
                                 f"{_rule_hint(rule, 'score', policy_set, defaults)}")
            node_names((key, rule), per_node)
    for i, name in enumerate(want.get("absent") or []):
        if name not in filters | scores | defaults:
            bad(("absent", i), f"want.absent: {name!r} is no rule of the bundled defaults nor of the set under test "
                               "(a typo would make this assertion pass forever)")
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

    preempts = getattr(policy_set, "preempts", ())
    for r in (*policy_set.rules, *preempts):
        if under_test is not None and not ({str(Path(r.span.file).resolve()), Path(r.span.file).name} & under_test):
            continue
        kind = "filter" if r in policy_set.filters else "score" if r in policy_set.scores else "preempt"
        key = f"{kind} {r.name}"
        cov.rules.setdefault(key, _location(r.span))
        if r.checked is None:
            continue
        for c in r.checked.rule.clauses:
            if isinstance(c, syn.Reason):
                continue
            cov.clauses.setdefault(_location(c.span), f"{key}: {syn.CLAUSE_KEYWORDS[type(c)]}")


Preempter = Callable[..., Any]
""":func:`policyscheduler.cycle.preemption.preempt`, passed in by the caller: the cycle is on this
package's floor (tests/test_layers.py), so the runner does not import it."""


def run_case(case: Case, policy_set: Any, cov: Coverage | None = None, engine: str = "vector",
             defaults: frozenset[str] = frozenset(), preempt: Preempter | None = None,
             now: int = DEFAULT_NOW) -> CaseResult:
    """Evaluate one case and compare with its expectations (``want.preemption`` and preempt-rule coverage
    need ``preempt``; without it a ``want.preemption`` is a failure saying so)."""
    from policyscheduler.compiler.program import trace_rule
    from policyscheduler.evaluation import make_evaluator
    from policyscheduler.state import ClusterSnapshot

    problems = validate(case, policy_set, defaults)
    if case.pod is None:
        problems.append(f"{case.where()}: the case has no pod")
    if problems or case.pod is None:
        return CaseResult(case, "error", error="; ".join(problems), digest=policy_set.digest)
    snapshot = ClusterSnapshot.from_objects([o for o in case.objects if not (o.get("kind") == "Pod" and not is_bound(o))])
    snapshot.now_ns = case.now if case.now is not None else now  # the case's or file's now:, else the run's
    snapshot.pod_record(case.pod)  # the pod's unreadable fields (a quantity 5Xi) are warnings like the nodes'
    if snapshot.warnings:
        return CaseResult(case, "error", error=f"{case.where()}: fields that cannot be read (the scheduler would "
                          "read them as absent): " + "; ".join(snapshot.warnings), digest=policy_set.digest)
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
    if "absent" in want:
        present = {r.name for r in policy_set.rules}
        check("absent", want["absent"], sorted(n for n in want["absent"] if n in present) or want["absent"],
              not any(n in present for n in want["absent"]))
    pre = None
    wanted = "preemption" in want or (cov is not None and bool(getattr(policy_set, "preempts", ())))
    if decision.node is None and wanted and preempt is not None:
        pre = preempt(make_evaluator(engine), policy_set, snapshot, case.pod, decision, (), random.Random(0))
        if cov is not None:
            _cover_preempt(cov, policy_set, pre)
    if "preemption" in want and preempt is None:
        check("preemption", want["preemption"], "not run: this runner was given no preemption", False)
    elif "preemption" in want:
        _check_preemption(want["preemption"], decision, pre, check)
    errors = {n: v.error for n, v in decision.verdicts.items() if v.error}
    if errors and not any(f.path.startswith("rejected") for f in fails):
        expected_errors = any("policy error" in r for e in (want.get("rejected") or {}).values()
                              for r in e.get("reasons", []))
        if not expected_errors:
            fails.append(Failure("runtime errors", {}, errors))
    return CaseResult(case, "fail" if fails else "pass", fails, digest=policy_set.digest)


def _check_preemption(exp: dict[str, Any], decision: Any, pre: Any, check: Any) -> None:
    """``want.preemption`` against the outcome of the scheduler's own preemption on the case's cluster."""
    if pre is None:
        check("preemption", exp, f"no preemption: the pod was placed on {decision.node}", False)
        return
    if "node" in exp:
        check("preemption.node", exp["node"], pre.node)
    if "victims" in exp:
        check("preemption.victims", sorted(exp["victims"]), sorted(v.key for v in pre.victims))
    if "protected" in exp:
        check("preemption.protected", sorted(exp["protected"]), sorted(p.pod for p in pre.protected))
    if "message" in exp:
        check("preemption.message", exp["message"],
              decision.message if pre.message is None else f"{decision.message} {pre.message}")


def _cover_preempt(cov: Coverage, policy_set: Any, pre: Any) -> None:
    """A preempt rule is covered when it protected a pod in some case (all its clauses ran then)."""
    by_name = {r.name: r for r in policy_set.preempts}
    for p in pre.protected:
        rule = by_name.get(p.rule)
        cov.rules_hit.add(f"preempt {p.rule}")
        if rule is not None and rule.checked is not None:
            cov.clauses_hit.update(_location(c.span) for c in rule.checked.rule.clauses)


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
              engine: str = "vector", preempt: Preempter | None = None,
              now: int = DEFAULT_NOW) -> tuple[TestRun | None, list[str]]:
    """Run every case under ``paths``. Returns the run (None when nothing could run) and input errors."""
    from policyscheduler.diagnostics import render_text
    from policyscheduler.loader import load_layered

    errors: list[str] = []
    try:
        suites, policy_files, missing = collect(paths)
    except TestInputError as exc:
        return None, exc.problems
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
    bundled = load_layered([]).policy_set
    defaults = frozenset(r.name for r in bundled.rules) if bundled is not None else frozenset()
    results: list[CaseResult] = []
    for case in cases:
        key = tuple(base) + case.policies
        if key not in sets:
            loaded = load_layered(list(key))
            if loaded.policy_set is None:
                return None, [render_text(loaded.errors, loaded.sources)]
            sets[key] = loaded.policy_set
            # the files under test: those under PATH and those the case's suite names (never the defaults,
            # unless nothing else is under test: then the bundled set itself is)
            scope = (under_test or set()) | {str(p.resolve()) for p in _expand(case.policies)} or None
            _register(cov, loaded.policy_set, scope)
        result = run_case(case, sets[key], cov, engine, defaults, preempt, now)
        result.now = format_timestamp(case.now if case.now is not None else now)
        results.append(result)
    return TestRun(results, cov, sorted({ps.digest for ps in sets.values()})), []


def _expand(paths: Sequence[str]) -> list[Path]:
    out: list[Path] = []
    for p in map(Path, paths):
        out.extend(sorted(p.rglob("*.policy")) if p.is_dir() else [p])
    return out
