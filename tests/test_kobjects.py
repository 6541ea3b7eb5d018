"""The object facts of :mod:`policyscheduler.kobjects`, on real pod dicts and their edge cases."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from policyscheduler import kobjects as k


def pod(name: str = "p", *, namespace: str | None = "ns", node: Any = None, phase: str | None = None,
        deleting: Any = None, **spec: Any) -> dict[str, Any]:
    """A pod as ``kubectl get pod -o json`` shows it (trimmed to what the facts read)."""
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}", "resourceVersion": "7"}
    if namespace is not None:
        meta["namespace"] = namespace
    if deleting is not None:
        meta["deletionTimestamp"] = deleting
    body: dict[str, Any] = {"containers": [{"name": "c", "image": "pause"}], **spec}
    if node is not None:
        body["nodeName"] = node
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body}
    if phase is not None:
        obj["status"] = {"phase": phase}
    return obj


class Frozen(Mapping[str, Any]):
    """A read-only mapping that is not a dict (the facts must not depend on ``dict``)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = {key: Frozen(v) if isinstance(v, dict) else v for key, v in data.items()}

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


# -- lifecycle ----------------------------------------------------------------------------------------------

LIFECYCLE = [
    # (pod, pending, placed, terminal, terminating)
    (pod(), True, False, False, False),
    (pod(phase="Pending"), True, False, False, False),
    (pod(node="n1", phase="Running"), False, True, False, False),
    (pod(node="n1", phase="Succeeded"), False, False, True, False),
    (pod(node="n1", phase="Failed"), False, False, True, False),
    (pod(phase="Failed"), False, False, True, False),  # evicted before binding: done, not waiting
    (pod(node="n1", deleting="2026-01-01T00:00:00Z"), False, True, False, True),  # still holds its node
    (pod(deleting="2026-01-01T00:00:00Z"), False, False, False, True),  # never scheduled once deleting
    (pod(node=""), True, False, False, False),  # empty nodeName: not bound
    (pod(deleting=""), True, False, False, False),  # "" is not a time: unset
    (pod(node="n1", phase="Unknown"), False, True, False, False),
]


@pytest.mark.parametrize(("obj", "pending", "placed", "terminal", "terminating"), LIFECYCLE)
def test_lifecycle(obj: dict[str, Any], pending: bool, placed: bool, terminal: bool, terminating: bool) -> None:
    for view in (obj, Frozen(obj)):
        assert (k.is_pending(view), k.is_placed(view), k.is_terminal(view), k.is_terminating(view)) == \
            (pending, placed, terminal, terminating)


def test_bound_node_name() -> None:
    assert k.node_name(pod(node="n1")) == "n1"
    assert k.node_name(pod()) is None
    assert k.node_name(pod(node="")) is None
    # A malformed nodeName still claims a node: never pending, never a readable name.
    odd = pod(node=5)
    assert k.is_bound(odd) and k.node_name(odd) is None and not k.is_pending(odd) and k.is_placed(odd)


@pytest.mark.parametrize("junk", [None, 3, "pod", [], {"spec": "x", "status": 7, "metadata": []},
                                  {"spec": {"nodeName": None}, "status": {"phase": ["Failed"]}, "metadata": {"name": {}}}])
def test_malformed_objects_read_as_empty(junk: Any) -> None:
    assert k.is_pending(junk) and not k.is_placed(junk) and not k.is_terminal(junk)
    assert k.priority(junk) == 0 and k.scheduler_name(junk) == "default-scheduler"
    assert k.pod_key(junk) == "default/" and k.scheduling_gates(junk) == () and not k.is_gated(junk)
    assert k.nominated_node_name(junk) is None and k.node_name(junk) is None


# -- scheduling fields ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "expected"), [
    (100, 100), (-5, -5), (0, 0), (2**31 - 1, 2**31 - 1), (-(2**31), -(2**31)),
    (2**31, 0), (True, 0), ("10", 0), (1.5, 0), (None, 0),
])
def test_priority(value: Any, expected: int) -> None:
    assert k.priority(pod(priority=value)) == expected


def test_priority_absent_is_zero() -> None:
    obj = pod()
    assert "priority" not in obj["spec"] and k.priority(obj) == 0
    assert k.priority({"kind": "Pod"}) == 0


def test_scheduler_name() -> None:
    assert k.scheduler_name(pod(schedulerName="policy-scheduler")) == "policy-scheduler"
    assert k.scheduler_name(pod()) == k.DEFAULT_SCHEDULER == "default-scheduler"
    assert k.scheduler_name(pod(schedulerName="")) == "default-scheduler"
    assert k.scheduler_name(pod(schedulerName=7)) == "default-scheduler"


def test_scheduling_gates_empty_list_and_absent_mean_not_gated() -> None:
    assert not k.is_gated(pod()) and k.scheduling_gates(pod()) == ()
    assert not k.is_gated(pod(schedulingGates=[])) and k.scheduling_gates(pod(schedulingGates=[])) == ()
    assert not k.is_gated(pod(schedulingGates=None))
    assert not k.is_gated(pod(schedulingGates="example.com/wait"))  # not a list: the API server refuses it


def test_scheduling_gates_names_in_order() -> None:
    gated = pod(schedulingGates=[{"name": "example.com/quota"}, {"name": "example.com/volume"}])
    assert k.is_gated(gated) and k.is_pending(gated)  # gated pods are pending, just not ready to try
    assert k.scheduling_gates(gated) == ("example.com/quota", "example.com/volume")
    odd = pod(schedulingGates=[{"name": 3}, "x"])
    assert k.is_gated(odd) and k.scheduling_gates(odd) == ("", "")


def test_nominated_node_name() -> None:
    nominated = pod()
    nominated["status"] = {"phase": "Pending", "nominatedNodeName": "n3"}
    assert k.nominated_node_name(nominated) == "n3"
    assert k.nominated_node_name(pod(phase="Pending")) is None
    nominated["status"]["nominatedNodeName"] = ""
    assert k.nominated_node_name(nominated) is None


# -- identity ----------------------------------------------------------------------------------------------


def test_keys() -> None:
    obj = pod("web-1", namespace="shop")
    assert k.pod_key(obj) == "shop/web-1" and k.object_key(obj) == ("shop", "web-1")
    assert k.pod_key(pod("web-1", namespace=None)) == "default/web-1"  # no namespace: the default one
    assert k.pod_key(pod("web-1", namespace="")) == "default/web-1"
    assert k.namespace_of({"metadata": {"namespace": 5, "name": "x"}}) == "default"
    assert k.name_of({"metadata": {"name": 5}}) == ""
    assert k.join_key("a", "b") == "a/b"


def test_cache_key_prefers_the_uid() -> None:
    obj = pod("web-1", namespace="shop")
    assert k.cache_key(k.uid_of(obj), k.namespace_of(obj), k.name_of(obj)) == "uid-web-1"
    del obj["metadata"]["uid"]
    assert k.uid_of(obj) == ""
    assert k.cache_key(k.uid_of(obj), k.namespace_of(obj), k.name_of(obj)) == "shop/web-1"


# -- lists -----------------------------------------------------------------------------------------------


def test_list_kinds() -> None:
    assert k.is_list_kind("List") and k.is_list_kind("PodList") and not k.is_list_kind("Pod")
    assert not k.is_list_kind(None) and not k.is_list_kind(["List"])
    assert k.list_item_kind("PodList") == "Pod" and k.list_item_kind("List") is None
    assert k.list_item_kind("Pod") is None


def test_flatten_plain_objects_pass_through() -> None:
    objs = [pod("a"), {"kind": "Node", "metadata": {"name": "n"}}, 7, None]
    assert list(k.flatten_lists(objs)) == objs


def test_flatten_kubectl_list_keeps_order() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    listed = {"apiVersion": "v1", "kind": "List", "items": [node, pod("a"), pod("b")]}
    got = list(k.flatten_lists([pod("first"), listed, pod("last")]))
    assert [o["metadata"]["name"] for o in got] == ["first", "n1", "a", "b", "last"]


def test_flatten_typed_list_gives_items_their_kind_without_mutating() -> None:
    bare = {"metadata": {"name": "a"}, "spec": {}}
    response = {"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "9"}, "items": [bare]}
    before = copy.deepcopy(response)
    (item,) = k.flatten_lists([response])
    assert item == {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "a"}, "spec": {}}
    assert response == before  # the input is untouched
    kinded = {"kind": "Pod", "apiVersion": "v2", "metadata": {"name": "b"}}
    (same,) = k.flatten_lists([{"apiVersion": "v1", "kind": "PodList", "items": [kinded]}])
    assert same is kinded  # an item that names its kind is yielded as it is


def test_flatten_list_of_lists() -> None:
    inner = {"kind": "NodeList", "apiVersion": "v1", "items": [{"metadata": {"name": "n1"}}]}
    pods = {"kind": "List", "items": [pod("a"), {"kind": "List", "items": [pod("b")]}]}
    outer = {"kind": "List", "items": [inner, pods, {"kind": "List", "items": []}]}
    got = list(k.flatten_lists([outer]))
    assert [(o["kind"], o["metadata"]["name"]) for o in got] == [("Node", "n1"), ("Pod", "a"), ("Pod", "b")]


def test_flatten_deep_nesting_does_not_recurse() -> None:
    nested: dict[str, Any] = {"kind": "List", "items": [pod("deep")]}
    for _ in range(5000):
        nested = {"kind": "List", "items": [nested]}
    assert [o["metadata"]["name"] for o in k.flatten_lists([nested])] == ["deep"]


def test_flatten_malformed_lists_are_yielded_whole() -> None:
    bad = {"kind": "List", "items": "not a list"}
    assert list(k.flatten_lists([bad])) == [bad]
    assert list(k.flatten_lists([{"kind": "PodList"}])) == [{"kind": "PodList"}]
    frozen = Frozen({"kind": "List", "items": [pod("x")]})
    assert [o["metadata"]["name"] for o in k.flatten_lists([frozen])] == ["x"]
