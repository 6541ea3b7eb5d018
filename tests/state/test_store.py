"""The incremental state: change by change it must hold what a snapshot built from scratch holds."""

from __future__ import annotations

import random
from typing import Any

import pytest

from policyscheduler.objects.selectors import set_selector
from policyscheduler.objects.topology import match_key_matches, spread_key
from policyscheduler.state import ClusterSnapshot
from policyscheduler.state.store import replace_fields
from tests.objects.conftest import make_node, make_pod
from tests.state import gen


def _aggregates(snap: ClusterSnapshot) -> list[tuple[Any, ...]]:
    return [(n.name, n.requested, n.nonzero_requested, n.pod_count, sorted(p.name for p in n.pods),
             sorted((h.host_ip, h.protocol, h.port) for h in n.used_ports)) for n in snap.nodes]


@pytest.mark.parametrize("seed", range(20))
def test_changes_equal_a_snapshot_built_from_scratch(seed: int) -> None:
    rng = random.Random(seed)
    objects = gen.cluster(rng, 6, 3)
    snap = ClusterSnapshot.from_objects(objects)
    live = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Pod"}
    for step in range(30):
        if rng.random() < 0.6 or not live:
            obj = gen.pod(rng, f"q{step}", rng.choice(snap.nodes).name)
            obj["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8000 + step % 3}]
            snap.add_pod(obj)
            live[obj["metadata"]["name"]] = obj
        else:
            snap.remove_pod(live.pop(rng.choice(sorted(live))))
    nodes = [o for o in objects if o["kind"] == "Node"]
    fresh = ClusterSnapshot.from_objects([*nodes, *live.values()])
    assert _aggregates(snap) == _aggregates(fresh)
    assert snap.image_states == fresh.image_states


def test_generations_and_changed_nodes() -> None:
    snap = ClusterSnapshot.from_objects([make_node("n1"), make_node("n2"), make_node("n3")])
    g0 = snap.generation
    assert snap.changed_nodes_since(g0) == []
    assert snap.changed_nodes_since(g0 - 1) is None  # the node set changed at g0
    snap.assume(make_pod("p", requests={"cpu": "1"}), "n3")
    snap.assume(make_pod("q"), "n1")
    g1 = snap.generation
    assert g1 > g0 and snap.changed_nodes_since(g0) == [0, 2]
    snap.forget(make_pod("p"))
    assert snap.changed_nodes_since(g1) == [2] and snap.nodes[2].pod_count == 0
    assert snap.nodes[2].requested == {}
    snap.remove_node(make_node("n2"))
    assert snap.changed_nodes_since(g1) is None
    assert [n.name for n in snap.nodes] == ["n1", "n3"] and snap.nodes[0].pod_count == 1


def test_a_removed_node_takes_its_pods_and_gives_them_back() -> None:
    snap = ClusterSnapshot.from_objects([make_node("n1"), make_pod("p", node="n1", requests={"cpu": "1"})])
    snap.remove_node(make_node("n1"))
    assert snap.nodes == []
    snap.add_node(make_node("n1", {"topology.kubernetes.io/zone": "z"}))
    (n1,) = snap.nodes
    assert n1.pod_count == 1 and n1.requested["cpu"] == 1 and n1.labels["topology.kubernetes.io/zone"] == "z"


def test_finished_and_unbound_pods_leave_the_node() -> None:
    pod = make_pod("p", node="n1")
    snap = ClusterSnapshot.from_objects([make_node("n1"), pod])
    assert snap.nodes[0].pod_count == 1
    snap.update_pod({**pod, "status": {"phase": "Succeeded"}})
    assert snap.nodes[0].pod_count == 0


def test_affinity_pod_lists_follow_the_pods() -> None:
    anti = make_pod("a", node="n1", labels={"app": "x"}, affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "x"}}}]}})
    snap = ClusterSnapshot.from_objects([make_node("n1"), make_node("n2"), anti])
    incoming = snap.pod_record(make_pod("b", labels={"app": "x"}))
    cl = snap.context(incoming)
    assert cl.has_existing_anti_affinity() and cl.column("existing_anti_affinity_count").tolist() == [1, 0]
    snap.remove_pod(anti)
    assert not snap.state.has_anti_affinity_pods()
    assert not snap.context(incoming).has_existing_anti_affinity()


def test_pod_records_are_cached_by_uid_and_version_within_a_bound() -> None:
    snap = ClusterSnapshot()
    pod = make_pod("p")
    pod["metadata"].update(uid="u1", resourceVersion="7")
    rec = snap.pod_record(pod)
    copy = {**pod, "metadata": dict(pod["metadata"])}
    assert snap.pod_record(copy) is rec  # same uid and version: same object, whatever its identity
    copy["metadata"]["resourceVersion"] = "8"
    assert snap.pod_record(copy) is not rec
    for i in range(10_000):
        snap.pod_record(make_pod(f"x{i}"))
    assert len(snap._records) <= snap._records.maxsize < 10_000


def test_replace_fields_copies_a_slotted_pod_record() -> None:
    """Pod records are slotted (memory: one per running pod); the state's fast copy of them keeps every
    field but the changed ones, leaves the original alone, and refuses a field the record lacks."""
    import dataclasses

    from policyscheduler.objects.builders import build_pod
    from policyscheduler.state.store import replace_fields

    obj = make_pod("p", labels={"app": "a"}, requests={"cpu": "250m"})
    obj["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "controller": True}]
    pod = build_pod(obj, [])
    assert not hasattr(pod, "__dict__") and pod._owner == ("apps/v1", "ReplicaSet", "rs") and pod.requests

    copy = replace_fields(pod, node_name="n9", labels={"app": "b"})
    assert copy is not pod and type(copy) is type(pod) and pod.node_name == "" and pod.labels == {"app": "a"}
    assert copy.node_name == "n9" and copy.labels == {"app": "b"}
    for f in dataclasses.fields(pod):
        if f.name not in ("node_name", "labels"):
            assert getattr(copy, f.name) is getattr(pod, f.name), f.name
    with pytest.raises(TypeError):
        replace_fields(pod, no_such_field=1)


def test_relabelling_a_lone_pod_with_an_unread_label_rekeys_its_group_and_keeps_the_counts() -> None:
    """The bind's topology labels on a pod of its own shape: the match-count index moves the pod's group
    to the new labels without matching any key again, and every count stays what a walk gives; a label
    that a cached key reads goes through removal and placement instead (and is counted anew)."""
    def pod(name: str, node: str, labels: dict[str, str]) -> dict[str, Any]:
        return {"kind": "Pod", "metadata": {"name": name, "namespace": "ns", "uid": name, "labels": labels},
                "spec": {"nodeName": node, "containers": [{"name": "c"}]}}

    nodes = [{"kind": "Node", "metadata": {"name": f"n{i}", "labels": {"kubernetes.io/hostname": f"n{i}"}},
              "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}} for i in range(3)]
    snap = ClusterSnapshot.from_objects([*nodes, pod("a", "n0", {"app": "x", "release": "1"}),
                                         pod("b", "n1", {"app": "x", "release": "2"}),
                                         pod("c", "n1", {"app": "y", "release": "3"})])
    state = snap.state
    app_x = spread_key(set_selector({"app": "x"}), "ns")
    zone_a = spread_key(set_selector({"zone": "a"}), "ns")
    assert app_x is not None and zone_a is not None

    def walk(key: Any) -> list[int]:
        return [sum(1 for p in n.pods if match_key_matches(key, p, snap.namespace_labels)) for n in snap.nodes]

    assert state.match_counts(app_x).tolist() == [1, 1, 0]
    counts = state._counts
    groups = counts._groups
    assert groups is not None
    old = state.pod("b")
    assert old is not None
    group = groups[("ns", False, frozenset(old.labels.items()))]
    bound = replace_fields(old, labels={**old.labels, "topology.kubernetes.io/zone": "a"})
    assert state.relabel_pod(bound)
    assert groups[("ns", False, frozenset(bound.labels.items()))] is group  # re-keyed, not rebuilt
    assert group.pod is bound and ("ns", False, frozenset(old.labels.items())) not in groups
    assert state.match_counts(app_x).tolist() == walk(app_x) == [1, 1, 0]
    # a key that reads the changed label: matched afresh, through removal and placement
    assert state.match_counts(zone_a).tolist() == walk(zone_a) == [0, 0, 0]
    again = replace_fields(bound, labels={**bound.labels, "zone": "a"})
    assert state.relabel_pod(again)
    assert groups[("ns", False, frozenset(again.labels.items()))] is not group
    assert state.match_counts(zone_a).tolist() == walk(zone_a) == [0, 1, 0]
    assert state.match_counts(app_x).tolist() == walk(app_x) == [1, 1, 0]
