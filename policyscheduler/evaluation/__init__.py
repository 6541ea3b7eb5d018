"""Evaluate a PolicySet for one pod over a cluster snapshot -> :class:`Decision`.

One phase driver (:mod:`.driver`) runs every decision; backends differ only in how one rule is
evaluated on a set of nodes: ``reference`` (per node, compiled closures: the oracle) and ``vector``
(whole-cluster numpy operations, per-rule fallback to the reference). :func:`make_evaluator` picks one
by name; :class:`Decision` is plain data so the two can be compared with ``==``.
"""

from __future__ import annotations

from policyscheduler.evaluation.compare import diff_decisions
from policyscheduler.evaluation.decision import FEASIBLE, Decision, Evaluator, NodeVerdict, RuleScore
from policyscheduler.evaluation.driver import Backend, Driver
from policyscheduler.evaluation.message import failed_scheduling_message
from policyscheduler.evaluation.normalize import normalize
from policyscheduler.evaluation.reference import ReferenceEvaluator, evaluate, pod_key

ENGINES = ("vector", "reference")
"""Backend names, the default first (``--engine`` in the CLI)."""


def make_evaluator(name: str = ENGINES[0]) -> Driver:
    """A fresh evaluator (phase driver) with the named backend; ValueError for an unknown name.

    An evaluator keeps reuse state across the pods and snapshots it sees, unlocked: use one per thread
    (``run`` has one scheduling loop; ``simulate`` and the tools one caller)."""
    if name == "reference":
        return ReferenceEvaluator()
    if name == "vector":
        from policyscheduler.evaluation.vector import VectorBackend

        return Driver(VectorBackend())
    raise ValueError(f"unknown engine {name!r}; choose one of {', '.join(ENGINES)}")


__all__ = [
    "Backend",
    "Decision",
    "Driver",
    "ENGINES",
    "Evaluator",
    "FEASIBLE",
    "NodeVerdict",
    "ReferenceEvaluator",
    "RuleScore",
    "diff_decisions",
    "evaluate",
    "make_evaluator",
    "failed_scheduling_message",
    "normalize",
    "pod_key",
]
