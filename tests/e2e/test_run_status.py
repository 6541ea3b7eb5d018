"""``policyscheduler run``'s /metrics, /healthz, /readyz and SIGHUP reload against the real control plane."""

from __future__ import annotations

import os
import re
import signal
import urllib.request
import uuid
from pathlib import Path

import pytest

from policyscheduler.simulate.defaults import default_policies_dir
from tests.controlplane import fakes
from tests.controlplane.harness import ControlPlane
from tests.kube.live import RunProcess, wait_all_bound, wait_until

pytestmark = pytest.mark.e2e


def get(address: str, path: str) -> tuple[int, str]:
    try:
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
                f"http://{address}{path}", timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def sample(text: str, name: str, **labels: str) -> float:
    """The value of one sample of the Prometheus text exposition (0 when absent)."""
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}")[0])) if "{" in line else {}
        if all(found.get(k) == v for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_metrics_health_ready_and_sighup_reload(cp: ControlPlane, tmp_path: Path) -> None:
    api = cp.api()
    ns = f"status-{uuid.uuid4().hex[:6]}"
    api.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    fakes.create_all(api, [fakes.make_node(f"{ns}-n{i}", cpu="2", owner=ns) for i in range(2)])
    policies = tmp_path / "policies"
    policies.mkdir()
    run = RunProcess(cp, tmp_path / "run.log", "--policies", str(default_policies_dir()), "--policies", str(policies))
    try:
        address = run.wait_log("started", timeout=60)["status_address"]
        wait_until(lambda: get(address, "/readyz")[0] == 200, 30, "/readyz 200 (caches synced)")
        assert get(address, "/healthz") == (200, "ok\n")
        assert get(address, "/nope")[0] == 404

        fits = fakes.make_pods(3, ns, prefix="ok", scheduler_name="policy-scheduler", cpu="100m")
        big = fakes.make_pod("big", ns, scheduler_name="policy-scheduler", cpu="64")
        fakes.create_all(api, [*fits, big])
        wait_all_bound(api, ns, [p["metadata"]["name"] for p in fits], 30)

        def scraped() -> str | None:
            status, text = get(address, "/metrics")
            assert status == 200
            done = (sample(text, "scheduler_schedule_attempts_total", result="scheduled") >= 3
                    and sample(text, "scheduler_pending_pods", queue="unschedulable") == 1)
            return text if done else None

        text = wait_until(scraped, 30, "metrics for 3 scheduled and 1 unschedulable pod")
        assert sample(text, "scheduler_schedule_attempts_total", result="unschedulable") >= 1
        assert sample(text, "scheduler_scheduling_attempt_duration_seconds_count", result="scheduled") >= 3
        assert sample(text, "scheduler_framework_extension_point_duration_seconds_count",
                      extension_point="Bind", status="Success") == 3
        assert sample(text, "scheduler_pending_pods", queue="active") == 0
        assert "scheduler_pending_pods{queue=\"backoff\"}" in text
        assert sample(text, "scheduler_cache_size", type="nodes") >= 2

        # SIGHUP with a policy file that rejects everything: reloaded, the unschedulable pod is retried
        (policies / "closed.policy").write_text(
            '## Nothing fits while this file is here.\n'
            'filter closed\n'
            '  reason "node(s) closed for maintenance"\n'
            '  require false\n')
        os.kill(run.pid, signal.SIGHUP)
        reloaded = run.wait_log("policies reloaded", timeout=30)
        assert reloaded["requeued"] == 1
        # a broken file: the last good set stays
        (policies / "broken.policy").write_text("filter oops\n  require node.nope\n")
        os.kill(run.pid, signal.SIGHUP)
        run.wait_log("policy reload failed; keeping the running set", timeout=30)
        assert get(address, "/healthz")[0] == 200
    finally:
        assert run.terminate() == 0
        fakes.delete_owned(api, ns)
