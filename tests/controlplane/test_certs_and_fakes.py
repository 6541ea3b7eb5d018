"""Fast checks of the harness building blocks (no control plane needed)."""

from __future__ import annotations

from pathlib import Path

from cryptography import x509
from cryptography.x509.oid import NameOID

from tests.controlplane import fakes
from tests.controlplane.certs import TinyCA


def test_ca_issues_admin_client_cert_in_system_masters(tmp_path: Path) -> None:
    ca = TinyCA(tmp_path)
    pair = ca.client("admin", "admin", ("system:masters",))
    cert = x509.load_pem_x509_certificate(pair.cert_pem)
    ca_cert = x509.load_pem_x509_certificate(ca.pair.cert_pem)
    cert.verify_directly_issued_by(ca_cert)  # raises if the signature is wrong
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == ["system:masters"]
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "admin"
    assert (tmp_path / "admin.key").stat().st_mode & 0o077 == 0


def test_serving_cert_covers_loopback(tmp_path: Path) -> None:
    ca = TinyCA(tmp_path)
    cert = x509.load_pem_x509_certificate(ca.serving("apiserver").cert_pem)
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "127.0.0.1" in {str(ip) for ip in sans.get_values_for_type(x509.IPAddress)}
    assert "localhost" in sans.get_values_for_type(x509.DNSName)


def test_make_node_looks_like_a_registered_kubelet() -> None:
    node = fakes.make_node(
        "n1", cpu="8", memory="16Gi", zone="z1", region="r1",
        allocatable={"cpu": "7500m"},
        taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
        images=[(["nginx:1.27"], 70_000_000)], owner="t1",
    )
    labels = node["metadata"]["labels"]
    assert labels["kubernetes.io/hostname"] == "n1"
    assert labels["topology.kubernetes.io/zone"] == "z1"
    assert labels["topology.kubernetes.io/region"] == "r1"
    assert labels[fakes.OWNER_LABEL] == "t1"
    status = node["status"]
    assert status["capacity"]["cpu"] == "8" and status["allocatable"]["cpu"] == "7500m"
    assert status["allocatable"]["memory"] == "16Gi"
    ready = [c for c in status["conditions"] if c["type"] == "Ready"]
    assert ready and ready[0]["status"] == "True"
    assert node["spec"]["taints"][0]["effect"] == "NoSchedule"
    assert status["images"] == [{"names": ["nginx:1.27"], "sizeBytes": 70_000_000}]
    assert fakes.make_node("n2", ready=False)["status"]["conditions"][-1]["status"] == "False"


def test_make_nodes_spreads_over_zones_with_unique_names_and_addresses() -> None:
    nodes = fakes.make_nodes(300, prefix="x", zones=("a", "b"))
    assert len({n["metadata"]["name"] for n in nodes}) == 300
    assert len({n["status"]["addresses"][0]["address"] for n in nodes}) == 300
    zones = [n["metadata"]["labels"]["topology.kubernetes.io/zone"] for n in nodes]
    assert zones[:4] == ["a", "b", "a", "b"] and zones.count("a") == 150


def test_make_pod_fields() -> None:
    pod = fakes.make_pod("p", "ns", cpu="250m", memory=None, scheduler_name="policy-scheduler",
                         node_selector={"disk": "ssd"}, ports=[8080], priority=10)
    spec = pod["spec"]
    assert pod["metadata"] == {"name": "p", "namespace": "ns", "labels": {}}
    assert spec["containers"][0]["resources"]["requests"] == {"cpu": "250m"}
    assert spec["containers"][0]["ports"][0]["hostPort"] == 8080
    assert spec["schedulerName"] == "policy-scheduler"
    assert spec["nodeSelector"] == {"disk": "ssd"} and spec["priority"] == 10
    assert "nodeName" not in spec
    assert fakes.collection_path("Pod", "ns") == "/api/v1/namespaces/ns/pods"
    assert fakes.collection_path("ReplicaSet", "ns") == "/apis/apps/v1/namespaces/ns/replicasets"


def test_list_and_object_paths() -> None:
    assert fakes.list_path("Pod") == "/api/v1/pods"
    assert fakes.list_path("StatefulSet") == "/apis/apps/v1/statefulsets"
    assert fakes.list_path("Node") == fakes.collection_path("Node") == "/api/v1/nodes"
    pod = {"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}}
    assert fakes.object_path(pod) == "/api/v1/namespaces/ns/pods/p"
    assert fakes.object_path({"kind": "Pod", "metadata": {"name": "p"}}) == "/api/v1/namespaces/default/pods/p"
    assert fakes.object_path({"kind": "RuntimeClass", "metadata": {"name": "rc"}}) == "/apis/node.k8s.io/v1/runtimeclasses/rc"
