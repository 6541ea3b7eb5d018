"""Where the API server is and who we are: configuration loaded by the ``kubernetes`` package.

The official client resolves kubeconfig files (contexts, inline certificate data, relative paths) and
in-cluster service-account configuration; we take its resolved ``Configuration`` (server URL, CA,
client certificate, bearer token with its refresh hook, ``proxy-url``) and talk raw JSON over our own
HTTP/1.1 client with the same TLS settings (:mod:`.rest`), because the client's model classes cost ~20x a
``json.loads`` per object.

Two things we do not leave to that package:

- ``exec`` credential plugins (:mod:`.execcred`): it never renews a client certificate a plugin returns,
  and it renews tokens five minutes early (a short-lived credential means a plugin run per request).
- the proxy (:mod:`.proxies`): the kubeconfig's ``proxy-url``, else ``HTTPS_PROXY``/``NO_PROXY`` as Go reads
  them, resolved here once so that a setting we cannot use is a :class:`ConfigError` at start-up.

The credential is asked for once per request (:meth:`Connection.credential`): the bearer token and the
client certificate files together. The TLS context follows the certificate (:mod:`.rest` rebuilds it when
the files' paths or contents change).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from typing import Any

from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.config import kube_config as k8s_kube_config

from policyscheduler.kube.execcred import ExecError, ExecPlugin
from policyscheduler.kube.proxies import ProxyError, ProxyRoute, choose_proxy

__all__ = ["ConfigError", "Connection", "Credential", "load_connection"]


class ConfigError(RuntimeError):
    """No usable cluster configuration (the message says which source failed and why)."""


@dataclasses.dataclass(frozen=True)
class Credential:
    """Who we are for one request: the ``Authorization`` header value and the client certificate files."""

    authorization: str | None
    cert_file: str | None = None
    key_file: str | None = None


@dataclasses.dataclass(frozen=True)
class Connection:
    """Everything needed to open TLS connections and authenticate to one API server."""

    server: str
    ca_file: str | None
    cert_file: str | None
    key_file: str | None
    verify: bool
    token: Callable[[], str | None]
    """The ``Authorization`` header value (``Bearer ...``) or None; called per request so rotated
    service-account tokens are picked up (used when ``credentials`` is not set)."""
    tls_server_name: str | None = None
    proxy: ProxyRoute | None = None
    """The HTTP proxy to reach ``server`` through (already chosen: kubeconfig ``proxy-url`` or environment)."""
    credentials: Callable[[], Credential] | None = None
    """Token and client certificate for the next request, when they can change together (exec plugins,
    the ``kubernetes`` package's refresh hook); None: ``token()`` with the fixed ``cert_file``/``key_file``."""
    unauthorized: Callable[[], None] | None = None
    """Called when the API server answers 401: an exec plugin's credential is dropped and the plugin runs
    again for the next request, as client-go does."""

    def credential(self) -> Credential:
        """The credential for one request (one call per request: it may run a refresh hook or a plugin)."""
        if self.credentials is not None:
            return self.credentials()
        return Credential(self.token(), self.cert_file, self.key_file)


def _token_of(cfg: k8s_client.Configuration) -> str | None:
    """The bearer token the hook left in ``cfg``, read without calling the hook again (the client's
    ``get_api_key_with_prefix`` calls it on each lookup: twice per request before, thrice in-cluster)."""
    for name in ("BearerToken", "authorization"):  # older releases used "authorization"
        key = cfg.api_key.get(name)
        if key:
            prefix = cfg.api_key_prefix.get(name)
            return f"{prefix} {key}" if prefix else str(key)
    return None


def _from_configuration(cfg: k8s_client.Configuration, plugin: ExecPlugin | None = None,
                        proxy_url: str | None = None) -> Connection:
    """``proxy_url``: the kubeconfig cluster's ``proxy-url``. The package's own ``cfg.proxy`` is not used:
    recent releases fill it from the environment without NO_PROXY's Go rules (loopback included)."""
    server = str(cfg.host).rstrip("/")
    try:
        proxy = choose_proxy(server, proxy_url)
    except ProxyError as err:
        raise ConfigError(str(err)) from err

    def token() -> str | None:
        return credential().authorization

    def credential() -> Credential:
        if plugin is not None:
            try:
                cred = plugin.credential()
            except ExecError as err:
                raise OSError(str(err)) from err  # a request that fails like a connection: retried
            authorization = f"Bearer {cred.token}" if cred.token else _token_of(cfg)
            if cred.cert_file:
                return Credential(authorization, cred.cert_file, cred.key_file)
            return Credential(authorization, cfg.cert_file, cfg.key_file)
        hook = cfg.refresh_api_key_hook
        if hook is not None:
            hook(cfg)  # once: may re-read a token file or re-run the package's auth-provider refresh
        return Credential(_token_of(cfg), cfg.cert_file, cfg.key_file)

    return Connection(
        server=server,
        ca_file=cfg.ssl_ca_cert,
        cert_file=cfg.cert_file,
        key_file=cfg.key_file,
        verify=bool(cfg.verify_ssl),
        token=token,
        tls_server_name=getattr(cfg, "tls_server_name", None),
        proxy=proxy,
        credentials=credential,
        unauthorized=plugin.invalidate if plugin is not None else None,
    )


def _node(item: Any) -> dict[str, Any]:
    value = getattr(item, "value", item)
    return value if isinstance(value, dict) else {}


def _named(items: Any, name: str) -> Any:
    for item in getattr(items, "value", items) or []:
        if _node(item).get("name") == name:
            return item
    return None


def _active(merged: Any, context: str | None) -> tuple[Any, dict[str, Any]]:
    """The active context's user entry (None if absent) and cluster section ({} if absent)."""
    root = _node(merged)
    ctx = _named(root.get("contexts"), context or str(root.get("current-context") or ""))
    if ctx is None:
        return None, {}
    ctx_body = _node(ctx).get("context") or {}
    user_item = _named(root.get("users"), str(ctx_body.get("user") or ""))
    cluster_item = _named(root.get("clusters"), str(ctx_body.get("cluster") or ""))
    cluster = _node(cluster_item).get("cluster") if cluster_item is not None else None
    return user_item, cluster if isinstance(cluster, dict) else {}


def _take_exec(user_item: Any, cluster: dict[str, Any]) -> ExecPlugin | None:
    """Take the active user's ``exec`` section out of the merged kubeconfig (so the ``kubernetes``
    package does not run the plugin itself) and make our :class:`ExecPlugin` of it; None when the user
    has none, or has a token or auth-provider the package would use first."""
    if user_item is None:
        return None
    user = _node(user_item).get("user")
    if not isinstance(user, dict) or not isinstance(user.get("exec"), dict):
        return None
    if any(key in user for key in ("auth-provider", "token", "tokenFile")):
        return None
    path = getattr(user_item, "path", None)
    base_dir = os.path.dirname(os.path.abspath(path)) if path else os.getcwd()
    spec = user.pop("exec")
    try:
        return ExecPlugin(spec, base_dir, cluster)
    except ExecError as err:
        raise ConfigError(str(err)) from err


def _load_kubeconfig(files: str, context: str | None) -> Connection:
    """One kubeconfig (or a ``KUBECONFIG``-style list) with our exec plugin handling."""
    merger = k8s_kube_config.KubeConfigMerger(files)  # type: ignore[no-untyped-call,unused-ignore]
    if merger.config is None:
        raise ConfigError(f"no kubeconfig found in {files}")
    user_item, cluster = _active(merger.config, context)
    plugin = _take_exec(user_item, cluster)
    loader = k8s_kube_config.KubeConfigLoader(  # type: ignore[no-untyped-call,unused-ignore]
        config_dict=merger.config, active_context=context, config_base_path=None)
    cfg = k8s_client.Configuration()
    loader.load_and_set(cfg)  # type: ignore[no-untyped-call,unused-ignore]
    if plugin is not None:
        try:
            plugin.credential()  # run it now: a broken plugin is a start-up error, not a failing request
        except ExecError as err:
            raise ConfigError(str(err)) from err
    return _from_configuration(cfg, plugin, str(cluster.get("proxy-url") or "") or None)


def load_connection(kubeconfig: str | None = None, context: str | None = None) -> Connection:
    """``kubeconfig`` (or ``$KUBECONFIG``) when given, else in-cluster configuration, else
    ``~/.kube/config``, as kube-scheduler users expect; :class:`ConfigError` when none works."""
    if kubeconfig:
        if not os.path.exists(kubeconfig):
            raise ConfigError(f"--kubeconfig {kubeconfig}: no such file")
        try:
            return _load_kubeconfig(kubeconfig, context)
        except ConfigError:
            raise
        except Exception as err:
            raise ConfigError(f"cannot load kubeconfig {kubeconfig}: {err}") from err
    problems: list[str] = []
    cfg = k8s_client.Configuration()
    try:
        k8s_config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call,unused-ignore]
        return _from_configuration(cfg)
    except k8s_config.ConfigException as err:
        problems.append(f"in-cluster: {err}")
    try:
        return _load_kubeconfig(os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config"), context)
    except ConfigError as err:
        problems.append(f"kubeconfig: {err}")
    except Exception as err:  # noqa: BLE001
        problems.append(f"kubeconfig: {err}")
    raise ConfigError("no cluster configuration found (" + "; ".join(problems) + "); pass --kubeconfig")
