"""PostFilter: preemption, as kube-scheduler's DefaultPreemption does it (v1.35).

Called by ``schedule_one`` when a pod fits nowhere. In kube's order:

1. **Eligible?** ``preemptionPolicy: Never`` is not (text: ``not eligible due to preemptionPolicy=Never.``).
2. **Candidates**: the nodes whose rejection a removal could resolve. A verdict is *unresolvable* (kube's
   UnschedulableAndUnresolvable) when one of its reasons is in :data:`UNRESOLVABLE_REASONS`, when it is an
   ``Insufficient <resource>`` the node could not give even empty (:func:`unresolvable`), when it is a
   policy error, or when the pod itself was rejected before any node (PreFilter).
3. **Victims per node** (SelectVictimsOnNode): every pod of lower priority is taken away at once; if the
   pod still does not fit, the node is out with the filter's reason. Otherwise the would-be victims are
   given back one by one, most important first (priority, then earlier start), those whose eviction
   would break a PodDisruptionBudget before the others; one that still lets the pod fit stays.
4. **Node**: fewest PDB violations, then lowest highest-victim priority, smallest sum of victim
   priorities (each + 2^31), fewest victims, latest earliest start among the highest-priority victims;
   a tie after all that is broken at random (kube takes the first key of a Go map).
5. **Message** when no node works: ``preemption: 0/N nodes are available: ...`` where each node tried
   gives its reason ("No preemption victims found for incoming pod", or the filter's) and every other
   node "Preemption is not helpful for scheduling".

**Preempt rules** (``preempt NAME ... victim C`` in the policy set) narrow step 3: a lower-priority pod
for which some applicable rule's ``victim`` clause is false (or fails at run time: a rule that cannot
decide protects) is not a potential victim; it stays on the node, as kube treats a pod it may not evict,
so the preemptor must fit with it there. When the node would have worked had the protected pods been
evictable, its reason is the protecting rules' ``reason`` (their text, "protected by preempt rule
'NAME'" without one) rather than the filter's. With no preempt rule the steps are kube's exactly.

Every "would it fit?" is a what-if on the real state (:mod:`policyscheduler.state.whatif`) answered by
the evaluator's :meth:`~policyscheduler.evaluation.Driver.filter_nodes` on the one node, with the
nominated pods of priority >= the pod's placed on it first (kube's filters "with nominated pods").
Nothing here talks to the API server: the result is plain data for the drivers.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from policyscheduler.diagnostics import PolicyRuntimeError
from policyscheduler.evaluation.message import failed_scheduling_message, pod_rejected_message
from policyscheduler.state.store import pod_key as store_key
from policyscheduler.state.whatif import pods_added, pods_removed

if TYPE_CHECKING:
    from policyscheduler.compiler import PolicySet, PreemptRule
    from policyscheduler.diagnostics import Span
    from policyscheduler.evaluation import Decision, NodeVerdict
    from policyscheduler.objects import Node, Pod
    from policyscheduler.state import ClusterSnapshot

__all__ = [
    "NO_VICTIMS",
    "NOT_HELPFUL",
    "NEVER",
    "WAITING",
    "UNRESOLVABLE_REASONS",
    "Preemption",
    "Protected",
    "Victim",
    "WhatIfEvaluator",
    "Nominated",
    "fits_on",
    "preempt",
    "preemption_policy",
    "unresolvable",
]

NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NEVER = "not eligible due to preemptionPolicy=Never."
WAITING = "not eligible due to a terminating pod on the nominated node."
_PRIORITY_OFFSET = 2**31  # kube adds MaxInt32+1 to every priority it sums, so that negative ones count
_MIN_CANDIDATES_PERCENT = 10
_MIN_CANDIDATES = 100

UNRESOLVABLE_REASONS: Mapping[str, str] = {
    "node(s) were unschedulable": "NodeUnschedulable",
    "node(s) didn't match the requested node name": "NodeName",
    "node(s) had untolerated taint(s)": "TaintToleration",
    "node(s) didn't match Pod's node affinity/selector": "NodeAffinity",
    "node(s) didn't satisfy plugin(s) [NodeAffinity]": "NodeAffinity (PreFilterResult)",
    "node(s) didn't match pod topology spread constraints (missing required label)": "PodTopologySpread",
    "node(s) didn't match pod affinity rules": "InterPodAffinity",
    "node(s) didn't match PersistentVolume's node affinity": "VolumeBinding",
    "node(s) didn't find available persistent volumes to bind": "VolumeBinding",
    "node(s) did not have enough free storage": "VolumeBinding",
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)": "VolumeBinding",
    "node(s) had no available volume zone": "VolumeZone",
}
"""Reasons kube-scheduler v1.35 reports with UnschedulableAndUnresolvable (reason -> the plugin that
says so): taking pods away cannot change them, so their nodes are never preemption candidates. Any
other reason -- a user rule's included -- is resolvable, as kube's plain Unschedulable is. The one
reason whose resolvability depends on the node, ``Insufficient <resource>``, is decided by
:func:`unresolvable` (kube's ``Unresolvable: request > allocatable``)."""

_INSUFFICIENT = "Insufficient "


def unresolvable(verdict: NodeVerdict, pod: Pod, node: Node) -> bool:
    """Whether no removal of pods could make ``node`` accept ``pod`` after this verdict: a reason of
    :data:`UNRESOLVABLE_REASONS`, a runtime error, or an ``Insufficient r`` for a request larger than
    the node's whole allocatable of ``r`` (kube's "too big for the node")."""
    if verdict.error is not None:
        return True
    for reason in verdict.reasons:
        if reason in UNRESOLVABLE_REASONS:
            return True
        if reason.startswith(_INSUFFICIENT):
            resource = reason[len(_INSUFFICIENT):]
            if pod.requests.get(resource, 0) > node.allocatable.get(resource, 0):
                return True
    return False


def preemption_policy(pod: Mapping[str, Any]) -> str:
    """``spec.preemptionPolicy`` (``PreemptLowerPriority`` when absent, as the API server defaults it)."""
    spec = pod.get("spec")
    value = spec.get("preemptionPolicy") if isinstance(spec, Mapping) else None
    return value if isinstance(value, str) and value else "PreemptLowerPriority"


@dataclasses.dataclass(frozen=True)
class Victim:
    """A pod to evict: what the live side needs to set its DisruptionTarget condition, delete it and
    post its Preempted event (``namespace``, ``name``, ``uid``), and why it was chosen."""

    namespace: str
    name: str
    uid: str
    node: str
    priority: int
    pdb_violation: bool
    """Evicting it breaks a PodDisruptionBudget (kube still may, when no node avoids it)."""

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"

    def to_json(self) -> dict[str, Any]:
        return {"pod": self.key, "uid": self.uid, "node": self.node, "priority": self.priority,
                "pdb_violation": self.pdb_violation}


@dataclasses.dataclass(frozen=True)
class Protected:
    """A lower-priority pod a preempt rule kept from being a victim (what ``explain`` shows)."""

    pod: str
    """``namespace/name``."""
    node: str
    rule: str
    reason: str
    span: Span
    """Where the rule is defined (its name)."""
    error: str | None = None
    """The rule failed at run time on this pod (it then protects: an undecided eviction is not made)."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"pod": self.pod, "node": self.node, "rule": f"preempt {self.rule}",
                               "reason": self.reason, "file": self.span.file, "line": self.span.line}
        if self.error is not None:
            out["error"] = self.error
        return out


@dataclasses.dataclass(frozen=True)
class Preemption:
    """The outcome of one PostFilter run.

    ``node``: the node nominated for the preemptor (None: no candidate, or not eligible). ``victims``:
    the pods to evict there, most important first. ``message``: the suffix kube appends to the
    FailedScheduling text (None when a node was found: kube appends nothing then). ``statuses``: per node
    tried and failed, its reasons (the histogram behind ``message``). ``tied``: the candidates still
    equal after every ordering criterion (the choice among them was random; kube's is too).
    """

    node: str | None
    victims: tuple[Victim, ...] = ()
    message: str | None = None
    pdb_violations: int = 0
    candidates: tuple[str, ...] = ()
    tied: tuple[str, ...] = ()
    statuses: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    eligible: bool = True
    """False when the pod may not preempt at all (``preemptionPolicy: Never``)."""
    protected: tuple[Protected, ...] = ()
    """The lower-priority pods preempt rules kept from being victims, on the nodes tried."""


class WhatIfEvaluator(Protocol):
    """What preemption needs of an evaluator (the phase driver has it)."""

    def filter_nodes(self, policy_set: PolicySet, snapshot: ClusterSnapshot, pod: dict[str, Any],
                     slots: Sequence[int]) -> list[NodeVerdict | None]: ...


@dataclasses.dataclass(frozen=True)
class Nominated:
    """A pod nominated to a node by an earlier preemption: its room there is held for it."""

    pod: dict[str, Any]
    node: str
    priority: int
    queue_key: Hashable = None
    """The pod's key in the scheduling queue: a nomination whose pod left the queue (deleted, bound
    elsewhere) is dropped."""


class _Fit:
    """"Does the pod fit on this node?" with the nominated pods of priority >= its own placed there
    first (kube's RunFilterPluginsWithNominatedPods: must pass with them, and without them)."""

    def __init__(self, evaluator: WhatIfEvaluator, policy_set: PolicySet, snapshot: ClusterSnapshot,
                 pod: dict[str, Any], nominated: Sequence[Nominated]) -> None:
        self.evaluator, self.policy_set, self.snapshot, self.pod = evaluator, policy_set, snapshot, pod
        self.by_node: dict[str, list[Pod]] = {}
        for n in nominated:
            self.by_node.setdefault(n.node, []).append(snapshot.pod_record(n.pod))

    def verdict(self, slot: int, node: str) -> NodeVerdict | None:
        ask: Callable[[], NodeVerdict | None] = lambda: self.evaluator.filter_nodes(
            self.policy_set, self.snapshot, self.pod, [slot])[0]
        noms = self.by_node.get(node)
        if noms:
            with pods_added(self.snapshot.state, [(p, node) for p in noms]) as added:
                first = ask()
            if first is not None or not added:
                return first
        return ask()


def fits_on(evaluator: WhatIfEvaluator, policy_set: PolicySet, snapshot: ClusterSnapshot, pod: dict[str, Any],
            nominated: Sequence[Nominated], slot: int, node: str) -> NodeVerdict | None:
    """The filter verdict of ``pod`` on one node (None: it fits), with the ``nominated`` pods bound for
    that node placed there first and then without them, as kube's filters with nominated pods."""
    return _Fit(evaluator, policy_set, snapshot, pod, [n for n in nominated if n.node == node]).verdict(slot, node)


class _Guard:
    """The preempt rules that apply to one preemptor, asked per candidate victim."""

    def __init__(self, policy_set: PolicySet, snapshot: ClusterSnapshot, record: Pod) -> None:
        self.rules: list[PreemptRule] = []
        self.env: dict[str, Any] = {}
        if not policy_set.preempts:
            return
        self.env = {"pod": record, "cluster": snapshot.context(record)}
        for rule in policy_set.preempts:
            try:
                applies = rule.applies(self.env)
            except PolicyRuntimeError:
                applies = True  # undecided: the rule's victim clause decides (and protects if it fails too)
            if applies:
                self.rules.append(rule)

    def split(self, pods: Sequence[Pod], node: Node) -> tuple[list[Pod], list[Protected]]:
        """``pods`` that may be evicted, and the protection of the others (the first rule that says no)."""
        if not self.rules:
            return list(pods), []
        allowed: list[Pod] = []
        protected: list[Protected] = []
        for pod in pods:
            env = {**self.env, "target": pod, "node": node}
            hit: Protected | None = None
            for rule in self.rules:
                try:
                    ok = rule.allows(env)
                    error = None
                except PolicyRuntimeError as exc:
                    ok, error = False, str(exc)
                if not ok:
                    hit = Protected(pod.key, node.name, rule.name, rule.reason, rule.span, error)
                    break
            if hit is None:
                allowed.append(pod)
            else:
                protected.append(hit)
        return allowed, protected


def _start(snapshot: ClusterSnapshot, pod: Pod) -> float:
    """kube's GetPodStartTime: ``status.startTime``, or "now" (later than any real one) without it."""
    return snapshot.start_times.get(store_key(pod), math.inf)


def _pdb_split(snapshot: ClusterSnapshot, victims: Sequence[Pod]) -> tuple[list[Pod], list[Pod]]:
    """kube's filterPodsWithPDBViolation: walking the victims in order, each one covered by a budget
    spends one of its allowed disruptions; a pod that drives some budget below zero is violating."""
    budgets = list(snapshot.state.budgets.values())
    allowed = [b.disruptions_allowed for b in budgets]
    violating: list[Pod] = []
    others: list[Pod] = []
    for pod in victims:
        broken = False
        if pod.labels:
            for i, budget in enumerate(budgets):
                if not budget.covers(pod.namespace, pod.labels) or pod.name in budget.disrupted_pods:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    broken = True
        (violating if broken else others).append(pod)
    return violating, others


def _protection_reasons(fit: _Fit, snapshot: ClusterSnapshot, slot: int, node: str,
                        protected: Sequence[Protected], lower: Sequence[Pod]) -> tuple[str, ...] | None:
    """The protecting rules' reasons when the pod would fit with every lower-priority pod gone, that
    is, when the preempt rules are what made the node fail (None otherwise: the node fails anyway)."""
    if not protected:
        return None
    with pods_removed(snapshot.state, [store_key(p) for p in lower]):
        if fit.verdict(slot, node) is not None:
            return None
    return tuple(dict.fromkeys(p.reason for p in protected))


def _select_victims(fit: _Fit, guard: _Guard, snapshot: ClusterSnapshot, priority: int, slot: int,
                    node: str) -> tuple[list[tuple[Pod, bool]], int, tuple[str, ...], list[Protected]]:
    """kube's SelectVictimsOnNode: (victims most important first, each with "breaks a PDB", the number
    of PDB violations, failure reasons when there is no victim set, the pods preempt rules protected).
    Protected pods are left on the node, as kube leaves the pods it may not evict."""
    state = snapshot.state
    every_lower = [p for p in state.nodes[slot].pods if p.priority < priority]
    lower, protected = guard.split(every_lower, snapshot.nodes[slot])
    if not lower:
        why = _protection_reasons(fit, snapshot, slot, node, protected, every_lower)
        return [], 0, why or (NO_VICTIMS,), protected
    victims: list[tuple[Pod, bool]] = []
    with pods_removed(state, [store_key(p) for p in lower]):
        failed = fit.verdict(slot, node)
        if failed is not None:  # (the evictable pods are already gone: the what-if takes the protected ones too)
            why = _protection_reasons(fit, snapshot, slot, node, protected, every_lower)
            return [], 0, why or tuple(failed.reasons), protected
        ordered = sorted(lower, key=lambda p: (-p.priority, _start(snapshot, p)))  # stable: node order on ties
        violating, others = _pdb_split(snapshot, ordered)
        reprieved: list[Pod] = []
        for group, breaks in ((violating, True), (others, False)):
            for pod in group:
                state.add_pod(pod)  # give it back; it stays if the pod still fits
                if fit.verdict(slot, node) is None:
                    reprieved.append(pod)
                else:
                    state.remove_pod(store_key(pod))
                    victims.append((pod, breaks))
        for pod in reprieved:  # pods_removed gives every pod back, in the node's order, on exit
            state.remove_pod(store_key(pod))
    if violating and others:
        victims.sort(key=lambda v: (-v[0].priority, _start(snapshot, v[0])))
    if not victims:
        return [], 0, (f"expected at least one victim pod on node {node!r}",), protected
    return victims, sum(b for _, b in victims), (), protected


def _pick(snapshot: ClusterSnapshot, found: Mapping[str, tuple[list[tuple[Pod, bool]], int]],
          rng: random.Random) -> tuple[str, tuple[str, ...]]:
    """kube's pickOneNodeForPreemption; returns the node and the candidates tied at the end (empty when
    an ordering criterion decided)."""

    def pods(n: str) -> list[Pod]:
        return [p for p, _ in found[n][0]]

    def earliest_top(victims: list[Pod]) -> float:
        top = max(p.priority for p in victims)
        return min(_start(snapshot, p) for p in victims if p.priority == top)

    criteria: list[Callable[[str], float]] = [
        lambda n: -found[n][1],
        lambda n: -pods(n)[0].priority,
        lambda n: -sum(p.priority + _PRIORITY_OFFSET for p in pods(n)),
        lambda n: -len(pods(n)),
        lambda n: earliest_top(pods(n)),
    ]
    names = list(found)
    for criterion in criteria:
        scores = [criterion(n) for n in names]
        best = max(scores)
        names = [n for n, s in zip(names, scores) if s == best]
        if len(names) == 1:
            return names[0], ()
    return names[rng.randrange(len(names))], tuple(names)


def preempt(
    evaluator: WhatIfEvaluator,
    policy_set: PolicySet,
    snapshot: ClusterSnapshot,
    pod: dict[str, Any],
    decision: Decision,
    nominated: Sequence[Nominated],
    rng: random.Random,
    *,
    own_node: str | None = None,
    evicting: Collection[str] = (),
) -> Preemption:
    """Run DefaultPreemption for ``pod``, which ``decision`` placed nowhere (see the module docstring).

    ``nominated``: the nominated pods of priority >= the pod's (not the pod itself); the state is the
    same on return as on entry. ``own_node``: the pod's nominated node, if any; ``evicting``: the
    ``namespace/name`` of pods a preemption chose as victims -- while one of lower priority is still
    terminating on ``own_node`` (and that node's rejection is resolvable) the pod waits for it instead of
    preempting again (kube: ``not eligible due to a terminating pod on the nominated node.``)."""
    if preemption_policy(pod) == "Never":
        return Preemption(None, message=f"preemption: {NEVER}", eligible=False)
    nodes = snapshot.nodes
    total = len(nodes)
    record = snapshot.pod_record(pod)
    verdicts = decision.verdicts
    if own_node is not None and evicting and _waiting(snapshot, record, verdicts, own_node, evicting):
        return Preemption(None, message=f"preemption: {WAITING}", eligible=False)
    potential: list[int] = []
    if not _pod_rejected(decision, total):
        for slot, node in enumerate(nodes):
            verdict = verdicts.get(node.name)
            if verdict is not None and verdict.reasons and not unresolvable(verdict, record, node):
                potential.append(slot)
    fit = _Fit(evaluator, policy_set, snapshot, pod, nominated)
    guard = _Guard(policy_set, snapshot, record)
    found: dict[str, tuple[list[tuple[Pod, bool]], int]] = {}
    statuses: dict[str, tuple[str, ...]] = {}
    protected: list[Protected] = []
    if potential:
        wanted = max(len(potential) * _MIN_CANDIDATES_PERCENT // 100, _MIN_CANDIDATES)
        wanted = min(wanted, len(potential))
        offset = rng.randrange(len(potential)) if wanted < len(potential) else 0
        clean = 0
        for i in range(len(potential)):
            slot = potential[(offset + i) % len(potential)]
            name = nodes[slot].name
            victims, violations, failed, kept = _select_victims(fit, guard, snapshot, record.priority, slot, name)
            protected += kept
            if victims:
                found[name] = (victims, violations)
                clean += violations == 0
                if clean and len(found) >= wanted:
                    break
            else:
                statuses[name] = failed
    if not found:
        reasons = [r for rs in statuses.values() for r in rs] + [NOT_HELPFUL] * (total - len(statuses))
        return Preemption(None, message=f"preemption: {failed_scheduling_message(total, reasons)}",
                          statuses=statuses, protected=tuple(protected))
    chosen, tied = _pick(snapshot, found, rng) if len(found) > 1 else (next(iter(found)), ())
    victims, violations = found[chosen]
    out = tuple(Victim(p.namespace, p.name, p.uid, chosen, p.priority, breaks) for p, breaks in victims)
    return Preemption(chosen, out, None, violations, tuple(found), tied, statuses, protected=tuple(protected))


def _waiting(snapshot: ClusterSnapshot, record: Pod, verdicts: Mapping[str, NodeVerdict], node: str,
             evicting: Collection[str]) -> bool:
    """A lower-priority victim is still terminating on the pod's nominated node, whose rejection removal can
    resolve (kube's PodEligibleToPreemptOthers)."""
    slot = snapshot.state.slot_of(node)
    verdict = verdicts.get(node)
    if slot is None or verdict is None:
        return False
    spot = snapshot.nodes[slot]
    if unresolvable(verdict, record, spot):
        return False
    return any(p.priority < record.priority and p.terminating and p.key in evicting for p in spot.pods)


def _pod_rejected(decision: Decision, total: int) -> bool:
    """Whether ``decision`` rejected the pod itself, before any node (PreFilter): its text is then the
    pod-level one (no per-node counts), and no node is a candidate."""
    first = next(iter(decision.verdicts.values()), None) if total else None
    return first is not None and decision.message == pod_rejected_message(total, first.reasons)
