"""StorageState: the storage objects of the cluster state, with the indexes the volume plugins need.

Keeps PersistentVolumeClaims (by namespace/name), PersistentVolumes (by name, by class, by claimRef),
StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities and VolumeAttachments (by node), each as the
record of :mod:`policyscheduler.objects.storage`, fed one raw object at a time (a snapshot file or a watch
event). It implements :class:`policyscheduler.objects.volumes.StorageView`.

**Assumed claim work** (kube's assume cache, AssumePodVolumes): once a pod is assumed on a node, its
plan's static bindings read as PVs bound to their claims (``claimRef`` set, so no other pod takes them)
and its provisioned claims as annotated with the selected node, until :meth:`StorageState.forget` takes
them back or the object itself arrives from the API server (the watched version is newer than the
assumption, as in kube, where the informer's object replaces the assumed one).

Which claims placed pods use (ReadWriteOncePod) is counted by :class:`~policyscheduler.state.store.ClusterState`,
which sees pods come and go; this store answers through the callable it is given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from policyscheduler.kobjects import name_of, namespace_of
from policyscheduler.objects.storage import (
    ANN_SELECTED_NODE,
    CSIDriverInfo,
    CSINode,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageCapacity,
    StorageClass,
    VolumeAttachment,
    build_capacity,
    build_claim,
    build_class,
    build_csi_driver,
    build_csi_node,
    build_volume,
    build_volume_attachment,
)
from policyscheduler.state.volumeplan import VolumePlan

__all__ = ["STORAGE_KINDS", "StorageState"]

STORAGE_KINDS = ("PersistentVolumeClaim", "PersistentVolume", "StorageClass", "CSINode", "CSIDriver",
                 "CSIStorageCapacity", "VolumeAttachment")
"""The kinds this store keeps (snapshot files and watches)."""


def _replace(record: Any, **changes: Any) -> Any:
    new = object.__new__(type(record))
    new.__dict__.update(record.__dict__)
    new.__dict__.update(changes)
    return new


class StorageState:
    """Storage records and indexes; see the module docstring."""

    def __init__(self, claim_in_use: Callable[[str, str], bool] | None = None) -> None:
        self._claims: dict[tuple[str, str], PersistentVolumeClaim] = {}
        self._volumes: dict[str, PersistentVolume] = {}
        self._by_class: dict[str, dict[str, PersistentVolume]] = {}
        self._by_claim: dict[tuple[str, str], set[str]] = {}
        self._sorted: dict[str, list[PersistentVolume]] = {}
        self._classes: dict[str, StorageClass] = {}
        self._csi_nodes: dict[str, CSINode] = {}
        self._drivers: dict[str, CSIDriverInfo] = {}
        self._capacities: dict[str, StorageCapacity] = {}
        self._attachments: dict[str, VolumeAttachment] = {}
        self._by_node: dict[str, dict[str, VolumeAttachment]] = {}
        self._in_use = claim_in_use or (lambda ns, name: False)
        # assumed work: PV name -> (record before, claim key); claim key -> record before
        self._assumed_pvs: dict[str, PersistentVolume | None] = {}
        self._assumed_claims: dict[tuple[str, str], PersistentVolumeClaim | None] = {}
        self.generation = 0
        """Grows on every change (decisions remembered across changes compare it)."""

    # -- feeding -----------------------------------------------------------------------------------------

    def apply(self, kind: str, obj: Mapping[str, Any], warnings: list[str], *, remove: bool = False) -> None:
        """Add, update or (``remove``) delete one object of a kind in :data:`STORAGE_KINDS`."""
        self.generation += 1
        name = name_of(obj)
        if kind == "PersistentVolumeClaim":
            key = (namespace_of(obj), name)
            self._assumed_claims.pop(key, None)
            if remove:
                self._claims.pop(key, None)
            else:
                self._claims[key] = build_claim(obj, warnings)
        elif kind == "PersistentVolume":
            self._assumed_pvs.pop(name, None)
            self._set_volume(name, None if remove else build_volume(obj, warnings))
        elif kind == "StorageClass":
            self._put(self._classes, name, None if remove else build_class(obj, warnings))
        elif kind == "CSINode":
            self._put(self._csi_nodes, name, None if remove else build_csi_node(obj, warnings))
        elif kind == "CSIDriver":
            self._put(self._drivers, name, None if remove else build_csi_driver(obj, warnings))
        elif kind == "CSIStorageCapacity":
            self._put(self._capacities, f"{namespace_of(obj)}/{name}", None if remove else build_capacity(obj, warnings))
        elif kind == "VolumeAttachment":
            old = self._attachments.pop(name, None)
            if old is not None:
                self._by_node.get(old.node_name, {}).pop(name, None)
            if not remove:
                va = build_volume_attachment(obj, warnings)
                self._attachments[name] = va
                self._by_node.setdefault(va.node_name, {})[name] = va

    @staticmethod
    def _put(table: dict[str, Any], key: str, value: Any) -> None:
        if value is None:
            table.pop(key, None)
        else:
            table[key] = value

    def _set_volume(self, name: str, pv: PersistentVolume | None) -> None:
        old = self._volumes.pop(name, None)
        if old is not None:
            self._by_class.get(old.storage_class, {}).pop(name, None)
            self._sorted.pop(old.storage_class, None)
            if old._claimed:
                self._by_claim.get((old.claim_namespace, old.claim_name), set()).discard(name)
        if pv is None:
            return
        self._volumes[name] = pv
        self._by_class.setdefault(pv.storage_class, {})[name] = pv
        self._sorted.pop(pv.storage_class, None)
        if pv._claimed:
            self._by_claim.setdefault((pv.claim_namespace, pv.claim_name), set()).add(name)

    # -- assumed claim work (AssumePodVolumes / RevertAssumedPodVolumes) ---------------------------------

    def assume(self, plan: VolumePlan) -> None:
        """Treat the plan as done: its PVs bound to their claims, its provisioned claims annotated."""
        self.generation += 1
        for b in plan.static:
            pv = self._volumes.get(b.pv)
            claim = self._claims.get((b.namespace, b.claim))
            if pv is None or claim is None:
                continue
            self._assumed_pvs.setdefault(b.pv, pv)
            self._set_volume(b.pv, _replace(pv, claim_namespace=b.namespace, claim_name=b.claim, _claimed=True,
                                            _claim_uid=claim.uid, phase="Bound"))
        for ns, name in plan.provision:
            claim = self._claims.get((ns, name))
            if claim is None:
                continue
            self._assumed_claims.setdefault((ns, name), claim)
            annotations = {**claim.annotations, ANN_SELECTED_NODE: plan.node}
            self._claims[(ns, name)] = _replace(claim, annotations=annotations, selected_node=plan.node,
                                                _has_selected_node=True)

    def forget(self, plan: VolumePlan) -> None:
        """Take back what :meth:`assume` did for ``plan`` (objects updated since by a watch stay as watched)."""
        self.generation += 1
        for b in plan.static:
            if b.pv in self._assumed_pvs:
                self._set_volume(b.pv, self._assumed_pvs.pop(b.pv))
        for ns, name in plan.provision:
            if (ns, name) in self._assumed_claims:
                before = self._assumed_claims.pop((ns, name))
                if before is not None:
                    self._claims[(ns, name)] = before

    # -- the StorageView protocol (objects.volumes) ------------------------------------------------------

    def claim(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        return self._claims.get((namespace, name))

    def volume(self, name: str) -> PersistentVolume | None:
        return self._volumes.get(name)

    def volumes_of_class(self, class_name: str) -> Sequence[PersistentVolume]:
        found = self._sorted.get(class_name)
        if found is None:
            found = self._sorted[class_name] = sorted(self._by_class.get(class_name, {}).values(), key=lambda p: p.name)
        return found

    def volumes_of_claim(self, namespace: str, name: str) -> list[PersistentVolume]:
        """The PVs whose ``claimRef`` names this claim (assumed bindings included)."""
        return [self._volumes[n] for n in sorted(self._by_claim.get((namespace, name), ()))]

    def storage_class(self, name: str) -> StorageClass | None:
        return self._classes.get(name)

    def csi_node(self, name: str) -> CSINode | None:
        return self._csi_nodes.get(name)

    def csi_driver(self, name: str) -> CSIDriverInfo | None:
        return self._drivers.get(name)

    def capacities(self) -> Iterable[StorageCapacity]:
        return self._capacities.values()

    def claim_in_use(self, namespace: str, name: str) -> bool:
        return self._in_use(namespace, name)

    def attachments(self, node_name: str) -> Iterable[tuple[str, str]]:
        return [(va.attacher, va.pv_name) for va in self._by_node.get(node_name, {}).values()]

    # -- listing (explain, tests) ------------------------------------------------------------------------

    @property
    def claims(self) -> list[PersistentVolumeClaim]:
        """Every claim, in insertion order."""
        return list(self._claims.values())

    @property
    def volumes(self) -> list[PersistentVolume]:
        """Every PersistentVolume, in insertion order."""
        return list(self._volumes.values())

    @property
    def classes(self) -> list[StorageClass]:
        """Every StorageClass."""
        return list(self._classes.values())

    @property
    def empty(self) -> bool:
        """True when no storage object is kept."""
        return not (self._claims or self._volumes or self._classes or self._csi_nodes or self._attachments
                    or self._drivers or self._capacities)
