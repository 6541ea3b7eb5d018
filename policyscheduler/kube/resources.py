"""``/metrics/resources``: ``kube_pod_resource_request`` and ``kube_pod_resource_limit``, as kube-scheduler
serves them (``pkg/scheduler/metrics/resources``).

Why: capacity dashboards built on kube-scheduler's endpoint read what every pod asks for in the
scheduler's own terms (init containers' maximum, pod overhead). One sample per non-terminal pod and
non-zero resource, labels ``namespace, pod, node, scheduler, priority, resource, unit``.

The pods come from ``list_pods`` at scrape time (the scheduler keeps only a compact record of bound pods,
not their specs): one LIST per scrape of this endpoint, which is scraped far less often than /metrics.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from fractions import Fraction
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from policyscheduler.quantity import parse_quantity

__all__ = ["pod_totals", "resource_registry", "unit_of"]


def unit_of(resource: str) -> str:
    """kube's ``unit`` label for a resource name."""
    if resource == "cpu":
        return "cores"
    if resource in ("memory", "storage", "ephemeral-storage") or resource.startswith("hugepages-"):
        return "bytes"
    if resource.startswith("attachable-volumes-"):
        return "integer"
    return ""


def _amounts(section: Any) -> dict[str, Fraction]:
    out: dict[str, Fraction] = {}
    if isinstance(section, Mapping):
        for name, raw in section.items():
            value = parse_quantity(str(raw))
            if value is not None:
                out[str(name)] = value
    return out


def pod_totals(pod: Mapping[str, Any], kind: str) -> dict[str, Fraction]:
    """``kind`` ("requests" or "limits") of ``pod`` as kube sums them: containers (and restartable init
    containers, the sidecars) summed, the max with each plain init container, plus the pod overhead (for
    limits, only on resources that already have one)."""
    spec = pod.get("spec") if isinstance(pod.get("spec"), Mapping) else {}
    assert isinstance(spec, Mapping)
    total: dict[str, Fraction] = {}
    for c in spec.get("containers") or ():
        for name, v in _amounts((c.get("resources") or {}).get(kind)).items():
            total[name] = total.get(name, Fraction(0)) + v
    sidecars: dict[str, Fraction] = {}
    for c in spec.get("initContainers") or ():
        amounts = _amounts((c.get("resources") or {}).get(kind))
        if c.get("restartPolicy") == "Always":
            for name, v in amounts.items():
                sidecars[name] = sidecars.get(name, Fraction(0)) + v
                total[name] = total.get(name, Fraction(0)) + v
            continue
        for name, v in amounts.items():  # a plain init container runs with the sidecars started before it
            total[name] = max(total.get(name, Fraction(0)), v + sidecars.get(name, Fraction(0)))
    for name, v in _amounts(spec.get("overhead")).items():
        if kind == "requests" or name in total:
            total[name] = total.get(name, Fraction(0)) + v
    return {name: v for name, v in total.items() if v != 0}


class _PodResources(Collector):
    def __init__(self, list_pods: Callable[[], Iterable[Mapping[str, Any]]]) -> None:
        self._list = list_pods

    def collect(self) -> Iterable[GaugeMetricFamily]:
        labels = ["namespace", "pod", "node", "scheduler", "priority", "resource", "unit"]
        families = {"requests": GaugeMetricFamily(
            "kube_pod_resource_request", "Resources requested by workloads on the cluster, broken down by pod.",
            labels=labels), "limits": GaugeMetricFamily(
            "kube_pod_resource_limit", "Resources limit for workloads on the cluster, broken down by pod.",
            labels=labels)}
        for pod in self._list():
            spec = pod.get("spec") or {}
            status = pod.get("status") or {}
            if spec.get("nodeName") and status.get("phase") in ("Succeeded", "Failed"):
                continue  # terminal pods use nothing
            meta = pod.get("metadata") or {}
            priority = "" if spec.get("priority") is None else str(int(spec["priority"]))
            for kind, family in families.items():
                for name, value in sorted(pod_totals(pod, kind).items()):
                    family.add_metric([str(meta.get("namespace") or ""), str(meta.get("name") or ""),
                                       str(spec.get("nodeName") or ""), str(spec.get("schedulerName") or ""),
                                       priority, name, unit_of(name)], float(value))
        yield families["requests"]
        yield families["limits"]


def resource_registry(list_pods: Callable[[], Iterable[Mapping[str, Any]]]) -> CollectorRegistry:
    """The registry ``/metrics/resources`` serves."""
    registry = CollectorRegistry()
    registry.register(_PodResources(list_pods))
    return registry
