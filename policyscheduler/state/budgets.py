"""PodDisruptionBudgets as preemption reads them (kube's ``filterPodsWithPDBViolation``).

Only three things of a ``policy/v1`` PodDisruptionBudget matter to the scheduler: its namespace, its
selector and ``status.disruptionsAllowed`` (plus ``status.disruptedPods``, pods already counted as being
disrupted). The budget is the disruption controller's arithmetic; the scheduler only spends it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policyscheduler.objects.selectors import Selector, compile_label_selector

__all__ = ["DisruptionBudget", "build_budget"]


@dataclass(frozen=True)
class DisruptionBudget:
    """One PodDisruptionBudget. ``selector`` None (absent or unreadable) or empty selects no pod, as in
    kube (``selector.Empty()`` is skipped there)."""

    namespace: str
    name: str
    selector: Selector | None
    disruptions_allowed: int
    disrupted_pods: frozenset[str]

    def covers(self, namespace: str, labels: Mapping[str, str]) -> bool:
        """Whether a pod of ``namespace`` with ``labels`` counts against this budget (a pod without
        labels never does: kube skips it before looking at budgets)."""
        sel = self.selector
        if namespace != self.namespace or not labels or sel is None or not sel.requirements:
            return False
        return sel.matches(labels)


def build_budget(obj: Mapping[str, Any], warnings: list[str]) -> DisruptionBudget:
    """The record of a PodDisruptionBudget object; problems go to ``warnings`` (never raises)."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    assert isinstance(meta, Mapping)
    ns = meta.get("namespace") if isinstance(meta.get("namespace"), str) and meta.get("namespace") else "default"
    name = meta.get("name") if isinstance(meta.get("name"), str) else ""
    spec = obj.get("spec") if isinstance(obj.get("spec"), Mapping) else {}
    status = obj.get("status") if isinstance(obj.get("status"), Mapping) else {}
    assert isinstance(spec, Mapping) and isinstance(status, Mapping)
    selector, problem = compile_label_selector(spec.get("selector"))
    if problem is not None:
        warnings.append(f"PodDisruptionBudget {ns}/{name}: {problem}; it protects no pod")
        selector = None
    allowed = status.get("disruptionsAllowed", 0)
    if isinstance(allowed, bool) or not isinstance(allowed, int):
        warnings.append(f"PodDisruptionBudget {ns}/{name}: status.disruptionsAllowed is not an integer; read as 0")
        allowed = 0
    disrupted = status.get("disruptedPods")
    names = frozenset(k for k in disrupted if isinstance(k, str)) if isinstance(disrupted, Mapping) else frozenset()
    return DisruptionBudget(str(ns), str(name), selector, allowed, names)
