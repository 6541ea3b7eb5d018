"""kube-scheduler's metric names and label values, fed the way the scheduler feeds them (real queue,
real decisions, real watch stats)."""

from __future__ import annotations

from typing import Any

from prometheus_client import generate_latest

from policyscheduler.cycle import SchedulingQueue
from policyscheduler.cycle.events import ClusterEvent
from policyscheduler.evaluation.decision import FEASIBLE, Decision, NodeVerdict
from policyscheduler.kube.metrics import SchedulerMetrics, unschedulable_plugins
from policyscheduler.kube.watch import WatchStats
from tests.kube.test_report_cost import _sample


def _pod(name: str, scheduler: str = "p1", gates: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": scheduler, "containers": [{"name": "c"}]}
    if gates:
        spec["schedulingGates"] = [{"name": "wait"}]
    return {"metadata": {"namespace": "ns", "name": name, "uid": name}, "spec": spec}


def _decision(rules: dict[str, str | None]) -> Decision:
    verdicts = {node: (FEASIBLE if rule is None else NodeVerdict(rule=rule, reasons=("no",)))
                for node, rule in rules.items()}
    return Decision(pod="ns/x", node=None, verdicts=verdicts, feasible=[], scores={}, totals={}, top=[],
                    score=None, message="0/2 nodes are available", policy_digest="d")


def _metrics(queue: SchedulingQueue | None = None, stats: dict[str, WatchStats] | None = None) -> SchedulerMetrics:
    q = queue or SchedulingQueue()
    return SchedulerMetrics("p1", pending=q.pending, cache=lambda: {"nodes": 2, "pods": 3, "assumed_pods": 1},
                            leader=lambda: True, policy_digest=lambda: "abcdef0123456789", profiles=["p1", "p2"],
                            queue=q, watch_stats=lambda: dict(stats or {}), binds_in_flight=lambda: 4)


def _text(m: SchedulerMetrics) -> str:
    return generate_latest(m.registry).decode()


def test_names_are_kube_schedulers() -> None:
    text = _text(_metrics())
    for name in ("scheduler_schedule_attempts_total", "scheduler_pending_pods", "scheduler_cache_size",
                 "scheduler_queue_incoming_pods_total", "scheduler_unschedulable_pods", "scheduler_goroutines",
                 "scheduler_preemption_attempts_total", "scheduler_preemption_victims",
                 "scheduler_pod_scheduling_attempts", "scheduler_framework_extension_point_duration_seconds",
                 "scheduler_plugin_execution_duration_seconds", "scheduler_scheduling_algorithm_duration_seconds",
                 "scheduler_pod_scheduling_sli_duration_seconds", "leader_election_master_status"):
        assert f"# HELP {name} " in text, name
    assert "policyscheduler_schedule_attempts" not in text and "scheduler_scheduler_cache_size" not in text
    assert _sample(text, "scheduler_cache_size", type="assumed_pods") == 1
    assert _sample(text, "scheduler_goroutines", operation="binding") == 4
    # every profile's attempt series exist from the start (alerts on rate() see 0, not nothing)
    assert _sample(text, "scheduler_schedule_attempts_total", profile="p2", result="error") == 0


def test_attempts_only_kube_results_and_algorithm_only_when_evaluated() -> None:
    m = _metrics()
    m.attempt("scheduled", 0.01, "p1")
    m.attempt("unschedulable", 0.02, "p2", evaluated=False)  # a reused decision: no algorithm run
    m.attempt("skipped", 0.001, "p1")
    text = _text(m)
    assert _sample(text, "scheduler_schedule_attempts_total", profile="p1", result="scheduled") == 1
    assert _sample(text, "scheduler_schedule_attempts_total", profile="p2", result="unschedulable") == 1
    assert 'result="skipped"' not in text
    assert _sample(text, "scheduler_scheduling_algorithm_duration_seconds_count") == 1


def test_bind_is_the_bind_extension_point_and_default_binder() -> None:
    m = _metrics()
    m.bound("bound", 0.01, "p2")
    m.bound("conflict", 0.02, "p2")
    text = _text(m)
    assert _sample(text, "scheduler_framework_extension_point_duration_seconds_count", extension_point="Bind",
                   profile="p2", status="Success") == 1
    assert _sample(text, "scheduler_framework_extension_point_duration_seconds_count", extension_point="Bind",
                   profile="p2", status="Error") == 1
    assert _sample(text, "scheduler_plugin_execution_duration_seconds_count", extension_point="Bind",
                   plugin="DefaultBinder", status="Success") == 1


def test_pod_scheduling_attempts_and_sli() -> None:
    m = _metrics()
    m.scheduled_sli(3, 0.5)
    m.scheduled_sli(20, 2.0)
    text = _text(m)
    assert _sample(text, "scheduler_pod_scheduling_attempts_bucket", le="4.0") == 1
    assert _sample(text, "scheduler_pod_scheduling_attempts_bucket", le="+Inf") == 2
    assert _sample(text, "scheduler_pod_scheduling_sli_duration_seconds_count", attempts="15+") == 1


def test_preemption_attempts_and_victims() -> None:
    m = _metrics()
    m.preempted(3)
    m.preempted(None)  # tried, no candidate: an attempt, no victims observed
    text = _text(m)
    assert _sample(text, "scheduler_preemption_attempts_total") == 2
    assert _sample(text, "scheduler_preemption_victims_count") == 1
    assert _sample(text, "scheduler_preemption_victims_bucket", le="4.0") == 1


def test_unschedulable_pods_by_rejecting_rule_and_profile() -> None:
    q = SchedulingQueue()
    cases: list[tuple[str, str, dict[str, str | None]]] = [("a", "p1", {"n1": "fits-cpu", "n2": "taints"}),
                                                           ("b", "p1", {"n1": "fits-cpu", "n2": "fits-cpu"}),
                                                           ("c", "p2", {"n1": "taints", "n2": None})]
    for name, scheduler, rules in cases:
        q.add(name, _pod(name, scheduler))
        entry = q.pop()
        assert entry is not None
        entry.last_decision = _decision(rules)
        assert q.add_unschedulable(entry) == "unschedulable"
    text = _text(_metrics(q))
    assert _sample(text, "scheduler_unschedulable_pods", plugin="fits-cpu", profile="p1") == 2
    assert _sample(text, "scheduler_unschedulable_pods", plugin="taints", profile="p1") == 1
    assert _sample(text, "scheduler_unschedulable_pods", plugin="taints", profile="p2") == 1
    assert unschedulable_plugins(None) == frozenset()


def test_queue_incoming_pods_by_queue_and_event() -> None:
    q = SchedulingQueue(initial_backoff=0.0, max_backoff=0.0)
    q.add("a", _pod("a"))
    q.add("g", _pod("g", gates=True))
    entry = q.pop()
    assert entry is not None
    q.add_unschedulable(entry)
    q.move(ClusterEvent.all("NodeAdd"))
    text = _text(_metrics(q))
    assert _sample(text, "scheduler_queue_incoming_pods_total", event="PodAdd", queue="active") == 1
    assert _sample(text, "scheduler_queue_incoming_pods_total", event="PodAdd", queue="gated") == 1
    assert _sample(text, "scheduler_queue_incoming_pods_total", event="ScheduleAttemptFailure",
                   queue="unschedulable") == 1
    assert _sample(text, "scheduler_queue_incoming_pods_total", event="NodeAdd", queue="active") == 1


def test_relists_come_from_the_watch_stats() -> None:
    stats = {"Pod": WatchStats(lists=3, relists=2), "Node": WatchStats(lists=1)}
    text = _text(_metrics(stats=stats))
    assert _sample(text, "policyscheduler_watch_relists_total", resource="Pod") == 2
    assert _sample(text, "policyscheduler_watch_relists_total", resource="Node") == 0
