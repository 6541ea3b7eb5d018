"""Issue 12, the live loop: a rule forced past the runtime budget (a node with far more labels than the cost
bound assumes) gives the pod a FailedScheduling naming the rule's location, and the next pods are scheduled
normally. The budget is the real one (10,000,000 steps): the rule runs about that many loop items on the big
node before it is stopped."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane import fakes
from tests.controlplane.harness import ControlPlane
from tests.kube.live import RunProcess, wait_all_bound, wait_until

pytestmark = pytest.mark.e2e

HEAVY = """\
filter heavy
  reason "heavy"
  applies when pod.labels["heavy"] == "yes"
  require count(a in node.labels where count(b in node.labels where a == b) == 1) > 0
"""


def test_budget_error_is_a_located_failed_scheduling_and_the_loop_goes_on(cp: ControlPlane, tmp_path: Path) -> None:
    api = cp.api()
    ns = f"budget-{uuid.uuid4().hex[:6]}"
    api.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    policy = tmp_path / "heavy.policy"
    policy.write_text(HEAVY)
    labels = {f"l{i}": "x" for i in range(3300)}  # 3,300 x 3,300 loop items > the 10,000,000-step budget
    labels[fakes.OWNER_LABEL] = ns
    node = fakes.make_node(f"{ns}-big", labels=labels)
    fakes.create_all(api, [node])
    run = RunProcess(cp, tmp_path / "run.log", "--engine", "reference", "--policies", str(policy))
    try:
        run.wait_log("started", timeout=60)
        heavy = fakes.make_pod("heavy", scheduler_name="policy-scheduler", labels={"heavy": "yes"})
        light = [fakes.make_pod(f"light-{i}", scheduler_name="policy-scheduler") for i in range(3)]
        for p in [heavy, *light]:
            p["metadata"]["namespace"] = ns
        fakes.create_all(api, [heavy])

        def failed() -> list[dict[str, Any]]:
            return [e for e in api.list_items(f"/apis/events.k8s.io/v1/namespaces/{ns}/events")
                    if e["regarding"]["name"] == "heavy" and e["reason"] == "FailedScheduling"]

        event = wait_until(failed, 120, "FailedScheduling for the heavy pod")[0]
        assert event["note"] == (f"0/1 nodes are available: 1 policy error in rule heavy: budget: evaluation stopped "
                                 f"at {policy}:4:51 after 10,000,000 steps (loop items and list items built) on this "
                                 "node; the rule does more work than any rule may. "
                                 "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.")
        fakes.create_all(api, light)
        bound = wait_all_bound(api, ns, [p["metadata"]["name"] for p in light], timeout=60)
        assert set(bound.values()) == {f"{ns}-big"}
        assert run.terminate() == 0
    finally:
        if run.child.alive():
            run.kill()
        fakes.delete_owned(api, ns)
