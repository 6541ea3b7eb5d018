"""Storage as the scheduler sees it: pod volumes, claims, volumes, classes, CSI nodes (records + builders).

The records are what kube-scheduler v1.35's volume plugins (VolumeRestrictions, NodeVolumeLimits,
VolumeBinding, VolumeZone) read of ``PersistentVolumeClaim``, ``PersistentVolume``, ``StorageClass``,
``CSINode``, ``CSIDriver``, ``CSIStorageCapacity`` and ``VolumeAttachment`` objects, with the API server's
defaulting applied (a class without ``volumeBindingMode`` is ``Immediate``, a volume without
``volumeMode`` is ``Filesystem``, an RBD volume without a pool uses ``rbd``). The ``build_*`` functions
never raise: problems become warnings (``"<Kind> <name>: <problem>"``) and the field a safe default.

The decisions over these records (which claim fits which volume on which node) live in
:mod:`policyscheduler.objects.volumes`; the store that keeps them up to date lives in ``state``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from policyscheduler.kobjects import is_terminating
from policyscheduler.objects.parse import Reader
from policyscheduler.objects.records import NodeSelectorTerm, Volume
from policyscheduler.objects.selectors import Selector, compile_label_selector
from policyscheduler.quantity import QuantityError, to_quantity
from policyscheduler.schema import Quantity, exposed, record

__all__ = [
    "ANN_BIND_COMPLETED",
    "ANN_SELECTED_NODE",
    "ANN_MIGRATED_PLUGINS",
    "BETA_STORAGE_CLASS",
    "NO_PROVISIONER",
    "CSIDriverInfo",
    "CSINode",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "StorageCapacity",
    "StorageClass",
    "Volume",
    "VolumeAttachment",
    "build_capacity",
    "build_claim",
    "build_class",
    "build_csi_driver",
    "build_csi_node",
    "build_pod_volumes",
    "build_volume",
    "build_volume_attachment",
    "terms_match_labels",
]

ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
"""Set by the scheduler on a claim it wants provisioned on a node (component-helpers ``AnnSelectedNode``)."""
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
"""Set by the PV controller once a claim's binding is complete: only then is a claim *bound* for VolumeBinding."""
ANN_MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"
"""On a CSINode: the in-tree plugins whose volumes the node handles through their CSI driver."""
BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
"""The old annotation that still takes precedence over ``storageClassName`` (GetPersistentVolume(Claim)Class)."""
NO_PROVISIONER = "kubernetes.io/no-provisioner"
"""A class provisioner that means "static volumes only" (component-helpers ``NotSupportedProvisioner``)."""

_FROZEN = dict(frozen=True, eq=False)

# In-tree volume sources that CSI migration moves to a CSI driver: (API field, plugin name, CSI driver, id field).
_MIGRATABLE = {
    "awsElasticBlockStore": ("kubernetes.io/aws-ebs", "ebs.csi.aws.com", "volumeID"),
    "gcePersistentDisk": ("kubernetes.io/gce-pd", "pd.csi.storage.gke.io", "pdName"),
    "azureDisk": ("kubernetes.io/azure-disk", "disk.csi.azure.com", "diskURI"),
    "cinder": ("kubernetes.io/cinder", "cinder.csi.openstack.org", "volumeID"),
    "portworxVolume": ("kubernetes.io/portworx-volume", "pxd.portworx.com", "volumeID"),
}
MIGRATED_DRIVERS = {plugin: driver for plugin, driver, _ in _MIGRATABLE.values()}
"""In-tree plugin name -> its CSI driver, for the plugins whose migration is on in v1.35."""

_SOURCES = ("persistentVolumeClaim", "ephemeral", "gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi",
            "azureDisk", "cinder", "portworxVolume", "csi", "hostPath", "emptyDir", "configMap", "secret",
            "projected", "downwardAPI", "nfs", "image")


def _translated_handle(source: str, raw: str, zones: list[str]) -> str:
    """The CSI volume handle csi-translation-lib gives an in-tree volume: the identity NodeVolumeLimits
    counts. EBS ids lose an ``aws://zone/`` prefix; a GCE PD is ``projects/UNSPECIFIED/zones/Z/disks/N``
    (``regions/R`` for a PV labelled with several zones, ``UNSPECIFIED`` without a zone)."""
    if source == "awsElasticBlockStore":
        return raw.rsplit("/", 1)[-1] if raw.startswith("aws://") else raw
    if source == "gcePersistentDisk":
        if len(zones) == 1:
            return f"projects/UNSPECIFIED/zones/{zones[0]}/disks/{raw}"
        if len(zones) > 1:
            region = zones[0][: zones[0].rfind("-")] if "-" in zones[0] else zones[0]
            return f"projects/UNSPECIFIED/regions/{region}/disks/{raw}"
        return f"projects/UNSPECIFIED/zones/UNSPECIFIED/disks/{raw}"
    return raw


@record
@dataclass(**_FROZEN)
class PersistentVolumeClaim:
    """A PersistentVolumeClaim. ``storage_class`` is GetPersistentVolumeClaimClass (the beta annotation
    first, then ``spec.storageClassName``; ``""`` for none); ``bound`` means VolumeBinding's "fully bound"
    (``spec.volumeName`` set *and* the ``pv.kubernetes.io/bind-completed`` annotation); ``selected_node``
    is the ``volume.kubernetes.io/selected-node`` annotation (``""`` when absent)."""

    name: str
    namespace: str
    uid: str
    labels: dict[str, str]
    annotations: dict[str, str]
    storage_class: str
    volume_name: str
    phase: str
    access_modes: list[str]
    requested_storage: Quantity
    volume_mode: str
    volume_attributes_class: str
    selected_node: str
    bound: bool
    deleting: bool
    _has_request: bool = field(default=False, repr=False)
    _has_selector: bool = field(default=False, repr=False)
    _selector: Selector | None = field(default=None, repr=False)
    _has_selected_node: bool = field(default=False, repr=False)
    _controller_uid: str = field(default="", repr=False)


@record
@dataclass(**_FROZEN)
class PersistentVolume:
    """A PersistentVolume. ``storage_class``: the beta annotation first, then ``spec.storageClassName``.
    ``claim_namespace`` / ``claim_name``: its ``spec.claimRef`` (``""`` when unclaimed). ``node_affinity``:
    the terms of ``spec.nodeAffinity.required`` (ORed; see ``has_node_affinity``). ``csi_driver`` /
    ``volume_handle``: its CSI source (``""`` for other sources)."""

    name: str
    labels: dict[str, str]
    annotations: dict[str, str]
    storage_class: str
    capacity: Quantity
    access_modes: list[str]
    volume_mode: str
    volume_attributes_class: str
    claim_namespace: str
    claim_name: str
    phase: str
    has_node_affinity: bool
    node_affinity: list[NodeSelectorTerm]
    csi_driver: str
    volume_handle: str
    deleting: bool
    _claimed: bool = field(default=False, repr=False)
    _claim_uid: str = field(default="", repr=False)
    _in_tree: tuple[str, str, str] | None = field(default=None, repr=False)

    @exposed
    def allows_labels(self, labels: dict[str, str]) -> bool:
        """True if the volume's required node affinity admits a node with these labels (CheckNodeAffinity:
        no affinity admits every node; otherwise one term must match; ``matchFields`` see a node without a name)."""
        return not self.has_node_affinity or terms_match_labels(self.node_affinity, labels)


@record
@dataclass(**_FROZEN)
class StorageClass:
    """A StorageClass. ``volume_binding_mode`` is ``Immediate`` (the API default) or
    ``WaitForFirstConsumer``; ``allowed_topologies`` are its ``allowedTopologies`` terms (ORed; none: any
    node) as node selector terms with ``In`` requirements."""

    name: str
    provisioner: str
    volume_binding_mode: str
    parameters: dict[str, str]
    allowed_topologies: list[NodeSelectorTerm]

    @exposed
    def allows_labels(self, labels: dict[str, str]) -> bool:  # a Mapping does too
        """True if a volume of this class may be provisioned for a node with these labels
        (MatchTopologySelectorTerms: no terms admit every node, a term without expressions admits none)."""
        if not self.allowed_topologies:
            return True
        return any(t.match_expressions and t._valid and t._labels is not None and t._labels.matches(labels)
                   for t in self.allowed_topologies)


@record
@dataclass(**_FROZEN)
class CSINode:
    """A CSINode (named like its node): ``attach_limits`` maps each driver that reports
    ``allocatable.count`` to it; ``drivers`` lists every driver; ``migrated_plugins`` the in-tree plugins of
    the ``storage.alpha.kubernetes.io/migrated-plugins`` annotation."""

    name: str
    drivers: list[str]
    attach_limits: dict[str, int]
    migrated_plugins: list[str]


@dataclass(**_FROZEN)
class CSIDriverInfo:
    """What the scheduler reads of a CSIDriver: whether it opts into storage capacity tracking."""

    name: str
    storage_capacity: bool


@dataclass(**_FROZEN)
class StorageCapacity:
    """A CSIStorageCapacity: the room for new volumes of a class on the nodes its topology selects
    (``limit``: ``maximumVolumeSize`` if set, else ``capacity``; None when neither is)."""

    key: str
    storage_class: str
    limit: Fraction | None
    topology: Selector | None


@dataclass(**_FROZEN)
class VolumeAttachment:
    """A VolumeAttachment: volume ``pv_name`` attached to ``node_name`` by ``attacher``."""

    name: str
    node_name: str
    attacher: str
    pv_name: str


# -- builders ------------------------------------------------------------------------------------------------


def _name(obj: Any, kind: str) -> str:
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    name = meta.get("name") if isinstance(meta, Mapping) else None
    ns = meta.get("namespace") if isinstance(meta, Mapping) else None
    name = name if isinstance(name, str) and name else "?"
    return f"{kind} {ns}/{name}" if isinstance(ns, str) and ns else f"{kind} {name}"


def _storage(r: Reader, obj: Any, key: str, where: str) -> tuple[Fraction, bool]:
    """``obj[key]["storage"]`` as a quantity, and whether it was there."""
    raw = r.map(obj, key, where)
    if "storage" not in raw:
        return Fraction(0), False
    try:
        value = to_quantity(raw["storage"])
    except QuantityError as err:
        r.warn(f"{where}.storage: {err}; ignored")
        return Fraction(0), False
    return value, True


def _strs(r: Reader, obj: Any, key: str, where: str) -> tuple[str, ...]:
    return tuple(v for v in r.list(obj, key, where) if isinstance(v, str))


def _zones(labels: Mapping[str, str]) -> list[str]:
    value = labels.get("topology.kubernetes.io/zone") or labels.get("failure-domain.beta.kubernetes.io/zone") or ""
    return [z.strip() for z in value.split("__") if z.strip()] if value else []


def _in_tree(r: Reader, source: str, raw: Any, labels: Mapping[str, str]) -> tuple[str, str, str] | None:
    plugin, driver, id_field = _MIGRATABLE[source]
    ident = r.str(raw, id_field)
    return (plugin, driver, _translated_handle(source, ident, _zones(labels))) if ident else None


def build_volume(obj: Any, warnings: list[str]) -> PersistentVolume:
    """A :class:`PersistentVolume` from a PersistentVolume object."""
    r = Reader(_name(obj, "PersistentVolume"), warnings)
    meta, spec, status = r.map(obj, "metadata"), r.map(obj, "spec"), r.map(obj, "status")
    labels = r.str_map(meta, "labels", "metadata.labels")
    annotations = r.str_map(meta, "annotations", "metadata.annotations")
    capacity, _ = _storage(r, spec, "capacity", "spec.capacity")
    claim = spec.get("claimRef")
    claimed = isinstance(claim, Mapping)
    affinity = r.map(r.map(spec, "nodeAffinity", "spec.nodeAffinity"), "required", "spec.nodeAffinity.required")
    has_affinity = isinstance(r.map(spec, "nodeAffinity").get("required"), Mapping)
    terms = tuple(r.node_selector_term(t, f"spec.nodeAffinity.required.nodeSelectorTerms[{i}]")
                  for i, t in enumerate(r.list(affinity, "nodeSelectorTerms", "spec.nodeAffinity.required.nodeSelectorTerms")))
    csi = r.map(spec, "csi", "spec.csi")
    in_tree = None
    for source in _MIGRATABLE:
        if isinstance(spec.get(source), Mapping):
            in_tree = _in_tree(r, source, spec[source], labels)
    return PersistentVolume(
        name=r.str(meta, "name"),
        labels=labels,
        annotations=annotations,
        storage_class=annotations[BETA_STORAGE_CLASS] if BETA_STORAGE_CLASS in annotations else r.str(spec, "storageClassName"),
        capacity=capacity,
        access_modes=_strs(r, spec, "accessModes", "spec.accessModes"),  # type: ignore[arg-type]  # tuples (records.py)
        volume_mode=r.str(spec, "volumeMode") or "Filesystem",
        volume_attributes_class=r.str(spec, "volumeAttributesClassName"),
        claim_namespace=r.str(claim, "namespace") if claimed else "",
        claim_name=r.str(claim, "name") if claimed else "",
        phase=r.str(status, "phase"),
        has_node_affinity=has_affinity,
        node_affinity=terms,  # type: ignore[arg-type]
        csi_driver=r.str(csi, "driver"),
        volume_handle=r.str(csi, "volumeHandle"),
        deleting=is_terminating(obj),
        _claimed=claimed,
        _claim_uid=r.str(claim, "uid") if claimed else "",
        _in_tree=in_tree,
    )


def build_claim(obj: Any, warnings: list[str]) -> PersistentVolumeClaim:
    """A :class:`PersistentVolumeClaim` from a PersistentVolumeClaim object."""
    r = Reader(_name(obj, "PersistentVolumeClaim"), warnings)
    meta, spec, status = r.map(obj, "metadata"), r.map(obj, "spec"), r.map(obj, "status")
    annotations = r.str_map(meta, "annotations", "metadata.annotations")
    requested, has_request = _storage(r, r.map(spec, "resources", "spec.resources"), "requests", "spec.resources.requests")
    has_selector = spec.get("selector") is not None
    selector, problem = compile_label_selector(spec.get("selector")) if has_selector else (None, None)
    if problem:
        r.warn(f"spec.selector: {problem}; it matches no volume")
    controller = ""
    for ref in r.list(meta, "ownerReferences", "metadata.ownerReferences"):
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            controller = r.str(ref, "uid")
    class_name = annotations[BETA_STORAGE_CLASS] if BETA_STORAGE_CLASS in annotations else r.str(spec, "storageClassName")
    volume_name = r.str(spec, "volumeName")
    ns = r.str(meta, "namespace") or "default"
    return PersistentVolumeClaim(
        name=r.str(meta, "name"),
        namespace=ns,
        uid=r.str(meta, "uid"),
        labels=r.str_map(meta, "labels", "metadata.labels"),
        annotations=annotations,
        storage_class=class_name,
        volume_name=volume_name,
        phase=r.str(status, "phase") or "Pending",
        access_modes=_strs(r, spec, "accessModes", "spec.accessModes"),  # type: ignore[arg-type]
        requested_storage=requested,
        volume_mode=r.str(spec, "volumeMode") or "Filesystem",
        volume_attributes_class=r.str(spec, "volumeAttributesClassName"),
        selected_node=annotations.get(ANN_SELECTED_NODE, ""),
        bound=bool(volume_name) and ANN_BIND_COMPLETED in annotations,
        deleting=is_terminating(obj),
        _has_request=has_request,
        _has_selector=has_selector,
        _selector=selector,
        _has_selected_node=ANN_SELECTED_NODE in annotations,
        _controller_uid=controller,
    )


def build_class(obj: Any, warnings: list[str]) -> StorageClass:
    """A :class:`StorageClass` from a StorageClass object (``volumeBindingMode`` defaults to Immediate)."""
    r = Reader(_name(obj, "StorageClass"), warnings)
    meta = r.map(obj, "metadata")
    terms = []
    for i, raw in enumerate(r.list(obj, "allowedTopologies", "allowedTopologies")):
        where = f"allowedTopologies[{i}]"
        exprs = [{"key": e.get("key"), "operator": "In", "values": e.get("values")}
                 for e in r.list(raw, "matchLabelExpressions", f"{where}.matchLabelExpressions") if isinstance(e, Mapping)]
        terms.append(r.node_selector_term({"matchExpressions": exprs}, where))
    return StorageClass(
        name=r.str(meta, "name"),
        provisioner=r.str(obj, "provisioner"),
        volume_binding_mode=r.str(obj, "volumeBindingMode") or "Immediate",
        parameters=r.str_map(obj, "parameters"),
        allowed_topologies=tuple(terms),  # type: ignore[arg-type]
    )


def build_csi_node(obj: Any, warnings: list[str]) -> CSINode:
    """A :class:`CSINode` from a CSINode object."""
    r = Reader(_name(obj, "CSINode"), warnings)
    meta = r.map(obj, "metadata")
    drivers, limits = [], {}
    for i, raw in enumerate(r.list(r.map(obj, "spec"), "drivers", "spec.drivers")):
        name = r.str(raw, "name", where=f"spec.drivers[{i}].name")
        drivers.append(name)
        allocatable = r.map(raw, "allocatable", f"spec.drivers[{i}].allocatable")
        if allocatable.get("count") is not None:
            limits[name] = r.int(allocatable, "count", 0, f"spec.drivers[{i}].allocatable.count")
    migrated = r.str_map(meta, "annotations", "metadata.annotations").get(ANN_MIGRATED_PLUGINS, "")
    return CSINode(
        name=r.str(meta, "name"),
        drivers=tuple(drivers),  # type: ignore[arg-type]
        attach_limits=limits,
        migrated_plugins=tuple(migrated.split(",")) if migrated else (),  # type: ignore[arg-type]
    )


def build_csi_driver(obj: Any, warnings: list[str]) -> CSIDriverInfo:
    """A :class:`CSIDriverInfo` from a CSIDriver object."""
    r = Reader(_name(obj, "CSIDriver"), warnings)
    return CSIDriverInfo(r.str(r.map(obj, "metadata"), "name"), r.bool(r.map(obj, "spec"), "storageCapacity"))


def build_capacity(obj: Any, warnings: list[str]) -> StorageCapacity:
    """A :class:`StorageCapacity` from a CSIStorageCapacity object."""
    r = Reader(_name(obj, "CSIStorageCapacity"), warnings)
    meta = r.map(obj, "metadata")
    limit: Fraction | None = None
    for key in ("capacity", "maximumVolumeSize"):
        if obj.get(key) is not None:
            try:
                limit = to_quantity(obj[key])
            except QuantityError as err:
                r.warn(f"{key}: {err}; ignored")
    topology, problem = (None, None) if obj.get("nodeTopology") is None else compile_label_selector(obj.get("nodeTopology"))
    if problem:
        r.warn(f"nodeTopology: {problem}; it selects no node")
    return StorageCapacity(f"{r.str(meta, 'namespace')}/{r.str(meta, 'name')}", r.str(obj, "storageClassName"),
                           limit, topology)


def build_volume_attachment(obj: Any, warnings: list[str]) -> VolumeAttachment:
    """A :class:`VolumeAttachment` from a VolumeAttachment object."""
    r = Reader(_name(obj, "VolumeAttachment"), warnings)
    spec = r.map(obj, "spec")
    return VolumeAttachment(r.str(r.map(obj, "metadata"), "name"), r.str(spec, "nodeName"), r.str(spec, "attacher"),
                            r.str(r.map(spec, "source"), "persistentVolumeName"))


def build_pod_volumes(r: Reader, pod_name: str, spec: Mapping[str, Any]) -> tuple[Volume, ...]:
    """The :class:`Volume` records of a pod's ``spec.volumes`` (for :func:`objects.builders.build_pod`)."""
    out = []
    for i, raw in enumerate(r.list(spec, "volumes", "spec.volumes")):
        if not isinstance(raw, Mapping):
            r.warn(f"spec.volumes[{i}] is not a mapping; ignored")
            continue
        name = r.str(raw, "name")
        source = next((s for s in _SOURCES if isinstance(raw.get(s), Mapping)), "other")
        body = r.map(raw, source) if source != "other" else {}
        claim = ""
        disk: tuple[Any, ...] | None = None
        read_only = r.bool(body, "readOnly")
        if source == "persistentVolumeClaim":
            claim = r.str(body, "claimName")
        elif source == "ephemeral":
            claim = f"{pod_name}-{name}"
        elif source == "gcePersistentDisk":
            disk = ("gce", r.str(body, "pdName"), read_only)
        elif source == "awsElasticBlockStore":
            disk = ("aws", r.str(body, "volumeID"))
        elif source == "iscsi":
            disk = ("iscsi", r.str(body, "iqn"), read_only)
        elif source == "rbd":
            disk = ("rbd", frozenset(_strs(r, body, "monitors", "rbd.monitors")), r.str(body, "pool") or "rbd",
                    r.str(body, "image"), read_only)
        in_tree = _in_tree(r, source, body, {}) if source in _MIGRATABLE else None
        out.append(Volume(name, source, claim, read_only, disk, in_tree))
    return tuple(out)


def terms_match_labels(terms: Any, labels: Mapping[str, str]) -> bool:
    """Node selector terms (ORed) against a label set only, as PV node affinity is checked
    (``matchFields`` see a node whose name is empty, as kube builds it); an empty term matches nothing."""
    for t in terms:
        if not t.match_expressions and not t.match_fields:
            continue
        if not t._valid:
            continue
        if t._labels is not None and not t._labels.matches(labels):
            continue
        if t._fields is not None and not t._fields.matches({"metadata.name": ""}):
            continue
        return True
    return False
