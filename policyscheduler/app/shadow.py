"""Shadow profiles: judge another scheduler's placements with our policies, never bind, never write pods.

A profile with ``mode: shadow`` and ``shadows: <schedulerName>`` watches the pods of that scheduler (one of
our own profiles, or kube-scheduler's ``default-scheduler``). **When** it evaluates decides what it
measures, so:

* once per pod, at the moment the watch first shows it bound -- the update that sets ``spec.nodeName`` on a
  pod seen pending before (a pod already bound when first seen, e.g. at start-up, is not judged: we did not
  see the state it was placed in);
* in watch order, against the cluster state *before* that update is applied: the pods bound earlier
  (in the order the API server accepted their bindings) are in place, this pod is not -- the state the other
  scheduler decided in (it assumes a pod on its node before binding, just as the watch applies it next);
* with the engine's :class:`~policyscheduler.evaluation.Decision` (the same evaluator as scheduling), the pod
  as it was pending (its ``nodeName`` removed).

So with the policies equal to kube-scheduler's defaults (and kube-scheduler scoring every node,
``percentageOfNodesToScore: 100``), the two agree on every pod except for ties broken differently.

**Outcome per pod** (``agreement``): ``agree`` (our choice is their node), ``tie`` (their node is not the one
we picked but has our best total score: a different tie-break), ``disagree`` (their node scores lower for us,
or our filters reject it), ``unschedulable`` (our policies find no node at all), ``error`` (the evaluation
failed; counted and logged, the watch goes on). Reported as

* ``policyscheduler_shadow_decisions_total{profile,agreement}``;
* one log line per pod (logger ``policyscheduler.shadow``, message ``shadow decision``): ``profile``,
  ``shadows``, ``pod``, ``agreement``, ``ours`` / ``theirs`` (nodes), ``our_score`` / ``their_score`` (our
  totals on both nodes; ``their_score`` null when our filters reject their node), ``score_difference``, and
  ``rule`` -- the rule that differs most: the score rule with the largest weighted difference between the
  two nodes (``rule_difference``), or the filter that rejects their node (``their_node_rejected_by``);
* on ``disagree`` an events.k8s.io Event on the pod: type Normal, reason ``ShadowDisagreement``, action
  ``Shadow``, reportingController the shadow profile's name, naming both nodes, scores and the rule.

Only the leader evaluates (with leader election), and only once every watch delivered its first list.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from policyscheduler.cycle.cache import ClusterCache
from policyscheduler.kobjects import cache_key, is_terminating, name_of, namespace_of, pod_key, uid_of
from policyscheduler.kobjects import node_name as node_name_of
from policyscheduler.kobjects import scheduler_name as scheduler_name_of

if TYPE_CHECKING:
    from policyscheduler.compiler import PolicySet
    from policyscheduler.evaluation import Decision, Evaluator
    from policyscheduler.kube.events import EventRecorder
    from policyscheduler.kube.metrics import SchedulerMetrics

__all__ = ["AGREEMENTS", "ShadowProfile", "Shadows", "compare"]

log = logging.getLogger("policyscheduler.shadow")

AGREEMENTS = ("agree", "tie", "disagree", "unschedulable", "error")


def _key(pod: Mapping[str, Any]) -> str:
    return cache_key(uid_of(pod), namespace_of(pod), name_of(pod))


def _name(pod: Mapping[str, Any]) -> str:
    return pod_key(pod)


def _pending_view(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The pod as it was before the bind: no ``spec.nodeName`` (everything else a policy reads is unchanged)."""
    spec = pod.get("spec")
    spec = dict(spec) if isinstance(spec, Mapping) else {}
    spec.pop("nodeName", None)
    return {**pod, "spec": spec}


def compare(decision: Decision, theirs: str) -> dict[str, Any]:
    """How our ``decision`` relates to the other scheduler's node ``theirs`` (plain data, the log fields)."""
    ours = decision.node
    their_score = decision.totals.get(theirs)
    record: dict[str, Any] = {"ours": ours, "theirs": theirs, "our_score": decision.score,
                              "their_score": their_score, "feasible": len(decision.feasible)}
    if ours is None:
        record["agreement"] = "unschedulable"
        record["message"] = decision.message
        return record
    if ours == theirs:
        record["agreement"] = "agree"
    elif their_score is not None and their_score == decision.score:
        record["agreement"] = "tie"
    else:
        record["agreement"] = "disagree"
    if their_score is not None and decision.score is not None:
        record["score_difference"] = decision.score - their_score
        best_rule, best_diff = None, 0
        for rule, per_node in decision.scores.items():
            a, b = per_node.get(ours), per_node.get(theirs)
            if a is None or b is None:
                continue
            diff = a.weighted - b.weighted
            if abs(diff) > abs(best_diff):
                best_rule, best_diff = rule, diff
        record["rule"] = best_rule
        record["rule_difference"] = best_diff
    else:
        verdict = decision.verdicts.get(theirs)
        record["rule"] = verdict.rule if verdict is not None else None
        record["their_node_rejected_by"] = verdict.rule if verdict is not None else "unknown node"
    return record


def _note(profile: str, record: Mapping[str, Any]) -> str:
    if record.get("their_score") is None:
        why = (f"our filter {record.get('rule')} rejects {record['theirs']}" if record.get("rule")
               else f"{record['theirs']} is unknown to us")
        return (f"shadow profile {profile} would have chosen {record['ours']} (score {record['our_score']}), "
                f"not {record['theirs']}: {why}")
    return (f"shadow profile {profile} would have chosen {record['ours']} (score {record['our_score']}), not "
            f"{record['theirs']} (score {record['their_score']}, {record.get('score_difference')} lower); the rule "
            f"that differs most: {record.get('rule')} ({record.get('rule_difference'):+d})")


class ShadowProfile:
    """One shadow profile: its name, whom it shadows, its policy set (hot-reloaded), its reporter."""

    def __init__(self, name: str, shadows: str, policy_set: PolicySet, recorder: EventRecorder | None) -> None:
        self.name = name
        self.shadows = shadows
        self._policy_set = policy_set
        self.recorder = recorder
        self.counts: dict[str, int] = dict.fromkeys(AGREEMENTS, 0)

    @property
    def policy_set(self) -> PolicySet:
        return self._policy_set

    def set_policy_set(self, policy_set: PolicySet) -> int:
        """A reload: the next pods are judged by the new set (nothing is queued, nothing moves)."""
        self._policy_set = policy_set
        return 0


class Shadows:
    """The shadow profiles of a process, fed by the live scheduler's watch handler.

    ``cache``: the cluster state to judge in. When the process schedules nothing itself it is the shared
    cache (nothing else takes snapshots of it); otherwise a cache of its own (``own_cache``), fed the same
    events, so the scheduling loop's snapshots and our own assumptions never mix with the shadow's view.
    Call :meth:`before_upsert` *before* the event reaches ``cache`` (and, with ``own_cache``, it applies the
    event itself).
    """

    def __init__(self, profiles: Sequence[ShadowProfile], evaluator: Evaluator, cache: ClusterCache, *,
                 own_cache: bool, metrics: SchedulerMetrics, active: Callable[[], bool],
                 rng: random.Random | None = None) -> None:
        self.profiles = list(profiles)
        self.evaluator = evaluator
        self.cache = cache
        self.own_cache = own_cache
        self.metrics = metrics
        self.active = active
        self.rng = rng if rng is not None else random.Random()
        self.shadowed = {p.shadows for p in self.profiles}
        self._pending: set[str] = set()
        self._lock = threading.Lock()
        self._unapplied = 0
        for p in self.profiles:
            for agreement in AGREEMENTS:
                metrics.shadow_decisions.labels(p.name, agreement)

    def before_upsert(self, kind: str, obj: dict[str, Any]) -> None:
        """An object was added or changed: judge a shadowed pod's first bind, then (own cache) apply it."""
        if kind == "Pod":
            try:
                self._pod(obj)
            except Exception:
                log.exception("shadow: unexpected error")
        if self.own_cache:
            self.cache.upsert(kind, obj)
        self._settle()

    def _settle(self) -> None:
        """Apply the own cache's recorded changes now and then, so they never pile up while the shadowed
        scheduler is idle (the judging itself applies them too)."""
        self._unapplied += 1
        if self._unapplied >= 2000:
            with self._lock:
                self._unapplied = 0
                self.cache.snapshot()

    def on_delete(self, kind: str, obj: dict[str, Any]) -> None:
        if kind == "Pod":
            with self._lock:
                self._pending.discard(_key(obj))
        if self.own_cache:
            self.cache.remove(kind, obj)
        self._settle()

    def _pod(self, pod: dict[str, Any]) -> None:
        name = scheduler_name_of(pod)
        if name not in self.shadowed:
            return
        key = _key(pod)
        node = node_name_of(pod)
        with self._lock:
            if node is None:
                if not is_terminating(pod):
                    self._pending.add(key)
                return
            if key not in self._pending:
                return  # bound when first seen, or already judged
            self._pending.discard(key)
            if not self.active() or self.cache.is_assumed(pod):
                return
            started = time.perf_counter()
            try:
                snapshot = self.cache.snapshot()  # everything before this event; this pod is not placed yet
            except Exception as err:  # noqa: BLE001 - counted and logged, the watch goes on
                for profile in self.profiles:
                    if profile.shadows == name:
                        self._error(profile, pod, node, err)
                return
            view = _pending_view(pod)
            for profile in self.profiles:
                if profile.shadows == name:
                    self._judge(profile, snapshot, view, pod, node, started)

    def _error(self, profile: ShadowProfile, pod: Mapping[str, Any], node: str, err: BaseException) -> None:
        profile.counts["error"] += 1
        self.metrics.shadow_decisions.labels(profile.name, "error").inc()
        log.error("shadow decision failed", extra={"fields": {
            "profile": profile.name, "shadows": profile.shadows, "pod": _name(pod), "theirs": node,
            "agreement": "error", "error": f"{type(err).__name__}: {err}"}})

    def _judge(self, profile: ShadowProfile, snapshot: Any, view: dict[str, Any], pod: dict[str, Any], node: str,
               started: float) -> None:
        policy_set = profile.policy_set
        try:
            decision = self.evaluator.evaluate(policy_set, snapshot, view, rng=self.rng)
            record = compare(decision, node)
        except Exception as err:  # noqa: BLE001 - one pod's failure is counted and logged, never raised
            self._error(profile, pod, node, err)
            return
        agreement = record["agreement"]
        profile.counts[agreement] += 1
        self.metrics.shadow_decisions.labels(profile.name, agreement).inc()
        fields = {"profile": profile.name, "shadows": profile.shadows, "pod": _name(pod), **record,
                  "policy_digest": policy_set.digest[:12], "nodes": len(decision.verdicts),
                  "evaluate_ms": round((time.perf_counter() - started) * 1000, 2)}
        log.info("shadow decision", extra={"fields": fields})
        if agreement == "disagree" and profile.recorder is not None:
            regarding = {"apiVersion": "v1", "kind": "Pod", "namespace": namespace_of(pod),
                         "name": name_of(pod), "uid": uid_of(pod)}
            profile.recorder.object_event(regarding, "Normal", "ShadowDisagreement", "Shadow", _note(profile.name, record))
