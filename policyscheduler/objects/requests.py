"""Pod resource requests exactly like component-helpers ``resource.PodRequests`` (v1.35).

Per resource: regular containers are summed; init containers are walked in order, sidecars
(``restartPolicy: Always``) keep running so they add to the sum *and* to every later init container's
in-use value; the result is max(sum, largest init in-use) + overhead. Pod-level ``spec.resources``
requests replace the aggregate for cpu and memory (PodLevelResources, on by default since 1.34).

The *non-zero* variant (NodeResourcesFit scoring, ``NodeInfo.NonZeroRequested``) first gives every
container -- init and sidecar containers included -- 100m cpu / 200Mi memory when the key is absent
from its requests (an explicit "0" stays 0).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction

from policyscheduler.quantity import round_resource

__all__ = ["ContainerResources", "pod_requests", "is_scalar_resource", "DEFAULT_MILLI_CPU", "DEFAULT_MEMORY"]

DEFAULT_MILLI_CPU = 100
DEFAULT_MEMORY = 200 * 1024 * 1024
_NONZERO = {"cpu": Fraction(DEFAULT_MILLI_CPU, 1000), "memory": Fraction(DEFAULT_MEMORY)}
_POD_LEVEL = ("cpu", "memory")

ContainerResources = tuple[Mapping[str, Fraction], bool]
"""(requests, is_sidecar) of one container, requests already parsed."""


def _add(into: dict[str, Fraction], more: Mapping[str, Fraction]) -> None:
    for name, value in more.items():
        into[name] = into[name] + value if name in into else value  # 0 + value is value: skip the addition


def _rounded(name: str, value: Fraction) -> Fraction:
    """:func:`round_resource`, without the arithmetic when the value is already whole (whole millicores
    for cpu): almost every request is, and Fraction arithmetic is the dearest part of building a pod."""
    if type(value) is Fraction:
        if name == "cpu":
            if 1000 % value.denominator == 0:
                return value
        elif value.denominator == 1:
            return value
    return round_resource(name, value)


def _with_defaults(reqs: Mapping[str, Fraction], defaults: Mapping[str, Fraction] | None) -> Mapping[str, Fraction]:
    if not defaults:
        return reqs
    out = dict(reqs)
    for name, value in defaults.items():
        if name not in out:
            out[name] = value
    return out


def pod_requests(
    containers: Sequence[Mapping[str, Fraction]],
    init_containers: Sequence[ContainerResources],
    overhead: Mapping[str, Fraction],
    pod_level: Mapping[str, Fraction] | None = None,
    *,
    nonzero: bool = False,
) -> dict[str, Fraction]:
    """The pod's effective requests, rounded like the scheduler reads them (cpu milli, others whole)."""
    defaults = _NONZERO if nonzero else None
    if len(containers) == 1 and not init_containers and not overhead and not pod_level:
        # One container and nothing else, the common pod: its requests are the pod's.
        return {name: _rounded(name, value) for name, value in _with_defaults(containers[0], defaults).items()}
    total: dict[str, Fraction] = {}
    for reqs in containers:
        _add(total, _with_defaults(reqs, defaults))
    sidecars: dict[str, Fraction] = {}
    init_max: dict[str, Fraction] = {}
    for reqs, is_sidecar in init_containers:
        reqs = _with_defaults(reqs, defaults)
        if is_sidecar:
            _add(total, reqs)
            _add(sidecars, reqs)
            in_use = dict(sidecars)
        else:
            in_use = dict(reqs)
            _add(in_use, sidecars)
        for name, value in in_use.items():
            if name not in init_max or value > init_max[name]:
                init_max[name] = value
    for name, value in init_max.items():
        if name not in total or value > total[name]:
            total[name] = value
    if pod_level:
        for name in _POD_LEVEL:
            if name in pod_level:
                total[name] = pod_level[name]
    _add(total, overhead)
    return {name: _rounded(name, value) for name, value in total.items()}


def is_scalar_resource(name: str) -> bool:
    """``schedutil.IsScalarResourceName``: extended, hugepages-, kubernetes.io/-prefixed or attachable volumes.

    Unqualified names like ``foo`` are none of these: kube-scheduler ignores them entirely.
    """
    if name in ("cpu", "memory", "ephemeral-storage", "pods"):
        return False
    if name.startswith("hugepages-") or name.startswith("attachable-volumes-"):
        return True
    if "kubernetes.io/" in name:
        return True  # prefixed native resource
    if "/" not in name or name.startswith("requests."):
        return False
    prefix, _, rest = name.partition("/")
    return bool(prefix) and bool(rest) and "/" not in rest
