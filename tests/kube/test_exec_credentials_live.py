"""Exec-plugin kubeconfigs against the real API server: the token a plugin prints is accepted and renewed
when it expires or is refused; a client certificate it prints is used, and a new one (after expiry)
rebuilds TLS, so the API server sees the new identity; certificate files rotated on disk are followed.

The harness's API server trusts its CA for client certificates and has a static admin token
(tests/controlplane/harness.py), which is what the plugin hands out."""

from __future__ import annotations

import base64
import json
import os
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml

from policyscheduler.kube.config import load_connection
from policyscheduler.kube.rest import ApiError, RestClient
from tests.kube.execplugin import Plugin

if TYPE_CHECKING:
    from tests.controlplane.certs import KeyPair
    from tests.controlplane.harness import ControlPlane

pytestmark = pytest.mark.e2e


def whoami(client: RestClient) -> str:
    """The user the API server authenticated us as (a SelfSubjectReview: any authenticated user may ask)."""
    review = client.post("/apis/authentication.k8s.io/v1/selfsubjectreviews",
                         {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    return str(review["status"]["userInfo"]["username"])


def user_cert(control_plane: ControlPlane, user: str) -> KeyPair:
    return control_plane.ca.client(f"{user}-{uuid.uuid4().hex[:6]}", user)


def test_a_plugin_token_is_used_and_renewed_after_it_expires(tmp_path: Path, control_plane: ControlPlane) -> None:
    plugin = Plugin(tmp_path)
    plugin.plan([{"token": control_plane.token, "expires_in": 2}, {"token": control_plane.token, "expires_in": 3600}])
    client = RestClient(load_connection(str(plugin.kubeconfig(control_plane.server, control_plane.ca.pair.cert_pem))))
    assert whoami(client) == "admin"
    assert whoami(client) == "admin"
    assert plugin.runs == 1
    time.sleep(2.2)
    assert whoami(client) == "admin"
    assert whoami(client) == "admin"
    assert plugin.runs == 2


def test_a_refused_plugin_token_is_replaced_on_the_next_request(tmp_path: Path, control_plane: ControlPlane) -> None:
    plugin = Plugin(tmp_path)
    plugin.plan([{"token": "revoked-token"}, {"token": control_plane.token}])
    client = RestClient(load_connection(str(plugin.kubeconfig(control_plane.server, control_plane.ca.pair.cert_pem))))
    with pytest.raises(ApiError) as caught:
        whoami(client)
    assert caught.value.status == 401
    assert whoami(client) == "admin"
    assert plugin.runs == 2


def test_a_plugin_client_certificate_is_used_and_a_new_one_rebuilds_tls(tmp_path: Path,
                                                                      control_plane: ControlPlane) -> None:
    first, second = user_cert(control_plane, "exec-user-1"), user_cert(control_plane, "exec-user-2")
    plugin = Plugin(tmp_path)
    plugin.plan([{"cert": first.cert_pem.decode(), "key": first.key_pem.decode(), "expires_in": 2},
                 {"cert": second.cert_pem.decode(), "key": second.key_pem.decode(), "expires_in": 3600}])
    client = RestClient(load_connection(str(plugin.kubeconfig(control_plane.server, control_plane.ca.pair.cert_pem))))
    assert whoami(client) == "exec-user-1"
    assert whoami(client) == "exec-user-1"  # the kept connection, same certificate
    assert plugin.runs == 1
    time.sleep(2.2)
    assert whoami(client) == "exec-user-2"  # a new TLS context; the old connection is not reused
    assert plugin.runs == 2
    with pytest.raises(ApiError, match='User "exec-user-2" cannot watch'):  # a watch's own connection too
        client.stream("/api/v1/namespaces", {"watch": "1", "timeoutSeconds": 1}, read_timeout=10)


def test_client_certificate_files_rotated_on_disk_are_picked_up(tmp_path: Path, control_plane: ControlPlane) -> None:
    old, new = user_cert(control_plane, "file-user-old"), user_cert(control_plane, "file-user-new")
    cert, key = tmp_path / "client.crt", tmp_path / "client.key"
    cert.write_bytes(old.cert_pem)
    key.write_bytes(old.key_pem)
    kubeconfig = tmp_path / "files.kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {
            "server": control_plane.server,
            "certificate-authority-data": base64.b64encode(control_plane.ca.pair.cert_pem).decode()}}],
        "users": [{"name": "u", "user": {"client-certificate": str(cert), "client-key": str(key)}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    client = RestClient(load_connection(str(kubeconfig)), cert_check_interval=0.2)
    assert whoami(client) == "file-user-old"
    (tmp_path / "next").write_bytes(b"half-written")  # a rotation caught midway: the old certificate stays
    os.replace(tmp_path / "next", cert)
    time.sleep(0.3)
    assert whoami(client) == "file-user-old"
    for path, data in ((cert, new.cert_pem), (key, new.key_pem)):  # as cert-manager/kubelet do: write, rename
        (tmp_path / "next").write_bytes(data)
        os.replace(tmp_path / "next", path)
    time.sleep(0.3)
    assert whoami(client) == "file-user-new"


def test_the_bind_pipeline_follows_the_plugin_too(tmp_path: Path, control_plane: ControlPlane) -> None:
    """The binder's path (kube/pipeline.py): a 401 there also makes the next request run the plugin, and
    a new certificate retires the idle lane opened with the old one."""
    cert = user_cert(control_plane, "pipe-user")
    plugin = Plugin(tmp_path)
    plugin.plan([{"token": "revoked-token"}, {"cert": cert.cert_pem.decode(), "key": cert.key_pem.decode()}])
    client = RestClient(load_connection(str(plugin.kubeconfig(control_plane.server, control_plane.ca.pair.cert_pem))))
    pipe = client.pipeline(lanes=1, depth=1)
    got: list[tuple[int, bytes]] = []
    arrived = threading.Event()

    def done(status: int, body: bytes, detail: str | None) -> None:
        got.append((status, body))
        arrived.set()

    review = json.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}).encode()
    try:
        for _ in range(2):
            arrived.clear()
            pipe.submit("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", review, done)
            assert arrived.wait(30)
    finally:
        pipe.close()
    assert [status for status, _ in got] == [401, 201]
    assert json.loads(got[1][1])["status"]["userInfo"]["username"] == "pipe-user"
    assert plugin.runs == 2
