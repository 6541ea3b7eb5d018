"""Compare kube-scheduler's verdict on a pod with our Decision, and explain any difference.

Used by ``test_kube_parity.py``. kube-scheduler runs with ``--vmodule=schedule_one=10`` so its log
has the weighted per-plugin score of every node it scored ("Plugin scored node for pod"); a mismatch
report puts those next to our per-rule weighted scores.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

# kube-scheduler plugin -> our default score rule (policies/*.policy).
PLUGIN_RULES: dict[str, str] = {
    "TaintToleration": "taint_toleration",
    "NodeAffinity": "node_affinity",
    "NodeResourcesFit": "node_resources_fit",
    "PodTopologySpread": "pod_topology_spread",
    "InterPodAffinity": "inter_pod_affinity",
    "NodeResourcesBalancedAllocation": "node_resources_balanced_allocation",
    "ImageLocality": "image_locality",
}
_SCORE_LINE = re.compile(
    r'"Plugin scored node for pod" pod="(?P<pod>[^"]+)" plugin="(?P<plugin>[^"]+)" '
    r'node="(?P<node>[^"]+)" score=(?P<score>-?\d+)')
# kube v1.35 FitError.Error() = "0/N nodes are available: <histogram>." + " " + PostFilterMsg, where
# PostFilterMsg joins with ", " the reasons of the PostFilter plugins in profile order:
# DynamicResources ("no new claims to deallocate" for a pod without ResourceClaims) and
# DefaultPreemption ("preemption: <its own 0/N histogram>"). We preempt nothing and have no DRA.
# When an earlier PreFilter plugin rejected the pod (e.g. NodeAffinity's "pod affinity terms
# conflict"), DynamicResources' PreFilter never stored its cycle state, so its PostFilter fails with
# the CycleState lookup error "not found" and the PostFilter loop stops there: the suffix is then
# just "not found" (dynamicresources.go getStateData, kube-scheduler framework ErrNotFound).
_POST_FILTER = re.compile(
    r"^(?P<fit>.*?\.) (?P<post>(?:no new claims to deallocate, )?preemption: .*|not found)$", re.DOTALL)

KubeScores = dict[str, dict[str, dict[str, int]]]  # pod -> node -> plugin -> weighted score


def kube_scores(log_file: Path) -> KubeScores:
    """Per pod, node and plugin, the last weighted score kube-scheduler logged."""
    scores: KubeScores = {}
    try:
        text = log_file.read_text(errors="replace")
    except OSError:
        return scores
    for m in _SCORE_LINE.finditer(text):
        scores.setdefault(m["pod"], {}).setdefault(m["node"], {})[m["plugin"]] = int(m["score"])
    return scores


def strip_post_filter(message: str) -> str:
    """kube's FailedScheduling text without the PostFilter suffix we deliberately omit.

    See ``_POST_FILTER``: everything after the histogram's final period (and its space) comes from
    PostFilter plugins -- DynamicResources' "no new claims to deallocate" (or its "not found") and
    DefaultPreemption's "preemption: ..." -- so the part before it is what our message must equal
    exactly. A message without that suffix is returned unchanged (and will then differ visibly).
    """
    m = _POST_FILTER.match(message)
    return m["fit"] if m else message


def fit_part(message: str) -> str:
    """The FailedScheduling text before the PostFilter part and without its final period: what our message
    and kube's must share. After a PreFilter rejection kube's PostFilter part is DynamicResources' bare
    "not found" (see ``_POST_FILTER``)."""
    return strip_post_filter(message).split(". not found")[0].rstrip(".")


@dataclasses.dataclass
class Mismatch:
    """One pod on which kube-scheduler and our decision disagree."""

    pod: str
    what: str
    kube: str  # kube's node, or its condition message
    decision: Any

    def render(self, scores: KubeScores) -> str:
        d = self.decision
        lines = [f"- {self.pod}: {self.what}"]
        if self.what.startswith("kube bound"):
            node = self.kube
            verdict = d.verdicts.get(node)
            if verdict is not None and not verdict.feasible:
                lines.append(f"    we reject {node}: rule {verdict.rule}: {'; '.join(verdict.reasons)}")
            if d.top:
                ours = ", ".join(f"{n}={d.totals[n]}" for n in d.top)
                lines.append(f"    our top: {ours}; ours for {node}: {d.totals.get(node, '-')}")
                lines.extend(_score_table(d, node, d.top[0], scores.get(self.pod, {})))
            else:
                lines.append(f"    our message: {d.message}")
        else:
            lines.append(f"    kube: {self.kube}")
            if d.node is None:
                lines.append(f"    ours: {d.message}")
            else:
                ours = ", ".join(f"{n}={d.totals[n]}" for n in d.top)
                lines.append(f"    ours: feasible {d.feasible}; top {ours}")
        return "\n".join(lines)


def _ours(per_node: dict[str, Any], node: str) -> str:
    s = per_node.get(node)
    return "-" if s is None else f"{s.weighted}{' (ign)' if s.ignored else ''} raw={s.raw}"


def _theirs(kube: dict[str, dict[str, int]], node: str, plugin: str) -> str:
    value = kube.get(node, {}).get(plugin)
    return "-" if value is None else str(value)


def _score_table(d: Any, kube_node: str, our_node: str, kube: dict[str, dict[str, int]]) -> list[str]:
    """Per rule: our weighted score and kube's for kube's node and for our best node."""
    width = 22
    rows = [f"    {'rule':<36}" + "".join(f"{h:>{width}}" for h in (
        f"ours@{kube_node}", f"kube@{kube_node}", f"ours@{our_node}", f"kube@{our_node}"))]
    rule_plugin = {rule: plugin for plugin, rule in PLUGIN_RULES.items()}
    for rule, per_node in d.scores.items():
        plugin = rule_plugin.get(rule, "")
        cells = (_ours(per_node, kube_node), _theirs(kube, kube_node, plugin),
                 _ours(per_node, our_node), _theirs(kube, our_node, plugin))
        rows.append(f"    {rule:<36}" + "".join(f"{c:>{width}}" for c in cells))
    other = sorted({p for n in (kube_node, our_node) for p in kube.get(n, {})} - set(PLUGIN_RULES))
    for plugin in other:
        cells = ("", _theirs(kube, kube_node, plugin), "", _theirs(kube, our_node, plugin))
        rows.append(f"    {'(kube) ' + plugin:<36}" + "".join(f"{c:>{width}}" for c in cells))
    if not kube:
        rows.append("    (kube logged no scores: it skips scoring when only one node is feasible)")
    return rows


def compare(pod: str, outcome: tuple[str, str], decision: Any) -> Mismatch | None:
    """None when kube's verdict is one our decision allows; else what differs."""
    kind, detail = outcome
    if kind == "bound":
        if decision.node is None:
            return Mismatch(pod, f"kube bound to {detail}, we find no feasible node", detail, decision)
        if detail not in decision.top:
            return Mismatch(pod, f"kube bound to {detail}, not in our top {decision.top}", detail, decision)
        return None
    if kind == "unschedulable":
        if decision.node is not None:
            return Mismatch(pod, "kube: unschedulable, we place it", detail, decision)
        if strip_post_filter(detail) != decision.message:
            return Mismatch(pod, "both unschedulable, messages differ", detail, decision)
        return None
    return Mismatch(pod, f"kube-scheduler reported {kind}", detail, decision)
