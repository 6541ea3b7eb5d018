"""Claims before the pod, live: our scheduler executes a pod's VolumePlan (policyscheduler/app/volumes.py)
on the real control plane with kube-controller-manager's PV binder and a fake external provisioner, and
kube-scheduler runs the same scenario in the same test; the outcomes (node, claims, messages) agree.

Our scheduler runs as ``policyscheduler run`` embedded in tests/e2e/volume_runner.py, which takes the
plan from the pod (the storage rules do not plan yet); kube-scheduler plans by itself. Both use a bind
timeout of :data:`BIND_TIMEOUT` seconds (kube: VolumeBindingArgs ``bindTimeoutSeconds``).
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
)
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

    def nodes(self, count: int) -> list[str]:
        objs = fakes.make_nodes(count, prefix=f"{self.owner}-n", owner=self.owner)
        fakes.create_all(self.api, objs)
        return [o["metadata"]["name"] for o in objs]

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
                          pod_claims=["data"], plan_provision=["data"])


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
        pod_claims=["data"], node_selector={HOSTNAME: nodes[2]}, plan_static={"data": "disk"})
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


def test_a_claim_the_plan_leaves_out_still_binds_before_the_pod(env: Env) -> None:
    """No plan at all (the planner knows nothing of this pod): the pod waits for its Immediate claim, which
    binds only once a matching PV appears; then it is bound. kube-scheduler keeps it unschedulable meanwhile
    and binds it too: the same end."""
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


def test_a_planned_pv_whose_node_affinity_excludes_the_node_fails_with_kubes_text(env: Env) -> None:
    """A plan that binds a PV the chosen node cannot reach (the storage rules would never make it; a stale
    plan could): the pod is not bound, and the check's text is kube's."""
    nodes = env.nodes(2)
    env.start_ours()
    scenario = VolumeScenario(
        "db-1", classes=[storage_class("local", "kubernetes.io/no-provisioner")],
        volumes=[local_volume("disk", "local", nodes[0])], claims=[claim("data", "", "local")],
        pod_claims=["data"], node_selector={HOSTNAME: nodes[1]}, plan_static={"data": "disk"}, expect_bound=False)
    env.ours.create(scenario)
    ours = env.ours.outcome(scenario)
    assert ours.message == (PREBIND + f'binding volumes: pv "{env.ours.named("disk")}" node affinity doesn\'t match '
                            f'node "{nodes[1]}": no matching NodeSelectorTerms'), describe(ours)
    assert ours.node is None


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
