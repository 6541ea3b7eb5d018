"""Binding a pod's claims before the pod: kube-scheduler's VolumeBinding Reserve, PreBind and Unreserve.

A pod whose PersistentVolumeClaims are not all bound may only be bound to its node once they are: a
``WaitForFirstConsumer`` claim is provisioned for the node the scheduler picks, and a claim matched to an
existing (static) PV is bound to it by the PV controller once the scheduler writes the PV's ``claimRef``.
What is to be written comes as a :class:`~policyscheduler.state.volumeplan.VolumePlan` from a
:class:`VolumePlanner` (the pure planning side, from the cluster state); :class:`VolumeBinder` carries it
out, step for step as kube's volume binder does (``pkg/scheduler/framework/plugins/volumebinding``):

* **Reserve** (scheduling loop, :meth:`VolumeBinder.reserve`): the plan's PVs with their new ``claimRef``
  and the claims with their ``volume.kubernetes.io/selected-node`` annotation go into the scheduler's
  cluster cache at once (kube's assume cache), so the next pod's plan already sees them taken.
* **PreBind** (a worker thread, never the loop): ``PUT`` each PV with ``claimRef`` to its claim (uid and
  all) and ``pv.kubernetes.io/bound-by-controller`` -- the PV controller then binds the claim -- and
  ``PUT`` each claim to provision with the selected-node annotation -- the PV controller hands it to its
  provisioner. The ``PUT`` carries the ``resourceVersion`` the plan was made from: a volume or claim
  changed meanwhile (another pod took it) is a 409, and the pod is retried. Nothing already in place is
  written again (a retry after a crash finds the annotation or the ``claimRef`` there).
* **Wait** until every claim of the pod is *fully bound* (``spec.volumeName`` and
  ``pv.kubernetes.io/bind-completed``) -- driven by the watches of claims, volumes, nodes and pods, not by
  polling -- checking what kube's ``checkBindings`` checks: the pod still exists; the node does; a
  written PV still has its ``claimRef`` and its node affinity admits the node; a claim to provision still
  has the annotation with this node (a provisioner that gives up removes it) and its PV, once there,
  admits the node. Objects older than our own write are waited out. Claims of the pod the plan does not
  mention must be bound too (a planner that missed one makes the pod wait, never bind without it).
* Within the bind timeout (VolumeBindingArgs ``bindTimeoutSeconds``, 600 s by default): then the pod goes
  to the pod binder (:mod:`policyscheduler.kube.binder`), if this replica still may schedule.
* **Failure** (a write failed, a check failed, timeout): Unreserve -- the cache gets the latest watched
  PVs and claims back (kube restores its assume cache; like kube nothing written to the API server is
  undone: the PV controller and the provisioners own those objects now) -- the pod's assumption is
  forgotten and it is retried after backoff, with kube's FailedScheduling text:
  ``running PreBind plugin "VolumeBinding": binding volumes: <why>``.

Crash or lost lease: the pod is bound only after its claims, so a replica that dies in between leaves a
pending pod with claims annotated or bound; the next leader plans again (from those objects), finds the
work done or half done and finishes it, or fails and retries. On a lost lease or SIGTERM the waits are
dropped (:meth:`VolumeBinder.cancel_all`): no bind leaves after that.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from policyscheduler.kube.binder import Bindable
from policyscheduler.kube.rest import ApiError, RestClient
from policyscheduler.objects.builders import build_node
from policyscheduler.objects.parse import Reader
from policyscheduler.state.volumeplan import VolumePlan

if TYPE_CHECKING:
    from policyscheduler.state import ClusterSnapshot

__all__ = ["BIND_COMPLETED", "BOUND_BY_CONTROLLER", "DEFAULT_BIND_TIMEOUT", "PREBIND", "SELECTED_NODE",
           "VolumeBinder", "VolumePlanner", "annotated_claim", "bound_volume", "claim_is_fully_bound",
           "default_planner", "node_affinity_error", "plan_assumed", "pod_claim_names"]

log = logging.getLogger("policyscheduler.volumes")

SELECTED_NODE = "volume.kubernetes.io/selected-node"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
DEFAULT_BIND_TIMEOUT = 600.0
"""Seconds kube-scheduler waits for a pod's claims (VolumeBindingArgs ``bindTimeoutSeconds`` default)."""
PREBIND = 'running PreBind plugin "VolumeBinding": '
"""How kube-scheduler's framework prefixes a PreBind failure (the FailedScheduling message)."""
WORKERS = 2
"""Threads for the API writes (two ``PUT``s per pod at most, usually one)."""

KINDS = ("PersistentVolume", "PersistentVolumeClaim", "Node", "Pod")
"""What :meth:`VolumeBinder.observe` keeps (Pods: only their deletion matters)."""


class VolumePlanner(Protocol):
    """The planning side: for ``pod`` on ``node`` (the cycle's choice), which claims to bind to which static
    PV and which to provision, from the cluster state ``snapshot`` (the one the decision read, with the
    pod assumed on ``node``). Called on the scheduling loop, for pods with claims only: must be quick and
    must not write anything."""

    def __call__(self, pod: Mapping[str, Any], node: str, snapshot: ClusterSnapshot, /) -> VolumePlan: ...


def plan_assumed(pod: Mapping[str, Any], node: str, snapshot: ClusterSnapshot, /) -> VolumePlan:
    """The claim work the cycle planned when it assumed ``pod`` on ``node`` (``ClusterSnapshot.assume`` runs
    the volume rules' own planning, ``state.volumes.plan_volumes``, and remembers the plan): one matching
    algorithm for the filter and for the binder. No remembered plan: nothing to write, and the pod still
    waits for all its claims to be bound."""
    plan = snapshot.volume_plan(pod)
    return plan if plan is not None else VolumePlan(node=node)


def default_planner() -> VolumePlanner:
    """The planner a scheduler uses unless ``Options.volume_planner`` names one: :func:`plan_assumed`."""
    return plan_assumed


def pod_claim_names(pod: Mapping[str, Any]) -> tuple[str, ...]:
    """The claims a pod's volumes use, in volume order: ``persistentVolumeClaim.claimName`` and, for a
    generic ephemeral volume, the claim kube creates for it (``<pod name>-<volume name>``)."""
    spec = pod.get("spec")
    volumes = spec.get("volumes") if isinstance(spec, Mapping) else None
    if not isinstance(volumes, list):
        return ()
    meta = pod.get("metadata")
    pod_name = str(meta.get("name") or "") if isinstance(meta, Mapping) else ""
    names: list[str] = []
    for volume in volumes:
        if not isinstance(volume, Mapping):
            continue
        pvc = volume.get("persistentVolumeClaim")
        if isinstance(pvc, Mapping) and pvc.get("claimName"):
            names.append(str(pvc["claimName"]))
        elif isinstance(volume.get("ephemeral"), Mapping):
            names.append(f"{pod_name}-{volume.get('name')}")
    return tuple(names)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _notes(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    notes = _meta(obj).get("annotations")
    return notes if isinstance(notes, Mapping) else None


def _version(obj: Mapping[str, Any]) -> int:
    """The resourceVersion as a number (kube's APIObjectVersioner does the same); -1 when it is none."""
    try:
        return int(str(_meta(obj).get("resourceVersion")))
    except ValueError:
        return -1


def claim_is_fully_bound(claim: Mapping[str, Any]) -> bool:
    """kube's ``isPVCFullyBound``: the claim names its volume and the PV controller finished the binding."""
    return bool(_spec(claim).get("volumeName")) and BIND_COMPLETED in (_notes(claim) or {})


def node_affinity_error(pv: Mapping[str, Any], node: Mapping[str, Any]) -> str | None:
    """kube's ``CheckNodeAffinity`` of a PV on a node: None when its required node affinity admits the node,
    else why not. As in kube only the node's labels count (a ``matchFields`` term sees no name)."""
    affinity = _spec(pv).get("nodeAffinity")
    required = affinity.get("required") if isinstance(affinity, Mapping) else None
    if not isinstance(required, Mapping):
        return None
    warnings: list[str] = []
    labels = _meta(node).get("labels")
    bare = build_node({"metadata": {"name": "", "labels": labels if isinstance(labels, Mapping) else {}}}, warnings)
    reader = Reader(f"PersistentVolume {_meta(pv).get('name')}", warnings)
    terms = required.get("nodeSelectorTerms")
    if isinstance(terms, list):
        for i, raw in enumerate(terms):
            if reader.node_selector_term(raw, f"spec.nodeAffinity.required.nodeSelectorTerms[{i}]").matches(bare):
                return None
    return "no matching NodeSelectorTerms"


def _claim_ref(claim: Mapping[str, Any]) -> dict[str, Any]:
    """The object reference kube writes into a PV's ``claimRef`` (``reference.GetReference`` of the claim)."""
    meta = _meta(claim)
    return {"kind": "PersistentVolumeClaim", "namespace": meta.get("namespace"), "name": meta.get("name"),
            "uid": meta.get("uid"), "apiVersion": "v1", "resourceVersion": meta.get("resourceVersion")}


def bound_volume(pv: Mapping[str, Any], claim: Mapping[str, Any]) -> dict[str, Any] | None:
    """kube's ``GetBindVolumeToClaim``: ``pv`` with ``claimRef`` to ``claim`` and the bound-by-controller
    annotation (unless the user pre-bound it); None when it already is so (nothing to write)."""
    meta, ref = _meta(claim), _spec(pv).get("claimRef")
    ref = ref if isinstance(ref, Mapping) else None
    prebound = (ref is not None and ref.get("name") == meta.get("name") and ref.get("namespace") == meta.get("namespace")
                and (not ref.get("uid") or ref.get("uid") == meta.get("uid")))
    new = copy.deepcopy(dict(pv))
    dirty = False
    if ref is None or ref.get("name") != meta.get("name") or ref.get("namespace") != meta.get("namespace") \
            or ref.get("uid") != meta.get("uid"):
        new.setdefault("spec", {})["claimRef"] = _claim_ref(claim)
        dirty = True
    notes = new.setdefault("metadata", {}).setdefault("annotations", {})
    if not prebound and BOUND_BY_CONTROLLER not in notes:
        notes[BOUND_BY_CONTROLLER] = "yes"
        dirty = True
    return new if dirty else None


def annotated_claim(claim: Mapping[str, Any], node: str) -> dict[str, Any] | None:
    """``claim`` with the selected-node annotation set to ``node``; None when it already is."""
    if (_notes(claim) or {}).get(SELECTED_NODE) == node:
        return None
    new = copy.deepcopy(dict(claim))
    new.setdefault("metadata", {}).setdefault("annotations", {})[SELECTED_NODE] = node
    return new


W = TypeVar("W", bound=Bindable)


@dataclasses.dataclass
class _Execution(Generic[W]):
    """One pod's claim work in flight."""

    work: W
    plan: VolumePlan
    namespace: str
    pod: str
    uid: str
    claims: tuple[str, ...]
    deadline: float
    serial: int
    waiting: bool = False
    written: dict[tuple[str, str], int] = dataclasses.field(default_factory=dict)
    """(kind, key) -> resourceVersion of our write: an older watched object is waited out."""
    assumed: list[tuple[str, str]] = dataclasses.field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.pod}"

    def touched_by(self, kind: str, name: str, obj: Mapping[str, Any]) -> bool:
        """Whether a change of this object can change the outcome of the wait."""
        if kind == "Node":
            return name == self.plan.node
        if kind == "PersistentVolumeClaim":
            namespace = str(_meta(obj).get("namespace") or "")
            if namespace == self.namespace and name in self.claims:
                return True
            return ((namespace, name) in self.plan.provision
                    or any((namespace, name) == (b.namespace, b.claim) for b in self.plan.static))
        ref = _spec(obj).get("claimRef")
        if isinstance(ref, Mapping) and ref.get("namespace") == self.namespace and ref.get("name") in self.claims:
            return True
        return any(b.pv == name for b in self.plan.static)


class _Failed(Exception):
    """A check or write that ends the pod's attempt; the message is kube's."""


class VolumeBinder(Generic[W]):
    """Reserve, PreBind and Unreserve of the pods with claims (see the module docstring).

    ``bind(work)``: hand the pod to the pod binder (its claims are bound). ``failed(work, message, retry)``:
    the attempt ended without a bind -- ``message`` is the FailedScheduling text, or None when nothing is to
    be reported (the pod is gone, the replica stopped); ``retry``: try the pod again after backoff.
    ``may_bind()``: this replica still schedules. ``assume(kind, obj)``: put an object into the scheduler's
    cluster cache (Reserve's assumption and Unreserve's restore). Callbacks run on a worker, watch or timer
    thread, never under this object's lock.
    """

    def __init__(self, client: RestClient, *, bind: Callable[[W], None],
                 failed: Callable[[W, str | None, bool], None], may_bind: Callable[[], bool],
                 assume: Callable[[str, Mapping[str, Any]], None] | None = None,
                 timeout: float = DEFAULT_BIND_TIMEOUT) -> None:
        self.client = client
        self.timeout = timeout
        self._bind, self._failed, self._may_bind, self._assume = bind, failed, may_bind, assume
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._volumes: dict[str, Mapping[str, Any]] = {}
        self._claims: dict[str, Mapping[str, Any]] = {}
        self._nodes: dict[str, Mapping[str, Any]] = {}
        self._by_pod: dict[str, _Execution[W]] = {}
        self._serial = itertools.count(1)
        self._pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="volume-prebind")
        self._timer: threading.Thread | None = None
        self._closed = False
        self.counts: dict[str, int] = {}
        """Outcomes so far: ``bound`` (handed to the pod binder), ``failed``, ``dropped``."""

    # -- the watches (reflector threads) -----------------------------------------------------------------

    def observe(self, kind: str, obj: Mapping[str, Any]) -> None:
        """A PV, claim or node was added or changed: keep it, and check the pods waiting on it."""
        meta = _meta(obj)
        name = str(meta.get("name") or "")
        with self._lock:
            if kind == "PersistentVolume":
                self._volumes[name] = obj
            elif kind == "PersistentVolumeClaim":
                self._claims[f"{meta.get('namespace')}/{name}"] = obj
            elif kind == "Node":
                self._nodes[name] = obj
            else:
                return
            ready = [e for e in self._by_pod.values() if e.waiting and e.touched_by(kind, name, obj)] \
                if self._by_pod else []
        self._check_all(ready)

    def removed(self, kind: str, obj: Mapping[str, Any]) -> None:
        """A PV, claim, node or pod was deleted."""
        meta = _meta(obj)
        name = str(meta.get("name") or "")
        with self._lock:
            if kind == "PersistentVolume":
                self._volumes.pop(name, None)
            elif kind == "PersistentVolumeClaim":
                self._claims.pop(f"{meta.get('namespace')}/{name}", None)
            elif kind == "Node":
                self._nodes.pop(name, None)
            elif kind != "Pod":
                return
            ready = list(self._by_pod.values()) if self._by_pod else []
        if kind == "Pod":
            key = f"{meta.get('namespace')}/{name}"
            ready = [e for e in ready if e.key == key and (not meta.get("uid") or meta.get("uid") == e.uid)]
            for execution in ready:
                self._end(execution, None, f"pod does not exist any more: pod \"{name}\" not found", retry=False)
            return
        self._check_all(ready)

    # -- the scheduling loop -----------------------------------------------------------------------------

    def reserve(self, work: W, plan: VolumePlan) -> None:
        """Reserve: assume the plan's writes in the cluster cache and start PreBind off the loop; the pod is
        handed to ``bind`` or ``failed`` later, exactly once."""
        meta = _meta(work.pod)
        node = str(work.node or plan.node)
        execution = _Execution(work, dataclasses.replace(plan, node=node), str(meta.get("namespace") or "default"),
                               str(meta.get("name") or ""), str(meta.get("uid") or ""), pod_claim_names(work.pod),
                               time.monotonic() + self.timeout, next(self._serial))
        assumed: list[tuple[str, Mapping[str, Any]]] = []
        with self._lock:
            # a pod is in one place at a time (the scheduler keeps a pod being bound out of its queue); were an
            # older execution still here, it is replaced: its worker and its waits see that and stop quietly
            self._by_pod[execution.key] = execution
            for item in execution.plan.static:
                pv, claim = self._volumes.get(item.pv), self._claims.get(f"{item.namespace}/{item.claim}")
                new = bound_volume(pv, claim) if pv is not None and claim is not None else None
                if new is not None:
                    assumed.append(("PersistentVolume", new))
                    execution.assumed.append(("PersistentVolume", item.pv))
            for namespace, name in execution.plan.provision:
                claim = self._claims.get(f"{namespace}/{name}")
                new = annotated_claim(claim, node) if claim is not None else None
                if new is not None:
                    assumed.append(("PersistentVolumeClaim", new))
                    execution.assumed.append(("PersistentVolumeClaim", f"{namespace}/{name}"))
            self._start_timer()
        if self._assume is not None:
            for kind, obj in assumed:
                self._assume(kind, obj)
        try:
            self._pool.submit(self._prebind, execution)
        except RuntimeError:  # shut down: the pod is retried by the next leader
            self._end(execution, None, "stopping", retry=True, report=False)

    @property
    def in_flight(self) -> int:
        """Pods whose claims are being written or waited for."""
        with self._lock:
            return len(self._by_pod)

    def cancel_all(self) -> int:
        """Drop every pending wait (SIGTERM, lost lease): none of these pods is bound by this replica; each
        goes back to ``failed`` without a report. How many were dropped."""
        with self._lock:
            pending = list(self._by_pod.values())
        for execution in pending:
            self._end(execution, None, "stopping", retry=True, report=False)
        return len(pending)

    def shutdown(self) -> None:
        with self._lock:
            self._closed = True
            self._wake.notify_all()
        self.cancel_all()
        self._pool.shutdown(wait=False, cancel_futures=True)

    # -- PreBind ---------------------------------------------------------------------------------------

    def _prebind(self, execution: _Execution[W]) -> None:
        """The API writes (kube's ``bindAPIUpdate``), then the first check; later checks come with watch
        events (:meth:`observe`) and the deadline with the timer."""
        try:
            for item in execution.plan.static:
                self._write_volume(execution, item.pv, f"{item.namespace}/{item.claim}")
            for namespace, name in execution.plan.provision:
                self._write_claim(execution, f"{namespace}/{name}")
        except _Failed as err:
            self._end(execution, PREBIND + str(err), str(err), retry=True)
            return
        except Exception as err:  # a bug must not lose the pod: it is retried, and logged
            log.exception("volume binding of %s failed unexpectedly", execution.key)
            self._end(execution, PREBIND + f"{type(err).__name__}: {err}", "unexpected", retry=True)
            return
        with self._lock:
            if self._by_pod.get(execution.key) is not execution:
                return  # ended meanwhile (pod deleted, stopping)
            execution.waiting = True
        self._check_all([execution])

    def _write_volume(self, execution: _Execution[W], pv_name: str, claim_key: str) -> None:
        with self._lock:
            pv, claim = self._volumes.get(pv_name), self._claims.get(claim_key)
        if pv is None:
            raise _Failed(f'persistentvolumes "{pv_name}" not found')
        if claim is None:
            raise _Failed(f'persistentvolumeclaims "{claim_key.partition("/")[2]}" not found')
        new = bound_volume(pv, claim)
        if new is None:
            return  # claimRef already ours (a retry after a crash, a pre-bound PV)
        answer = self._put(f"/api/v1/persistentvolumes/{pv_name}", new)
        execution.written[("PersistentVolume", pv_name)] = _version(answer)

    def _write_claim(self, execution: _Execution[W], claim_key: str) -> None:
        with self._lock:
            claim = self._claims.get(claim_key)
        namespace, _, name = claim_key.partition("/")
        if claim is None:
            raise _Failed(f'persistentvolumeclaims "{name}" not found')
        new = annotated_claim(claim, execution.plan.node)
        if new is None:
            return  # annotated for this node already
        answer = self._put(f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{name}", new)
        execution.written[("PersistentVolumeClaim", claim_key)] = _version(answer)

    def _put(self, path: str, body: Mapping[str, Any]) -> Any:
        try:
            return self.client.put(path, body)
        except ApiError as err:
            raise _Failed(err.message or str(err)) from err

    # -- the wait (kube's checkBindings) ------------------------------------------------------------------

    def _check_all(self, executions: list[_Execution[W]]) -> None:
        for execution in executions:
            if not execution.waiting:
                continue
            with self._lock:
                if self._by_pod.get(execution.key) is not execution:
                    continue
                try:
                    done = self._bound(execution)
                except _Failed as err:
                    reason: str | None = str(err)
                    done = False
                else:
                    reason = None
            if reason is not None:
                self._end(execution, PREBIND + "binding volumes: " + reason, reason, retry=True)
            elif done:
                self._finish(execution)

    def _bound(self, execution: _Execution[W]) -> bool:
        """True when every claim of the pod is fully bound as planned; False to wait; :class:`_Failed` when
        the attempt cannot succeed any more (under the lock)."""
        node_name = execution.plan.node
        node = self._nodes.get(node_name)
        if node is None:
            raise _Failed(f'failed to get node "{node_name}": node "{node_name}" not found')
        planned: set[str] = set()
        for item in execution.plan.static:
            claim_key = f"{item.namespace}/{item.claim}"
            planned.add(claim_key)
            pv = self._volumes.get(item.pv)
            if pv is None:
                raise _Failed(f'failed to check binding: could not find v1.PersistentVolume "{item.pv}"')
            claim = self._claims.get(claim_key)
            if claim is None:
                raise _Failed(f'failed to check binding: could not find v1.PersistentVolumeClaim "{claim_key}"')
            if _version(pv) < execution.written.get(("PersistentVolume", item.pv), -1):
                return False
            why = node_affinity_error(pv, node)
            if why is not None:
                raise _Failed(f'pv "{item.pv}" node affinity doesn\'t match node "{node_name}": {why}')
            ref = _spec(pv).get("claimRef")
            if not isinstance(ref, Mapping) or not ref.get("uid"):
                raise _Failed(f'ClaimRef got reset for pv "{item.pv}"')
            if not claim_is_fully_bound(claim):
                return False
        for namespace, name in execution.plan.provision:
            claim_key = f"{namespace}/{name}"
            planned.add(claim_key)
            claim = self._claims.get(claim_key)
            if claim is None:
                raise _Failed(f'failed to check provisioning pvc: could not find v1.PersistentVolumeClaim "{claim_key}"')
            if _version(claim) < execution.written.get(("PersistentVolumeClaim", claim_key), -1):
                return False
            notes = _notes(claim)
            if notes is None:
                raise _Failed(f'selectedNode annotation reset for PVC "{name}"')
            if notes.get(SELECTED_NODE) != node_name:
                raise _Failed(f'provisioning failed for PVC "{name}"')
            volume_name = _spec(claim).get("volumeName")
            if volume_name:
                pv = self._volumes.get(str(volume_name))
                if pv is None:
                    return False  # not seen yet (kube tolerates it the same way)
                why = node_affinity_error(pv, node)
                if why is not None:
                    raise _Failed(f'pv "{volume_name}" node affinity doesn\'t match node "{node_name}": {why}')
            if not claim_is_fully_bound(claim):
                return False
        for name in execution.claims:  # the pod's other claims: bound before the pod, whatever the plan said
            claim_key = f"{execution.namespace}/{name}"
            if claim_key not in planned:
                claim = self._claims.get(claim_key)
                if claim is None or not claim_is_fully_bound(claim):
                    return False
        return True

    # -- endings -----------------------------------------------------------------------------------------

    def _take(self, execution: _Execution[W]) -> bool:
        """Remove ``execution`` from the pending ones; False when something else ended it first."""
        with self._lock:
            if self._by_pod.get(execution.key) is not execution:
                return False
            del self._by_pod[execution.key]
            return True

    def _finish(self, execution: _Execution[W]) -> None:
        if not self._take(execution):
            return
        if not self._may_bind():  # lost the lease or stopping while the claims bound: the next leader binds
            self._count("dropped")
            self._failed(execution.work, None, True)
            return
        self._count("bound")
        log.debug("claims of %s bound; binding the pod to %s", execution.key, execution.plan.node)
        self._bind(execution.work)

    def _end(self, execution: _Execution[W], message: str | None, why: str, *, retry: bool,
             report: bool = True) -> None:
        """Unreserve: the cache gets the watched objects back, and the pod goes to ``failed``."""
        if not self._take(execution):
            return
        self._count("failed" if report else "dropped")
        restore: list[tuple[str, Mapping[str, Any]]] = []
        if self._assume is not None:
            with self._lock:  # the latest watched object, under the lock: a newer watch event comes after
                for kind, key in execution.assumed:
                    obj = (self._volumes if kind == "PersistentVolume" else self._claims).get(key)
                    if obj is not None:
                        restore.append((kind, obj))
                for kind, obj in restore:
                    self._assume(kind, obj)
        if report:
            log.info("volume binding of %s failed: %s", execution.key, why)
        self._failed(execution.work, message if report else None, retry)

    def _count(self, outcome: str) -> None:
        with self._lock:
            self.counts[outcome] = self.counts.get(outcome, 0) + 1

    # -- the deadline ----------------------------------------------------------------------------------

    def _start_timer(self) -> None:
        """(under the lock) The thread that ends the waits past their deadline, started with the first pod."""
        if self._timer is None and not self._closed:
            self._timer = threading.Thread(target=self._expire, name="volume-binding-timeout", daemon=True)
            self._timer.start()
        self._wake.notify_all()

    def _expire(self) -> None:
        while True:
            with self._lock:
                if self._closed:
                    return
                now = time.monotonic()
                late = [e for e in self._by_pod.values() if e.deadline <= now]
                if not late:
                    soonest = min((e.deadline for e in self._by_pod.values()), default=now + 60.0)
                    self._wake.wait(max(0.01, soonest - now))
                    continue
            for execution in late:
                self._end(execution, PREBIND + "binding volumes: context deadline exceeded", "timeout", retry=True)
