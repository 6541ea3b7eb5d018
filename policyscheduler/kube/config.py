"""Where the API server is and who we are: configuration loaded by the ``kubernetes`` package.

The official client resolves kubeconfig files (contexts, exec plugins, inline certificate data) and
in-cluster service-account configuration; we take its resolved ``Configuration`` (server URL, CA,
client certificate, bearer token with its refresh hook) and talk raw JSON over our own HTTP/1.1 client with the same
TLS settings (:mod:`.rest`), because the client's model classes cost ~20x a ``json.loads`` per object.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable

from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

__all__ = ["Connection", "ConfigError", "load_connection"]


class ConfigError(RuntimeError):
    """No usable cluster configuration (the message says which source failed and why)."""


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
    service-account tokens are picked up."""
    tls_server_name: str | None = None


def _from_configuration(cfg: k8s_client.Configuration) -> Connection:
    def token() -> str | None:
        if cfg.refresh_api_key_hook is not None:
            cfg.refresh_api_key_hook(cfg)
        # The client stores tokens under "BearerToken" (kubeconfig and in-cluster alike); older
        # releases used "authorization". Without this a ServiceAccount token is never sent.
        value = cfg.get_api_key_with_prefix("BearerToken") or cfg.get_api_key_with_prefix("authorization")
        return value or None

    return Connection(
        server=str(cfg.host).rstrip("/"),
        ca_file=cfg.ssl_ca_cert,
        cert_file=cfg.cert_file,
        key_file=cfg.key_file,
        verify=bool(cfg.verify_ssl),
        token=token,
        tls_server_name=getattr(cfg, "tls_server_name", None),
    )


def load_connection(kubeconfig: str | None = None, context: str | None = None) -> Connection:
    """``kubeconfig`` (or ``$KUBECONFIG``) when given, else in-cluster configuration, else
    ``~/.kube/config``, as kube-scheduler users expect; :class:`ConfigError` when none works."""
    cfg = k8s_client.Configuration()
    if kubeconfig:
        if not os.path.exists(kubeconfig):
            raise ConfigError(f"--kubeconfig {kubeconfig}: no such file")
        try:
            k8s_config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=cfg)  # type: ignore[no-untyped-call,unused-ignore]
        except Exception as err:
            raise ConfigError(f"cannot load kubeconfig {kubeconfig}: {err}") from err
        return _from_configuration(cfg)
    problems: list[str] = []
    try:
        k8s_config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call,unused-ignore]
        return _from_configuration(cfg)
    except k8s_config.ConfigException as err:
        problems.append(f"in-cluster: {err}")
    try:
        k8s_config.load_kube_config(context=context, client_configuration=cfg)  # type: ignore[no-untyped-call,unused-ignore]
        return _from_configuration(cfg)
    except Exception as err:  # noqa: BLE001
        problems.append(f"kubeconfig: {err}")
    raise ConfigError("no cluster configuration found (" + "; ".join(problems) + "); pass --kubeconfig")
