"""Client-side rate limiting of API requests: client-go's token bucket (``clientConnection.qps`` / ``burst``).

A bucket holds at most ``burst`` tokens and gains ``qps`` tokens per second; every request takes one.
A full bucket lets ``burst`` requests through at once, after which requests go at ``qps`` per second. Like
client-go's limiter (``golang.org/x/time/rate`` ``Wait``), a request that finds the bucket empty *reserves*
the next token -- the balance goes negative -- and sleeps until that token is due, so concurrent callers are
served in the order they asked and never spin.

What is limited (:meth:`policyscheduler.kube.rest.RestClient.request`): every list page, get, create,
update, patch -- binds, events, condition patches, lease renewals, ConfigMap reads. Watch *streams* are not:
a watch is one long request whose events are not requests (client-go throttles only the watch's opening,
which our reflectors do rarely: once per 5-10 minutes per resource).

Defaults: unset means no limit (``qps`` ``None``). kube-scheduler defaults to 50/100, which would cap a
burst of bindings at 50 pods per second; our API-server load per pod is kube-scheduler's (one bind, one
event, lazily), so the choice is left to the configuration: set ``clientConnection.qps``/``burst`` (or
``--kube-api-qps``/``--kube-api-burst``) to kube-scheduler's values to get its behaviour.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["RateLimiter"]


class RateLimiter:
    """A token bucket (see the module docstring). ``clock`` and ``sleep`` are injectable for tests."""

    def __init__(self, qps: float, burst: int, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if not qps > 0:
            raise ValueError(f"qps must be positive, not {qps!r}")
        if burst < 1:
            raise ValueError(f"burst must be at least 1, not {burst!r}")
        self.qps = float(qps)
        self.burst = int(burst)
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._tokens = float(burst)  # a new bucket is full (client-go's too)
        self._last = clock()
        self.waited = 0.0
        """Seconds callers spent waiting in total (diagnostics)."""
        self.throttled = 0
        """Requests that had to wait."""

    def reserve(self) -> float:
        """Take one token now; the seconds until it is due (0 when one was available). The caller must not
        send before then -- :meth:`acquire` sleeps for it."""
        with self._lock:
            now = self._clock()
            if now > self._last:
                self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
                self._last = now
            self._tokens -= 1.0
            if self._tokens >= 0.0:
                return 0.0
            delay = -self._tokens / self.qps
            self.waited += delay
            self.throttled += 1
            return delay

    def acquire(self) -> float:
        """Block until the caller may send one request; the seconds waited."""
        delay = self.reserve()
        if delay > 0:
            self._sleep(delay)
        return delay

    def tokens(self) -> float:
        """The balance now (negative: that many requests are waiting for their token)."""
        with self._lock:
            now = self._clock()
            return min(float(self.burst), self._tokens + max(0.0, now - self._last) * self.qps)
