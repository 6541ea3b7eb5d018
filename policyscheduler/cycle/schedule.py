"""``schedule_one``: the one scheduling cycle of the project (``simulate`` and ``run`` both drive it).

pop a pod -> take the cache's view -> evaluate the policies -> on a node: assume it there and hand it
to the binder; on none: back to the queue's unschedulable pool with the decision's FailedScheduling
message. The binder reports back with :meth:`Cycle.binding_succeeded` / :meth:`Cycle.binding_failed`
(a failed bind forgets the assumption, frees its resources for the others and retries after backoff).

A pod whose previous attempt saw the same cluster generation, the same pod object and the same policy
set gets that attempt's decision again without evaluating (the answer could not differ); this is what
keeps a requeued pod cheap when the event that moved it did not touch anything it reads.

Profiles (kube-scheduler's model): one queue, one cache, one cycle, and a policy set per scheduler name.
Given a mapping ``schedulerName -> PolicySet`` the cycle decides each pod with the set its
``spec.schedulerName`` names (a pod of no profile gets the first one); requeueing by reads uses that set's
analyses, and a reload of one profile (:meth:`Cycle.set_policy_set` with ``profile``) moves only that
profile's unschedulable pods. Given one PolicySet (``simulate``), every pod uses it.

Preemption (PostFilter, :mod:`.preemption`): a pod that fits nowhere and may preempt gets a nominated
node and the victims to evict there (``Attempt.nominated_node`` / ``Attempt.victims``), and goes back to
the unschedulable pool like any failed pod; the driver evicts the victims. The cycle remembers the
nomination: the pod's next attempt tries that node first, and while it is nominated its room there is
held against pods of equal or lower priority (they are filtered as if it were already placed). A
nomination ends when the pod is assumed, when it leaves the queue (deleted or bound elsewhere; also
:meth:`Cycle.forget_nomination`), when a later preemption for it finds no node, or when a higher-priority
pod's preemption on the same node displaces it (``Attempt.cleared_nominations``).

Every attempt is returned as an :class:`Attempt` (plain data): the drivers turn it into events, log
lines, metrics or the simulator's report. Nothing here talks to the API server.
"""

from __future__ import annotations

import dataclasses
import random
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from policyscheduler.cycle.cache import ClusterCache
from policyscheduler.cycle.events import ClusterEvent, Interest
from policyscheduler.cycle.preemption import Nominated, Preemption, Victim, fits_on, preempt
from policyscheduler.cycle.queue import QueuedPod, SchedulingQueue
from policyscheduler.kobjects import is_terminating, pod_key, scheduler_name
from policyscheduler.kobjects import priority as pod_priority
from policyscheduler.state.whatif import pods_added

if TYPE_CHECKING:
    from policyscheduler.compiler import PolicySet
    from policyscheduler.evaluation import Decision, Evaluator, NodeVerdict
    from policyscheduler.state import ClusterSnapshot

__all__ = ["Attempt", "Cycle", "SCHEDULED", "UNSCHEDULABLE", "ERROR", "SKIPPED"]

SCHEDULED = "scheduled"
UNSCHEDULABLE = "unschedulable"
ERROR = "error"
SKIPPED = "skipped"
_EVICTING_KEPT = 10_000
"""Victims remembered for "wait for the terminating victim" (a victim is gone within its grace period)."""


@dataclasses.dataclass(frozen=True)
class Attempt:
    """One scheduling attempt of one pod.

    ``result`` is ``scheduled`` (``node`` chosen, assumed and handed to the binder), ``unschedulable``
    (``decision.message`` says why), ``error`` (``error`` says what broke; the pod backs off) or
    ``skipped`` (the pod is being deleted). ``queue`` is where a failed pod went (``unschedulable``,
    ``backoff``, ``active``, or ``gone`` when it was deleted meanwhile). ``reused``: the decision of the
    previous attempt was reused without evaluating. ``duration``: seconds spent in the cycle.

    Preemption (all plain data, for the live side's API writes and for ``simulate``):

    * ``nominated_node``: the node this attempt's preemption nominated the pod to (set
      ``status.nominatedNodeName`` to it); ``victims``: the pods to evict there (each: namespace, name,
      uid, node, priority, whether it breaks a PDB) -- give each the ``DisruptionTarget`` condition,
      delete it and post its ``Preempted`` event.
    * ``clear_nomination``: preemption ran and found no node; a nominatedNodeName the pod has must be
      cleared (kube overrides it with "").
    * ``cleared_nominations``: ``namespace/name`` of lower-priority pods that were nominated to
      ``nominated_node`` and no longer are (clear their nominatedNodeName).
    * ``preemption``: the whole PostFilter outcome (candidates, ties, per-node reasons), or None when
      preemption did not run. ``decision.message`` already carries its ``preemption: ...`` suffix.
    * ``from_nomination``: the pod was placed on its nominated node, tried first without scoring.
    """

    entry: QueuedPod
    pod: dict[str, Any]
    result: str
    decision: Decision | None
    node: str | None
    duration: float
    reused: bool = False
    queue: str | None = None
    error: str | None = None
    nodes: int = 0
    nominated_node: str | None = None
    victims: tuple[Victim, ...] = ()
    clear_nomination: bool = False
    cleared_nominations: tuple[str, ...] = ()
    preemption: Preemption | None = None
    from_nomination: bool = False

    @property
    def key(self) -> str:
        """``namespace/name`` of the pod."""
        return pod_key(self.pod)


class Cycle:
    """The queue, the cache, an evaluator and the policy set(s) in force, driven one pod at a time.

    ``policy_set``: one set for every pod, or a mapping scheduler name -> set (profiles; see the module
    docstring). ``binder(attempt)`` is called for every scheduled attempt, after the assume; it may bind
    asynchronously and must eventually call :meth:`binding_succeeded` or :meth:`binding_failed`.
    """

    def __init__(
        self,
        queue: SchedulingQueue,
        cache: ClusterCache,
        evaluator: Evaluator,
        policy_set: PolicySet | Mapping[str, PolicySet],
        binder: Callable[[Attempt], None],
        *,
        rng: random.Random | None = None,
        timer: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.queue = queue
        self.cache = cache
        self.evaluator = evaluator
        if isinstance(policy_set, Mapping):
            if not policy_set:
                raise ValueError("a cycle needs at least one profile")
            self._sets: dict[str, PolicySet] = dict(policy_set)
            self._profiles = True
        else:
            self._sets = {"": policy_set}  # "" is no scheduler name: every pod falls back to it
            self._profiles = False
        self._fallback = next(iter(self._sets))
        self.binder = binder
        self.rng = rng if rng is not None else random.Random()
        self._timer = timer
        self._policy_lock = threading.Lock()
        self._nominated: dict[str, Nominated] = {}
        self._evicting: dict[str, None] = {}  # victims chosen so far, oldest first (bounded)

    @property
    def policy_set(self) -> PolicySet:
        """The policy set the next attempt uses (with profiles: the first profile's)."""
        return self._sets[self._fallback]

    @property
    def policy_sets(self) -> dict[str, PolicySet]:
        """Scheduler name -> the set in force (empty without profiles)."""
        return dict(self._sets) if self._profiles else {}

    def policy_set_for(self, pod: Mapping[str, Any]) -> PolicySet:
        """The set that decides ``pod``: its profile's, else the first one."""
        sets = self._sets
        found = sets.get(scheduler_name(pod))
        return found if found is not None else sets[self._fallback]

    def set_policy_set(self, policy_set: PolicySet, profile: str | None = None) -> int:
        """Swap in a reloaded policy set (of ``profile``; default the first/only one); the unschedulable pods
        of that profile (every pod, without profiles) get another chance. Returns how many moved."""
        name = self._fallback if profile is None else profile
        if name not in self._sets:
            raise KeyError(f"no profile {profile!r}")
        with self._policy_lock:
            changed = policy_set.digest != self._sets[name].digest
            self._sets = {**self._sets, name: policy_set}  # a new dict: readers never see one mid-update
        if not changed:
            return 0
        return self.queue.move_all("PolicyReloaded", name if self._profiles else None)

    @property
    def nominated(self) -> dict[str, str]:
        """``namespace/name`` -> nominated node of every pod the cycle holds a node for."""
        return {key: n.node for key, n in self._nominated.items()}

    def forget_nomination(self, key: str) -> bool:
        """Drop the nomination of pod ``namespace/name`` (deleted, or bound by someone else); True if it had one."""
        return self._nominated.pop(key, None) is not None

    def schedule_one(self, timeout: float | None = 0.0) -> Attempt | None:
        """Run one cycle; None when no pod was ready within ``timeout`` seconds (see the queue's pop)."""
        entry = self.queue.pop(timeout)
        if entry is None:
            return None
        return self.attempt(entry)

    def attempt(self, entry: QueuedPod) -> Attempt:
        """One cycle for a popped ``entry``."""
        started = self._timer()
        pod = entry.pod
        if is_terminating(pod):
            self.queue.done(entry)
            return Attempt(entry, pod, SKIPPED, None, None, self._timer() - started)
        policy_set = self.policy_set_for(pod)
        key = pod_key(pod)
        priority = pod_priority(pod)
        whatif = getattr(self.evaluator, "filter_nodes", None) is not None
        preemption: Preemption | None = None
        from_nomination = False
        try:
            snapshot = self.cache.snapshot()
            generation = self.cache.generation
            if self._nominated:
                self._prune_nominations()
            own = self._own_nomination(key, pod, priority, entry.key)
            others = [n for k, n in self._nominated.items() if k != key and n.priority >= priority]
            reused = (entry.last_decision is not None and entry.last_generation == generation
                      and entry.last_pod is pod and entry.last_digest == policy_set.digest
                      and not self._nominated and own is None)
            decision = None
            if reused:
                decision = entry.last_decision
            elif own is not None and whatif:
                decision = self._try_nominated(policy_set, snapshot, pod, own.node, others)
                from_nomination = decision is not None
            if decision is None:
                held = self._held(policy_set, snapshot, pod, others) if others and whatif else None
                if held:
                    decision = self.evaluator.evaluate(policy_set, snapshot, pod, rng=self.rng,  # type: ignore[call-arg]
                                                       rejected=held)
                else:
                    decision = self.evaluator.evaluate(policy_set, snapshot, pod, rng=self.rng)
            if decision.node is None and whatif and not reused and snapshot.nodes:  # no nodes: no PostFilter in kube
                preemption = preempt(self.evaluator, policy_set, snapshot, pod, decision, others,  # type: ignore[arg-type]
                                     self.rng, own_node=own.node if own is not None else None,
                                     evicting=self._evicting)
                if preemption.message:
                    decision = dataclasses.replace(decision, message=f"{decision.message} {preemption.message}")
                generation = self.cache.generation  # the what-ifs moved it; the state is the same
            nodes = len(snapshot.nodes)
        except Exception as err:  # noqa: BLE001 - one pod must never stop the loop; it backs off and is reported
            where = self.queue.add_backoff(entry)
            entry.last_error = f"{type(err).__name__}: {err}"
            return Attempt(entry, pod, ERROR, None, None, self._timer() - started, queue=where, error=entry.last_error)
        entry.last_generation, entry.last_pod, entry.last_digest = generation, pod, policy_set.digest
        entry.last_decision = decision if decision.node is None else None
        if decision.node is None:
            if not reused or entry.interest is None:
                try:
                    entry.interest = Interest.of(decision, policy_set)
                except Exception:  # noqa: BLE001 - no interest record: any event moves the pod
                    entry.interest = None
            nominated_node, cleared, clear = self._nominate(key, pod, priority, own, preemption, entry.key)
            where = self.queue.add_unschedulable(entry)
            return Attempt(entry, pod, UNSCHEDULABLE, decision, None, self._timer() - started,
                           reused=reused, queue=where, nodes=nodes, nominated_node=nominated_node,
                           victims=preemption.victims if preemption is not None else (),
                           clear_nomination=clear, cleared_nominations=cleared, preemption=preemption)
        self._nominated.pop(key, None)
        self.cache.assume(pod, decision.node)
        entry.interest = None
        self.queue.binding(entry)
        attempt = Attempt(entry, pod, SCHEDULED, decision, decision.node, self._timer() - started, nodes=nodes,
                          from_nomination=from_nomination)
        self.binder(attempt)
        return attempt

    # -- nominated pods ---------------------------------------------------------------------------------

    def _prune_nominations(self) -> None:
        """Drop the nominations of pods no longer in the queue (deleted, or bound by someone else)."""
        queue = self.queue
        for key in [k for k, n in self._nominated.items() if n.queue_key is not None and n.queue_key not in queue]:
            del self._nominated[key]

    def _own_nomination(self, key: str, pod: dict[str, Any], priority: int, queue_key: Any) -> Nominated | None:
        """The pod's nomination: the cycle's own record, else ``status.nominatedNodeName`` (set by an
        earlier run of this scheduler, or by kube-scheduler) -- adopted, as kube's nominator does."""
        known = self._nominated.get(key)
        if known is not None:
            if known.pod is not pod:
                known = self._nominated[key] = Nominated(pod, known.node, priority, queue_key)
            return known
        status = pod.get("status")
        node = status.get("nominatedNodeName") if isinstance(status, Mapping) else None
        if isinstance(node, str) and node:
            known = self._nominated[key] = Nominated(pod, node, priority, queue_key)
        return known

    def _try_nominated(self, policy_set: PolicySet, snapshot: ClusterSnapshot, pod: dict[str, Any], node: str,
                       others: list[Nominated]) -> Decision | None:
        """kube evaluates the nominated node first and takes it, unscored, when the filters pass there
        (with the other nominated pods of priority >= the pod's): that decision, or None."""
        from policyscheduler.evaluation import Decision

        slot = snapshot.state.slot_of(node)
        if slot is None or fits_on(self.evaluator, policy_set, snapshot, pod, others, slot, node) is not None:  # type: ignore[arg-type]
            return None
        return Decision(pod_key(pod), node, {}, (node,), {}, {}, (node,), None, None, policy_set.digest)

    def _held(self, policy_set: PolicySet, snapshot: ClusterSnapshot, pod: dict[str, Any],
              others: list[Nominated]) -> dict[int, NodeVerdict]:
        """The nodes whose room is held by nominated pods of priority >= the pod's: each node with such
        pods is filtered with them placed there; where the pod then fails, that is its verdict."""
        by_node: dict[str, list[Nominated]] = {}
        for n in others:
            by_node.setdefault(n.node, []).append(n)
        held: dict[int, NodeVerdict] = {}
        state = snapshot.state
        for node, noms in by_node.items():
            slot = state.slot_of(node)
            if slot is None:
                continue
            with pods_added(state, [(snapshot.pod_record(n.pod), node) for n in noms]) as added:
                if not added:
                    continue
                verdict = self.evaluator.filter_nodes(policy_set, snapshot, pod, [slot])[0]  # type: ignore[attr-defined]
            if verdict is not None:
                held[slot] = verdict
        return held

    def _nominate(self, key: str, pod: dict[str, Any], priority: int, own: Nominated | None,
                  preemption: Preemption | None, queue_key: Any) -> tuple[str | None, tuple[str, ...], bool]:
        """Record a preemption's outcome: (nominated node, nominations displaced, own one cleared)."""
        if preemption is None:
            return None, (), False
        node = preemption.node
        if node is None:
            if not preemption.eligible:
                return None, (), False  # kube leaves the nomination as it is
            self._nominated.pop(key, None)
            return None, (), own is not None
        self._nominated[key] = Nominated(pod, node, priority, queue_key)
        for victim in preemption.victims:
            self._evicting[victim.key] = None
        while len(self._evicting) > _EVICTING_KEPT:
            del self._evicting[next(iter(self._evicting))]
        cleared = tuple(k for k, n in self._nominated.items() if n.node == node and n.priority < priority)
        for k in cleared:
            del self._nominated[k]
        return node, cleared, False

    # -- the binder's answers --------------------------------------------------------------------------

    def binding_succeeded(self, attempt: Attempt) -> None:
        """The API server accepted the binding: the pod leaves the queue (the watch will confirm it)."""
        self.queue.done(attempt.entry)

    def binding_failed(self, attempt: Attempt, *, retry: bool, reason: str) -> str:
        """The binding failed: forget the assumption (its resources are free again, which may help
        the unschedulable pods) and, when ``retry``, try the pod again after backoff; else (404 pod
        gone, 409 already bound) let it go. Returns where the pod went."""
        self.cache.forget(attempt.pod)
        attempt.entry.last_error = reason
        self.queue.move(ClusterEvent.assigned_pod("AssignedPodDelete", attempt.node))
        if retry:
            return self.queue.add_backoff(attempt.entry)
        self.queue.done(attempt.entry)
        return "gone"
