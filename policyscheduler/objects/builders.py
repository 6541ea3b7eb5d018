"""Build :class:`Pod` and the static part of :class:`Node` from object dicts (see parse.Reader)."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from sys import intern as _sys_intern
from typing import Any, TypeVar

from policyscheduler.kobjects import (
    is_terminating,
    join_key,
    name_of,
    namespace_of,
    node_name,
    priority,
    scheduler_name,
)
from policyscheduler.objects.parse import Reader
from policyscheduler.objects.records import (
    HostPort,
    Node,
    NodeSelectorTerm,
    Pod,
    PodAffinityTerm,
    WeightedPodAffinityTerm,
)
from policyscheduler.objects.requests import is_scalar_resource, pod_requests
from policyscheduler.objects.storage import build_pod_volumes
from policyscheduler.quantity import round_resource
from policyscheduler.times import EPOCH, Timestamp, parse_timestamp

__all__ = ["build_pod", "build_node", "object_name", "normalized_image_name"]

_ZERO = Fraction(0)


def object_name(obj: Any, kind: str) -> str:
    """``Kind ns/name`` (or ``Kind name``) for warnings, robust to junk. A pod is named by its key (a pod
    without a namespace lives in ``default``); other kinds show the namespace as written, if any."""
    name = name_of(obj) or "?"
    if kind == "Pod":
        return f"Pod {join_key(namespace_of(obj), name)}"
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    ns = meta.get("namespace") if isinstance(meta, Mapping) else None
    return f"{kind} {ns}/{name}" if isinstance(ns, str) and ns else f"{kind} {name}"


def _priority(r: Reader, obj: Any, spec: Any) -> int:
    """spec.priority (:func:`policyscheduler.kobjects.priority`), with a warning when a value is there but
    unusable: not an integer, or outside the 32-bit range the API server enforces."""
    value = priority(obj)
    raw = spec.get("priority")
    if raw is None or (type(raw) is int and raw == value):
        return value
    if isinstance(raw, int) and not isinstance(raw, bool):
        r.warn(f"spec.priority: {raw} is outside the 32-bit range; using 0")
    else:
        r.int(spec, "priority", 0, "spec.priority")  # the Reader's "not an integer" warning
    return value


def normalized_image_name(name: str) -> str:
    """ImageLocality's normalisation: append ``:latest`` when the name has no tag after the last '/'."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def _container_requests(r: Reader, c: Any, where: str) -> dict[str, Fraction]:
    resources = r.map(c, "resources", f"{where}.resources")
    requests = r.resources(resources, "requests", f"{where}.resources.requests")
    for name, value in r.resources(resources, "limits", f"{where}.resources.limits").items():
        requests.setdefault(name, value)  # API-server defaulting: request = limit when unset
    return requests


def _status_requests(r: Reader, obj: Any) -> tuple[dict[str, tuple[dict[str, Fraction], dict[str, Fraction]]], bool]:
    """Per container name: (status.resources.requests, allocatedResources), and "resize infeasible".

    In-place pod resize (InPlacePodVerticalScaling, on by default) makes the scheduler count running
    containers at max(spec, actuated, allocated) -- or only the status values when the resize is
    infeasible -- so a resize in flight is never under-counted (component-helpers determineContainerReqs).
    """
    status = r.map(obj, "status")
    out: dict[str, tuple[dict[str, Fraction], dict[str, Fraction]]] = {}
    for i, cs in enumerate(r.list(status, "containerStatuses", "status.containerStatuses")):
        if (type(cs) is not dict and not isinstance(cs, Mapping)) or cs.get("resources") is None:
            continue
        where = f"status.containerStatuses[{i}]"
        actual = r.resources(r.map(cs, "resources", f"{where}.resources"), "requests", f"{where}.resources.requests")
        allocated = r.resources(cs, "allocatedResources", f"{where}.allocatedResources")
        out[r.str(cs, "name")] = (actual, allocated)
    infeasible = False
    for cond in r.list(status, "conditions", "status.conditions"):
        if isinstance(cond, Mapping) and cond.get("type") == "PodResizePending":
            infeasible = cond.get("reason") == "Infeasible"
            break
    return out, infeasible


def _max_into(into: dict[str, Fraction], more: dict[str, Fraction]) -> None:
    for name, value in more.items():
        if name not in into or value > into[name]:
            into[name] = value


def _pins(r: Reader, affinity_required: Any) -> tuple[bool, tuple[str, ...]]:
    """NodeAffinity PreFilter: terms that all pin ``metadata.name In [...]`` -> the union of names."""
    terms = r.list(affinity_required, "nodeSelectorTerms")
    if not terms:
        return False, ()
    names: set[str] = set()
    for term in terms:
        term_names: set[str] | None = None
        fields = term.get("matchFields") if isinstance(term, Mapping) else None
        for req in fields if isinstance(fields, list) else []:
            if isinstance(req, Mapping) and req.get("key") == "metadata.name" and req.get("operator") == "In":
                raw_values = req.get("values") or []
                try:
                    values = {v for v in raw_values if isinstance(v, str)}
                except TypeError:  # not iterable (``values: true``): no names; node_selector_term warns
                    values = set()
                term_names = values if term_names is None else term_names & values
        if term_names is None:
            return False, ()
        names |= term_names
    return True, tuple(sorted(names))


def intern(text: str) -> str:
    """``sys.intern`` for exact strings (a ``str`` subclass, which it refuses, is kept as it is)."""
    return _sys_intern(text) if type(text) is str else text


_V = TypeVar("_V")
_OWNERS: dict[tuple[str, str, str], tuple[str, str, str]] = {}
_OWNERS_MAX = 4096


def _shared_owner(owner: tuple[str, str, str]) -> tuple[str, str, str]:
    """One tuple (and one copy of its strings) per controller reference, however many pods it owns: the
    state holds a record per running pod, and each parsed object brings its own copies. Bounded: when
    it is full it starts over (controllers come and go over a long run)."""
    found = _OWNERS.get(owner)
    if found is not None:
        return found
    if len(_OWNERS) >= _OWNERS_MAX:
        _OWNERS.clear()
    shared = (intern(owner[0]), intern(owner[1]), intern(owner[2]))
    _OWNERS[shared] = shared
    return shared


_MAPS: dict[tuple[tuple[str, Any], ...], dict[str, Any]] = {}


def _shared_map(values: dict[str, _V]) -> dict[str, _V]:
    """One dict per distinct map (labels, requests) however many pods carry it -- the pods of one
    template share them, and records never change their maps (records.py) -- bounded like
    :func:`_shared_owner`. Equal maps with their keys in another order stay apart."""
    key = tuple(values.items())
    found = _MAPS.get(key)
    if found is not None:
        return found
    if len(_MAPS) >= _OWNERS_MAX:
        _MAPS.clear()
    _MAPS[key] = values
    return values


def build_pod(obj: Any, warnings: list[str]) -> Pod:
    """A :class:`Pod` record (problems appended to ``warnings``, never raised for malformed fields)."""
    r = Reader(object_name(obj, "Pod"), warnings)
    if not isinstance(obj, Mapping):
        r.warn("pod is not a mapping")
        obj = {}
    meta = r.map(obj, "metadata")
    spec = r.map(obj, "spec")
    # The facts (namespace, node, scheduler, priority, terminating) come from kobjects, the values every
    # other module sees; the Reader's reads of those fields only add the warnings, in the usual order.
    r.str(meta, "namespace")
    namespace = namespace_of(obj)
    labels = _shared_map({intern(k): intern(v) for k, v in r.str_map(meta, "labels", "metadata.labels").items()})

    owner = None
    for ref in r.list(meta, "ownerReferences", "metadata.ownerReferences"):
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            owner = _shared_owner((r.str(ref, "apiVersion"), r.str(ref, "kind"), r.str(ref, "name")))
            break

    affinity = r.map(spec, "affinity", "spec.affinity")
    node_aff = r.map(affinity, "nodeAffinity", "spec.affinity.nodeAffinity") if affinity else affinity
    required_raw = node_aff.get("requiredDuringSchedulingIgnoredDuringExecution")
    has_required = required_raw is not None
    required_terms: tuple[NodeSelectorTerm, ...] = ()
    pins, pinned = False, ()
    if has_required:
        required = r.map(node_aff, "requiredDuringSchedulingIgnoredDuringExecution", "nodeAffinity.required")
        required_terms = tuple(
            r.node_selector_term(t, f"nodeAffinity.required.nodeSelectorTerms[{i}]")
            for i, t in enumerate(r.list(required, "nodeSelectorTerms", "nodeAffinity.required.nodeSelectorTerms"))
        )
        pins, pinned = _pins(r, required)
    req_aff: tuple[PodAffinityTerm, ...] = ()
    req_anti: tuple[PodAffinityTerm, ...] = ()
    pref_aff: tuple[WeightedPodAffinityTerm, ...] = ()
    pref_anti: tuple[WeightedPodAffinityTerm, ...] = ()
    if affinity:  # most pods have none: skip the empty walks
        pod_aff = r.map(affinity, "podAffinity", "spec.affinity.podAffinity")
        anti_aff = r.map(affinity, "podAntiAffinity", "spec.affinity.podAntiAffinity")
        req_aff, pref_aff = r.affinity_terms(pod_aff, "podAffinity", namespace, labels)
        req_anti, pref_anti = r.affinity_terms(anti_aff, "podAntiAffinity", namespace, labels)

    host_network = r.bool(spec, "hostNetwork", "spec.hostNetwork")
    containers, inits, images = [], [], []
    ports: list[HostPort] = []
    for i, c in enumerate(r.list(spec, "initContainers", "spec.initContainers")):
        where = f"spec.initContainers[{i}]"
        if type(c) is not dict and not isinstance(c, Mapping):
            r.warn(f"{where} is not a mapping; ignored")
            continue
        sidecar = r.str(c, "restartPolicy") == "Always"
        inits.append((_container_requests(r, c, where), sidecar))
        images.append(normalized_image_name(r.str(c, "image")))
        if sidecar:
            ports.extend(r.host_ports(c, where, host_network))
    statuses, resize_infeasible = _status_requests(r, obj)
    for i, c in enumerate(r.list(spec, "containers", "spec.containers")):
        where = f"spec.containers[{i}]"
        if type(c) is not dict and not isinstance(c, Mapping):
            r.warn(f"{where} is not a mapping; ignored")
            continue
        reqs = _container_requests(r, c, where)
        name = c.get("name")
        if isinstance(name, str) and name in statuses:
            actual, allocated = statuses[name]
            reqs = {} if resize_infeasible else dict(reqs)
            _max_into(reqs, actual)
            _max_into(reqs, allocated)
        containers.append(reqs)
        images.append(normalized_image_name(r.str(c, "image")))
        ports.extend(r.host_ports(c, where, host_network))
    overhead = r.resources(spec, "overhead", "spec.overhead")
    pod_level = _container_requests(r, spec, "spec") if "resources" in spec else {}
    requests = pod_requests(containers, inits, overhead, pod_level)
    nonzero = pod_requests(containers, inits, overhead, pod_level, nonzero=True)

    name, uid = r.str(meta, "name"), r.str(meta, "uid")
    annotations = r.str_map(meta, "annotations", "metadata.annotations")
    r.str(spec, "nodeName")  # warnings only, in field order (see the top)
    r.str(spec, "schedulerName")
    return Pod(
        name=name,
        namespace=intern(namespace),  # label keys and values, namespaces, nodes, images: shared, not per pod
        uid=uid,
        labels=labels,
        annotations=annotations,
        node_name=intern(node_name(obj) or ""),
        scheduler_name=scheduler_name(obj),
        priority=_priority(r, obj, spec),
        terminating=is_terminating(obj),
        node_selector=r.str_map(spec, "nodeSelector", "spec.nodeSelector"),
        has_required_node_affinity=has_required,
        required_node_affinity=required_terms,
        preferred_node_affinity=r.preferred_node_terms(node_aff) if node_aff else (),
        pins_node_names=pins,
        pinned_node_names=pinned,
        tolerations=r.tolerations(spec),
        requests=_shared_map(requests),
        nonzero_requests=_shared_map({"cpu": nonzero.get("cpu", _ZERO), "memory": nonzero.get("memory", _ZERO)}),
        # numerator > 0 is value > 0 (a Fraction's denominator is positive) without Fraction comparison
        scalar_resources=tuple(sorted(n for n, v in requests.items() if v.numerator > 0 and is_scalar_resource(n))),
        host_ports=tuple(ports),
        images=tuple(intern(image) for image in images),
        required_affinity_terms=req_aff,
        required_anti_affinity_terms=req_anti,
        preferred_affinity_terms=pref_aff,
        preferred_anti_affinity_terms=pref_anti,
        spread_constraints=r.spread_constraints(spec, labels),
        volumes=build_pod_volumes(r, name, spec) if "volumes" in spec else (),
        resource_claims=tuple(r.str(c, "name") for c in r.list(spec, "resourceClaims", "spec.resourceClaims")
                              if isinstance(c, Mapping)),
        created=_created(r, meta),
        _owner=owner,
    )


def build_node(obj: Any, warnings: list[str]) -> Node:
    """A :class:`Node` with no pods yet (the snapshot fills the aggregates)."""
    r = Reader(object_name(obj, "Node"), warnings)
    if not isinstance(obj, Mapping):
        r.warn("node is not a mapping")
        obj = {}
    meta = r.map(obj, "metadata")
    spec = r.map(obj, "spec")
    status = r.map(obj, "status")
    allocatable = {
        name: round_resource(name, value)
        for name, value in r.resources(status, "allocatable", "status.allocatable").items()
    }
    images: dict[str, int] = {}
    for i, image in enumerate(r.list(status, "images", "status.images")):
        if not isinstance(image, Mapping):
            r.warn(f"status.images[{i}] is not a mapping; ignored")
            continue
        size = r.int(image, "sizeBytes", 0, f"status.images[{i}].sizeBytes")
        for name in r.list(image, "names", f"status.images[{i}].names"):
            if isinstance(name, str):
                images[name] = size
    return Node(
        name=r.str(meta, "name"),
        labels=r.str_map(meta, "labels", "metadata.labels"),
        annotations=r.str_map(meta, "annotations", "metadata.annotations"),
        unschedulable=r.bool(spec, "unschedulable", "spec.unschedulable"),
        taints=r.taints(spec),
        allocatable=allocatable,
        requested={},
        nonzero_requested={"cpu": Fraction(0), "memory": Fraction(0)},
        pod_count=0,
        pods=(),
        used_ports=(),
        images=images,
        created=_created(r, meta),
    )


def _created(r: Reader, meta: Mapping[str, Any]) -> Timestamp:
    """``metadata.creationTimestamp`` as a timestamp; the epoch when absent, or (with a warning) unreadable."""
    raw = meta.get("creationTimestamp")
    if raw is None or raw == "":
        return EPOCH
    value = parse_timestamp(raw) if isinstance(raw, str) else None
    if value is None:
        r.warn(f"metadata.creationTimestamp {str(raw)[:40]!r} is not an RFC 3339 time; read as the epoch")
        return EPOCH
    return value
