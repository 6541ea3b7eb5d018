"""kube-scheduler v1.35's volume decisions, in one place: what a pod's volumes allow on a node.

Pure functions over records and a :class:`StorageView` (the claims, volumes, classes and CSI objects the
cluster state keeps; ``state`` implements it). They reproduce, step by step and with kube's texts:

* **VolumeRestrictions** (``volumerestrictions``): a claim of a ``persistentVolumeClaim`` volume must
  exist (PreFilter, ``persistentvolumeclaim "NAME" not found``); inline GCE PD / AWS EBS / iSCSI / RBD
  disks must not conflict with a pod on the node; a ``ReadWriteOncePod`` claim already used by any placed
  pod fails every node (:func:`missing_claim`, :func:`disk_conflict`, :func:`read_write_once_pod_conflict`).
* **NodeVolumeLimits** (``nodevolumelimits/csi.go``): the unique CSI volumes (driver + handle) of the pods
  on the node, plus VolumeAttachments to it, plus the pod's new ones, per driver, against the CSINode's
  ``allocatable.count``; in-tree EBS / GCE PD / Azure Disk / Cinder volumes count under their CSI driver
  when the node has a CSINode, Portworx when the CSINode lists it as migrated (:func:`volume_limit_exceeded`).
* **VolumeBinding** (``volumebinding/binder.go``, ``component-helpers/storage/volume``): PreFilter errors
  (:func:`binding_error`) and, per node, FindPodVolumes: bound claims' PVs must admit the node, unbound
  ``WaitForFirstConsumer`` claims need a matching static PV (FindMatchingVolume: the smallest that fits)
  or a class that can provision there (:func:`find_pod_volumes`, which also returns the claim work).
* **VolumeZone** (``volumezone``): the zone/region labels of bound PVs against the node's
  (:func:`zone_error`, :func:`zone_conflict`).

One mechanism: the policies call these through ``cluster`` builtins, and the planner that tells the live
binder which claims to bind (``state.volumes.plan_volumes``) calls :func:`find_pod_volumes` itself.

Where kube iterates a Go map (the PVs of a class), the order here is by PV name: kube's choice between two
equally small matching PVs is arbitrary, ours is the first by name.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from policyscheduler.objects.records import Node, Pod, Volume
from policyscheduler.objects.storage import (
    MIGRATED_DRIVERS,
    NO_PROVISIONER,
    CSIDriverInfo,
    CSINode,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageCapacity,
    StorageClass,
    terms_match_labels,
)

__all__ = [
    "BIND_CONFLICT",
    "DISK_CONFLICT",
    "MAX_VOLUME_COUNT",
    "NODE_CONFLICT",
    "NOT_ENOUGH_SPACE",
    "PV_NOT_EXIST",
    "RWOP_CONFLICT",
    "UNBOUND_IMMEDIATE",
    "ZONE_CONFLICT",
    "BindingCheck",
    "EmptyStorage",
    "PodClaims",
    "StorageView",
    "binding_error",
    "claim_volumes",
    "classify_claims",
    "disk_conflict",
    "find_matching_volume",
    "find_pod_volumes",
    "migration_key",
    "missing_claim",
    "new_attachable",
    "pod_bound_volumes",
    "read_write_once_pod_conflict",
    "volume_limit_exceeded",
    "zone_conflict",
    "zone_error",
    "zone_topologies",
]

DISK_CONFLICT = "node(s) had no available disk"
RWOP_CONFLICT = ("node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already "
                 "in-use by another pod")
MAX_VOLUME_COUNT = "node(s) exceed max volume count"
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
ZONE_CONFLICT = "node(s) had no available volume zone"

_ZONE_LABELS = (
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
)
_GA_LABEL = {
    "failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
}


class StorageView(Protocol):
    """The storage objects of the cluster, as of now (assumed claim work included)."""

    def claim(self, namespace: str, name: str) -> PersistentVolumeClaim | None: ...

    def volume(self, name: str) -> PersistentVolume | None: ...

    def volumes_of_class(self, class_name: str) -> Sequence[PersistentVolume]:
        """The PVs whose class is ``class_name``, ordered by name."""
        ...

    def storage_class(self, name: str) -> StorageClass | None: ...

    def csi_node(self, name: str) -> CSINode | None: ...

    def csi_driver(self, name: str) -> CSIDriverInfo | None: ...

    def capacities(self) -> Iterable[StorageCapacity]: ...

    def claim_in_use(self, namespace: str, name: str) -> bool:
        """True if a placed pod uses the claim through a ``persistentVolumeClaim`` volume."""
        ...

    def attachments(self, node_name: str) -> Iterable[tuple[str, str]]:
        """(attacher, PV name) of the VolumeAttachments to a node."""
        ...


class EmptyStorage:
    """A :class:`StorageView` with no storage objects (contexts made without a cluster state)."""

    def claim(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        return None

    def volume(self, name: str) -> PersistentVolume | None:
        return None

    def volumes_of_class(self, class_name: str) -> Sequence[PersistentVolume]:
        return ()

    def storage_class(self, name: str) -> StorageClass | None:
        return None

    def csi_node(self, name: str) -> CSINode | None:
        return None

    def csi_driver(self, name: str) -> CSIDriverInfo | None:
        return None

    def capacities(self) -> Iterable[StorageCapacity]:
        return ()

    def claim_in_use(self, namespace: str, name: str) -> bool:
        return False

    def attachments(self, node_name: str) -> Iterable[tuple[str, str]]:
        return ()


def claim_volumes(pod: Pod) -> list[Volume]:
    """The pod's volumes that use a claim (``persistentVolumeClaim`` and generic ``ephemeral``), in order."""
    return [v for v in pod.volumes if v.source in ("persistentVolumeClaim", "ephemeral")]


# -- VolumeRestrictions ----------------------------------------------------------------------------------------


def missing_claim(pod: Pod, view: StorageView) -> str:
    """The first ``persistentVolumeClaim`` volume's claim that does not exist, or ``""`` (VolumeRestrictions'
    PreFilter looks every one up; kube's NotFound text is ``persistentvolumeclaim "NAME" not found``)."""
    for v in pod.volumes:
        if v.source == "persistentVolumeClaim" and view.claim(pod.namespace, v.claim_name) is None:
            return v.claim_name
    return ""


def read_write_once_pod_conflict(pod: Pod, view: StorageView) -> bool:
    """True if a ``ReadWriteOncePod`` claim of the pod is already used by a placed pod (any node)."""
    for v in pod.volumes:
        if v.source != "persistentVolumeClaim":
            continue
        pvc = view.claim(pod.namespace, v.claim_name)
        if pvc is not None and "ReadWriteOncePod" in pvc.access_modes and view.claim_in_use(pod.namespace, pvc.name):
            return True
    return False


def disk_conflict(pod: Pod, node: Node) -> bool:
    """True if an inline GCE PD / AWS EBS / iSCSI / RBD volume of the pod conflicts with one of a pod
    already on the node (:meth:`Volume.conflicts`)."""
    mine = [v for v in pod.volumes if v._disk is not None]
    if not mine:
        return False
    for other in node.pods:
        for w in other.volumes:
            if w._disk is not None and any(v.conflicts(w) for v in mine):
                return True
    return False


# -- NodeVolumeLimits ------------------------------------------------------------------------------------------


def _migration_on(csi_node: CSINode | None, plugin: str) -> bool:
    """isCSIMigrationOn: the node has a CSINode; EBS, GCE PD, Azure Disk and Cinder are always migrated,
    Portworx only when the CSINode lists it (CSIMigrationPortworx is on by default in v1.35)."""
    if csi_node is None or not plugin:
        return False
    if plugin == "kubernetes.io/portworx-volume":
        return plugin in csi_node.migrated_plugins
    return plugin in MIGRATED_DRIVERS


def _claim_csi(pvc: PersistentVolumeClaim, csi_node: CSINode | None, view: StorageView) -> tuple[str, str]:
    """(driver, handle) a claim attaches as (getCSIDriverInfo): its PV's CSI source (in-tree ones translated
    when migrated), else what its class would provision (one handle per claim); ("", "") if not CSI."""
    pv = view.volume(pvc.volume_name) if pvc.volume_name else None
    if pv is not None:
        if pv.csi_driver:
            return pv.csi_driver, pv.volume_handle
        if pv._in_tree is not None and _migration_on(csi_node, pv._in_tree[0]):
            return pv._in_tree[1], pv._in_tree[2]
        return "", ""
    cls = view.storage_class(pvc.storage_class) if pvc.storage_class else None
    if cls is None:
        return "", ""
    handle = f"\x00{pvc.namespace}/{pvc.name}"  # kube: a random prefix + ns/name, unique per claim
    if cls.provisioner in _IN_TREE_PROVISIONERS:
        if not _migration_on(csi_node, cls.provisioner):
            return "", ""
        return MIGRATED_DRIVERS[cls.provisioner], handle
    return cls.provisioner, handle


_IN_TREE_PROVISIONERS = frozenset(MIGRATED_DRIVERS) | {"kubernetes.io/azure-file", "kubernetes.io/vsphere-volume"}
"""In-tree plugins csi-translation-lib can translate; only those of MIGRATED_DRIVERS are migrated on a node."""


def _attachable(pod: Pod, csi_node: CSINode | None, view: StorageView, into: dict[str, str]) -> None:
    """filterAttachableVolumes: unique volume name -> driver of the pod's CSI (or migrated) volumes."""
    for v in pod.volumes:
        if v.claim_name and v.source in ("persistentVolumeClaim", "ephemeral"):
            pvc = view.claim(pod.namespace, v.claim_name)
            if pvc is None:
                continue
            driver, handle = _claim_csi(pvc, csi_node, view)
        elif v._in_tree is not None and _migration_on(csi_node, v._in_tree[0]):
            driver, handle = v._in_tree[1], v._in_tree[2]
        else:
            continue
        if driver and handle:
            into[f"{driver}/{handle}"] = driver


def new_attachable(pod: Pod, csi_node: CSINode | None, view: StorageView) -> dict[str, str]:
    """The pod's attachable volumes (unique name -> driver) as a node with ``csi_node`` sees them; only
    the presence of a CSINode and its migrated plugins matter, so callers may reuse the answer per
    :func:`migration_key`."""
    new: dict[str, str] = {}
    _attachable(pod, csi_node, view, new)
    return new


def migration_key(csi_node: CSINode | None) -> tuple[bool, bool]:
    """What of a CSINode changes :func:`new_attachable`: whether there is one, and whether Portworx is migrated."""
    return csi_node is not None, csi_node is not None and "kubernetes.io/portworx-volume" in csi_node.migrated_plugins


def volume_limit_exceeded(pod: Pod, node: Node, view: StorageView,
                          new_volumes: dict[str, str] | None = None) -> bool:
    """True if the pod's new CSI volumes would take a driver past the node's attach limit (CSILimits.Filter).
    ``new_volumes``: :func:`new_attachable` for this node's CSINode, when the caller made it already."""
    if not pod.volumes:
        return False
    csi_node = view.csi_node(node.name)
    if csi_node is None or not csi_node.attach_limits:
        return False
    new = dict(new_volumes) if new_volumes is not None else new_attachable(pod, csi_node, view)
    limits = csi_node.attach_limits
    if not any(driver in limits for driver in new.values()):
        return False
    attached: dict[str, str] = {}
    for other in node.pods:
        _attachable(other, csi_node, view, attached)
    counts: dict[str, int] = {}
    for unique, driver in attached.items():
        new.pop(unique, None)
        counts[driver] = counts.get(driver, 0) + 1
    for attacher, pv_name in view.attachments(node.name):
        pv = view.volume(pv_name) if attacher and pv_name else None
        if pv is None or not pv.csi_driver:
            continue
        unique = f"{attacher}/{pv.volume_handle}"
        if unique not in attached:
            attached[unique] = attacher
            counts[attacher] = counts.get(attacher, 0) + 1
    wanted: dict[str, int] = {}
    for driver in new.values():
        wanted[driver] = wanted.get(driver, 0) + 1
    return any(driver in limits and counts.get(driver, 0) + n > limits[driver] for driver, n in wanted.items())


# -- VolumeBinding ---------------------------------------------------------------------------------------------


def binding_error(pod: Pod, view: StorageView) -> str:
    """VolumeBinding's PreFilter rejection, or ``""``: a missing claim (an ephemeral one: waiting for the
    ephemeral volume controller), a lost or deleted claim, an ephemeral claim not owned by the pod, then
    unbound claims of an ``Immediate`` class (or no class, an unknown class, or pre-bound by name)."""
    claims = []
    for v in claim_volumes(pod):
        pvc = view.claim(pod.namespace, v.claim_name)
        if pvc is None:
            if v.ephemeral:
                return f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{v.claim_name}"'
            return f'persistentvolumeclaim "{v.claim_name}" not found'
        if pvc.phase == "Lost":
            return f'persistentvolumeclaim "{pvc.name}" bound to non-existent persistentvolume "{pvc.volume_name}"'
        if pvc.deleting:
            return f'persistentvolumeclaim "{pvc.name}" is being deleted'
        if v.ephemeral and (not pod.uid or pvc._controller_uid != pod.uid):
            return f"PVC {pvc.namespace}/{pvc.name} was not created for pod {pod.namespace}/{pod.name} (pod is not owner)"
        claims.append(pvc)
    for pvc in claims:
        if not pvc.bound and not (_delay_binding(pvc, view) and not pvc.volume_name):
            return UNBOUND_IMMEDIATE
    return ""


def _delay_binding(pvc: PersistentVolumeClaim, view: StorageView) -> bool:
    """IsDelayBindingMode: the claim's class exists and binds ``WaitForFirstConsumer``."""
    cls = view.storage_class(pvc.storage_class) if pvc.storage_class else None
    return cls is not None and cls.volume_binding_mode == "WaitForFirstConsumer"


@dataclasses.dataclass(frozen=True)
class BindingCheck:
    """FindPodVolumes on one node: kube's reasons (empty: the node fits) and, when it fits, the claim
    work -- ``static``: (claim, PV) pairs to bind, ``provision``: claims to provision on the node."""

    reasons: tuple[str, ...] = ()
    static: tuple[tuple[PersistentVolumeClaim, PersistentVolume], ...] = ()
    provision: tuple[PersistentVolumeClaim, ...] = ()

    @property
    def fits(self) -> bool:
        return not self.reasons


_FITS = BindingCheck()


def find_matching_volume(pvc: PersistentVolumeClaim, volumes: Iterable[PersistentVolume], labels: Mapping[str, str],
                         excluded: Iterable[str] = ()) -> PersistentVolume | None:
    """FindMatchingVolume on the scheduler's path (a node given, delay binding): a PV pre-bound to the
    claim if it admits the node, else the smallest available PV of the claim's class that is large enough,
    of the same volume mode and attributes class, selected by the claim's selector, admits the node and
    offers every access mode the claim asks for; ``excluded``: PV names chosen for other claims."""
    skip = set(excluded)
    best: PersistentVolume | None = None
    for pv in volumes:
        if pv.name in skip:
            continue
        prebound = pv._claimed and pv.claim_name == pvc.name and pv.claim_namespace == pvc.namespace and (
            not pv._claim_uid or pv._claim_uid == pvc.uid)
        if pv._claimed and not prebound:
            continue
        if pv.capacity < pvc.requested_storage or pv.volume_mode != pvc.volume_mode:
            continue
        if pv.volume_attributes_class != pvc.volume_attributes_class or pv.deleting:
            continue
        fits_node = _admits(pv, labels)
        if prebound:
            return pv if fits_node else None
        if pv.phase != "Available":
            continue
        if pvc._has_selector and (pvc._selector is None or not pvc._selector.matches(pv.labels)):
            continue
        if pv.storage_class != pvc.storage_class or not fits_node:
            continue
        if not all(mode in pv.access_modes for mode in pvc.access_modes):
            continue
        if best is None or best.capacity > pv.capacity:
            best = pv
    return best


def _admits(pv: PersistentVolume, labels: Mapping[str, str]) -> bool:
    """CheckNodeAffinity of a PV against a node's labels."""
    return not pv.has_node_affinity or terms_match_labels(pv.node_affinity, labels)


def _enough_capacity(pvc: PersistentVolumeClaim, cls: StorageClass, labels: Mapping[str, str], view: StorageView) -> bool:
    """hasEnoughCapacity: only for a CSI driver that opts into capacity tracking; then some
    CSIStorageCapacity of the class that selects the node must hold the claim's size (rounded up to bytes)."""
    if not pvc._has_request:
        return True
    driver = view.csi_driver(cls.provisioner)
    if driver is None or not driver.storage_capacity:
        return True
    size = math.ceil(pvc.requested_storage)
    for cap in view.capacities():
        if cap.storage_class == cls.name and cap.limit is not None and math.ceil(cap.limit) >= size \
                and cap.topology is not None and cap.topology.matches(labels):
            return True
    return False


@dataclasses.dataclass(frozen=True)
class PodClaims:
    """VolumeBinding's PreFilter classification of a pod's claims (GetPodVolumeClaims), made once per pod:
    the bound claims with their PVs (None: the PV does not exist) and the unbound ``WaitForFirstConsumer``
    claims without a volume name."""

    bound: tuple[tuple[PersistentVolumeClaim, PersistentVolume | None], ...] = ()
    delayed: tuple[PersistentVolumeClaim, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.bound and not self.delayed


def classify_claims(pod: Pod, view: StorageView) -> PodClaims:
    """:class:`PodClaims` of a pod that passed :func:`binding_error` (claims that do not exist are skipped)."""
    bound: list[tuple[PersistentVolumeClaim, PersistentVolume | None]] = []
    delayed: list[PersistentVolumeClaim] = []
    for v in claim_volumes(pod):
        pvc = view.claim(pod.namespace, v.claim_name)
        if pvc is None:
            continue
        if pvc.bound:
            bound.append((pvc, view.volume(pvc.volume_name)))
        elif _delay_binding(pvc, view) and not pvc.volume_name:
            delayed.append(pvc)
    return PodClaims(tuple(bound), tuple(delayed))


def find_pod_volumes(pod: Pod, node: Node, view: StorageView, claims: PodClaims | None = None) -> BindingCheck:
    """VolumeBinding's Filter on one node (FindPodVolumes), for a pod that passed :func:`binding_error`
    (``claims``: its :func:`classify_claims`, when the caller made it already).

    Reasons, in kube's order: the node conflicts with a bound PV's node affinity; no PV to bind and no
    provisioning there; not enough capacity; a bound claim's PV does not exist. A claim already annotated
    with another selected node fails the node at once (kube's fast path)."""
    if claims is None:
        claims = classify_claims(pod, view)
    if claims.empty:
        return _FITS
    labels = node.labels
    bound_ok = pvs_found = True
    for _, pv in claims.bound:  # checkBoundClaims: stops at the first missing PV or mismatching node affinity
        if pv is None:
            pvs_found = False
            break
        if not _admits(pv, labels):
            bound_ok = False
            break
    to_match: list[PersistentVolumeClaim] = []
    to_provision: list[PersistentVolumeClaim] = []
    for pvc in claims.delayed:
        if pvc._has_selected_node:
            if pvc.selected_node != node.name:
                return _check(bound_ok, False, True, pvs_found)
            to_provision.append(pvc)
        else:
            to_match.append(pvc)
    satisfied = storage_ok = True
    static: list[tuple[PersistentVolumeClaim, PersistentVolume]] = []
    if to_match:
        chosen: list[str] = []
        for pvc in sorted(to_match, key=lambda c: c.requested_storage):
            pv = find_matching_volume(pvc, view.volumes_of_class(pvc.storage_class), labels, chosen)
            if pv is None:
                to_provision.append(pvc)
                satisfied = False
                continue
            chosen.append(pv.name)
            static.append((pvc, pv))
    if to_provision:  # checkVolumeProvisions decides "satisfied" anew (kube overwrites the flag)
        satisfied = True
        for pvc in to_provision:
            cls = view.storage_class(pvc.storage_class)
            if cls is None or cls.provisioner in ("", NO_PROVISIONER) or not cls.allows_labels(labels):
                satisfied = False
                break
            if not _enough_capacity(pvc, cls, labels, view):
                storage_ok = False
                break
    if not (bound_ok and pvs_found and satisfied and storage_ok):
        return _check(bound_ok, satisfied, storage_ok, pvs_found)
    return BindingCheck((), tuple(static), tuple(to_provision))


def _check(bound_ok: bool, unbound_ok: bool, storage_ok: bool, pvs_found: bool) -> BindingCheck:
    reasons = []
    if not bound_ok:
        reasons.append(NODE_CONFLICT)
    if not unbound_ok:
        reasons.append(BIND_CONFLICT)
    if not storage_ok:
        reasons.append(NOT_ENOUGH_SPACE)
    if not pvs_found:
        reasons.append(PV_NOT_EXIST)
    return BindingCheck(tuple(reasons))


# -- VolumeZone ------------------------------------------------------------------------------------------------


def pod_bound_volumes(pod: Pod, view: StorageView) -> list[PersistentVolume]:
    """The PVs named by the pod's ``persistentVolumeClaim`` claims (``spec.volumeName``), in volume order."""
    out = []
    for v in pod.volumes:
        if v.source != "persistentVolumeClaim":
            continue
        pvc = view.claim(pod.namespace, v.claim_name)
        pv = view.volume(pvc.volume_name) if pvc is not None and pvc.volume_name else None
        if pv is not None:
            out.append(pv)
    return out


def zone_error(pod: Pod, view: StorageView) -> str:
    """VolumeZone's PreFilter rejection, or ``""`` (only reachable after VolumeBinding's PreFilter passed
    for a claim whose PV is missing, in practice: ``persistentvolume "NAME" not found``)."""
    for v in pod.volumes:
        if v.source != "persistentVolumeClaim":
            continue
        if not v.claim_name:
            return "PersistentVolumeClaim had no name"
        pvc = view.claim(pod.namespace, v.claim_name)
        if pvc is None:
            return f'persistentvolumeclaim "{v.claim_name}" not found'
        if not pvc.volume_name:
            if not pvc.storage_class:
                return "PersistentVolumeClaim had no pv name and storageClass name"
            cls = view.storage_class(pvc.storage_class)
            if cls is None:
                return f'storageclass.storage.k8s.io "{pvc.storage_class}" not found'
            if cls.volume_binding_mode == "WaitForFirstConsumer":
                continue
            return "PersistentVolume had no name"
        if view.volume(pvc.volume_name) is None:
            return f'persistentvolume "{pvc.volume_name}" not found'
    return ""


def _zone_values(value: str) -> frozenset[str] | None:
    """LabelZonesToSet: the ``__``-separated zones, trimmed; None when one is empty (kube ignores the label)."""
    parts = [p.strip() for p in value.split("__")]
    return None if any(not p for p in parts) else frozenset(parts)


def zone_topologies(pod: Pod, view: StorageView) -> tuple[tuple[str, frozenset[str]], ...]:
    """VolumeZone's PreFilter state: (label key, zones) of every zone/region label of the pod's bound PVs
    (labels whose zone list has an empty entry are ignored, as kube does)."""
    out = []
    for pv in pod_bound_volumes(pod, view):
        for key in _ZONE_LABELS:
            if key in pv.labels:
                values = _zone_values(pv.labels[key])
                if values is not None:
                    out.append((key, values))
    return tuple(out)


def zone_conflict(pod: Pod, node: Node, view: StorageView,
                  topologies: tuple[tuple[str, frozenset[str]], ...] | None = None) -> bool:
    """True if a bound PV's zone/region label names no value the node has (VolumeZone.Filter). A node
    without any zone/region label fits; the beta labels of a PV are also matched against the GA labels.
    ``topologies``: the pod's :func:`zone_topologies`, when the caller made them already."""
    if not pod.volumes:
        return False
    if topologies is None:
        topologies = zone_topologies(pod, view)
    if not topologies:
        return False
    labels = node.labels
    if not any(key in labels for key in _ZONE_LABELS):
        return False
    for key, values in topologies:
        value = labels.get(key)
        if value is None:
            value = labels.get(_GA_LABEL.get(key, key))
        if value is None or value not in values:
            return True
    return False
