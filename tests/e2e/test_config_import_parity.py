"""``config import``: the imported configuration places pods as the real kube-scheduler v1.35.4 run with
the original KubeSchedulerConfiguration does, pod by pod (the machinery of ``test_kube_parity.py``).

The demo cluster is loaded once; for each KubeSchedulerConfiguration below, kube-scheduler is started
with it (every node scored), the file goes through ``import_kube_config`` -> YAML -> ``parse_config`` ->
the profile's layered policy set, and a slice of the demo queue is scheduled on both sides.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from policyscheduler.config import load_profile, parse_config
from policyscheduler.config.kubeimport import import_kube_config, render
from tests.controlplane.harness import ControlPlane
from tests.e2e import parity_cluster as pc
from tests.e2e.parity_report import kube_scores
from tests.e2e.parity_run import ParityRun, coverage

pytestmark = pytest.mark.e2e

PODS_PER_CONFIG = 40
SCHEDULER_ARGS = ("-v=2", "--vmodule=schedule_one=10")


def _profile(plugins: dict[str, Any] | None = None, plugin_config: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    profile: dict[str, Any] = {"schedulerName": pc.SCHEDULER}
    if plugins:
        profile["plugins"] = plugins
    if plugin_config:
        profile["pluginConfig"] = plugin_config
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "percentageOfNodesToScore": 100, "leaderElection": {"leaderElect": False}, "profiles": [profile]}


# The rule each configuration changes must have made a difference on some pod (not a vacuous pass).
EXERCISED = {"most-allocated": "score node_resources_fit", "requested-to-capacity-ratio": "score node_resources_fit",
             "no-image-locality-weights": "score node_resources_balanced_allocation",
             "spread-default-constraints": "score pod_topology_spread", "node-affinity-added": "filter node_affinity"}

CONFIGS: dict[str, dict[str, Any]] = {
    "most-allocated": _profile(plugin_config=[{"name": "NodeResourcesFit", "args": {"scoringStrategy": {
        "type": "MostAllocated", "resources": [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}]}}}]),
    "requested-to-capacity-ratio": _profile(plugin_config=[{"name": "NodeResourcesFit", "args": {"scoringStrategy": {
        "type": "RequestedToCapacityRatio", "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 2}],
        "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 40, "score": 10},
                                               {"utilization": 100, "score": 2}]}}}}]),
    "no-image-locality-weights": _profile(plugins={
        "score": {"disabled": [{"name": "ImageLocality"}],
                  "enabled": [{"name": "NodeResourcesBalancedAllocation", "weight": 10},
                              {"name": "TaintToleration", "weight": 1}, {"name": "NodeResourcesFit", "weight": 4}]}}),
    "spread-default-constraints": _profile(plugin_config=[{"name": "PodTopologySpread", "args": {
        "defaultingType": "List", "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway"},
            {"maxSkew": 2, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway"}]}}],
        plugins={"score": {"enabled": [{"name": "PodTopologySpread", "weight": 20}]}}),
    "node-affinity-added": _profile(plugin_config=[{"name": "NodeAffinity", "args": {"addedAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "example.com/cpu-generation", "operator": "Gt", "values": ["2"]}]},
            {"matchExpressions": [{"key": "workload-class", "operator": "In", "values": ["memory"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 30, "preference": {"matchExpressions": [{"key": "disktype", "operator": "In", "values": ["ssd"]}]}}],
    }}}]),
}


@pytest.fixture(scope="module")
def own_plane() -> Iterator[ControlPlane]:
    """A control plane of this module's own: the demo cluster can be loaded once per API server (no
    namespace controller runs to finish deleting its namespaces), and the kube-scheduler parity test
    loads it into the session's control plane."""
    cp = ControlPlane.start()
    try:
        yield cp
    finally:
        cp.stop()


@pytest.fixture(scope="module")
def demo(own_plane: ControlPlane) -> Iterator[tuple[pc.DemoCluster, list[dict[str, Any]]]]:
    api = own_plane.api()
    cluster = pc.DemoCluster(api, pc.demo_objects())
    try:
        cluster.load()
        yield cluster, pc.pending_queue(cluster.objects)
    finally:
        cluster.delete()


def _imported_policy_set(name: str, kube: dict[str, Any]) -> Any:
    result = import_kube_config(f"{name}.yaml", yaml.safe_dump(kube, sort_keys=False))
    assert result.notes == [], result.notes
    cfg = parse_config(f"{name}-imported.yaml", render(result.config, f"{name}.yaml"))
    loaded = load_profile(cfg.profile(pc.SCHEDULER))
    assert loaded.policy_set is not None, loaded.diagnostics
    return loaded.policy_set


@pytest.mark.parametrize("name", list(CONFIGS))
def test_imported_config_places_pods_as_kube_scheduler(name: str, own_plane: ControlPlane,
                                                       demo: tuple[pc.DemoCluster, list[dict[str, Any]]]) -> None:
    cluster, queue = demo
    policy_set = _imported_policy_set(name, CONFIGS[name])
    index = list(CONFIGS).index(name)
    pods = queue[index * PODS_PER_CONFIG:(index + 1) * PODS_PER_CONFIG]
    sched = own_plane.start_scheduler(CONFIGS[name], args=SCHEDULER_ARGS)
    started = time.monotonic()
    try:
        run = ParityRun(own_plane.api(), policy_set, cluster)
        for i, pod in enumerate(pods):
            run.check(pc.adapt_pod(pod, cluster.owner_uids, pending=True), seed=index * 1000 + i)
        summary = run.summary(time.monotonic() - started)
        print(f"{name}: {summary}")
        if run.mismatches:
            scores = kube_scores(Path(sched.child.log_file))
            report = "\n".join(m.render(scores) for m in run.mismatches)
            pytest.fail(f"{name}: {len(run.mismatches)} of {len(run.decisions)} pods differ from kube-scheduler "
                        f"({summary})\n{report}", pytrace=False)
        assert run.outcomes["bound"] > 0
        assert coverage(run.decisions).get(EXERCISED[name], 0) > 0, summary
    finally:
        own_plane.stop_scheduler(sched)
