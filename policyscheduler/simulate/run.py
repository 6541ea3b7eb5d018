"""The simulation loop: the project's one scheduling cycle, driven without time.

``simulate`` runs :class:`policyscheduler.cycle.Cycle` -- the same queue, cache and ``schedule_one`` as
the live scheduler -- over a snapshot instead of watches, with a binder that always succeeds at once.
Pending pods enter the queue in :func:`queue_order`; a placement is assumed into the snapshot before
the next pod is evaluated, as kube-scheduler's cache assumes a pod before binding.

No-time mode: the queue's clock stands still and backoff is zero. The cluster events are the live
scheduler's: each placement is an ``AssignedPodAdd`` on its node, delivered to the queue at the end of
the *pass* (one drain of the active queue) in which it happened. A pod that fits nowhere waits in the
unschedulable pool until such an event can change its verdict (the live queue's requeue-by-reads:
:class:`policyscheduler.cycle.events.Interest`); the cycle re-evaluates it only if something was placed
since its last attempt (otherwise it gets its previous decision again). The first pass takes the pods in
queue order; a retry pass takes the pods that went back **most recently failed first**, so a pod that
waited for one placed in the previous pass is tried right after it: a chain of pods each needing the
next (required pod affinity, queued in the wrong order) places in two passes with about 2P evaluations,
instead of one pass per link (P(P+1)/2). The run ends after a pass that placed nothing; a failed pod's
message is the one from its last attempt.

Memory: a decision's per-node detail (verdicts, per-rule scores, totals) is kept only when the caller
asks for it (``detail=True``, the library default; the CLI's table and JSON need only node, score, top,
message and score errors, and pass ``detail=False``), so a run's memory does not grow with pods x nodes.

Every pending pod is scheduled whatever its ``spec.schedulerName``: a simulation asks what these
policies would do with the whole workload. Pending = a Pod without ``spec.nodeName`` that is not
Succeeded/Failed and not being deleted (:func:`is_pending`).

Gated pods (``spec.schedulingGates`` not empty) wait in the queue's gated pool, as in the live
scheduler and kube-scheduler: never evaluated, never placed, and they place nothing in the way of the
others. Each is reported as unplaced (node null) with kube-scheduler's own PreEnqueue text,
``waiting for scheduling gates: [a b]`` (:func:`policyscheduler.cycle.gates.gate_message`): it names the
gates, where the pod's ``PodScheduled`` condition (written by the API server at creation) only says
"Scheduling is blocked due to non-empty scheduling gates". There is no FailedScheduling text for them
because there is no scheduling attempt.

Placements are reported in **settled order**: every successful placement in the order it happened
(pass after pass), then the pods that fit nowhere, in queue order.

Preemption is applied offline, as kube-scheduler would end up: a pod that fits nowhere and whose
preemption nominated a node (:mod:`policyscheduler.cycle.preemption`) has its victims removed from the
cluster at once (an ``AssignedPodDelete`` on that node, delivered at the end of the pass) and is placed in
a later pass, its nominated node tried first. Its placement lists ``preempted`` (the victims,
``namespace/name``) and ``nominated_node``. A victim that this run had placed itself loses its placement:
it is reported unplaced with ``Preempted by pod <ns/name> on node <node>`` (kube's Preempted event
names the preemptor's uid). Victims that were already running simply disappear from the cluster.

Randomness: one ``random.Random(seed)`` drives every tie-break, so a run is reproducible per seed.
"""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from policyscheduler.cycle import ERROR, SCHEDULED, UNSCHEDULABLE, Attempt, ClusterCache, Cycle, SchedulingQueue
from policyscheduler.cycle.events import ClusterEvent
from policyscheduler.cycle.gates import gate_message
from policyscheduler.evaluation import Decision, Evaluator, ReferenceEvaluator, pod_key
from policyscheduler.simulate.queue import is_pending, queue_order
from policyscheduler.times import DEFAULT_NOW

if TYPE_CHECKING:
    from policyscheduler.compiler import PolicySet
    from policyscheduler.state import ClusterSnapshot

__all__ = ["NodeUsage", "Prepared", "Simulation", "prepare", "simulate"]

_ZONE_LABEL = "topology.kubernetes.io/zone"


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


def _percent(requested: Any, allocatable: Any) -> int:
    if not allocatable:
        return 0
    return int(100 * requested / allocatable)


def _usage(snapshot: ClusterSnapshot, placed: list[Decision]) -> tuple[NodeUsage, ...]:
    """Per-node utilisation after the run (requests over allocatable, as the Fit filter sees it)."""
    counts = Counter(decision.node for decision in placed)
    return tuple(
        NodeUsage(
            name=node.name,
            zone=node.labels.get(_ZONE_LABEL, ""),
            placed=counts[node.name],
            pods=node.pod_count,
            max_pods=int(node.allocatable.get("pods", 0)),
            cpu_percent=_percent(node.requested.get("cpu", 0), node.allocatable.get("cpu", 0)),
            memory_percent=_percent(node.requested.get("memory", 0), node.allocatable.get("memory", 0)),
        )
        for node in snapshot.nodes
    )


@dataclasses.dataclass(frozen=True)
class Simulation:
    """The outcome of one run. ``evaluations``: attempts that evaluated the policies (not reused)."""

    policy_digest: str
    decisions: tuple[Decision, ...]
    node_count: int
    passes: int
    nodes: tuple[NodeUsage, ...] = ()
    evaluations: int = 0
    preemptions: Mapping[str, tuple[str, tuple[str, ...]]] = dataclasses.field(default_factory=dict)
    """Preemptor ``namespace/name`` -> (nominated node, victims ``namespace/name`` in eviction order)."""

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
        placements = []
        for d in self.decisions:
            doc = d.to_json()
            preempted = self.preemptions.get(d.pod)
            if preempted is not None:  # additive fields, only on pods that preempted (README "Preemption")
                doc["nominated_node"], doc["preempted"] = preempted[0], list(preempted[1])
            placements.append(doc)
        return {"policy_digest": self.policy_digest, "placements": placements}


class Prepared(NamedTuple):
    """What a run starts from: the snapshot (running pods placed) and the pending pods in queue order."""

    snapshot: ClusterSnapshot
    queue: list[dict[str, Any]]


def prepare(objects: Iterable[dict[str, Any]], now: int = DEFAULT_NOW) -> Prepared:
    """Build the snapshot and the queue (pending pods in queue order), the snapshot's decision time (what
    rules read as ``now``) fixed at ``now`` (epoch nanoseconds): an offline run never reads the clock.

    Every pending pod is converted once here, so the object model's notes about malformed fields (bad
    quantities, wrong field types; it never raises) are all in ``snapshot.warnings`` before the run:
    the CLI refuses to simulate on them rather than give silently different placements.
    """
    from policyscheduler.state import ClusterSnapshot

    objects = list(objects)
    snapshot = ClusterSnapshot.from_objects(objects)
    snapshot.now_ns = now
    queue = queue_order([obj for obj in objects if is_pending(obj)])
    for pod in queue:
        snapshot.pod_record(pod)
    return Prepared(snapshot, queue)


def simulate(
    policy_set: PolicySet,
    objects: Iterable[dict[str, Any]],
    *,
    seed: int = 0,
    evaluator: Evaluator | None = None,
    progress: Callable[[int, int], None] | None = None,
    prepared: Prepared | None = None,
    detail: bool = True,
) -> Simulation:
    """Schedule every pending pod of ``objects`` under ``policy_set``; see the module docstring.

    ``prepared`` is the result of :func:`prepare` for the same objects, when the caller already has it
    (the CLI checks its warnings first); it is used up, since placements are assumed into its snapshot.
    ``progress(placed, pending)`` is called after every attempt. ``detail``: keep each decision's per-node
    detail (verdicts, scores, totals); without it a decision keeps node, score, top, message and score errors.
    """
    snapshot, pending = prepared if prepared is not None else prepare(objects)
    evaluator = evaluator if evaluator is not None else ReferenceEvaluator()
    failed_at: dict[int, int] = {}  # pod index -> sequence number of its last failure (retry order)

    def order(entry: Any) -> tuple[int, int]:
        # fresh pods: queue order; pods moved back: most recently failed first (see the module docstring)
        return (-failed_at.get(entry.key, 0), entry.key)

    # No time: the clock stands still, backoff is zero, nothing is ever flushed for waiting too long.
    queue = SchedulingQueue(clock=lambda: 0.0, order=order, initial_backoff=0.0,
                            max_backoff=0.0, max_unschedulable=float("inf"), refresh_timestamp=False)
    placed: list[Decision] = []
    placed_on: list[str] = []  # nodes that got a pod in this pass: the pass's AssignedPodAdd events

    def keep(decision: Decision) -> Decision:
        return decision if detail else _summary(decision)

    def bind(attempt: Attempt) -> None:  # a simulation's bind always succeeds, at once
        assert attempt.decision is not None and attempt.node is not None
        placed.append(keep(attempt.decision))
        placed_on.append(attempt.node)
        cycle.binding_succeeded(attempt)

    cycle = Cycle(queue, ClusterCache(snapshot=snapshot), evaluator, policy_set, bind, rng=random.Random(seed))
    for index, pod in enumerate(pending):
        queue.add(index, pod)  # the key is the position in queue order, so the queue keeps that order

    last_failure: dict[int, Decision] = {}
    preemptions: dict[str, tuple[str, tuple[str, ...]]] = {}
    evicted: dict[str, str] = {}  # victim namespace/name -> the message of its lost placement
    preempted_on: list[str] = []  # nodes that lost pods to preemption in this pass
    passes = 0
    evaluations = 0
    failures = 0
    while True:
        passes += 1
        placed_before, evictions_before = len(placed), len(evicted)
        placed_on.clear()
        preempted_on.clear()
        while (attempt := cycle.schedule_one()) is not None:
            index = int(attempt.entry.key)  # type: ignore[call-overload]
            if attempt.result == ERROR:  # evaluators turn rule errors into verdicts: this is a bug
                raise RuntimeError(f"simulate: evaluating pod {attempt.key} failed: {attempt.error}")
            if not attempt.reused:
                evaluations += 1
            if attempt.result == UNSCHEDULABLE:
                assert attempt.decision is not None
                failures += 1
                failed_at[index] = failures
                summary = keep(attempt.decision)
                last_failure[index] = summary
                if not detail and attempt.entry.last_decision is attempt.decision:
                    attempt.entry.last_decision = summary  # what a reused attempt returns: the same answer
                if attempt.nominated_node is not None:
                    _evict(cycle.cache, attempt, evicted)
                    before = preemptions.get(attempt.key, ("", ()))[1]
                    preemptions[attempt.key] = (attempt.nominated_node, before + tuple(v.key for v in attempt.victims))
                    preempted_on.append(attempt.nominated_node)
            elif attempt.result == SCHEDULED:
                last_failure.pop(index, None)
            if progress is not None and not attempt.reused:
                progress(len(placed), len(pending))
        if (len(placed) == placed_before and len(evicted) == evictions_before) or len(queue) == 0:
            break  # nothing changed, or nothing left to retry
        for node in dict.fromkeys(placed_on):  # the live queue's requeue: only the pods an event can help
            queue.move(ClusterEvent.assigned_pod("AssignedPodAdd", node))
        for node in dict.fromkeys(preempted_on):
            queue.move(ClusterEvent.assigned_pod("AssignedPodDelete", node))
        if not queue.pending()["active"] and not queue.pending()["backoff"]:
            break  # no waiting pod can be helped by what this pass placed
    for entry in queue.gated():  # never decided: unplaced with kube-scheduler's PreEnqueue text
        last_failure[int(entry.key)] = _gated(entry.pod, entry.gates, policy_set.digest)  # type: ignore[call-overload]
    if evicted:  # placements taken back by a later preemption: unplaced, saying by whom
        index_of = {pod_key(pod): i for i, pod in enumerate(pending)}
        for d in placed:
            if d.pod in evicted:
                last_failure[index_of[d.pod]] = dataclasses.replace(
                    _summary(d), node=None, score=None, top=(), message=evicted[d.pod])
        placed = [d for d in placed if d.pod not in evicted]
    unplaced = [last_failure[index] for index in sorted(last_failure)]
    return Simulation(
        policy_digest=policy_set.digest,
        preemptions=preemptions,
        decisions=tuple(placed + unplaced),
        node_count=len(snapshot.nodes),
        passes=passes,
        nodes=_usage(snapshot, placed),
        evaluations=evaluations,
    )


def _evict(cache: ClusterCache, attempt: Attempt, evicted: dict[str, str]) -> None:
    """Take the victims of ``attempt``'s preemption out of the cluster (what their deletion does live)."""
    for victim in attempt.victims:
        meta = {"namespace": victim.namespace, "name": victim.name, "uid": victim.uid}
        cache.remove("Pod", {"kind": "Pod", "metadata": meta})
        evicted[victim.key] = f"Preempted by pod {attempt.key} on node {victim.node}"


def _gated(pod: dict[str, Any], gates: tuple[str, ...], digest: str) -> Decision:
    """The placement of a gated pod: no node, no score, the gates named in ``message``."""
    return Decision(pod_key(pod), None, {}, (), {}, {}, (), None, gate_message(gates), digest)


def _summary(decision: Decision) -> Decision:
    """``decision`` without its per-node detail: what the table and the JSON show, nothing per node."""
    return dataclasses.replace(decision, verdicts={}, feasible=(), scores={}, totals={})
