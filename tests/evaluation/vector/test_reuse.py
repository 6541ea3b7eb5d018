"""The equivalence cache (vector/reuse.py): reused results are the reference's, through every kind of change.

One long-lived evaluator per backend, one snapshot each, many pods of few shapes (so entries hit), and
between pods: assumes, node updates (labels, taints, allocatable, images), nodes added and removed,
pods deleted. Every decision must equal the reference's, and the cache must actually have been used.
"""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any

import pytest

from policyscheduler.evaluation import diff_decisions, make_evaluator
from policyscheduler.evaluation.vector.reuse import ALL_FIELDS, freeze, pod_fields
from policyscheduler.state import ClusterSnapshot
from tests.evaluation.policies import default_policies, load
from tests.evaluation.vector.test_vector_backend import node, pod

Obj = dict[str, Any]

USER = '''
filter density
  reason "crowded"
  require count(p in node.pods where p.labels["app"] == pod.labels["app"]) < 3
filter fits
  reject each ["short of " + r for r in ["cpu", "memory"]
    where pod.requests[r] > node.allocatable[r] - node.requested[r]]
score free weight 2 normalize scale
  value trunc((node.allocatable["memory"] - node.requested["memory"]) / 1Mi)
score per_core weight 1 normalize minmax
  value trunc(node.requested["cpu"] * 1000 / node.allocatable["cpu"])
score same_zone weight 1 normalize none
  value if node.labels["zone"] == pod.labels["zone"] then 100 else 0
score named weight 1 normalize none
  value if pod.name == "w3" then 50 else len(pod.labels)
'''
"""User-style rules: counts over node.pods, reject each, a division by a node value that is zero on
one node (runtime errors, reused too), a rule reading a pod label, one reading the pod's name."""


def _cluster(n: int) -> list[Obj]:
    objs: list[Obj] = []
    for i in range(n):
        objs.append(node(f"n{i}", {"zone": "ab"[i % 2], "tier": str(i % 3)}, cpu="0" if i == 3 else "4",
                         memory=f"{4 + i % 3}Gi",
                         taints=[{"key": "spot", "value": "", "effect": "PreferNoSchedule"}] if i % 4 == 1 else [],
                         images=[{"names": ["app:1"], "sizeBytes": 300 * 2**20}] if i % 3 == 0 else []))
        objs.append(pod(f"r{i}", on=f"n{i}", labels={"app": "web" if i % 2 else "db"}, cpu="200m", memory="256Mi"))
    return objs


SHAPES = [
    dict(labels={"app": "web", "zone": "a"}, cpu="100m", memory="128Mi"),
    dict(labels={"app": "db", "zone": "b"}, cpu="300m", memory="512Mi"),
    dict(labels={"app": "web", "zone": "a"}, cpu="100m", memory="128Mi",
         tolerations=[{"key": "spot", "operator": "Exists"}]),
    dict(labels={"app": "web"}, cpu="2", memory="3Gi", ports=[8080]),
]


def _events(rng: random.Random, n: int) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for k in range(60):
        shape = SHAPES[0] if k % 5 else SHAPES[rng.randrange(len(SHAPES))]
        out.append(("pod", pod(f"w{k}", **shape)))
        roll = rng.random()
        i = rng.randrange(n)
        if roll < 0.12:
            out.append(("update", node(f"n{i}", {"zone": rng.choice("abc"), "tier": "9"}, cpu=rng.choice(["2", "8"]),
                                       memory="6Gi", taints=rng.choice([[], [{"key": "spot", "value": "",
                                                                               "effect": "NoSchedule"}]]))))
        elif roll < 0.16:
            out.append(("add", node(f"extra{k}", {"zone": "a"}, cpu="4", memory="4Gi")))
        elif roll < 0.19:
            out.append(("remove", node(f"n{i}")))
        elif roll < 0.24:
            out.append(("delete", pod(f"r{i}", on=f"n{i}")))
    return out


@pytest.mark.parametrize("which", ["default", "user"])
@pytest.mark.parametrize("seed", range(3))
def test_reused_results_equal_the_reference_through_changes(which: str, seed: int) -> None:
    policies = default_policies() if which == "default" else load(USER)
    objects = _cluster(14)
    ref, vec = make_evaluator("reference"), make_evaluator("vector")
    left, right = ClusterSnapshot.from_objects(objects), ClusterSnapshot.from_objects(objects)
    rng = random.Random(seed)
    for kind, obj in _events(rng, 14):
        if kind == "pod":
            r1, r2 = random.Random(len(obj["metadata"]["name"])), random.Random(len(obj["metadata"]["name"]))
            a = ref.evaluate(policies, left, obj, rng=r1)
            b = vec.evaluate(policies, right, obj, rng=r2)
            assert a == b, (obj["metadata"]["name"], diff_decisions(a, b))
            if a.node is not None:
                left.assume(obj, a.node)
                right.assume(obj, a.node)
        elif kind in ("update", "add"):
            left.add(obj)
            right.add(obj)
        else:
            left.remove(obj)
            right.remove(obj)
    reuse = vec.backend.reuse  # type: ignore[attr-defined]
    assert reuse is not None and reuse._entries, "the cache was never used"


def test_the_cache_can_be_turned_off() -> None:
    vec = make_evaluator("vector")
    vec.backend.reuse = None  # type: ignore[attr-defined]
    snap = ClusterSnapshot.from_objects(_cluster(4))
    d = vec.evaluate(default_policies(), snap, pod("x", cpu="100m"), rng=random.Random(0))
    assert d.node is not None


def test_pod_fields_read_off_the_rules() -> None:
    policies = load('''
filter a
  reason "a"
  require pod.priority < 10 and node.name != pod.node_name
filter b
  reason "b"
  require all t in node.taints: pod.tolerates(t)
filter c
  reason "c"
  require all c in cluster.hard_spread_constraints: cluster.spread_count(c, node) < 3
score d weight 1 normalize none
  value if (all c in pod.spread_constraints: c.selects(pod)) then 1 else 0
''')
    got = {r.name: pod_fields(r.checked) for r in policies.rules}
    assert got["a"] == ("node_name", "priority")
    assert got["b"] == ("tolerations",)
    assert got["c"] is None  # reads the cluster: never reused
    assert got["d"] == (ALL_FIELDS,)  # the pod itself is passed to a method


def test_freeze_is_structural_and_typed() -> None:
    assert freeze({"cpu": Fraction(1, 2)}) == freeze({"cpu": Fraction(1, 2)})
    assert freeze(1) != freeze(1.0) != freeze(True)
    assert freeze(Fraction(1)) != freeze(1)
    assert freeze({"a": 1, "b": 2}) != freeze({"b": 2, "a": 1})  # order kept: stricter is safe
    snap = ClusterSnapshot.from_objects([])
    p1 = snap.pod_record(pod("x", cpu="1", tolerations=[{"key": "k", "operator": "Exists"}]))
    p2 = snap.pod_record(pod("y", cpu="1", tolerations=[{"key": "k", "operator": "Exists"}]))
    p3 = snap.pod_record(pod("z", cpu="1", tolerations=[{"key": "k", "operator": "Equal", "value": "v"}]))
    assert freeze(p1.tolerations) == freeze(p2.tolerations) != freeze(p3.tolerations)
    assert freeze(p1.requests) == freeze(p2.requests)


def test_image_presence_follows_node_changes() -> None:
    """The state's per-image slot index (ImageLocality's column) equals a walk over the node records."""
    img = [{"names": ["app:1"], "sizeBytes": 300 * 2**20}]
    snap = ClusterSnapshot.from_objects([node(f"n{i}", images=img if i % 2 else []) for i in range(6)])

    def walk() -> list[bool]:
        return ["app:1" in n.images for n in snap.nodes]

    assert snap.state.image_presence("app:1").tolist() == walk()
    snap.add(node("n2", images=img))
    snap.add(node("n3"))
    assert snap.state.image_presence("app:1").tolist() == walk()
    snap.remove(node("n1"))
    snap.add(node("n9", images=img))
    assert snap.state.image_presence("app:1").tolist() == walk()
    assert snap.state.image_presence("other:2").tolist() == [False] * len(snap.nodes)
