"""A real Kubernetes control plane for tests, CI and benchmarks.

etcd, kube-apiserver, kube-scheduler and kube-controller-manager are built from pinned Go modules by
``build.sh`` and started on 127.0.0.1 by :mod:`tests.controlplane.harness`.
Imports here stay light (no ``cryptography``) so that importing the package from
conftest costs nothing for the fast tests.
"""

from __future__ import annotations

__all__ = ["ControlPlane", "ControlPlaneError", "ensure_binaries", "start"]


def __getattr__(name: str) -> object:
    if name in __all__:
        from tests.controlplane import harness

        return getattr(harness, name)
    raise AttributeError(name)
