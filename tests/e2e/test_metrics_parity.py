"""Our /metrics beside the real kube-scheduler's (v1.35, on the harness), after both scheduled the same
kind of pods (one that fits, one that fits nowhere): every metric family kube-scheduler serves is served
by us too, under the same name and with the same label names -- or it is in :data:`NOT_SERVED` with the
reason. A kube metric missing without a reason fails the test, and so does a reason for a metric we serve
(the table stays true).

Both are scraped over HTTPS with the harness's admin bearer token: kube-scheduler and ours both ask the
API server (TokenReview, SubjectAccessReview) whether it may ``get /metrics``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3

from tests.controlplane import fakes
from tests.controlplane.harness import ControlPlane, free_port
from tests.kube.live import LiveEnv, wait_until

pytestmark = pytest.mark.e2e

NOT_SERVED_PREFIXES: dict[str, str] = {
    "go_": "Go runtime metrics; we are a Python process (process_* gives CPU, memory, file descriptors)",
    "rest_client_": "client-go's REST client metrics; our transport (kube/rest.py) exports none yet",
    "workqueue_": "client-go work queues; we have none (watch threads feed the scheduling queue directly)",
    "apiserver_": "k8s.io/apiserver library metrics of kube-scheduler's serving stack (audit, encryption, "
                  "webhooks, validation, delegated authn request counts): not scheduling behaviour",
    "authentication_": "the apiserver library's authn metrics; our delegated authn (kube/secure.py) caches "
                       "reviews but does not count them",
    "authorization_": "the apiserver library's authz metrics; not counted by kube/secure.py",
}
"""Families of library metrics kube-scheduler links in, by name prefix."""

NOT_SERVED: dict[str, str] = {
    "aggregator_discovery_aggregation_count_total": "API aggregation discovery (apiserver library), not scheduling",
    "authenticated_user_requests": "apiserver library request counter by user",
    "cardinality_enforcement_unexpected_categorizations_total": "component-base metrics framework bookkeeping",
    "disabled_metrics_total": "component-base metrics framework bookkeeping (--disabled-metrics)",
    "hidden_metrics_total": "component-base metrics framework bookkeeping (--show-hidden-metrics-for-version)",
    "registered_metrics_total": "component-base metrics framework bookkeeping (stability levels)",
    "kubernetes_build_info": "a Kubernetes build's version; policyscheduler_policy_info says what runs",
    "kubernetes_feature_enabled": "Kubernetes feature gates; we have none",
    "version_info": "Kubernetes build version (component-base)",
    "process_network_receive_bytes_total": "not in prometheus_client's process collector",
    "process_network_transmit_bytes_total": "not in prometheus_client's process collector",
    "process_virtual_memory_max_bytes": "not in prometheus_client's process collector",
    "scheduler_batch_attempts_total": "1.35 alpha opportunistic batching; we decide pod by pod",
    "scheduler_batch_cache_flushed_total": "1.35 alpha opportunistic batching",
    "scheduler_get_node_hint_duration_seconds": "1.35 alpha opportunistic batching (node hints)",
    "scheduler_store_schedule_results_duration_seconds": "1.35 alpha opportunistic batching",
    "scheduler_event_handling_duration_seconds": "per-event handler latency; our watch handlers are not timed",
    "scheduler_inflight_events": "our queue keeps in-flight events (cycle/queue.py) but does not export the gauge",
    "scheduler_plugin_evaluation_total": "counts plugin runs per extension point; our rules are evaluated "
                                         "together per pod (vector engine), not one plugin call at a time",
    "scheduler_queueing_hint_execution_duration_seconds": "our queueing hints (events.Interest) are not timed",
    "scheduler_permit_wait_duration_seconds": "no Permit extension point (no waiting pods)",
    "scheduler_preemption_goroutines_duration_seconds": "asynchronous preemption API calls; none here",
    "scheduler_preemption_goroutines_execution_total": "asynchronous preemption API calls; none here",
    "scheduler_pending_async_api_calls": "SchedulerAsyncAPICalls: our API calls are not queued that way",
    "scheduler_async_api_call_execution_total": "SchedulerAsyncAPICalls",
    "scheduler_async_api_call_execution_duration_seconds": "SchedulerAsyncAPICalls",
    "scheduler_resourceclaim_creates_total": "dynamic resource allocation; not supported",
}


def families(text: str) -> dict[str, set[frozenset[str]]]:
    """Family name (as in ``# HELP``) -> the label-name sets of its samples (``le``/``quantile`` dropped)."""
    names = [line.split()[2] for line in text.splitlines() if line.startswith("# HELP ")]
    out: dict[str, set[frozenset[str]]] = {n: set() for n in names}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        labels = frozenset(re.findall(r'(\w+)="', line.split("}")[0])) - {"le", "quantile"} if "{" in line \
            else frozenset()
        for fam in (name, re.sub(r"_(bucket|sum|count)$", "", name), re.sub(r"_total$", "", name)):
            if fam in out:
                out[fam].add(labels)
                break
    return out


def reason(name: str) -> str | None:
    return NOT_SERVED.get(name) or next((r for p, r in NOT_SERVED_PREFIXES.items() if name.startswith(p)), None)


def _pod(name: str, scheduler: str, cpu: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"schedulerName": scheduler,
                     "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]}}


@pytest.fixture
def env(cp: ControlPlane, tmp_path: Path) -> Iterator[LiveEnv]:
    e = LiveEnv(cp, tmp_path, "parity-metrics")
    try:
        yield e
    finally:
        e.cleanup()


def test_kube_scheduler_metric_names_are_ours_or_listed_with_a_reason(env: LiveEnv) -> None:
    cp = env.cp
    fakes.create_all(env.api, fakes.make_nodes(2, prefix=f"{env.ns}-n", owner=env.ns))
    kube = cp.start_scheduler({"profiles": [{"schedulerName": "kube-ref"}]})
    port = free_port()
    run = env.start("--bind-address", "127.0.0.1", "--secure-port", str(port),  # kube-scheduler's certificate
                    "--tls-cert-file", str(cp.serving.cert_file), "--tls-private-key-file", str(cp.serving.key_file))
    assert run.find("started")[0]["status_address"].endswith(f":{port}")
    for scheduler in ("kube-ref", "policy-scheduler"):
        env.api.post(f"/api/v1/namespaces/{env.ns}/pods", _pod(f"fits-{scheduler}", scheduler, "100m"))
        env.api.post(f"/api/v1/namespaces/{env.ns}/pods", _pod(f"never-{scheduler}", scheduler, "1000"))
    http = urllib3.PoolManager(cert_reqs="CERT_REQUIRED", ca_certs=str(cp.ca.pair.cert_file), retries=False,
                               timeout=urllib3.Timeout(connect=5, read=15))
    auth = {"Authorization": f"Bearer {cp.token}"}

    def scrape(url: str) -> str:
        resp = http.request("GET", url + "/metrics", headers=auth)
        assert resp.status == 200, (url, resp.status, resp.data[:300])
        return str(resp.data.decode())

    ours_url = f"https://127.0.0.1:{port}"

    def tried(url: str, profile: str) -> bool:
        wanted = ('profile="' + profile + '"', 'result="unschedulable"')
        return any(line.startswith("scheduler_schedule_attempts_total{") and all(w in line for w in wanted)
                   and float(line.rsplit(" ", 1)[1]) > 0 for line in scrape(url).splitlines())

    wait_until(lambda: tried(kube.url, "kube-ref") and tried(ours_url, "policy-scheduler"), timeout=60,
               what="both schedulers tried the pod that fits nowhere")
    time.sleep(1.0)
    theirs, ours = families(scrape(kube.url)), families(scrape(ours_url))
    missing = sorted(n for n in theirs if n not in ours and reason(n) is None)
    assert not missing, f"kube-scheduler metrics we neither serve nor explain: {missing}"
    stale = sorted(n for n in NOT_SERVED if n in ours)
    assert not stale, f"listed as not served, but served: {stale}"
    assert not [n for n in ours if reason(n) is not None and n in theirs]
    label_diffs = {n: (sorted(map(sorted, theirs[n])), sorted(map(sorted, ours[n])))
                   for n in theirs if n in ours and n.startswith("scheduler_") and theirs[n] and ours[n]
                   and not (ours[n] <= theirs[n] or theirs[n] <= ours[n])}
    assert not label_diffs, f"same name, other labels: {label_diffs}"
    served = sorted(n for n in theirs if n in ours)
    print(f"\nkube-scheduler families: {len(theirs)}; served by us too: {len(served)}; "
          f"explained: {len(theirs) - len(served)}")
    for name in ("scheduler_schedule_attempts_total", "scheduler_pending_pods", "scheduler_cache_size",
                 "scheduler_queue_incoming_pods_total", "scheduler_unschedulable_pods",
                 "scheduler_pod_scheduling_attempts", "scheduler_framework_extension_point_duration_seconds"):
        assert name in ours and name in theirs, name
