"""The reversed chain of required pod affinities (issue 12): pod i needs pod i+1 on the same node's zone,
queued first to last, so each pod can only be placed after the one queued after it."""

from __future__ import annotations

from typing import Any


def chain_objects(pods: int = 200, nodes: int = 20) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = []
    for n in range(nodes):
        objs.append({"apiVersion": "v1", "kind": "Node",
                     "metadata": {"name": f"n{n:02d}", "labels": {"kubernetes.io/hostname": f"n{n:02d}",
                                                                  "topology.kubernetes.io/zone": f"z{n % 3}"}},
                     "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"}}})
    for i in range(pods):
        spec: dict[str, Any] = {"schedulerName": "policy-scheduler",
                                "containers": [{"name": "c", "image": "app",
                                                "resources": {"requests": {"cpu": "10m"}}}]}
        if i + 1 < pods:
            spec["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"link": str(i + 1)}},
                 "topologyKey": "topology.kubernetes.io/zone"}]}}
        objs.append({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": f"p{i:03d}", "namespace": "default", "labels": {"link": str(i)},
                                  "creationTimestamp": f"2024-01-01T00:{i // 60:02d}:{i % 60:02d}Z"},
                     "spec": spec})
    return objs
