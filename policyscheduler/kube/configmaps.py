"""Reading and writing one ConfigMap through the API server (the policies' ConfigMap of ``run`` and
``explain``; the last good set ``run`` keeps).

Only the API side lives here: where a ConfigMap is, a GET that waits out a restarting API server, and a
create-or-update of some keys. What the keys mean (``*.policy`` files, saved sets) is the application's
business (:mod:`policyscheduler.app.sources`, :mod:`policyscheduler.app.lastgood`).
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import quote

from policyscheduler.kube.rest import ApiError, RestClient

__all__ = ["ConfigMapError", "configmap_path", "read_configmap", "update_configmap_keys"]


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


def update_configmap_keys(client: RestClient, namespace: str, name: str, data: dict[str, str], *,
                          labels: dict[str, str] | None = None, timeout: float = 10.0) -> dict[str, Any]:
    """Set ``data``'s keys in the ConfigMap (other keys kept), creating it when absent; an optimistic
    update (``resourceVersion``), so of two concurrent writers one gets ConfigMapError (409) and retries.
    ConfigMapError on any failure (no retry here: the caller decides when to try again)."""
    path = configmap_path(namespace, name)
    try:
        try:
            current = dict(client.request("GET", path, timeout=timeout))
        except ApiError as err:
            if err.status != 404:
                raise
            body = {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})}, "data": data}
            return dict(client.request("POST", configmap_path(namespace), body, timeout=timeout))
        merged = {**(current.get("data") or {}), **data}
        if merged == current.get("data"):
            return current
        return dict(client.request("PUT", path, {**current, "data": merged}, timeout=timeout))
    except ApiError as err:
        raise ConfigMapError(f"cannot write ConfigMap {namespace}/{name}: {err}") from err
