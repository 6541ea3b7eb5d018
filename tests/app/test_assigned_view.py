"""What an assigned-pod event compares (app/pods.py ``assigned_view``): node, labels, container resources
and overhead, key order ignored; anything else about the pod does not count."""

from __future__ import annotations

import copy
from typing import Any

from policyscheduler.app.pods import assigned_view

POD: dict[str, Any] = {
    "metadata": {"name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "7",
                 "labels": {"app": "web", "tier": "front", "zone": "a"}},
    "spec": {"nodeName": "n1", "overhead": {"cpu": "10m"},
             "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                                                                      "limits": {"memory": "2Gi"}}}]},
}


def _changed(edit: Any) -> dict[str, Any]:
    pod = copy.deepcopy(POD)
    edit(pod)
    return pod


def test_the_same_facts_in_another_key_order_are_the_same_view() -> None:
    reordered = _changed(lambda p: p["metadata"].update(labels={"zone": "a", "tier": "front", "app": "web"}))
    reordered["spec"]["containers"][0]["resources"] = {"limits": {"memory": "2Gi"},
                                                       "requests": {"memory": "1Gi", "cpu": "1"}}
    assert assigned_view(reordered) == assigned_view(POD)
    assert assigned_view(_changed(lambda p: p["metadata"].update(resourceVersion="8"))) == assigned_view(POD)
    assert assigned_view(_changed(lambda p: p.setdefault("status", {}).update(phase="Running"))) == assigned_view(POD)


def test_node_labels_resources_and_overhead_each_count() -> None:
    base = assigned_view(POD)
    assert assigned_view(POD)[0] == "n1"
    for edit in (lambda p: p["spec"].update(nodeName="n2"),
                 lambda p: p["metadata"]["labels"].update(app="api"),
                 lambda p: p["metadata"]["labels"].pop("zone"),
                 lambda p: p["spec"]["containers"][0]["resources"]["requests"].update(cpu="2"),
                 lambda p: p["spec"].update(overhead={"cpu": "20m"})):
        assert assigned_view(_changed(edit)) != base


def test_values_json_cannot_encode_still_give_a_view() -> None:
    odd = _changed(lambda p: p["metadata"].update(labels={1: "x", "a": "y"}))  # keys of mixed types
    assert assigned_view(odd) == assigned_view(copy.deepcopy(odd))
    assert assigned_view(_changed(lambda p: p["spec"].update(overhead={"cpu": {1, 2}}))) != assigned_view(POD)
