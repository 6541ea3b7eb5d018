"""What users see, in kube-scheduler's formats: events.k8s.io/v1 Events and the PodScheduled condition.

* ``Scheduled`` (Normal, action ``Binding``): ``Successfully assigned <ns>/<name> to <node>``.
* ``FailedScheduling`` (Warning, action ``Scheduling``): the decision's ``0/N nodes are available: ...``
  text, cut to the API's 1024-character note limit with kube-scheduler's `` ...`` suffix.
* On a failure the pod's status gets ``PodScheduled=False`` with reason ``Unschedulable`` (or
  ``SchedulerError`` for errors) and the untruncated message -- patched only when it changes, as
  kube-scheduler skips empty patches.

``reportingController`` is our scheduler name, ``reportingInstance`` ``<name>-<host>``. The scheduling
loop never waits on these writes:

* failures (``FailedScheduling`` + condition) go to a small thread pool at once (they are rare, and a
  user looking at a pending pod wants the reason now);
* ``Scheduled`` events go to one **low-priority worker** (kube's event broadcaster is asynchronous too):
  while the scheduler is busy (``busy()``: pods waiting in the active queue or binds in flight) it holds
  them back, for at most ``max_delay`` seconds each, so that during a burst the API server's capacity
  goes to bindings; when the burst ends, or an event is ``max_delay`` old, it posts them. The backlog is
  bounded (``max_backlog``; beyond it the oldest are dropped and counted, as client-go's broadcaster drops
  when its channel is full). :meth:`shutdown` with ``wait`` posts everything left.

Failed writes are counted and logged.
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import quote

from policyscheduler.kube.rest import ApiError, RestClient, pod_path

__all__ = ["EventRecorder", "truncate_note", "NOTE_LIMIT"]


def _sub(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``obj[key]`` when it is a mapping, else an empty one (objects from the API are not trusted)."""
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}

NOTE_LIMIT = 1024
DIGEST_ANNOTATION = "policyscheduler.io/policy-digest"
"""Annotation on every Scheduled / FailedScheduling event: the digest of the policy set that decided."""
log = logging.getLogger("policyscheduler.events")


def truncate_note(message: str) -> str:
    """kube-scheduler's ``truncateMessage``: at most 1024 characters, `` ...`` marking a cut."""
    if len(message) <= NOTE_LIMIT:
        return message
    return message[: NOTE_LIMIT - 4] + " ..."


def _now() -> _dt.datetime:
    return _dt.datetime.now(_dt.UTC)


def micro_time(moment: _dt.datetime) -> str:
    """``MicroTime`` as the API writes it (RFC 3339 with microseconds, UTC)."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _meta(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = pod.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


class EventRecorder:
    """Posts events and condition patches for one scheduler name."""

    def __init__(self, client: RestClient, scheduler_name: str, *, workers: int = 4,
                 busy: Callable[[], bool] = lambda: False, max_delay: float = 10.0,
                 max_backlog: int = 50_000) -> None:
        self.client = client
        self.scheduler_name = scheduler_name
        self.instance = f"{scheduler_name}-{socket.gethostname()}-{os.getpid()}"
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="events")
        self._lock = threading.Lock()
        self._busy = busy
        self.max_delay = max_delay
        self.max_backlog = max_backlog
        self._lazy: deque[tuple[float, Mapping[str, Any], str, int, str | None]] = deque()
        self._lazy_pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="events-lazy-post")
        self._lazy_pause = 0.0
        self._lazy_ready = threading.Condition(self._lock)
        self._lazy_slots = threading.BoundedSemaphore(workers)
        self._closing = False
        self._flush = False
        self._lazy_idle = False
        """The lazy worker waits for an empty backlog to fill: the only time a new event must wake it (while
        it holds events back it polls every 50 ms anyway, and a wake-up per pod costs the scheduler a GIL
        hand-off)."""
        self._lazy_thread = threading.Thread(target=self._lazy_worker, name="events-lazy", daemon=True)
        self._lazy_thread.start()
        self.sent = 0
        self.errors = 0
        self.dropped = 0
        self._writing = 0
        """Writes handed to a pool and not finished (with the held-back ones: :attr:`unsent`)."""
        self._hurry = threading.Event()
        """Set by :meth:`hurry` (shutdown): failed writes are retried without waiting."""

    def hurry(self) -> None:
        """The process stops within seconds: retry failed writes at once instead of backing off."""
        self._hurry.set()

    @property
    def unsent(self) -> int:
        """Events and condition patches not written yet: what a bounded shutdown reports as dropped."""
        with self._lock:
            return len(self._lazy) + self._writing

    def _submit(self, fn: Any, *args: Any) -> None:
        with self._lock:
            self._writing += 1
        try:
            self._pool.submit(self._guard, fn, *args)
        except RuntimeError:  # shut down: never written
            with self._lock:
                self._writing -= 1
            raise

    def _guard(self, fn: Any, *args: Any) -> None:
        try:
            self._guarded(fn, *args)
        finally:
            with self._lock:
                self._writing -= 1

    def _guarded(self, fn: Any, *args: Any) -> None:
        delay = 1.0
        for attempt in range(6):  # the API server may be restarting: retry ~30 s, like client-go's broadcaster
            try:
                fn(*args)
                with self._lock:
                    self.sent += 1
                return
            except ApiError as err:
                if (err.status == 0 or err.status >= 500) and attempt < 5:
                    self._hurry.wait(delay)
                    delay *= 2
                    continue
                self._failed_write(err)
                return

    def _failed_write(self, err: ApiError) -> None:
        with self._lock:
            self.errors += 1
        if err.status != 404:  # the pod went away meanwhile: nothing to report on
            log.warning("api write failed: %s", err)

    def scheduled(self, pod: Mapping[str, Any], node: str, *, digest: str | None = None) -> None:
        """The ``Scheduled`` event for a successful bind (``digest``: of the policy set that decided)."""
        meta = _meta(pod)
        note = f"Successfully assigned {meta.get('namespace')}/{meta.get('name')} to {node}"
        with self._lock:
            if len(self._lazy) >= self.max_backlog:
                self._lazy.popleft()
                self.dropped += 1
            self._lazy.append((time.monotonic(), pod, note, 0, digest))
            if self._lazy_idle:
                self._lazy_ready.notify()

    @property
    def backlog(self) -> int:
        """``Scheduled`` events held back by the low-priority worker."""
        with self._lock:
            return len(self._lazy)

    def _lazy_worker(self) -> None:
        while True:
            with self._lock:
                while not self._lazy and not self._closing:
                    self._lazy_idle = True
                    self._lazy_ready.wait()
                self._lazy_idle = False
                if not self._lazy:
                    return
                queued, pod, note, tries, digest = self._lazy[0]
                flush = self._flush
                pause = self._lazy_pause - time.monotonic()
            if pause > 0:  # the API server failed us: give it a moment (retries are re-queued, never slept on)
                with self._lock:
                    self._lazy_ready.wait(min(pause, 0.5))
                continue
            if not flush and time.monotonic() - queued < self.max_delay and self._busy():
                with self._lock:
                    self._lazy_ready.wait(0.05)  # the burst goes on: bindings first
                continue
            with self._lock:
                if not self._lazy:
                    continue
                self._lazy.popleft()
                self._writing += 1
            self._lazy_slots.acquire()  # posted on the pool, a few at a time: a backlog drains fast
            try:
                self._lazy_pool.submit(self._lazy_post, pod, note, tries, digest)
            except RuntimeError:  # the pool is shut down (shutdown without wait)
                self._lazy_slots.release()
                with self._lock:
                    self._writing -= 1
                return

    def _lazy_post(self, pod: Mapping[str, Any], note: str, tries: int, digest: str | None = None) -> None:
        try:
            self._event(pod, "Normal", "Scheduled", "Binding", note, digest)
            with self._lock:
                self.sent += 1
        except ApiError as err:
            # Unreachable or failing API server: retry for ~80 s (1, 2, 4, then every 8 s), long enough to
            # ride out an API server restart on a busy machine; a Scheduled event is worth keeping.
            if (err.status == 0 or err.status >= 500) and tries < 12:
                with self._lock:
                    self._lazy.appendleft((time.monotonic() - self.max_delay, pod, note, tries + 1, digest))
                    self._lazy_pause = time.monotonic() + min(2.0**tries, 8.0)
                    self._lazy_ready.notify()
            else:
                self._failed_write(err)
        finally:
            with self._lock:
                self._writing -= 1
            self._lazy_slots.release()

    def failed(self, pod: Mapping[str, Any], message: str, *, reason: str = "Unschedulable",
               digest: str | None = None) -> None:
        """The ``FailedScheduling`` event and the ``PodScheduled=False`` condition."""
        self._submit(self._event, pod, "Warning", "FailedScheduling", "Scheduling", truncate_note(message), digest)
        self._submit(self._condition, pod, reason, message)

    def object_event(self, regarding: Mapping[str, Any], type_: str, reason: str, action: str, note: str) -> None:
        """An event about any object (``regarding``: an ObjectReference with ``namespace``), posted at once
        with the failure writer's retries; e.g. policy reloads on the policy ConfigMap."""
        self._submit(self._post, dict(regarding), type_, reason, action, truncate_note(note), None)

    def _event(self, pod: Mapping[str, Any], type_: str, reason: str, action: str, note: str,
               digest: str | None = None) -> None:
        meta = _meta(pod)
        regarding = {"apiVersion": "v1", "kind": "Pod", "namespace": str(meta.get("namespace") or "default"),
                     "name": meta.get("name"), "uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion")}
        self._post(regarding, type_, reason, action, note, digest)

    def _post(self, regarding: dict[str, Any], type_: str, reason: str, action: str, note: str,
              digest: str | None) -> None:
        namespace = str(regarding.get("namespace") or "default")
        now = _now()
        metadata: dict[str, Any] = {"name": f"{regarding.get('name')}.{time.time_ns():x}", "namespace": namespace}
        if digest:
            metadata["annotations"] = {DIGEST_ANNOTATION: digest[:12]}
        body = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": metadata,
            "eventTime": micro_time(now),
            "reportingController": self.scheduler_name,
            "reportingInstance": self.instance,
            "action": action,
            "reason": reason,
            "type": type_,
            "note": note,
            "regarding": {k: v for k, v in regarding.items() if v is not None},
        }
        self.client.post(f"/apis/events.k8s.io/v1/namespaces/{quote(namespace, safe='')}/events", body)

    def _condition(self, pod: Mapping[str, Any], reason: str, message: str) -> None:
        status = _sub(pod, "status")
        for cond in status.get("conditions") or []:
            if (isinstance(cond, Mapping) and cond.get("type") == "PodScheduled" and cond.get("status") == "False"
                    and cond.get("reason") == reason and cond.get("message") == message):
                return  # already says exactly this
        meta = _meta(pod)
        condition = {"type": "PodScheduled", "status": "False", "reason": reason, "message": message,
                     "lastProbeTime": None,
                     "lastTransitionTime": _now().strftime("%Y-%m-%dT%H:%M:%SZ")}
        patch: dict[str, Any] = {"status": {"conditions": [condition]}}
        if meta.get("uid"):
            patch["metadata"] = {"uid": meta["uid"]}  # a precondition: never patch a recreated pod
        self.client.patch(pod_path(str(meta.get("namespace") or "default"), str(meta.get("name")), "status"), patch)

    def flush(self, timeout: float | None = None) -> bool:
        """Post the held-back events now, without waiting for the scheduler to be idle; True once the
        backlog is empty (within ``timeout``)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            self._flush = True
            self._lazy_ready.notify_all()
        while self.backlog:
            if deadline is not None and time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def shutdown(self, wait: bool = True) -> None:
        """Finish (``wait``: every held-back event is posted) or drop the queued writes."""
        with self._lock:
            self._closing = True
            self._flush = True
            if not wait:
                self.dropped += len(self._lazy)
                self._lazy.clear()
            self._lazy_ready.notify_all()
        if wait:
            self._lazy_thread.join()
        self._lazy_pool.shutdown(wait=wait, cancel_futures=not wait)
        self._pool.shutdown(wait=wait, cancel_futures=not wait)
