"""What must happen to a pod's PersistentVolumeClaims before the pod itself is bound.

kube-scheduler's VolumeBinding plugin decides, for the chosen node, which unbound claims go to which
existing (static) PersistentVolume and which are left to a provisioner (dynamic provisioning with a
``WaitForFirstConsumer`` class, signalled by the ``volume.kubernetes.io/selected-node`` annotation). The
decision is made from the cluster state (``plan`` side, pure) and carried out against the API server by the
live loop (``execute`` side, before the pod's Binding). This module is the one shape both sides share, so
neither reaches into the other.
"""

from __future__ import annotations

import dataclasses

__all__ = ["StaticBinding", "VolumePlan", "EMPTY_PLAN"]


@dataclasses.dataclass(frozen=True)
class StaticBinding:
    """Bind claim ``namespace/claim`` to the existing PersistentVolume ``pv`` (VolumeBinding's static case)."""

    namespace: str
    claim: str
    pv: str


@dataclasses.dataclass(frozen=True)
class VolumePlan:
    """The claim work for one pod on one node.

    ``static``: claims to bind to chosen PVs. ``provision``: (namespace, claim) pairs to annotate with the
    selected node so that their provisioner creates a volume there. ``node``: the chosen node. An empty plan
    (every claim already bound, or no claims) means the pod can be bound at once.
    """

    node: str
    static: tuple[StaticBinding, ...] = ()
    provision: tuple[tuple[str, str], ...] = ()

    @property
    def empty(self) -> bool:
        """True when nothing has to be written before the pod's Binding."""
        return not self.static and not self.provision


EMPTY_PLAN = VolumePlan(node="")
"""A plan with no claim work (the node is not needed to execute it)."""
