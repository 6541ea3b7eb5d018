"""Storage parity, pod for pod: the real kube-scheduler v1.35.4 and our default policies place the same pods alike.

Each seeded storage scenario (:func:`tests.gen.storage.storage_scenario`: nodes in zones, StorageClasses
Immediate and WaitForFirstConsumer with and without ``allowedTopologies``, static PVs with zone affinity
and every access mode, claims bound, unbound and missing, ReadWriteOncePod claims in use, CSI attach
limits from CSINodes filled by running pods, inline disks) gets :data:`PENDING` pods, judged one after
the other against the real bound state: kube-controller-manager's PV binder and the fake provisioner
(tests/controlplane/provisioner.py, named after the scenarios' CSI driver) run, so kube-scheduler's PreBind
completes -- static claims bound to the PV it picked, provisioned claims bound to a PV on its node -- and
the next pod of the scenario sees that.

For every pod, as the demo parity test (tests/e2e/parity_run.py): the cluster is listed once the PV
controller is done with the scenario (every claimed PV bound, every free one Available), the pod is
created, our default policies decide on that listing for the pod as the API server stored it, and
kube-scheduler's verdict is compared: a pod kube binds must be bound to one of *our best-scored* nodes, and the claim work kube did for it
(each unbound claim bound to the static PV it picked, or provisioned) must be our plan for that node;
a pod kube leaves unschedulable must get our FailedScheduling text, equal up to kube's PostFilter part
(:func:`tests.e2e.parity_report.fit_part`); anything else (a PreBind error) is a mismatch. Unschedulable
pods are deleted again, bound ones stay and shape the next decision.

:data:`CONCURRENT` scenarios run at once to overlap kube's PreBind waits (it polls its claims every
second): each batch's nodes are all created before its first pod and stay until its last, and each
scenario's pods select their own scenario's nodes (label :data:`SCENARIO_LABEL`), so every pod is judged
on a fixed node set -- the other scenarios' nodes fail NodeAffinity, on both sides alike -- and nothing
one scenario does (its own namespace, prefixed classes and PVs, its own nodes) changes another's verdict.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from policyscheduler.evaluation import Decision, make_evaluator
from policyscheduler.state import ClusterSnapshot
from tests.controlplane.api import Api, ApiError, wait_for
from tests.controlplane.harness import ControlPlane
from tests.controlplane.provisioner import FakeProvisioner
from tests.e2e.parity_report import compare, fit_part, kube_scores
from tests.gen.policysets import default_policy_set
from tests.gen.storage import DRIVER, storage_scenario

pytestmark = pytest.mark.e2e

SCENARIOS = 200
PENDING = 3
CONCURRENT = 20
SEED = 20_000
SCENARIO_LABEL = "parity.policyscheduler.test/scenario"
CLUSTER_PATHS = {"Node": "/api/v1/nodes", "CSINode": "/apis/storage.k8s.io/v1/csinodes",
                 "StorageClass": "/apis/storage.k8s.io/v1/storageclasses",
                 "PersistentVolume": "/api/v1/persistentvolumes"}
LIST_PATHS = {**CLUSTER_PATHS, "Pod": "/api/v1/pods", "PersistentVolumeClaim": "/api/v1/persistentvolumeclaims",
              "Namespace": "/api/v1/namespaces"}
CREATE_ORDER = ("Node", "CSINode", "StorageClass", "PersistentVolume", "PersistentVolumeClaim", "Pod")


@pytest.fixture(scope="module")
def plane(cp_storage: ControlPlane) -> Iterator[tuple[ControlPlane, Any]]:
    """kube-scheduler (scores logged, every node scored) and the fake provisioner beside the PV binder."""
    sched = cp_storage.start_scheduler({"percentageOfNodesToScore": 100}, args=("-v=2", "--vmodule=schedule_one=10"))
    provisioner = FakeProvisioner(cp_storage.api(), DRIVER).start()
    try:
        yield cp_storage, sched
    finally:
        provisioner.stop()
        cp_storage.stop_scheduler(sched)
        assert provisioner.errors == []


def _path(kind: str, namespace: str) -> str:
    if kind in CLUSTER_PATHS:
        return CLUSTER_PATHS[kind]
    return f"/api/v1/namespaces/{namespace}/{'persistentvolumeclaims' if kind == 'PersistentVolumeClaim' else 'pods'}"


def _list_cluster(api: Api) -> list[dict[str, Any]]:
    """What kube-scheduler's informers see, kind-tagged."""
    def fetch(item: tuple[str, str]) -> list[dict[str, Any]]:
        kind, path = item
        objs = api.list_items(path)
        for obj in objs:
            obj["kind"] = kind
        return objs

    with ThreadPoolExecutor(max_workers=len(LIST_PATHS)) as pool:
        return [o for objs in pool.map(fetch, LIST_PATHS.items()) for o in objs]


class Scenario:
    """One seeded scenario of a batch: its objects (prefixed, in its namespace) and pending pods."""

    def __init__(self, index: int) -> None:
        self.index, self.seed = index, SEED + index
        self.namespace, self.prefix = f"vp-{index}", f"vp{index}-"
        self.objects, self.pods = storage_scenario(random.Random(self.seed), namespace=self.namespace,
                                                   prefix=self.prefix, pending=PENDING)
        for obj in self.objects:
            if obj["kind"] == "Node":
                obj["metadata"]["labels"][SCENARIO_LABEL] = str(index)
            elif obj["kind"] == "PersistentVolumeClaim" and obj["spec"].get("volumeName"):
                # the generator's bound pairs as a user pre-binds them (volumeName only): the PV controller
                # completes the binding; a claim marked bind-completed whose PV's claimRef has no uid yet
                # would be declared Lost instead
                obj["metadata"].pop("annotations", None)
        for pod in self.pods:
            pod["spec"]["nodeSelector"] = {SCENARIO_LABEL: str(index)}

    def settled(self, api: Api) -> str | None:
        """None once the PV controller is done with this scenario's volumes and claims, else what is not."""
        claims = api.list_items(f"/api/v1/namespaces/{self.namespace}/persistentvolumeclaims")
        for c in claims:
            if c["spec"].get("volumeName") and (c.get("status") or {}).get("phase") != "Bound":
                return f"claim {c['metadata']['name']} not yet Bound"
        for pv in api.list_items("/api/v1/persistentvolumes"):
            ref = pv["spec"].get("claimRef") or {}
            if not pv["metadata"]["name"].startswith(self.prefix) and ref.get("namespace") != self.namespace:
                continue
            phase = (pv.get("status") or {}).get("phase")
            if ref and (not ref.get("uid") or phase != "Bound"):
                return f"volume {pv['metadata']['name']} not yet Bound ({phase})"
            if not ref and phase != "Available":
                return f"volume {pv['metadata']['name']} not yet Available ({phase})"
        return None


class Judge:
    """Runs scenarios' pods through kube-scheduler, decides them ourselves, keeps outcomes and mismatches."""

    def __init__(self, api: Api, log_file: Path) -> None:
        self.api, self.log_file = api, log_file
        self.policy_set = default_policy_set()
        self.outcomes: Counter[str] = Counter()
        self.unique_best = 0
        self.claim_work = 0
        self.mismatches: list[str] = []

    def create(self, batch: list[Scenario]) -> None:
        for sc in batch:
            self.api.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                 "metadata": {"name": sc.namespace}})
        with ThreadPoolExecutor(max_workers=8) as pool:
            for kind in CREATE_ORDER:
                work = [(sc, o) for sc in batch for o in sc.objects if o["kind"] == kind]
                list(pool.map(lambda item: self.api.post(_path(item[1]["kind"], item[0].namespace), item[1]), work))

    def run(self, sc: Scenario) -> None:
        # Scenarios run in parallel threads; an evaluator keeps reuse state across the snapshots it sees
        # and is not shared between threads (``run`` has one scheduling loop), so each scenario has its own.
        engine = make_evaluator("vector")
        for number, pod in enumerate(sc.pods):
            try:
                wait_for(lambda: sc.settled(self.api) is None, timeout=30, interval=0.1,
                         what=f"the PV controller to settle scenario {sc.seed}")
            except Exception:  # noqa: BLE001 - reported as a mismatch with what was left
                self.mismatches.append(f"seed {sc.seed} pod {number}: state never settled: {sc.settled(self.api)}")
                return
            time.sleep(0.3)  # kube-scheduler's informers catch up with the settled state
            listing = _list_cluster(self.api)
            stored = self.api.post(_path("Pod", sc.namespace), pod)
            stored["kind"] = "Pod"
            decision = engine.evaluate(self.policy_set, ClusterSnapshot.from_objects(listing), stored,
                                            rng=random.Random(sc.seed))
            outcome = self._kube_outcome(sc.namespace, pod["metadata"]["name"])
            self._judge(sc, number, outcome, decision)
            if outcome[0] == "bound":
                self._judge_claims(sc, number, listing, stored, outcome[1])
            if outcome[0] != "bound":
                self.api.delete(f"{_path('Pod', sc.namespace)}/{pod['metadata']['name']}", gracePeriodSeconds=0)

    def _kube_outcome(self, namespace: str, name: str) -> tuple[str, str]:
        path = f"/api/v1/namespaces/{namespace}/pods/{name}"

        def check() -> tuple[str, str] | None:
            live = self.api.get(path)
            if live["spec"].get("nodeName"):
                return ("bound", str(live["spec"]["nodeName"]))
            for cond in (live.get("status") or {}).get("conditions") or []:
                if cond.get("type") == "PodScheduled" and cond.get("status") == "False" and cond.get("reason"):
                    kind = "unschedulable" if cond["reason"] == "Unschedulable" else str(cond["reason"])
                    return (kind, str(cond.get("message", "")))
            return None

        try:
            outcome: tuple[str, str] = wait_for(check, timeout=45, interval=0.05, what=f"kube's verdict on {name}")
        except Exception as exc:  # noqa: BLE001 - a verdict that never came is a mismatch to report
            return ("no verdict", str(exc))
        return outcome

    def _judge(self, sc: Scenario, number: int, outcome: tuple[str, str], decision: Decision) -> None:
        kind, detail = outcome
        where = f"seed {sc.seed} pod {number} ({sc.namespace}/{sc.pods[number]['metadata']['name']})"
        if kind == "unschedulable":
            prefilter = not fit_part(detail).split("available: ", 1)[-1][:1].isdigit()
            self.outcomes["unschedulable (prefilter)" if prefilter else "unschedulable (filter)"] += 1
            if decision.node is not None:
                self.mismatches.append(f"{where}: kube: unschedulable, we place it on {decision.node} "
                                       f"(top {decision.top})\n    kube: {detail}")
            elif fit_part(detail) != fit_part(decision.message or ""):
                self.mismatches.append(f"{where}: messages differ\n    kube: {detail}\n    ours: {decision.message}")
            return
        self.outcomes[kind] += 1
        if kind == "bound" and len(decision.top) == 1:
            self.unique_best += 1
        mismatch = compare(f"{sc.namespace}/{sc.pods[number]['metadata']['name']}", outcome, decision)
        if mismatch is not None:
            self.mismatches.append(f"{where}:\n" + mismatch.render(kube_scores(self.log_file)))

    def _judge_claims(self, sc: Scenario, number: int, listing: list[dict[str, Any]], pod: dict[str, Any],
                      node: str) -> None:
        """The claim work kube did for a pod it bound (each unbound claim: the static PV it bound, or
        provisioned) must be our plan for that node (``ClusterSnapshot.assume``, what ``run`` writes)."""
        snapshot = ClusterSnapshot.from_objects(listing)
        snapshot.assume(pod, node)
        plan = snapshot.volume_plan(pod)
        ours: set[tuple[str, str]] = set()
        if plan is not None:
            ours = {(b.claim, b.pv) for b in plan.static} | {(claim, "provisioned") for _, claim in plan.provision}
        unbound = {c["metadata"]["name"] for c in listing if c["kind"] == "PersistentVolumeClaim"
                   and c["metadata"]["namespace"] == sc.namespace and not c["spec"].get("volumeName")}
        kube: set[tuple[str, str]] = set()
        for volume in pod["spec"].get("volumes") or []:
            name = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            if name in unbound:
                claim = self.api.get(f"/api/v1/namespaces/{sc.namespace}/persistentvolumeclaims/{name}")
                pv = str(claim["spec"].get("volumeName"))
                kube.add((str(name), "provisioned" if pv == f"pvc-{claim['metadata']['uid']}" else pv))
        if kube:
            self.claim_work += 1
        if ours != kube:
            self.mismatches.append(f"seed {sc.seed} pod {number}: claim work on {node} differs\n"
                                   f"    kube: {sorted(kube)}\n    ours: {sorted(ours)}")

    def cleanup(self, batch: list[Scenario]) -> None:
        """Delete the batch's objects (claims and volumes without the protection finalizers: no controller
        here removes them), and wait until its nodes are gone."""
        api = self.api

        def drop(item: tuple[str, str, str]) -> None:
            kind, namespace, name = item
            path = f"{_path(kind, namespace)}/{name}"
            try:
                if kind in ("PersistentVolume", "PersistentVolumeClaim"):
                    api.patch(path, {"metadata": {"finalizers": None}})
                api.delete(path, **({"gracePeriodSeconds": 0} if kind == "Pod" else {}))
            except ApiError:
                pass  # gone already
        work: list[tuple[str, str, str]] = []
        for sc in batch:
            work += [("Pod", sc.namespace, p["metadata"]["name"])
                     for p in api.list_items(f"/api/v1/namespaces/{sc.namespace}/pods")]
            work += [("PersistentVolumeClaim", sc.namespace, c["metadata"]["name"])
                     for c in api.list_items(f"/api/v1/namespaces/{sc.namespace}/persistentvolumeclaims")]
            work += [(o["kind"], sc.namespace, o["metadata"]["name"]) for o in sc.objects
                     if o["kind"] in CLUSTER_PATHS]
        namespaces = {sc.namespace for sc in batch}
        work += [("PersistentVolume", "", pv["metadata"]["name"]) for pv in api.list_items("/api/v1/persistentvolumes")
                 if (pv["spec"].get("claimRef") or {}).get("namespace") in namespaces
                 and not any(pv["metadata"]["name"].startswith(sc.prefix) for sc in batch)]
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(drop, work))
        prefixes = tuple(sc.prefix for sc in batch)
        wait_for(lambda: not any(n["metadata"]["name"].startswith(prefixes) for n in api.list_items("/api/v1/nodes")),
                 timeout=30, interval=0.1, what="the batch's nodes to be deleted")


def test_storage_scenarios_agree_with_kube_scheduler_pod_for_pod(plane: tuple[ControlPlane, Any]) -> None:
    cp, sched = plane
    judge = Judge(cp.api(), Path(sched.child.log_file))
    started = time.monotonic()
    for first in range(0, SCENARIOS, CONCURRENT):
        batch = [Scenario(i) for i in range(first, min(first + CONCURRENT, SCENARIOS))]
        judge.create(batch)
        time.sleep(0.5)  # kube-scheduler's informers see the batch's nodes (and the last batch's deletions)
        with ThreadPoolExecutor(max_workers=len(batch)) as pool:
            list(pool.map(judge.run, batch))
        judge.cleanup(batch)
    elapsed = time.monotonic() - started
    pods = sum(judge.outcomes.values())
    summary = (f"{SCENARIOS} scenarios, {pods} pods in {elapsed:.0f}s: kube {dict(sorted(judge.outcomes.items()))}; "
               f"{judge.unique_best} bound pods had a single best node of ours; {judge.claim_work} needed claim work "
               f"(kube's static PV or provisioning equal to our plan); {len(judge.mismatches)} mismatches")
    print(summary)
    assert not judge.mismatches, summary + "\n" + "\n".join(judge.mismatches)
    assert pods == SCENARIOS * PENDING, summary
    assert judge.outcomes["bound"] and judge.outcomes["unschedulable (filter)"] \
        and judge.outcomes["unschedulable (prefilter)"], summary
