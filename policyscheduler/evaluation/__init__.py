"""Evaluate a PolicySet for one pod over a cluster snapshot -> :class:`Decision`.

``evaluate`` is the reference (per-node) implementation; :class:`Evaluator` is the protocol a faster
implementation plugs into, and :class:`Decision` is plain data so the two can be compared with ``==``.
"""

from __future__ import annotations

from policyscheduler.evaluation.decision import FEASIBLE, Decision, Evaluator, NodeVerdict, RuleScore
from policyscheduler.evaluation.message import failed_scheduling_message
from policyscheduler.evaluation.compare import diff_decisions
from policyscheduler.evaluation.normalize import normalize
from policyscheduler.evaluation.reference import ReferenceEvaluator, evaluate, pod_key

__all__ = [
    "Decision",
    "Evaluator",
    "FEASIBLE",
    "NodeVerdict",
    "ReferenceEvaluator",
    "RuleScore",
    "diff_decisions",
    "evaluate",
    "failed_scheduling_message",
    "normalize",
    "pod_key",
]
