"""Compiled rules and the immutable PolicySet the evaluator runs.

``FilterRule.reasons`` and ``ScoreRule.raw`` execute the rule's clauses in order over a private frame
(so lets and loop variables never leak into the caller's env). Any failure becomes a
:class:`PolicyRuntimeError` naming the rule and the span of the failing expression.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from policyscheduler.checker.analysis import RuleAnalysis, analyse
from policyscheduler.checker.passes import CheckedRule
from policyscheduler.checker.types import STRING
from policyscheduler.compiler.closures import BUDGET, STEP_BUDGET, ExprCompiler, Fn, Located, reset_budget
from policyscheduler.diagnostics import PolicyRuntimeError, Span
from policyscheduler.syntax import ast

Env = Mapping[str, Any]
Frame = dict[str, Any]
_Step = Callable[[Frame, list[str]], bool]  # returns False to stop the rule


def _run(rule: str, span: Span, fn: Callable[[Frame], Any], env: Env) -> Any:
    """``fn`` over a private copy of ``env`` (lets and loop variables are written into the frame, and must
    not leak into the caller's env); any failure becomes a PolicyRuntimeError of ``rule``."""
    budget = BUDGET
    left = budget.left  # a fresh budget for every evaluation (see closures.STEP_BUDGET) ...
    allowance = budget.allowance  # ... within what the rule has left for this pod, if it is being decided
    start = STEP_BUDGET if allowance is None or allowance >= STEP_BUDGET else max(allowance, 0)
    reset_budget(start)
    try:
        return fn(dict(env))
    except PolicyRuntimeError:
        raise
    except Located as exc:
        message = exc.message
        if start < STEP_BUDGET and left[0] < 0 and message.startswith("budget:"):
            message = (f"budget: evaluation stopped at {exc.span} after the rule took {budget.granted:,} steps "
                       "(loop items, list items built and compared) over this pod's nodes: far more than its "
                       "static cost bound (lists longer than the schema assumes?)")
        raise PolicyRuntimeError(rule, exc.span, message) from None
    except Exception as exc:  # noqa: BLE001 -- anything the object model raised: an error verdict, not a crash
        raise PolicyRuntimeError(rule, span, f"{type(exc).__name__}: {exc}") from None
    finally:
        if allowance is not None:
            budget.allowance = allowance - (start - max(left[0], 0))


def _always(value: Any) -> Fn:
    return lambda frame: value


@dataclasses.dataclass(frozen=True)
class FilterRule:
    """A compiled filter. ``reasons(env)`` is [] when the node passes."""

    name: str
    doc: str
    span: Span
    reason: str | None
    cost: int = 0
    checked: CheckedRule | None = dataclasses.field(default=None, repr=False, compare=False)
    """The checked rule (AST + types) this was compiled from: what other backends lower and analyses read."""
    _applies: Fn = dataclasses.field(default=_always(True), repr=False, compare=False)
    _check: Callable[[Frame], list[str]] = dataclasses.field(default=lambda frame: [], repr=False, compare=False)
    _pod_rejection: Fn = dataclasses.field(default=_always(None), repr=False, compare=False)

    @property
    def file(self) -> str:
        return self.span.file

    def applies(self, env: Env) -> bool:
        """The ``applies when`` clause (True if absent); env holds pod and cluster."""
        return bool(_run(self.name, self.span, self._applies, env))

    def pod_rejection(self, env: Env) -> str | None:
        """The reason of the first ``reject pod`` clause that holds, else None; env holds pod and cluster.

        A pod-level rejection is kube-scheduler's PreFilter failure: the pod fails on every node with
        this one message, and the FailedScheduling text carries it without per-node counts.
        """
        return _run(self.name, self.span, self._pod_rejection, env)  # type: ignore[no-any-return]

    def reasons(self, env: Env) -> list[str]:
        """The reasons this node fails the rule; env = {"pod", "node", "cluster"}."""
        return _run(self.name, self.span, self._check, env)  # type: ignore[no-any-return]


@dataclasses.dataclass(frozen=True)
class ScoreRule:
    """A compiled score rule: ``raw(env)`` is the un-normalised int score of one node."""

    name: str
    doc: str
    span: Span
    weight: int
    normalize: str
    cost: int = 0
    checked: CheckedRule | None = dataclasses.field(default=None, repr=False, compare=False)
    """The checked rule (AST + types) this was compiled from: what other backends lower and analyses read."""
    _applies: Fn = dataclasses.field(default=_always(True), repr=False, compare=False)
    _ignored: Fn | None = dataclasses.field(default=None, repr=False, compare=False)
    _raw: Fn = dataclasses.field(default=_always(0), repr=False, compare=False)

    @property
    def file(self) -> str:
        return self.span.file

    def applies(self, env: Env) -> bool:
        """The ``applies when`` clause (True if absent)."""
        return bool(_run(self.name, self.span, self._applies, env))

    def ignored(self, env: Env) -> bool:
        """The ``ignore node when`` clause (False if absent)."""
        if self._ignored is None:
            return False
        return bool(_run(self.name, self.span, self._ignored, env))

    def raw(self, env: Env) -> int:
        """The ``value`` clause, after the lets: a 64-bit integer (else a located ``overflow`` error)."""
        value = int(_run(self.name, self.span, self._raw, env))
        if -(2**63) <= value < 2**63:
            return value
        raise PolicyRuntimeError(self.name, self._value_span, "overflow: the score is outside the 64-bit integer "
                                 "range")

    @property
    def _value_span(self) -> Span:
        if self.checked is not None:
            for c in self.checked.rule.clauses:
                if isinstance(c, ast.Value):
                    return c.value.span
        return self.span


@dataclasses.dataclass(frozen=True)
class PreemptRule:
    """A compiled preempt rule: ``applies(env)`` once per preemptor (env: pod, cluster), then
    ``allows(env)`` per candidate victim (env: pod = the preemptor, target = the victim, node, cluster).

    Evaluated by these closures only (both evaluation backends share them): a victim clause runs per
    (preemptor, victim) pair during preemption, never per node of a scheduling cycle."""

    name: str
    doc: str
    span: Span
    reason: str
    cost: int = 0
    checked: CheckedRule | None = dataclasses.field(default=None, repr=False, compare=False)
    _applies: Fn = dataclasses.field(default=_always(True), repr=False, compare=False)
    _victim: Fn = dataclasses.field(default=_always(True), repr=False, compare=False)

    @property
    def file(self) -> str:
        return self.span.file

    def applies(self, env: Env) -> bool:
        """The ``applies when`` clause (True if absent): is the rule about this preemptor?"""
        return bool(_run(self.name, self.span, self._applies, env))

    def allows(self, env: Env) -> bool:
        """The ``victim`` clause, after the lets: may ``target`` be evicted for ``pod``?"""
        return bool(_run(self.name, self.span, self._victim, env))


@dataclasses.dataclass(frozen=True)
class PolicySet:
    """The immutable result of loading: filters and scores in evaluation order, and a content digest.
    ``preempts``: the preempt rules, which only preemption reads (``rules`` and the backends do not)."""

    filters: tuple[FilterRule, ...]
    scores: tuple[ScoreRule, ...]
    digest: str
    preempts: tuple[PreemptRule, ...] = ()

    @property
    def rules(self) -> tuple[FilterRule | ScoreRule, ...]:
        return (*self.filters, *self.scores)

    @property
    def every_rule(self) -> tuple[FilterRule | ScoreRule | PreemptRule, ...]:
        """Filters, scores and preempt rules: what the tools (lint, explain, docs) list."""
        return (*self.filters, *self.scores, *self.preempts)

    @functools.cached_property
    def analyses(self) -> dict[str, RuleAnalysis]:
        """Per rule (``"filter NAME"`` / ``"score NAME"``): node dependence and the schema members it reads."""
        return {f"{'filter' if isinstance(r, FilterRule) else 'score'} {r.name}": analyse(r.checked)
                for r in self.rules if r.checked is not None}

    @functools.cached_property
    def reads(self) -> frozenset[str]:
        """Every schema member some rule reads (``"Node.labels"``, ``"Pod.tolerates()"`` ...): what an
        event must be able to change for a pod's verdict to change."""
        return frozenset().union(*(a.reads for a in self.analyses.values()))


def digest_of(files: Sequence[tuple[str, str]], *, ordered: bool = False) -> str:
    """sha256 hex over the (file name, text) pairs (each name and text followed by a NUL byte), sorted
    unless ``ordered`` (a layered set: its file order is its filter order, so it is part of its identity;
    for files already in name order both give the same digest)."""
    h = hashlib.sha256()
    for name, text in (files if ordered else sorted(files)):
        h.update(name.encode("utf-8", "surrogatepass") + b"\0")
        h.update(text.encode("utf-8", "surrogatepass") + b"\0")
    return h.hexdigest()


def _let_step(name: str, fn: Fn) -> _Step:
    def step(frame: Frame, out: list[str]) -> bool:
        frame[name] = fn(frame)
        return True

    return step


def _lets_then(lets: list[tuple[str, Fn]], final: Fn) -> Fn:
    def run(frame: Frame) -> Any:
        for name, fn in lets:
            frame[name] = fn(frame)
        return final(frame)

    return run


def compile_rule(checked: CheckedRule) -> FilterRule | ScoreRule | PreemptRule:
    """Turn one checked rule into its compiled form."""
    r = checked.rule
    ec = ExprCompiler(checked.info)
    applies = _always(True)
    for c in r.clauses:
        if isinstance(c, ast.Applies):
            applies = ec.compile(c.cond)
    if isinstance(r, ast.FilterRule):
        pod_rejects = [(ec.compile(c.reason), ec.compile(c.when)) for c in r.clauses if isinstance(c, ast.RejectPod)]
        return FilterRule(r.name, r.doc, r.name_span, checked.reason, checked.cost, checked, applies,
                          _filter_check(_filter_steps(r, ec, checked.reason)), _pod_rejection(pod_rejects))
    lets: list[tuple[str, Fn]] = []
    if isinstance(r, ast.PreemptRule):
        victim = _always(True)
        for c in r.clauses:
            if isinstance(c, ast.Let):
                lets.append((c.name, ec.compile(c.value)))
            elif isinstance(c, ast.VictimWhen):
                victim = _lets_then(list(lets), ec.compile(c.cond))
        reason = checked.reason or f"protected by preempt rule '{r.name}'"
        return PreemptRule(r.name, r.doc, r.name_span, reason, checked.cost, checked, applies, victim)
    ignored = None
    raw = _always(0)
    for c in r.clauses:
        if isinstance(c, ast.Let):
            lets.append((c.name, ec.compile(c.value)))
        elif isinstance(c, ast.IgnoreWhen):
            ignored = _lets_then(list(lets), ec.compile(c.cond))
        elif isinstance(c, ast.Value):
            raw = _lets_then(list(lets), ec.compile(c.value))
    return ScoreRule(r.name, r.doc, r.name_span, checked.weight, checked.normalize, checked.cost, checked, applies,
                     ignored, raw)


def _pod_rejection(clauses: list[tuple[Fn, Fn]]) -> Fn:
    """The first ``reject pod`` reason whose condition holds, else None."""
    if not clauses:
        return _always(None)

    def first_rejection(frame: Frame) -> str | None:
        for reason, when in clauses:
            if when(frame):
                return str(reason(frame))
        return None

    return first_rejection


def _filter_check(steps: list[_Step]) -> Callable[[Frame], list[str]]:
    """Run the node-level clauses in order until one stops the rule; the reasons they emitted."""

    def check(frame: Frame) -> list[str]:
        out: list[str] = []
        for step in steps:
            if not step(frame, out):
                break
        return out

    return check


def _filter_steps(r: ast.FilterRule, ec: ExprCompiler, default_reason: str | None) -> list[_Step]:
    steps: list[_Step] = []
    for c in r.clauses:
        if isinstance(c, ast.Let):
            steps.append(_let_step(c.name, ec.compile(c.value)))
        elif isinstance(c, ast.Require):
            cond = ec.compile(c.cond)
            if c.else_ is not None:
                why = ec.as_type(c.else_, STRING)
            else:
                why = _always(default_reason or "")

            def require(frame: Frame, out: list[str], cond: Fn = cond, why: Fn = why) -> bool:
                if cond(frame):
                    return True
                out.append(why(frame))
                return False

            steps.append(require)
        elif isinstance(c, ast.Reject):
            reason, when = ec.compile(c.reason), ec.compile(c.when)

            def reject(frame: Frame, out: list[str], reason: Fn = reason, when: Fn = when) -> bool:
                if when(frame):
                    out.append(reason(frame))
                return True

            steps.append(reject)
        elif isinstance(c, ast.RejectEach):
            many = ec.compile(c.reasons)

            def reject_each(frame: Frame, out: list[str], many: Fn = many) -> bool:
                out.extend(many(frame))
                return True

            steps.append(reject_each)
    return steps


# ------------------------------------------------------------------------------------------- tracing
#
# Additive: ``explain`` and the policy test runner ask *which clause* decided a verdict. The closures
# above run a rule's clauses as one function; these entry points re-run them one clause at a time with
# the same reference closures (compiled from the same checked rule), recording each clause's outcome.
# They are never on the scheduling path.


@dataclasses.dataclass(frozen=True)
class ClauseTrace:
    """One clause of a rule as it ran on one node (or once per pod, for pod-level clauses).

    ``outcome``: ``"pass"`` (a check that held), ``"fail"`` (a check that emitted ``reasons``),
    ``"bound"`` (a ``let`` evaluated), ``"true"``/``"false"`` (``applies when``, ``ignore node when``),
    ``"value"`` (a score ``value``, in ``value``), ``"error"`` (the clause failed at run time).
    """

    keyword: str
    span: Span
    outcome: str
    reasons: tuple[str, ...] = ()
    value: Any = None


@dataclasses.dataclass(frozen=True)
class RuleTrace:
    """A rule run clause by clause: what ran, in order, and where it stopped."""

    rule: str
    kind: str
    clauses: tuple[ClauseTrace, ...]
    applies: bool
    reasons: tuple[str, ...] = ()
    """A filter's emitted reasons (empty: the node passes); for a pod-level rejection, its one reason."""
    error: PolicyRuntimeError | None = None
    pod_rejected: bool = False

    @property
    def rejecting(self) -> tuple[ClauseTrace, ...]:
        """The clauses that emitted a reason (a filter rejects the node iff this is not empty)."""
        return tuple(c for c in self.clauses if c.outcome == "fail")


def _clause_tracers(checked: CheckedRule) -> list[tuple[ast.Clause, str, tuple[Fn, ...]]]:
    ec = ExprCompiler(checked.info)
    out: list[tuple[ast.Clause, str, tuple[Fn, ...]]] = []
    for c in checked.rule.clauses:
        kw = ast.CLAUSE_KEYWORDS[type(c)]
        if isinstance(c, ast.Reason):
            continue
        if isinstance(c, (ast.Applies, ast.IgnoreWhen)):
            out.append((c, kw, (ec.compile(c.cond),)))
        elif isinstance(c, ast.Let):
            out.append((c, kw, (ec.compile(c.value),)))
        elif isinstance(c, ast.Require):
            why = ec.as_type(c.else_, STRING) if c.else_ is not None else _always(checked.reason or "")
            out.append((c, kw, (ec.compile(c.cond), why)))
        elif isinstance(c, (ast.Reject, ast.RejectPod)):
            out.append((c, kw, (ec.compile(c.when), ec.compile(c.reason))))
        elif isinstance(c, ast.RejectEach):
            out.append((c, kw, (ec.compile(c.reasons),)))
        elif isinstance(c, ast.Value):
            out.append((c, kw, (ec.compile(c.value),)))
    return out


_TRACERS: dict[int, tuple[CheckedRule, list[tuple[ast.Clause, str, tuple[Fn, ...]]]]] = {}


def _tracers(checked: CheckedRule) -> list[tuple[ast.Clause, str, tuple[Fn, ...]]]:
    hit = _TRACERS.get(id(checked))
    if hit is None or hit[0] is not checked:
        hit = _TRACERS[id(checked)] = (checked, _clause_tracers(checked))
    return hit[1]


def trace_rule(rule: FilterRule | ScoreRule, env: Env, *, pod_level_only: bool = False) -> RuleTrace:
    """Run ``rule`` clause by clause on ``env`` (``pod``, ``node``, ``cluster``) with the reference closures.

    A filter's trace ends at its first ``require`` that fails (as the rule does) and lists every clause
    that emitted a reason; ``pod_level_only`` stops after the pod-level clauses (``applies when``,
    ``reject pod``), for a pod with no node to look at. Runtime errors stop the trace with ``error`` set,
    on the clause that failed. Needs the checked rule (every rule the loader compiles has it).
    """
    if rule.checked is None:
        raise ValueError(f"rule {rule.name} has no checked form to trace")
    kind = "filter" if isinstance(rule, FilterRule) else "score"
    frame: Frame = dict(env)
    reset_budget()
    done: list[ClauseTrace] = []
    reasons: list[str] = []
    for clause, kw, fns in _tracers(rule.checked):
        node_level = not isinstance(clause, (ast.Applies, ast.RejectPod))
        if pod_level_only and node_level:
            break
        try:
            if isinstance(clause, (ast.Applies, ast.IgnoreWhen)):
                ok = bool(fns[0](frame))
                done.append(ClauseTrace(kw, clause.span, "true" if ok else "false"))
                if isinstance(clause, ast.Applies) and not ok:
                    return RuleTrace(rule.name, kind, tuple(done), False)
                if isinstance(clause, ast.IgnoreWhen) and ok:
                    return RuleTrace(rule.name, kind, tuple(done), True)
            elif isinstance(clause, ast.Let):
                assert isinstance(clause, ast.Let)
                frame[clause.name] = fns[0](frame)
                done.append(ClauseTrace(kw, clause.span, "bound", value=frame[clause.name]))
            elif isinstance(clause, ast.Require):
                if fns[0](frame):
                    done.append(ClauseTrace(kw, clause.span, "pass"))
                else:
                    why = str(fns[1](frame))
                    done.append(ClauseTrace(kw, clause.span, "fail", (why,)))
                    reasons.append(why)
                    break
            elif isinstance(clause, ast.RejectPod):
                if fns[0](frame):
                    why = str(fns[1](frame))
                    done.append(ClauseTrace(kw, clause.span, "fail", (why,)))
                    return RuleTrace(rule.name, kind, tuple(done), True, (why,), pod_rejected=True)
                done.append(ClauseTrace(kw, clause.span, "pass"))
            elif isinstance(clause, ast.Reject):
                if fns[0](frame):
                    why = str(fns[1](frame))
                    done.append(ClauseTrace(kw, clause.span, "fail", (why,)))
                    reasons.append(why)
                else:
                    done.append(ClauseTrace(kw, clause.span, "pass"))
            elif isinstance(clause, ast.RejectEach):
                many = tuple(str(s) for s in fns[0](frame))
                done.append(ClauseTrace(kw, clause.span, "fail" if many else "pass", many))
                reasons.extend(many)
            elif isinstance(clause, ast.Value):
                done.append(ClauseTrace(kw, clause.span, "value", value=fns[0](frame)))
        except Exception as failure:  # noqa: BLE001 -- reported like the rule reports it
            try:
                _run(rule.name, clause.span, functools.partial(_reraise, failure), frame)
            except PolicyRuntimeError as err:
                done.append(ClauseTrace(kw, clause.span, "error", (err.message,)))
                return RuleTrace(rule.name, kind, tuple(done), True, tuple(reasons), err)
    return RuleTrace(rule.name, kind, tuple(done), True, tuple(reasons))


def _reraise(exc: BaseException, frame: Frame) -> Any:
    raise exc
