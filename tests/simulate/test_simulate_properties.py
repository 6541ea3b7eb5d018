"""Invariants of a simulation under the default policies, on random small clusters."""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from policyscheduler.simulate import simulate
from tests.evaluation.policies import default_policies

CPU = {"0": Fraction(0), "100m": Fraction(1, 10), "500m": Fraction(1, 2), "1": Fraction(1), "3": Fraction(3)}


nodes_st = st.lists(
    st.tuples(st.sampled_from(["1", "2", "4"]), st.sampled_from(["2", "3", "110"]), st.sampled_from(["a", "b"])),
    min_size=0, max_size=5,
)
pods_st = st.lists(
    st.tuples(st.sampled_from(sorted(CPU)), st.sampled_from([None, 0, 10]), st.booleans()),
    min_size=0, max_size=14,
)


NodeSpec = tuple[str, str, str]  # cpu, max pods, zone
PodSpec = tuple[str, int | None, bool]  # cpu, priority, spread


def build(nodes: list[NodeSpec], pods: list[PodSpec]) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = []
    for i, (cpu, max_pods, zone) in enumerate(nodes):
        objs.append({"kind": "Node", "metadata": {"name": f"n{i}", "labels": {
            "kubernetes.io/hostname": f"n{i}", "topology.kubernetes.io/zone": zone}},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": max_pods}}})
    for i, (cpu, priority, spread) in enumerate(pods):
        container: dict[str, Any] = {"name": "c", "image": "x"}
        if cpu != "0":
            container["resources"] = {"requests": {"cpu": cpu}}
        spec: dict[str, Any] = {"containers": [container]}
        if priority is not None:
            spec["priority"] = priority
        if spread:
            spec["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                                   "whenUnsatisfiable": "DoNotSchedule",
                                                   "labelSelector": {"matchLabels": {"app": "s"}}}]
        objs.append({"kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "default",
                                                 "labels": {"app": "s" if spread else f"p{i}"}}, "spec": spec})
    return objs


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes_st, pods_st, st.integers(0, 3))
# p6 (priority 10) preempts p0, which this run had placed on n2: the victim is reported unplaced and the
# preemptor placed on its nominated node unscored, as kube takes a nominated node that passes the filters
@example([("1", "2", "b"), ("1", "2", "a"), ("1", "2", "a")],
         [("0", None, False), ("0", None, False), ("0", None, True), ("0", 10, True), ("1", 10, True),
          ("0", 10, True), ("1", 10, True)], 0)
def test_no_node_is_overcommitted_and_every_pod_is_reported_once(nodes: list[NodeSpec], pods: list[PodSpec],
                                                                 seed: int) -> None:
    objs = build(nodes, pods)
    sim = simulate(default_policies(), objs, seed=seed)
    assert sorted(d.pod for d in sim.decisions) == sorted(f"default/p{i}" for i in range(len(pods)))
    used_cpu: dict[str, Fraction] = defaultdict(Fraction)
    used_pods: dict[str, int] = defaultdict(int)
    victims = {v: (preemptor, node) for preemptor, (node, vs) in sim.preemptions.items() for v in vs}
    for d in sim.decisions:
        if d.node is None:
            assert d.message is not None and d.score is None and not d.top
            if d.pod in victims:  # placed by this run, then evicted by a higher-priority pod's preemption
                preemptor, node = victims[d.pod]
                assert d.message == f"Preempted by pod {preemptor} on node {node}"
                continue
            assert d.message.startswith(f"0/{len(nodes)} nodes are available") or (
                not nodes and d.message == "no nodes available to schedule pods")
            continue
        assert d.message is None and d.node in d.top
        if d.pod in sim.preemptions and d.score is None:
            # placed on its nominated node, which passed the filters: taken unscored, as kube does
            assert d.node == sim.preemptions[d.pod][0] and list(d.top) == [d.node] and not d.totals
        else:
            assert d.score == d.totals[d.node]
        index = int(d.pod.split("/p")[1])
        used_cpu[d.node] += CPU[pods[index][0]]
        used_pods[d.node] += 1
    for i, (cpu, max_pods, _) in enumerate(nodes):
        assert used_cpu[f"n{i}"] <= Fraction(cpu)
        assert used_pods[f"n{i}"] <= int(max_pods)
    # zone spreading (maxSkew 1, DoNotSchedule) holds among the spread pods that were placed
    zone_of = {f"n{i}": zone for i, (_, _, zone) in enumerate(nodes)}
    counts: dict[str, int] = defaultdict(int)
    for d in sim.placed:
        assert d.node is not None
        if pods[int(d.pod.split("/p")[1])][2]:
            counts[zone_of[d.node]] += 1
    zones = set(zone_of.values())
    if counts and len(zones) == 2:
        assert max(counts[z] for z in zones) - min(counts[z] for z in zones) <= 1
    assert simulate(default_policies(), objs, seed=seed).to_json() == sim.to_json()
