"""Exec credential plugins and the per-request credential, against a small local HTTP server: how often
the plugin (and the ``kubernetes`` package's refresh hook) runs, and which token each request carries.

The live variants (the real API server accepting the plugin's token and client certificates, a
certificate rotation rebuilding TLS) are in test_exec_credentials_live.py."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s_client

from policyscheduler.kube.config import ConfigError, _from_configuration, load_connection
from policyscheduler.kube.rest import ApiError, RestClient
from tests.kube.execplugin import Plugin
from tests.kube.test_rest import Server


@pytest.fixture
def server() -> Iterator[Server]:
    srv = Server()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def tokens(server: Server) -> list[str]:
    return [headers.get("Authorization", "") for _, _, headers, _ in server.requests]


def test_a_credential_without_expiry_is_fetched_once(tmp_path: Path, server: Server) -> None:
    plugin = Plugin(tmp_path)
    plugin.plan([{"token": "abc"}])
    client = RestClient(load_connection(str(plugin.kubeconfig(f"http://127.0.0.1:{server.server_port}"))))
    for i in range(5):
        client.get(f"/r{i}")
    assert plugin.runs == 1
    assert tokens(server) == ["Bearer abc"] * 5


def test_an_expired_credential_runs_the_plugin_once_per_request(tmp_path: Path, server: Server) -> None:
    """Each request asks for the credential once: with a credential that is always already expired,
    the plugin runs exactly once per request (it ran twice with the ``kubernetes`` package's hook)."""
    plugin = Plugin(tmp_path)
    plugin.plan([{"token": "t1", "expires_in": -60}])
    client = RestClient(load_connection(str(plugin.kubeconfig(f"http://127.0.0.1:{server.server_port}"))))
    assert plugin.runs == 1  # at load: a broken plugin is a start-up error
    for i in range(4):
        client.get(f"/r{i}")
    assert plugin.runs == 5


def test_an_expiring_token_is_kept_until_it_expires_then_refreshed(tmp_path: Path, server: Server) -> None:
    plugin = Plugin(tmp_path)
    plugin.plan([{"token": "first", "expires_in": 2}, {"token": "second", "expires_in": 3600}])
    client = RestClient(load_connection(str(plugin.kubeconfig(f"http://127.0.0.1:{server.server_port}"))))
    client.get("/a")
    client.get("/b")
    assert plugin.runs == 1
    time.sleep(2.2)
    client.get("/c")
    client.get("/d")
    assert plugin.runs == 2
    assert tokens(server) == ["Bearer first", "Bearer first", "Bearer second", "Bearer second"]


def test_a_broken_plugin_is_a_configuration_error(tmp_path: Path) -> None:
    plugin = Plugin(tmp_path)
    plugin.script.write_text("#!/bin/sh\necho 'cannot log in' >&2\nexit 3\n")
    with pytest.raises(ConfigError, match="exited with 3: cannot log in"):
        load_connection(str(plugin.kubeconfig("http://127.0.0.1:1")))
    plugin.script.write_text("#!/bin/sh\necho '{\"kind\": \"ExecCredential\"}'\n")
    with pytest.raises(ConfigError, match="apiVersion"):
        load_connection(str(plugin.kubeconfig("http://127.0.0.1:1")))


def test_a_missing_plugin_names_the_install_hint(tmp_path: Path) -> None:
    plugin = Plugin(tmp_path)
    path = plugin.kubeconfig("http://127.0.0.1:1")
    path.write_text(path.read_text().replace("./credential-plugin", "./no-such-plugin")
                    .replace("interactiveMode: Never", "interactiveMode: Never\n      installHint: get it from IT"))
    with pytest.raises(ConfigError, match=r"not found \(get it from IT\)"):
        load_connection(str(path))


def test_a_401_makes_the_next_request_run_the_plugin_again(tmp_path: Path, server: Server) -> None:
    plugin = Plugin(tmp_path)
    plugin.plan([{"token": "revoked"}, {"token": "fresh"}])
    client = RestClient(load_connection(str(plugin.kubeconfig(f"http://127.0.0.1:{server.server_port}"))))
    server.unauthorized_once = True
    with pytest.raises(ApiError) as caught:
        client.get("/first")
    assert caught.value.status == 401
    client.get("/second")
    assert plugin.runs == 2
    assert tokens(server) == ["Bearer revoked", "Bearer fresh"]


def test_the_refresh_hook_of_the_kubernetes_package_runs_once_per_request(server: Server) -> None:
    """Tokens the ``kubernetes`` package refreshes (in-cluster, auth-provider) go through its hook; the
    client's own lookup calls the hook on every read, which made it run two or three times per request."""
    cfg = k8s_client.Configuration()
    cfg.host = f"http://127.0.0.1:{server.server_port}"
    calls: list[int] = []

    def hook(c: k8s_client.Configuration) -> None:
        calls.append(1)
        c.api_key["BearerToken"] = f"Bearer n{len(calls)}"

    cfg.refresh_api_key_hook = hook  # type: ignore[assignment]
    client = RestClient(_from_configuration(cfg))
    for i in range(3):
        client.get(f"/r{i}")
    assert len(calls) == 3
    assert tokens(server) == ["Bearer n1", "Bearer n2", "Bearer n3"]


def test_an_oidc_auth_provider_id_token_is_sent_once_per_request(tmp_path: Path, server: Server) -> None:
    """``auth-provider: oidc`` stays with the ``kubernetes`` package (its refresh hook re-reads the
    id-token, and asks the issuer for a new one once it expires: not exercised here, no issuer runs)."""
    def b64(doc: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode().rstrip("=")

    id_token = f"{b64({'alg': 'none'})}.{b64({'sub': 'me', 'exp': int(time.time()) + 3600})}.c2ln"
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{server.server_port}"}}],
        "users": [{"name": "u", "user": {"auth-provider": {"name": "oidc", "config": {
            "client-id": "kubernetes", "idp-issuer-url": "https://issuer.invalid", "id-token": id_token,
            "refresh-token": "r"}}}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}
    path = tmp_path / "oidc.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    client = RestClient(load_connection(str(path)))
    for i in range(3):
        client.get(f"/r{i}")
    assert tokens(server) == [f"Bearer {id_token}"] * 3
