"""The scheduler's cluster cache: watch events in, one :class:`ClusterSnapshot` view per cycle out.

This adapter is the only place that calls the snapshot's mutation API (``add`` / ``remove`` /
``assume`` / ``forget``), so a change of that API is a change here alone.

Threads: watch threads call :meth:`ClusterCache.upsert` / :meth:`ClusterCache.remove` and binder
threads :meth:`ClusterCache.forget`; these only *record* the change under a lock. The scheduling loop
calls :meth:`ClusterCache.snapshot`, which applies the recorded changes, so a snapshot is never mutated
while a decision reads it (kube-scheduler's ``UpdateSnapshot`` at the start of each cycle).

Assumed pods (kube's ``AssumePod``): a pod is placed the moment it is chosen; when the watch shows it
bound the watched object replaces the assumption; when the bind fails :meth:`forget` takes it back --
but only while it is still an assumption, so a late failure (a 409 after the watch already showed the
pod bound) never removes a pod that really sits on its node.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from policyscheduler.kobjects import is_bound, is_placed, object_key
from policyscheduler.kobjects import node_name as node_name_of
from policyscheduler.state import ClusterSnapshot
from policyscheduler.state.store import replace_fields

# ``object_key``, ``is_placed`` and ``node_name_of`` are policyscheduler.kobjects' facts, re-exported here
# for the modules that still import them from the cache.
__all__ = ["ClusterCache", "KINDS", "object_key", "is_placed", "node_name_of"]

KINDS = ("Node", "Pod", "Namespace", "Service", "ReplicaSet", "StatefulSet", "ReplicationController",
         "PodDisruptionBudget", "PersistentVolumeClaim", "PersistentVolume", "StorageClass", "CSINode", "CSIDriver",
         "CSIStorageCapacity", "VolumeAttachment")
"""The kinds the snapshot reads (the scheduler watches exactly these)."""

ObjKey = tuple[str, str]

SAME, RELABELED, CHANGED = "same", "relabeled", "changed"


def _same_placement(assumed: Mapping[str, Any], node: str, bound: Mapping[str, Any]) -> str:
    """How the bound object differs from the assumed one on the assumed node.

    ``SAME``: same uid, labels, annotations and spec but ``nodeName`` (a binding changes nothing else a
    policy reads), so the assumption's record stays valid. ``RELABELED``: the same but for labels --
    the API server's PodTopologyLabels admission copies the node's ``topology.kubernetes.io/{zone,region}``
    labels onto every pod it binds -- and no ``matchLabelKeys`` / ``mismatchLabelKeys`` could turn the
    labels into selector terms, so the record only needs its ``labels`` replaced. ``CHANGED``: rebuild."""
    a_meta, b_meta = assumed.get("metadata"), bound.get("metadata")
    a_spec, b_spec = assumed.get("spec"), bound.get("spec")
    if not (isinstance(a_meta, Mapping) and isinstance(b_meta, Mapping)
            and isinstance(a_spec, Mapping) and isinstance(b_spec, Mapping)):
        return CHANGED
    if b_spec.get("nodeName") != node or a_meta.get("uid") != b_meta.get("uid"):
        return CHANGED
    if a_meta.get("annotations") != b_meta.get("annotations"):
        return CHANGED
    if len(a_spec) + 1 != len(b_spec) or b_spec != {**a_spec, "nodeName": node}:  # one C-level comparison
        return CHANGED
    if a_meta.get("labels") == b_meta.get("labels"):
        return SAME
    labels = b_meta.get("labels")
    if not (isinstance(labels, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items())):
        return CHANGED  # the parser's warnings and defaults apply: let it read them
    return CHANGED if _label_keyed(b_spec) else RELABELED


def _label_keyed(spec: Mapping[str, Any]) -> bool:
    """Whether any pod affinity term or spread constraint names ``matchLabelKeys`` / ``mismatchLabelKeys``
    (then the pod's labels become part of its selectors) -- or the spec is too odd to tell."""
    spread = spec.get("topologySpreadConstraints")
    if spread is not None:
        if not isinstance(spread, list):
            return True
        for c in spread:
            if not isinstance(c, Mapping) or c.get("matchLabelKeys"):
                return True
    affinity = spec.get("affinity")
    if affinity is None:
        return False
    if not isinstance(affinity, Mapping):
        return True
    for kind in ("podAffinity", "podAntiAffinity"):
        block = affinity.get(kind)
        if block is None:
            continue
        if not isinstance(block, Mapping):
            return True
        for mode in ("requiredDuringSchedulingIgnoredDuringExecution", "preferredDuringSchedulingIgnoredDuringExecution"):
            terms = block.get(mode)
            if terms is None:
                continue
            if not isinstance(terms, list):
                return True
            for term in terms:
                if isinstance(term, Mapping) and mode.startswith("preferred"):
                    term = term.get("podAffinityTerm")
                if not isinstance(term, Mapping) or term.get("matchLabelKeys") or term.get("mismatchLabelKeys"):
                    return True
    return False


class ClusterCache:
    """See the module docstring."""

    def __init__(self, objects: Iterable[Mapping[str, Any]] = (), *, snapshot: ClusterSnapshot | None = None) -> None:
        """Start from ``objects``, or from ``snapshot`` when the caller already built it from them."""
        self._lock = threading.Lock()
        objects = list(objects)
        self._snapshot = snapshot if snapshot is not None else ClusterSnapshot.from_objects(objects)
        self._changes: list[tuple[str, str, Mapping[str, Any]]] = []
        self._assumed: dict[ObjKey, tuple[Mapping[str, Any], str]] = {}
        self._placed: set[ObjKey] = {object_key(o) for o in objects if o.get("kind") == "Pod" and is_placed(o)}
        self.events = 0
        """Watch changes applied so far (diagnostics)."""

    # -- producers: record only --------------------------------------------------------------------

    def upsert(self, kind: str, obj: Mapping[str, Any]) -> None:
        """An object was added or modified (from a watch or a relist)."""
        with self._lock:
            self._changes.append(("upsert", kind, obj))

    def remove(self, kind: str, obj: Mapping[str, Any]) -> None:
        """An object was deleted (from a watch, or missing from a relist)."""
        with self._lock:
            self._changes.append(("remove", kind, obj))

    def forget(self, pod: Mapping[str, Any]) -> None:
        """Free an assumed pod whose bind failed; nothing happens when the watch already confirmed
        or deleted it. Binder threads may call this; it is applied by the next :meth:`snapshot`."""
        with self._lock:
            self._changes.append(("forget", "Pod", pod))

    # -- the scheduling loop -------------------------------------------------------------------------

    def snapshot(self) -> ClusterSnapshot:
        """The view for the next decision, with every recorded change applied."""
        with self._lock:
            changes, self._changes = self._changes, []
        for op, kind, obj in changes:
            self._apply(op, kind, obj)
        return self._snapshot

    @property
    def pending(self) -> int:
        """Recorded changes not applied yet (the next :meth:`snapshot` applies them)."""
        with self._lock:
            return len(self._changes)

    @property
    def generation(self) -> int:
        """Grows with every applied change a decision could see (the snapshot's own generation)."""
        return self._snapshot.generation

    def _apply(self, op: str, kind: str, obj: Mapping[str, Any]) -> None:
        snap = self._snapshot
        key = object_key(obj)
        self.events += 1
        if op == "forget":
            if self._assumed.pop(key, None) is not None:
                snap.forget(obj)
            return
        if kind != "Pod":
            (snap.remove if op == "remove" else snap.add)(obj, kind)
            return
        if op == "remove":
            assumed = self._assumed.pop(key, None)
            if assumed is not None:
                snap.forget(assumed[0])
            self._placed.discard(key)
            snap.remove(obj, "Pod")  # a no-op for a pod the state does not hold (e.g. still pending)
            return
        assumed = self._assumed.get(key)
        if assumed is not None:
            if not is_bound(obj):
                return  # still pending on the server: our choice stands until the bind answers
            del self._assumed[key]  # the watch shows it bound: the truth replaces the assumption
            same = _same_placement(assumed[0], assumed[1], obj) if is_placed(obj) else CHANGED
            if same == SAME:
                self._placed.add(key)  # exactly what we assumed: keep the record, skip a rebuild
                return
            if same == RELABELED:  # the assumption's record with the bound labels: no re-parse
                record = snap.pod_record(assumed[0])
                labels = dict(obj["metadata"]["labels"])
                bound = replace_fields(record, node_name=assumed[1], labels=labels)
                if not snap.state.relabel_pod(bound):  # node aggregates kept: resource rules see no change
                    snap.state.add_pod(bound)
                self._placed.add(key)
                return
            snap.forget(assumed[0])
        placed = is_placed(obj)
        if placed or key in self._placed:
            snap.add(obj, "Pod")  # placed -> (re)placed; no longer placed -> dropped
        (self._placed.add if placed else self._placed.discard)(key)

    def assume(self, pod: Mapping[str, Any], node: str) -> None:
        """The scheduler chose ``node`` for ``pod``: it occupies the node from now on (scheduling
        loop only, after :meth:`snapshot`)."""
        self._assumed[object_key(pod)] = (pod, node)
        self._snapshot.assume(pod, node)

    def is_assumed(self, obj: Mapping[str, Any]) -> bool:
        """True while the scheduler's own choice for this pod awaits the watch's confirmation."""
        return object_key(obj) in self._assumed

    # -- inspection ------------------------------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        """Sizes as kube-scheduler's ``scheduler_cache_size{type}`` reports them."""
        return {"nodes": len(self._snapshot.nodes), "pods": len(self._placed), "assumed_pods": len(self._assumed)}

    @property
    def warnings(self) -> list[str]:
        """Malformed objects the snapshot degraded (it never raises on them)."""
        return self._snapshot.warnings
