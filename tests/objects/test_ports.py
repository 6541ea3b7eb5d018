import pytest

from policyscheduler.objects import HostPort
from policyscheduler.state import ClusterSnapshot
from tests.objects.conftest import NodeFactory, PodFactory


@pytest.mark.parametrize(
    "a, b, conflict",
    [
        (HostPort("0.0.0.0", "TCP", 80), HostPort("0.0.0.0", "TCP", 80), True),
        (HostPort("0.0.0.0", "TCP", 80), HostPort("10.0.0.1", "TCP", 80), True),  # wildcard vs specific
        (HostPort("10.0.0.1", "TCP", 80), HostPort("0.0.0.0", "TCP", 80), True),
        (HostPort("10.0.0.1", "TCP", 80), HostPort("10.0.0.2", "TCP", 80), False),
        (HostPort("10.0.0.1", "TCP", 80), HostPort("10.0.0.1", "TCP", 80), True),
        (HostPort("0.0.0.0", "TCP", 80), HostPort("0.0.0.0", "UDP", 80), False),  # protocol differs
        (HostPort("0.0.0.0", "TCP", 80), HostPort("0.0.0.0", "TCP", 81), False),
    ],
)
def test_host_port_conflict(a: HostPort, b: HostPort, conflict: bool) -> None:
    assert a.conflicts(b) is conflict


def test_ports_from_pod_spec(node_factory: NodeFactory, pod_factory: PodFactory) -> None:
    ports_pod = pod_factory(
        "web", node="n1",
        containers=[{"name": "c", "ports": [{"containerPort": 8080, "hostPort": 80},
                                            {"containerPort": 53, "hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.1"},
                                            {"containerPort": 9090}]}],
        initContainers=[{"name": "side", "restartPolicy": "Always", "ports": [{"containerPort": 1, "hostPort": 9100}]},
                        {"name": "init", "ports": [{"containerPort": 1, "hostPort": 9200}]}],
    )
    snap = ClusterSnapshot.from_objects([node_factory("n1"), ports_pod])
    used = {(p.host_ip, p.protocol, p.port) for p in snap.nodes[0].used_ports}
    # regular init containers' ports are not counted; missing hostIP/protocol default to 0.0.0.0/TCP
    assert used == {("0.0.0.0", "TCP", 80), ("10.0.0.1", "UDP", 53), ("0.0.0.0", "TCP", 9100)}
    other = snap.pod_record(pod_factory("x", containers=[{"name": "c", "ports": [{"containerPort": 53, "hostPort": 53, "protocol": "UDP"}]}]))
    assert snap.nodes[0].port_conflict(other.host_ports[0])


def test_host_network_defaults_host_port(pod_factory: PodFactory) -> None:
    snap = ClusterSnapshot.from_objects([])
    pod = snap.pod_record(pod_factory("h", hostNetwork=True, containers=[{"name": "c", "ports": [{"containerPort": 8080}]}]))
    assert [(p.port, p.protocol) for p in pod.host_ports] == [(8080, "TCP")]
