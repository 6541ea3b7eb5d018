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
from policyscheduler.evaluation.driver import Driver
from policyscheduler.evaluation.vector import backend
from policyscheduler.evaluation.vector.backend import VectorBackend
from policyscheduler.evaluation.vector.reuse import ALL_FIELDS, Reuse, freeze, memo_fields, node_fields, pod_fields
from policyscheduler.objects.cluster import COLUMNS
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


SHAPES: list[dict[str, Any]] = [
    dict(labels={"app": "web", "zone": "a"}, cpu="100m", memory="128Mi"),
    dict(labels={"app": "db", "zone": "b"}, cpu="300m", memory="512Mi"),
    dict(labels={"app": "web", "zone": "a"}, cpu="100m", memory="128Mi",
         tolerations=[{"key": "spot", "operator": "Exists"}]),
    dict(labels={"app": "web"}, cpu="2", memory="3Gi", ports=[8080]),
]


def reuse_of(driver: Driver) -> Reuse:
    """The reuse cache of a vector evaluator (present unless a test turned it off)."""
    assert isinstance(driver.backend, VectorBackend) and driver.backend.reuse is not None
    return driver.backend.reuse


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
    reuse = reuse_of(vec)
    assert reuse._entries, "the cache was never used"
    assert reuse.rows.hits > 0, "the row memo was never used"


def test_the_cache_can_be_turned_off() -> None:
    vec = make_evaluator("vector")
    assert isinstance(vec.backend, VectorBackend)
    vec.backend.reuse = None
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


def test_node_fields_read_off_the_rules() -> None:
    """Which node fields a rule reads decides which node changes invalidate its cached results."""
    policies = load('''
filter a
  reason "a"
  require node.unschedulable == false and node.name != pod.node_name
filter b
  reason "b"
  require all t in node.taints: pod.tolerates(t)
filter c
  reason "c"
  require pod.matches_node_affinity(node) and not node.port_conflict(first(pod.host_ports)[0])
score d weight 1 normalize none
  let n = node
  value len(n.labels)
score e weight 1 normalize none
  value count(p in node.pods where p.labels["app"] == "x")
''')
    got = {r.name: node_fields(r.checked) for r in policies.rules}
    assert got["a"] == frozenset({"unschedulable", "name"})
    assert got["b"] == frozenset({"taints"})
    assert got["c"] == frozenset({"labels", "name", "used_ports"})
    assert got["d"] is None  # the node bound to a name: every field
    assert got["e"] == frozenset({"pods"})


def test_memo_fields_read_off_the_rules() -> None:
    """Only rules reading ``cluster`` through whole-cluster builtins of ``node`` (and ``node`` only there)
    are memoised: their value is then a function of the pod fields and the calls' values."""
    policies = load('''
score a weight 1 normalize none
  value trunc(sum(i in pod.images: cluster.scaled_image_size(node, i)) / 1Mi)
score b weight 1 normalize none
  value cluster.preferred_affinity_weight(node) + len(node.labels)
score c weight 1 normalize none
  value cluster.preferred_affinity_weight(node) + cluster.node_count
score d weight 1 normalize none
  value len(node.labels)
''')
    calls = frozenset(COLUMNS)
    got = {r.name: memo_fields(r.checked, calls) for r in policies.rules}
    assert got["a"] == ("images",)
    assert got["b"] is None  # reads the node besides the builtin
    assert got["c"] is None  # reads the cluster besides the builtin
    assert got["d"] is None  # no cluster call: the equivalence cache's business


def test_memoised_cluster_rules_follow_the_cluster() -> None:
    """Inter-pod affinity and image locality scores memoised while uniform, and exact when the cluster
    stops being uniform: a node gains the pod's image, a pod with preferred affinity terms lands, the
    image goes away again. Every decision equals the reference's; the memo must have been hit."""
    policies = default_policies()
    objects = [node(f"n{i}", {"zone": "ab"[i % 2], "kubernetes.io/hostname": f"n{i}"}, cpu="8", memory="16Gi")
               for i in range(12)]
    ref, vec = make_evaluator("reference"), make_evaluator("vector")
    left, right = ClusterSnapshot.from_objects(objects), ClusterSnapshot.from_objects(objects)
    img = [{"names": ["app:1"], "sizeBytes": 500 * 2**20}]
    affine = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 50, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "web"}},
                                           "topologyKey": "zone"}}]}}
    steps: list[Any] = [
        *[pod(f"a{k}", labels={"app": "web"}, cpu="100m", memory="128Mi") for k in range(4)],
        ("update", node("n5", {"zone": "b", "kubernetes.io/hostname": "n5"}, cpu="8", memory="16Gi", images=img)),
        *[pod(f"b{k}", labels={"app": "web"}, cpu="100m", memory="128Mi") for k in range(3)],
        pod("lead", labels={"app": "db"}, cpu="100m", memory="128Mi", affinity=affine),
        *[pod(f"c{k}", labels={"app": "web"}, cpu="100m", memory="128Mi") for k in range(3)],
        ("update", node("n5", {"zone": "b", "kubernetes.io/hostname": "n5"}, cpu="8", memory="16Gi")),
        *[pod(f"d{k}", labels={"app": "web"}, cpu="100m", memory="128Mi") for k in range(3)],
    ]
    scores: list[dict[str, int]] = []
    for step in steps:
        if isinstance(step, tuple):
            left.add(step[1])
            right.add(step[1])
            continue
        name = step["metadata"]["name"]
        a = ref.evaluate(policies, left, step, rng=random.Random(name))
        b = vec.evaluate(policies, right, step, rng=random.Random(name))
        assert a == b, (name, diff_decisions(a, b))
        scores.append({n: s.raw for n, s in b.scores["image_locality"].items()})
        assert a.node is not None
        left.assume(step, a.node)
        right.assume(step, a.node)
    assert reuse_of(vec).memo.hits >= 8
    assert len(set(scores[0].values())) == 1 and len(set(scores[4].values())) > 1  # the image made it non-uniform


def test_node_tables_refresh_only_changed_fields_when_read() -> None:
    """Placing a pod changes a node's aggregates only; the tables say so, and a column of a changed field
    reads the new record when it is next asked for (it is not rebuilt eagerly)."""
    from policyscheduler.evaluation.vector.columns import Interner, Tables, column_key

    snap = ClusterSnapshot.from_objects(_cluster(6))
    tables = Tables(Interner())
    tables.sync(snap)
    cpu = column_key("get", "requested", "q", "cpu", Fraction(0))
    zone = column_key("get", "labels", "str", "zone", "")
    col = tables.nodes.column(cpu)
    old = Fraction(int(col.data[2]), col.den)
    before_zone = tables.nodes.column(zone).data.copy()
    snap.assume(pod("new", cpu="500m", memory="1Gi"), "n2")
    tables.sync(snap)
    assert tables.changed == [2]
    assert tables.changed_fields is not None and "requested" in tables.changed_fields
    assert not tables.changed_fields & {"labels", "taints", "allocatable", "images", "name", "unschedulable"}
    after = tables.nodes.column(cpu)
    values = [Fraction(int(x), after.den) for x in after.data.tolist()]
    assert values == [n.requested.get("cpu", Fraction(0)) for n in snap.nodes]
    assert values[2] == old + Fraction(1, 2)
    assert tables.nodes.column(zone).data.tolist() == before_zone.tolist()


def test_rows_are_invalidated_per_slot_by_that_slots_changed_fields() -> None:
    """One node gets a pod (its aggregates change), another only a relabelled pod (its ``pods`` change): a
    rule reading resources must be recomputed on the first only, a rule reading pods on both."""
    from policyscheduler.evaluation.vector.reuse import Reuse

    reuse = Reuse()
    policy = object()
    resources, pods = object(), object()
    reuse.sync(policy, 1, [], 4)
    reuse._node_fields = {id(resources): frozenset({"requested", "allocatable"}), id(pods): frozenset({"pods"})}
    entries = {}
    for rule in (resources, pods):
        entry = reuse.entry(rule, ("k",))
        entry.complete = True
        entries[rule] = entry
    reuse.sync(policy, 1, [1, 3], 4, [frozenset({"requested", "pods", "pod_count"}), frozenset({"pods"})])
    assert sorted(entries[resources].pending) == [1]
    assert sorted(entries[pods].pending) == [1, 3]
    reuse.sync(policy, 1, [2], 4, [None])  # unknown: every rule
    assert sorted(entries[resources].pending) == [1, 2]


def test_row_memo_takes_only_rules_of_pod_and_node_values() -> None:
    """Rows are memoised by the values a rule reads: never for a rule reading ``cluster`` or a node's pods."""
    from policyscheduler.evaluation.vector.reuse import Reuse

    policies = load(USER + """
filter spread
  reason "s"
  require all c in cluster.hard_spread_constraints: cluster.spread_count(c, node) < 3
""")
    reuse = Reuse()
    got = {r.name: reuse.row_fields(r) for r in policies.rules}
    assert got["fits"] == ("allocatable", "requested")
    assert got["free"] == ("allocatable", "requested")
    assert got["same_zone"] == ("labels",)
    assert got["density"] is None  # node.pods: too large to image per row
    assert got["spread"] is None  # reads the cluster


def test_row_memo_results_follow_the_values_not_the_node() -> None:
    """Two nodes alike but for allocatable memory: the memo answers the second from its own values (a miss),
    a third node equal to the first from the first's (a hit); every decision equals the reference's."""
    policies = load(USER)
    objects = [node("a", {"zone": "a"}, cpu="4", memory="4Gi"), node("b", {"zone": "a"}, cpu="4", memory="8Gi"),
               node("c", {"zone": "a"}, cpu="4", memory="4Gi")]
    ref, vec = make_evaluator("reference"), make_evaluator("vector")
    left, right = ClusterSnapshot.from_objects(objects), ClusterSnapshot.from_objects(objects)
    for k in range(12):
        p = pod(f"w{k}", labels={"app": "web", "zone": "a"}, cpu="100m", memory="128Mi")
        a = ref.evaluate(policies, left, p, rng=random.Random(k))
        b = vec.evaluate(policies, right, p, rng=random.Random(k))
        assert a == b, (k, diff_decisions(a, b))
        if a.node is not None:  # 'density' lets 3 web pods on a node: the last ones fit nowhere
            left.assume(p, a.node)
            right.assume(p, a.node)
    assert reuse_of(vec).rows.hits > 0


def _image_node(name: str, images: list[str], zone: str) -> Obj:
    sizes = {"app:1": 300 * 2**20, "app:2": 700 * 2**20, "app:3": 90 * 2**20}
    return node(name, {"zone": zone, "kubernetes.io/hostname": name}, cpu="8", memory="16Gi",
                images=[{"names": [i], "sizeBytes": sizes[i]} for i in images])


@pytest.mark.parametrize("small", [0, 8])
@pytest.mark.parametrize("seed", range(3))
def test_delta_rows_follow_node_changes_between_heterogeneous_pods(small: int, seed: int) -> None:
    """Image locality's per-node rows are kept per image across pods of every other shape (random
    requests, labels, inter-pod terms) and only the changed nodes are recomputed (delta rows): a node
    gains or loses an image (its row, and the image's holder count: every row), two nodes swap an image
    (holder count unchanged, both rows changed), nodes come and go (the node count), pods land and are
    deleted (rows unchanged). Every decision equals the reference's; the delta rows must have been hit.
    ``small`` 0 recomputes the changed rows through the arrays, 8 through the reference closures."""
    rng = random.Random(seed)
    images = ["app:1", "app:2", "app:3"]
    held: dict[str, list[str]] = {f"n{i}": [i_ for i_ in images if rng.random() < 0.4] for i in range(20)}
    objects = [_image_node(n, imgs, "ab"[k % 2]) for k, (n, imgs) in enumerate(held.items())]
    objects += [pod(f"r{k}", on=f"n{k % 20}", labels={"app": rng.choice(["web", "db"])}, cpu="200m", memory="256Mi")
                for k in range(30)]
    policies = default_policies()
    ref, vec = make_evaluator("reference"), make_evaluator("vector")
    left, right = ClusterSnapshot.from_objects(objects), ClusterSnapshot.from_objects(objects)
    zones = {n: "ab"[k % 2] for k, n in enumerate(held)}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(backend, "SMALL", small)
        for k in range(70):
            image = images[k % 3] if k % 7 else rng.choice(images)
            labels = {"app": rng.choice(["web", "db", "cache"]), "release": f"r{k}"}
            spec: dict[str, Any] = {"containers": [{"name": "c", "image": image, "resources": {"requests": {
                "cpu": f"{rng.randint(10, 900)}m", "memory": f"{rng.randint(16, 900)}Mi"}}}]}
            if k % 4 == 1:
                spec["affinity"] = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": rng.randint(1, 100), "podAffinityTerm": {
                        "labelSelector": {"matchLabels": {"app": labels["app"]}}, "topologyKey": "zone"}}]}}
            obj = pod(f"h{k}", labels=labels, **spec)
            a = ref.evaluate(policies, left, obj, rng=random.Random(k))
            b = vec.evaluate(policies, right, obj, rng=random.Random(k))
            assert a == b, (k, diff_decisions(a, b))
            if a.node is not None:
                left.assume(obj, a.node)
                right.assume(obj, a.node)
            roll = rng.random()
            changes: list[tuple[str, Obj]] = []
            names = sorted(held)
            if roll < 0.15:  # a node gains or loses an image
                n = rng.choice(names)
                held[n] = [i for i in images if (i in held[n]) != (i == rng.choice(images))]
                changes.append(("add", _image_node(n, held[n], zones[n])))
            elif roll < 0.25 and len(names) > 1:  # two nodes swap one image: its holder count stays
                n1, n2 = rng.sample(names, 2)
                i = rng.choice(images)
                if (i in held[n1]) != (i in held[n2]):
                    held[n1], held[n2] = ([x for x in held[n1] if x != i] + ([i] if i in held[n2] else []),
                                          [x for x in held[n2] if x != i] + ([i] if i in held[n1] else []))
                    changes += [("add", _image_node(n1, held[n1], zones[n1])),
                                ("add", _image_node(n2, held[n2], zones[n2]))]
            elif roll < 0.3:
                n = f"x{k}"
                held[n], zones[n] = [rng.choice(images)], "a"
                changes.append(("add", _image_node(n, held[n], "a")))
            elif roll < 0.34 and len(names) > 4:
                n = rng.choice(names)
                del held[n]
                changes.append(("remove", node(n)))
            elif roll < 0.45:
                changes.append(("remove", pod(f"r{rng.randrange(30)}", on="n0")))
            for what, change in changes:
                for snap in (left, right):
                    (snap.add if what == "add" else snap.remove)(change)
    reuse = reuse_of(vec)
    assert reuse.delta.hits >= 5, reuse.delta.hits


def test_an_entry_is_made_when_a_shape_comes_back() -> None:
    """A pod shape seen for the first time is computed on the nodes asked for and leaves no entry (a stream
    of distinct shapes would only fill and evict them); the second pod of that shape makes the entry, and
    the next reads it (a shape is what the rule reads of the pod). Every decision equals the reference's."""
    policies = load(USER)
    objects = _cluster(14)
    ref, vec = make_evaluator("reference"), make_evaluator("vector")
    left, right = ClusterSnapshot.from_objects(objects), ClusterSnapshot.from_objects(objects)
    made: list[int] = []
    for k, shape in enumerate([SHAPES[0], SHAPES[1], SHAPES[0], SHAPES[0]]):
        obj = pod(f"s{k}", **shape)
        a = ref.evaluate(policies, left, obj, rng=random.Random(k))
        b = vec.evaluate(policies, right, obj, rng=random.Random(k))
        assert a == b, diff_decisions(a, b)
        made.append(sum(len(per_rule) for per_rule in reuse_of(vec)._entries.values()))
    assert made[0] == 0, made  # a new shape: no entry
    # the second pod is a new shape only to the rules reading a pod field in which it differs (a rule that
    # reads none of them sees the first shape again and makes its entry); the first shape coming back
    # makes the others' entries, and a fourth pod of it reads them
    assert 0 < made[1] < made[2], made
    assert made[3] == made[2], made


def test_a_reused_uniform_score_follows_a_node_that_leaves_it() -> None:
    """A reused score that is one value on every node (the taint score where no node has a PreferNoSchedule
    taint) is answered as that constant, with its bounds and no gather; when a node changes so that its
    score differs, the recomputed slot ends the shortcut, and the decision still equals the reference's."""
    policies = default_policies()
    objects = [node(f"n{i}", {"zone": "ab"[i % 2]}, cpu="4", memory="8Gi") for i in range(12)]
    ref, vec = make_evaluator("reference"), make_evaluator("vector")
    left, right = ClusterSnapshot.from_objects(objects), ClusterSnapshot.from_objects(objects)

    def decide(name: str) -> Any:
        obj = pod(name, labels={"app": "web"}, cpu="100m", memory="128Mi")
        a = ref.evaluate(policies, left, obj, rng=random.Random(1))
        b = vec.evaluate(policies, right, obj, rng=random.Random(1))
        assert a == b, (name, diff_decisions(a, b))
        return b

    for k in range(3):  # the second pod of the shape makes the entries, the third reads them
        decide(f"w{k}")
    taint_score = next(r for r in policies.scores if r.name == "taint_toleration")
    (entry,) = reuse_of(vec)._entries[id(taint_score)].values()
    assert entry.uniform() == 0
    tainted = node("n5", {"zone": "b"}, cpu="4", memory="8Gi",
                   taints=[{"key": "spot", "value": "", "effect": "PreferNoSchedule"}])
    left.add(tainted)
    right.add(tainted)
    d = decide("w3")
    assert d.scores["taint_toleration"]["n5"].raw == 1
    assert d.scores["taint_toleration"]["n4"].raw == 0
    assert entry.uniform() is None
    decide("w4")


def _prefers(name: str, on: str, app: str, weight: int) -> Obj:
    """A placed pod with a preferred hostname affinity term towards ``app``."""
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "kubernetes.io/hostname"}
    return pod(name, on=on, labels={"app": "fan"}, cpu="100m", memory="64Mi", affinity={"podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": weight, "podAffinityTerm": term}]}})


def test_inter_pod_rows_are_kept_per_set_of_shared_sums_and_only_while_they_hold() -> None:
    """The inter-pod affinity score reads placed pods' terms through sums the state shares between the
    pods matching the same terms (one object while none of the terms changes): its per-node rows are kept
    per pod shape *and* per those objects (:class:`.reuse.Delta`), so pods of two apps alternating each
    reuse their own app's rows, and a placed pod gaining a matched term makes the rows be computed again.
    Pods with preferred terms of their own (sums made for them alone) are computed and never kept. Every
    decision equals the reference's: an app reading the other's rows, or rows outliving a term change,
    send a pod to the other app's favourite node."""
    policies = default_policies()
    objects: list[Obj] = [node(f"n{i}", {"kubernetes.io/hostname": f"n{i}", "zone": "ab"[i % 2]}, cpu="8",
                               memory="16Gi") for i in range(8)]
    objects += [_prefers("fan-web", "n1", "web", 60), _prefers("fan-db", "n5", "db", 60)]
    ref, vec = make_evaluator("reference"), make_evaluator("vector")
    left, right = ClusterSnapshot.from_objects(objects), ClusterSnapshot.from_objects(objects)
    chosen: list[str | None] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(backend, "SMALL", 0)  # the vector path on this small cluster
        for k in range(24):
            if k == 12:  # the web pods' matched term gains a pod on n6, with a greater weight in sum
                for snap in (left, right):
                    snap.add(_prefers("fan-web2", "n6", "web", 90))
            app = "web" if k % 2 else "db"
            spec: dict[str, Any] = {}
            if k % 6 == 5:  # a term of its own against the zones of the fan pods (sums made for this pod
                # alone), light or heavy enough to outweigh the web pods' favourite node
                spec["affinity"] = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 15 if k % 12 == 5 else 45, "podAffinityTerm": {
                        "labelSelector": {"matchLabels": {"app": "fan"}}, "topologyKey": "zone"}}]}}
            obj = pod(f"p{k}", labels={"app": app, "release": f"r{k}"}, cpu="100m", memory="64Mi", **spec)
            a = ref.evaluate(policies, left, obj, rng=random.Random(k))
            b = vec.evaluate(policies, right, obj, rng=random.Random(k))
            assert a == b, (k, diff_decisions(a, b))
            chosen.append(a.node)
            if a.node is not None:
                left.assume(obj, a.node)
                right.assume(obj, a.node)
    # the test decides something: each app's favourite node, and the web pods' moves after the change
    assert {chosen[k] for k in range(0, 12, 2)} == {"n5"} and {chosen[k] for k in range(1, 11, 2)} == {"n1"}
    assert chosen[11] in {"n0", "n2", "n4", "n6"}  # its own heavy term outweighs n1: a zone without fan pods
    assert {chosen[k] for k in range(13, 24, 2)} == {"n6"}
    assert reuse_of(vec).delta.hits >= 10, reuse_of(vec).delta.hits
