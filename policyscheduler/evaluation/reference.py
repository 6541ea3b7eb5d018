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
from typing import Any

from policyscheduler.diagnostics import PolicyRuntimeError
from policyscheduler.evaluation.decision import FEASIBLE, Decision, NodeVerdict, RuleScore
from policyscheduler.evaluation.message import failed_scheduling_message, pod_rejected_message
from policyscheduler.evaluation.normalize import normalize, raw_error

__all__ = ["ReferenceEvaluator", "evaluate", "pod_key", "error_verdict"]


def pod_key(pod: dict[str, Any]) -> str:
    """``namespace/name`` of a pod object (namespace defaults to ``default``)."""
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"


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


class ReferenceEvaluator:
    """Per-node evaluation; see the module docstring for the exact semantics."""

    def evaluate(self, policy_set: Any, snapshot: Any, pod: dict[str, Any], *, rng: random.Random) -> Decision:
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
        filters: list[tuple[Any, NodeVerdict | None]] = []
        for rule in policy_set.filters:
            try:
                if not rule.applies(pod_env):
                    continue
                rejection = rule.pod_rejection(pod_env)
                rejected = [rejection] if rejection is not None else []
            except PolicyRuntimeError as err:
                filters.append((rule, _runtime_verdict(rule.name, err)))
                continue
            if rejected:
                verdict = NodeVerdict(rule=rule.name, reasons=tuple(rejected))
                message = pod_rejected_message(len(names), rejected)
                return Decision(key, None, {name: verdict for name in names}, [], {}, {}, [], None, message, digest)
            filters.append((rule, None))

        verdicts: dict[str, NodeVerdict] = {}
        for name, node in zip(names, nodes):
            env = {"pod": pod_rec, "node": node, "cluster": cluster}
            verdict = FEASIBLE
            for rule, failed in filters:
                if failed is not None:
                    verdict = failed
                    break
                try:
                    reasons = rule.reasons(env)
                except PolicyRuntimeError as err:
                    verdict = _runtime_verdict(rule.name, err)
                    break
                if reasons:
                    verdict = NodeVerdict(rule=rule.name, reasons=tuple(reasons))
                    break
            verdicts[name] = verdict

        feasible_idx = [i for i, name in enumerate(names) if verdicts[name].rule is None]
        if not feasible_idx:
            return self._unschedulable(key, names, verdicts, digest)
        cluster.set_feasible([names[i] for i in feasible_idx])  # kube's PreScore sees the filtered nodes

        # 2. raw scores on the feasible nodes; errors make nodes infeasible before normalising.
        raws: list[tuple[Any, bool, dict[int, int | None]]] = []  # (rule, applies, idx -> raw|None=ignored)
        for rule in policy_set.scores:
            try:
                applies = bool(rule.applies(pod_env))
            except PolicyRuntimeError as err:
                for i in feasible_idx:
                    if verdicts[names[i]].rule is None:
                        verdicts[names[i]] = _runtime_verdict(rule.name, err)
                raws.append((rule, False, {}))
                continue
            values: dict[int, int | None] = {}
            if applies:
                for i in feasible_idx:
                    if verdicts[names[i]].rule is not None:
                        continue  # already failed on an earlier score rule
                    values[i] = self._raw(rule, {"pod": pod_rec, "node": nodes[i], "cluster": cluster}, names[i], verdicts)
            raws.append((rule, applies, values))

        feasible = [names[i] for i in feasible_idx if verdicts[names[i]].rule is None]
        if not feasible:
            return self._unschedulable(key, names, verdicts, digest)

        # 3. normalise over the feasible, non-ignored nodes; weight; sum.
        kept = [i for i in feasible_idx if verdicts[names[i]].rule is None]
        scores: dict[str, dict[str, RuleScore]] = {}
        totals = {names[i]: 0 for i in kept}
        for rule, applies, values in raws:
            per_node: dict[str, RuleScore] = {}
            scored = [i for i in kept if applies and values.get(i) is not None]
            normalized = dict(zip(scored, normalize(rule.normalize, [values[i] for i in scored])))  # type: ignore[misc]
            for i in kept:
                if not applies:
                    per_node[names[i]] = RuleScore(0, 0, 0, False)
                elif values.get(i) is None:
                    per_node[names[i]] = RuleScore(0, 0, 0, True)
                else:
                    norm = normalized[i]
                    per_node[names[i]] = RuleScore(values[i], norm, norm * rule.weight, False)  # type: ignore[arg-type]
                    totals[names[i]] += norm * rule.weight
            scores[rule.name] = per_node
        best = max(totals.values())
        top = [name for name in feasible if totals[name] == best]
        chosen = rng.choice(top)
        return Decision(key, chosen, verdicts, feasible, scores, totals, top, best, None, digest)

    @staticmethod
    def _unschedulable(key: str, names: list[str], verdicts: dict[str, NodeVerdict], digest: str) -> Decision:
        """The decision for a pod no node accepts, with kube-scheduler's FailedScheduling text."""
        reasons = [r for name in names for r in verdicts[name].reasons]
        message = failed_scheduling_message(len(names), reasons)
        return Decision(key, None, verdicts, [], {}, {}, [], None, message, digest)

    @staticmethod
    def _raw(rule: Any, env: dict[str, Any], name: str, verdicts: dict[str, NodeVerdict]) -> int | None:
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


_REFERENCE = ReferenceEvaluator()


def evaluate(policy_set: Any, snapshot: Any, pod: dict[str, Any], *, rng: random.Random) -> Decision:
    """Decide where ``pod`` goes with the reference evaluator (see :class:`ReferenceEvaluator`)."""
    return _REFERENCE.evaluate(policy_set, snapshot, pod, rng=rng)
