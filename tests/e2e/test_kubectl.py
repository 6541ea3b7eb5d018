"""kubectl (and the Python client) work with the harness's admin kubeconfig."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from tests.conftest import Kube
from tests.controlplane.harness import HERE, ControlPlane

pytestmark = pytest.mark.e2e


def _kubectl(control_plane: ControlPlane, *args: str) -> str:
    proc = subprocess.run(["kubectl", "--kubeconfig", str(control_plane.kubeconfig), *args],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_kubectl_lists_fake_nodes_and_pods(kube: Kube) -> None:
    created = {n["metadata"]["name"] for n in kube.create_nodes(3, zones=("z1",))}
    kube.create_pods(2, prefix="p")
    nodes = json.loads(_kubectl(kube.control_plane, "get", "nodes", "-l", f"policyscheduler.test/owner={kube.namespace}",
                                "-o", "json"))
    assert {n["metadata"]["name"] for n in nodes["items"]} == created
    ready = [c["status"] for n in nodes["items"] for c in n["status"]["conditions"] if c["type"] == "Ready"]
    assert ready == ["True"] * 3
    pods = _kubectl(kube.control_plane, "get", "pods", "-n", kube.namespace, "-o", "name").split()
    assert sorted(pods) == ["pod/p-0", "pod/p-1"]


def test_kubectl_is_cluster_admin_on_the_pinned_version(control_plane: ControlPlane) -> None:
    assert _kubectl(control_plane, "auth", "can-i", "*", "*").strip() == "yes"
    version = json.loads(_kubectl(control_plane, "version", "-o", "json"))["serverVersion"]
    pinned = re.search(r"^require k8s.io/kubernetes (v\S+)", (HERE / "kube" / "go.mod").read_text(), re.M)
    assert pinned and version["gitVersion"] == pinned.group(1)


def test_python_client_loads_the_kubeconfig(control_plane: ControlPlane) -> None:
    from kubernetes import client, config

    # the kubernetes client package is not annotated
    api_client = config.new_client_from_config(config_file=str(control_plane.kubeconfig))  # type: ignore[no-untyped-call]
    try:
        names = {ns.metadata.name for ns in client.CoreV1Api(api_client).list_namespace().items if ns.metadata}
    finally:
        api_client.close()
    assert {"default", "kube-system"} <= names
