"""Seeded random Kubernetes clusters and pending pods, shared by the property and differential tests.

``random_cluster(rng)`` / ``random_pod(rng, node_names)`` are plain functions of a ``random.Random``;
``random_case(seed)`` bundles both; :mod:`tests.gen.strategies` wraps them for hypothesis; and
:mod:`tests.gen.policysets` loads the default and the user-style policy sets they are run under.
"""

from __future__ import annotations

from tests.gen.cluster import Case, node_names, random_case, random_cluster, random_node, random_pod, random_workload

__all__ = ["Case", "node_names", "random_case", "random_cluster", "random_node", "random_pod", "random_workload"]
