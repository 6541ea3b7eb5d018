"""Prometheus metrics under kube-scheduler's names, prefixed ``policyscheduler_``.

A registry per scheduler (not the process-global one), so tests and several schedulers in one process
never collide. Queue and cache sizes are read at scrape time by a collector, not pushed.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

__all__ = ["SchedulerMetrics"]

_ATTEMPT_BUCKETS = tuple(0.001 * 2**i for i in range(15))  # 1 ms x 2^0..14, as kube-scheduler
_SLI_BUCKETS = tuple(0.01 * 2**i for i in range(20))  # 10 ms x 2^0..19


class _Sizes(Collector):
    def __init__(self, pending: Callable[[], dict[str, int]], cache: Callable[[], dict[str, int]],
                 leader: Callable[[], bool], name: str, digest: Callable[[], str] | None,
                 reload_ok: Callable[[], bool]) -> None:
        self._pending, self._cache, self._leader, self._name = pending, cache, leader, name
        self._digest, self._reload_ok = digest, reload_ok

    def collect(self):  # type: ignore[no-untyped-def]
        pending = GaugeMetricFamily("policyscheduler_pending_pods", "Pending pods by queue.", labels=["queue"])
        for queue, count in self._pending().items():
            pending.add_metric([queue], count)
        yield pending
        cache = GaugeMetricFamily("policyscheduler_scheduler_cache_size", "Objects in the scheduler cache.",
                                  labels=["type"])
        for kind, count in self._cache().items():
            cache.add_metric([kind], count)
        yield cache
        leader = GaugeMetricFamily("policyscheduler_leader_election_master_status",
                                   "1 while this replica holds the lease.", labels=["name"])
        leader.add_metric([self._name], 1 if self._leader() else 0)
        yield leader
        if self._digest is not None:
            info = GaugeMetricFamily("policyscheduler_policy_info",
                                     "1 for the digest of the policy set in force.", labels=["digest"])
            info.add_metric([self._digest()[:12]], 1)
            yield info
            yield GaugeMetricFamily("policyscheduler_policy_last_reload_successful",
                                    "0 while the policy sources do not load (the last good set is in force).",
                                    value=1 if self._reload_ok() else 0)


class SchedulerMetrics:
    """The scheduler's metrics; ``registry`` is what /metrics serves."""

    def __init__(self, profile: str, *, pending: Callable[[], dict[str, int]],
                 cache: Callable[[], dict[str, int]], leader: Callable[[], bool],
                 policy_digest: Callable[[], str] | None = None) -> None:
        self.profile = profile
        self.registry = CollectorRegistry()
        r = self.registry
        self.attempts = Counter("policyscheduler_schedule_attempts", "Scheduling attempts by result.",
                                ["result", "profile"], registry=r)
        self.attempt_duration = Histogram("policyscheduler_scheduling_attempt_duration_seconds",
                                          "Scheduling attempt latency (algorithm + assume).",
                                          ["result", "profile"], buckets=_ATTEMPT_BUCKETS, registry=r)
        self.algorithm_duration = Histogram("policyscheduler_scheduling_algorithm_duration_seconds",
                                            "Policy evaluation latency.", buckets=_ATTEMPT_BUCKETS, registry=r)
        self.binding_duration = Histogram("policyscheduler_binding_duration_seconds", "Binding latency.",
                                          ["result"], buckets=_ATTEMPT_BUCKETS, registry=r)
        self.sli_duration = Histogram("policyscheduler_pod_scheduling_sli_duration_seconds",
                                      "From first enqueue to bind, by attempts.", ["attempts"],
                                      buckets=_SLI_BUCKETS, registry=r)
        self.watch_errors = Counter("policyscheduler_watch_errors", "List/watch failures by resource.",
                                    ["resource"], registry=r)
        self.relists = Counter("policyscheduler_watch_relists", "Relists after 410 Gone by resource.",
                               ["resource"], registry=r)
        self.policy_reloads = Counter("policyscheduler_policy_reloads", "Policy reloads by result.",
                                      ["result"], registry=r)
        for result in ("success", "error"):
            self.policy_reloads.labels(result)
        self.reload_ok = True
        """False while the latest policy sources do not load (or the ConfigMap is gone)."""
        r.register(_Sizes(pending, cache, leader, profile, policy_digest, lambda: self.reload_ok))

    def attempt(self, result: str, seconds: float) -> None:
        self.attempts.labels(result, self.profile).inc()
        self.attempt_duration.labels(result, self.profile).observe(seconds)

    def bound(self, result: str, seconds: float) -> None:
        self.binding_duration.labels(result).observe(seconds)

    def scheduled_sli(self, attempts: int, seconds: float) -> None:
        self.sli_duration.labels(str(attempts) if attempts < 15 else "15+").observe(seconds)
