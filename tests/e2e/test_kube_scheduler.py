"""The real kube-scheduler, started by the harness, binds pods on fake nodes."""

from __future__ import annotations

import pytest

from tests.conftest import Kube
from tests.controlplane import fakes
from tests.controlplane.api import wait_for

pytestmark = pytest.mark.e2e


def test_kube_scheduler_binds_pod_to_the_only_feasible_node(kube: Kube) -> None:
    ns = kube.namespace
    kube.create_nodes(1, prefix=f"{ns}-tainted",
                      taints=[{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}])
    kube.create_nodes(1, prefix=f"{ns}-cordoned", unschedulable=True)
    kube.create_nodes(1, prefix=f"{ns}-small", cpu="500m")
    (good,) = kube.create_nodes(1, prefix=f"{ns}-good", cpu="8", memory="64Gi")
    # The API server keeps a fake node's status on create (what the scheduler reads).
    stored = kube.api.get(f"/api/v1/nodes/{good['metadata']['name']}")
    assert stored["status"]["allocatable"]["cpu"] == "8"

    kube.create_pods(1, prefix="web", cpu="1", memory="1Gi")
    sched = kube.control_plane.start_scheduler({"profiles": [{"schedulerName": "default-scheduler"}]})
    try:
        bound = fakes.wait_bound(kube.api, ns, ["web-0"], timeout=60)
        assert bound == {"web-0": good["metadata"]["name"]}
        pod = kube.api.get(f"/api/v1/namespaces/{ns}/pods/web-0")
        conditions = {c["type"]: c["status"] for c in pod["status"].get("conditions", [])}
        assert conditions.get("PodScheduled") == "True"
    finally:
        kube.control_plane.stop_scheduler(sched)
    assert not sched.child.alive()


def test_kube_scheduler_reports_why_a_pod_fits_nowhere(kube: Kube) -> None:
    ns = kube.namespace
    kube.create_nodes(2, prefix=f"{ns}-n", cpu="2")
    kube.create_pods(1, prefix="huge", cpu="64")
    sched = kube.control_plane.start_scheduler()
    try:
        def failed() -> str | None:
            pod = kube.api.get(f"/api/v1/namespaces/{ns}/pods/huge-0")
            for c in pod["status"].get("conditions", []):
                if c["type"] == "PodScheduled" and c["status"] == "False" and c.get("message"):
                    return str(c["message"])
            return None

        message = wait_for(failed, timeout=60, what="PodScheduled=False")
    finally:
        kube.control_plane.stop_scheduler(sched)
    total = len(kube.api.list_items("/api/v1/nodes"))
    assert message.startswith(f"0/{total} nodes are available: ")
    assert "2 Insufficient cpu" in message
