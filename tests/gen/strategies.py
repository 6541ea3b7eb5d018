"""Hypothesis strategies over the seeded generators.

The strategies draw a *seed* and hand it to the plain generators in :mod:`tests.gen.cluster`: the
example hypothesis prints on failure is then one integer that reproduces the case outside hypothesis
(``random_case(seed)``), and shrinking moves towards small seeds rather than through the structure of
Kubernetes objects, which would mostly produce invalid objects.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import strategies as st

from tests.gen.cluster import Case, random_case, random_cluster, random_workload

__all__ = ["seeds", "clusters", "cases", "workloads"]

SEED_MAX = 2**32 - 1


def seeds() -> st.SearchStrategy[int]:
    """Seeds for ``random.Random``; every generator below is a function of one of these."""
    return st.integers(0, SEED_MAX)


def clusters(*, nodes: int | None = None) -> st.SearchStrategy[list[dict[str, Any]]]:
    """Random clusters (objects only, no pending pod)."""
    return seeds().map(lambda seed: random_cluster(random.Random(seed), nodes=nodes))


def cases(*, nodes: int | None = None) -> st.SearchStrategy[Case]:
    """Random (cluster, pending pod) cases, each reproducible from ``case.seed``."""
    return seeds().map(lambda seed: random_case(seed, nodes=nodes))


def workloads(*, pending: int = 8, nodes: int | None = None) -> st.SearchStrategy[list[dict[str, Any]]]:
    """Random clusters with ``pending`` pending pods, for whole ``simulate`` runs."""
    return seeds().map(lambda seed: random_workload(random.Random(seed), pending=pending, nodes=nodes))
