"""The reference backend: each rule run node by node through its compiled closures.

This is the executable statement of a rule's meaning on one node (grammar/LANGUAGE.md); the vectorised
backend must give the same answers. The phases around the rules live in :mod:`.driver`, shared by both
backends. The steps of a decision, for one pod:

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

Runtime errors (:class:`PolicyRuntimeError`, and raw scores a mode cannot take) never crash. In a
filter the node gets an error verdict naming the rule, becomes infeasible, and its histogram reason
reads ``policy error in rule <rule>: <message>``; a failing filter ``applies when`` fails every node
that reaches the rule. In a score rule the node gets 0 for that rule, stays feasible and is left out of
that rule's normalisation (so every normalised score still lies in 0..100), and the failure is listed in
``Decision.score_errors`` with the node and ``file:line:col``. This backend reports the errors
(:meth:`ReferenceRun.score`); the driver decides what they mean.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

import numpy as np

from policyscheduler.diagnostics import PolicyRuntimeError
from policyscheduler.evaluation.arrays import filled
from policyscheduler.evaluation.decision import Decision, NodeVerdict
from policyscheduler.evaluation.driver import (
    Driver,
    FilterOutcome,
    Indexes,
    ScoreOutcome,
    error_verdict,
    pod_key,
    runtime_verdict,
)

if TYPE_CHECKING:
    from policyscheduler.compiler import FilterRule, PolicySet, ScoreRule
    from policyscheduler.objects import Cluster, Pod
    from policyscheduler.state import ClusterSnapshot

__all__ = ["ReferenceBackend", "ReferenceEvaluator", "ReferenceRun", "evaluate", "pod_key", "error_verdict"]

_INT64 = (-(2**63), 2**63 - 1)


class ReferenceRun:
    """One pod's per-node evaluation: one env per node, shared by its filters and score rules
    (each rule copies it into a private frame)."""

    def __init__(self, snapshot: ClusterSnapshot, pod: Pod, cluster: Cluster) -> None:
        self._nodes = snapshot.nodes
        self._pod = pod
        self._cluster = cluster
        self._envs: dict[int, dict[str, Any]] = {}

    def env(self, i: int) -> dict[str, Any]:
        """The evaluation env of node slot ``i``."""
        env = self._envs.get(i)
        if env is None:
            env = self._envs[i] = {"pod": self._pod, "node": self._nodes[i], "cluster": self._cluster}
        return env

    def filter(self, rule: FilterRule, idx: Indexes) -> FilterOutcome:
        """The first failing node-level clause of ``rule`` per node (its reasons), or a runtime error."""
        codes = filled(idx.size, -1, np.int32)
        verdicts: list[NodeVerdict] = []
        seen: dict[NodeVerdict, int] = {}
        for j, i in enumerate(idx.tolist()):
            try:
                reasons = rule.reasons(self.env(i))
            except PolicyRuntimeError as err:
                verdict = runtime_verdict(rule.name, err)
            else:
                if not reasons:
                    continue
                verdict = NodeVerdict(rule=rule.name, reasons=tuple(reasons))
            code = seen.get(verdict)
            if code is None:
                code = seen[verdict] = len(verdicts)
                verdicts.append(verdict)
            codes[j] = code
        return FilterOutcome(codes, verdicts)

    def score(self, rule: ScoreRule, idx: Indexes) -> ScoreOutcome:
        """``ignore node when`` then ``value`` per node; runtime errors and non-integers are error verdicts."""
        raws: list[int] = []
        ignored = np.zeros(idx.size, dtype=np.bool_)
        errors = filled(idx.size, -1, np.int32)
        verdicts: list[NodeVerdict] = []
        for j, i in enumerate(idx.tolist()):
            env = self.env(i)
            raw: Any = 0
            try:
                if rule.ignored(env):
                    ignored[j] = True
                else:
                    raw = rule.raw(env)
                    if isinstance(raw, bool) or not isinstance(raw, int):
                        errors[j] = len(verdicts)
                        verdicts.append(error_verdict(rule.name, f"score {raw!r} is not an integer"))
                        raw = 0
            except PolicyRuntimeError as err:
                errors[j] = len(verdicts)
                verdicts.append(runtime_verdict(rule.name, err))
                raw = 0
            raws.append(raw)
        lo, hi = (min(raws), max(raws)) if raws else (0, 0)
        dtype: Any = np.int64 if _INT64[0] <= lo and hi <= _INT64[1] else object
        return ScoreOutcome(np.array(raws, dtype=dtype), ignored, errors, verdicts)


class ReferenceBackend:
    """Rules evaluated node by node with their compiled closures: the oracle of every other backend."""

    name = "reference"

    def start(self, policy_set: PolicySet, snapshot: ClusterSnapshot, pod: Pod, cluster: Cluster) -> ReferenceRun:
        """Per-node envs for ``pod`` over ``snapshot.nodes``."""
        return ReferenceRun(snapshot, pod, cluster)


class ReferenceEvaluator(Driver):
    """The phase driver with the per-node backend; see the module docstring for the exact semantics."""

    def __init__(self) -> None:
        super().__init__(ReferenceBackend())


_REFERENCE = ReferenceEvaluator()


def evaluate(policy_set: PolicySet, snapshot: ClusterSnapshot, pod: dict[str, Any], *, rng: random.Random) -> Decision:
    """Decide where ``pod`` goes with the reference evaluator (see :class:`ReferenceEvaluator`)."""
    return _REFERENCE.evaluate(policy_set, snapshot, pod, rng=rng)
