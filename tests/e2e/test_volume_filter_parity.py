"""Parity of the volume filters: the real kube-scheduler v1.35.4 and our default policies judge the same pod alike.

For each seeded storage scenario (:func:`tests.gen.storage.storage_scenario`, one pending pod: claims bound,
unbound of every class, missing, ReadWriteOncePod in use, CSI attach limits, zones, inline disks) the
scenario's objects are created, kube-scheduler judges the pod, and our decision is computed offline on the
same objects. Compared: a pod kube reports unschedulable has our FailedScheduling text up to the
PostFilter part (kube adds DynamicResources' and DefaultPreemption's texts there); a pod kube places --
its node read from ``spec.nodeName`` or from the ``volume.kubernetes.io/selected-node`` annotation it puts
on a claim to provision -- is feasible for us on that node; a pod for which kube binds a static
PersistentVolume (the ``bound-by-controller`` claimRef) is placed by us too.

No PV controller runs here (the live half of issue 20 adds kube-controller-manager): PersistentVolumes get
their ``status.phase`` through ``/status``, and kube's claim work stays in PreBind, which is fine since
only the decision is compared. Scenarios run one after the other and each one's nodes are deleted after
it, so kube only sees the scenario's own nodes (cluster-scoped names carry a per-scenario prefix).
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from policyscheduler.simulate.run import simulate
from tests.controlplane.api import Api, ApiError, wait_for
from tests.controlplane.harness import ControlPlane
from tests.e2e.parity_report import strip_post_filter
from tests.gen.policysets import default_policy_set
from tests.gen.storage import storage_scenario

pytestmark = pytest.mark.e2e

SCENARIOS = 60
SEED = 20_000
CLUSTER_PATHS = {"Node": "/api/v1/nodes", "CSINode": "/apis/storage.k8s.io/v1/csinodes",
                 "StorageClass": "/apis/storage.k8s.io/v1/storageclasses",
                 "PersistentVolume": "/api/v1/persistentvolumes"}


@pytest.fixture(scope="module")
def plane(cp: ControlPlane) -> Iterator[ControlPlane]:
    sched = cp.start_scheduler({"percentageOfNodesToScore": 100})
    try:
        yield cp
    finally:
        cp.stop_scheduler(sched)


def _path(kind: str, namespace: str) -> str:
    if kind in CLUSTER_PATHS:
        return CLUSTER_PATHS[kind]
    return f"/api/v1/namespaces/{namespace}/{'persistentvolumeclaims' if kind == 'PersistentVolumeClaim' else 'pods'}"


def _kube_outcome(api: Api, namespace: str, pod: dict[str, Any]) -> tuple[str, str]:
    """("node", name), ("static", pv) or ("unschedulable", condition message)."""
    name = pod["metadata"]["name"]
    claims = {v["persistentVolumeClaim"]["claimName"] for v in pod["spec"]["volumes"] if "persistentVolumeClaim" in v}

    def check() -> tuple[str, str] | None:
        live = api.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
        if live["spec"].get("nodeName"):
            return ("node", str(live["spec"]["nodeName"]))
        for cond in (live.get("status") or {}).get("conditions") or []:
            if cond.get("type") == "PodScheduled" and cond.get("status") == "False" and cond.get("reason"):
                return ("unschedulable", str(cond.get("message", "")))
        for claim in api.list_items(f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"):
            selected = (claim["metadata"].get("annotations") or {}).get("volume.kubernetes.io/selected-node")
            if selected and claim["metadata"]["name"] in claims:
                return ("node", str(selected))
        for pv in api.list_items("/api/v1/persistentvolumes"):
            ref = pv["spec"].get("claimRef") or {}
            if ref.get("namespace") == namespace and ref.get("name") in claims \
                    and (pv["metadata"].get("annotations") or {}).get("pv.kubernetes.io/bound-by-controller"):
                return ("static", str(pv["metadata"]["name"]))
        return None

    outcome: tuple[str, str] = wait_for(check, timeout=20, interval=0.05, what=f"kube-scheduler's verdict on {name}")
    return outcome


def _fit_part(message: str) -> str:
    """The FailedScheduling text before the PostFilter part (kube's "... not found" after a PreFilter
    rejection is DynamicResources' PostFilter answer too)."""
    return strip_post_filter(message).split(". not found")[0].rstrip(".")


def test_volume_filters_agree_with_kube_scheduler(plane: ControlPlane) -> None:
    api = plane.api()
    policies = default_policy_set()
    seen: Counter[str] = Counter()
    failures: list[str] = []
    for i in range(SCENARIOS):
        seed = SEED + i
        namespace, prefix = f"vp-{i}", f"vp{i}-"
        api.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        objects, pods = storage_scenario(random.Random(seed), namespace=namespace, prefix=prefix, pending=1)
        for obj in objects:
            api.post(_path(obj["kind"], namespace), obj)
            if obj["kind"] == "PersistentVolume":  # no PV controller: the phase comes through /status
                api.patch(f"/api/v1/persistentvolumes/{obj['metadata']['name']}/status", {"status": obj["status"]})
        time.sleep(0.3)  # kube's informers see the scenario before the pod
        pod = pods[0]
        api.post(_path("Pod", namespace), pod)
        kube = _kube_outcome(api, namespace, pod)
        ours_pod = {**pod, "spec": {**pod["spec"], "schedulerName": "policy-scheduler"}}
        decision = simulate(policies, [*objects, ours_pod], seed=seed).decisions[0]
        feasible = set(decision.feasible)
        if kube[0] == "unschedulable":
            seen["prefilter" if not _fit_part(kube[1]).split("available: ", 1)[-1][:1].isdigit() else "filter"] += 1
            ok = decision.node is None and _fit_part(kube[1]) == _fit_part(decision.message or "")
        elif kube[0] == "node":
            seen["placed"] += 1
            ok = kube[1] in feasible
        else:
            seen["static"] += 1
            ok = decision.node is not None
        if not ok:
            failures.append(f"seed {seed}: kube {kube}; ours node {decision.node}, feasible {sorted(feasible)}, "
                            f"message {decision.message!r}")
        for obj in objects:
            if obj["kind"] in ("Node", "CSINode"):
                try:
                    api.delete(f"{CLUSTER_PATHS[obj['kind']]}/{obj['metadata']['name']}")
                except ApiError:
                    pass
        api.delete(f"{_path('Pod', namespace)}/{pod['metadata']['name']}", gracePeriodSeconds=0)
    assert not failures, f"{len(failures)} of {SCENARIOS} disagree:\n" + "\n".join(failures)
    assert seen["prefilter"] and seen["filter"] and seen["placed"], seen
