"""The only package that talks to the API server (and the only one importing the ``kubernetes`` client).

It knows HTTP, JSON and Kubernetes' API conventions, not the scheduler: nothing here imports the policy
language, the loader, the reload, the evaluation or the scheduling cycle (``tests/test_layers.py``). The
application that wires these parts around the cycle is :mod:`policyscheduler.app`.

Transport:

* :mod:`.config` loads kubeconfig / in-cluster configuration with the official client; :mod:`.rest`
  speaks raw JSON with the same TLS settings over :mod:`.http1`; :mod:`.pipeline` keeps requests in flight
  on a few connections; :mod:`.ratelimit` is the client-side QPS limit.

Adapters:

* :mod:`.watch`: list + watch per resource (bookmarks, timeouts, 410 -> relist, backoff).
* :mod:`.binder` (async ``pods/binding``), :mod:`.events` (events.k8s.io/v1 + PodScheduled condition),
  :mod:`.lease` (leader election), :mod:`.configmaps` (reading one ConfigMap), :mod:`.metrics` and
  :mod:`.server` (/metrics, /healthz, /readyz), :mod:`.logs` (JSON log lines).
"""

from __future__ import annotations

from policyscheduler.kube.config import ConfigError, Connection, load_connection
from policyscheduler.kube.rest import ApiError, RestClient

__all__ = ["ApiError", "ConfigError", "Connection", "RestClient", "load_connection"]
