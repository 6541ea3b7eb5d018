"""Seeded random storage scenarios: nodes in zones, classes, static PVs, claims, CSI limits, pending pods.

:func:`storage_scenario` returns ``(objects, pending_pods)`` as plain Kubernetes object dicts that the API
server accepts as they are (apiVersion, kind, metadata, valid specs), so one scenario can be fed both to
``simulate`` / the differential test here and to a live control plane beside kube-scheduler (the
parity test creates ``objects`` first -- cluster-scoped ones as they are, namespaced ones in
``namespace`` -- then the pending pods). Everything is drawn from the ``random.Random`` given, in a
fixed order, so a seed names a scenario.

What it covers, on purpose: StorageClasses ``Immediate`` and ``WaitForFirstConsumer``, with and without
``allowedTopologies``, with a real provisioner name or ``kubernetes.io/no-provisioner``; static PVs with
zone node affinity (and zone labels), sizes and access modes (RWO, ROX, RWX, RWOP), some already
claimed; claims bound (volumeName, bind-completed annotation, the PV's claimRef pointing back), unbound
of every class, unbound with no class, missing (a pod names a claim that does not exist); CSINodes with
attach limits for the driver, pods on nodes holding CSI volumes up to those limits; ReadWriteOncePod
claims in use by a running pod; inline GCE PD disks shared between a running and a pending pod.

Sizes are distinct per class (``1Gi`` steps with a per-PV offset in Mi), so "the smallest PV that
fits" never ties: kube breaks such ties in Go map order, which no model can reproduce.
"""

from __future__ import annotations

import random
from typing import Any

__all__ = ["DRIVER", "ZONES", "storage_case", "storage_scenario"]

Obj = dict[str, Any]

DRIVER = "csi.example.com"
"""The CSI driver every dynamic class provisions with and every static CSI volume names."""
ZONES = ("zone-a", "zone-b", "zone-c")
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
_MODES = (["ReadWriteOnce"], ["ReadWriteOnce", "ReadOnlyMany"], ["ReadWriteMany"], ["ReadWriteOncePod"])


def _chance(rng: random.Random, p: float) -> bool:
    return rng.random() < p


def _node(name: str, zone: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, ZONE: zone, REGION: "region-1"}},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                       "capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}


def _classes(rng: random.Random) -> list[Obj]:
    topo: list[Obj] = [{"matchLabelExpressions": [{"key": ZONE, "values": sorted(rng.sample(ZONES, rng.randint(1, 2)))}]}]
    out: list[Obj] = [
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "immediate"},
         "provisioner": DRIVER, "volumeBindingMode": "Immediate"},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "wffc"},
         "provisioner": DRIVER, "volumeBindingMode": "WaitForFirstConsumer"},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "wffc-zoned"},
         "provisioner": DRIVER, "volumeBindingMode": "WaitForFirstConsumer", "allowedTopologies": topo},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "local"},
         "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"},
    ]
    return out


def _pv(name: str, cls: str, size_mi: int, modes: list[str], zone: str | None, handle: str,
        affinity: bool = True) -> Obj:
    spec: Obj = {"storageClassName": cls, "capacity": {"storage": f"{size_mi}Mi"}, "accessModes": modes,
                 "persistentVolumeReclaimPolicy": "Retain", "csi": {"driver": DRIVER, "volumeHandle": handle}}
    meta: Obj = {"name": name}
    if zone is not None and affinity:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": ZONE, "operator": "In", "values": [zone]}]}]}}
    if zone is not None:
        meta["labels"] = {ZONE: zone}  # VolumeZone reads the label, VolumeBinding the affinity
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta, "spec": spec,
            "status": {"phase": "Available"}}


def _claim(name: str, namespace: str, cls: str | None, size_mi: int, modes: list[str]) -> Obj:
    spec: Obj = {"accessModes": modes, "resources": {"requests": {"storage": f"{size_mi}Mi"}}}
    if cls is not None:
        spec["storageClassName"] = cls
    else:
        spec["storageClassName"] = ""
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": namespace},
            "spec": spec, "status": {"phase": "Pending"}}


def _bind(pv: Obj, claim: Obj) -> None:
    """Make ``claim`` bound to ``pv`` as the PV controller leaves them."""
    pv["spec"]["claimRef"] = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                              "namespace": claim["metadata"]["namespace"], "name": claim["metadata"]["name"]}
    pv["status"] = {"phase": "Bound"}
    claim["spec"]["volumeName"] = pv["metadata"]["name"]
    claim["metadata"]["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    claim["status"] = {"phase": "Bound", "accessModes": pv["spec"]["accessModes"],
                       "capacity": pv["spec"]["capacity"]}


def _pod(name: str, namespace: str, volumes: list[Obj], node: str | None = None) -> Obj:
    spec: Obj = {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                 "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}],
                 "volumes": volumes}
    if node is not None:
        spec["nodeName"] = node
    pod: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": spec}
    if node is not None:
        pod["status"] = {"phase": "Running"}
    return pod


def _claim_volume(i: int, claim: str) -> Obj:
    return {"name": f"v{i}", "persistentVolumeClaim": {"claimName": claim}}


def storage_scenario(rng: random.Random, *, nodes: int = 4, pending: int = 6, namespace: str = "default",
                     inline_disks: bool = True, prefix: str = "") -> tuple[list[Obj], list[Obj]]:
    """A random storage scenario: ``(objects, pending_pods)``; see the module docstring.

    ``inline_disks=False`` leaves out the inline GCE PD volumes (for an API server that refuses the
    in-tree source); the draws stay the same, so a seed still names the same claims and volumes.
    ``prefix`` is put before the name of every cluster-scoped object (Nodes, CSINodes, StorageClasses,
    PersistentVolumes) and every reference to one, so several scenarios can live in one cluster.

    ``objects`` holds, in creation order: Nodes, CSINodes, StorageClasses, PersistentVolumes,
    PersistentVolumeClaims and running Pods (``spec.nodeName`` set); ``pending_pods`` the pods to schedule,
    in order. Every pending pod uses one to three claims (some missing) and maybe an inline disk.
    """
    names = [f"node-{i}" for i in range(nodes)]
    zones = [ZONES[i % len(ZONES)] if i < len(ZONES) else rng.choice(ZONES) for i in range(nodes)]
    objects: list[Obj] = [_node(n, z) for n, z in zip(names, zones)]
    for n in names:
        drivers: list[Obj] = []
        if _chance(rng, 0.8):
            driver: Obj = {"name": DRIVER, "nodeID": n, "topologyKeys": [ZONE]}
            if _chance(rng, 0.7):
                driver["allocatable"] = {"count": rng.randint(1, 4)}
            drivers.append(driver)
        objects.append({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": n},
                        "spec": {"drivers": drivers}})
    objects.extend(_classes(rng))

    pvs: list[Obj] = []
    for i in range(rng.randint(2, 8)):
        cls = rng.choice(["local", "local", "wffc", "wffc-zoned"])
        zone = rng.choice(ZONES) if _chance(rng, 0.8) else None
        size = rng.randint(1, 10) * 1024 + i  # distinct sizes: no tie for "the smallest that fits"
        pvs.append(_pv(f"pv-{i}", cls, size, list(rng.choice(_MODES)), zone, f"static-{i}", _chance(rng, 0.7)))

    claims: list[Obj] = []
    running: list[Obj] = []
    # Claims already bound to a static PV, some used by running pods (attach counts, RWOP in use).
    free = list(pvs)
    rng.shuffle(free)
    for i in range(rng.randint(0, min(3, len(free)))):
        pv = free.pop()
        claim = _claim(f"bound-{i}", namespace, pv["spec"]["storageClassName"], 512, list(pv["spec"]["accessModes"]))
        _bind(pv, claim)
        claims.append(claim)
        zone = (pv["metadata"].get("labels") or {}).get(ZONE)
        hosts = [n for n, z in zip(names, zones) if zone is None or z == zone]
        if hosts and _chance(rng, 0.5):
            running.append(_pod(f"running-{i}", namespace, [_claim_volume(0, claim["metadata"]["name"])],
                                rng.choice(hosts)))
    # Running pods holding bound dynamic CSI volumes: they fill attach limits.
    for i in range(rng.randint(0, nodes)):
        handle = f"dyn-{i}"
        pv = _pv(f"pv-dyn-{i}", "wffc", 1024, ["ReadWriteOnce"], None, handle)
        claim = _claim(f"dyn-{i}", namespace, "wffc", 1024, ["ReadWriteOnce"])
        _bind(pv, claim)
        pvs.append(pv)
        claims.append(claim)
        running.append(_pod(f"holder-{i}", namespace, [_claim_volume(0, claim["metadata"]["name"])], rng.choice(names)))
    # A running pod with an inline GCE PD (disk conflicts).
    if _chance(rng, 0.3):
        host = rng.choice(names)
        if inline_disks:
            running.append(_pod("disk-holder", namespace, [{"name": "d", "gcePersistentDisk": {"pdName": "disk-1"}}],
                                host))
    # Unbound claims for the pending pods.
    unbound: list[str] = []
    for i in range(rng.randint(2, 8)):
        wanted: str | None = rng.choice(["immediate", "wffc", "wffc", "wffc-zoned", "wffc-zoned", "local", "local",
                                         "local", None])
        claim = _claim(f"claim-{i}", namespace, wanted, rng.randint(1, 8) * 1024, list(rng.choice(_MODES[:3])))
        claims.append(claim)
        unbound.append(claim["metadata"]["name"])
    bound_names = [c["metadata"]["name"] for c in claims if c["spec"].get("volumeName")]
    objects.extend(pvs)
    objects.extend(claims)
    objects.extend(running)

    pods: list[Obj] = []
    for p in range(pending):
        volumes: list[Obj] = []
        for j in range(rng.randint(1, 3)):
            roll = rng.random()
            if roll < 0.05:
                name = f"missing-{p}-{j}"
            elif roll < 0.35 and bound_names:
                name = rng.choice(bound_names)
            elif unbound:
                name = rng.choice(unbound)
            else:
                continue
            if all(v.get("persistentVolumeClaim", {}).get("claimName") != name for v in volumes):
                volumes.append(_claim_volume(j, name))
        if _chance(rng, 0.15) and inline_disks:
            volumes.append({"name": "disk", "gcePersistentDisk": {"pdName": "disk-1"}})
        pods.append(_pod(f"pending-{p}", namespace, volumes))
    if prefix:
        _prefix(objects + pods, prefix)
    return objects, pods


def _prefix(objects: list[Obj], prefix: str) -> None:
    """Rename the cluster-scoped objects and every reference to them, in place."""
    for o in objects:
        kind, meta, spec = o["kind"], o["metadata"], o.get("spec", {})
        if kind in ("Node", "CSINode", "StorageClass", "PersistentVolume"):
            meta["name"] = prefix + meta["name"]
        if kind == "Node":
            meta["labels"]["kubernetes.io/hostname"] = meta["name"]
        elif kind == "CSINode":
            for d in spec["drivers"]:
                d["nodeID"] = meta["name"]
        elif kind in ("PersistentVolume", "PersistentVolumeClaim"):
            if spec.get("storageClassName"):
                spec["storageClassName"] = prefix + spec["storageClassName"]
            if spec.get("volumeName"):
                spec["volumeName"] = prefix + spec["volumeName"]
        elif kind == "Pod" and spec.get("nodeName"):
            spec["nodeName"] = prefix + spec["nodeName"]


def storage_case(seed: int) -> tuple[list[Obj], Obj]:
    """One scenario named by ``seed`` as (objects, the first pending pod): for per-decision comparisons."""
    objects, pods = storage_scenario(random.Random(seed), pending=1)
    return objects, pods[0]
