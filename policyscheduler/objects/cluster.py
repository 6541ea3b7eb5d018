"""The per-pod ``cluster`` value: everything a rule needs that depends on more than one node.

One :class:`Cluster` is made per pod evaluation (``snapshot.context(pod)``). Cheap pod-level facts are
fields; the expensive per-pod precomputations (topology spread counts, inter-pod affinity counts and
scores) are built lazily on first use and cached, so evaluating N nodes costs O(N + pods) overall.

The score of PodTopologySpread depends on the *feasible* nodes (kube's PreScore gets the filtered
list): the evaluator calls :meth:`Cluster.set_feasible` between filtering and scoring. Without that
call every node is taken as feasible.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from policyscheduler.objects import affinity, topology
from policyscheduler.objects.records import Node, Pod, PodAffinityTerm, SpreadConstraint
from policyscheduler.schema import exposed, record

__all__ = ["Cluster", "make_cluster"]


class _State:
    """Mutable caches behind a frozen Cluster (never visible to policies)."""

    def __init__(self, pod: Pod, nodes: list[Node], ns_labels: Any, image_states: Mapping[str, tuple[int, int]]) -> None:
        self.pod = pod
        self.nodes = nodes
        self.ns_labels = ns_labels
        self.image_states = image_states
        self.feasible: list[Node] | None = None
        self.cache: dict[str, Any] = {}


@record
@dataclass(frozen=True, eq=False)
class Cluster:
    """Cluster-wide context for one pod: effective spread constraints and cross-node counts."""

    node_count: int
    hard_spread_constraints: list[SpreadConstraint]
    soft_spread_constraints: list[SpreadConstraint]
    spread_require_all_topologies: bool
    pod_matches_own_affinity: bool
    _state: _State = field(repr=False)

    # -- plumbing -------------------------------------------------------------------------------------

    def set_feasible(self, names: Iterable[str]) -> None:
        """Tell the context which nodes passed the filters (kube's PreScore ``filteredNodes``)."""
        wanted = set(names)
        self._state.feasible = [n for n in self._state.nodes if n.name in wanted]
        self._state.cache.pop("spread_score", None)

    def _cached(self, key: str, build: Any) -> Any:
        cache = self._state.cache
        if key not in cache:
            cache[key] = build()
        return cache[key]

    def _spread_filter(self) -> topology.FilterCounts:
        s = self._state
        return self._cached("spread_filter", lambda: topology.FilterCounts(s.pod, self.hard_spread_constraints, s.nodes))

    def _spread_score(self) -> topology.ScoreCounts:
        s = self._state
        feasible = s.feasible if s.feasible is not None else s.nodes
        return self._cached(
            "spread_score",
            lambda: topology.ScoreCounts(s.pod, self.soft_spread_constraints, feasible, s.nodes, self.spread_require_all_topologies),
        )

    def _affinity_filter(self) -> affinity.FilterState:
        s = self._state
        return self._cached("affinity_filter", lambda: affinity.FilterState(s.pod, s.nodes, s.ns_labels))

    def _affinity_score(self) -> affinity.ScoreState:
        s = self._state
        return self._cached("affinity_score", lambda: affinity.ScoreState(s.pod, s.nodes, s.ns_labels))

    # -- PodTopologySpread ------------------------------------------------------------------------------

    @exposed
    def spread_count(self, c: SpreadConstraint, node: Node) -> int:
        """Filter: pods matching ``c`` in the node's domain, over nodes eligible for the constraints."""
        return self._spread_filter().count(c, node)

    @exposed
    def spread_min_count(self, c: SpreadConstraint) -> int:
        """Filter: the smallest count over the eligible domains of ``c``'s key (0 when there are none)."""
        return self._spread_filter().minimum.get(c.topology_key, 0)

    @exposed
    def spread_domain_count(self, c: SpreadConstraint) -> int:
        """Filter: how many eligible domains ``c``'s topology key has (compared with minDomains)."""
        return self._spread_filter().domains.get(c.topology_key, 0)

    @exposed
    def spread_score_count(self, c: SpreadConstraint, node: Node) -> int:
        """Score: matching pods in the node's domain (hostname: on the node itself)."""
        return self._spread_score().count(c, node, self._state.pod)

    @exposed
    def spread_score_domain_count(self, c: SpreadConstraint) -> int:
        """Score: domains of ``c`` among the feasible, non-ignored nodes (hostname: their number)."""
        return self._spread_score().domains.get(id(c), 0)

    # -- InterPodAffinity -----------------------------------------------------------------------------

    @exposed
    def affinity_count(self, t: PodAffinityTerm, node: Node) -> int:
        """Existing pods matching *all* the pod's required affinity terms, in the node's domain of ``t``."""
        value = node.labels.get(t.topology_key)
        return 0 if value is None else self._affinity_filter().affinity.get((t.topology_key, value), 0)

    @exposed
    def has_affinity_matches(self) -> bool:
        """True if any existing pod (on a node carrying a term's key) matches all required affinity terms."""
        return bool(self._affinity_filter().affinity)

    @exposed
    def anti_affinity_count(self, t: PodAffinityTerm, node: Node) -> int:
        """Existing pods matching the required anti-affinity term ``t``, in the node's domain of ``t``."""
        value = node.labels.get(t.topology_key)
        return 0 if value is None else self._affinity_filter().anti.get((t.topology_key, value), 0)

    @exposed
    def existing_anti_affinity_count(self, node: Node) -> int:
        """Existing pods' required anti-affinity terms matching this pod, over the node's label domains."""
        counts = self._affinity_filter().existing_anti
        if not counts:
            return 0
        return sum(counts.get((k, v), 0) for k, v in node.labels.items())

    @exposed
    def has_existing_anti_affinity(self) -> bool:
        """True if some existing pod's required anti-affinity term matches this pod."""
        return bool(self._affinity_filter().existing_anti)

    @exposed
    def preferred_affinity_weight(self, node: Node) -> int:
        """Σ weights of the pod's preferred affinity terms matched by existing pods in the node's domains."""
        return affinity.lookup(self._affinity_score().preferred_affinity, node)

    @exposed
    def preferred_anti_affinity_weight(self, node: Node) -> int:
        """Σ weights of the pod's preferred anti-affinity terms matched by existing pods in the node's domains."""
        return affinity.lookup(self._affinity_score().preferred_anti, node)

    @exposed
    def existing_required_affinity_count(self, node: Node) -> int:
        """Existing pods' required affinity terms that this pod matches, in the node's domains."""
        return affinity.lookup(self._affinity_score().existing_required, node)

    @exposed
    def existing_preferred_affinity_weight(self, node: Node) -> int:
        """Σ weights of existing pods' preferred affinity terms this pod matches, in the node's domains."""
        return affinity.lookup(self._affinity_score().existing_preferred, node)

    @exposed
    def existing_preferred_anti_affinity_weight(self, node: Node) -> int:
        """Σ weights of existing pods' preferred anti-affinity terms this pod matches, in the node's domains."""
        return affinity.lookup(self._affinity_score().existing_preferred_anti, node)

    # -- ImageLocality --------------------------------------------------------------------------------

    @exposed
    def scaled_image_size(self, node: Node, image: str) -> int:
        """``int(size * nodesWithImage / totalNodes)`` if the node has the image, else 0."""
        if image not in node.images:
            return 0
        state = self._state.image_states.get(image)
        if state is None or self.node_count == 0:
            return 0
        size, holders = state
        return int(float(size) * (float(holders) / float(self.node_count)))


def make_cluster(pod: Pod, nodes: list[Node], objects: Any, image_states: Mapping[str, tuple[int, int]]) -> Cluster:
    """Build the context for ``pod`` over the current ``nodes`` (``objects`` gives services etc.)."""
    hard, soft, require_all = topology.effective_constraints(pod, objects)
    ns_labels = objects.namespace_labels
    own = pod.required_affinity_terms
    matches_own = bool(own) and all(affinity.incoming_term_matches(t, pod, ns_labels) for t in own)
    return Cluster(
        node_count=len(nodes),
        hard_spread_constraints=hard,
        soft_spread_constraints=soft,
        spread_require_all_topologies=require_all,
        pod_matches_own_affinity=matches_own,
        _state=_State(pod, nodes, ns_labels, image_states),
    )
