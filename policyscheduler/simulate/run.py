"""The simulation loop: a scaled-down scheduling queue without time.

Pending pods are tried one by one in queue order (:func:`queue_order`); a placement is applied to the
snapshot (``snapshot.assume``) before the next pod is evaluated, as kube-scheduler's cache assumes a pod
before binding. A pod that fits nowhere goes back to the queue: kube-scheduler requeues unschedulable
pods when the cluster changes, so after each pass the failed pods are tried again, in queue order,
until a pass places nothing new. A failed pod is only re-evaluated if something was placed since its
last attempt (otherwise the snapshot is unchanged and so would be its decision); its message is the one
from its last attempt.

Every pending pod is scheduled whatever its ``spec.schedulerName``: a simulation asks what these
policies would do with the whole workload. Pending = a Pod without ``spec.nodeName`` that is not
Succeeded/Failed and not being deleted (:func:`is_pending`).

Placements are reported in **settled order**: every successful placement in the order it happened
(pass after pass), then the pods that fit nowhere, in queue order.

Randomness: one ``random.Random(seed)`` drives every tie-break, so a run is reproducible per seed.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Iterable
from typing import Any

from policyscheduler.evaluation import Decision, Evaluator, ReferenceEvaluator
from policyscheduler.simulate.queue import is_pending, queue_order

__all__ = ["NodeUsage", "Simulation", "prepare", "simulate"]

_ZONE_LABEL = "topology.kubernetes.io/zone"


def _percent(requested: Any, allocatable: Any) -> int:
    if not allocatable:
        return 0
    return int(100 * requested / allocatable)


def _usage(snapshot: Any, placed: list[Decision]) -> tuple[NodeUsage, ...]:
    """Per-node utilisation after the run (requests over allocatable, as the Fit filter sees it)."""
    counts: dict[str, int] = {}
    for decision in placed:
        counts[decision.node or ""] = counts.get(decision.node or "", 0) + 1
    out = []
    for node in snapshot.nodes:
        alloc = getattr(node, "allocatable", {}) or {}
        req = getattr(node, "requested", {}) or {}
        out.append(
            NodeUsage(
                name=node.name,
                zone=(getattr(node, "labels", {}) or {}).get(_ZONE_LABEL, ""),
                placed=counts.get(node.name, 0),
                pods=int(getattr(node, "pod_count", 0)),
                max_pods=int(alloc.get("pods", 0)),
                cpu_percent=_percent(req.get("cpu", 0), alloc.get("cpu", 0)),
                memory_percent=_percent(req.get("memory", 0), alloc.get("memory", 0)),
            )
        )
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class NodeUsage:
    """A node at the end of the run: how full it is, and how many pods the run put there."""

    name: str
    zone: str
    placed: int
    pods: int
    max_pods: int
    cpu_percent: int
    memory_percent: int


@dataclasses.dataclass(frozen=True)
class Simulation:
    """The outcome of one run."""

    policy_digest: str
    decisions: tuple[Decision, ...]
    node_count: int
    passes: int
    nodes: tuple[NodeUsage, ...] = ()

    @property
    def placed(self) -> list[Decision]:
        """Decisions that found a node."""
        return [d for d in self.decisions if d.node is not None]

    @property
    def unplaced(self) -> list[Decision]:
        """Decisions of pods that fit nowhere."""
        return [d for d in self.decisions if d.node is None]

    def to_json(self) -> dict[str, Any]:
        """The ``simulate --output json`` document."""
        return {
            "policy_digest": self.policy_digest,
            "placements": [d.to_json() for d in self.decisions],
        }


def prepare(objects: Iterable[dict[str, Any]]) -> tuple[Any, list[dict[str, Any]]]:
    """Build the snapshot and the queue (pending pods in queue order).

    Every pending pod is converted once here, so the object model's notes about malformed fields (bad
    quantities, wrong field types; it never raises) are all in ``snapshot.warnings`` before the run.
    """
    from policyscheduler.objects import ClusterSnapshot

    objects = list(objects)
    snapshot = ClusterSnapshot.from_objects(objects)
    queue = queue_order([obj for obj in objects if is_pending(obj)])
    for pod in queue:
        snapshot.pod_record(pod)
    return snapshot, queue


def simulate(
    policy_set: Any,
    objects: Iterable[dict[str, Any]],
    *,
    seed: int = 0,
    evaluator: Evaluator | None = None,
    progress: Callable[[int, int], None] | None = None,
    prepared: tuple[Any, list[dict[str, Any]]] | None = None,
) -> Simulation:
    """Schedule every pending pod of ``objects`` under ``policy_set``; see the module docstring.

    ``prepared`` is the result of :func:`prepare` for the same objects, when the caller already has it.
    """
    snapshot, queue = prepared if prepared is not None else prepare(objects)
    evaluator = evaluator if evaluator is not None else ReferenceEvaluator()
    rng = random.Random(seed)

    placed: list[Decision] = []
    last_failure: dict[int, Decision] = {}
    attempted_at: dict[int, int] = {}  # queue index -> len(placed) at its last attempt
    todo = list(range(len(queue)))
    passes = 0
    attempts = 0
    while todo:
        passes += 1
        placed_before = len(placed)
        failed: list[int] = []
        for index in todo:
            if attempted_at.get(index) == len(placed):
                failed.append(index)  # nothing changed since its last attempt
                continue
            decision = evaluator.evaluate(policy_set, snapshot, queue[index], rng=rng)
            attempted_at[index] = len(placed)
            attempts += 1
            if decision.node is not None:
                snapshot.assume(queue[index], decision.node)
                placed.append(decision)
                last_failure.pop(index, None)
            else:
                last_failure[index] = decision
                failed.append(index)
            if progress is not None:
                progress(len(placed), len(queue))
        if len(placed) == placed_before:
            break
        todo = failed
    unplaced = [last_failure[index] for index in sorted(last_failure)]
    return Simulation(
        policy_digest=policy_set.digest,
        decisions=tuple(placed + unplaced),
        node_count=len(snapshot.nodes),
        passes=passes,
        nodes=_usage(snapshot, placed),
    )
