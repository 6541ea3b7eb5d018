"""Load the bundled demo cluster into the test API server, and read the cluster back.

Used by ``test_kube_parity.py``. The demo objects are adapted only where the API server would
otherwise refuse them; everything the scheduler looks at stays as in the demo files:

* server-owned metadata (uid, creationTimestamp, resourceVersion) is dropped; an ownerReference gets
  the uid of the owner this run created (dangling references -- DaemonSets are not part of the demo
  objects -- keep their demo uid: no garbage collector runs, and the scheduler only reads kind/name);
* ``spec.priority`` / ``priorityClassName`` / ``preemptionPolicy`` are dropped: the Priority admission
  plugin rejects a bare ``spec.priority``, and with every pod at priority 0 kube-scheduler never
  preempts, which we do not model;
* ReplicaSet / StatefulSet / ReplicationController templates get a pause container (validation needs
  one; the scheduler only reads the selectors);
* pending pods get ``schedulerName: default-scheduler`` (the real kube-scheduler picks them up);
  running pods keep their ``spec.nodeName`` and get ``status.phase`` from the demo via ``/status``.

:class:`DemoCluster` remembers every object it created so :meth:`DemoCluster.delete` removes exactly
those (the control plane is shared by the whole e2e session).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from policyscheduler.inputs import read_objects
from policyscheduler.kobjects import is_bound, namespace_of, node_name
from policyscheduler.simulate.defaults import demo_cluster_dir
from policyscheduler.simulate.queue import is_pending, queue_order
from tests.controlplane import fakes
from tests.controlplane.api import Api, ApiError, wait_for

SCHEDULER = "default-scheduler"
PAUSE = fakes.PAUSE_IMAGE
_BUILTIN_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
_SERVER_META = ("uid", "creationTimestamp", "resourceVersion", "generation", "managedFields",
                "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink")

# What kube-scheduler's informers list (plus Namespaces, for namespaceSelector).
SNAPSHOT_KINDS = ("Namespace", "Node", "Pod", "Service", "ReplicationController", "ReplicaSet", "StatefulSet")


def demo_objects() -> list[dict[str, Any]]:
    """The bundled demo cluster as plain dicts, in file order."""
    result = read_objects([demo_cluster_dir()])
    if result.errors:
        raise RuntimeError("cannot read the demo cluster: " + "; ".join(result.errors))
    return result.objects


def pending_queue(objects: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The demo's pending pods in simulate's queue order (priority, creation time, input order)."""
    return queue_order([o for o in objects if is_pending(o)])


def _strip_meta(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    if out.get("kind") != "Node":  # a Node's status is what a kubelet reports: keep it
        out.pop("status", None)
    meta = out.setdefault("metadata", {})
    for key in _SERVER_META:
        meta.pop(key, None)
    return out


def adapt_workload(obj: dict[str, Any]) -> dict[str, Any]:
    """A Service / ReplicaSet / StatefulSet / ReplicationController the API server accepts."""
    out = _strip_meta(obj)
    if out["kind"] in ("ReplicaSet", "StatefulSet", "ReplicationController"):
        template = out["spec"].setdefault("template", {})
        tspec = template.setdefault("spec", {})
        if not tspec.get("containers"):
            tspec["containers"] = [{"name": "main", "image": PAUSE}]
    return out


def adapt_pod(obj: dict[str, Any], owner_uids: dict[tuple[str, str, str], str], *,
              pending: bool) -> dict[str, Any]:
    """A demo pod as we create it (see the module docstring for every change)."""
    out = _strip_meta(obj)
    meta = out["metadata"]
    namespace = namespace_of(out)
    for ref in meta.get("ownerReferences") or []:
        uid = owner_uids.get((namespace, str(ref.get("kind")), str(ref.get("name"))))
        if uid is not None:
            ref["uid"] = uid
    spec = out["spec"]
    for key in ("priority", "priorityClassName", "preemptionPolicy"):
        spec.pop(key, None)
    for container in [*spec.get("initContainers", []), *spec.get("containers", [])]:
        _limit_extended(container)
    if pending:
        spec.pop("nodeName", None)
        spec["schedulerName"] = SCHEDULER
    return out


def _is_extended(resource: str) -> bool:
    """kube's IsExtendedResourceName: a domain-prefixed name outside kubernetes.io (e.g. nvidia.com/gpu)."""
    domain = resource.split("/", 1)[0] if "/" in resource else ""
    return bool(domain) and domain != "kubernetes.io" and not domain.endswith(".kubernetes.io") \
        and not resource.startswith("requests.")


def _limit_extended(container: dict[str, Any]) -> None:
    """Validation wants limit == request for extended resources; the demo only gives requests."""
    resources = container.get("resources") or {}
    requests = resources.get("requests") or {}
    limits = resources.setdefault("limits", {})
    for name, value in requests.items():
        if _is_extended(name) and name not in limits:
            limits[name] = value
    if not limits:
        resources.pop("limits")


class DemoCluster:
    """The demo's nodes, namespaces, workloads and running pods, created in the API server."""

    def __init__(self, api: Api, objects: list[dict[str, Any]]) -> None:
        self.api = api
        self.objects = objects
        self.created: list[dict[str, Any]] = []  # in creation order; deleted in reverse
        self.owner_uids: dict[tuple[str, str, str], str] = {}

    def create_tracked(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create one object (with ``kind``) and remember it for :meth:`delete`."""
        stored = fakes.create(self.api, obj)
        stored.setdefault("kind", obj["kind"])
        self.created.append(stored)
        return stored

    def _create_many(self, objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        # Each success is recorded at once, so a failure half-way still leaves nothing behind.
        with ThreadPoolExecutor(max_workers=8) as pool:
            return list(pool.map(self.create_tracked, objs))

    def preflight(self) -> None:
        """Refuse to run on a cluster where the demo's names are already taken."""
        taken = [n["metadata"]["name"] for n in self.api.list_items("/api/v1/nodes")]
        clash = sorted({o["metadata"]["name"] for o in self.objects if o["kind"] == "Node"} & set(taken))
        if clash:
            raise RuntimeError(f"demo node names already exist in the API server: {clash[:5]}")
        for obj in self.objects:
            if obj["kind"] != "Namespace":
                continue
            name = obj["metadata"]["name"]
            try:
                ns = self.api.get(f"/api/v1/namespaces/{name}")
            except ApiError as exc:
                if exc.status == 404:
                    continue
                raise
            if (ns.get("status") or {}).get("phase") == "Terminating":
                raise RuntimeError(f"namespace {name} is Terminating (no namespace controller runs): "
                                   "the demo cluster can be loaded once per control plane")

    def load(self) -> None:
        """Create everything but the pending pods (namespaces, nodes, workloads, running pods)."""
        self.preflight()
        by_kind: dict[str, list[dict[str, Any]]] = {}
        for obj in self.objects:
            by_kind.setdefault(obj["kind"], []).append(obj)
        for ns in by_kind.get("Namespace", []):
            name = ns["metadata"]["name"]
            labels = dict(ns["metadata"].get("labels") or {})
            try:
                self.api.get(f"/api/v1/namespaces/{name}")
            except ApiError as exc:
                if exc.status != 404:
                    raise
                self.create_tracked(_strip_meta(ns))
            else:  # default / kube-system: make the labels what the demo says
                self.api.patch(f"/api/v1/namespaces/{name}", {"metadata": {"labels": labels}})
        self._create_many([_strip_meta(n) for n in by_kind.get("Node", [])])
        workloads = [o for kind in ("Service", "ReplicationController", "ReplicaSet", "StatefulSet")
                     for o in by_kind.get(kind, [])]
        for obj, stored in zip(workloads, self._create_many([adapt_workload(o) for o in workloads])):
            meta = obj["metadata"]
            self.owner_uids[(namespace_of(obj), obj["kind"], meta["name"])] = \
                stored["metadata"]["uid"]
        running = [p for p in by_kind.get("Pod", []) if is_bound(p)]
        self._create_many([adapt_pod(p, self.owner_uids, pending=False) for p in running])
        for pod in running:
            phase = (pod.get("status") or {}).get("phase")
            if phase:
                meta = pod["metadata"]
                fakes.set_pod_phase(self.api, namespace_of(pod), meta["name"], phase)

    def delete(self) -> None:
        """Delete what :meth:`load` created, pods first (no grace: no kubelet would confirm)."""
        created, self.created = self.created, []
        for obj in reversed(created):
            if obj["kind"] == "Namespace" and obj["metadata"]["name"] in _BUILTIN_NAMESPACES:
                continue
            # Background: core/v1 ReplicationControllers default to orphaning, which parks them
            # behind an "orphan" finalizer that only the (absent) garbage collector would remove.
            query: dict[str, Any] = {"gracePeriodSeconds": 0} if obj["kind"] == "Pod" \
                else {"propagationPolicy": "Background"}
            try:
                self.api.delete(fakes.object_path(obj), **query)
            except ApiError:
                pass  # best effort: keep deleting the rest


def list_cluster(api: Api) -> list[dict[str, Any]]:
    """Everything kube-scheduler's informers see, as kind-tagged dicts (the API server's view)."""

    def fetch(kind: str) -> list[dict[str, Any]]:
        items = api.list_items(fakes.list_path(kind))
        for item in items:
            item["kind"] = kind
        return items

    with ThreadPoolExecutor(max_workers=len(SNAPSHOT_KINDS)) as pool:
        lists = list(pool.map(fetch, SNAPSHOT_KINDS))
    return [item for items in lists for item in items]


def wait_outcome(api: Api, namespace: str, name: str, *, timeout: float = 30.0) -> tuple[str, str]:
    """Wait for kube-scheduler's verdict on one pod.

    Returns ``("bound", node)``, ``("unschedulable", condition message)`` or, for any other
    PodScheduled=False reason (e.g. SchedulerError), ``("<reason>", message)``.
    """
    path = f"/api/v1/namespaces/{namespace}/pods/{name}"

    def check() -> tuple[str, str] | None:
        pod = api.get(path)
        node = node_name(pod)
        if node:
            return ("bound", str(node))
        for cond in (pod.get("status") or {}).get("conditions") or []:
            if cond.get("type") == "PodScheduled" and cond.get("status") == "False" and cond.get("reason"):
                reason = str(cond["reason"])
                return ("unschedulable" if reason == "Unschedulable" else reason, str(cond.get("message", "")))
        return None

    outcome: tuple[str, str] = wait_for(check, timeout=timeout, interval=0.02,
                                        what=f"kube-scheduler to bind or reject {namespace}/{name}")
    return outcome


def delete_pod(api: Api, namespace: str, name: str) -> None:
    """Delete a pod immediately and wait until it is gone."""
    path = f"/api/v1/namespaces/{namespace}/pods/{name}"
    api.delete(path, gracePeriodSeconds=0)

    def gone() -> bool:
        try:
            api.get(path)
        except ApiError as exc:
            return exc.status == 404
        return False

    wait_for(gone, timeout=30, interval=0.02, what=f"pod {namespace}/{name} to be deleted")
