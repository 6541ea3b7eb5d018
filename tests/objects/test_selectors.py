"""Label selectors and node affinity operators, per apimachinery semantics."""

from typing import Any

import pytest

from policyscheduler.objects.records import Node, Pod
from policyscheduler.objects.selectors import compile_label_selector
from policyscheduler.state import ClusterSnapshot


@pytest.mark.parametrize(
    "selector, labels, ok",
    [
        ({}, {"a": "1"}, True),  # empty selector = everything
        ({"matchLabels": {"a": "1"}}, {"a": "1", "b": "2"}, True),
        ({"matchLabels": {"a": "1"}}, {"a": "2"}, False),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]}, {"a": "2"}, True),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}]}, {}, False),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {}, True),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {"a": "1"}, False),
        ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"a": ""}, True),
        ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"a": ""}, False),
        ({"matchLabels": {"a": "1"}, "matchExpressions": [{"key": "b", "operator": "Exists"}]}, {"a": "1"}, False),
    ],
)
def test_label_selector(selector: dict[str, Any], labels: dict[str, str], ok: bool) -> None:
    sel, problem = compile_label_selector(selector)
    assert problem is None and sel is not None
    assert sel.matches(labels) is ok


@pytest.mark.parametrize(
    "bad",
    [
        {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
        {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},  # Gt is node-only
        {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
        {"matchLabels": "a=1"},
    ],
)
def test_invalid_label_selector_matches_nothing(bad: dict[str, Any]) -> None:
    sel, problem = compile_label_selector(bad)
    assert sel is None and problem


def test_nil_selector_is_nothing() -> None:
    assert compile_label_selector(None) == (None, None)


def _node(snap_objs: None, name: str, labels: dict[str, str]) -> tuple[ClusterSnapshot, Node]:
    snap = ClusterSnapshot.from_objects([{"kind": "Node", "metadata": {"name": name, "labels": labels}}])
    return snap, snap.nodes[0]


def _pod(snap: ClusterSnapshot, terms: list[dict[str, Any]] | None = None,
         node_selector: dict[str, str] | None = None) -> Pod:
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if terms is not None:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    return snap.pod_record({"kind": "Pod", "metadata": {"name": "p"}, "spec": spec})


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": op}
    if values:
        out["values"] = list(values)
    return out


@pytest.mark.parametrize(
    "labels, terms, ok",
    [
        ({"gen": "5"}, [{"matchExpressions": [expr("gen", "Gt", "4")]}], True),
        ({"gen": "4"}, [{"matchExpressions": [expr("gen", "Gt", "4")]}], False),
        ({"gen": "3"}, [{"matchExpressions": [expr("gen", "Lt", "4")]}], True),
        ({"gen": "x"}, [{"matchExpressions": [expr("gen", "Lt", "4")]}], False),  # unparsable label
        ({}, [{"matchExpressions": [expr("gen", "Lt", "4")]}], False),  # absent label
        ({"gen": "-2"}, [{"matchExpressions": [expr("gen", "Lt", "-1")]}], True),
        ({}, [{"matchExpressions": [expr("disk", "NotIn", "hdd")]}], True),  # NotIn with absent label
        ({"disk": "hdd"}, [{"matchExpressions": [expr("disk", "NotIn", "hdd")]}], False),
        ({}, [{"matchExpressions": [expr("disk", "DoesNotExist")]}], True),
        ({"disk": "ssd"}, [{"matchExpressions": [expr("disk", "Exists")]}], True),
        # terms are ORed, expressions inside a term ANDed
        ({"a": "1"}, [{"matchExpressions": [expr("a", "In", "2")]}, {"matchExpressions": [expr("a", "In", "1")]}], True),
        ({"a": "1"}, [{"matchExpressions": [expr("a", "In", "1"), expr("b", "Exists")]}], False),
        ({"a": "1"}, [{}], False),  # empty term matches nothing
        ({"a": "1"}, [], False),  # no terms match nothing
        # a malformed term matches nothing but the others still count
        ({"a": "1"}, [{"matchExpressions": [expr("a", "Gt", "x")]}, {"matchExpressions": [expr("a", "Exists")]}], True),
        ({"a": "1"}, [{"matchFields": [expr("metadata.name", "In", "n1")]}], True),
        ({"a": "1"}, [{"matchFields": [expr("metadata.name", "NotIn", "n1")]}], False),
        ({"a": "1"}, [{"matchFields": [expr("metadata.name", "In", "n1", "n2")]}], False),  # one value only
    ],
)
def test_node_affinity_terms(labels: dict[str, str], terms: list[dict[str, Any]], ok: bool) -> None:
    snap, node = _node(None, "n1", labels)
    pod = _pod(snap, terms)
    assert pod.matches_node_affinity(node) is ok


def test_node_selector_and_affinity_both_required() -> None:
    snap, node = _node(None, "n1", {"a": "1", "b": "2"})
    assert _pod(snap, None, {"a": "1"}).matches_node_affinity(node)
    assert not _pod(snap, None, {"a": "2"}).matches_node_affinity(node)
    assert not _pod(snap, None, {"c": ""}).matches_node_affinity(node)  # absent key never equals ""
    assert not _pod(snap, [{"matchExpressions": [expr("b", "In", "3")]}], {"a": "1"}).matches_node_affinity(node)


def test_pinned_node_names() -> None:
    snap, _ = _node(None, "n1", {})
    pod = _pod(snap, [{"matchFields": [expr("metadata.name", "In", "n1", "n2")]},
                      {"matchFields": [expr("metadata.name", "In", "n3")]}])
    assert pod.pins_node_names and pod.pinned_node_names == ("n1", "n2", "n3")
    mixed = _pod(snap, [{"matchFields": [expr("metadata.name", "In", "n1")]}, {"matchExpressions": [expr("a", "Exists")]}])
    assert not mixed.pins_node_names
    conflict = _pod(snap, [{"matchFields": [expr("metadata.name", "In", "n1"), expr("metadata.name", "In", "n2")]}])
    assert conflict.pins_node_names and conflict.pinned_node_names == ()
