"""What the status server shows of a running scheduler: ``/configz`` (the effective configuration as
JSON, as kube-scheduler serves its ``componentconfig``) and how the server is built from the options.

Why here: the server (kube/server.py) knows nothing of profiles or options; this is the one place that
turns them into the endpoint's document and picks secure or plain serving.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry

from policyscheduler.app.options import Options, RunProfile
from policyscheduler.kube.resources import resource_registry
from policyscheduler.kube.rest import RestClient
from policyscheduler.kube.secure import DelegatedAuth, server_context
from policyscheduler.kube.server import StatusServer

__all__ = ["effective_config", "status_server"]


def effective_config(options: Options, profiles: Sequence[RunProfile], digests: Mapping[str, str]) -> dict[str, Any]:
    """The ``/configz`` document: the options in force and, per profile, its sources and policy digest."""
    opts = dataclasses.asdict(options)
    serving = opts.pop("secure_serving", None)
    plain = opts.pop("bind_address", None)
    doc: dict[str, Any] = {"kind": "PolicySchedulerConfiguration", "options": opts,
                           "serving": {"secure": serving, "plain": None if plain is None
                                       else {"host": plain[0], "port": plain[1]}},
                           "profiles": []}
    for p in profiles:
        sources = p.sources
        entry: dict[str, Any] = {"schedulerName": p.name, "policyDigest": digests.get(p.name, "")}
        paths = getattr(sources, "paths", None)
        if paths:
            entry["policies"] = [str(x) for x in paths]
        configmap = getattr(sources, "configmap", None)
        if configmap:
            entry["policiesConfigMap"] = "/".join(str(x) for x in configmap)
        if p.shadows is not None:
            entry["mode"], entry["shadows"] = "shadow", p.shadows
        doc["profiles"].append(entry)
    return doc


def status_server(options: Options, client: RestClient, registry: CollectorRegistry,
                  health: Callable[[], tuple[bool, str]], ready: Callable[[], tuple[bool, str]],
                  configz: Callable[[], Any]) -> StatusServer:
    """HTTPS with delegated authn/authz when ``options.secure_serving`` is set, else plain HTTP on
    ``options.bind_address`` (development). OSError when the port is taken; ValueError for bad TLS files."""
    resources = resource_registry(lambda: client.get("/api/v1/pods").get("items") or [])
    serving = options.secure_serving
    if serving is not None:
        return StatusServer((serving.host, serving.port), registry, health, ready, tls=server_context(serving),
                            auth=DelegatedAuth(client), configz=configz, resources=resources)
    assert options.bind_address is not None
    return StatusServer(options.bind_address, registry, health, ready, configz=configz, resources=resources)
