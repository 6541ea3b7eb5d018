"""``TermIndex.remember`` files a pod's terms under the read key of the kind's reads *at that moment*,
not those of the ``recall`` that missed just before it.

A term that joins between the two names a label value no term named before, so a key made at the recall
(value "not named" -> 0) would file the pod's terms under every pod carrying some other unnamed value:
those pods would then recall a term they do not match.
"""
from __future__ import annotations

from typing import Any

from policyscheduler.state import ClusterSnapshot
from policyscheduler.state.indexes import TermIndex

Obj = dict[str, Any]
HOST = "kubernetes.io/hostname"


def _node(name: str) -> Obj:
    return {"kind": "Node", "metadata": {"name": name, "labels": {HOST: name}},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}


def _anti(name: str, node: str, app: str) -> Obj:
    term = {"topologyKey": HOST, "labelSelector": {"matchLabels": {"app": app}}}
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "labels": {}},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "img"}],
                     "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}}


def test_remember_after_a_term_joined_files_under_the_new_reads() -> None:
    snap = ClusterSnapshot.from_objects([_node("n0"), _node("n1")])
    first, second = snap.pod_record(_anti("p1", "n0", "a")), snap.pod_record(_anti("p2", "n1", "b"))
    index = TermIndex()
    index.pod_changed(0, first, 1)
    labels = {"app": "b"}
    assert index.recall(0, labels, "default") is None  # "b" is named by no term yet: it reads as 0
    index.pod_changed(1, second, 1)  # now "b" is named
    term_b = second.required_anti_affinity_terms[0]
    index.remember(0, labels, "default", frozenset({term_b}))
    assert index.recall(0, {"app": "c"}, "default") is None  # reads as 0, matches no term: not recalled
    found = index.recall(0, labels, "default")
    assert found is not None and found[0] == frozenset({term_b})


def test_remember_without_a_change_recalls_for_the_same_labels_only() -> None:
    snap = ClusterSnapshot.from_objects([_node("n0")])
    first = snap.pod_record(_anti("p1", "n0", "a"))
    index = TermIndex()
    index.pod_changed(0, first, 1)
    term_a = first.required_anti_affinity_terms[0]
    labels = {"app": "a"}
    assert index.recall(0, labels, "default") is None
    index.remember(0, labels, "default", frozenset({term_a}))
    found = index.recall(0, dict(labels), "default")  # another object with the same labels
    assert found is not None and found[0] == frozenset({term_a})
    assert index.recall(0, {"app": "a"}, "other") is None  # another namespace: its own key
    assert index.recall(1, labels, "default") is None  # another kind: nothing remembered
