"""Reading one ConfigMap through the API server (the policies' ConfigMap of ``run`` and ``explain``).

Only the API side lives here: where a ConfigMap is, and a GET that waits out a restarting API server. What
the keys mean (``*.policy`` files) is the application's business (:mod:`policyscheduler.app.sources`).
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import quote

from policyscheduler.kube.rest import ApiError, RestClient

__all__ = ["ConfigMapError", "configmap_path", "read_configmap"]


class ConfigMapError(RuntimeError):
    """The ConfigMap cannot be read (not found, forbidden, API server unreachable)."""


def configmap_path(namespace: str, name: str | None = None) -> str:
    """The API path of the ConfigMaps of ``namespace`` (the collection), or of the one named ``name``."""
    base = f"/api/v1/namespaces/{quote(namespace, safe='')}/configmaps"
    return f"{base}/{quote(name, safe='')}" if name else base


def read_configmap(client: RestClient, namespace: str, name: str, *, wait: float = 30.0) -> dict[str, Any]:
    """GET the ConfigMap; connection failures and 5xx are retried for ``wait`` seconds (a scheduler started
    with its API server must not give up while that server comes up). ConfigMapError otherwise."""
    deadline = time.monotonic() + wait
    delay = 0.5
    while True:
        try:
            return dict(client.get(configmap_path(namespace, name)))
        except ApiError as err:
            if err.status == 404:
                raise ConfigMapError(f"ConfigMap {namespace}/{name} not found") from err
            if (err.status == 0 or err.status >= 500) and time.monotonic() + delay < deadline:
                time.sleep(delay)
                delay = min(delay * 2, 5.0)
                continue
            raise ConfigMapError(f"cannot read ConfigMap {namespace}/{name}: {err}") from err
