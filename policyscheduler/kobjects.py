"""Facts about Kubernetes objects, decided once: every other module asks here.

A pod is *pending*, *placed* or *terminal*; it has a priority, a scheduler, a key, maybe scheduling
gates and a nominated node; a ``List`` holds other objects. Each of these used to be re-derived where it
was needed (the simulator's queue, the live scheduler, the cache, the snapshot), and copies that drift
apart make the simulator and the live scheduler disagree about the same pod. This module is the bottom
floor: it imports only the standard library, so every stage may import it.

The rules follow kube-scheduler v1.35 (the release the test harness builds):

* **terminal**: ``status.phase`` is ``Succeeded`` or ``Failed``. The scheduler's informers list pods with
  ``status.phase!=Succeeded,status.phase!=Failed``: a finished pod neither waits nor takes room.
* **bound**: ``spec.nodeName`` is set (``assignedPod``: a non-empty name).
* **terminating**: ``metadata.deletionTimestamp`` is set. kube-scheduler skips such a pod when it pops
  it (``skipPodSchedule``) and does not count it for topology spread or inter-pod affinity, but a bound
  one keeps its node's resources until it is gone.
* **pending** (waits for a node): not bound, not terminal, not terminating.
* **placed** (occupies its node in the cache): bound and not terminal, terminating or not.

Malformed objects never raise: a field of the wrong type reads as absent. The API server only serves
well-typed objects, so this matters for hand-written snapshots only -- with one exception to the "reads
as absent" rule, written down at :func:`is_bound`.

All functions take ``Any``: watch events, file contents and test fixtures are plain dicts, other
``Mapping`` types are accepted too, and anything else is read as an empty object.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

__all__ = [
    "DEFAULT_NAMESPACE",
    "DEFAULT_SCHEDULER",
    "TERMINAL_PHASES",
    "cache_key",
    "flatten_lists",
    "is_bound",
    "is_gated",
    "is_list_kind",
    "is_pending",
    "is_placed",
    "is_terminal",
    "is_terminating",
    "join_key",
    "list_item_kind",
    "name_of",
    "namespace_of",
    "node_name",
    "nominated_node_name",
    "object_key",
    "pod_key",
    "priority",
    "scheduler_name",
    "scheduling_gates",
    "uid_of",
]

DEFAULT_SCHEDULER = "default-scheduler"
"""What the API server fills in for a pod without ``spec.schedulerName``."""

DEFAULT_NAMESPACE = "default"
"""Where a namespaced object without ``metadata.namespace`` lives (``kubectl apply`` of such a manifest
puts it there), so offline snapshots that omit namespaces key their pods like the cluster would."""

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
"""Pod phases after which the pod never runs again (kube-scheduler's informers filter them out)."""

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _part(obj: Any, key: str) -> Mapping[str, Any]:
    """``obj[key]`` when both are mappings, else an empty mapping. ``type(...) is dict`` goes first: objects
    decoded from JSON are plain dicts, and the ABC check costs about ten times more on the watch thread."""
    if type(obj) is dict or isinstance(obj, Mapping):
        value = obj.get(key)
        if type(value) is dict or isinstance(value, Mapping):
            return value
    return _EMPTY


def _text(obj: Mapping[str, Any], key: str) -> str | None:
    """``obj[key]`` when it is a non-empty string (the API server's "unset" for strings is empty)."""
    value = obj.get(key)
    return value if type(value) is str and value else None


# -- lifecycle ---------------------------------------------------------------------------------------------


def is_terminal(pod: Any) -> bool:
    """``status.phase`` is Succeeded or Failed: the pod is done and neither waits for nor uses a node."""
    phase = _part(pod, "status").get("phase")
    return isinstance(phase, str) and phase in TERMINAL_PHASES  # a list or map phase is not hashable


def node_name(pod: Any) -> str | None:
    """``spec.nodeName`` when it is a non-empty string (the node the pod is bound to), else None."""
    return _text(_part(pod, "spec"), "nodeName")


def is_bound(pod: Any) -> bool:
    """``spec.nodeName`` is set. Unlike the other facts, a malformed value (``nodeName: 5``) counts as set:
    the pod claims a node, so it is never taken for a pending pod and scheduled a second time; the object
    model then reads the value as absent with a warning (:func:`node_name` is None)."""
    return bool(_part(pod, "spec").get("nodeName"))


def is_terminating(pod: Any) -> bool:
    """``metadata.deletionTimestamp`` is set: the pod is being deleted. kube-scheduler does not schedule
    it and does not count it for spreading and affinity; if bound it still holds its resources.
    ``null`` and ``""`` read as unset (the API server can serve neither)."""
    return bool(_part(pod, "metadata").get("deletionTimestamp"))


def is_pending(pod: Any) -> bool:
    """The pod waits for a node: not bound, not terminal, not being deleted. Scheduling gates do not change
    this (a gated pod is pending but not ready to be tried: see :func:`is_gated`). Does not check ``kind``:
    items of an API list response carry none."""
    return not is_bound(pod) and not is_terminal(pod) and not is_terminating(pod)


def is_placed(pod: Any) -> bool:
    """The pod occupies its node: bound and not terminal. A terminating pod still counts (its containers
    run until the kubelet stops them), as in kube-scheduler's cache."""
    return is_bound(pod) and not is_terminal(pod)


# -- scheduling fields ---------------------------------------------------------------------------------------


def priority(pod: Any) -> int:
    """``spec.priority``; 0 when absent (the API server's default without a PriorityClass) or malformed:
    not an integer (booleans included) or outside the 32-bit range the API server enforces."""
    value = _part(pod, "spec").get("priority")
    if type(value) is int or (isinstance(value, int) and not isinstance(value, bool)):
        return value if _INT32_MIN <= value <= _INT32_MAX else 0
    return 0


def scheduler_name(pod: Any) -> str:
    """``spec.schedulerName``; the API server fills in ``default-scheduler`` when it is absent or empty."""
    return _text(_part(pod, "spec"), "schedulerName") or DEFAULT_SCHEDULER


def scheduling_gates(pod: Any) -> tuple[str, ...]:
    """The names in ``spec.schedulingGates``, in order (an entry without a string name gives ``""``, so the
    count still says how many gates hold the pod). Empty when absent, empty or not a list."""
    gates = _part(pod, "spec").get("schedulingGates")
    if not isinstance(gates, list):
        return ()
    names: list[str] = []
    for gate in gates:
        name = gate.get("name") if isinstance(gate, Mapping) else None
        names.append(name if isinstance(name, str) else "")
    return tuple(names)


def is_gated(pod: Any) -> bool:
    """``spec.schedulingGates`` is a non-empty list: kube-scheduler's SchedulingGates PreEnqueue keeps the
    pod out of the active queue until every gate is removed (``[]`` and absent both mean "not gated")."""
    gates = _part(pod, "spec").get("schedulingGates")
    return isinstance(gates, list) and len(gates) > 0


def nominated_node_name(pod: Any) -> str | None:
    """``status.nominatedNodeName``: where preemption made room for the pod (None when unset)."""
    return _text(_part(pod, "status"), "nominatedNodeName")


# -- identity ------------------------------------------------------------------------------------------------


def name_of(obj: Any) -> str:
    """``metadata.name`` when it is a string, else ``""``."""
    value = _part(obj, "metadata").get("name")
    return value if isinstance(value, str) else ""


def namespace_of(obj: Any) -> str:
    """``metadata.namespace`` of a namespaced object; ``default`` when absent, empty or malformed."""
    return _text(_part(obj, "metadata"), "namespace") or DEFAULT_NAMESPACE


def uid_of(obj: Any) -> str:
    """``metadata.uid`` when it is a string, else ``""`` (objects written by hand have none)."""
    value = _part(obj, "metadata").get("uid")
    return value if isinstance(value, str) else ""


def join_key(namespace: str, name: str) -> str:
    """The one spelling of a namespaced object's key: ``namespace/name`` (client-go's
    ``MetaNamespaceKeyFunc``; names cannot contain ``/``, so the key is unambiguous)."""
    return f"{namespace}/{name}"


def object_key(obj: Any) -> tuple[str, str]:
    """``(namespace, name)`` of a namespaced object (namespace defaulted like :func:`namespace_of`)."""
    return namespace_of(obj), name_of(obj)


def pod_key(obj: Any) -> str:
    """``namespace/name`` of a pod: queue keys, messages, decisions."""
    return join_key(namespace_of(obj), name_of(obj))


def cache_key(uid: str, namespace: str, name: str) -> str:
    """The cluster state's key of a pod: its uid (kube-scheduler's cache keys pods by UID, so a pod deleted
    and re-created under the same name is another pod), or ``namespace/name`` when there is no uid.
    Takes the parts, not the object, so raw objects and parsed records get the same key."""
    return uid or join_key(namespace, name)


# -- lists ---------------------------------------------------------------------------------------------------


def is_list_kind(kind: Any) -> bool:
    """``List`` (what ``kubectl get -o yaml`` prints) or ``<Kind>List`` (an API list response)."""
    return isinstance(kind, str) and kind.endswith("List")


def list_item_kind(kind: Any) -> str | None:
    """The kind of the items of a typed list (``PodList`` -> ``Pod``), whose items carry no ``kind``;
    None for a plain ``List`` (its items name their kinds) or a non-list kind."""
    if not is_list_kind(kind) or kind == "List":
        return None
    item_kind: str = kind[: -len("List")]
    return item_kind


def flatten_lists(objects: Iterable[Any]) -> Iterator[Any]:
    """``objects`` with every list object replaced by its items, in order, lists inside lists included.

    A list object is a mapping whose ``kind`` is a list kind and whose ``items`` is a list (one with
    malformed ``items`` is yielded as it is, for the caller to report or skip). An item of a typed list
    that has no ``kind`` is yielded as a copy with the list's item kind (and ``apiVersion``), the way the
    API server means it; nothing is mutated. Anything that is not a list object -- non-mappings included
    -- is yielded unchanged. Iterative, so a deep nesting cannot exhaust the stack."""
    stack: list[tuple[Iterator[Any], str | None, Any]] = [(iter(objects), None, None)]
    while stack:
        items, item_kind, api_version = stack[-1]
        obj = next(items, _DONE)
        if obj is _DONE:
            stack.pop()
            continue
        if (type(obj) is dict or isinstance(obj, Mapping)) and "kind" not in obj and item_kind is not None:
            obj = {"kind": item_kind, **obj}
            if api_version is not None:
                obj.setdefault("apiVersion", api_version)
        if type(obj) is dict or isinstance(obj, Mapping):
            kind, inner = obj.get("kind"), obj.get("items")
            if is_list_kind(kind) and isinstance(inner, list):
                stack.append((iter(inner), list_item_kind(kind), obj.get("apiVersion")))
                continue
        yield obj


_DONE = object()
