"""Snapshot building, assume, and robustness against malformed objects."""

from fractions import Fraction

from policyscheduler.state import ClusterSnapshot
from tests.objects.conftest import make_node, make_pod

Mi = 1024**2


def test_aggregates_and_skipped_pods() -> None:
    done = make_pod("done", node="n1", requests={"cpu": "1"})
    done["status"] = {"phase": "Succeeded"}
    snap = ClusterSnapshot.from_objects([
        make_node("n1"),
        make_pod("a", node="n1", requests={"cpu": "500m", "memory": "1Gi"}),
        make_pod("b", node="n1"),  # no requests: 0 real, 100m/200Mi non-zero
        done,
        make_pod("pending"),
        make_pod("lost", node="nowhere"),
        {"kind": "ConfigMap", "metadata": {"name": "x"}},
    ])
    (n1,) = snap.nodes
    assert n1.pod_count == 2 and [p.name for p in n1.pods] == ["a", "b"]
    assert n1.requested["cpu"] == Fraction(1, 2) and n1.requested["memory"] == 1024 * Mi
    assert n1.nonzero_requested["cpu"] == Fraction(6, 10) and n1.nonzero_requested["memory"] == 1024 * Mi + 200 * Mi
    assert n1.allocatable == {"cpu": 4, "memory": 8 * 1024 * Mi, "pods": 110}
    assert any("nowhere" in w for w in snap.notes) and snap.warnings == []


def test_assume_updates_later_contexts_only() -> None:
    snap = ClusterSnapshot.from_objects([make_node("n1"), make_node("n2")])
    pod = make_pod("p", requests={"cpu": "1"})
    before = snap.context(snap.pod_record(pod))
    old = snap.nodes[0]
    snap.assume(pod, "n1")
    assert snap.nodes[0].pod_count == 1 and snap.nodes[0].requested["cpu"] == 1
    assert old.pod_count == 0 and before.node_count == 2
    assert snap.nodes[0].pods[0].node_name == "n1"
    snap.assume(pod, "missing")
    assert any("missing" in w for w in snap.warnings)


def test_list_kind_and_namespaces() -> None:
    snap = ClusterSnapshot.from_objects([{"kind": "List", "items": [make_node("n1"), {"kind": "Namespace", "metadata": {"name": "x"}}]}])
    assert [n.name for n in snap.nodes] == ["n1"]
    assert snap.namespace_labels("x") == {"kubernetes.io/metadata.name": "x"}
    assert snap.namespace_labels("undeclared") == {"kubernetes.io/metadata.name": "undeclared"}


def test_api_list_responses_and_nested_lists() -> None:
    """Items of a NodeList / PodList carry no kind: they are nodes and pods all the same, at any depth."""
    nodes = {"apiVersion": "v1", "kind": "NodeList", "items": [
        {k: v for k, v in make_node(n).items() if k != "kind"} for n in ("n1", "n2")]}
    bound = {k: v for k, v in make_pod("a", node="n2", requests={"cpu": "1"}).items() if k != "kind"}
    pods = {"apiVersion": "v1", "kind": "PodList", "items": [bound]}
    snap = ClusterSnapshot.from_objects([{"kind": "List", "items": [nodes, {"kind": "List", "items": [pods]}]}])
    assert [n.name for n in snap.nodes] == ["n1", "n2"]
    assert [p.name for p in snap.nodes[1].pods] == ["a"] and snap.nodes[1].requested["cpu"] == 1


def test_malformed_objects_become_warnings() -> None:
    snap = ClusterSnapshot.from_objects([
        "not an object",  # type: ignore[list-item]  # a malformed input, on purpose
        {"kind": "Node", "metadata": {"name": "n1", "labels": ["oops"]}, "spec": {"taints": "bad"},
         "status": {"allocatable": {"cpu": "four", "memory": "1Gi"}, "images": [{"names": "x"}]}},
        {"kind": "Node", "metadata": {"name": "n1"}},
        {"kind": "Node", "metadata": {}},
        {"kind": "Pod", "metadata": {"name": "p", "namespace": "d"}, "spec": "junk"},
        {"kind": "Pod", "metadata": {"name": "q", "namespace": "d"}, "spec": {"nodeName": "n1", "containers": [
            {"name": "c", "resources": {"requests": {"cpu": ["1"]}}, "ports": [{"hostPort": "80"}]}],
            "tolerations": [3], "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchExpressions": [{"key": "a", "operator": "Bogus"}]}, "topologyKey": "k"}]}},
            "topologySpreadConstraints": [{"maxSkew": "1", "topologyKey": "k"}]}},
        {"kind": "Service", "metadata": {"name": "s"}, "spec": {"selector": ["x"]}},
    ])
    assert [n.name for n in snap.nodes] == ["n1"]
    n1 = snap.nodes[0]
    assert n1.labels == {} and n1.taints == () and n1.allocatable == {"memory": 1024 * Mi}
    assert n1.pod_count == 1
    q = n1.pods[0]
    assert q.requests == {} and q.host_ports == () and q.tolerations == ()
    assert q.required_affinity_terms[0]._selector is None  # matches no pod
    assert q.spread_constraints[0].max_skew == 1
    text = "\n".join(snap.warnings)
    for needle in ("Node n1", "four", "duplicate", "Pod d/q", "Bogus", "maxSkew", "Service"):
        assert needle in text, needle
    assert any("no 'pods'" in note for note in snap.notes)  # valid, so a note rather than a warning
    rec = snap.pod_record({"kind": "Pod", "metadata": "junk"})
    assert rec.name == "" and rec.namespace == "default"


def test_pod_record_converted_once_and_reused_by_assume() -> None:
    snap = ClusterSnapshot.from_objects([make_node("n1")])
    pod = make_pod("p", requests={"cpu": "250m"})
    rec = snap.pod_record(pod)
    assert snap.pod_record(pod) is rec  # the simulator asks again on every attempt
    assert snap.pod_record(make_pod("p", requests={"cpu": "250m"})) is not rec  # identity, not equality
    snap.assume(pod, "n1")
    placed = snap.nodes[0].pods[0]
    assert placed.node_name == "n1" and rec.node_name == "" and placed.requests == rec.requests
    snap.assume(pod, "gone")
    assert "Pod default/p: cannot assume on unknown node 'gone'" in snap.warnings
