"""What the live scheduler asks of a pod from the watch: its queue key, whose it is, whether it waits,
and what of a bound pod other pods' verdicts can see. The facts themselves are
:mod:`policyscheduler.kobjects`' (objects from the API are not trusted: a field of the wrong type reads
as absent); this module only names the live scheduler's uses of them."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from policyscheduler.cycle.events import POD_CHANGED, POD_FACETS
from policyscheduler.kobjects import DEFAULT_SCHEDULER, cache_key, is_pending, name_of, namespace_of, node_name, uid_of
from policyscheduler.kobjects import scheduler_name as scheduler_name

__all__ = ["DEFAULT_SCHEDULER", "assigned_view", "pod_queue_key", "scheduler_name", "update_facets", "waiting"]


def pod_queue_key(pod: Mapping[str, Any]) -> str:
    """The queue's key of a pod: its uid (a recreated pod is a new pod), else ``ns/name``
    (the cluster state's key, :func:`policyscheduler.kobjects.cache_key`)."""
    return cache_key(uid_of(pod), namespace_of(pod), name_of(pod))


def waiting(pod: Mapping[str, Any]) -> bool:
    """Not bound, not finished, not being deleted: a pod a scheduler may take."""
    return is_pending(pod)


def assigned_view(pod: Mapping[str, Any]) -> tuple[str | None, bytes]:
    """What of an assigned pod other pods' verdicts can see -- its node, labels and container resources --
    as (node name, digest of the labels + digest of the resources and overhead, 8 bytes each): two views
    are equal when those are (up to a 64-bit digest collision per part). The watch router keeps one per
    bound pod (150,000 at 5,000 nodes), so it holds digests rather than the watched object's labels and
    resources, which would keep those parts alive; the two parts tell a label update from a resize
    (:func:`update_facets`)."""
    meta = pod.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    spec = pod.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    raw = spec.get("containers")
    containers: list[Any] = raw if isinstance(raw, list) else []
    resources = [c.get("resources") for c in containers if isinstance(c, Mapping)]
    return node_name(pod), _digest(meta.get("labels")) + _digest([resources, spec.get("overhead")])


def update_facets(before: tuple[str | None, bytes], after: tuple[str | None, bytes]) -> frozenset[str]:
    """The node-local pod facets an ``AssignedPodUpdate`` from view ``before`` to ``after`` may have changed
    (:mod:`policyscheduler.cycle.events`): labels only -- no aggregate of the node moved, only the items of
    ``Node.pods`` -- is ``pods~``; changed resources (an in-place resize may grow one resource and shrink
    another, and the view keeps no values to compare) are every direction, as is anything odd."""
    if before[0] == after[0] and before[1][8:] == after[1][8:]:
        return frozenset({POD_CHANGED})
    return POD_FACETS


_canonical = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=repr).encode
"""``json.dumps(value, sort_keys=True, separators=(",", ":"), default=repr)`` without an encoder per call."""


def _digest(value: Any) -> bytes:
    """A digest of JSON-like data that equal values share (maps compare without their key order)."""
    try:
        text = _canonical(value)
    except (TypeError, ValueError):  # keys of mixed types, a cycle: not from the API server, still compared
        text = repr(value)
    return hashlib.blake2b(text.encode(), digest_size=8).digest()
