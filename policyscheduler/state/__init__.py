"""The incremental cluster state: what a scheduling cycle reads, kept up to date change by change.

* ``store.ClusterState``: nodes by name in stable slots, placed pods by uid, namespaces, Services and
  controllers; add / update / remove, assume / forget; generation numbers and ``changed_nodes_since``;
  per-node aggregates apart from the node spec; the indexes behind the ``cluster.*`` builtins.
* ``indexes``: per-node matching-pod counts (an LRU of arrays kept exact on every pod change) and
  label codes per topology key.
* ``whatif``: scoped views with pods taken away or added (preemption, nominated pods), undone on exit.
* ``budgets``: PodDisruptionBudgets as preemption reads them.
* ``storage.StorageState``: claims, PersistentVolumes, StorageClasses and the CSI objects, with their
  indexes and the claim work assumed for placed pods (``ClusterState.storage``).
* ``volumeplan`` / ``volumes``: the claim work a pod needs on its chosen node (``plan_volumes``), shared
  by the planning side (this package, the snapshot's ``assume``) and the live binder that carries it out.
* ``snapshot.ClusterSnapshot``: the state fed with raw Kubernetes object dicts (a whole snapshot for
  ``simulate``, or one watch event at a time for the live loop), with the per-pod ``context``.
"""

from __future__ import annotations

from policyscheduler.state.snapshot import ClusterSnapshot
from policyscheduler.state.store import ClusterState, pod_key
from policyscheduler.state.volumeplan import StaticBinding, VolumePlan
from policyscheduler.state.volumes import VolumeDecision, plan_volumes

__all__ = ["ClusterSnapshot", "ClusterState", "StaticBinding", "VolumeDecision", "VolumePlan", "plan_volumes", "pod_key"]
