"""What policies can see: pods, nodes and the per-pod cluster context (kube-scheduler v1.35 semantics).

``ROOTS`` (``pod``, ``node``, ``cluster``) and the records/builtins are registered in
:mod:`policyscheduler.schema` when this package is imported.

Layout: ``selectors`` (label / node selector matching), ``requests`` (PodRequests and its non-zero variant), ``records`` (the frozen records), ``parse`` and
``builders`` (object dicts -> records, warnings instead of exceptions), ``storage`` (claims, volumes,
classes, CSI nodes: records and builders) and ``volumes`` (kube-scheduler's four volume plugins as pure
functions over them), ``topology`` and ``affinity``
(PodTopologySpread / InterPodAffinity bookkeeping), ``domains`` (the ``PodSelector`` and per-domain
counts behind ``cluster.pods_with`` / ``count_in_domain`` ...: other pods by topology domain, for rules
written in policy text), ``cluster`` (the per-pod ``Cluster`` with lazy
caches, over the ``ClusterIndex`` that the cluster state implements). ``ClusterSnapshot`` lives in
:mod:`policyscheduler.state`, one floor up (state imports objects, not the other way round). Heavy
primitives live here; the rules that combine
them (conditions, reasons, score formulas, normalisation) live in ``policies/*.policy``. Quantity
parsing is shared with the checker in :mod:`policyscheduler.quantity`.

Evaluator contract: call ``cluster.set_feasible(names)`` after filtering and before
scoring -- PodTopologySpread's score sizes its domains from the feasible nodes, like kube's PreScore.
"""

from __future__ import annotations

from policyscheduler.objects.builtins import taint
from policyscheduler.objects.cluster import Cluster
from policyscheduler.objects.domains import PodSelector
from policyscheduler.objects.records import (
    HostPort,
    Node,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
    PodAffinityTerm,
    PreferredSchedulingTerm,
    SpreadConstraint,
    Taint,
    Toleration,
    Volume,
    WeightedPodAffinityTerm,
)
from policyscheduler.objects.storage import CSINode, PersistentVolume, PersistentVolumeClaim, StorageClass
from policyscheduler.quantity import parse_quantity
from policyscheduler.schema import ROOTS

ROOTS.update({"pod": Pod, "node": Node, "cluster": Cluster})


__all__ = [
    "Cluster",
    "Pod",
    "Node",
    "Taint",
    "Toleration",
    "HostPort",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "PreferredSchedulingTerm",
    "PodAffinityTerm",
    "PodSelector",
    "WeightedPodAffinityTerm",
    "SpreadConstraint",
    "Volume",
    "PersistentVolumeClaim",
    "PersistentVolume",
    "StorageClass",
    "CSINode",
    "parse_quantity",
    "taint",
]
