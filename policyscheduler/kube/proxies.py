"""Which HTTP proxy, if any, carries our connections to the API server: client-go's rules.

client-go uses the kubeconfig cluster's ``proxy-url`` when there is one, and otherwise Go's
``http.ProxyFromEnvironment``: ``HTTPS_PROXY`` (for an ``https://`` server) or ``HTTP_PROXY`` (for
``http://``), upper case first, then lower case; ``NO_PROXY``/``no_proxy`` lists what bypasses the
proxy. We follow Go's rules (golang.org/x/net/http/httpproxy), including the one people trip over:
**``localhost`` and loopback addresses never go through an environment proxy**, whatever ``NO_PROXY``
says (a kubeconfig ``proxy-url`` is used even for them, as in client-go).

``NO_PROXY`` entries, comma separated: ``*`` (nothing is proxied); an IP (``10.0.0.1``, optionally
with ``:port``); a CIDR (``10.0.0.0/8``); a domain (``example.com`` matches it and its subdomains,
``.example.com`` and ``*.example.com`` only the subdomains), optionally with ``:port``.

Proxies we speak: ``http://`` (an HTTP CONNECT tunnel for an https API server; the absolute-form request
for a plain-http one), with ``user:password@`` sent as ``Proxy-Authorization: Basic``. ``https://``
proxies (TLS to the proxy, then TLS inside it) and ``socks5://`` are refused with :class:`ProxyError`,
which says so; client-go supports them, we do not yet.
"""

from __future__ import annotations

import base64
import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

__all__ = ["ProxyError", "ProxyRoute", "bypasses", "choose_proxy", "parse_proxy"]


class ProxyError(ValueError):
    """A proxy setting we cannot use (the message names the setting and why)."""


@dataclass(frozen=True)
class ProxyRoute:
    """An HTTP proxy: where to connect and the ``Proxy-Authorization`` header value, if any."""

    host: str
    port: int
    authorization: str | None = None
    source: str = ""
    """Where the setting came from (``proxy-url``, ``HTTPS_PROXY``...): for messages."""


def parse_proxy(value: str, source: str) -> ProxyRoute:
    """A proxy URL as Go reads it (no scheme means ``http://``)."""
    text = value.strip()
    if "://" not in text:
        text = "http://" + text
    url = urlsplit(text)
    scheme = url.scheme.lower()
    if scheme in ("socks5", "socks5h", "socks4"):
        raise ProxyError(f"{source} {value!r}: SOCKS proxies are not supported; use an HTTP (CONNECT) proxy")
    if scheme == "https":
        raise ProxyError(f"{source} {value!r}: a proxy reached over TLS (https://) is not supported; "
                         "use http:// (the tunnel to the API server is TLS either way)")
    if scheme != "http":
        raise ProxyError(f"{source} {value!r}: unsupported proxy scheme {url.scheme!r}")
    try:
        port = url.port or 80
    except ValueError as err:
        raise ProxyError(f"{source} {value!r}: {err}") from err
    if not url.hostname:
        raise ProxyError(f"{source} {value!r}: no host")
    auth = None
    if url.username is not None:
        pair = f"{unquote(url.username)}:{unquote(url.password or '')}".encode()
        auth = "Basic " + base64.b64encode(pair).decode()
    return ProxyRoute(url.hostname, port, auth, source)


def choose_proxy(server: str, proxy_url: str | None, environ: Mapping[str, str] | None = None) -> ProxyRoute | None:
    """The proxy for connections to ``server`` (an API server URL): the kubeconfig's ``proxy-url`` if
    set, else the environment's, unless the server bypasses it; :class:`ProxyError` for unusable ones."""
    if proxy_url:
        return parse_proxy(proxy_url, "kubeconfig proxy-url")
    env = os.environ if environ is None else environ
    url = urlsplit(server)
    scheme = url.scheme.lower()
    names = ("HTTPS_PROXY", "https_proxy") if scheme == "https" else ("HTTP_PROXY", "http_proxy")
    source, value = next(((n, env[n]) for n in names if env.get(n)), ("", ""))
    if not value:
        return None
    host = (url.hostname or "").lower()
    port = url.port or (443 if scheme == "https" else 80)
    no_proxy = env.get("NO_PROXY") or env.get("no_proxy") or ""
    if bypasses(host, port, no_proxy):
        return None
    return parse_proxy(value, source)


def bypasses(host: str, port: int, no_proxy: str) -> bool:
    """True when ``host:port`` is not to be proxied: localhost and loopback always (Go's rule), then
    the ``NO_PROXY`` entries."""
    host = host.lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    ip = _ip(host)
    if ip is not None and ip.is_loopback:
        return True
    for raw in no_proxy.split(","):
        entry = raw.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return True
        if "/" in entry:
            try:
                net = ipaddress.ip_network(entry, strict=False)
            except ValueError:
                continue
            if ip is not None and ip.version == net.version and ip in net:
                return True
            continue
        name, entry_port = _split_port(entry)
        if entry_port is not None and entry_port != port:
            continue
        entry_ip = _ip(name)
        if entry_ip is not None:
            if ip is not None and ip == entry_ip:
                return True
            continue
        if ip is not None:
            continue  # a domain never matches an address
        if name.startswith("*."):
            name = name[1:]
        if name.startswith("."):
            if host.endswith(name):
                return True
        elif host == name or host.endswith("." + name):
            return True
    return False


def _split_port(entry: str) -> tuple[str, int | None]:
    """``name[:port]`` and ``[v6]:port``; a bare IPv6 address has no port."""
    if entry.startswith("["):
        close = entry.find("]")
        if close > 0:
            rest = entry[close + 1:]
            return entry[1:close], int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else None
    if entry.count(":") == 1:
        name, _, port = entry.partition(":")
        if port.isdigit():
            return name, int(port)
    return entry, None


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return None
