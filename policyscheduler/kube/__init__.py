"""The only package that talks to the API server (and the only one importing the ``kubernetes`` client).

* :mod:`.config` loads kubeconfig / in-cluster configuration with the official client; :mod:`.rest`
  speaks raw JSON with the same TLS settings.
* :mod:`.watch`: list + watch per resource (bookmarks, timeouts, 410 -> relist, backoff).
* :mod:`.binder` (async ``pods/binding``), :mod:`.events` (events.k8s.io/v1 + PodScheduled condition),
  :mod:`.lease` (leader election), :mod:`.metrics` and :mod:`.server` (/metrics, /healthz, /readyz).
* :mod:`.policysource`: the policy sources of ``run`` (``--policies-configmap`` watched by name,
  ``--policies`` folders polled) feeding :mod:`policyscheduler.reload`, and the reload's events and metrics.
* :mod:`.scheduler` wires them around the project's one scheduling cycle (:mod:`policyscheduler.cycle`).
"""

from __future__ import annotations

from policyscheduler.kube.config import ConfigError, Connection, load_connection
from policyscheduler.kube.rest import ApiError, RestClient
from policyscheduler.kube.scheduler import LiveScheduler, Options

__all__ = ["ApiError", "ConfigError", "Connection", "LiveScheduler", "Options", "RestClient", "load_connection"]
