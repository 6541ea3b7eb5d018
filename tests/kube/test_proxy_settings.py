"""Which proxy our connections use: the kubeconfig's ``proxy-url``, else ``HTTPS_PROXY``/``HTTP_PROXY``
with ``NO_PROXY``, by Go's rules (kube/proxies.py), and the request a plain-http server gets through one."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from policyscheduler.kube.config import ConfigError, load_connection
from policyscheduler.kube.proxies import ProxyError, ProxyRoute, bypasses, choose_proxy, parse_proxy
from policyscheduler.kube.rest import RestClient
from tests.kube.execplugin import Plugin
from tests.kube.test_rest import Server


@pytest.mark.parametrize(("host", "port", "no_proxy", "expected"), [
    ("localhost", 443, "", True),  # Go never proxies localhost or loopback
    ("127.0.0.1", 443, "", True),
    ("::1", 443, "", True),
    ("api.example.com", 443, "", False),
    ("api.example.com", 443, "*", True),
    ("api.example.com", 443, "example.com", True),  # the domain and its subdomains
    ("example.com", 443, "example.com", True),
    ("example.com", 443, ".example.com", False),  # a leading dot: subdomains only
    ("api.example.com", 443, ".example.com", True),
    ("api.example.com", 443, "*.example.com", True),
    ("badexample.com", 443, "example.com", False),
    ("API.Example.COM", 443, "example.com", True),
    ("api.example.com", 443, "example.com:6443", False),  # a port must match
    ("api.example.com", 6443, "example.com:6443", True),
    ("10.1.2.3", 443, "10.0.0.0/8", True),
    ("11.1.2.3", 443, "10.0.0.0/8", False),
    ("10.1.2.3", 443, "10.1.2.3", True),
    ("10.1.2.3", 443, "10.1.2.4", False),
    ("10.1.2.3", 6443, "10.1.2.3:443", False),
    ("fd00::5", 443, "fd00::/8", True),
    ("10.1.2.3", 443, "example.com, 10.1.2.3 ,", True),
    ("10.1.2.3", 443, "1.2.3.4.example.com", False),
])
def test_no_proxy_matches_as_go_does(host: str, port: int, no_proxy: str, expected: bool) -> None:
    assert bypasses(host, port, no_proxy) is expected


def test_the_environment_proxy_follows_the_server_scheme_upper_case_first() -> None:
    env = {"HTTPS_PROXY": "proxy.corp:3128", "https_proxy": "http://other:1", "HTTP_PROXY": "http://plain:8080"}
    assert choose_proxy("https://api.example.com:6443", None, env) == ProxyRoute("proxy.corp", 3128, None, "HTTPS_PROXY")
    assert choose_proxy("http://api.example.com", None, env) == ProxyRoute("plain", 8080, None, "HTTP_PROXY")
    assert choose_proxy("https://api.example.com", None, {"https_proxy": "http://low:1"}) == \
        ProxyRoute("low", 1, None, "https_proxy")
    assert choose_proxy("https://api.example.com", None, {**env, "no_proxy": "example.com"}) is None
    assert choose_proxy("https://127.0.0.1:6443", None, env) is None


def test_the_kubeconfig_proxy_wins_over_the_environment_even_for_loopback() -> None:
    env = {"HTTPS_PROXY": "http://env:1", "NO_PROXY": "*"}
    route = choose_proxy("https://127.0.0.1:6443", "http://u%40corp:p%3Ass@kube-proxy:8888", env)
    assert route is not None and (route.host, route.port, route.source) == ("kube-proxy", 8888, "kubeconfig proxy-url")
    assert route.authorization == "Basic dUBjb3JwOnA6c3M="  # base64 of "u@corp:p:ss"


@pytest.mark.parametrize(("value", "message"), [
    ("socks5://127.0.0.1:1080", "SOCKS proxies are not supported"),
    ("https://proxy:443", "over TLS"),
    ("ftp://proxy", "unsupported proxy scheme"),
    ("http://proxy:notaport", "proxy:notaport"),
])
def test_unusable_proxies_are_refused_with_the_reason(value: str, message: str) -> None:
    with pytest.raises(ProxyError, match=message):
        parse_proxy(value, "HTTPS_PROXY")


def test_an_unusable_proxy_url_is_a_configuration_error(tmp_path: Path) -> None:
    plugin = Plugin(tmp_path)
    with pytest.raises(ConfigError, match=r"kubeconfig proxy-url 'socks5://127\.0\.0\.1:1080': SOCKS"):
        load_connection(str(plugin.kubeconfig("https://127.0.0.1:6443", proxy_url="socks5://127.0.0.1:1080")))


@pytest.fixture
def server() -> Iterator[Server]:
    srv = Server()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def test_a_plain_http_server_behind_a_proxy_gets_absolute_form_requests(tmp_path: Path, server: Server) -> None:
    """The local server plays the proxy: it receives the absolute URL (a forward proxy's input) and the
    proxy credentials; the API server's name is never resolved by us."""
    plugin = Plugin(tmp_path)
    plugin.plan([{"token": "abc"}])
    proxy = f"http://me:secret@127.0.0.1:{server.server_port}"
    client = RestClient(load_connection(str(plugin.kubeconfig("http://api.invalid:8080/prefix", proxy_url=proxy))))
    client.get("/api/v1/nodes", limit=1)
    _, path, headers, _ = server.requests[0]
    assert path == "http://api.invalid:8080/prefix/api/v1/nodes?limit=1"
    assert headers["Host"] == "api.invalid:8080"
    assert headers["Proxy-Authorization"] == "Basic bWU6c2VjcmV0"
    assert headers["Authorization"] == "Bearer abc"
