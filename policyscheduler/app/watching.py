"""The live scheduler's watch handler: where each watched object goes.

Every reflector (:mod:`policyscheduler.kube.watch`) calls :class:`WatchRouter`. It routes an object to
the shadow profiles (before the cache, so a shadowed bind is judged in the state before it), to the volume
binder (PVs, claims and nodes drive its waits; also before the cache), to the cache, and turns what changed
into the queue's work: our waiting pods added or removed, and cluster events
(:mod:`policyscheduler.cycle.events`) that move rejected pods -- node added, updated (only the facets that
changed) or deleted, an assigned pod added/changed/deleted on its node (with its direction: added grows
the node's pod aggregates, deleted shrinks them, a label update moves none; ``cycle/events.py``), a
namespace's labels changed, a storage object changed.

It is a module of its own because it is the one place that remembers what the watches last showed (the
nodes' facets, the namespaces' labels, the bound pods' views) to tell a real change from a repeat; the
scheduling loop, binds and the lifecycle stay in :mod:`.scheduler`. The scheduler shares two sets of pod
keys with it: *binding* (handed to the binder, not answered yet) and *settled* (our bind placed it, the
watch has not shown it bound yet). An update of such a pod that still shows no node is one from before
the bind and never queues it again (kube-scheduler skips updates of assumed pods the same way).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any

from policyscheduler.app.pods import assigned_view, pod_queue_key, scheduler_name, update_facets, waiting
from policyscheduler.app.volumes import KINDS as VOLUME_KINDS
from policyscheduler.cycle.cache import is_placed
from policyscheduler.cycle.events import STORAGE_KINDS, ClusterEvent, node_facet_view, node_facets_changed
from policyscheduler.kobjects import is_bound
from policyscheduler.kobjects import priority as pod_priority

if TYPE_CHECKING:
    from policyscheduler.app.shadow import Shadows
    from policyscheduler.app.volumes import VolumeBinder
    from policyscheduler.cycle import ClusterCache, SchedulingQueue
    from policyscheduler.kube.events import EventRecorder
    from policyscheduler.kube.metrics import SchedulerMetrics

__all__ = ["WatchRouter"]

log = logging.getLogger("policyscheduler.scheduler")


@dataclasses.dataclass(kw_only=True, eq=False)
class WatchRouter:
    """The reflectors' handler (:class:`~policyscheduler.kube.watch.WatchHandler`); see the module docstring."""

    cache: ClusterCache
    queue: SchedulingQueue
    volumes: VolumeBinder[Any]
    shadows: Shadows | None
    metrics: SchedulerMetrics
    scheduling_names: Collection[str]
    recorder_of: Callable[[Mapping[str, Any]], EventRecorder]
    binding: set[str]
    """Pods handed to the binder whose bind has not answered yet (keys; the scheduler's set, read here)."""
    settled: set[str]
    """Pods our bind placed (or found placed) that the watch has not shown bound or deleted yet."""
    bound: dict[str, tuple[Any, ...]] = dataclasses.field(default_factory=dict)
    """Bound pods' views (:func:`~.pods.assigned_view`): what an assigned-pod event compares."""
    nodes: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    """Each node's facets (:func:`~policyscheduler.cycle.events.node_facet_view`) as last seen."""
    namespaces: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Each namespace's labels as last seen."""

    def on_upsert(self, kind: str, obj: dict[str, Any]) -> None:
        if self.shadows is not None:
            self.shadows.before_upsert(kind, obj)  # judges a shadowed pod's bind in the state before it
        if kind in VOLUME_KINDS and kind != "Pod":
            self.volumes.observe(kind, obj)  # before the cache: an Unreserve restore never overtakes it
        self.cache.upsert(kind, obj)
        if kind == "Pod":
            self._pod_changed(obj)
        elif kind == "Node":
            name = str((obj.get("metadata") or {}).get("name"))
            view = node_facet_view(obj)
            old = self.nodes.get(name)
            self.nodes[name] = view
            if old is None:
                self.queue.move(ClusterEvent.node_added(name))
            else:
                facets = node_facets_changed(old, view)
                if facets:
                    self.queue.move(ClusterEvent.node_updated(name, facets))
        elif kind in STORAGE_KINDS:  # claims, volumes, classes, CSI objects: rules of the volume plugins
            self.queue.move(ClusterEvent.storage(f"{kind}Change"))
        elif kind == "Namespace":
            name = str((obj.get("metadata") or {}).get("name"))
            labels = (obj.get("metadata") or {}).get("labels")
            if name not in self.namespaces or self.namespaces[name] != labels:
                self.namespaces[name] = labels
                self.queue.move(ClusterEvent.cluster("NamespaceChange"))

    def on_delete(self, kind: str, obj: dict[str, Any]) -> None:
        if self.shadows is not None:
            self.shadows.on_delete(kind, obj)
        if kind in VOLUME_KINDS:
            self.volumes.removed(kind, obj)
        self.cache.remove(kind, obj)
        if kind == "Pod":
            key = pod_queue_key(obj)
            self.queue.delete(key)
            self.settled.discard(key)
            self.recorder_of(obj).cancel(obj)  # deleted: no failure write about it goes out any more
            view = self.bound.pop(key, None)
            if view is not None:
                self.queue.move(ClusterEvent.assigned_pod("AssignedPodDelete", view[0]))
            elif not is_bound(obj) and scheduler_name(obj) in self.scheduling_names:
                # one of our pending pods (it may have left the queue already: terminating); nominated by
                # our preemption, it held room on that node against our pods of lower or equal priority:
                # that room is free (kube-scheduler does the same for the pods it is responsible for)
                status = obj.get("status")
                nominated = status.get("nominatedNodeName") if isinstance(status, dict) else None
                if isinstance(nominated, str) and nominated:
                    self.queue.move(ClusterEvent.nominated_pod_deleted(nominated, pod_priority(obj)))
        elif kind == "Node":
            name = str((obj.get("metadata") or {}).get("name"))
            if self.nodes.pop(name, None) is not None:
                self.queue.move(ClusterEvent.node_deleted(name))
        elif kind == "Namespace":
            self.namespaces.pop(str((obj.get("metadata") or {}).get("name")), None)
        elif kind in STORAGE_KINDS:
            self.queue.move(ClusterEvent.storage(f"{kind}Delete"))

    def on_synced(self, kind: str) -> None:
        log.info("watch %s: list delivered", kind)

    def on_error(self, kind: str, error: str) -> None:
        self.metrics.watch_errors.labels(kind).inc()
        log.warning("watch %s: %s (retrying)", kind, error)

    def _pod_changed(self, pod: dict[str, Any]) -> None:
        key = pod_queue_key(pod)
        if is_bound(pod):
            self.queue.delete(key)
            self.settled.discard(key)
            before = self.bound.get(key)
            if is_placed(pod):
                view = assigned_view(pod)
                if before is None:
                    self.bound[key] = view
                    self.queue.move(ClusterEvent.assigned_pod("AssignedPodAdd", view[0]))
                elif before != view:
                    self.bound[key] = view
                    self.queue.move(ClusterEvent.assigned_pod("AssignedPodUpdate", view[0],
                                                              update_facets(before, view)))
            elif before is not None:
                del self.bound[key]
                self.queue.move(ClusterEvent.assigned_pod("AssignedPodDelete", before[0]))
        elif key in self.settled or (key in self.binding and key not in self.queue):
            # An update from before our bind (a label patch racing it): the pod is placed, or about to be
            # reported placed. Queueing it again would decide it a second time (kube-scheduler skips
            # updates of assumed pods the same way); the watch's next event shows it bound.
            return
        elif scheduler_name(pod) in self.scheduling_names and waiting(pod):
            self.queue.add(key, pod)
        else:
            self.queue.delete(key)
