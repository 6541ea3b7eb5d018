"""Leader election with a ``coordination.k8s.io/v1`` Lease, client-go's algorithm.

One Lease named after the scheduler (``<namespace>/<scheduler-name>``). A candidate reads it every
``retry_period``; it takes the lease when it is free (no holder), or when the holder has not changed
the record for ``lease_duration`` *as observed locally* (our clock only, so clocks of different hosts
never have to agree). Writes are optimistic (``resourceVersion``): of two candidates only one wins.

The leader renews every ``retry_period``; when no renewal succeeded for ``renew_deadline`` (or someone
else holds the lease) it has lost: ``on_stopped_leading`` runs at once, so scheduling stops before
another replica can take over (renew_deadline < lease_duration). Every request of a renewal is cut off
at the renew deadline (client-go renews under a context with that deadline), so an API server that
accepts connections and never answers cannot keep a leader that lost its lease leading: it stops within
``renew_deadline`` + ``retry_period`` of its last renewal whatever the server does. :meth:`release`
(SIGTERM) clears the holder so a standby takes over without waiting out the lease; it is bounded by its
``timeout`` (a shutdown must not wait for an unreachable server).
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from policyscheduler.kube.rest import ApiError, RestClient

__all__ = ["LeaderElector"]

log = logging.getLogger("policyscheduler.lease")


def _micro(moment: float) -> str:
    return _dt.datetime.fromtimestamp(moment, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    """See the module docstring. Callbacks run on the elector's thread."""

    def __init__(
        self,
        client: RestClient,
        namespace: str,
        name: str,
        *,
        identity: str | None = None,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        on_started_leading: Callable[[], None] = lambda: None,
        on_stopped_leading: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not retry_period < renew_deadline < lease_duration:
            raise ValueError("leader election needs retry period < renew deadline < lease duration")
        self.client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity or f"{socket.gethostname()}_{os.getpid()}_{uuid.uuid4().hex[:8]}"
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._clock = clock
        self._stop = threading.Event()
        self._leading = threading.Event()
        self._observed: dict[str, Any] | None = None
        self._observed_at = 0.0
        self._last_renew = 0.0
        self._thread: threading.Thread | None = None
        self.lost = threading.Event()
        self.transitions = 0

    @property
    def path(self) -> str:
        return f"/apis/coordination.k8s.io/v1/namespaces/{quote(self.namespace, safe='')}/leases/{quote(self.name, safe='')}"

    @property
    def is_leader(self) -> bool:
        return self._leading.is_set()

    def seconds_since_renew(self) -> float:
        """For /healthz: how long ago the leader last renewed (0 when not leading)."""
        return self._clock() - self._last_renew if self.is_leader else 0.0

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name="leader-election", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    # -- the loop ------------------------------------------------------------------------------------

    def run(self) -> None:
        """Acquire, then renew until the lease is lost or :meth:`stop` is called."""
        while not self._stop.is_set() and not self._leading.is_set():
            if self._try_acquire_or_renew():
                self._last_renew = self._clock()
                self._leading.set()
                log.info("became leader of lease %s/%s as %s", self.namespace, self.name, self.identity)
                self._on_started()
                break
            self._stop.wait(self.retry_period)
        while not self._stop.is_set() and self._leading.is_set():
            self._stop.wait(self.retry_period)
            if self._stop.is_set():
                break
            if self._try_acquire_or_renew():
                self._last_renew = self._clock()
            elif self._clock() - self._last_renew >= self.renew_deadline or self._held_by_other():
                self._leading.clear()
                self.lost.set()
                log.error("lost lease %s/%s (last renewal %.1fs ago)", self.namespace, self.name,
                          self._clock() - self._last_renew)
                self._on_stopped()

    def _held_by_other(self) -> bool:
        spec = (self._observed or {}).get("spec") or {}
        holder = spec.get("holderIdentity")
        return bool(holder) and holder != self.identity

    def _timeout(self) -> float:
        """How long one request may take: while leading, until the renew deadline (at least 0.1 s);
        while acquiring, one retry period."""
        if self._leading.is_set():
            return max(0.1, self.renew_deadline - (self._clock() - self._last_renew))
        return max(0.1, self.retry_period)

    def _try_acquire_or_renew(self) -> bool:
        now_wall = time.time()
        timeout = self._timeout()
        try:
            lease = self.client.request("GET", self.path, timeout=timeout)
        except ApiError as err:
            if err.status != 404:
                log.warning("reading lease failed: %s", err)
                return False
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace},
                    "spec": self._spec(now_wall, acquire=True, transitions=0)}
            try:
                self._observed = self.client.request(
                    "POST", f"/apis/coordination.k8s.io/v1/namespaces/{quote(self.namespace, safe='')}/leases", body,
                    timeout=timeout)
                self._observed_at = self._clock()
                self.transitions += 1
                return True
            except ApiError as err2:
                log.info("creating lease failed: %s", err2)
                return False
        spec = lease.get("spec") or {}
        if self._observed is None or (self._observed.get("spec") or {}) != spec:
            self._observed, self._observed_at = lease, self._clock()
        holder = spec.get("holderIdentity") or ""
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        if holder and holder != self.identity and self._clock() - self._observed_at < duration:
            return False  # somebody else holds a live lease
        taking = holder != self.identity
        transitions = int(spec.get("leaseTransitions") or 0) + (1 if taking else 0)
        new_spec = self._spec(now_wall, acquire=taking, transitions=transitions)
        if not taking:
            new_spec["acquireTime"] = spec.get("acquireTime") or new_spec["acquireTime"]
        body = {**lease, "spec": new_spec}
        try:
            # resourceVersion inside: optimistic
            self._observed = self.client.request("PUT", self.path, body, timeout=self._timeout())
            self._observed_at = self._clock()
            if taking:
                self.transitions += 1
            return True
        except ApiError as err:
            if err.status != 409:
                log.warning("updating lease failed: %s", err)
            return False

    def _spec(self, now: float, *, acquire: bool, transitions: int) -> dict[str, Any]:
        return {"holderIdentity": self.identity, "leaseDurationSeconds": round(self.lease_duration),
                "acquireTime": _micro(now), "renewTime": _micro(now), "leaseTransitions": transitions}

    def release(self, timeout: float = 5.0) -> bool:
        """Give the lease up (clean shutdown): clear the holder so a standby need not wait it out. Each
        request waits at most ``timeout`` seconds; False when the lease was not released."""
        self._stop.set()
        if not self._leading.is_set():
            return False
        self._leading.clear()
        try:
            lease = self.client.request("GET", self.path, timeout=timeout)
            if (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                return False
            now = time.time()
            lease["spec"] = {**lease["spec"], "holderIdentity": "", "leaseDurationSeconds": 1,
                             "renewTime": _micro(now), "acquireTime": _micro(now)}
            self.client.request("PUT", self.path, lease, timeout=timeout)
            log.info("released lease %s/%s", self.namespace, self.name)
            return True
        except ApiError as err:
            log.warning("releasing lease failed: %s", err)
            return False
