"""Prometheus metrics under kube-scheduler v1.35's names (``scheduler_*``), ours (``policyscheduler_*``)
only for what kube-scheduler has none of.

Why kube's names: the dashboards and alerts people already run for kube-scheduler (the kube-prometheus
mixin, Grafana's scheduler boards) then work unchanged. Names, labels and buckets follow
``pkg/scheduler/metrics/metrics.go`` of v1.35.4; the README's metrics table lists each one with what feeds it.

A registry per scheduler (not the process-global one), so tests and several schedulers in one process
never collide. Queue sizes, cache sizes, unschedulable pods and watch counters are read at scrape time by
a collector, not pushed.

How our rules map to kube's ``plugin`` label: a filter rule is a Filter plugin, named by its rule name
(``scheduler_unschedulable_pods{plugin="<rule>"}`` counts the pods waiting in the unschedulable pool whose
last attempt had a node rejected by that rule, once per rule, as kube counts a pod once per rejecting
plugin); the bind is kube's ``DefaultBinder`` at ``Bind``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Histogram, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

__all__ = ["ATTEMPT_RESULTS", "SchedulerMetrics", "unschedulable_plugins"]

_ATTEMPT_BUCKETS = tuple(0.001 * 2**i for i in range(15))  # 1 ms x 2^0..14, as kube-scheduler
_SLI_BUCKETS = tuple(0.01 * 2**i for i in range(20))  # 10 ms x 2^0..19
_ATTEMPTS_BUCKETS = (1.0, 2.0, 4.0, 8.0, 16.0)  # ExponentialBuckets(1, 2, 5)
_EXTENSION_BUCKETS = tuple(0.0001 * 2**i for i in range(12))  # 0.1 ms x 2^0..11
_PLUGIN_BUCKETS = tuple(0.00001 * 1.5**i for i in range(20))  # 10 us x 1.5^0..19
_VICTIM_BUCKETS = tuple(float(2**i) for i in range(7))  # ExponentialBuckets(1, 2, 7)

ATTEMPT_RESULTS = ("scheduled", "unschedulable", "error")
"""kube-scheduler's ``result`` values; our "skipped" attempts (a pod that left meanwhile) are not attempts."""

BIND_STATUS = {"bound": "Success", "conflict": "Error", "error": "Error", "gone": "Error"}
"""Our bind results -> kube's framework status code names (``status`` label)."""


class _Queue(Protocol):
    def pending(self) -> dict[str, int]: ...
    def unschedulable(self) -> list[Any]: ...


def unschedulable_plugins(decision: Any) -> frozenset[str]:
    """The rules ("plugins") that rejected some node in ``decision`` (empty without a decision)."""
    verdicts = getattr(decision, "verdicts", None)
    if not verdicts:
        return frozenset()
    return frozenset(v.rule for v in verdicts.values() if v.rule is not None)


def _scheduler_name(pod: Mapping[str, Any]) -> str:
    spec = pod.get("spec")
    name = spec.get("schedulerName") if isinstance(spec, Mapping) else None
    return str(name or "default-scheduler")


class _Sizes(Collector):
    """Everything read at scrape time."""

    def __init__(self, owner: SchedulerMetrics, pending: Callable[[], dict[str, int]],
                 cache: Callable[[], dict[str, int]], leader: Callable[[], bool], name: str,
                 digest: Callable[[], Mapping[str, str]] | None) -> None:
        self._owner, self._pending, self._cache, self._leader, self._name = owner, pending, cache, leader, name
        self._digest = digest
        self._plugins: dict[int, tuple[Any, frozenset[str]]] = {}  # id(decision) -> (decision, its rules)

    def collect(self) -> Iterable[Any]:
        owner = self._owner
        pending = GaugeMetricFamily("scheduler_pending_pods",
                                    "Pending pods by queue (active, backoff, unschedulable, gated).", labels=["queue"])
        for queue, count in self._pending().items():
            pending.add_metric([queue], count)
        yield pending
        cache = GaugeMetricFamily("scheduler_cache_size", "Number of nodes, pods, and assumed (bound) pods in the "
                                  "scheduler cache.", labels=["type"])
        for kind, count in self._cache().items():
            cache.add_metric([kind], count)
        yield cache
        incoming = CounterMetricFamily("scheduler_queue_incoming_pods", "Pods added to scheduling queues by event "
                                       "and queue type.", labels=["queue", "event"])
        for (queue, event), count in sorted(dict(owner.incoming_source()).items()):
            incoming.add_metric([queue, event], count)
        yield incoming
        yield self._unschedulable()
        goroutines = GaugeMetricFamily("scheduler_goroutines", "Binds in flight (kube: goroutines by operation).",
                                       labels=["operation"])
        goroutines.add_metric(["binding"], owner.binds_in_flight())
        yield goroutines
        leader = GaugeMetricFamily("leader_election_master_status",
                                   "1 while this replica holds the lease.", labels=["name"])
        leader.add_metric([self._name], 1 if self._leader() else 0)
        yield leader
        lists = CounterMetricFamily("policyscheduler_watch_relists", "Lists after the first one, by resource "
                                    "(a 410 Gone / too old resourceVersion, or a watch that had to start over).",
                                    labels=["resource"])
        for kind, stats in sorted(owner.watch_stats().items()):
            lists.add_metric([kind], getattr(stats, "relists", 0))
        yield lists
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
            for profile, good in dict(owner.reload_ok).items():
                ok.add_metric([profile], 1 if good else 0)
            yield ok

    def _unschedulable(self) -> GaugeMetricFamily:
        family = GaugeMetricFamily("scheduler_unschedulable_pods", "The number of unschedulable pods broken down "
                                   "by plugin (our filter rule) and profile.", labels=["plugin", "profile"])
        queue = self._owner.queue
        counts: dict[tuple[str, str], int] = {}
        seen: dict[int, tuple[Any, frozenset[str]]] = {}
        for entry in queue.unschedulable() if queue is not None else ():
            decision = entry.last_decision
            cached = self._plugins.get(id(decision))
            if cached is None or cached[0] is not decision:
                cached = (decision, unschedulable_plugins(decision))
            seen[id(decision)] = cached
            profile = _scheduler_name(entry.pod)
            for rule in cached[1]:
                counts[(rule, profile)] = counts.get((rule, profile), 0) + 1
        self._plugins = seen
        for (rule, profile), count in sorted(counts.items()):
            family.add_metric([rule, profile], count)
        return family


class SchedulerMetrics:
    """The scheduler's metrics; ``registry`` is what /metrics serves."""

    def __init__(self, profile: str, *, pending: Callable[[], dict[str, int]],
                 cache: Callable[[], dict[str, int]], leader: Callable[[], bool],
                 policy_digest: Callable[[], str | Mapping[str, str]] | None = None,
                 profiles: Sequence[str] = (), lease_name: str | None = None, queue: _Queue | None = None,
                 watch_stats: Callable[[], Mapping[str, object]] | None = None,
                 binds_in_flight: Callable[[], int] | None = None) -> None:
        """``profile``: the default profile label; ``profiles``: every profile (default ``[profile]``);
        ``policy_digest``: the digest in force, or profile -> digest; ``lease_name``: the leader gauge's name;
        ``queue``: the scheduling queue (its unschedulable pool and ``incoming`` counts); ``watch_stats``:
        resource -> :class:`~policyscheduler.kube.watch.WatchStats`; ``binds_in_flight``: binds not answered yet."""
        self.profile = profile
        self.profiles = list(profiles) or [profile]
        self.queue = queue
        self.watch_stats: Callable[[], Mapping[str, object]] = watch_stats or dict
        self.binds_in_flight: Callable[[], int] = binds_in_flight or (lambda: 0)
        self.incoming_source: Callable[[], Mapping[tuple[str, str], int]] = (
            lambda: getattr(queue, "incoming", {}))
        self.registry = CollectorRegistry()
        r = self.registry
        self.attempts = Counter("scheduler_schedule_attempts", "Number of attempts to schedule pods, by the result.",
                                ["result", "profile"], registry=r)
        self.attempt_duration = Histogram("scheduler_scheduling_attempt_duration_seconds",
                                          "Scheduling attempt latency in seconds (scheduling algorithm + binding).",
                                          ["result", "profile"], buckets=_ATTEMPT_BUCKETS, registry=r)
        self.algorithm_duration = Histogram("scheduler_scheduling_algorithm_duration_seconds",
                                            "Scheduling algorithm latency in seconds (policy evaluation).",
                                            buckets=_ATTEMPT_BUCKETS, registry=r)
        self.sli_duration = Histogram("scheduler_pod_scheduling_sli_duration_seconds",
                                      "E2e latency for a pod being scheduled, from the time the pod enters the "
                                      "scheduling queue, by attempts.", ["attempts"], buckets=_SLI_BUCKETS, registry=r)
        self.pod_attempts = Histogram("scheduler_pod_scheduling_attempts",
                                      "Number of attempts to successfully schedule a pod.",
                                      buckets=_ATTEMPTS_BUCKETS, registry=r)
        self.extension_duration = Histogram("scheduler_framework_extension_point_duration_seconds",
                                            "Latency for running all plugins of a specific extension point.",
                                            ["extension_point", "status", "profile"], buckets=_EXTENSION_BUCKETS,
                                            registry=r)
        self.plugin_duration = Histogram("scheduler_plugin_execution_duration_seconds",
                                         "Duration for running a plugin at a specific extension point.",
                                         ["plugin", "extension_point", "status"], buckets=_PLUGIN_BUCKETS,
                                         registry=r)
        self.preemption_attempts = Counter("scheduler_preemption_attempts", "Total preemption attempts in the "
                                           "cluster till now", registry=r)
        self.preemption_victims = Histogram("scheduler_preemption_victims", "Number of selected preemption victims",
                                            buckets=_VICTIM_BUCKETS, registry=r)
        self.watch_errors = Counter("policyscheduler_watch_errors", "List/watch failures by resource.",
                                    ["resource"], registry=r)
        self.policy_reloads = Counter("policyscheduler_policy_reloads", "Policy reloads by result and profile.",
                                      ["result", "profile"], registry=r)
        for name in self.profiles:
            for result in ("success", "error"):
                self.policy_reloads.labels(result, name)
            for result in ATTEMPT_RESULTS:
                self.attempts.labels(result, name)
        self.shadow_decisions = Counter("policyscheduler_shadow_decisions",
                                        "Shadow profiles: pods the shadowed scheduler placed, by whether this "
                                        "profile's policies agree (agree, tie, disagree, unschedulable, error).",
                                        ["profile", "agreement"], registry=r)
        # The labelled children, looked up once per label value (``labels()`` validates and locks on every
        # call; these run several times per pod). A child lives as long as its metric: nothing removes them.
        self._attempt_children: dict[tuple[str, str], tuple[Counter, Histogram]] = {}
        self._bound_children: dict[tuple[str, str], tuple[Histogram, Histogram]] = {}
        self._sli_children: dict[str, Histogram] = {}
        self.reload_ok: dict[str, bool] = {name: True for name in self.profiles}
        """Per profile: False while its latest policy sources do not load (or its ConfigMap is gone)."""
        digests: Callable[[], Mapping[str, str]] | None = None
        if policy_digest is not None:
            def digests() -> Mapping[str, str]:
                value = policy_digest()
                return {profile: value} if isinstance(value, str) else value
        r.register(_Sizes(self, pending, cache, leader, lease_name or profile, digests))
        ProcessCollector(registry=r)  # process_cpu_seconds_total, process_resident_memory_bytes, ... as kube's

    def attempt(self, result: str, seconds: float, profile: str | None = None, *, evaluated: bool = True) -> None:
        """One scheduling attempt: its count and latency, by result and profile; ``evaluated``: the policies
        ran (not a reused decision), so it is also an algorithm run. Results other than kube's are ignored."""
        if result not in ATTEMPT_RESULTS:
            return
        key = (result, profile or self.profile)
        children = self._attempt_children.get(key)
        if children is None:
            children = self._attempt_children[key] = (self.attempts.labels(*key), self.attempt_duration.labels(*key))
        children[0].inc()
        children[1].observe(seconds)
        if evaluated and result != "error":
            self.algorithm_duration.observe(seconds)

    def bound(self, result: str, seconds: float, profile: str | None = None) -> None:
        """One bind's latency: the Bind extension point and the DefaultBinder plugin, by status."""
        status = BIND_STATUS.get(result, "Error")
        key = (status, profile or self.profile)
        children = self._bound_children.get(key)
        if children is None:
            children = self._bound_children[key] = (
                self.extension_duration.labels("Bind", status, key[1]),
                self.plugin_duration.labels("DefaultBinder", "Bind", status))
        children[0].observe(seconds)
        children[1].observe(seconds)

    def scheduled_sli(self, attempts: int, seconds: float) -> None:
        """First enqueue to bind of a pod, by how many attempts it took ("15+" beyond 14); also the
        attempts histogram (``scheduler_pod_scheduling_attempts``)."""
        label = str(attempts) if attempts < 15 else "15+"
        child = self._sli_children.get(label)
        if child is None:
            child = self._sli_children[label] = self.sli_duration.labels(label)
        child.observe(seconds)
        self.pod_attempts.observe(attempts)

    def preempted(self, victims: int | None) -> None:
        """One preemption attempt (call it once per PostFilter run that tried) and, when it found a node,
        how many victims it chose (None: no candidate; kube observes victims only for a chosen candidate)."""
        self.preemption_attempts.inc()
        if victims is not None:
            self.preemption_victims.observe(victims)
