"""What the live scheduler asks of a pod from the watch: its queue key, whose it is, whether it waits,
and what of a bound pod other pods' verdicts can see. Objects from the API are not trusted: a field of
the wrong type reads as absent."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policyscheduler.cycle.cache import node_name_of

__all__ = ["DEFAULT_SCHEDULER", "assigned_view", "pod_queue_key", "scheduler_name", "spec_of", "waiting"]

DEFAULT_SCHEDULER = "default-scheduler"


def _sub(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``obj[key]`` when it is a mapping, else an empty one."""
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}


def spec_of(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    """``spec`` (empty when it is not a mapping)."""
    return _sub(pod, "spec")


def pod_queue_key(pod: Mapping[str, Any]) -> str:
    """The queue's key of a pod: its uid (a recreated pod is a new pod), else ``ns/name``."""
    meta = _sub(pod, "metadata")
    uid = meta.get("uid")
    return uid if isinstance(uid, str) and uid else f"{meta.get('namespace')}/{meta.get('name')}"


def scheduler_name(pod: Mapping[str, Any]) -> Any:
    """``spec.schedulerName`` (absent means ``default-scheduler``)."""
    spec = pod.get("spec")
    if type(spec) is not dict:  # the usual dict without the ABC check (twice per pod)
        spec = spec_of(pod)
    return spec.get("schedulerName") or DEFAULT_SCHEDULER


def waiting(pod: Mapping[str, Any]) -> bool:
    """Not bound, not finished, not being deleted: a pod a scheduler may take."""
    meta = _sub(pod, "metadata")
    status = _sub(pod, "status")
    return (node_name_of(pod) is None and status.get("phase") not in ("Succeeded", "Failed")
            and not meta.get("deletionTimestamp"))


def assigned_view(pod: Mapping[str, Any]) -> tuple[Any, ...]:
    """What of an assigned pod other pods' verdicts can see: its node, labels and container resources."""
    meta = _sub(pod, "metadata")
    spec = spec_of(pod)
    raw = spec.get("containers")
    containers: list[Any] = raw if isinstance(raw, list) else []
    resources = [c.get("resources") for c in containers if isinstance(c, Mapping)]
    return (node_name_of(pod), meta.get("labels"), resources, spec.get("overhead"))
