"""What the lowering knows before any pod: loops over literal lists unrolled with the item known, values
folded at lowering, constant column keys, operators specialised for operands known at lowering, and the
columns one evaluation gathers once. Each case is decided by both backends (``agree``), so a fast path that
reads the wrong item, the wrong column or the wrong rows decides differently from the reference.
"""

from __future__ import annotations

from typing import Any

import pytest

from policyscheduler.evaluation.vector import backend
from tests.evaluation.policies import load
from tests.evaluation.vector.test_vector_backend import CLUSTER, PENDING, agree, node, pod

Obj = dict[str, Any]


@pytest.fixture(autouse=True)
def _vector_path_on_small_clusters(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backend, "SMALL", 0)


def _with_gpus(p: Obj, gpus: str) -> Obj:
    """``p`` requesting ``gpus`` of the extended resource example.com/gpu (a pod.scalar_resources item)."""
    p["spec"]["containers"][0]["resources"]["requests"]["example.com/gpu"] = gpus
    p["spec"]["containers"][0]["resources"]["limits"] = {"example.com/gpu": gpus}
    return p


GPU_CLUSTER = [
    *CLUSTER,
    node("n5", {"zone": "c", "app": "web"}, cpu="8", memory="16Gi", extra={"example.com/gpu": "1"}),
    pod("r5", on="n5", labels={"app": "web"}, cpu="1"),
    pod("r6", on="n3", labels={"app": "db"}, memory="1Gi"),
]
GPU_PENDING = [
    *PENDING,
    _with_gpus(pod("g1", labels={"app": "web", "zone": "c"}, cpu="1", memory="1Gi"), "2"),
    _with_gpus(pod("g2", labels={"app": "db"}, cpu="100m"), "1"),
]


def test_a_loop_over_a_literal_list_then_a_pod_list_numbers_the_pod_items_after_the_literal_ones() -> None:
    """``["cpu", "memory"] + pod.scalar_resources``: the literal items are unrolled at lowering, the pod's
    follow with their index counted on from the literal ones (restarting at 0 would change the reasons)."""
    agree(load('''
filter fit_indexed
  reject each [
    "item " + str(i) + ": " + r
    for i, r in ["cpu", "memory"] + pod.scalar_resources
    where pod.requests[r] > node.allocatable[r] - node.requested[r] or i >= 2
  ]
score indexed weight 1 normalize minmax
  value sum(i, r in ["cpu", "memory", "pods"] + pod.scalar_resources: (i + 1) * trunc(node.allocatable[r] * 10))
'''), GPU_CLUSTER, GPU_PENDING)


def test_loops_reusing_the_literal_loops_name_read_their_own_items() -> None:
    """The literal loop's ``r`` is known only while its own body is lowered: a later loop binding ``r``
    over a pod-level map, and a literal loop nested in a per-pod loop, read their own items (folding the
    literal item into ``len(r)`` or ``r in node.labels`` there would decide differently)."""
    agree(load('''
score reused weight 1 normalize minmax
  value sum(r in ["zone", "team"]: if r in node.labels then 100 else 0)
    + count(r in pod.labels where r in node.labels)
    + sum(r in pod.labels: len(r) * count(k in ["zone", "app"] where k == r and k in node.labels))
filter reused_names
  reason "reused"
  require all k in ["app", "zone"]: (any j in pod.labels: j == k and j in node.labels) or k == "zone"
'''), GPU_CLUSTER, GPU_PENDING)


def test_a_literal_loop_whose_pod_level_parts_fold_and_whose_keys_are_constant() -> None:
    """Per item: a reason string folded at lowering, a map read with the item as its (constant) key on
    the node, on a node's pod and in a pod-level map, and a comparison with a literal."""
    agree(load('''
filter labelled
  reject each ["missing " + k + " (" + str(len(k)) + ")" for k in ["zone", "team", "app"]
    where not (k in node.labels) and k in pod.labels]
score pods_like_me weight 1 normalize minmax
  value sum(k in ["app", "zone"]: count(p in node.pods where p.labels[k] == pod.labels[k] and p.labels[k] != ""))
    + sum(k in ["zone", "team"]: if node.labels[k] == pod.labels[k] then 10 else 0)
'''), GPU_CLUSTER, GPU_PENDING)


def test_the_same_column_key_on_the_node_and_on_its_pods_is_two_columns() -> None:
    """``p.labels["app"]`` and ``node.labels["app"]`` (and ``p.name`` / ``node.name``) have the same column
    key on different records: the per-evaluation gather cache must keep them apart."""
    agree(load('''
score same_key weight 1 normalize minmax
  value count(p in node.pods where p.labels["app"] == node.labels["app"])
    + 10 * count(p in node.pods where p.name < node.name)
    + (if node.labels["app"] == "web" then 100 else 0)
'''), GPU_CLUSTER, GPU_PENDING)


def test_operators_with_an_operand_known_at_lowering_on_either_side() -> None:
    """Quantity and int operators whose left or right operand is a literal (converted once, at lowering),
    including a division by a literal, a literal minus a column and int overflow next to a literal."""
    agree(load('''
score q_left weight 1 normalize minmax
  value trunc((3 - node.allocatable["cpu"]) * 1000 / (64Gi - node.allocatable["memory"] + 1))
    + trunc(2Gi / (node.allocatable["memory"] + 1) * 100) - trunc(node.allocatable["cpu"] / 3 * 7)
score int_left weight 1 normalize minmax
  value 100 - node.pod_count * 7 + (5 + node.pod_count) * (node.pod_count - 2)
score int_overflow weight 1 normalize minmax
  value 4611686018427387904 + node.pod_count * 4611686018427387904 - 3 * node.pod_count
score float_promoted weight 1 normalize minmax
  value trunc(float(node.allocatable["cpu"]) * 2 + 3 / float(node.pod_count + 1))
'''), GPU_CLUSTER, GPU_PENDING)


def test_pod_level_values_are_kept_per_pod_and_per_expression() -> None:
    """Several pod-level parts of one type in one rule (two ints, two quantities, one per literal-list
    item), the same pod-level expression in two rules, and pods of different requests one after the
    other: each part has its own pod's value (a cache of pod-level values keyed too coarsely, or kept
    across pods, decides differently)."""
    agree(load('''
score per_pod weight 1 normalize minmax
  value node.pod_count * trunc(pod.requests["cpu"] * 1000) + 7 * node.pod_count * trunc(pod.requests["memory"] / 1Mi)
    + sum(r in ["cpu", "memory"]: trunc(node.allocatable[r] / (pod.nonzero_requests[r] + 1)))
filter per_pod_fit
  reason "no room"
  require node.allocatable["cpu"] - node.requested["cpu"] >= pod.requests["cpu"]
    or node.allocatable["memory"] - node.requested["memory"] >= pod.requests["memory"] * 64
'''), GPU_CLUSTER, GPU_PENDING)
