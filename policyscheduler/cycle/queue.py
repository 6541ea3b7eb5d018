"""The scheduling queue: active, backoff, unschedulable and gated, as kube-scheduler keeps them.

* **active**: a heap popped in ``order`` (default kube-scheduler's PrioritySort: higher
  ``spec.priority`` first, then the earliest queue timestamp; an insertion counter makes it total).
* **backoff**: pods waiting out ``min(initial * 2**(attempts-1), max)`` after a failed attempt
  (1 s doubling to 10 s by default) before they may be popped again.
* **unschedulable**: pods no node could take. Only a cluster event that may change *that pod's*
  verdict moves it out (:meth:`SchedulingQueue.move` with a :class:`~.events.ClusterEvent`, checked
  against the pod's :class:`~.events.Interest`: which rule rejected it on which node and what those
  rules read; :meth:`SchedulingQueue.move_all` moves everyone) -- to backoff while its backoff lasts,
  else to active -- and :meth:`SchedulingQueue.flush` moves any that waited longer than
  ``max_unschedulable`` (5 minutes).
* **gated**: pods with ``spec.schedulingGates`` (kube-scheduler's PreEnqueue, :mod:`.gates`). They are
  never popped, never decided, and no cluster event or flush moves them; the update that removes the
  last gate moves the pod straight to active (it was never attempted: no backoff). ``on_gate(entry,
  gated)`` is called, outside the lock, when a pod enters (True) or leaves (False) the pool. The API
  server lets a pod's gates only be removed after creation, so a pod the queue already holds
  elsewhere never becomes gated.

A pod popped for a cycle is *in flight* until the cycle hands it back (:meth:`add_unschedulable`,
:meth:`add_backoff`) or lets it go (:meth:`done`); it is *deciding* until then or until it is handed to
the binder (:meth:`binding`). Like kube-scheduler's in-flight events, the events that arrive while a pod
is deciding are kept and checked against it when it fails: one it is interested in sends it to backoff
instead of the unschedulable pool, because its verdict was computed before the event and may be stale.

Time comes from the ``clock`` parameter (seconds, monotonic), so tests and the offline simulator
decide when time passes. Thread-safe: watch threads add and move pods while the scheduling loop pops.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Hashable
from typing import Any

from policyscheduler.cycle.events import ClusterEvent, Interest
from policyscheduler.kobjects import DEFAULT_SCHEDULER, name_of, namespace_of, scheduling_gates
from policyscheduler.kobjects import priority as pod_priority
from policyscheduler.kobjects import scheduler_name as scheduler_name_of

# ``pod_priority``, ``scheduler_name_of`` and ``DEFAULT_SCHEDULER`` are policyscheduler.kobjects' facts,
# re-exported for the modules that import them from here.
__all__ = ["QueuedPod", "SchedulingQueue", "priority_order", "pod_priority", "scheduler_name_of", "QUEUES",
           "DEFAULT_SCHEDULER"]

QUEUES = ("active", "backoff", "unschedulable", "gated")
"""The names used for ``pending_pods{queue=...}``."""

Clock = Callable[[], float]

log = logging.getLogger("policyscheduler.queue")


def _concerns(event: ClusterEvent, entry: QueuedPod) -> bool:
    """True when ``event`` may change the verdict of the unschedulable ``entry``: its rules read what the
    event changed, it is of the event's profile, and of at most the event's priority."""
    return ((entry.interest is None or entry.interest.wants(event))
            and (event.profile is None or scheduler_name_of(entry.pod) == event.profile)
            and (event.max_priority is None or pod_priority(entry.pod) <= event.max_priority))


def _moved(event: str, entries: list[QueuedPod], node: str | None = None) -> None:
    """A debug line (``-v 4``) naming the pods an event sent back to be tried again: why a pod had a
    second attempt is otherwise invisible (kube-scheduler logs the same at V(5))."""
    if log.isEnabledFor(logging.DEBUG):
        names = [f"{namespace_of(e.pod)}/{name_of(e.pod)}" for e in entries[:20]]
        log.debug("queue move", extra={"fields": {"event": event, "node": node, "count": len(entries), "pods": names}})


@dataclasses.dataclass(eq=False)
class QueuedPod:
    """One pending pod and its scheduling history (the queue's ``QueuedPodInfo``).

    ``last_generation`` / ``last_decision`` remember the previous attempt: when neither the cluster
    state (its generation), the pod object nor the policy set changed since, the cycle reuses that
    decision instead of evaluating again (the answer would be the same).
    """

    key: Hashable
    pod: dict[str, Any]
    priority: int
    timestamp: float
    seq: int
    attempts: int = 0
    initial_attempt: float | None = None
    backoff_until: float = 0.0
    unschedulable_since: float = 0.0
    pop_cycle: int = 0
    last_generation: int | None = None
    last_pod: dict[str, Any] | None = None
    last_digest: str | None = None
    last_decision: Any = None
    last_error: str | None = None
    interest: Interest | None = None
    """Set by the cycle when the pod is unschedulable: which events may change its verdict (None: any)."""
    deleted: bool = False
    gates: tuple[str, ...] = ()
    """The names of its scheduling gates while it waits in the gated pool."""
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)


def priority_order(entry: QueuedPod) -> tuple[Any, ...]:
    """kube-scheduler's PrioritySort: higher priority first, then earliest queue timestamp."""
    return (-entry.priority, entry.timestamp, entry.seq)


_VOLATILE_METADATA = ("resourceVersion", "generation", "managedFields")


def scheduling_view(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod without what changes on every write but never changes a scheduling decision
    (``status``, ``metadata.resourceVersion``, ``generation``, ``managedFields``), as kube-scheduler
    compares pods before moving an unschedulable one back."""
    view = {k: v for k, v in pod.items() if k != "status"}
    meta = view.get("metadata")
    if isinstance(meta, dict):
        view["metadata"] = {k: v for k, v in meta.items() if k not in _VOLATILE_METADATA}
    return view


class SchedulingQueue:
    """See the module docstring."""

    def __init__(
        self,
        *,
        clock: Clock = time.monotonic,
        order: Callable[[QueuedPod], tuple[Any, ...]] = priority_order,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        max_unschedulable: float = 300.0,
        refresh_timestamp: bool = True,
        on_gate: Callable[[QueuedPod, bool], None] | None = None,
    ) -> None:
        self._clock = clock
        self._order = order
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_unschedulable = max_unschedulable
        self._refresh_timestamp = refresh_timestamp
        self._lock = threading.Condition()
        self._active: list[tuple[tuple[Any, ...], int, QueuedPod]] = []
        self._active_keys: dict[Hashable, QueuedPod] = {}
        self._backoff: list[tuple[float, int, QueuedPod]] = []
        self._backoff_keys: dict[Hashable, QueuedPod] = {}
        self._unschedulable: dict[Hashable, QueuedPod] = {}
        self._gated: dict[Hashable, QueuedPod] = {}
        self._on_gate = on_gate
        self._in_flight: dict[Hashable, QueuedPod] = {}
        self._deciding: dict[Hashable, QueuedPod] = {}
        self._events: list[tuple[int, ClusterEvent]] = []
        self._seq = itertools.count()
        self._cycle = 0
        self._closed = False
        self.moves: dict[str, int] = {}
        """How many pods each event name moved out of the unschedulable pool (diagnostics)."""
        self.incoming: dict[tuple[str, str], int] = {}
        """(queue, event) -> pods that entered that queue on that event (``scheduler_queue_incoming_pods_total``)."""

    def _count_in(self, entry: QueuedPod, event: str, queue: str | None = None) -> None:
        """Count ``entry`` entering ``queue`` (default: wherever ``_requeue`` just put it) on ``event``."""
        where = queue or ("backoff" if entry.key in self._backoff_keys else "active")
        self.incoming[(where, event)] = self.incoming.get((where, event), 0) + 1

    # -- bookkeeping ------------------------------------------------------------------------------

    def backoff_duration(self, attempts: int) -> float:
        """``min(initial * 2**(attempts-1), max)``; no backoff before the first attempt."""
        if attempts <= 0:
            return 0.0
        return float(min(self.initial_backoff * (2 ** min(attempts - 1, 62)), self.max_backoff))

    def _push_active(self, entry: QueuedPod) -> None:
        heapq.heappush(self._active, (self._order(entry), next(self._seq), entry))
        self._active_keys[entry.key] = entry
        self._lock.notify()

    def _push_backoff(self, entry: QueuedPod) -> None:
        heapq.heappush(self._backoff, (entry.backoff_until, next(self._seq), entry))
        self._backoff_keys[entry.key] = entry

    def _requeue(self, entry: QueuedPod, now: float) -> None:
        """Back to backoff while its backoff lasts, else straight to active."""
        if entry.backoff_until > now:
            self._push_backoff(entry)
        else:
            self._push_active(entry)

    def _find(self, key: Hashable) -> QueuedPod | None:
        return (self._active_keys.get(key) or self._backoff_keys.get(key) or self._unschedulable.get(key)
                or self._gated.get(key) or self._in_flight.get(key))

    # -- producers (watch events) -----------------------------------------------------------------

    def add(self, key: Hashable, pod: dict[str, Any], **extra: Any) -> bool:
        """Queue a new pending pod, or update the object of one already known; True when new.

        A new pod with scheduling gates goes to the gated pool; the update of a gated pod that removes
        its last gate moves it to active. An update of a pod waiting in the unschedulable pool moves it
        back when something scheduling reads changed (its new spec may fit) -- not for status-only
        updates such as our own PodScheduled=False patch, which would otherwise buy every failure a
        second attempt; an update of a pod in flight only replaces the object the cycle will requeue.
        """
        gate_change: tuple[QueuedPod, bool] | None = None
        with self._lock:
            known = self._find(key)
            now = self._clock()
            gates = scheduling_gates(pod)
            if known is not None:
                changed = scheduling_view(known.pod) != scheduling_view(pod)
                known.pod = pod
                known.priority = pod_priority(pod)
                known.deleted = False
                known.extra.update(extra)
                if key in self._gated:
                    known.gates = gates
                    if not gates:  # the last gate removed: an ordinary pending pod, never attempted
                        del self._gated[key]
                        self._requeue(known, now)
                        self._count_in(known, "UnscheduledPodUpdate")
                        self.moves["SchedulingGatesEliminated"] = self.moves.get("SchedulingGatesEliminated", 0) + 1
                        gate_change = (known, False)
                elif key in self._unschedulable and changed:
                    del self._unschedulable[key]
                    self._requeue(known, now)
                    self._count_in(known, "UnscheduledPodUpdate")
                    _moved("UnscheduledPodUpdate", [known])
                new = False
            else:
                entry = QueuedPod(key, pod, pod_priority(pod), now, next(self._seq), gates=gates, extra=dict(extra))
                if gates:
                    self._gated[key] = entry
                    gate_change = (entry, True)
                else:
                    self._push_active(entry)
                self._count_in(entry, "PodAdd", "gated" if gates else "active")
                new = True
        if gate_change is not None and self._on_gate is not None:
            self._on_gate(*gate_change)
        return new

    def delete(self, key: Hashable) -> bool:
        """Forget a pod (deleted, bound elsewhere, no longer ours); True when it was known."""
        with self._lock:
            entry = self._active_keys.pop(key, None) or self._backoff_keys.pop(key, None) \
                or self._unschedulable.pop(key, None) or self._gated.pop(key, None)
            if entry is not None:
                entry.deleted = True  # lazily skipped when it surfaces from a heap
                return True
            flying = self._in_flight.get(key)
            if flying is not None:
                flying.deleted = True
                return True
            return False

    def move_all(self, event: str, profile: str | None = None) -> int:
        """A cluster event that can change every verdict (policies reloaded, ...): every unschedulable
        pod (whose ``spec.schedulerName`` is ``profile``, when given) goes back (backoff or active).
        Returns how many moved."""
        return self.move(ClusterEvent.all(event, profile))

    def move(self, event: ClusterEvent) -> int:
        """``event`` happened: the unschedulable pods it may help go back (backoff or active); pods
        deciding now check it when they fail. Returns how many moved."""
        with self._lock:
            now = self._clock()
            if self._deciding:
                self._events.append((self._cycle, event))
            moved = [e for e in self._unschedulable.values() if _concerns(event, e)]
            for entry in moved:
                del self._unschedulable[entry.key]
                self._requeue(entry, now)
                self._count_in(entry, event.name)
            if moved:
                self.moves[event.name] = self.moves.get(event.name, 0) + len(moved)
                _moved(event.name, moved, event.node)
            return len(moved)

    def _stop_deciding(self, entry: QueuedPod) -> None:
        if self._deciding.pop(entry.key, None) is None or not self._events:
            return
        if not self._deciding:
            self._events.clear()
        else:
            oldest = min(e.pop_cycle for e in self._deciding.values())
            if self._events[0][0] < oldest:
                self._events = [(c, ev) for c, ev in self._events if c >= oldest]

    def _stale(self, entry: QueuedPod) -> ClusterEvent | None:
        """The first event that arrived while ``entry`` was deciding and may change its verdict."""
        return next((ev for c, ev in self._events if c >= entry.pop_cycle and _concerns(ev, entry)), None)

    def flush(self) -> None:
        """Backoff that has expired -> active; unschedulable longer than ``max_unschedulable`` -> out."""
        with self._lock:
            self._flush_locked(self._clock())

    def _flush_locked(self, now: float) -> None:
        while self._backoff and self._backoff[0][0] <= now:
            _, _, entry = heapq.heappop(self._backoff)
            if self._backoff_keys.get(entry.key) is entry:
                del self._backoff_keys[entry.key]
                self._push_active(entry)
                self._count_in(entry, "BackoffComplete", "active")
        stale = [e for e in self._unschedulable.values() if now - e.unschedulable_since >= self.max_unschedulable]
        for entry in stale:
            del self._unschedulable[entry.key]
            self._requeue(entry, now)
            self._count_in(entry, "UnschedulableTimeout")
        if stale:
            self.moves["UnschedulableTimeout"] = self.moves.get("UnschedulableTimeout", 0) + len(stale)
            _moved("UnschedulableTimeout", stale)

    # -- the consumer (the scheduling loop) -------------------------------------------------------

    def pop(self, timeout: float | None = 0.0) -> QueuedPod | None:
        """The next pod to schedule, or None when none is ready within ``timeout`` seconds
        (0: do not wait; None: wait until one is ready or the queue is closed)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while True:
                self._flush_locked(self._clock())
                while self._active:
                    _, _, entry = heapq.heappop(self._active)
                    if self._active_keys.get(entry.key) is not entry:
                        continue  # deleted or re-pushed since
                    del self._active_keys[entry.key]
                    self._cycle += 1
                    entry.pop_cycle = self._cycle
                    entry.attempts += 1
                    if entry.initial_attempt is None:
                        entry.initial_attempt = self._clock()
                    self._in_flight[entry.key] = entry
                    self._deciding[entry.key] = entry
                    return entry
                if self._closed:
                    return None
                wait = None if deadline is None else deadline - time.monotonic()
                if wait is not None and wait <= 0:
                    return None
                if self._backoff:  # wake up when the first backoff expires (in clock time ~ wall time)
                    until = max(0.0, self._backoff[0][0] - self._clock())
                    wait = until if wait is None else min(wait, until)
                # Also wake periodically for the unschedulable flush.
                wait = 1.0 if wait is None else min(wait, 1.0)
                self._lock.wait(wait)

    def _leave_flight(self, entry: QueuedPod) -> bool:
        """Take ``entry`` out of flight; False when it must not be requeued (deleted meanwhile)."""
        if self._in_flight.get(entry.key) is entry:
            del self._in_flight[entry.key]
        if self._deciding.get(entry.key) is entry:
            self._stop_deciding(entry)
        return not entry.deleted

    def _stamp(self, entry: QueuedPod, now: float) -> None:
        if self._refresh_timestamp:
            entry.timestamp = now
        entry.backoff_until = now + self.backoff_duration(entry.attempts)

    def add_unschedulable(self, entry: QueuedPod) -> str:
        """A popped pod no node could take; returns the queue it went to.

        It waits in the unschedulable pool, unless an event it is interested in (``entry.interest``)
        arrived while it was deciding: then its verdict may be stale and it goes to backoff
        (kube-scheduler's in-flight events).
        """
        with self._lock:
            stale = self._stale(entry) if self._deciding.get(entry.key) is entry else None
            if not self._leave_flight(entry):
                return "gone"
            now = self._clock()
            self._stamp(entry, now)
            if stale is not None:
                self._requeue(entry, now)
                self._count_in(entry, "ScheduleAttemptFailure")
                _moved(f"in flight: {stale.name}", [entry], stale.node)
                return "backoff" if entry.key in self._backoff_keys else "active"
            entry.unschedulable_since = now
            self._unschedulable[entry.key] = entry
            self._count_in(entry, "ScheduleAttemptFailure", "unschedulable")
            return "unschedulable"

    def add_backoff(self, entry: QueuedPod) -> str:
        """A popped pod whose attempt failed for another reason (error, failed bind): retry after backoff."""
        with self._lock:
            if not self._leave_flight(entry):
                return "gone"
            now = self._clock()
            self._stamp(entry, now)
            self._requeue(entry, now)
            self._count_in(entry, "ScheduleAttemptFailure")
            return "backoff" if entry.key in self._backoff_keys else "active"

    def binding(self, entry: QueuedPod) -> None:
        """The pod was assumed and handed to the binder: it stays in flight but no longer decides."""
        with self._lock:
            if self._deciding.get(entry.key) is entry:
                self._stop_deciding(entry)

    def done(self, entry: QueuedPod) -> None:
        """The pod left the queue for good (assumed and handed to the binder)."""
        with self._lock:
            self._leave_flight(entry)

    def close(self) -> None:
        """Wake every waiting :meth:`pop`; pops return None once active is empty."""
        with self._lock:
            self._closed = True
            self._lock.notify_all()

    # -- inspection -------------------------------------------------------------------------------

    def pending(self) -> dict[str, int]:
        """Pods per queue (``pending_pods{queue}``); in-flight pods are not pending."""
        with self._lock:
            return {"active": len(self._active_keys), "backoff": len(self._backoff_keys),
                    "unschedulable": len(self._unschedulable), "gated": len(self._gated)}

    def active_count(self) -> int:
        """Pods in the active queue: ``pending()["active"]`` without building the dict, for the hot
        callers (the Pod watch asks before every read, the loop after every decision and bind). It reads
        one ``len`` without the lock: a value that may be one change old, as any answer is once returned.
        """
        return len(self._active_keys)

    def in_flight(self) -> int:
        """Pods popped and not handed back yet."""
        with self._lock:
            return len(self._in_flight)

    def unschedulable(self) -> list[QueuedPod]:
        """The pods in the unschedulable pool (a copy)."""
        with self._lock:
            return list(self._unschedulable.values())

    def gated(self) -> list[QueuedPod]:
        """The pods in the gated pool (a copy)."""
        with self._lock:
            return list(self._gated.values())

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return self._find(key) is not None  # type: ignore[arg-type,unused-ignore]

    def __len__(self) -> int:
        with self._lock:
            return len(self._active_keys) + len(self._backoff_keys) + len(self._unschedulable) + len(self._gated)
