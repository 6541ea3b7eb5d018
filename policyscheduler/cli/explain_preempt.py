"""The preemption part of ``policyscheduler explain``: for a pod that fits nowhere, what kube's
DefaultPreemption (narrowed by the policy set's ``preempt`` rules) would do -- the nominated node, the
victims, and every lower-priority pod a preempt rule protected, with the rule and its file:line.

The run is the scheduler's own :func:`~policyscheduler.cycle.preemption.preempt` on the snapshot as it
is (no nominated pods: explain has no scheduling queue), so what it shows is what a cycle would do.
"""

from __future__ import annotations

import random
from typing import Any

__all__ = ["explain_preemption", "preemption_lines"]

_SHOWN = 5
"""Protected pods listed in the text summary (which stays short whatever the cluster's size)."""


def _location(span: Any) -> str:
    return f"{span.file}:{span.line}"


def explain_preemption(evaluator: Any, policy_set: Any, snapshot: Any, pod: dict[str, Any], decision: Any,
                       rng: random.Random, sources: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON-ready preemption outcome of ``pod``, which ``decision`` placed nowhere."""
    from policyscheduler.cycle.preemption import preempt

    result = preempt(evaluator, policy_set, snapshot, pod, decision, (), rng)
    message = decision.message if result.message is None else f"{decision.message} {result.message}"
    return {
        "eligible": result.eligible,
        "node": result.node,
        "victims": [v.to_json() for v in result.victims],
        "message": message,
        "statuses": {n: list(r) for n, r in result.statuses.items()},
        "protected": [{**p.to_json(), "location": _location(p.span)} for p in result.protected],
    }


def preemption_lines(pre: dict[str, Any] | None) -> list[str]:
    """The text lines of the preemption part (none when the pod was placed)."""
    if pre is None:
        return []
    lines: list[str] = []
    if not pre["eligible"]:
        lines.append(f"preemption: not eligible ({pre['message']})")
        return lines
    if pre["node"] is not None:
        victims = ", ".join(f"{v['pod']} (priority {v['priority']}{', breaks a PDB' if v['pdb_violation'] else ''})"
                            for v in pre["victims"])
        lines.append(f"preemption: would nominate {pre['node']} and evict {victims}")
    else:
        lines.append(f"preemption: no node ({pre['message']})")
    shown = pre["protected"][:_SHOWN]
    for p in shown:
        why = f": {p['error']}" if p.get("error") else ""
        lines.append(f"  protected: {p['pod']} on {p['node']} by {p['rule']} ({p['location']}): {p['reason']}{why}")
    if len(pre["protected"]) > len(shown):
        lines.append(f"  ... and {len(pre['protected']) - len(shown)} more protected pod(s) (--output json lists all)")
    return lines
