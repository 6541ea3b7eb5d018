"""Our client reaching the real API server through an HTTP CONNECT proxy (tests/kube/proxy.py
``ConnectProxy``, which counts its tunnels): the kubeconfig's ``proxy-url``, ``HTTPS_PROXY`` from the
environment, and what bypasses it (loopback always, as in Go; ``NO_PROXY``)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from policyscheduler.kube.config import load_connection
from policyscheduler.kube.rest import ApiError, RestClient
from tests.kube.proxy import ConnectProxy

if TYPE_CHECKING:
    from tests.controlplane.harness import ControlPlane

pytestmark = pytest.mark.e2e


@pytest.fixture
def connect_proxy(control_plane: ControlPlane) -> Iterator[ConnectProxy]:
    host, port = control_plane.server.removeprefix("https://").rsplit(":", 1)
    proxy = ConnectProxy((host, int(port)))
    yield proxy
    proxy.close()


def kubeconfig(control_plane: ControlPlane, folder: Path, *, server: str | None = None,
               proxy_url: str | None = None) -> str:
    """The harness's admin kubeconfig with another server address and/or a ``proxy-url``."""
    config: dict[str, Any] = yaml.safe_load(control_plane.kubeconfig.read_text())
    cluster = config["clusters"][0]["cluster"]
    if server:
        cluster["server"] = server
    if proxy_url:
        cluster["proxy-url"] = proxy_url
    path = folder / "proxied.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def port_of(control_plane: ControlPlane) -> str:
    return control_plane.server.rsplit(":", 1)[1]


def test_kubeconfig_proxy_url_carries_requests_and_watches(tmp_path: Path, control_plane: ControlPlane,
                                                           connect_proxy: ConnectProxy) -> None:
    client = RestClient(load_connection(kubeconfig(control_plane, tmp_path, proxy_url=connect_proxy.url)))
    for _ in range(5):
        assert client.get("/api/v1/namespaces/default")["metadata"]["name"] == "default"
    assert connect_proxy.tunnels == 1  # one kept connection through one tunnel
    stream = client.stream("/api/v1/namespaces", {"watch": "1", "timeoutSeconds": 1}, read_timeout=10)
    assert any(event["type"] == "ADDED" for event in stream)
    assert connect_proxy.tunnels == 2
    assert connect_proxy.asked == [f"127.0.0.1:{port_of(control_plane)}"] * 2


def test_proxy_credentials_from_the_url_and_a_refusal_that_says_so(tmp_path: Path,
                                                                    control_plane: ControlPlane) -> None:
    host, port = control_plane.server.removeprefix("https://").rsplit(":", 1)
    proxy = ConnectProxy((host, int(port)), auth="Basic " + base64.b64encode(b"scheduler:s3cret").decode())
    try:
        good = proxy.url.replace("http://", "http://scheduler:s3cret@")
        client = RestClient(load_connection(kubeconfig(control_plane, tmp_path, proxy_url=good)))
        assert client.get("/api/v1/namespaces/default")["metadata"]["name"] == "default"
        bad = proxy.url.replace("http://", "http://scheduler:wrong@")
        client = RestClient(load_connection(kubeconfig(control_plane, tmp_path, proxy_url=bad)))
        with pytest.raises(ApiError, match=r"refused CONNECT .* 407 Proxy Authentication Required") as caught:
            client.get("/api/v1/namespaces/default")
        assert caught.value.status == 0
        assert (proxy.tunnels, proxy.refused) == (1, 1)
    finally:
        proxy.close()


def test_https_proxy_from_the_environment(tmp_path: Path, control_plane: ControlPlane,
                                          connect_proxy: ConnectProxy, monkeypatch: pytest.MonkeyPatch) -> None:
    """A name only the proxy resolves (the serving certificate is valid for kubernetes.default.svc)."""
    monkeypatch.setenv("HTTPS_PROXY", connect_proxy.url)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    server = f"https://kubernetes.default.svc:{port_of(control_plane)}"
    client = RestClient(load_connection(kubeconfig(control_plane, tmp_path, server=server)))
    assert client.get("/api/v1/namespaces/default")["metadata"]["name"] == "default"
    assert connect_proxy.asked == [f"kubernetes.default.svc:{port_of(control_plane)}"]
    assert connect_proxy.tunnels == 1


def test_loopback_and_no_proxy_bypass_the_environment_proxy(tmp_path: Path, control_plane: ControlPlane,
                                                            connect_proxy: ConnectProxy,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", connect_proxy.url)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    client = RestClient(load_connection(kubeconfig(control_plane, tmp_path)))  # https://127.0.0.1:<port>
    assert client.get("/api/v1/namespaces/default")["metadata"]["name"] == "default"
    monkeypatch.setenv("no_proxy", "example.com,.svc")
    server = f"https://kubernetes.default.svc:{port_of(control_plane)}"
    client = RestClient(load_connection(kubeconfig(control_plane, tmp_path, server=server)))
    with pytest.raises(ApiError) as caught:  # direct: this machine cannot resolve the cluster-internal name
        client.get("/api/v1/namespaces/default")
    assert caught.value.status == 0 and "kubernetes.default.svc" in str(caught.value)
    assert connect_proxy.tunnels == 0 and connect_proxy.asked == []
