"""The live scheduler: watches feed the cache and the queue, one loop drives the cycle, binds go async.

Threads: one reflector per watched resource (:mod:`policyscheduler.kube.watch`) calls the watch handler,
:class:`~policyscheduler.app.watching.WatchRouter` (:mod:`.watching`: what goes to the cache, the queue, the
volume binder and the shadows, and which cluster events move pods); the scheduling loop pops and decides
(only while leading and once the first lists arrived); the binder's pool binds; the recorder's pool writes
events and conditions; the elector renews the lease; the status server answers probes.

Which pods are ours: ``spec.schedulerName`` equal to our name (the API server defaults it to
``default-scheduler``), not bound, not finished, not being deleted. Other pods are only *read* (bound
ones occupy their nodes); nothing is ever written to them.

Cluster events (:mod:`policyscheduler.cycle.events`, raised by :mod:`.watching`), each checked against
what the rules that rejected a pod read: node added (moves every pod); node updated (the facets that changed: labels,
taints, unschedulable, allocatable, images, annotations -- heartbeats change none and move nothing); node
deleted; an assigned pod added, changed (labels, resources) or deleted on its node, with its direction
(added: the node's pod aggregates grew; deleted: they shrank; relabelled: none moved), so a rule proven
not to be helped by growth (resource fit, host ports) is not retried on a pod added; a failed bind
(resources freed); a namespace's labels changed; policies reloaded (every pod of that profile; the sources,
the reload worker and its reporting are :mod:`.sources` and :mod:`.reload_report`).

**Claims before the pod** (:mod:`.volumes`, kube's VolumeBinding Reserve/PreBind): a pod with
PersistentVolumeClaims goes from the cycle to the :class:`~policyscheduler.app.volumes.VolumeBinder` with
the plan of ``options.volume_planner`` (which claims bind to which PV, which are provisioned on the node);
it reaches the pod binder only once all its claims are bound, and fails back to the queue (backoff, with
kube's ``running PreBind plugin "VolumeBinding": ...`` FailedScheduling) otherwise. Pods without claims go
to the pod binder at once, as before. The watches of PersistentVolumes, claims and nodes (and pod
deletions) drive its waits; PVs, claims, StorageClasses, CSINodes and CSIDrivers also go to the cache.

**Once bound, never decided or reported again.** A pod handed to the binder is *binding*; once its bind
succeeded (or found it placed: 409, or gone: 404) it is *settled* until the watch shows it bound or deleted.
A watch update of a binding or settled pod that still shows no node (an update made before the bind, e.g.
a label patch right after creation) never queues it again -- kube-scheduler skips updates of assumed pods
the same way. The event recorders ask :meth:`LiveScheduler._still_pending` before every failure write
(and retry), and a successful bind or a deletion cancels the pod's queued failure writes: no
``PodScheduled=False`` or ``FailedScheduling`` lands on a bound pod (kube/events.py).

Profiles (``run --config`` with several): one process, one cache, one queue, one loop, one lease (named
after the first profile unless ``lease_name`` says otherwise), one /metrics; per profile its policy set
(the cycle picks it by ``spec.schedulerName``), its policy sources reloading independently, its event
reporter (``reportingController`` = its name), the ``profile`` field of its log lines and the ``profile``
label of its metrics. Shadow profiles (:mod:`.shadow`) schedule nothing: they judge another scheduler's
placements from the watch handler.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from policyscheduler.app.configz import effective_config, status_server
from policyscheduler.app.decisions import decision_record
from policyscheduler.app.decisions import log_decision as _log_decision
from policyscheduler.app.heap import REFREEZE_AFTER, freeze_heap, relax_collector
from policyscheduler.app.options import Options, RunProfile
from policyscheduler.app.pods import pod_queue_key, scheduler_name
from policyscheduler.app.preemption import PreemptionWriter
from policyscheduler.app.shadow import ShadowProfile, Shadows
from policyscheduler.app.volumes import VolumeBinder, default_planner, pod_claim_names
from policyscheduler.app.watching import WatchRouter
from policyscheduler.cycle import (
    ERROR,
    UNSCHEDULABLE,
    Attempt,
    ClusterCache,
    Cycle,
    QueuedPod,
    SchedulingQueue,
)
from policyscheduler.cycle.gates import gate_log_fields
from policyscheduler.evaluation import make_evaluator
from policyscheduler.kube.binder import Binder
from policyscheduler.kube.events import EventRecorder
from policyscheduler.kube.lease import LeaderElector
from policyscheduler.kube.logs import flush as flush_logs
from policyscheduler.kube.metrics import SchedulerMetrics
from policyscheduler.kube.rest import RestClient
from policyscheduler.kube.server import StatusServer
from policyscheduler.kube.watch import RESOURCES, Reflector, wait_synced

if TYPE_CHECKING:
    from policyscheduler.app.host import PolicyWatch
    from policyscheduler.compiler import PolicySet
    from policyscheduler.evaluation import Evaluator

__all__ = ["WATCH_BATCH_BACKLOG", "WATCH_BATCH_SECONDS", "LiveScheduler"]

log = logging.getLogger("policyscheduler.scheduler")

WATCH_BATCH_SECONDS = 0.016
"""How long a busy scheduler's Pod watch waits between reads (see ``LiveScheduler._watch_pause``).

At 4 ms the watch of a 1,000-node burst still woke about once per event (a bind comes back every 4-7 ms):
4.5 context switches per pod in the watch thread, each wake-up taking the GIL from the scheduling loop.
At 16 ms it reads a few events per wake-up: a third of the watch thread's switches, and the loop's and
binder's halve (end to end, heterogeneous at 1,000 nodes: scheduler CPU per pod -10%, pods/s +7%)."""

WATCH_BATCH_BACKLOG = 2
"""Pods in the active queue from which the Pod watch batches its reads: a backlog, not the one pod just
added (in a paced stream of pods that one is decided at once, and the next pod must be seen at once)."""


class LiveScheduler:
    """See the module docstring. :meth:`start`, then :meth:`wait`, then :meth:`shutdown`."""

    def __init__(self, client: RestClient, policy_set: PolicySet | None, evaluator: Evaluator, options: Options,
                 *, engine: str = "", policies: PolicyWatch | None = None,
                 profiles: Sequence[RunProfile] | None = None) -> None:
        """One profile (``options.scheduler_name`` with ``policy_set`` and ``policies``), or ``profiles``."""
        self.client = client
        self.options = options
        self.engine = engine
        if profiles is None:
            if policy_set is None:
                raise ValueError("a policy set or profiles are needed")
            profiles = [RunProfile(options.scheduler_name, policy_set, policies)]
        if not profiles or len({p.name for p in profiles}) != len(profiles):
            raise ValueError("profiles need distinct scheduler names")
        self.profiles = list(profiles)
        self.profile_names = [p.name for p in self.profiles]
        scheduling = [p for p in self.profiles if p.shadows is None]
        self.scheduling_names = frozenset(p.name for p in scheduling)
        self.queue = SchedulingQueue(on_gate=self._gate_changed)  # gated pods: cycle/gates.py
        self.cache = ClusterCache()
        self.recorders = {p.name: EventRecorder(client, p.name, busy=self._busy, pending=self._still_pending)
                          for p in self.profiles}
        self.recorder = self.recorders[self.profile_names[0]]
        self.binder: Binder[Attempt] = Binder(client, lambda: self.cycle, lanes=options.bind_lanes,
                                              on_done=self._bind_done)
        self.volume_planner = options.volume_planner or default_planner()
        """Plans a pod's claim work on its node (app/volumes.py: the plan the cycle's assume made)."""
        self.volumes: VolumeBinder[Attempt] = VolumeBinder(client, bind=self._bind_pod, failed=self._volumes_failed,
                                                           may_bind=self._may_schedule, assume=self.cache.upsert,
                                                           timeout=options.volume_bind_timeout)
        sets: Any = ({p.name: p.policy_set for p in scheduling} if scheduling
                     else self.profiles[0].policy_set)  # shadows only: the cycle never gets a pod
        self.cycle = Cycle(self.queue, self.cache, evaluator, sets, self._hand_to_binder,
                           rng=random.Random(options.seed))
        self.lease_name = options.lease_name or self.profile_names[0]
        self.elector: LeaderElector | None = None
        if options.leader_elect:
            self.elector = LeaderElector(client, options.lease_namespace, self.lease_name,
                                         lease_duration=options.lease_duration,
                                         renew_deadline=options.renew_deadline,
                                         retry_period=options.retry_period,
                                         on_started_leading=self._wake_loop,
                                         on_stopped_leading=self._lost_lease)
        self.metrics = SchedulerMetrics(self.profile_names[0], pending=self.queue.pending,
                                        cache=self.cache.counts, leader=lambda: self.leading,
                                        policy_digest=self.digests, profiles=self.profile_names,
                                        lease_name=self.lease_name, queue=self.queue,
                                        watch_stats=lambda: {r.kind: r.stats for r in self.reflectors},
                                        binds_in_flight=lambda: self.binder.in_flight)
        self.preemptions = PreemptionWriter(client, self.metrics, may_write=self._may_schedule)  # app/preemption.py
        shadow_profiles = [ShadowProfile(p.name, p.shadows, p.policy_set, self.recorders[p.name])
                           for p in self.profiles if p.shadows is not None]
        self.shadows: Shadows | None = None
        if shadow_profiles:
            own = bool(scheduling)  # the scheduling loop takes the shared cache's snapshots: judge in a copy
            # With a scheduling loop beside it the shadow judges in the watch thread while the loop evaluates:
            # it gets an engine of its own (an engine's caches are not shared across threads).
            judge = make_evaluator(engine or "vector") if own else evaluator
            self.shadows = Shadows(shadow_profiles, judge, ClusterCache() if own else self.cache, own_cache=own,
                                   metrics=self.metrics, rng=random.Random(options.seed),
                                   active=lambda: self.leading and all(r.synced.is_set() for r in self.reflectors))
        self._shadow_by_name = {p.name: p for p in shadow_profiles}
        self._binding: set[str] = set()
        """Pods handed to the binder whose bind has not answered yet (keys)."""
        self._settled: set[str] = set()
        """Pods our bind placed (or found placed) that the watch has not shown bound or deleted yet."""
        self.watch = WatchRouter(cache=self.cache, queue=self.queue, volumes=self.volumes, shadows=self.shadows,
                                 metrics=self.metrics, scheduling_names=self.scheduling_names,
                                 recorder_of=self._recorder_of, binding=self._binding, settled=self._settled)
        """The reflectors' handler: routes watched objects to the cache, queue, volume binder (app/watching.py)."""
        self.reflectors = [Reflector(client, kind, self.watch, pause=self._watch_pause if kind == "Pod" else None)
                           for kind in RESOURCES]
        self.sources = [(p.name, p.sources) for p in self.profiles if p.sources is not None]
        for name, sources in self.sources:  # watched sources + hot reload (app/sources.py)
            sources.attach(self, name)
        self.server: StatusServer | None = None
        if options.secure_serving is not None or options.bind_address is not None:
            self.server = status_server(options, client, self.metrics.registry, self._health, self._ready,
                                        lambda: effective_config(options, self.profiles, self.digests()))
        self._stopping = threading.Event()
        self._done = threading.Event()
        self._wake = threading.Event()
        self._state_built = threading.Event()
        """Set once the loop put the first lists into the cluster state (leading or not): /readyz waits for it."""
        self._loop_thread = threading.Thread(target=self._loop, name="scheduling-loop", daemon=True)
        self._warned = 0
        self.exit_code = 0
        self.scheduled = 0
        self.failures = 0

    # -- profiles -------------------------------------------------------------------------------------------

    def policy_set_of(self, profile: str) -> PolicySet:
        """The set in force for ``profile`` (scheduling or shadow)."""
        shadow = self._shadow_by_name.get(profile)
        if shadow is not None:
            return shadow.policy_set
        sets = self.cycle.policy_sets
        return sets[profile] if sets else self.cycle.policy_set

    def set_profile_policy(self, profile: str, policy_set: PolicySet) -> int:
        """A reload of ``profile``'s sources: swap its set; only its unschedulable pods move. How many moved."""
        shadow = self._shadow_by_name.get(profile)
        if shadow is not None:
            return shadow.set_policy_set(policy_set)
        return self.cycle.set_policy_set(policy_set, profile)

    def digests(self) -> dict[str, str]:
        """Profile -> digest of the set in force (``policyscheduler_policy_info``)."""
        return {name: self.policy_set_of(name).digest for name in self.profile_names}

    # -- lifecycle -----------------------------------------------------------------------------------------

    @property
    def leading(self) -> bool:
        """True when this replica may schedule (always, without leader election)."""
        return self.elector is None or self.elector.is_leader

    def start(self) -> None:
        """Start watches, the status server, the elector and the loop (returns at once)."""
        relax_collector()  # before the first lists are decoded and put into the cluster state
        if self.server is not None:
            self.server.start()
        for reflector in self.reflectors:
            reflector.start()
        if self.elector is not None:
            self.elector.start()
        for _, sources in self.sources:
            sources.start()
        self._loop_thread.start()

    def wait_synced(self, timeout: float) -> bool:
        """True once every watched resource delivered its first list."""
        return wait_synced(self.reflectors, timeout)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the scheduler stopped (lost lease or :meth:`shutdown`); True if it did."""
        return self._done.wait(timeout)

    def stop_scheduling(self) -> None:
        """Take no more pods (SIGTERM, lost lease): the loop ends after the attempt in hand
        (:mod:`.handover` then bounds the rest of the shutdown); pods waiting for their claims are dropped
        (their claims stay as written: the next leader finishes or retries them)."""
        self._stopping.set()
        self.queue.close()
        self._wake.set()
        self.volumes.cancel_all()

    def join_loop(self, timeout: float) -> bool:
        """Wait up to ``timeout`` for the scheduling loop to end; True when it did."""
        if self._loop_thread.is_alive():
            self._loop_thread.join(timeout)
        return not self._loop_thread.is_alive()

    def shutdown(self, *, bind_timeout: float = 30.0) -> int:
        """SIGTERM: stop taking pods, finish in-flight binds, release the lease, stop. Exit status."""
        self._stopping.set()
        self.queue.close()
        self._wake.set()
        self.volumes.shutdown()
        for _, sources in self.sources:
            sources.stop()
        if self._loop_thread.is_alive():
            self._loop_thread.join(timeout=60)
        drained = self.binder.drain(bind_timeout)
        if not drained:
            log.error("shutdown: %d binds still in flight after %.0fs", self.binder.in_flight, bind_timeout)
            self.exit_code = self.exit_code or 1
        self.preemptions.shutdown(wait=True)
        for recorder in self.recorders.values():
            recorder.shutdown(wait=True)
        if self.elector is not None:
            self.elector.release()
        for reflector in self.reflectors:
            reflector.stop()
        if self.server is not None:
            self.server.stop()
        self.binder.shutdown()
        self._done.set()
        return self.exit_code

    def _lost_lease(self) -> None:
        """A leader that cannot renew stops scheduling at once (then exits, as kube-scheduler does)."""
        log.error("leader election lost: scheduling stopped")
        self.exit_code = 1
        self._stopping.set()
        self.queue.close()
        self.volumes.cancel_all()
        self._done.set()

    def _busy(self) -> bool:
        """Pods waiting to be decided or bound: the low-priority event writer holds back."""
        return self.binder.in_flight > 0 or self.queue.active_count() > 0

    def _watch_pause(self) -> float:
        """Seconds the Pod watch waits before its next read: while a backlog waits in the active queue (a
        burst, :data:`WATCH_BATCH_BACKLOG` pods or more), :data:`WATCH_BATCH_SECONDS`, so its events (mostly
        our own binds coming back) are read and handled in batches rather than one wake-up each -- the
        loop has pods to decide meanwhile. Otherwise none, even with binds in flight or the one pod just
        added waiting: a pod created then must be seen at once (at 50 pods/s a pause there added up to its
        length to a third of the pods, which is what p99 latency measures)."""
        return WATCH_BATCH_SECONDS if self.queue.active_count() >= WATCH_BATCH_BACKLOG else 0.0

    def _wake_loop(self) -> None:
        self._wake.set()

    def _health(self) -> tuple[bool, str]:
        if self.elector is not None and self.elector.is_leader:
            late = self.elector.seconds_since_renew()
            if late > self.options.lease_duration:
                return False, f"leader election: last renewal {late:.0f}s ago"
        return (True, "ok") if not self._done.is_set() else (False, "stopped")

    def _ready(self) -> tuple[bool, str]:
        missing = [r.kind for r in self.reflectors if not r.synced.is_set()]
        if missing:
            return False, "waiting for the first list of " + ", ".join(missing)
        if not self._state_built.is_set():
            return False, "building the cluster state from the first lists"
        return True, "ok"

    # -- the loop -------------------------------------------------------------------------------------------

    def _may_schedule(self) -> bool:
        return not self._stopping.is_set() and self.leading

    def _apply_waiting(self) -> None:
        try:
            self.cache.snapshot()
        except Exception:
            log.exception("scheduling loop: applying watched changes failed")

    def _loop(self) -> None:
        since_freeze = 0  # attempts since the heap was last frozen
        built = False  # the first lists are in the cluster state (and the heap frozen)
        # shadows alone judge in the shared cache from the watch thread: then the loop never touches it
        applies = bool(self.scheduling_names)
        while not self._stopping.is_set():
            synced = all(r.synced.is_set() for r in self.reflectors)
            if synced and not built:  # first lists in, leading or not (standbys are warm too)
                built = True
                try:
                    if applies:
                        self.cache.snapshot()  # the listed objects into the cluster state, then out of the GC's way
                    freeze_heap(first=True)
                except Exception:
                    log.exception("scheduling loop: building the cluster state failed")
                self._state_built.set()  # /readyz: kube-scheduler's sched-handler-sync (its cache holds the lists)
            if not self.leading or not synced:
                if applies and self.cache.pending:
                    # fold the watched objects into the state as they come (the first lists arrive a page at
                    # a time), so they are not all held as raw objects until the last list is in; a
                    # standby's cache stays current the same way instead of piling up changes
                    self._apply_waiting()
                self._wake.wait(0.2)
                self._wake.clear()
                continue
            try:
                # changes the watches recorded (our binds confirmed, ...) are applied by the next attempt; when
                # no pod comes, the loop applies them itself within a moment, so the first pod after a burst
                # does not pay for the whole burst's confirmations
                pending = applies and self.cache.pending > 0
                attempt = self.cycle.schedule_one(timeout=0.05 if pending else 0.5)
                if attempt is None:
                    if pending:
                        self.cache.snapshot()
                    elif since_freeze >= REFREEZE_AFTER:
                        since_freeze = 0  # idle after real work: collect now, not in the next burst
                        freeze_heap(first=False)
                    continue
                self._report(attempt)
                since_freeze += 1
            except Exception:
                log.exception("scheduling loop: unexpected error")
                time.sleep(0.1)

    def _hand_to_binder(self, attempt: Attempt) -> None:
        if not self._may_schedule():  # lost the lease (or stopping) between decision and bind
            self.cycle.binding_failed(attempt, retry=True, reason="not leading")
            return
        self._binding.add(pod_queue_key(attempt.pod))
        if pod_claim_names(attempt.pod):  # claims first (app/volumes.py), then the pod
            try:
                plan = self.volume_planner(attempt.pod, str(attempt.node), self.cache.snapshot())
            except Exception as err:  # a planner bug fails this pod, not the loop
                log.exception("planning the volumes of %s failed", attempt.key)
                self._volumes_failed(attempt, f'running Reserve plugin "VolumeBinding": {type(err).__name__}: {err}',
                                     True)
                return
            self.volumes.reserve(attempt, plan)
            return
        self._bind_pod(attempt)

    def _bind_pod(self, attempt: Attempt) -> None:
        """Bind the pod (its claims are bound already: the volume binder hands over on one of its threads)
        once no failure write about it is on the wire (``_binding`` holds it: none starts any more), so
        that a ``PodScheduled=False`` patch never lands after the bind."""
        self._recorder_of(attempt.pod).after_failure_writes(attempt.pod, lambda: self.binder.bind(attempt))

    def _volumes_failed(self, attempt: Attempt, message: str | None, retry: bool) -> None:
        """Reserve or PreBind of the pod's claims failed (or was dropped: ``message`` None): forget the
        pod's assumption, retry it after backoff (``retry``), and post kube's FailedScheduling text."""
        key = pod_queue_key(attempt.pod)
        self.cycle.binding_failed(attempt, retry=retry, reason=message or "volume binding dropped")
        self._binding.discard(key)
        profile = self._profile_of(attempt.pod)
        if message is None:
            return
        self.failures += 1
        digest = attempt.decision.policy_digest[:12] if attempt.decision is not None else None
        _log_decision(logging.WARNING, "volume binding failed",
                      {"pod": attempt.key, "node": attempt.node, "error": message, "policy_digest": digest,
                       "profile": profile})
        self.recorders.get(profile, self.recorder).failed(attempt.pod, message, reason="SchedulerError",
                                                          digest=digest)

    def _still_pending(self, pod: Mapping[str, Any]) -> bool:
        """Is a failure write about ``pod`` still true? Only while the pod waits in our queue (the watch
        removes bound and deleted pods from it), is not being bound and was not placed by our bind."""
        key = pod_queue_key(pod)
        return key not in self._settled and key not in self._binding and key in self.queue

    def _recorder_of(self, pod: Mapping[str, Any]) -> EventRecorder:
        return self.recorders.get(self._profile_of(pod), self.recorder)

    def _report(self, attempt: Attempt) -> None:
        """Metrics, events, condition and the one log line of a decision."""
        profile = self._profile_of(attempt.pod)
        result = attempt.result
        self.metrics.attempt(result, attempt.duration, profile, evaluated=not attempt.reused)
        decision = attempt.decision
        # the set's digest is only the record's fallback when there is no decision: look it up only then
        record = decision_record(attempt, decision.policy_digest if decision is not None
                                 else self.cycle.policy_set_for(attempt.pod).digest)
        record["profile"] = profile
        _log_decision(logging.INFO, record["result"], record)
        self.preemptions.submit(attempt, profile)  # evict victims, (un)nominate: off the loop
        if result == UNSCHEDULABLE:
            recorder = self.recorders.get(profile, self.recorder)
            self.failures += 1
            assert decision is not None
            # a reused decision (nothing changed since) counts in the event series; its pod object predates
            # the condition patch of the first one, which says the same: no second patch
            recorder.failed(attempt.pod, decision.message or "", reason="Unschedulable",
                            digest=decision.policy_digest, condition=not attempt.reused)
        elif result == ERROR:
            recorder = self.recorders.get(profile, self.recorder)
            self.failures += 1
            recorder.failed(attempt.pod, f"scheduler error: {attempt.error}", reason="SchedulerError",
                            digest=record["policy_digest"])
        warnings = self.cache.warnings
        if len(warnings) > self._warned:
            for warning in warnings[self._warned:]:
                log.warning("malformed object: %s", warning)
            self._warned = len(warnings)
        if attempt.node is None and not self.queue.active_count():  # no bind follows, no pod waits:
            flush_logs()  # the buffered decision lines go out now

    def _gate_changed(self, entry: QueuedPod, gated: bool) -> None:
        """A pod entered or left the gated pool: one log line (the API server wrote its condition)."""
        fields = gate_log_fields(entry.pod, entry.gates, gated)
        fields["profile"] = self._profile_of(entry.pod)
        _log_decision(logging.INFO, fields["result"], fields)

    def _profile_of(self, pod: Mapping[str, Any]) -> str:
        """The profile that decides ``pod`` (its scheduler name; the first profile for a stranger)."""
        name = scheduler_name(pod)
        return name if name in self.scheduling_names else self.profile_names[0]

    def _bind_done(self, attempt: Attempt, result: str, seconds: float, error: str | None) -> None:
        digest = attempt.decision.policy_digest[:12] if attempt.decision is not None else None
        profile = self._profile_of(attempt.pod)
        self.metrics.bound(result, seconds, profile)
        recorder = self.recorders.get(profile, self.recorder)
        fields = {"pod": attempt.key, "node": attempt.node, "result": result, "bind_ms": round(seconds * 1000, 2),
                  "policy_digest": digest, "profile": profile}
        key = pod_queue_key(attempt.pod)
        if result != "error":  # placed (by us, or found placed: 409) or gone: never decided or reported again
            self._settled.add(key)
            recorder.cancel(attempt.pod)
        self._binding.discard(key)
        if result == "bound":
            self.scheduled += 1
            recorder.scheduled(attempt.pod, str(attempt.node), digest=digest)
            first = attempt.entry.initial_attempt
            if first is not None:
                self.metrics.scheduled_sli(attempt.entry.attempts, time.monotonic() - first)
            level, msg = logging.INFO, "bound"
        else:
            fields["error"] = error
            level, msg = (logging.WARNING if result == "error" else logging.INFO), "bind " + result
        _log_decision(level, msg, fields)
        if result == "error":
            recorder.failed(attempt.pod, f"Binding rejected: {error}", reason="SchedulerError", digest=digest)
        if not self.queue.active_count():  # the burst is over (no pod waits): its decision lines go out
            flush_logs()  # with its last binds, not up to 0.2 s later
