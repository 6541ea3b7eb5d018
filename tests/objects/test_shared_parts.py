"""Pod records of one template share their maps and strings (memory: the state keeps a record per
running pod), and sharing never merges pods that differ."""

from __future__ import annotations

from typing import Any

from policyscheduler.objects.builders import build_pod
from tests.objects.conftest import make_pod


def _replica(name: str, cpu: str = "250m", app: str = "web") -> dict[str, Any]:
    obj = make_pod(name, labels={"app": app, "pod-template-hash": "abc"}, requests={"cpu": cpu, "memory": "1Gi"})
    # a fresh copy of every string, as json.loads gives each object its own
    obj["metadata"]["labels"] = {"".join(k): "".join(v) for k, v in obj["metadata"]["labels"].items()}
    obj["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                           "name": "".join(["web-", "abc"]), "controller": True}]
    return obj


def test_replicas_share_labels_requests_and_owner() -> None:
    a, b = build_pod(_replica("a"), []), build_pod(_replica("b"), [])
    assert a.labels is b.labels and a.requests is b.requests and a.nonzero_requests is b.nonzero_requests
    assert a._owner is b._owner and a._owner == ("apps/v1", "ReplicaSet", "web-abc")
    assert all(x is y for x, y in zip(a.labels.values(), b.labels.values()))
    assert a.name != b.name


def test_pods_that_differ_keep_their_own_maps() -> None:
    a = build_pod(_replica("a"), [])
    c = build_pod(_replica("c", cpu="500m"), [])
    d = build_pod(_replica("d", app="db"), [])
    assert c.requests is not a.requests and c.requests["cpu"] * 2 == 1 and a.requests["cpu"] * 4 == 1
    assert d.labels is not a.labels and d.labels["app"] == "db" and a.labels["app"] == "web"
    assert d.requests is a.requests  # same requests, other labels: only what is equal is shared
