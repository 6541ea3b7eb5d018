"""``simulate`` and scheduling gates: a gated pod is never placed (nor counted against the others) and is
reported with kube-scheduler's PreEnqueue text; the rest of the workload schedules as without it."""

from __future__ import annotations

from typing import Any

from policyscheduler.loader import load_layered
from policyscheduler.simulate.run import simulate


def node(name: str, cpu: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "10"}}}


def pod(name: str, cpu: str, *gates: str, priority: int = 0) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "policy-scheduler", "priority": priority,
                            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]}
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def test_gated_pods_stay_unplaced_with_kube_schedulers_text_and_take_no_room() -> None:
    policy_set = load_layered().policy_set
    assert policy_set is not None
    # The gated pod has the highest priority and would take the only room for "small" if it were decided.
    objects = [node("n1", "1"),
               pod("gated", "1", "example.com/quota", "example.com/admission", priority=100),
               pod("small", "1"), pod("too-big", "4")]
    sim = simulate(policy_set, objects, seed=0)
    docs = {d["pod"]: d for d in sim.to_json()["placements"]}
    assert docs["default/small"]["node"] == "n1"
    assert docs["default/gated"] == {
        "pod": "default/gated", "node": None, "score": None, "top": [],
        "message": "waiting for scheduling gates: [example.com/quota example.com/admission]"}
    assert docs["default/too-big"]["node"] is None
    assert docs["default/too-big"]["message"].startswith("0/1 nodes are available: ")
    # unplaced pods in queue order: the gated one (priority 100) before too-big
    assert [d["pod"] for d in sim.to_json()["placements"]] == ["default/small", "default/gated", "default/too-big"]
    assert sim.evaluations == 2  # the gated pod was never evaluated


def test_ungated_the_same_pod_is_placed_first() -> None:
    policy_set = load_layered().policy_set
    assert policy_set is not None
    sim = simulate(policy_set, [node("n1", "1"), pod("gated", "1", priority=100), pod("small", "1")], seed=0)
    placed = {d.pod: d.node for d in sim.decisions}
    assert placed == {"default/gated": "n1", "default/small": None}
