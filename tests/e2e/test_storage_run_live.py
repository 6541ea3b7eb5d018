"""``policyscheduler run`` watches the storage kinds: a claim that appears requeues the pod that waited for it.

A pod naming a claim that does not exist gets kube-scheduler's text (``persistentvolumeclaim "data" not
found``, the same as the real kube-scheduler beside it); creating the claim (a WaitForFirstConsumer class)
is a storage event that moves the pod back to the queue, and it is then placed: bound, or -- once the claim
binder is part of ``run`` -- its claim annotated with the chosen node. A pod with ``spec.resourceClaims``
gets the "not supported" text and is never bound.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.controlplane import fakes
from tests.controlplane.harness import ControlPlane
from tests.e2e.parity_report import fit_part, strip_post_filter
from tests.kube.live import LiveEnv, env_fixture, wait_until

pytestmark = pytest.mark.e2e


class Env(LiveEnv):
    def __init__(self, cp: ControlPlane, tmp: Path) -> None:
        super().__init__(cp, tmp, "run")

    def cleanup(self) -> None:
        """Also delete the test's StorageClass (cluster-scoped, so the namespace's cleanup misses it)."""
        super().cleanup()
        for path in (f"/apis/storage.k8s.io/v1/storageclasses/{self.ns}-wffc",):
            try:
                self.api.delete(path)
            except Exception:  # noqa: BLE001 - already gone
                pass


env = env_fixture(Env)


def _condition(env: Env, name: str) -> dict[str, Any] | None:
    p = env.api.get(f"/api/v1/namespaces/{env.ns}/pods/{name}")
    return next((c for c in p["status"].get("conditions") or [] if c["type"] == "PodScheduled"), None)


def test_missing_claim_then_claim_created_and_dra_pod(env: Env) -> None:
    nodes = fakes.make_nodes(3, prefix=f"{env.ns}-n", cpu="4")
    for n in nodes:
        n["metadata"].setdefault("labels", {})[fakes.OWNER_LABEL] = env.ns
    fakes.create_all(env.api, nodes)
    sched = env.cp.start_scheduler({"profiles": [{"schedulerName": "kube-ref"}], "percentageOfNodesToScore": 100})
    try:
        run = env.start()
        volume = [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]
        ours = fakes.make_pod("claimer", scheduler_name="policy-scheduler", cpu="100m", memory="64Mi")
        ref = fakes.make_pod("claimer-ref", scheduler_name="kube-ref", cpu="100m", memory="64Mi")
        dra = fakes.make_pod("dra", scheduler_name="policy-scheduler", cpu="100m", memory="64Mi")
        for p in (ours, ref, dra):
            p["metadata"]["namespace"] = env.ns
        ours["spec"]["volumes"] = ref["spec"]["volumes"] = volume
        dra["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "gpu-claim"}]
        fakes.create_all(env.api, [ours, ref, dra])

        mine = wait_until(lambda: _condition(env, "claimer"), 20, "our PodScheduled condition")
        theirs = wait_until(lambda: _condition(env, "claimer-ref"), 20, "kube-scheduler's PodScheduled condition")
        env.api.delete(f"/api/v1/namespaces/{env.ns}/pods/claimer-ref", gracePeriodSeconds=0)
        assert strip_post_filter(mine["message"]) == '0/3 nodes are available: persistentvolumeclaim "data" not found.'
        assert fit_part(theirs["message"]) == fit_part(mine["message"]), theirs["message"]

        unsupported = wait_until(lambda: _condition(env, "dra"), 20, "the DRA pod's condition")
        assert unsupported["reason"] == "Unschedulable"
        assert strip_post_filter(unsupported["message"]) == (
            "0/3 nodes are available: pod uses dynamic resource claims (spec.resourceClaims), which "
            "policyscheduler does not support yet.")

        env.api.post("/apis/storage.k8s.io/v1/storageclasses", {
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": f"{env.ns}-wffc"},
            "provisioner": "csi.example.com", "volumeBindingMode": "WaitForFirstConsumer"})
        env.api.post(f"/api/v1/namespaces/{env.ns}/persistentvolumeclaims", {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": env.ns},
            "spec": {"storageClassName": f"{env.ns}-wffc", "accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "1Gi"}}}})

        def placed() -> str | None:
            pod = env.api.get(f"/api/v1/namespaces/{env.ns}/pods/claimer")
            if pod["spec"].get("nodeName"):
                return str(pod["spec"]["nodeName"])
            claim = env.api.get(f"/api/v1/namespaces/{env.ns}/persistentvolumeclaims/data")
            selected = (claim["metadata"].get("annotations") or {}).get("volume.kubernetes.io/selected-node")
            return str(selected) if selected else None

        node = wait_until(placed, 20, "the pod placed once its claim exists (a storage event requeued it)")
        assert node in {n["metadata"]["name"] for n in nodes}
        assert not env.api.get(f"/api/v1/namespaces/{env.ns}/pods/dra")["spec"].get("nodeName")
        assert run.terminate() == 0
    finally:
        env.cp.stop_scheduler(sched)
