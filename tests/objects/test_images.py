"""ImageLocality's spread-scaled sizes: int(size * nodesWithImage / totalNodes), Go float64 math."""

from policyscheduler.state import ClusterSnapshot

from .conftest import make_node, make_pod

MiB = 1024 * 1024


def test_scaled_sizes_and_normalised_names() -> None:
    img = [{"names": ["registry/app:1", "registry/app@sha256:abc"], "sizeBytes": 300 * MiB}]
    snap = ClusterSnapshot.from_objects([
        make_node("a", images=img),
        make_node("b", images=[*img, {"names": ["nginx:latest"], "sizeBytes": 100 * MiB}]),
        make_node("c"),
    ])
    pod = snap.pod_record(make_pod("p", containers=[{"name": "x", "image": "nginx"}, {"name": "y", "image": "registry/app:1"}],
                                   initContainers=[{"name": "i", "image": "registry:5000/tool"}]))
    assert pod.images == ("registry:5000/tool:latest", "nginx:latest", "registry/app:1")
    cl = snap.context(pod)
    a, b, c = snap.nodes
    assert cl.scaled_image_size(a, "registry/app:1") == int(300 * MiB * (2 / 3))
    assert cl.scaled_image_size(b, "nginx:latest") == int(100 * MiB * (1 / 3))
    assert cl.scaled_image_size(c, "registry/app:1") == 0
    assert cl.node_count == 3


def test_image_size_from_first_reporting_node() -> None:
    snap = ClusterSnapshot.from_objects([
        make_node("a", images=[{"names": ["x:1"], "sizeBytes": 1000}]),
        make_node("b", images=[{"names": ["x:1"], "sizeBytes": 5000}]),
    ])
    cl = snap.context(snap.pod_record(make_pod("p")))
    assert cl.scaled_image_size(snap.nodes[1], "x:1") == 1000
