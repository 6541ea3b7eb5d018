"""Binding through the ``pods/binding`` subresource, asynchronously.

The scheduling loop hands every scheduled attempt to :meth:`Binder.bind` and goes on with the next pod
while a thread pool POSTs the Binding (``metadata.uid`` set, so a pod deleted and recreated under the
same name is never bound by mistake). Outcomes, reported back to the cycle:

* 201: bound; the ``Scheduled`` event is posted.
* 409 (already bound, or a uid mismatch) and 404 (pod gone): calm -- the assumption is forgotten and
  the pod leaves the queue; the watch shows what really happened. A 409 is first checked against the pod:
  when it sits on the very node we chose (same uid), our earlier POST succeeded but its answer was lost
  (a retry after a connection reset gets the 409), so it counts as bound and gets its ``Scheduled`` event.
* connection failures, 429 and 5xx are retried twice within the bind; if they persist: forget the
  assumption and retry the pod after backoff.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from policyscheduler.cycle import Attempt, Cycle
from policyscheduler.kube.rest import ApiError, RestClient, pod_path

__all__ = ["Binder", "BindResult"]

log = logging.getLogger("policyscheduler.binder")

BindResult = str
"""``bound``, ``conflict`` (409), ``gone`` (404) or ``error``."""


DEFAULT_WORKERS = 8
"""Bind threads. Why 8: binds are bound by the API server (~2 ms each here, most of it waiting); in
bench/http_bench.py (1000 binds fed at ~0.7 ms of loop CPU per pod) 8 threads bound as fast as 16 with
~20% less CPU and half the thread wake-ups per bind (2.2 against 4-5: every one is a GIL hand-off that
also interrupts the scheduling loop), while 4 and 6 fell behind (1.2-1.5x the wall time)."""


class Binder:
    """Async binder; ``on_done(attempt, result, seconds, error)`` runs after every bind."""

    def __init__(self, client: RestClient, cycle_ref: Callable[[], Cycle], *, workers: int = DEFAULT_WORKERS,
                 on_done: Callable[[Attempt, BindResult, float, str | None], None] | None = None) -> None:
        self.client = client
        self._cycle = cycle_ref
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bind")
        self._on_done = on_done
        self._lock = threading.Lock()
        self._in_flight = 0
        self._idle = threading.Condition(self._lock)
        self.counts: dict[str, int] = {}
        self.retry_delays: tuple[float, ...] = (0.2, 0.5)

    def bind(self, attempt: Attempt) -> None:
        """Queue the binding of ``attempt.pod`` to ``attempt.node``."""
        with self._lock:
            self._in_flight += 1
        self._pool.submit(self._bind, attempt)

    @property
    def in_flight(self) -> int:
        with self._lock:
            return self._in_flight

    def _bind(self, attempt: Attempt) -> None:
        started = time.perf_counter()
        meta: dict[str, Any] = attempt.pod.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or "default"), str(meta.get("name") or "")
        body = {"apiVersion": "v1", "kind": "Binding",
                "metadata": {"name": name, "namespace": namespace, **({"uid": meta["uid"]} if meta.get("uid") else {})},
                "target": {"apiVersion": "v1", "kind": "Node", "name": attempt.node}}
        result, error = "bound", None
        try:
            try:
                self._post(pod_path(namespace, name, "binding"), body)
            except ApiError as err:
                error = str(err)
                result = {409: "conflict", 404: "gone"}.get(err.status, "error")
                if result == "conflict" and self._bound_by_us(namespace, name, meta.get("uid"), attempt.node):
                    result, error = "bound", None
            cycle = self._cycle()
            if result == "bound":
                cycle.binding_succeeded(attempt)
            else:
                cycle.binding_failed(attempt, retry=result == "error", reason=error or result)
            if self._on_done is not None:
                self._on_done(attempt, result, time.perf_counter() - started, error)
        except Exception:
            log.exception("binding %s/%s failed unexpectedly", namespace, name)
        finally:
            with self._lock:
                self.counts[result] = self.counts.get(result, 0) + 1
                self._in_flight -= 1
                if self._in_flight == 0:
                    self._idle.notify_all()

    def _post(self, path: str, body: dict[str, Any]) -> None:
        """POST the binding; a connection failure, 429 or 5xx is retried twice at once (a lost answer
        to a bind that did happen then comes back as 409, which :meth:`_bound_by_us` recognises)."""
        for delay in self.retry_delays:
            try:
                self.client.post(path, body)
                return
            except ApiError as err:
                if not (err.status == 0 or err.status == 429 or err.status >= 500):
                    raise
                time.sleep(delay)
        self.client.post(path, body)

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
        self._pool.shutdown(wait=True)
