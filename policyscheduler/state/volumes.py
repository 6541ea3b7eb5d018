"""The claim work for a pod on its chosen node: the planning side of VolumeBinding (Reserve).

:func:`plan_volumes` runs the same FindPodVolumes as the ``volume_binding`` filter
(:func:`policyscheduler.objects.volumes.find_pod_volumes`) on the node the cycle chose and turns its
answer into the :class:`~policyscheduler.state.volumeplan.VolumePlan` the live binder executes. The
snapshot's ``assume`` calls it to treat that work as done for the next pods (kube's AssumePodVolumes), so
simulate and the live loop plan with one mechanism.
"""

from __future__ import annotations

import dataclasses

from policyscheduler.objects.records import Pod
from policyscheduler.objects.volumes import binding_error, claim_volumes, find_pod_volumes
from policyscheduler.state.store import ClusterState
from policyscheduler.state.volumeplan import StaticBinding, VolumePlan

__all__ = ["VolumeDecision", "plan_volumes"]


@dataclasses.dataclass(frozen=True)
class VolumeDecision:
    """What VolumeBinding says about one pod on one node: ``plan`` when the node fits (an empty plan when
    there is nothing to write), else None and kube's ``reasons`` (a PreFilter error is one reason)."""

    plan: VolumePlan | None
    reasons: tuple[str, ...] = ()


def plan_volumes(state: ClusterState, pod: Pod, node_name: str) -> VolumeDecision:
    """VolumeBinding for ``pod`` on node ``node_name`` over the state's storage (assumed work included).

    The plan's static bindings are (claim -> PV) pairs FindMatchingVolume chose, its ``provision`` the
    claims to annotate with ``volume.kubernetes.io/selected-node``; claims already bound need nothing."""
    if not claim_volumes(pod):
        return VolumeDecision(VolumePlan(node=node_name))
    view = state.storage
    error = binding_error(pod, view)
    if error:
        return VolumeDecision(None, (error,))
    slot = state.slot_of(node_name)
    if slot is None:
        return VolumeDecision(None, (f"node {node_name!r} is not in the cluster state",))
    check = find_pod_volumes(pod, state.nodes[slot], view)
    if not check.fits:
        return VolumeDecision(None, check.reasons)
    return VolumeDecision(VolumePlan(
        node=node_name,
        static=tuple(StaticBinding(pvc.namespace, pvc.name, pv.name) for pvc, pv in check.static),
        provision=tuple((pvc.namespace, pvc.name) for pvc in check.provision),
    ))
