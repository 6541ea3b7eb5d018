"""What users see, in kube-scheduler's formats: events.k8s.io/v1 Events and the PodScheduled condition.

* ``Scheduled`` (Normal, action ``Binding``): ``Successfully assigned <ns>/<name> to <node>``.
* ``FailedScheduling`` (Warning, action ``Scheduling``): the decision's ``0/N nodes are available: ...``
  text, cut to the API's 1024-character note limit with kube-scheduler's `` ...`` suffix.
* On a failure the pod's status gets ``PodScheduled=False`` with reason ``Unschedulable`` (or
  ``SchedulerError`` for errors) and the untruncated message -- patched only when it changes, as
  kube-scheduler skips empty patches.

``reportingController`` is our scheduler name, ``reportingInstance`` ``<name>-<host>-<pid>``. The
scheduling loop never waits on these writes.

**Event series** (client-go's ``tools/events`` broadcaster, which kube-scheduler records through): events
are correlated by an isomorphism key -- type, action, reason, reporting controller and instance, the
object they are about -- the note is not part of it. The first event of a key is created; the second
turns it into a series (``series.count`` 2, ``lastObservedTime``) patched onto the same Event object;
later ones only count in memory, and the counted series is written every :data:`SERIES_REFRESH` seconds
(client-go: every 30 minutes; we write sooner so that ``kubectl describe`` shows a live count) and once
more when it ends. A series ends :data:`SERIES_FINISH` (6 minutes, as client-go) after it was last
observed; the next occurrence starts a new Event. A patch that finds the Event gone creates it again
with its series. One difference: the object is keyed by uid, not by its ``resourceVersion`` (client-go's
key holds the whole ObjectReference, so our own ``PodScheduled=False`` patch, which moves the pod's
version, starts a second Event): a pod retried ten times has one FailedScheduling series.

**No stale failure writes.** A failure (``FailedScheduling`` + condition) is written on a small thread
pool at once, but only while it is still true: before every try (and retry) the writer asks ``pending(pod)``
-- the live scheduler answers from the watch cache and its own binds whether the pod still waits -- and
:meth:`EventRecorder.cancel` (called when a bind succeeds or the pod is deleted) withdraws every queued
failure write of the pod. Only the newest condition of a pod is written (older queued ones are skipped).
So a pod bound while its failure writes were queued, or while the API server was down, never gets
``PodScheduled=False`` or a ``FailedScheduling`` event after its ``Scheduled`` event.

**Scheduled events** go to one low-priority worker (kube's broadcaster is asynchronous too): while the
scheduler is busy (``busy()``: pods waiting in the active queue or binds in flight) it holds them back,
but never longer than ``max_delay`` (0.1 s) and never more than ``max_batch`` (100) of them: a burst's
events go out in batches within about a tenth of a second, so a leader killed mid-burst loses at most
those. When the oldest is due, the ones held with it go too, posted together (up to :data:`LAZY_IN_FLIGHT`
at once, on the events pipeline: one write per connection and one wake-up of its thread for the lot,
where posting each as it came due cost both per event). The backlog is bounded (``max_backlog``; beyond it the oldest are dropped and counted, as
client-go's broadcaster drops when its channel is full). :meth:`EventRecorder.shutdown` with ``wait``
posts everything left.

**Retries write the same Event.** An event's body, name included, is built once and every retry sends it
as it is (client-go's broadcaster retries the same object too): a try whose answer was lost -- the API
server created the Event, then the connection died or the server stopped -- makes the retry's 409
AlreadyExists, which counts as written, never a second Event.

Failed writes are counted and logged.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import itertools
import json
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

from policyscheduler.kobjects import cache_key, name_of, namespace_of, uid_of
from policyscheduler.kube.pipeline import Done, Pipeline
from policyscheduler.kube.rest import ApiError, RestClient, pod_path

__all__ = ["EventRecorder", "truncate_note", "NOTE_LIMIT", "SERIES_FINISH", "SERIES_REFRESH"]


def _sub(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``obj[key]`` when it is a mapping, else an empty one (objects from the API are not trusted)."""
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}

NOTE_LIMIT = 1024
DIGEST_ANNOTATION = "policyscheduler.io/policy-digest"
"""Annotation on every Scheduled / FailedScheduling event: the digest of the policy set that decided."""
SERIES_FINISH = 360.0
"""Seconds after its last occurrence that a series ends (client-go's ``finishTime``)."""
LAZY_IN_FLIGHT = 16
"""Scheduled events posted and not answered yet, at most (the events pipeline: 4 connections x 4)."""
EVENTS_LINGER = 0.005
"""Seconds the events pipeline waits after an answer arrived before reading (kube/pipeline.py ``linger``):
the answers to a batch of posts come one at a time, and reading each in a round of its own cost a wake-up
of the thread per event."""
SERIES_REFRESH = 10.0
"""Seconds between writes of a series' count while it keeps growing (see the module docstring)."""
log = logging.getLogger("policyscheduler.events")

_compact = json.JSONEncoder(separators=(",", ":")).encode
"""``json.dumps(body, separators=(",", ":"))`` without building an encoder per call."""


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


def pod_write_key(pod: Mapping[str, Any]) -> str:
    """The key failure writes are tracked by: the uid (a recreated pod is another pod), else ``ns/name``."""
    return cache_key(uid_of(pod), namespace_of(pod), name_of(pod))


@dataclasses.dataclass
class _Series:
    """One correlated Event (client-go's ``eventCache`` entry): its body as created, how often it was
    observed, when last, and whether the count on the server lags behind."""

    body: dict[str, Any]
    count: int = 1
    last_observed: _dt.datetime = dataclasses.field(default_factory=_now)
    last_seen: float = dataclasses.field(default_factory=time.monotonic)
    written: float = 0.0
    dirty: bool = False
    pod: Mapping[str, Any] | None = None


@dataclasses.dataclass(slots=True)
class _Held:
    """One held-back ``Scheduled`` event. ``body`` is built by its first try and kept for every retry: a
    try whose answer was lost may have created the Event, and only the same name makes the retry's
    409 AlreadyExists say so (client-go's broadcaster retries the same Event object too)."""

    queued: float
    pod: Mapping[str, Any]
    note: str
    digest: str | None
    tries: int = 0
    body: dict[str, Any] | None = None


class EventRecorder:
    """Posts events and condition patches for one scheduler name."""

    def __init__(self, client: RestClient, scheduler_name: str, *, workers: int = 4,
                 busy: Callable[[], bool] = lambda: False, max_delay: float = 0.1, max_batch: int = 100,
                 max_backlog: int = 50_000, pending: Callable[[Mapping[str, Any]], bool] | None = None) -> None:
        """``pending(pod)``: is ``pod`` still waiting for a node (failure writes about it still true)?"""
        self.client = client
        self.scheduler_name = scheduler_name
        self.instance = f"{scheduler_name}-{socket.gethostname()}-{os.getpid()}"
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="events")
        self._lock = threading.Lock()
        self._busy = busy
        self._pending = pending or (lambda pod: True)
        self.max_delay = max_delay
        self.max_batch = max_batch
        self.max_backlog = max_backlog
        self._lazy: deque[_Held] = deque()
        self._lazy_pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="events-lazy-post")
        self._lazy_pause = 0.0
        self._lazy_ready = threading.Condition(self._lock)
        self._lazy_slots = threading.BoundedSemaphore(LAZY_IN_FLIGHT)
        self._lazy_pipeline: Pipeline | None = None
        """Opened by the first Scheduled event (a client without pipelines posts on ``_lazy_pool``)."""
        self._closing = False
        self._flush = False
        self._release = 0
        """Held-back events to post regardless of ``busy`` (the rest of a batch that reached ``max_batch``)."""
        self._lazy_idle = False
        """The lazy worker waits for an empty backlog to fill: the only time a new event must wake it (while
        it holds events back it polls every 50 ms anyway, and a wake-up per pod costs the scheduler a GIL
        hand-off)."""
        self._tokens = itertools.count(1)
        self._live: dict[str, int] = {}
        self._on_wire: dict[str, int] = {}
        """Pod key -> its failure writes being tried right now (see :meth:`after_failure_writes`)."""
        self._after_writes: dict[str, list[Callable[[], None]]] = {}
        """Pod key -> what waits for its failure writes on the wire to be answered (its bind)."""
        """Pod key -> the token of its newest failure; absent: no failure write of the pod may go out."""
        self._series: dict[tuple[Any, ...], _Series] = {}
        self._series_checked = time.monotonic()
        self._lazy_thread = threading.Thread(target=self._lazy_worker, name="events-lazy", daemon=True)
        self._lazy_thread.start()
        self.sent = 0
        self.errors = 0
        self.dropped = 0
        self._writing = 0
        """Writes handed to a pool and not finished (with the held-back ones: :attr:`unsent`)."""
        self._hurry = threading.Event()
        """Set by :meth:`hurry` (shutdown): failed writes are retried without waiting."""
        self.cancelled = 0
        """Failure writes withdrawn because the pod was bound or deleted before they went out."""

    def hurry(self) -> None:
        """The process stops within seconds: retry failed writes at once instead of backing off."""
        self._hurry.set()

    @property
    def unsent(self) -> int:
        """Events and condition patches not written yet: what a bounded shutdown reports as dropped."""
        with self._lock:
            return len(self._lazy) + self._writing

    def _submit(self, fn: Any, *args: Any, still: Callable[[], bool] | None = None, about: str | None = None) -> None:
        """Write on the pool; ``still`` is asked before each try; ``about``: the key of the pod a failure
        write is about (see :meth:`after_failure_writes`)."""
        with self._lock:
            self._writing += 1
        try:
            self._pool.submit(self._guard, still, about, fn, *args)
        except RuntimeError:  # shut down: nothing more is written
            with self._lock:
                self._writing -= 1
                self.dropped += 1

    def _guard(self, still: Callable[[], bool] | None, about: str | None, fn: Any, *args: Any) -> None:
        try:
            self._guarded(still, about, fn, *args)
        finally:
            with self._lock:
                self._writing -= 1

    def _guarded(self, still: Callable[[], bool] | None, about: str | None, fn: Any, *args: Any) -> None:
        delay = 1.0
        unanswered = False
        for attempt in range(6):  # the API server may be restarting: retry ~30 s, like client-go's broadcaster
            err = self._try_once(still, about, fn, args)
            if err is None:
                return
            if err.status == 409 and unanswered:
                # The try before got no answer, and acted: the Event it posted exists (each write's
                # body, name and all, is built once and retried as it is).
                with self._lock:
                    self.sent += 1
                return
            unanswered = err.status == 0
            if (err.status == 0 or err.status >= 500) and attempt < 5:
                self._hurry.wait(delay)
                delay *= 2
                continue
            self._failed_write(err)
            return

    def _try_once(self, still: Callable[[], bool] | None, about: str | None, fn: Any,
                  args: tuple[Any, ...]) -> ApiError | None:
        """One try of a write: None when it is done (written, or no longer true), else the API's refusal.
        A failure write counts as on the wire (``about``) from before its ``still`` check until its answer:
        a bind that asks :meth:`after_failure_writes` in between waits for it; one that asked before the
        count went up has already made ``still`` false (the pod is being bound), so the write is dropped."""
        if about is not None:
            with self._lock:
                self._on_wire[about] = self._on_wire.get(about, 0) + 1
        try:
            if still is not None and not still():  # the pod was bound or deleted meanwhile: no longer true
                with self._lock:
                    self.cancelled += 1
                return None
            try:
                fn(*args)
            except ApiError as err:
                return err
            with self._lock:
                self.sent += 1
            return None
        finally:
            if about is not None:
                self._off_wire(about)

    def _off_wire(self, key: str) -> None:
        with self._lock:
            left = self._on_wire[key] - 1
            if left:
                self._on_wire[key] = left
                return
            del self._on_wire[key]
            then = self._after_writes.pop(key, ())
        for fn in then:
            fn()

    def after_failure_writes(self, pod: Mapping[str, Any], then: Callable[[], None]) -> None:
        """Call ``then`` (the pod's bind) once no failure write about ``pod`` is on the wire: at once when
        none is, else on the writer's thread when the last one is answered.

        A ``PodScheduled=False`` patch sent just before a bind could reach the API server after it and
        leave a bound pod saying it is unschedulable; kube-scheduler's API dispatcher likewise keeps one
        call per pod in flight. The caller must already have made the pod's ``still`` check false (it is
        being bound), so no new failure write starts after this."""
        key = pod_write_key(pod)
        with self._lock:
            if self._on_wire.get(key):
                self._after_writes.setdefault(key, []).append(then)
                return
        then()

    def _failed_write(self, err: ApiError) -> None:
        with self._lock:
            self.errors += 1
        if err.status not in (404, 409):  # the pod went away, or the Event exists already: nothing to report
            log.warning("api write failed: %s", err)

    def scheduled(self, pod: Mapping[str, Any], node: str, *, digest: str | None = None) -> None:
        """The ``Scheduled`` event for a successful bind (``digest``: of the policy set that decided)."""
        meta = _meta(pod)
        note = f"Successfully assigned {meta.get('namespace')}/{meta.get('name')} to {node}"
        with self._lock:
            if len(self._lazy) >= self.max_backlog:
                self._lazy.popleft()
                self.dropped += 1
            self._lazy.append(_Held(time.monotonic(), pod, note, digest))
            if self._lazy_idle or len(self._lazy) >= self.max_batch:
                self._lazy_ready.notify()

    @property
    def backlog(self) -> int:
        """``Scheduled`` events held back by the low-priority worker."""
        with self._lock:
            return len(self._lazy)

    def _lazy_worker(self) -> None:
        while True:
            self._tend_series()
            with self._lock:
                while not self._lazy and not self._closing:
                    self._lazy_idle = True
                    self._lazy_ready.wait(1.0 if self._series else None)  # series to refresh: wake now and then
                    self._lazy_idle = False
                    if self._series:
                        break
                if not self._lazy:
                    if self._closing:
                        return
                    continue
                queued = self._lazy[0].queued
                if len(self._lazy) >= self.max_batch:  # a full batch: all of it goes out now
                    self._release = max(self._release, len(self._lazy))
                forced = self._flush
                released = self._release > 0
                pause = self._lazy_pause - time.monotonic()
            if pause > 0:  # the API server failed us: give it a moment (retries are re-queued, never slept on)
                with self._lock:
                    self._lazy_ready.wait(min(pause, 0.5))
                continue
            age = time.monotonic() - queued
            hold = not forced and self._busy()  # a burst goes on: bindings first
            if hold and not released and age < self.max_delay:
                with self._lock:
                    self._lazy_ready.wait(min(0.05, self.max_delay - age))
                continue
            with self._lock:
                if not self._lazy:
                    continue
                if hold and age >= self.max_delay:
                    # the oldest is due: the ones held with it go in the same batch (written together, one
                    # write per connection, instead of one wake-up and write per event as each comes due)
                    self._release = max(self._release, len(self._lazy))
                # the one taken is the one posted: a failed try may have been put back in front meanwhile
                batch = [self._lazy.popleft()]
                self._release = max(0, self._release - 1)
                self._writing += 1
            self._lazy_slots.acquire()  # a bounded number in flight: a backlog drains fast
            while len(batch) < LAZY_IN_FLIGHT and self._lazy_slots.acquire(blocking=False):
                with self._lock:
                    if not self._lazy or (hold and self._release <= 0):
                        self._lazy_slots.release()
                        break
                    batch.append(self._lazy.popleft())
                    self._release = max(0, self._release - 1)
                    self._writing += 1
            for held in batch:
                if held.body is None:
                    held.body = self._body(self._regarding(held.pod), "Normal", "Scheduled", "Binding", held.note,
                                           held.digest)
            pipeline = self._events_pipeline()
            if pipeline is not None:
                self._pipe_post(pipeline, batch)
                continue
            for i, held in enumerate(batch):
                try:
                    self._lazy_pool.submit(self._lazy_post, held)
                except RuntimeError:  # the pool is shut down (shutdown without wait)
                    for _ in batch[i:]:
                        self._lazy_slots.release()
                    with self._lock:
                        self._writing -= len(batch) - i
                    return

    def _events_pipeline(self) -> Pipeline | None:
        """The pipeline the Scheduled events go out on (kube/pipeline.py: one thread writes and reads them on
        a few kept connections, so a burst's events cost little CPU and follow their binds closely)."""
        if self._lazy_pipeline is None:
            opener = getattr(self.client, "pipeline", None)
            if opener is not None:
                self._lazy_pipeline = opener(lanes=4, depth=4, name="events", linger=EVENTS_LINGER, fill=True)
        return self._lazy_pipeline

    @staticmethod
    def _events_path(body: Mapping[str, Any]) -> str:
        return f"/apis/events.k8s.io/v1/namespaces/{quote(str(body['metadata']['namespace']), safe='')}/events"

    def _pipe_post(self, pipeline: Pipeline, batch: list[_Held]) -> None:
        """Post ``batch`` (bodies built) on the pipeline, all at once."""
        requests: list[tuple[str, str, bytes | None, Done]] = []
        for held in batch:
            assert held.body is not None
            path = self._events_path(held.body)
            requests.append(("POST", path, _compact(held.body).encode(), self._pipe_answered(path, held)))
        pipeline.submit_all(requests)

    def _pipe_answered(self, path: str, held: _Held) -> Done:
        """What the pipeline calls with the answer to ``held``'s post."""

        def answered(status: int, raw: bytes, detail: str | None) -> None:
            try:
                if 200 <= status < 300:
                    self._lazy_sent()
                else:
                    error = ApiError("POST", path, status, raw.decode("utf-8", errors="replace"), detail=detail or "")
                    self._lazy_failed(error, held)
            finally:
                with self._lock:
                    self._writing -= 1
                self._lazy_slots.release()

        return answered

    def _lazy_post(self, held: _Held) -> None:
        assert held.body is not None
        try:
            self.client.post(self._events_path(held.body), held.body)
            self._lazy_sent()
        except ApiError as err:
            self._lazy_failed(err, held)
        finally:
            with self._lock:
                self._writing -= 1
            self._lazy_slots.release()

    def _lazy_sent(self) -> None:
        with self._lock:
            self.sent += 1

    def _lazy_failed(self, err: ApiError, held: _Held) -> None:
        if err.status == 409 and held.tries > 0:  # an earlier try created it; its answer was lost
            self._lazy_sent()
            return
        # Unreachable or failing API server: retry for ~80 s (1, 2, 4, then every 8 s), long enough to
        # ride out an API server restart on a busy machine; a Scheduled event is worth keeping.
        if (err.status == 0 or err.status >= 500) and held.tries < 12:
            with self._lock:
                held.queued = time.monotonic() - self.max_delay
                held.tries += 1
                self._lazy.appendleft(held)
                self._lazy_pause = time.monotonic() + min(2.0**(held.tries - 1), 8.0)
                self._lazy_ready.notify()
        else:
            self._failed_write(err)

    # -- failures ----------------------------------------------------------------------------------------

    def failed(self, pod: Mapping[str, Any], message: str, *, reason: str = "Unschedulable",
               digest: str | None = None, condition: bool = True) -> None:
        """The ``FailedScheduling`` event (into its series) and, with ``condition``, the
        ``PodScheduled=False`` condition."""
        key = pod_write_key(pod)
        with self._lock:
            token = self._live.get(key, 0)
            if condition or not token:  # a new condition supersedes the queued ones (only the newest is written)
                token = self._live[key] = next(self._tokens)
        event = self._observe(pod, "Warning", "FailedScheduling", "Scheduling", truncate_note(message), digest)
        if event is not None:
            self._submit(self._write_series, event, still=self._still_failing(pod), about=key)
        if condition:
            self._submit(self._condition, pod, reason, message,
                         still=lambda: self._live.get(key) == token and self._pending(pod), about=key)

    def _still_failing(self, pod: Mapping[str, Any]) -> Callable[[], bool]:
        """The check before each try of an event write about ``pod``: not cancelled, still pending."""
        key = pod_write_key(pod)
        return lambda: key in self._live and self._pending(pod)

    def cancel(self, pod: Mapping[str, Any]) -> None:
        """The pod was bound or deleted: withdraw its queued failure writes (events and condition)."""
        with self._lock:
            self._live.pop(pod_write_key(pod), None)

    def _observe(self, pod: Mapping[str, Any], type_: str, reason: str, action: str, note: str,
                 digest: str | None) -> tuple[_Series, dict[str, Any]] | None:
        """Correlate one occurrence: the series and the body to write now, or None (only counted)."""
        regarding = self._regarding(pod)
        key = (type_, action, reason, self.scheduler_name, self.instance,
               regarding.get("namespace"), regarding.get("name"), regarding.get("uid"))
        now = time.monotonic()
        with self._lock:
            series = self._series.get(key)
            if series is not None and now - series.last_seen >= SERIES_FINISH:
                series = None  # ended (the tending pass writes its last count): a new Event
            if series is None:
                body = self._body(regarding, type_, reason, action, note, digest)
                self._series[key] = series = _Series(body, pod=pod, written=now)
                if self._lazy_idle:  # it waits without a timeout while no series is kept: it has one to tend now
                    self._lazy_ready.notify()
                return series, dict(body)
            series.count += 1
            series.last_observed = _now()
            series.last_seen = now
            series.pod = pod
            if series.count == 2:  # client-go: the second occurrence makes the series, written at once
                series.written = now
                return series, self._series_body(series)
            series.dirty = True
            return None

    def _series_body(self, series: _Series) -> dict[str, Any]:
        body = dict(series.body)
        body["series"] = {"count": series.count, "lastObservedTime": micro_time(series.last_observed)}
        return body

    def _write_series(self, event: tuple[_Series, dict[str, Any]]) -> None:
        """Create the Event, or patch its ``series`` (created again, series and all, when it is gone)."""
        _, body = event
        namespace = str(body["metadata"]["namespace"])
        events = f"/apis/events.k8s.io/v1/namespaces/{quote(namespace, safe='')}/events"
        if "series" in body:
            try:
                self.client.patch(f"{events}/{quote(str(body['metadata']['name']), safe='')}",
                                  {"series": body["series"]}, kind="merge-patch")
                return
            except ApiError as err:
                if err.status != 404:
                    raise
        self._create(body)

    def _tend_series(self) -> None:
        """Every second at most: write the counts that grew (every :data:`SERIES_REFRESH` s), forget the
        series that ended (:data:`SERIES_FINISH` s quiet) after writing their last count."""
        now = time.monotonic()
        if now - self._series_checked < 1.0:
            return
        self._series_checked = now
        due: list[tuple[_Series, dict[str, Any]]] = []
        with self._lock:
            for key, series in list(self._series.items()):
                ended = now - series.last_seen >= SERIES_FINISH
                if series.dirty and (ended or now - series.written >= SERIES_REFRESH):
                    series.dirty = False
                    series.written = now
                    due.append((series, self._series_body(series)))
                if ended:
                    del self._series[key]
        for series, body in due:
            self._submit(self._write_series, (series, body), still=self._still_failing(series.pod or {}))

    # -- writing -----------------------------------------------------------------------------------------

    def object_event(self, regarding: Mapping[str, Any], type_: str, reason: str, action: str, note: str) -> None:
        """An event about any object (``regarding``: an ObjectReference with ``namespace``), posted at once
        with the failure writer's retries; e.g. policy reloads on the policy ConfigMap."""
        body = self._body(dict(regarding), type_, reason, action, truncate_note(note), None)
        self._submit(self._create, body)

    @staticmethod
    def _regarding(pod: Mapping[str, Any]) -> dict[str, Any]:
        meta = _meta(pod)
        return {"apiVersion": "v1", "kind": "Pod", "namespace": str(meta.get("namespace") or "default"),
                "name": meta.get("name"), "uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion")}

    def _body(self, regarding: dict[str, Any], type_: str, reason: str, action: str, note: str,
              digest: str | None) -> dict[str, Any]:
        namespace = str(regarding.get("namespace") or "default")
        metadata: dict[str, Any] = {"name": f"{regarding.get('name')}.{time.time_ns():x}", "namespace": namespace}
        if digest:
            metadata["annotations"] = {DIGEST_ANNOTATION: digest[:12]}
        return {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": metadata,
            "eventTime": micro_time(_now()),
            "reportingController": self.scheduler_name,
            "reportingInstance": self.instance,
            "action": action,
            "reason": reason,
            "type": type_,
            "note": note,
            "regarding": {k: v for k, v in regarding.items() if v is not None},
        }

    def _create(self, body: dict[str, Any]) -> None:
        self.client.post(self._events_path(body), body)

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
            deadline = time.monotonic() + 10.0  # the answers of the last pipelined posts
            taken = 0
            while taken < LAZY_IN_FLIGHT and self._lazy_slots.acquire(timeout=max(0.0, deadline - time.monotonic())):
                taken += 1
        if self._lazy_pipeline is not None:
            # dropping (not ``wait``): do not join its thread, which may sit in a request to an API server that
            # does not answer -- the shutdown budget (app/handover.py) has been spent already
            self._lazy_pipeline.close(timeout=5.0 if wait else 0.0)
        self._lazy_pool.shutdown(wait=wait, cancel_futures=not wait)
        self._pool.shutdown(wait=wait, cancel_futures=not wait)
