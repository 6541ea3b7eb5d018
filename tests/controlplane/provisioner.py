"""A tiny dynamic provisioner for the storage tests: it stands in for a CSI driver's external-provisioner.

How dynamic provisioning goes on a real cluster (and on the test control plane, with kube-controller-manager's
PV binder running, :meth:`tests.controlplane.harness.ControlPlane.start_controller_manager`):

1. a claim of a ``WaitForFirstConsumer`` StorageClass waits until a scheduler picks a node for its pod and
   writes that node into the claim's ``volume.kubernetes.io/selected-node`` annotation;
2. the PV controller sees a claim it cannot provision itself (the class's provisioner is no in-tree plugin)
   and hands it over by annotating it ``volume.kubernetes.io/storage-provisioner: <provisioner>`` (older
   versions: ``volume.beta.kubernetes.io/storage-provisioner``);
3. the external provisioner of that name creates the volume and a PersistentVolume for it: the claim's size,
   access modes and class, ``claimRef`` to the claim (with its uid), node affinity to the selected node,
   ``pv.kubernetes.io/provisioned-by``;
4. the PV controller sees the PV pre-bound to the claim and binds the claim (``spec.volumeName``,
   ``pv.kubernetes.io/bind-completed``).

:class:`FakeProvisioner` does step 3 from a list+watch of PersistentVolumeClaims, on its own thread. Knobs a
test uses to make the otherwise instant steps observable (never a stand-in for the scheduler's code):

* ``hold``: an Event; the PV is created only once it is set (a test kills a scheduler while claims wait);
* ``reschedule``: instead of provisioning, give the claim back as a CSI external-provisioner does after a
  failure it cannot retry on that node: remove the selected-node annotation (the scheduler must then retry).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from tests.controlplane.api import Api, ApiError

SELECTED_NODE = "volume.kubernetes.io/selected-node"
STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
HOSTNAME = "kubernetes.io/hostname"
CLAIMS = "/api/v1/persistentvolumeclaims"


def storage_class(name: str, provisioner: str, *, wait: bool = True, reclaim: str = "Delete",
                  **extra: Any) -> dict[str, Any]:
    """A StorageClass (``WaitForFirstConsumer`` unless ``wait`` is False)."""
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
            "provisioner": provisioner, "reclaimPolicy": reclaim,
            "volumeBindingMode": "WaitForFirstConsumer" if wait else "Immediate", **extra}


def claim(name: str, namespace: str, class_name: str, size: str = "1Gi",
          access_modes: tuple[str, ...] = ("ReadWriteOnce",)) -> dict[str, Any]:
    """A PersistentVolumeClaim of ``class_name``."""
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": namespace},
            "spec": {"accessModes": list(access_modes), "storageClassName": class_name,
                     "resources": {"requests": {"storage": size}}}}


def local_volume(name: str, class_name: str, node_hostname: str, size: str = "1Gi",
                 access_modes: tuple[str, ...] = ("ReadWriteOnce",), key: str = HOSTNAME) -> dict[str, Any]:
    """A static PersistentVolume of ``class_name`` usable only where label ``key`` is ``node_hostname``."""
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": size}, "accessModes": list(access_modes),
                     "persistentVolumeReclaimPolicy": "Retain", "storageClassName": class_name,
                     "local": {"path": f"/mnt/disks/{name}"},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": key, "operator": "In", "values": [node_hostname]}]}]}}}}


class FakeProvisioner:
    """Provisions the claims handed to ``name`` (see the module docstring); :meth:`start`, :meth:`stop`."""

    def __init__(self, api: Api, name: str, *, hold: threading.Event | None = None, reschedule: bool = False) -> None:
        self.api = api
        self.name = name
        self.hold = hold
        self.reschedule = reschedule
        self.provisioned: list[str] = []
        """``namespace/name`` of every claim a PV was created for, in order."""
        self.rescheduled: list[str] = []
        self.errors: list[str] = []
        self._handled: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"provisioner-{name}", daemon=True)

    def start(self) -> FakeProvisioner:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self.hold is not None:
            self.hold.set()
        self._thread.join(40)

    # -- the watch -------------------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                listed = self.api.get(CLAIMS)
                for item in listed.get("items") or []:
                    self._consider(item)
                version = listed["metadata"]["resourceVersion"]
                while not self._stop.is_set():
                    for event in self.api.watch(CLAIMS, version, timeout=5):
                        obj = event.get("object") or {}
                        version = (obj.get("metadata") or {}).get("resourceVersion", version)
                        if event.get("type") in ("ADDED", "MODIFIED"):
                            self._consider(obj)
                        if self._stop.is_set():
                            return
            except Exception as exc:  # noqa: BLE001 - report and start over from a list
                self.errors.append(f"{type(exc).__name__}: {exc}")
                self._stop.wait(0.5)

    def _consider(self, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        notes = meta.get("annotations") or {}
        if self.name not in (notes.get(STORAGE_PROVISIONER), notes.get(BETA_STORAGE_PROVISIONER)):
            return
        node = notes.get(SELECTED_NODE)
        if not node or (obj.get("spec") or {}).get("volumeName"):
            return
        handled = f"{meta.get('uid')}/{node}"
        if handled in self._handled:
            return
        self._handled.add(handled)
        threading.Thread(target=self._provision, args=(obj, node), name=f"provision-{meta.get('name')}",
                         daemon=True).start()

    # -- step 3 ----------------------------------------------------------------------------------------

    def _provision(self, obj: dict[str, Any], node: str) -> None:
        if self.hold is not None:
            while not self.hold.wait(0.2):
                if self._stop.is_set():
                    return
        if self._stop.is_set():
            return
        meta = obj["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        try:
            if self.reschedule:
                self.api.patch(f"/api/v1/namespaces/{meta['namespace']}/persistentvolumeclaims/{meta['name']}",
                               {"metadata": {"annotations": {SELECTED_NODE: None}}})
                self.rescheduled.append(key)
                return
            self.api.post("/api/v1/persistentvolumes", self.volume_for(obj, self._hostname(node)))
            self.provisioned.append(key)
        except ApiError as exc:
            if exc.status != 409:  # 409: created already (a second look at the same claim)
                self.errors.append(f"{key}: {exc}")

    def _hostname(self, node: str) -> str:
        try:
            labels = self.api.get(f"/api/v1/nodes/{node}")["metadata"].get("labels") or {}
        except ApiError:
            return node
        return str(labels.get(HOSTNAME) or node)

    def volume_for(self, obj: dict[str, Any], hostname: str) -> dict[str, Any]:
        """The PV an external-provisioner would create for claim ``obj`` on the node labelled ``hostname``."""
        meta, spec = obj["metadata"], obj.get("spec") or {}
        size = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
        return {
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": f"pvc-{meta['uid']}", "annotations": {PROVISIONED_BY: self.name}},
            "spec": {
                "capacity": {"storage": size},
                "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
                "volumeMode": spec.get("volumeMode") or "Filesystem",
                "persistentVolumeReclaimPolicy": "Delete",
                "storageClassName": spec.get("storageClassName") or "",
                "claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": meta["namespace"],
                             "name": meta["name"], "uid": meta["uid"], "resourceVersion": meta["resourceVersion"]},
                "csi": {"driver": self.name, "volumeHandle": f"fake-{meta['uid']}"},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": HOSTNAME, "operator": "In", "values": [hostname]}]}]}},
            },
        }


def wait_claim_bound(api: Api, namespace: str, name: str, timeout: float = 60.0) -> dict[str, Any]:
    """The claim once the PV controller completed its binding (``volumeName`` and bind-completed)."""
    deadline = time.monotonic() + timeout
    while True:
        obj: dict[str, Any] = api.get(f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{name}")
        if (obj.get("spec") or {}).get("volumeName") and \
                "pv.kubernetes.io/bind-completed" in (obj["metadata"].get("annotations") or {}):
            return obj
        if time.monotonic() > deadline:
            raise TimeoutError(f"claim {namespace}/{name} not bound after {timeout:.0f}s: {obj.get('status')}, "
                               f"annotations {obj['metadata'].get('annotations')}")
        time.sleep(0.2)
