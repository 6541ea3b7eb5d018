"""The node-affinity mask from label codes equals the per-node check on every node.

Spreading's nodeAffinityPolicy Honor (and the domain primitives' ``honor_node_affinity``) need, per pod,
which nodes its node selector and required node affinity allow. With the state's label codes that is
computed per distinct label value; here it is compared with ``pod_matches_required_node_affinity`` on
every node, for node selectors and terms over every operator, keys some nodes lack, integer and
non-integer values, empty and invalid terms, and after node label changes.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from policyscheduler.objects import topology
from policyscheduler.objects.records import SpreadConstraint, pod_matches_required_node_affinity
from policyscheduler.state import ClusterSnapshot

Obj = dict[str, Any]
KEYS = ("zone", "rack", "size", "gpu")
VALUES = ("a", "b", "", "3", "10", "-2")


def _node(rng: random.Random, name: str) -> Obj:
    labels = {"kubernetes.io/hostname": name}
    for key in KEYS:
        if rng.random() < 0.7:
            labels[key] = rng.choice(VALUES)
    return {"kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}


def _expr(rng: random.Random) -> Obj:
    op = rng.choice(("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"))
    expr: Obj = {"key": rng.choice(KEYS), "operator": op}
    if op in ("In", "NotIn"):
        expr["values"] = rng.sample(VALUES, rng.randint(1, 3))
    elif op in ("Gt", "Lt"):
        expr["values"] = [rng.choice(("0", "3", "5", "x"))]  # "x": kube rejects the term
    return expr


def _pod(rng: random.Random, name: str) -> Obj:
    spec: Obj = {"containers": [{"name": "c", "image": "img"}]}
    if rng.random() < 0.4:
        spec["nodeSelector"] = {rng.choice(KEYS): rng.choice(VALUES + ("zz",))}
    if rng.random() < 0.8:
        terms = []
        for _ in range(rng.randint(1, 3)):
            term: Obj = {}
            if rng.random() < 0.9:
                term["matchExpressions"] = [_expr(rng) for _ in range(rng.randint(0, 3))]
            terms.append(term)
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": terms}}}
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": name}, "spec": spec}


@pytest.mark.parametrize("seed", range(8))
def test_the_mask_from_label_codes_equals_the_per_node_check(seed: int) -> None:
    rng = random.Random(seed)
    snap = ClusterSnapshot.from_objects([_node(rng, f"n{i}") for i in range(30)])
    compared = 0
    for step in range(40):
        if step % 10 == 9:  # labels move: the codes are rebuilt
            snap.update_node(_node(rng, f"n{rng.randrange(30)}"))
        pod = snap.pod_record(_pod(rng, f"p{step}"))
        nodes = snap.nodes
        got = topology.node_affinity_mask(pod, len(nodes), snap.state.label_codes)
        assert got is not None
        want = [pod_matches_required_node_affinity(pod, node) for node in nodes]
        assert got.tolist() == want, (seed, step)
        honor = SpreadConstraint(1, "zone", "ScheduleAnyway", 1, "Honor", "Ignore", [], None)
        assert snap.context(pod)._state.included(honor).tolist() == want, (seed, step)  # as a context uses it
        compared += 0 < sum(want) < len(want)
    assert compared > 10  # masks that separate nodes, not only all or nothing


def test_a_term_on_node_names_is_left_to_the_per_node_check() -> None:
    snap = ClusterSnapshot.from_objects([_node(random.Random(0), f"n{i}") for i in range(3)])
    pod = snap.pod_record({"kind": "Pod", "metadata": {"name": "p", "namespace": "default", "uid": "p"}, "spec": {
        "containers": [{"name": "c", "image": "img"}],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}}}})
    assert topology.node_affinity_mask(pod, 3, snap.state.label_codes) is None
    context = snap.context(pod)._state  # through a context: the per-node path gives the mask
    honor = SpreadConstraint(1, "zone", "ScheduleAnyway", 1, "Honor", "Ignore", [], None)
    assert context.included(honor).tolist() == [False, True, False]
    assert np.array_equal(context.included(honor), [pod_matches_required_node_affinity(pod, n) for n in snap.nodes])
