"""List + watch of one resource, kept in sync the way client-go's reflector does it.

* **list** (paged, ``limit=500``) then **watch** from the list's ``resourceVersion``, with bookmarks
  (``allowWatchBookmarks``) so the version we resume from stays fresh on quiet resources, and a
  server-side timeout of 5-10 minutes after which we re-watch from the last version seen.
* **410 Gone** (as the HTTP status of the watch request or as an ``ERROR`` event in the stream) means
  the version was compacted away: relist and *replace* -- every object the relist no longer shows is
  reported deleted -- never resume from the stale version.
* Other failures (API server down, connection reset) are retried with exponential backoff (0.5 s
  doubling to 30 s, reset by the next success) from the last version seen; every failure is reported
  through ``on_error`` (diagnostics as data, never silent).

A :class:`Reflector` runs in its own thread and calls its :class:`WatchHandler` from that thread.
Objects are plain dicts (``json.loads``), with ``kind`` filled in for list items.
"""

from __future__ import annotations

import dataclasses
import random
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, Protocol

from policyscheduler.kube.rest import ApiError, RestClient, Stream

__all__ = ["RESOURCES", "Reflector", "WatchHandler", "WatchStats"]


def _sub(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``obj[key]`` when it is a mapping, else an empty one (objects from the API are not trusted)."""
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}

RESOURCES: dict[str, str] = {
    "Node": "/api/v1/nodes",
    "Pod": "/api/v1/pods",
    "Namespace": "/api/v1/namespaces",
    "Service": "/api/v1/services",
    "ReplicaSet": "/apis/apps/v1/replicasets",
    "StatefulSet": "/apis/apps/v1/statefulsets",
    "ReplicationController": "/api/v1/replicationcontrollers",
    "PodDisruptionBudget": "/apis/policy/v1/poddisruptionbudgets",  # preemption spares budgets
    # volumes (kube's VolumeBinding, VolumeZone, NodeVolumeLimits, VolumeRestrictions read them; the claims
    # and volumes also drive binding a pod's claims before the pod, app/volumes.py)
    "PersistentVolumeClaim": "/api/v1/persistentvolumeclaims",
    "PersistentVolume": "/api/v1/persistentvolumes",
    "StorageClass": "/apis/storage.k8s.io/v1/storageclasses",
    "CSINode": "/apis/storage.k8s.io/v1/csinodes",
    "CSIDriver": "/apis/storage.k8s.io/v1/csidrivers",
    "CSIStorageCapacity": "/apis/storage.k8s.io/v1/csistoragecapacities",
    "VolumeAttachment": "/apis/storage.k8s.io/v1/volumeattachments",
}
"""kind -> the all-namespaces collection path the scheduler lists and watches."""


class WatchHandler(Protocol):
    """Receives one resource's changes (from the reflector's thread)."""

    def on_upsert(self, kind: str, obj: dict[str, Any]) -> None:
        """An object was added or changed."""

    def on_delete(self, kind: str, obj: dict[str, Any]) -> None:
        """An object was deleted (after a relist: a stub with its metadata)."""

    def on_synced(self, kind: str) -> None:
        """A (re)list of ``kind`` has been delivered completely."""

    def on_error(self, kind: str, error: str) -> None:
        """Listing or watching failed; the reflector retries by itself."""


@dataclasses.dataclass
class WatchStats:
    """Counters per reflector (exposed as metrics and used by the tests)."""

    lists: int = 0
    relists_gone: int = 0
    relists: int = 0
    """Lists after the first: every time the watch had to start over from a list (410 Gone, a too old
    resourceVersion, a reconnect that needed one) -- ``policyscheduler_watch_relists_total``."""
    watches: int = 0
    events: int = 0
    bookmarks: int = 0
    errors: int = 0


class _Gone(Exception):
    """The resource version we hold was compacted (410)."""


_STUB_KEYS = ("name", "namespace", "uid", "resourceVersion")
_ABSENT: Any = object()
_VERSION = 3  # the resourceVersion's place in a remembered tuple

Remembered = tuple[Any, ...]
"""What the reflector keeps of a delivered object: its ``_STUB_KEYS`` metadata values and, for a bound
pod, its node (``_ABSENT`` where the object has none). A tuple, not a stub dict: the reflector keeps
one per object (150,000 pods at 5,000 nodes), and three dicts each would cost 80 MiB there."""


def _remember(obj: Mapping[str, Any], kind: str) -> Remembered:
    meta = _sub(obj, "metadata")
    spec = obj.get("spec")
    node = spec["nodeName"] if kind == "Pod" and isinstance(spec, Mapping) and spec.get("nodeName") else _ABSENT
    return (*(meta.get(k, _ABSENT) for k in _STUB_KEYS), node)


def _stub(known: Remembered, kind: str) -> dict[str, Any]:
    """The object a deletion delivers for a remembered one: kind, metadata (name, namespace, uid,
    resourceVersion as the object had them) and a bound pod's ``spec.nodeName``."""
    stub: dict[str, Any] = {"kind": kind, "metadata": {k: v for k, v in zip(_STUB_KEYS, known) if v is not _ABSENT}}
    if known[-1] is not _ABSENT:
        stub["spec"] = {"nodeName": known[-1]}
    return stub


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = _sub(obj, "metadata")
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


class Reflector:
    """Keeps ``handler`` in sync with one resource; see the module docstring."""

    def __init__(
        self,
        client: RestClient,
        kind: str,
        handler: WatchHandler,
        *,
        path: str | None = None,
        selector: Mapping[str, str] | None = None,
        page_size: int = 500,
        min_timeout: int = 300,
        initial_backoff: float = 0.5,
        max_backoff: float = 30.0,
        sleep: Callable[[float], bool] | None = None,
        pause: Callable[[], float] | None = None,
    ) -> None:
        """``pause``: handed to every watch stream (:attr:`.rest.Stream.pause`): seconds to wait before the
        next read, so that a busy scheduler reads events in batches."""
        self.pause = pause
        self.client = client
        self.kind = kind
        self.path = path or RESOURCES[kind]
        self.selector = dict(selector or {})
        """Extra query parameters of every list and watch (``fieldSelector``, ``labelSelector``)."""
        self.handler = handler
        self.page_size = page_size
        self.min_timeout = min_timeout
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.stats = WatchStats()
        self.resource_version: str | None = None
        self._known: dict[tuple[str, str], Remembered] = {}
        self._stop = threading.Event()
        self._sleep = sleep or self._stop.wait
        self._stream: Stream | None = None
        self._thread: threading.Thread | None = None
        self.synced = threading.Event()

    # -- lifecycle -------------------------------------------------------------------------------------

    def start(self) -> None:
        """Run in a daemon thread (the process may exit without joining it)."""
        self._thread = threading.Thread(target=self.run, name=f"watch-{self.kind}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop soon: wakes a backoff sleep and closes an open stream."""
        self._stop.set()
        stream = self._stream
        if stream is not None:
            stream.close()

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def run(self) -> None:
        """List and watch until :meth:`stop`."""
        backoff = self.initial_backoff
        while not self._stop.is_set():
            try:
                if self.resource_version is None:
                    self._list()
                self._watch()
                backoff = self.initial_backoff
            except _Gone:
                self.stats.relists_gone += 1
                self.resource_version = None
                backoff = self.initial_backoff
            except Exception as err:  # noqa: BLE001 - a reflector never dies; it reports and retries
                if self._stop.is_set():
                    return
                self.stats.errors += 1
                self.handler.on_error(self.kind, f"{type(err).__name__}: {err}")
                self._sleep(backoff * (0.75 + random.random() / 2))
                backoff = min(backoff * 2, self.max_backoff)

    # -- list --------------------------------------------------------------------------------------------

    def _list(self) -> None:
        """List the resource and deliver it. A relist is delivered once complete (deletions first, then
        what changed: :meth:`_replace`). The first list -- nothing delivered yet, so nothing to delete
        and nobody deciding on it until :attr:`synced` -- goes out a page at a time as it arrives, so a
        big cluster's objects are never all held here at once (the handler's cache folds them in as they
        come); if the list has to start over, what the complete one no longer shows is deleted then."""
        streaming = not self._known
        items: list[dict[str, Any]] = []
        seen: set[tuple[str, str]] = set()
        query: dict[str, Any] = {"limit": self.page_size}
        while True:
            try:
                page = self.client.get(self.path, **self.selector, **query)
            except ApiError as err:
                if err.status == 410 and "continue" in query:  # the continue token expired: one full list
                    query = {}
                    items = []
                    seen = set()
                    continue
                raise
            found = page.get("items") or []
            for item in found:
                item.setdefault("kind", self.kind)
            if streaming:
                self._upsert_all(found, seen)
            else:
                items.extend(found)
            meta = page.get("metadata") or {}
            token = meta.get("continue")
            if not token:
                version = meta.get("resourceVersion")
                break
            del page, found
            query = {"limit": self.page_size, "continue": token}
        if self.stats.lists:
            self.stats.relists += 1
        self.stats.lists += 1
        if streaming:
            self._delete_unseen(seen)
        else:
            self._replace(items)
        self.resource_version = str(version) if version else None
        self.synced.set()
        self.handler.on_synced(self.kind)

    def _replace(self, items: list[dict[str, Any]]) -> None:
        """Deliver a relist: deletions for objects it no longer has, upserts for new versions."""
        fresh = {_key(item): item for item in items}
        self._delete_unseen(fresh.keys())
        self._upsert_all(fresh.values(), set())

    def _delete_unseen(self, seen: Collection[tuple[str, str]]) -> None:
        """Deliver deletions for the objects delivered before that a complete list no longer has."""
        for key in [k for k in self._known if k not in seen]:
            self.handler.on_delete(self.kind, _stub(self._known.pop(key), self.kind))

    def _upsert_all(self, items: Iterable[dict[str, Any]], seen: set[tuple[str, str]]) -> None:
        """Deliver listed objects whose version was not delivered yet (their keys go into ``seen``)."""
        for item in items:
            key = _key(item)
            seen.add(key)
            old = self._known.get(key)
            version = (item.get("metadata") or {}).get("resourceVersion")
            if old is not None and version and old[_VERSION] == version:
                continue
            self._known[key] = _remember(item, self.kind)
            self.handler.on_upsert(self.kind, item)

    # -- watch ---------------------------------------------------------------------------------------------

    def _watch(self) -> None:
        timeout = int(self.min_timeout * (1 + random.random()))
        query = {**self.selector, "watch": "true", "resourceVersion": self.resource_version,
                 "allowWatchBookmarks": "true", "timeoutSeconds": timeout}
        try:
            stream = self.client.stream(self.path, query, read_timeout=timeout + 30)
        except ApiError as err:
            if err.status == 410:
                raise _Gone() from err
            raise
        self._stream = stream
        stream.pause = self.pause
        self.stats.watches += 1
        try:
            if self._stop.is_set():
                return
            for event in stream:
                self._handle(event)
                if self._stop.is_set():
                    return
        finally:
            self._stream = None
            stream.close()

    def _handle(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        obj = event.get("object")
        if not isinstance(obj, dict):
            raise ValueError(f"watch event without an object: {str(event)[:200]}")
        if kind == "ERROR":
            code = obj.get("code")
            if code == 410 or obj.get("reason") in ("Expired", "Gone"):
                raise _Gone()
            raise ApiError("WATCH", self.path, int(code or 0) or 500, detail=str(obj.get("message", obj)))
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if kind == "BOOKMARK":
            self.stats.bookmarks += 1
        else:
            self.stats.events += 1
            obj.setdefault("kind", self.kind)
            key = _key(obj)
            if kind == "DELETED":
                self._known.pop(key, None)
                self.handler.on_delete(self.kind, obj)
            elif kind in ("ADDED", "MODIFIED"):
                self._known[key] = _remember(obj, self.kind)
                self.handler.on_upsert(self.kind, obj)
            else:
                raise ValueError(f"unknown watch event type {kind!r}")
        if version:
            self.resource_version = str(version)


def wait_synced(reflectors: list[Reflector], timeout: float) -> bool:
    """True once every reflector delivered its first list (False on timeout)."""
    deadline = time.monotonic() + timeout
    return all(reflector.synced.wait(max(0.0, deadline - time.monotonic())) for reflector in reflectors)
