"""Small builders of Kubernetes object dicts for the objects tests."""

from __future__ import annotations

from typing import Any, Protocol

import pytest


def make_node(name: str, labels: dict[str, str] | None = None, *, cpu: str = "4", memory: str = "8Gi",
              pods: str = "110", taints: list[dict[str, Any]] | None = None,
              images: list[dict[str, Any]] | None = None, unschedulable: bool = False) -> dict[str, Any]:
    all_labels = {"kubernetes.io/hostname": name}
    all_labels.update(labels or {})
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": all_labels},
        "spec": {"taints": taints or [], "unschedulable": unschedulable},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods}, "images": images or []},
    }


def make_pod(name: str, *, node: str | None = None, namespace: str = "default",
             labels: dict[str, str] | None = None, requests: dict[str, str] | None = None,
             **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "app"}
    if requests is not None:
        container["resources"] = {"requests": requests}
    body: dict[str, Any] = {"containers": [container]}
    body.update(spec)
    if node:
        body["nodeName"] = node
    return {"kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": labels or {}}, "spec": body}


class NodeFactory(Protocol):
    """The type of ``make_node``, for tests that take it as the ``node_factory`` fixture."""

    def __call__(self, name: str, labels: dict[str, str] | None = None, *, cpu: str = "4", memory: str = "8Gi",
                 pods: str = "110", taints: list[dict[str, Any]] | None = None,
                 images: list[dict[str, Any]] | None = None, unschedulable: bool = False) -> dict[str, Any]: ...


class PodFactory(Protocol):
    """The type of ``make_pod``, for tests that take it as the ``pod_factory`` fixture."""

    def __call__(self, name: str, *, node: str | None = None, namespace: str = "default",
                 labels: dict[str, str] | None = None, requests: dict[str, str] | None = None,
                 **spec: Any) -> dict[str, Any]: ...


@pytest.fixture
def node_factory() -> NodeFactory:
    return make_node


@pytest.fixture
def pod_factory() -> PodFactory:
    return make_pod
