"""Prometheus metrics under kube-scheduler's names, prefixed ``policyscheduler_``.

A registry per scheduler (not the process-global one), so tests and several schedulers in one process
never collide. Queue and cache sizes are read at scrape time by a collector, not pushed.

Profiles: one process, one registry; what belongs to one profile carries a ``profile`` label (its
scheduler name): attempts and their latency (as kube-scheduler labels them), the policy set in force
(``policyscheduler_policy_info{digest,profile}``), reloads (``policyscheduler_policy_reloads_total{result,
profile}``), ``policyscheduler_policy_last_reload_successful{profile}`` and the shadow profiles'
``policyscheduler_shadow_decisions_total{profile,agreement}`` (see :mod:`.shadow`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

__all__ = ["SchedulerMetrics"]

_ATTEMPT_BUCKETS = tuple(0.001 * 2**i for i in range(15))  # 1 ms x 2^0..14, as kube-scheduler
_SLI_BUCKETS = tuple(0.01 * 2**i for i in range(20))  # 10 ms x 2^0..19


class _Sizes(Collector):
    def __init__(self, pending: Callable[[], dict[str, int]], cache: Callable[[], dict[str, int]],
                 leader: Callable[[], bool], name: str, digest: Callable[[], Mapping[str, str]] | None,
                 reload_ok: Callable[[], Mapping[str, bool]]) -> None:
        self._pending, self._cache, self._leader, self._name = pending, cache, leader, name
        self._digest, self._reload_ok = digest, reload_ok

    def collect(self):  # type: ignore[no-untyped-def]
        pending = GaugeMetricFamily("policyscheduler_pending_pods",
                                    "Pending pods by queue (active, backoff, unschedulable, gated).", labels=["queue"])
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
                                     "1 for the digest of the policy set in force, per profile.",
                                     labels=["digest", "profile"])
            for profile, digest in self._digest().items():
                info.add_metric([digest[:12], profile], 1)
            yield info
            ok = GaugeMetricFamily("policyscheduler_policy_last_reload_successful",
                                   "0 while the policy sources do not load (the last good set is in force).",
                                   labels=["profile"])
            for profile, good in self._reload_ok().items():
                ok.add_metric([profile], 1 if good else 0)
            yield ok


class SchedulerMetrics:
    """The scheduler's metrics; ``registry`` is what /metrics serves."""

    def __init__(self, profile: str, *, pending: Callable[[], dict[str, int]],
                 cache: Callable[[], dict[str, int]], leader: Callable[[], bool],
                 policy_digest: Callable[[], str | Mapping[str, str]] | None = None,
                 profiles: Sequence[str] = (), lease_name: str | None = None) -> None:
        """``profile``: the default profile label; ``profiles``: every profile (default ``[profile]``);
        ``policy_digest``: the digest in force, or profile -> digest; ``lease_name``: the leader gauge's name."""
        self.profile = profile
        self.profiles = list(profiles) or [profile]
        self.registry = CollectorRegistry()
        r = self.registry
        self.attempts = Counter("policyscheduler_schedule_attempts", "Scheduling attempts by result and profile.",
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
        self.policy_reloads = Counter("policyscheduler_policy_reloads", "Policy reloads by result and profile.",
                                      ["result", "profile"], registry=r)
        for name in self.profiles:
            for result in ("success", "error"):
                self.policy_reloads.labels(result, name)
        self.shadow_decisions = Counter("policyscheduler_shadow_decisions",
                                        "Shadow profiles: pods the shadowed scheduler placed, by whether this "
                                        "profile's policies agree (agree, tie, disagree, unschedulable, error).",
                                        ["profile", "agreement"], registry=r)
        # The labelled children, looked up once per label value (``labels()`` validates and locks on every
        # call; these run several times per pod). A child lives as long as its metric: nothing removes them.
        self._attempt_children: dict[tuple[str, str], tuple[Counter, Histogram]] = {}
        self._bound_children: dict[str, Histogram] = {}
        self._sli_children: dict[str, Histogram] = {}
        self.reload_ok: dict[str, bool] = {name: True for name in self.profiles}
        """Per profile: False while its latest policy sources do not load (or its ConfigMap is gone)."""
        digests: Callable[[], Mapping[str, str]] | None = None
        if policy_digest is not None:
            def digests() -> Mapping[str, str]:
                value = policy_digest()
                return {profile: value} if isinstance(value, str) else value
        r.register(_Sizes(pending, cache, leader, lease_name or profile, digests, lambda: dict(self.reload_ok)))

    def attempt(self, result: str, seconds: float, profile: str | None = None) -> None:
        """One scheduling attempt: its count and latency, by result and profile."""
        key = (result, profile or self.profile)
        children = self._attempt_children.get(key)
        if children is None:
            children = self._attempt_children[key] = (self.attempts.labels(*key), self.attempt_duration.labels(*key))
        children[0].inc()
        children[1].observe(seconds)

    def bound(self, result: str, seconds: float) -> None:
        """One bind's latency by result."""
        child = self._bound_children.get(result)
        if child is None:
            child = self._bound_children[result] = self.binding_duration.labels(result)
        child.observe(seconds)

    def scheduled_sli(self, attempts: int, seconds: float) -> None:
        """First enqueue to bind of a pod, by how many attempts it took ("15+" beyond 14)."""
        label = str(attempts) if attempts < 15 else "15+"
        child = self._sli_children.get(label)
        if child is None:
            child = self._sli_children[label] = self.sli_duration.labels(label)
        child.observe(seconds)
