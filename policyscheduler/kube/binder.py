"""Binding through the ``pods/binding`` subresource, asynchronously.

The scheduling loop hands every scheduled attempt to :meth:`Binder.bind` and goes on with the next pod
while the Binding (``metadata.uid`` set, so a pod deleted and recreated under the same name is never
bound by mistake) is POSTed through a :class:`~policyscheduler.kube.pipeline.Pipeline`: one thread writes
the binds pipelined on a few kept connections and reads their answers (kube/pipeline.py: why). Outcomes,
reported back to the cycle:

* 201: bound; the ``Scheduled`` event is posted.
* 409 (already bound, or a uid mismatch) and 404 (pod gone): calm -- the assumption is forgotten and
  the pod leaves the queue; the watch shows what really happened. A 409 is first checked against the pod:
  when it sits on the very node we chose (same uid), our earlier POST succeeded but its answer was lost
  (a retry after a connection reset gets the 409), so it counts as bound and gets its ``Scheduled`` event.
* connection failures (including a pipelined bind whose connection died before its answer came), 429
  and 5xx are retried twice, after 0.2 and 0.5 s; if they persist: forget the assumption and retry the
  pod after backoff.

Everything but a 201 is handled on a small thread pool (it may sleep, retry and read the pod), so the
pipeline thread only ever does the quick success path.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Generic, Protocol, TypeVar

from policyscheduler.kube.pipeline import Pipeline
from policyscheduler.kube.rest import ApiError, RestClient, pod_path

__all__ = ["Bindable", "BindOutcomes", "Binder", "BindResult"]

log = logging.getLogger("policyscheduler.binder")

_compact = json.JSONEncoder(separators=(",", ":")).encode
"""``json.dumps(body, separators=(",", ":"))`` without building an encoder per bind."""

BindResult = str
"""``bound``, ``conflict`` (409), ``gone`` (404) or ``error``."""


DEFAULT_LANES = 16
"""Connections the binds go out on. The API server answers one connection's requests one after another,
so the lanes are the binds it works on at once; with more at once it and etcd did less work per bind.
Measured live (3,000 basic pods on 1,000 nodes, ``policyscheduler run`` as bench/e2e.py starts it, the
settings interleaved over 4 rounds; means of API server + etcd CPU per bind, and burst seconds):
4 lanes x depth 4: 1.62 ms, 4.46 s; 8 x 2: 1.56 ms, 4.18 s; 8 x 4: 1.52 ms, 4.14 s; 16 x 1: 1.33 ms,
3.68 s (16 x 1 was the faster of it and 4 x 4 in each round). 24 and 32 lanes, and 16 x 2, did no
better than 16 x 1. The bind ceiling's binder (bench/e2e.py) also keeps 16 binds at once.
``bench/http_bench.py --lanes 16x1 4x4`` shows our own CPU per bind about the same either way."""
DEFAULT_DEPTH = 1
"""Binds waiting for their answer per connection, at most. Pipelining (depth > 1) only queues a bind
behind another on the server's side; the one pipeline thread still reads all lanes after one ``poll``,
which is where the CPU per bind was saved (kube/pipeline.py)."""
RETRY_WORKERS = 2
"""Threads for the slow paths (retries after a pause, the 409 check's GET)."""


class Bindable(Protocol):
    """What a bind needs of a scheduling attempt (:class:`policyscheduler.cycle.Attempt` is one): the pod as
    the watch delivered it, the node chosen and a ``namespace/name`` for logs. A protocol, so that this
    package never imports the scheduling cycle."""

    @property
    def pod(self) -> Mapping[str, Any]: ...

    @property
    def node(self) -> str | None: ...

    @property
    def key(self) -> str: ...


A = TypeVar("A", bound=Bindable)
A_contra = TypeVar("A_contra", bound=Bindable, contravariant=True)


class BindOutcomes(Protocol[A_contra]):
    """Who hears how each bind ended (:class:`policyscheduler.cycle.Cycle` is one)."""

    def binding_succeeded(self, attempt: A_contra) -> None:
        """The API server accepted the binding."""
        ...

    def binding_failed(self, attempt: A_contra, *, retry: bool, reason: str) -> object:
        """The binding failed; ``retry``: try the pod again after backoff."""
        ...


class Binder(Generic[A]):
    """Async binder; ``on_done(attempt, result, seconds, error)`` runs after every bind (on the pipeline
    thread for a bind that succeeded at once, on a retry thread otherwise)."""

    def __init__(self, client: RestClient, cycle_ref: Callable[[], BindOutcomes[A]], *, lanes: int = DEFAULT_LANES,
                 depth: int = DEFAULT_DEPTH,
                 on_done: Callable[[A, BindResult, float, str | None], None] | None = None) -> None:
        self.client = client
        self._cycle = cycle_ref
        self._lanes, self._depth = lanes, depth
        self._pipeline: Pipeline | None = None
        """Started by the first bind (a standby replica never opens its connections)."""
        self._pool = ThreadPoolExecutor(max_workers=RETRY_WORKERS, thread_name_prefix="bind-retry")
        self._on_done = on_done
        self._lock = threading.Lock()
        self._in_flight = 0
        self._idle = threading.Condition(self._lock)
        self.counts: dict[str, int] = {}
        self.retry_delays: tuple[float, ...] = (0.2, 0.5)

    def bind(self, attempt: A) -> None:
        """Queue the binding of ``attempt.pod`` to ``attempt.node``."""
        with self._lock:
            self._in_flight += 1
            pipeline = self._pipeline
            if pipeline is None:
                pipeline = self._pipeline = self.client.pipeline(lanes=self._lanes, depth=self._depth, name="bind")
        started = time.perf_counter()
        meta: Mapping[str, Any] = attempt.pod.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or "default"), str(meta.get("name") or "")
        body = {"apiVersion": "v1", "kind": "Binding",
                "metadata": {"name": name, "namespace": namespace, **({"uid": meta["uid"]} if meta.get("uid") else {})},
                "target": {"apiVersion": "v1", "kind": "Node", "name": attempt.node}}
        path = pod_path(namespace, name, "binding")

        def answered(status: int, raw: bytes, detail: str | None) -> None:
            if 200 <= status < 300:
                self._finish(attempt, started, "bound", None)
            else:
                error = ApiError("POST", path, status, raw.decode("utf-8", errors="replace"),
                                 detail=f"{self.client.server}: {detail}" if detail else "")
                try:
                    self._pool.submit(self._settle, attempt, started, path, body, error)
                except RuntimeError:  # shut down (SIGTERM, lost lease): no retry, the pod is retried later
                    self._finish(attempt, started, "error", str(error))

        pipeline.submit("POST", path, _compact(body).encode(), answered)

    @property
    def in_flight(self) -> int:
        with self._lock:
            return self._in_flight

    def _settle(self, attempt: A, started: float, path: str, body: dict[str, Any],
                first: ApiError) -> None:
        """The slow path: retry a bind that failed for want of a server, sort out 409 and 404."""
        result, error = "bound", None
        try:
            try:
                self._retry(path, body, first)
            except ApiError as err:
                error = str(err)
                result = {409: "conflict", 404: "gone"}.get(err.status, "error")
                if result == "conflict":
                    meta = body["metadata"]
                    if self._bound_by_us(meta["namespace"], meta["name"], meta.get("uid"), attempt.node):
                        result, error = "bound", None
        except Exception:
            log.exception("binding %s failed unexpectedly", path)
            result, error = "error", "unexpected failure (logged)"
        self._finish(attempt, started, result, error)

    def _retry(self, path: str, body: dict[str, Any], first: ApiError) -> None:
        """After the pipelined POST failed with ``first``: raise it when it is final; a connection failure,
        429 or 5xx is retried after each of :attr:`retry_delays` (a lost answer to a bind that did happen
        then comes back as 409, which :meth:`_bound_by_us` recognises)."""
        delays = list(self.retry_delays)
        error = first
        while True:
            if not (error.status == 0 or error.status == 429 or error.status >= 500) or not delays:
                raise error
            time.sleep(delays.pop(0))
            try:
                self.client.post(path, body)
                return
            except ApiError as err:
                error = err

    def _finish(self, attempt: A, started: float, result: BindResult, error: str | None) -> None:
        try:
            cycle = self._cycle()
            if result == "bound":
                cycle.binding_succeeded(attempt)
            else:
                cycle.binding_failed(attempt, retry=result == "error", reason=error or result)
            if self._on_done is not None:
                self._on_done(attempt, result, time.perf_counter() - started, error)
        except Exception:
            log.exception("binding %s: reporting the result failed", attempt.key)
        finally:
            with self._lock:
                self.counts[result] = self.counts.get(result, 0) + 1
                self._in_flight -= 1
                if self._in_flight == 0:
                    self._idle.notify_all()

    def _bound_by_us(self, namespace: str, name: str, uid: Any, node: str | None) -> bool:
        """After a 409: is the pod (same uid) already on ``node``? Then our bind did happen."""
        try:
            pod = self.client.get(pod_path(namespace, name))
        except ApiError:
            return False
        meta = pod.get("metadata") or {}
        return (pod.get("spec") or {}).get("nodeName") == node and (not uid or meta.get("uid") == uid)

    def drain(self, timeout: float) -> bool:
        """Wait until no bind is in flight (SIGTERM: finish in-flight binds); False on timeout."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._in_flight:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True

    def shutdown(self) -> None:
        if self._pipeline is not None:
            self._pipeline.close()
        self._pool.shutdown(wait=True)
