"""The incremental cluster state: what a scheduling cycle reads, kept up to date change by change.

* ``store.ClusterState``: nodes by name in stable slots, placed pods by uid, namespaces, Services and
  controllers; add / update / remove, assume / forget; generation numbers and ``changed_nodes_since``;
  per-node aggregates apart from the node spec; the indexes behind the ``cluster.*`` builtins.
* ``indexes``: per-node matching-pod counts (an LRU of arrays kept exact on every pod change) and
  label codes per topology key.
* ``whatif``: scoped views with pods taken away or added (preemption, nominated pods), undone on exit.
* ``budgets``: PodDisruptionBudgets as preemption reads them.
* ``snapshot.ClusterSnapshot``: the state fed with raw Kubernetes object dicts (a whole snapshot for
  ``simulate``, or one watch event at a time for the live loop), with the per-pod ``context``.
"""

from __future__ import annotations

from policyscheduler.state.snapshot import ClusterSnapshot
from policyscheduler.state.store import ClusterState, pod_key

__all__ = ["ClusterSnapshot", "ClusterState", "pod_key"]
