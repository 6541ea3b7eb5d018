"""Compiled rules and the immutable PolicySet the evaluator runs.

``FilterRule.reasons`` and ``ScoreRule.raw`` execute the rule's clauses in order over a private frame
(so lets and loop variables never leak into the caller's env). Any failure becomes a
:class:`PolicyRuntimeError` naming the rule and the span of the failing expression.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from policyscheduler.checker.env import Schema
from policyscheduler.checker.passes import CheckedRule
from policyscheduler.checker.types import STRING
from policyscheduler.compiler.closures import ExprCompiler, Fn, Located
from policyscheduler.diagnostics import PolicyRuntimeError, Span
from policyscheduler.syntax import ast

Env = Mapping[str, Any]
_Step = Callable[[dict[str, Any], list[str]], bool]  # returns False to stop the rule


def _run(rule: str, span: Span, body: Callable[[], Any]) -> Any:
    try:
        return body()
    except PolicyRuntimeError:
        raise
    except Located as exc:
        raise PolicyRuntimeError(rule, exc.span, exc.message) from None
    except Exception as exc:  # noqa: BLE001 -- anything the object model raised: an error verdict, not a crash
        raise PolicyRuntimeError(rule, span, f"{type(exc).__name__}: {exc}") from None


def _always(value: bool) -> Callable[[Env], bool]:
    return lambda env: value


@dataclasses.dataclass(frozen=True)
class FilterRule:
    """A compiled filter. ``reasons(env)`` is [] when the node passes."""

    name: str
    doc: str
    span: Span
    reason: str | None
    cost: int = 0
    _applies: Callable[[Env], bool] = dataclasses.field(default=_always(True), repr=False, compare=False)
    _steps: tuple[_Step, ...] = dataclasses.field(default=(), repr=False, compare=False)
    _pod_rejects: tuple[tuple[Fn, Fn], ...] = dataclasses.field(default=(), repr=False, compare=False)

    @property
    def file(self) -> str:
        return self.span.file

    def applies(self, env: Env) -> bool:
        """The ``applies when`` clause (True if absent); env holds pod and cluster."""
        return bool(_run(self.name, self.span, lambda: self._applies(env)))

    def pod_rejection(self, env: Env) -> str | None:
        """The reason of the first ``reject pod`` clause that holds, else None; env holds pod and cluster.

        A pod-level rejection is kube-scheduler's PreFilter failure: the pod fails on every node with
        this one message, and the FailedScheduling text carries it without per-node counts.
        """
        frame = dict(env)

        def body() -> str | None:
            for reason, when in self._pod_rejects:
                if when(frame):
                    return str(reason(frame))
            return None

        return _run(self.name, self.span, body)  # type: ignore[no-any-return]

    def reasons(self, env: Env) -> list[str]:
        """The reasons this node fails the rule; env = {"pod", "node", "cluster"}."""
        frame = dict(env)
        out: list[str] = []

        def body() -> None:
            for step in self._steps:
                if not step(frame, out):
                    break

        _run(self.name, self.span, body)
        return out


@dataclasses.dataclass(frozen=True)
class ScoreRule:
    """A compiled score rule: ``raw(env)`` is the un-normalised int score of one node."""

    name: str
    doc: str
    span: Span
    weight: int
    normalize: str
    cost: int = 0
    _applies: Callable[[Env], bool] = dataclasses.field(default=_always(True), repr=False, compare=False)
    _ignored: Callable[[dict[str, Any]], bool] | None = dataclasses.field(default=None, repr=False, compare=False)
    _raw: Callable[[dict[str, Any]], int] = dataclasses.field(default=lambda f: 0, repr=False, compare=False)

    @property
    def file(self) -> str:
        return self.span.file

    def applies(self, env: Env) -> bool:
        """The ``applies when`` clause (True if absent)."""
        return bool(_run(self.name, self.span, lambda: self._applies(env)))

    def ignored(self, env: Env) -> bool:
        """The ``ignore node when`` clause (False if absent)."""
        check = self._ignored
        if check is None:
            return False
        return bool(_run(self.name, self.span, lambda: check(dict(env))))

    def raw(self, env: Env) -> int:
        """The ``value`` clause, after the lets."""
        return int(_run(self.name, self.span, lambda: self._raw(dict(env))))


@dataclasses.dataclass(frozen=True)
class PolicySet:
    """The immutable result of loading: filters and scores in evaluation order, and a content digest."""

    filters: tuple[FilterRule, ...]
    scores: tuple[ScoreRule, ...]
    digest: str

    @property
    def rules(self) -> tuple[FilterRule | ScoreRule, ...]:
        return (*self.filters, *self.scores)


def digest_of(files: Sequence[tuple[str, str]]) -> str:
    """sha256 hex over the sorted (file name, text) pairs (each name and text followed by a NUL byte)."""
    h = hashlib.sha256()
    for name, text in sorted(files):
        h.update(name.encode("utf-8", "surrogatepass") + b"\0")
        h.update(text.encode("utf-8", "surrogatepass") + b"\0")
    return h.hexdigest()


def _let_step(name: str, fn: Fn) -> _Step:
    def step(frame: dict[str, Any], out: list[str]) -> bool:
        frame[name] = fn(frame)
        return True

    return step


def _lets_then(lets: list[tuple[str, Fn]], final: Fn) -> Callable[[dict[str, Any]], Any]:
    def run(frame: dict[str, Any]) -> Any:
        for name, fn in lets:
            frame[name] = fn(frame)
        return final(frame)

    return run


def _applies(cond: Fn) -> Callable[[Env], bool]:
    return lambda env: bool(cond(dict(env)))


def _constant(value: str) -> Fn:
    return lambda frame: value


def compile_rule(checked: CheckedRule, schema: Schema) -> FilterRule | ScoreRule:
    """Turn one checked rule into its compiled form."""
    r = checked.rule
    ec = ExprCompiler(schema, checked.info)
    applies: Callable[[Env], bool] = _always(True)
    for c in r.clauses:
        if isinstance(c, ast.Applies):
            applies = _applies(ec.compile(c.cond))
    if isinstance(r, ast.FilterRule):
        pod_rejects = tuple((ec.compile(c.reason), ec.compile(c.when))
                            for c in r.clauses if isinstance(c, ast.RejectPod))
        return FilterRule(r.name, r.doc, r.name_span, checked.reason, checked.cost, applies,
                          tuple(_filter_steps(r, ec, checked.reason)), pod_rejects)
    lets: list[tuple[str, Fn]] = []
    ignored = None
    raw: Callable[[dict[str, Any]], int] = lambda f: 0
    for c in r.clauses:
        if isinstance(c, ast.Let):
            lets.append((c.name, ec.compile(c.value)))
        elif isinstance(c, ast.IgnoreWhen):
            ignored = _lets_then(list(lets), ec.compile(c.cond))
        elif isinstance(c, ast.Value):
            raw = _lets_then(list(lets), ec.compile(c.value))
    return ScoreRule(r.name, r.doc, r.name_span, checked.weight, checked.normalize, checked.cost, applies,
                     ignored, raw)


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
                why = _constant(default_reason or "")

            def require(frame: dict[str, Any], out: list[str], cond: Fn = cond, why: Fn = why) -> bool:
                if cond(frame):
                    return True
                out.append(why(frame))
                return False

            steps.append(require)
        elif isinstance(c, ast.Reject):
            reason, when = ec.compile(c.reason), ec.compile(c.when)

            def reject(frame: dict[str, Any], out: list[str], reason: Fn = reason, when: Fn = when) -> bool:
                if when(frame):
                    out.append(reason(frame))
                return True

            steps.append(reject)
        elif isinstance(c, ast.RejectEach):
            many = ec.compile(c.reasons)

            def reject_each(frame: dict[str, Any], out: list[str], many: Fn = many) -> bool:
                out.extend(many(frame))
                return True

            steps.append(reject_each)
    return steps
