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
from policyscheduler.cycle.queue import QueuedPod, SchedulingQueue
from policyscheduler.kobjects import is_terminating, pod_key, scheduler_name

if TYPE_CHECKING:
    from policyscheduler.compiler import PolicySet
    from policyscheduler.evaluation import Decision, Evaluator

__all__ = ["Attempt", "Cycle", "SCHEDULED", "UNSCHEDULABLE", "ERROR", "SKIPPED"]

SCHEDULED = "scheduled"
UNSCHEDULABLE = "unschedulable"
ERROR = "error"
SKIPPED = "skipped"


@dataclasses.dataclass(frozen=True)
class Attempt:
    """One scheduling attempt of one pod.

    ``result`` is ``scheduled`` (``node`` chosen, assumed and handed to the binder), ``unschedulable``
    (``decision.message`` says why), ``error`` (``error`` says what broke; the pod backs off) or
    ``skipped`` (the pod is being deleted). ``queue`` is where a failed pod went (``unschedulable``,
    ``backoff``, ``active``, or ``gone`` when it was deleted meanwhile). ``reused``: the decision of the
    previous attempt was reused without evaluating. ``duration``: seconds spent in the cycle.
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
        try:
            snapshot = self.cache.snapshot()
            generation = self.cache.generation
            reused = (entry.last_decision is not None and entry.last_generation == generation
                      and entry.last_pod is pod and entry.last_digest == policy_set.digest)
            if reused:
                decision = entry.last_decision
            else:
                decision = self.evaluator.evaluate(policy_set, snapshot, pod, rng=self.rng)
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
            where = self.queue.add_unschedulable(entry)
            return Attempt(entry, pod, UNSCHEDULABLE, decision, None, self._timer() - started,
                           reused=reused, queue=where, nodes=nodes)
        self.cache.assume(pod, decision.node)
        entry.interest = None
        self.queue.binding(entry)
        attempt = Attempt(entry, pod, SCHEDULED, decision, decision.node, self._timer() - started, nodes=nodes)
        self.binder(attempt)
        return attempt

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
