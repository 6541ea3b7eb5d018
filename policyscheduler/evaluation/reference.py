"""The reference evaluator: filters then scores, node by node, in plain Python.

This is the executable statement of the semantics (common contract §3, grammar/LANGUAGE.md); a faster
implementation must return an equal :class:`Decision`. The steps, for one pod:

1. Every rule's ``applies when`` clause is evaluated **once per pod** (kube-scheduler's PreFilter /
   PreScore *Skip*), with an env holding only ``pod`` and ``cluster``. A filter's ``reject pod``
   clauses (``FilterRule.pod_rejection``) are decided then too; if one holds, the pod is rejected
   before any node is looked at (PreFilter rejection): every node gets that verdict and the message
   is ``0/N nodes are available: <reason>.`` without per-node counts.
2. Filters run per node in PolicySet order; the first rule that emits reasons is the node's verdict.
   A filter that does not apply passes every node.
3. The per-pod ``cluster`` context is told the feasible nodes (``cluster.set_feasible``, kube's
   PreScore ``filteredNodes``: PodTopologySpread counts domains among them). Score rules run on them:
   a rule that does not apply gives 0 everywhere; a node for which ``ignore node when`` holds gets 0
   and is left out of that rule's normalisation. Raw values are
   checked against the rule's mode (:func:`normalize.raw_error`), then normalised, multiplied by the
   weight and summed. The best total wins; ties are broken with ``rng.choice(top)``.

Runtime errors (:class:`PolicyRuntimeError`, and raw scores a mode cannot take) never crash: the node
gets an error verdict naming the rule, becomes infeasible, and its histogram reason reads
``policy error in rule <rule>: <message>``. A failing ``applies when`` fails every node that reaches the
rule. Score errors are all collected before normalising, so normalisation only ever sees the nodes that
stay feasible and every normalised score lies in 0..100.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from policyscheduler.diagnostics import PolicyRuntimeError
from policyscheduler.evaluation.decision import FEASIBLE, Decision, NodeVerdict, RuleScore
from policyscheduler.evaluation.message import failed_scheduling_message, pod_rejected_message
from policyscheduler.evaluation.normalize import normalize, raw_error

if TYPE_CHECKING:
    from policyscheduler.compiler import FilterRule, PolicySet, ScoreRule
    from policyscheduler.objects import ClusterSnapshot

__all__ = ["ReferenceEvaluator", "evaluate", "pod_key", "error_verdict"]


def pod_key(pod: dict[str, Any]) -> str:
    """``namespace/name`` of a pod object (namespace defaults to ``default``), robust to malformed metadata."""
    meta = pod.get("metadata") if isinstance(pod, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    namespace, name = meta.get("namespace"), meta.get("name")
    return f"{namespace if isinstance(namespace, str) and namespace else 'default'}/{name if isinstance(name, str) else ''}"


def _location(err: PolicyRuntimeError) -> str:
    span = getattr(err, "span", None)
    message = str(getattr(err, "message", err))
    if span is None:
        return message
    return f"{span.file}:{span.line}:{span.col}: {message}"


def error_verdict(rule: str, message: str, detail: str | None = None) -> NodeVerdict:
    """The verdict of a node on which ``rule`` failed at run time."""
    return NodeVerdict(
        rule=rule,
        reasons=(f"policy error in rule {rule}: {message}",),
        error=detail if detail is not None else message,
    )


def _runtime_verdict(rule: str, err: PolicyRuntimeError) -> NodeVerdict:
    return error_verdict(rule, str(getattr(err, "message", err)), _location(err))


_NOT_APPLIED = RuleScore(0, 0, 0, False)
"""A score rule's result on every node when its ``applies when`` is false (shared: immutable)."""
_IGNORED = RuleScore(0, 0, 0, True)
"""A score rule's result on a node its ``ignore node when`` clause excludes."""

_Filters = list[tuple["FilterRule", NodeVerdict | None]]
"""The filters that apply to the pod, each with the verdict of every node reaching it when its
per-pod part (``applies when`` / ``reject pod``) failed at run time, else None."""


class ReferenceEvaluator:
    """Per-node evaluation; see the module docstring for the exact semantics."""

    def evaluate(
        self, policy_set: PolicySet, snapshot: ClusterSnapshot, pod: dict[str, Any], *, rng: random.Random
    ) -> Decision:
        """Filter and score every node of ``snapshot`` for ``pod``."""
        key = pod_key(pod)
        digest = policy_set.digest
        nodes = list(snapshot.nodes)
        if not nodes:
            return Decision(key, None, {}, [], {}, {}, [], None, failed_scheduling_message(0, ()), digest)
        pod_rec = snapshot.pod_record(pod)
        cluster = snapshot.context(pod_rec)
        pod_env = {"pod": pod_rec, "cluster": cluster}
        names = [n.name for n in nodes]

        # 1. filters: applies (and pod-level checks) once per pod, all before any node, like PreFilter.
        filters, rejection = _pre_filter(policy_set.filters, pod_env)
        if rejection is not None:
            message = pod_rejected_message(len(names), rejection.reasons)
            return Decision(key, None, dict.fromkeys(names, rejection), [], {}, {}, [], None, message, digest)
        # One env per node, shared by its filters and score rules (each rule copies it into a private frame).
        envs = [{"pod": pod_rec, "node": node, "cluster": cluster} for node in nodes]
        verdicts = {name: _filter_node(filters, env) for name, env in zip(names, envs)}
        feasible_idx = [i for i, name in enumerate(names) if verdicts[name].feasible]
        if not feasible_idx:
            return _unschedulable(key, names, verdicts, digest)
        cluster.set_feasible([names[i] for i in feasible_idx])  # kube's PreScore sees the filtered nodes

        # 2. raw scores on the feasible nodes, rule by rule; errors make nodes infeasible before normalising.
        candidates = [(i, names[i], envs[i]) for i in feasible_idx]
        raws = [(rule, _raw_scores(rule, pod_env, candidates, verdicts)) for rule in policy_set.scores]
        kept = [i for i in feasible_idx if verdicts[names[i]].feasible]
        if not kept:
            return _unschedulable(key, names, verdicts, digest)

        # 3. normalise over the feasible, non-ignored nodes; weight; sum; pick among the best.
        feasible = [names[i] for i in kept]
        scores, totals = _weighted(raws, kept, names)
        best = max(totals.values())
        top = [name for name in feasible if totals[name] == best]
        chosen = rng.choice(top)
        return Decision(key, chosen, verdicts, feasible, scores, totals, top, best, None, digest)


def _pre_filter(rules: Sequence[FilterRule], pod_env: dict[str, Any]) -> tuple[_Filters, NodeVerdict | None]:
    """The filters that apply to the pod, and the verdict of a ``reject pod`` clause that holds (or None)."""
    filters: _Filters = []
    for rule in rules:
        try:
            if not rule.applies(pod_env):
                continue
            rejection = rule.pod_rejection(pod_env)
        except PolicyRuntimeError as err:
            filters.append((rule, _runtime_verdict(rule.name, err)))
            continue
        if rejection is not None:
            return filters, NodeVerdict(rule=rule.name, reasons=(rejection,))
        filters.append((rule, None))
    return filters, None


def _filter_node(filters: _Filters, env: dict[str, Any]) -> NodeVerdict:
    """The verdict of the first filter that rejects the node (or fails on it), else FEASIBLE."""
    for rule, failed in filters:
        if failed is not None:
            return failed
        try:
            reasons = rule.reasons(env)
        except PolicyRuntimeError as err:
            return _runtime_verdict(rule.name, err)
        if reasons:
            return NodeVerdict(rule=rule.name, reasons=tuple(reasons))
    return FEASIBLE


def _raw_scores(
    rule: ScoreRule,
    pod_env: dict[str, Any],
    candidates: list[tuple[int, str, dict[str, Any]]],
    verdicts: dict[str, NodeVerdict],
) -> dict[int, int | None] | None:
    """Node index -> raw value (None: ignored) of ``rule`` on the candidates (index, name, env) still
    feasible; None when the rule does not apply to the pod. Errors go to ``verdicts``; a failing
    ``applies when`` fails every candidate still feasible."""
    try:
        applies = rule.applies(pod_env)
    except PolicyRuntimeError as err:
        failed = _runtime_verdict(rule.name, err)
        for _, name, _ in candidates:
            if verdicts[name].feasible:
                verdicts[name] = failed
        return None
    if not applies:
        return None
    values: dict[int, int | None] = {}
    for i, name, env in candidates:
        if verdicts[name].feasible:  # else it already failed on an earlier score rule
            values[i] = _raw(rule, env, name, verdicts)
    return values


def _raw(rule: ScoreRule, env: dict[str, Any], name: str, verdicts: dict[str, NodeVerdict]) -> int | None:
    """The raw value of ``rule`` on one node; None when ignored; records errors in ``verdicts``."""
    try:
        if rule.ignored(env):
            return None
        raw = rule.raw(env)
    except PolicyRuntimeError as err:
        verdicts[name] = _runtime_verdict(rule.name, err)
        return None
    if isinstance(raw, bool) or not isinstance(raw, int):
        verdicts[name] = error_verdict(rule.name, f"score {raw!r} is not an integer")
        return None
    problem = raw_error(rule.normalize, raw)
    if problem is not None:
        verdicts[name] = error_verdict(rule.name, problem)
        return None
    return raw


def _weighted(
    raws: list[tuple[ScoreRule, dict[int, int | None] | None]], kept: list[int], names: list[str]
) -> tuple[dict[str, dict[str, RuleScore]], dict[str, int]]:
    """Per rule and kept node the :class:`RuleScore`, and per kept node the total.

    Every kept node was feasible while each applying rule ran, so it has an entry in that rule's values.
    """
    scores: dict[str, dict[str, RuleScore]] = {}
    totals = {names[i]: 0 for i in kept}
    for rule, values in raws:
        if values is None:
            scores[rule.name] = {names[i]: _NOT_APPLIED for i in kept}
            continue
        scored = [(i, raw) for i in kept if (raw := values[i]) is not None]
        normalized = normalize(rule.normalize, [raw for _, raw in scored])
        per_node = {names[i]: _IGNORED for i in kept}  # overwritten below for the scored nodes
        for (i, raw), norm in zip(scored, normalized):
            per_node[names[i]] = RuleScore(raw, norm, norm * rule.weight, False)
            totals[names[i]] += norm * rule.weight
        scores[rule.name] = per_node
    return scores, totals


def _unschedulable(key: str, names: list[str], verdicts: dict[str, NodeVerdict], digest: str) -> Decision:
    """The decision for a pod no node accepts, with kube-scheduler's FailedScheduling text."""
    reasons = [r for name in names for r in verdicts[name].reasons]
    message = failed_scheduling_message(len(names), reasons)
    return Decision(key, None, verdicts, [], {}, {}, [], None, message, digest)


_REFERENCE = ReferenceEvaluator()


def evaluate(policy_set: PolicySet, snapshot: ClusterSnapshot, pod: dict[str, Any], *, rng: random.Random) -> Decision:
    """Decide where ``pod`` goes with the reference evaluator (see :class:`ReferenceEvaluator`)."""
    return _REFERENCE.evaluate(policy_set, snapshot, pod, rng=rng)
