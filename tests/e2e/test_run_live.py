"""``policyscheduler run`` against the real control plane: placements, messages, who is ours.

A control plane of its own (module scope), so the node count in FailedScheduling texts and the
nodes a pod may land on are exactly what each test creates. Every test starts a fresh
``policyscheduler run`` child and deletes its nodes and pods afterwards.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane import fakes
from tests.controlplane.api import Api
from tests.controlplane.harness import ControlPlane
from tests.e2e.parity_report import strip_post_filter
from tests.kube.live import LiveEnv, env_fixture, pods, scheduled_events, violations, wait_all_bound, wait_until

pytestmark = pytest.mark.e2e

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


class Env(LiveEnv):
    def __init__(self, cp: ControlPlane, tmp: Path) -> None:
        super().__init__(cp, tmp, "run")

    def nodes(self, objs: list[dict[str, Any]]) -> None:
        for o in objs:
            o["metadata"].setdefault("labels", {})[fakes.OWNER_LABEL] = self.ns
        fakes.create_all(self.api, objs)

    def pods(self, objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for o in objs:
            o["metadata"]["namespace"] = self.ns
        return fakes.create_all(self.api, objs)


env = env_fixture(Env)


def pod(name: str, cpu: str = "200m", memory: str = "256Mi", **kw: Any) -> dict[str, Any]:
    return fakes.make_pod(name, scheduler_name="policy-scheduler", cpu=cpu, memory=memory, **kw)


def mixed_workload() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """30 nodes (3 zones, 10 with disktype=ssd, 6 tainted for gpu) and 200 pods that all fit."""
    nodes = []
    for i in range(30):
        labels = {"disktype": "ssd"} if i % 3 == 0 else {}
        taints = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}] if i >= 24 else []
        if i >= 24:
            labels["dedicated"] = "gpu"
        nodes.append(fakes.make_node(f"n{i}", zone=("zone-a", "zone-b", "zone-c")[i % 3], region="r1",
                                     labels=labels, taints=taints))
    ps: list[dict[str, Any]] = []
    for i in range(80):
        ps.append(pod(f"basic-{i}", cpu=("200m", "300m", "500m")[i % 3], memory=("256Mi", "1Gi")[i % 2]))
    for i in range(30):
        ps.append(pod(f"zonal-{i}", node_selector={ZONE: "zone-b"}))
    ssd = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "disktype", "operator": "In", "values": ["ssd"]}]}]}}}
    for i in range(20):
        ps.append(pod(f"ssd-{i}", affinity=ssd))
    gpu_tol = [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
    for i in range(15):
        ps.append(pod(f"gpu-{i}", cpu="500m", tolerations=gpu_tol, node_selector={"dedicated": "gpu"}))
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": HOST}]}}
    for i in range(20):
        ps.append(pod(f"web-{i}", labels={"app": "web"}, affinity=anti))
    spread = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "spread"}}}]
    for i in range(30):
        ps.append(pod(f"spread-{i}", labels={"app": "spread"}, topology_spread=spread))
    for i in range(5):
        high = pod(f"prio-{i}", cpu="1")
        high["spec"]["priorityClassName"] = "policyscheduler-e2e-high"
        ps.append(high)
    return nodes, ps


def ensure_priority_class(api: Api) -> None:
    """The Priority admission plugin sets spec.priority from a PriorityClass (the field cannot be set)."""
    try:
        api.post("/apis/scheduling.k8s.io/v1/priorityclasses", {
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": "policyscheduler-e2e-high"}, "value": 1000})
    except Exception as err:
        if "AlreadyExists" not in str(err) and "already exists" not in str(err):
            raise


def test_200_mixed_pods_on_30_nodes_all_bound_without_violations(env: Env) -> None:
    nodes, workload = mixed_workload()
    ensure_priority_class(env.api)
    env.nodes(nodes)
    run = env.start()
    started = time.monotonic()
    env.pods(workload)
    names = [p["metadata"]["name"] for p in workload]
    wait_all_bound(env.api, env.ns, names, timeout=120)
    elapsed = time.monotonic() - started
    stored_nodes = [n for n in env.api.list_items("/api/v1/nodes")
                    if (n["metadata"].get("labels") or {}).get(fakes.OWNER_LABEL) == env.ns]
    assert violations(pods(env.api, env.ns), stored_nodes) == []
    events = wait_until(lambda: (c := scheduled_events(env.api, env.ns, "policy-scheduler")) and
                        sum(c.values()) >= 200 and c, 30, "200 Scheduled events")
    assert set(events) == set(names) and set(events.values()) == {1}
    decisions = [line for line in run.lines() if line.get("logger") == "policyscheduler.decisions"]
    assert all(line.get("policy_digest") for line in decisions)
    bound = [line["pod"] for line in decisions if line.get("msg") == "bound"]
    assert sorted(bound) == sorted(f"{env.ns}/{n}" for n in names)  # each bound exactly once
    frozen = run.find("heap frozen before the first attempt")  # the cluster state is out of the collector's way
    assert len(frozen) == 1 and frozen[0]["objects"] > 0
    print(f"\n200 pods bound in {elapsed:.1f}s ({200 / elapsed:.0f} pods/s incl. creation)")
    assert run.terminate() == 0


def test_unschedulable_pod_gets_kube_schedulers_text_then_binds_when_a_node_fits(env: Env) -> None:
    env.nodes(fakes.make_nodes(3, prefix=f"{env.ns}-small", cpu="2"))
    sched = env.cp.start_scheduler({"profiles": [{"schedulerName": "kube-ref"}],
                                    "percentageOfNodesToScore": 100})
    try:
        run = env.start()
        big: dict[str, Any] = {"cpu": "6", "memory": "1Gi"}
        env.pods([fakes.make_pod("big", scheduler_name="policy-scheduler", **big),
                  fakes.make_pod("big-ref", scheduler_name="kube-ref", **big)])

        def condition(name: str) -> dict[str, Any] | None:
            p = env.api.get(f"/api/v1/namespaces/{env.ns}/pods/{name}")
            return next((c for c in p["status"].get("conditions") or [] if c["type"] == "PodScheduled"), None)

        ours = wait_until(lambda: condition("big"), 20, "our PodScheduled condition")
        theirs = wait_until(lambda: condition("big-ref"), 20, "kube-scheduler's PodScheduled condition")
        env.api.delete(f"/api/v1/namespaces/{env.ns}/pods/big-ref", gracePeriodSeconds=0)
        assert (ours["status"], ours["reason"]) == ("False", "Unschedulable")
        assert strip_post_filter(ours["message"]) == "0/3 nodes are available: 3 Insufficient cpu."
        # the preemption suffix included; kube's DynamicResources PostFilter (we have no DRA) adds its own part
        assert ours["message"] == theirs["message"].replace("no new claims to deallocate, ", "")
        # The event is written by the event writer right after the condition patch: wait for it, not race it.
        failed = wait_until(lambda: [e for e in env.api.list_items(f"/apis/events.k8s.io/v1/namespaces/{env.ns}/events")
                                     if e["regarding"]["name"] == "big" and e["reason"] == "FailedScheduling"],
                            20, "our FailedScheduling event")
        assert failed and failed[0]["type"] == "Warning" and failed[0]["note"] == ours["message"]
        assert failed[0]["reportingController"] == "policy-scheduler"

        added = time.monotonic()
        env.nodes([fakes.make_node(f"{env.ns}-big", cpu="8", zone="zone-a")])
        bound = wait_all_bound(env.api, env.ns, ["big"], timeout=5)
        assert bound == {"big": f"{env.ns}-big"}
        print(f"\nbound {time.monotonic() - added:.2f}s after the fitting node was added")
        assert run.terminate() == 0
    finally:
        env.cp.stop_scheduler(sched)


def test_other_schedulers_pods_untouched_and_malformed_pods_do_not_stop_the_loop(env: Env) -> None:
    env.nodes(fakes.make_nodes(3, prefix=f"{env.ns}-n"))
    run = env.start()
    foreign = fakes.make_pod("foreign", scheduler_name="someone-else")
    default = fakes.make_pod("default-sched")  # no schedulerName: default-scheduler's
    absurd = fakes.make_pod("absurd", scheduler_name="policy-scheduler", cpu="999999999", memory="999Ei")
    labels = {f"k{i}.example.com/label-{i}": f"v{i}" for i in range(400)}
    many_labels = fakes.make_pod("many-labels", scheduler_name="policy-scheduler", labels=labels,
                                 affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                                     {"labelSelector": {"matchLabels": labels}, "topologyKey": HOST}]}})
    odd_affinity = fakes.make_pod("odd-affinity", scheduler_name="policy-scheduler", affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "x", "operator": "Gt", "values": ["not-a-number"]}]}]}}})
    env.pods([foreign, default, absurd, many_labels, odd_affinity])
    env.pods([fakes.make_pod("normal", scheduler_name="policy-scheduler")])
    wait_all_bound(env.api, env.ns, ["normal", "many-labels"], timeout=20)

    def failed_for(name: str) -> list[dict[str, Any]]:
        return [e for e in env.api.list_items(f"/apis/events.k8s.io/v1/namespaces/{env.ns}/events")
                if e["regarding"]["name"] == name and e["reason"] == "FailedScheduling"]

    for name in ("absurd", "odd-affinity"):
        events = wait_until(lambda name=name: failed_for(name), 20, f"FailedScheduling for {name}")
        assert events[0]["note"].startswith("0/3 nodes are available: ")
    time.sleep(1.0)
    for name in ("foreign", "default-sched"):
        p = env.api.get(f"/api/v1/namespaces/{env.ns}/pods/{name}")
        assert not p["spec"].get("nodeName") and not p["status"].get("conditions")
        assert not [e for e in env.api.list_items(f"/apis/events.k8s.io/v1/namespaces/{env.ns}/events")
                    if e["regarding"]["name"] == name]
    assert run.child.alive()
    assert not [line for line in run.lines() if line.get("level") == "error"]
    assert run.terminate() == 0
