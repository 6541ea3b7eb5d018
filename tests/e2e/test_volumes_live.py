"""Claims before the pod, live: our scheduler executes a pod's VolumePlan (policyscheduler/app/volumes.py)
on the real control plane with kube-controller-manager's PV binder and a fake external provisioner, and
kube-scheduler runs the same scenario in the same test; the outcomes (node, claims, messages) agree.

Our scheduler runs as ``policyscheduler run`` embedded in tests/e2e/volume_runner.py (only to shorten the
bind timeout): the storage rules plan each pod's claims themselves (``ClusterSnapshot.assume``), as
kube-scheduler does. Both use a bind timeout of :data:`BIND_TIMEOUT` seconds (kube: VolumeBindingArgs
``bindTimeoutSeconds``).

Issue #20's "Done when" cases, each run through both schedulers with the outcomes (node or message)
compared: ``test_wffc_claim_gets_the_selected_node_is_provisioned_and_the_pod_binds_there``,
``test_static_pv_with_zone_a_affinity_places_the_pod_in_zone_a``,
``test_static_pv_in_zone_a_with_zone_a_cordoned_is_unschedulable_with_kubes_text``,
``test_missing_claim_gives_kubes_text``, ``test_node_at_its_csi_attach_limit_is_skipped``,
``test_read_write_once_pod_claim_in_use_blocks_a_second_pod``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane import fakes
from tests.controlplane.api import Api
from tests.controlplane.harness import ControlPlane
from tests.controlplane.provisioner import (
    PROVISIONED_BY,
    SELECTED_NODE,
    STORAGE_PROVISIONER,
    FakeProvisioner,
    claim,
    local_volume,
    storage_class,
    wait_claim_bound,
)
from tests.e2e.parity_report import fit_part
from tests.e2e.volume_runner import TIMEOUT_ENV
from tests.e2e.volume_scenarios import Outcome, StorageBench, VolumeScenario, describe
from tests.kube.live import RunProcess

pytestmark = pytest.mark.e2e

BIND_TIMEOUT = 12
OURS = "policy-scheduler"
KUBE = "default-scheduler"
HOSTNAME = "kubernetes.io/hostname"
PREBIND = 'running PreBind plugin "VolumeBinding": '


@pytest.fixture(scope="module")
def kube_scheduler(cp_storage: ControlPlane) -> Iterator[Any]:
    """kube-scheduler (default plugins) with the same bind timeout as ours."""
    config = {"profiles": [{"schedulerName": KUBE, "pluginConfig": [{"name": "VolumeBinding", "args": {
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "VolumeBindingArgs",
        "bindTimeoutSeconds": BIND_TIMEOUT}}]}]}
    sched = cp_storage.start_scheduler(config)
    try:
        yield sched
    finally:
        cp_storage.stop_scheduler(sched)


class Env:
    """A test's nodes, provisioner, our scheduler processes and two benches (ours, kube's)."""

    def __init__(self, cp: ControlPlane, tmp: Path) -> None:
        self.cp, self.api, self.tmp = cp, cp.api(), tmp
        self.ours = StorageBench(self.api, OURS)
        self.kube = StorageBench(self.api, KUBE)
        self.owner = self.ours.ns
        self.provisioner_name = f"p-{self.ours.suffix}.fake.policyscheduler.test"
        self.provisioners: list[FakeProvisioner] = []
        self.runs: list[RunProcess] = []

    def nodes(self, count: int, **kw: Any) -> list[str]:
        """``count`` nodes, zones round-robin zone-a, zone-b, zone-c (``fakes.make_nodes``)."""
        objs = fakes.make_nodes(count, prefix=f"{self.owner}-n", owner=self.owner, **kw)
        fakes.create_all(self.api, objs)
        return [o["metadata"]["name"] for o in objs]

    def cluster_object(self, path: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Create a cluster-scoped object the test removes afterwards."""
        stored: dict[str, Any] = self.api.post(path, obj)
        self.ours.cluster_objects.append(f"{path}/{obj['metadata']['name']}")
        return stored

    def provisioner(self, **kw: Any) -> FakeProvisioner:
        prov = FakeProvisioner(self.api, self.provisioner_name, **kw).start()
        self.provisioners.append(prov)
        return prov

    def start_ours(self, *args: str, ready: str = "started") -> RunProcess:
        run = RunProcess(self.cp, self.tmp / f"run-{len(self.runs)}.log", "--engine", "reference", "--seed", "1",
                         *args, entry=("-m", "tests.e2e.volume_runner"), env={TIMEOUT_ENV: str(BIND_TIMEOUT)})
        self.runs.append(run)
        run.wait_log(ready, timeout=60)
        return run

    def both(self, scenario: VolumeScenario, timeout: float = 60.0) -> tuple[Outcome, Outcome]:
        """The scenario through both schedulers at once; (ours, kube's)."""
        self.ours.create(scenario)
        self.kube.create(scenario)
        return self.ours.outcome(scenario, timeout), self.kube.outcome(scenario, timeout)

    def in_turn(self, scenario: VolumeScenario, timeout: float = 60.0) -> tuple[Outcome, Outcome]:
        """The scenario through ours, then (ours' pod deleted again) through kube-scheduler: for cases where
        one scheduler's pod would change what the other's sees (attach counts on shared nodes)."""
        self.ours.create(scenario)
        ours = self.ours.outcome(scenario, timeout)
        self.api.delete(f"/api/v1/namespaces/{self.ours.ns}/pods/{scenario.name}", gracePeriodSeconds=0)
        deadline = time.monotonic() + 20
        while any(p["metadata"]["name"] == scenario.name
                  for p in self.api.list_items(f"/api/v1/namespaces/{self.ours.ns}/pods")):
            assert time.monotonic() < deadline, "our pod was not deleted"
            time.sleep(0.1)
        time.sleep(0.5)  # kube-scheduler's informers see the deletion
        self.kube.create(scenario)
        return ours, self.kube.outcome(scenario, timeout)

    def cleanup(self) -> None:
        for run in self.runs:
            if run.child.alive():
                run.terminate()
        for prov in self.provisioners:
            prov.stop()
        self.ours.cleanup()
        self.kube.cleanup()
        fakes.delete_owned(self.api, self.owner)


@pytest.fixture
def env(cp_storage: ControlPlane, kube_scheduler: Any, tmp_path: Path) -> Iterator[Env]:
    e = Env(cp_storage, tmp_path)
    try:
        yield e
    finally:
        e.cleanup()


def _scheduled_once(bench: StorageBench, pod: str) -> None:
    """Exactly one Scheduled event for ``pod`` (they are posted lazily, in batches: wait for the first,
    then give a second one time to show up)."""
    deadline = time.monotonic() + 20
    while bench.scheduled_events(pod) == 0:
        assert time.monotonic() < deadline, f"no Scheduled event for {pod}"
        time.sleep(0.2)
    time.sleep(1.0)
    assert bench.scheduled_events(pod) == 1


def _pv(api: Api, name: str) -> dict[str, Any]:
    obj: dict[str, Any] = api.get(f"/api/v1/persistentvolumes/{name}")
    return obj


def _wffc(provisioner: str) -> VolumeScenario:
    return VolumeScenario("web-0", classes=[storage_class("fast", provisioner)], claims=[claim("data", "", "fast")],
                          pod_claims=["data"])


def test_wffc_claim_gets_the_selected_node_is_provisioned_and_the_pod_binds_there(env: Env) -> None:
    nodes = env.nodes(3)
    prov = env.provisioner()
    env.start_ours()
    scenario = _wffc(env.provisioner_name)
    scenario.node_selector = {HOSTNAME: nodes[1]}
    ours, kube = env.both(scenario)
    expected = Outcome(nodes[1], None, {"data": {"volume": "provisioned", "selected_node": nodes[1], "bound": True}})
    assert ours.same_as(expected), describe(ours)
    assert kube.same_as(ours), f"kube-scheduler: {describe(kube)}, ours: {describe(ours)}"
    claim_obj = env.ours.claim("data")
    assert claim_obj["metadata"]["annotations"][STORAGE_PROVISIONER] == env.provisioner_name  # the PV controller's
    pv = _pv(env.api, claim_obj["spec"]["volumeName"])
    assert pv["metadata"]["annotations"][PROVISIONED_BY] == env.provisioner_name
    terms = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [nodes[1]]}]}]
    assert sorted(prov.provisioned) == sorted([f"{env.ours.ns}/data", f"{env.kube.ns}/data"])
    _scheduled_once(env.ours, "web-0")


def test_static_pv_is_bound_through_its_claim_ref_then_the_pod_binds(env: Env) -> None:
    nodes = env.nodes(3)
    env.start_ours()
    scenario = VolumeScenario(
        "db-0", classes=[storage_class("local", "kubernetes.io/no-provisioner")],
        volumes=[local_volume("disk", "local", nodes[2])], claims=[claim("data", "", "local")],
        pod_claims=["data"], node_selector={HOSTNAME: nodes[2]})
    ours, kube = env.both(scenario)
    expected = Outcome(nodes[2], None, {"data": {"volume": "disk", "selected_node": None, "bound": True}})
    assert ours.same_as(expected), describe(ours)
    assert kube.same_as(ours), f"kube-scheduler: {describe(kube)}, ours: {describe(ours)}"
    for bench in (env.ours, env.kube):  # the PV as kube's binder writes it: claimRef with the uid, bound-by-controller
        pv = _pv(env.api, bench.named("disk"))
        ref = pv["spec"]["claimRef"]
        assert (ref["namespace"], ref["name"], ref["uid"]) == (bench.ns, "data", bench.claim("data")["metadata"]["uid"])
        assert pv["metadata"]["annotations"].get("pv.kubernetes.io/bound-by-controller") == "yes"
        assert pv["status"]["phase"] == "Bound"


def test_failed_provisioning_retries_the_pod_with_kubes_text(env: Env) -> None:
    """The provisioner gives the claim back (removes the selected node): both schedulers report kube's
    PreBind failure and leave the pod pending, to be retried."""
    nodes = env.nodes(2)
    prov = env.provisioner(reschedule=True)
    env.start_ours()
    scenario = _wffc(env.provisioner_name)
    scenario.node_selector = {HOSTNAME: nodes[0]}
    scenario.expect_bound = False
    ours, kube = env.both(scenario)
    assert ours.message == PREBIND + 'binding volumes: provisioning failed for PVC "data"', describe(ours)
    assert kube.message == ours.message, describe(kube)
    assert ours.node is None and kube.node is None
    assert prov.rescheduled
    pod = env.ours.pod("web-0")
    [cond] = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert (cond["status"], cond["reason"]) == ("False", "SchedulerError")


def test_claims_that_never_bind_time_out_with_kubes_text(env: Env) -> None:
    """Nobody provisions the class: after the bind timeout both report kube's deadline text."""
    nodes = env.nodes(1)
    env.start_ours()
    scenario = _wffc("nobody.fake.policyscheduler.test")
    scenario.expect_bound = False
    started = time.monotonic()
    ours, kube = env.both(scenario, timeout=BIND_TIMEOUT + 40)
    assert time.monotonic() - started >= BIND_TIMEOUT
    assert ours.message == PREBIND + "binding volumes: context deadline exceeded", describe(ours)
    assert kube.message == ours.message, describe(kube)
    assert ours.node is None and kube.node is None
    assert ours.claims == kube.claims == {"data": {"volume": None, "selected_node": nodes[0], "bound": False}}


class _Recorder:
    """Watches the test namespace's pods and claims and keeps (resourceVersion, kind, object) in order."""

    def __init__(self, api: Api, namespace: str) -> None:
        self.api, self.ns = api, namespace
        self.seen: list[tuple[int, str, dict[str, Any]]] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(path,), daemon=True)
                         for path in (f"/api/v1/namespaces/{namespace}/pods",
                                      f"/api/v1/namespaces/{namespace}/persistentvolumeclaims")]
        for t in self._threads:
            t.start()

    def _run(self, path: str) -> None:
        version = self.api.get(path)["metadata"]["resourceVersion"]
        while not self._stop.is_set():
            for event in self.api.watch(path, version, timeout=2):
                obj = event["object"]
                version = obj["metadata"]["resourceVersion"]
                if event["type"] in ("ADDED", "MODIFIED"):
                    self.seen.append((int(version), obj["kind"], obj))

    def stop(self) -> list[tuple[int, str, dict[str, Any]]]:
        self._stop.set()
        for t in self._threads:
            t.join(10)
        return sorted(self.seen, key=lambda e: e[0])


def test_scheduler_killed_while_claims_wait_never_binds_the_pod_without_them(env: Env) -> None:
    """SIGKILL between the claim's selected-node write and the pod's bind (the provisioner holds the PV
    back), then a new scheduler: the pod ends bound once, on the node, after its claim -- never before."""
    nodes = env.nodes(2)
    hold = threading.Event()
    prov = env.provisioner(hold=hold)
    recorder = _Recorder(env.api, env.ours.ns)
    first = env.start_ours()
    scenario = _wffc(env.provisioner_name)
    scenario.node_selector = {HOSTNAME: nodes[0]}
    env.ours.create(scenario)

    def handed_over() -> bool:  # our write landed and the PV controller gave the claim to the provisioner
        notes = env.ours.claim("data")["metadata"].get("annotations") or {}
        return notes.get(SELECTED_NODE) == nodes[0] and notes.get(STORAGE_PROVISIONER) == env.provisioner_name

    deadline = time.monotonic() + 30
    while not handed_over():
        assert time.monotonic() < deadline, "the claim never got its selected node"
        time.sleep(0.1)
    assert not env.ours.pod("web-0")["spec"].get("nodeName")
    first.kill()
    second = env.start_ours()
    time.sleep(2.0)  # the new scheduler has planned and is waiting for the claim
    assert not env.ours.pod("web-0")["spec"].get("nodeName"), "bound before its claim"
    hold.set()
    outcome = env.ours.outcome(scenario, timeout=BIND_TIMEOUT + 30)
    assert outcome.node == nodes[0] and outcome.claims["data"]["bound"], describe(outcome)
    time.sleep(1.0)  # late events, if any, arrive
    seen = recorder.stop()
    claim_bound = [v for v, kind, o in seen if kind == "PersistentVolumeClaim" and o["spec"].get("volumeName")
                   and "pv.kubernetes.io/bind-completed" in (o["metadata"].get("annotations") or {})]
    pod_nodes = [(v, o["spec"].get("nodeName")) for v, kind, o in seen if kind == "Pod" and o["spec"].get("nodeName")]
    assert claim_bound and pod_nodes
    assert pod_nodes[0][0] > claim_bound[0], "the pod was bound before its claim"
    assert {n for _, n in pod_nodes} == {nodes[0]}
    _scheduled_once(env.ours, "web-0")
    assert prov.provisioned == [f"{env.ours.ns}/data"]
    assert second.find("volume binding failed") == []
    bound_lines = [line for run in env.runs for line in run.find("bound")]
    assert len(bound_lines) == 1


def test_a_pod_waits_for_its_immediate_claim_then_binds(env: Env) -> None:
    """An Immediate claim with no PV yet: both schedulers keep the pod pending (unbound immediate claims);
    once a matching PV appears the PV controller binds the claim, and both bind the pod to its node."""
    nodes = env.nodes(2)
    env.start_ours()
    scenario = VolumeScenario("late-0", classes=[storage_class("slow", "kubernetes.io/no-provisioner", wait=False)],
                              claims=[claim("data", "", "slow")], pod_claims=["data"],
                              node_selector={HOSTNAME: nodes[1]})
    env.ours.create(scenario)
    env.kube.create(scenario)
    time.sleep(4.0)
    assert not env.ours.pod("late-0")["spec"].get("nodeName"), "bound before its claim"
    assert not env.kube.pod("late-0")["spec"].get("nodeName")
    for bench in (env.ours, env.kube):
        pv = local_volume(bench.named("disk"), bench.named("slow"), nodes[1])
        env.api.post("/api/v1/persistentvolumes", pv)
        bench.cluster_objects.append(f"/api/v1/persistentvolumes/{pv['metadata']['name']}")
    ours, kube = env.ours.outcome(scenario), env.kube.outcome(scenario)
    expected = Outcome(nodes[1], None, {"data": {"volume": "disk", "selected_node": None, "bound": True}})
    assert ours.same_as(expected), describe(ours)
    assert kube.same_as(ours), f"kube-scheduler: {describe(kube)}, ours: {describe(ours)}"


ZONE = "topology.kubernetes.io/zone"


def _zone_a_volume() -> VolumeScenario:
    """A WaitForFirstConsumer claim whose only matching PV (static, no provisioner) lives in zone-a."""
    return VolumeScenario(
        "db-0", classes=[storage_class("local", "kubernetes.io/no-provisioner")],
        volumes=[local_volume("disk", "local", "zone-a", key=ZONE)], claims=[claim("data", "", "local")],
        pod_claims=["data"])


def test_static_pv_with_zone_a_affinity_places_the_pod_in_zone_a(env: Env) -> None:
    """Three nodes (zone-a, zone-b, zone-c), the zone-a one the busiest (every score prefers the others):
    both schedulers put the pod in zone-a and bind its claim to the PV there."""
    nodes = env.nodes(3)
    env.start_ours()
    busy = fakes.make_pod("busy", env.owner, cpu="2", node_name=nodes[0])
    env.api.post(f"/api/v1/namespaces/{env.owner}/pods", busy)
    ours, kube = env.both(_zone_a_volume())
    expected = Outcome(nodes[0], None, {"data": {"volume": "disk", "selected_node": None, "bound": True}})
    assert ours.same_as(expected), describe(ours)
    assert kube.same_as(ours), f"kube-scheduler: {describe(kube)}, ours: {describe(ours)}"


def test_static_pv_in_zone_a_with_zone_a_cordoned_is_unschedulable_with_kubes_text(env: Env) -> None:
    """Only zone-b and zone-c have room (the zone-a node is cordoned): the unbound claim's PV (no
    provisioner) fits nowhere, and for a claim already bound to a zone-a PV the bound PV's node affinity
    does not match them; both schedulers leave the pods pending with kube's text."""
    env.nodes(1, zones=("zone-a",), unschedulable=True)
    fakes.create_all(env.api, fakes.make_nodes(2, prefix=f"{env.owner}-m", owner=env.owner, zones=("zone-b", "zone-c")))
    env.start_ours()
    scenario = _zone_a_volume()
    scenario.expect_bound = False
    ours, kube = env.both(scenario)
    assert fit_part(ours.message or "") == ("0/3 nodes are available: 1 node(s) were unschedulable, "
                                            "2 node(s) didn't find available persistent volumes to bind"), describe(ours)
    assert fit_part(kube.message or "") == fit_part(ours.message or ""), describe(kube)
    assert ours.node is None and kube.node is None
    bound = VolumeScenario(
        "db-1", classes=[storage_class("instant", "kubernetes.io/no-provisioner", wait=False)],
        volumes=[local_volume("zdisk", "instant", "zone-a", key=ZONE)], claims=[claim("held", "", "instant")],
        pod_claims=["held"], claims_bound_first=True, expect_bound=False)
    ours, kube = env.both(bound)
    assert fit_part(ours.message or "") == ("0/3 nodes are available: 1 node(s) were unschedulable, "
                                            "2 node(s) didn't match PersistentVolume's node affinity"), describe(ours)
    assert fit_part(kube.message or "") == fit_part(ours.message or ""), describe(kube)
    assert ours.node is None and kube.node is None
    assert ours.claims["held"] == kube.claims["held"] == {"volume": "zdisk", "selected_node": None, "bound": True}


def test_missing_claim_gives_kubes_text(env: Env) -> None:
    nodes = env.nodes(2)
    env.start_ours()
    scenario = VolumeScenario("lost-0", pod_claims=["data"], node_selector={HOSTNAME: nodes[0]}, expect_bound=False)
    ours, kube = env.both(scenario)
    assert fit_part(ours.message or "") == '0/2 nodes are available: persistentvolumeclaim "data" not found', \
        describe(ours)
    assert fit_part(kube.message or "") == fit_part(ours.message or ""), describe(kube)
    assert ours.node is None and kube.node is None


def _csi_node(name: str, driver: str, count: int) -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": name},
            "spec": {"drivers": [{"name": driver, "nodeID": name, "topologyKeys": [HOSTNAME],
                                  "allocatable": {"count": count}}]}}


def _csi_volume(name: str, class_name: str, driver: str, namespace: str, claim_name: str) -> dict[str, Any]:
    """A CSI PV of ``driver`` pre-bound to claim ``namespace/claim_name`` (the PV controller completes it)."""
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": "Retain", "storageClassName": class_name,
                     "csi": {"driver": driver, "volumeHandle": name},
                     "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": namespace,
                                  "name": claim_name}}}


def test_node_at_its_csi_attach_limit_is_skipped(env: Env) -> None:
    """Two nodes whose CSINode allows one volume of the driver; the first (otherwise preferred: the second
    runs a big pod) already has a pod with one of its volumes attached. A pod with a WaitForFirstConsumer
    claim of that driver goes to the second node, its claim provisioned there; with the second node full
    too, it is unschedulable with kube's text. Ours runs first, then kube-scheduler on the same state."""
    nodes = env.nodes(3, zones=("zone-a",))
    driver = env.provisioner_name
    env.provisioner()
    for n in nodes:
        env.cluster_object("/apis/storage.k8s.io/v1/csinodes", _csi_node(n, driver, 1))
    env.cluster_object("/apis/storage.k8s.io/v1/storageclasses",
                       storage_class(f"held-{env.owner}", "kubernetes.io/no-provisioner", wait=False))
    for i in (0, 2):  # nodes 0 and 2 each hold one attached volume of the driver
        env.cluster_object("/api/v1/persistentvolumes",
                           _csi_volume(f"{env.owner}-att-{i}", f"held-{env.owner}", driver, env.owner, f"att-{i}"))
        env.api.post(f"/api/v1/namespaces/{env.owner}/persistentvolumeclaims", claim(f"att-{i}", "", f"held-{env.owner}"))
    for i in (0, 2):
        wait_claim_bound(env.api, env.owner, f"att-{i}")
        holder = fakes.make_pod(f"holder-{i}", env.owner, node_name=nodes[i])
        holder["spec"]["volumes"] = [{"name": "v", "persistentVolumeClaim": {"claimName": f"att-{i}"}}]
        env.api.post(f"/api/v1/namespaces/{env.owner}/pods", holder)
    env.api.post(f"/api/v1/namespaces/{env.owner}/pods", fakes.make_pod("busy", env.owner, cpu="3", node_name=nodes[1]))
    env.start_ours()
    ours, kube = env.in_turn(_wffc(driver))
    expected = Outcome(nodes[1], None, {"data": {"volume": "provisioned", "selected_node": nodes[1], "bound": True}})
    assert ours.same_as(expected), describe(ours)
    assert kube.same_as(ours), f"kube-scheduler: {describe(kube)}, ours: {describe(ours)}"
    # now node 1 holds kube's pod and its volume: every node is at its limit
    full = VolumeScenario("web-1", claims=[claim("more", "", "fast")], pod_claims=["more"], expect_bound=False)
    ours, kube = env.in_turn(full)
    assert fit_part(ours.message or "") == "0/3 nodes are available: 3 node(s) exceed max volume count", describe(ours)
    assert fit_part(kube.message or "") == fit_part(ours.message or ""), describe(kube)


def test_read_write_once_pod_claim_in_use_blocks_a_second_pod(env: Env) -> None:
    """A ReadWriteOncePod claim bound and used by a running pod: a second pod using it is unschedulable,
    with kube's text, in both schedulers."""
    nodes = env.nodes(2)
    env.start_ours()
    scenario = VolumeScenario(
        "second-0", classes=[storage_class("solo", "kubernetes.io/no-provisioner", wait=False)],
        volumes=[local_volume("only", "solo", nodes[0], access_modes=("ReadWriteOncePod",))],
        claims=[claim("data", "", "solo", access_modes=("ReadWriteOncePod",))], pod_claims=["data"],
        claims_bound_first=True, running_first={"first-0": nodes[0]}, expect_bound=False)
    ours, kube = env.both(scenario)
    assert fit_part(ours.message or "") == ("0/2 nodes are available: 2 node(s) unavailable due to "
                                            "PersistentVolumeClaim with ReadWriteOncePod access mode already in-use "
                                            "by another pod"), describe(ours)
    assert fit_part(kube.message or "") == fit_part(ours.message or ""), describe(kube)
    assert ours.node is None and kube.node is None


def _wait(check: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_a_leader_that_loses_its_lease_while_claims_wait_never_binds_the_pod(env: Env) -> None:
    """The lease is taken over while the pod waits for its claim: the replica stops (exit 1, as kube-scheduler)
    and binds nothing, even once the claim is bound; the next leader finds the claim bound and binds the pod."""
    nodes = env.nodes(1)
    hold = threading.Event()
    env.provisioner(hold=hold)
    lease_args = ("--leader-elect", "--leader-elect-lease-namespace", env.ours.ns, "--leader-elect-lease-duration",
                  "4", "--leader-elect-renew-deadline", "3", "--leader-elect-retry-period", "0.5")
    first = env.start_ours(*lease_args)
    _wait(lambda: any("became leader" in str(line.get("msg")) for line in first.lines()), 30, "leading")
    scenario = _wffc(env.provisioner_name)
    env.ours.create(scenario)
    _wait(lambda: (env.ours.claim("data")["metadata"].get("annotations") or {}).get(SELECTED_NODE) == nodes[0], 30,
          "the selected-node annotation")
    lease_path = f"/apis/coordination.k8s.io/v1/namespaces/{env.ours.ns}/leases/policy-scheduler"
    lease = env.api.get(lease_path)
    lease["spec"]["holderIdentity"] = "somebody-else"
    env.api.request("PUT", lease_path, lease)
    first.child.popen.wait(timeout=20)
    assert first.child.popen.returncode == 1
    assert first.find("leader election lost: scheduling stopped")
    hold.set()  # now the claim gets its PV and binds; nobody leads
    deadline = time.monotonic() + 20
    while not env.ours.claim("data")["spec"].get("volumeName"):
        assert time.monotonic() < deadline, "the claim never bound"
        time.sleep(0.2)
    time.sleep(2.0)
    assert not env.ours.pod("web-0")["spec"].get("nodeName"), "bound by a replica that lost its lease"
    env.start_ours(*lease_args)
    outcome = env.ours.outcome(scenario, timeout=BIND_TIMEOUT + 30)
    assert outcome.node == nodes[0] and outcome.claims["data"]["bound"], describe(outcome)
    _scheduled_once(env.ours, "web-0")
