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
from functools import cached_property
from typing import TYPE_CHECKING

from policyscheduler.objects import affinity, topology
from policyscheduler.objects.records import Node, Pod, PodAffinityTerm, SpreadConstraint
from policyscheduler.schema import exposed, record

if TYPE_CHECKING:
    from policyscheduler.objects.snapshot import ClusterSnapshot

__all__ = ["Cluster", "make_cluster"]


class _State:
    """Mutable per-pod caches behind a frozen Cluster (never visible to policies).

    Each precomputation is built on first use (a pod without spread constraints never builds the
    spread counts); ``set_feasible`` drops the one that depends on the feasible nodes.
    """

    def __init__(self, pod: Pod, nodes: list[Node], ns_labels: affinity.NsLabels,
                 image_states: Mapping[str, tuple[int, int]], hard: tuple[SpreadConstraint, ...],
                 soft: tuple[SpreadConstraint, ...], require_all: bool) -> None:
        self.pod = pod
        self.nodes = nodes
        self.ns_labels = ns_labels
        self.image_states = image_states
        self.hard = hard
        self.soft = soft
        self.require_all = require_all
        self.feasible: list[Node] | None = None

    @cached_property
    def spread_filter(self) -> topology.FilterCounts:
        return topology.FilterCounts(self.pod, self.hard, self.nodes)

    @cached_property
    def spread_score(self) -> topology.ScoreCounts:
        feasible = self.feasible if self.feasible is not None else self.nodes
        return topology.ScoreCounts(self.pod, self.soft, feasible, self.nodes, self.require_all)

    @cached_property
    def affinity_filter(self) -> affinity.FilterState:
        return affinity.FilterState(self.pod, self.nodes, self.ns_labels)

    @cached_property
    def affinity_score(self) -> affinity.ScoreState:
        return affinity.ScoreState(self.pod, self.nodes, self.ns_labels)


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

    def set_feasible(self, names: Iterable[str]) -> None:
        """Tell the context which nodes passed the filters (kube's PreScore ``filteredNodes``)."""
        wanted = set(names)
        self._state.feasible = [n for n in self._state.nodes if n.name in wanted]
        self._state.__dict__.pop("spread_score", None)

    # -- PodTopologySpread ------------------------------------------------------------------------------

    @exposed
    def spread_count(self, c: SpreadConstraint, node: Node) -> int:
        """Filter: pods matching ``c`` in the node's domain, over nodes eligible for the constraints."""
        return self._state.spread_filter.count(c, node)

    @exposed
    def spread_min_count(self, c: SpreadConstraint) -> int:
        """Filter: the smallest count over the eligible domains of ``c``'s key (0 when there are none)."""
        return self._state.spread_filter.minimum.get(c.topology_key, 0)

    @exposed
    def spread_domain_count(self, c: SpreadConstraint) -> int:
        """Filter: how many eligible domains ``c``'s topology key has (compared with minDomains)."""
        return self._state.spread_filter.domains.get(c.topology_key, 0)

    @exposed
    def spread_score_count(self, c: SpreadConstraint, node: Node) -> int:
        """Score: matching pods in the node's domain (hostname: on the node itself)."""
        return self._state.spread_score.count(c, node, self._state.pod)

    @exposed
    def spread_score_domain_count(self, c: SpreadConstraint) -> int:
        """Score: domains of ``c`` among the feasible, non-ignored nodes (hostname: their number)."""
        return self._state.spread_score.domains.get(id(c), 0)

    # -- InterPodAffinity -----------------------------------------------------------------------------

    @exposed
    def affinity_count(self, t: PodAffinityTerm, node: Node) -> int:
        """Existing pods matching *all* the pod's required affinity terms, in the node's domain of ``t``."""
        return affinity.count_in_domain(self._state.affinity_filter.affinity, t.topology_key, node)

    @exposed
    def has_affinity_matches(self) -> bool:
        """True if any existing pod (on a node carrying a term's key) matches all required affinity terms."""
        return bool(self._state.affinity_filter.affinity)

    @exposed
    def anti_affinity_count(self, t: PodAffinityTerm, node: Node) -> int:
        """Existing pods matching the required anti-affinity term ``t``, in the node's domain of ``t``."""
        return affinity.count_in_domain(self._state.affinity_filter.anti, t.topology_key, node)

    @exposed
    def existing_anti_affinity_count(self, node: Node) -> int:
        """Existing pods' required anti-affinity terms matching this pod, over the node's label domains."""
        return affinity.lookup(self._state.affinity_filter.existing_anti, node)

    @exposed
    def has_existing_anti_affinity(self) -> bool:
        """True if some existing pod's required anti-affinity term matches this pod."""
        return bool(self._state.affinity_filter.existing_anti)

    @exposed
    def preferred_affinity_weight(self, node: Node) -> int:
        """Σ weights of the pod's preferred affinity terms matched by existing pods in the node's domains."""
        return affinity.lookup(self._state.affinity_score.preferred_affinity, node)

    @exposed
    def preferred_anti_affinity_weight(self, node: Node) -> int:
        """Σ weights of the pod's preferred anti-affinity terms matched by existing pods in the node's domains."""
        return affinity.lookup(self._state.affinity_score.preferred_anti, node)

    @exposed
    def existing_required_affinity_count(self, node: Node) -> int:
        """Existing pods' required affinity terms that this pod matches, in the node's domains."""
        return affinity.lookup(self._state.affinity_score.existing_required, node)

    @exposed
    def existing_preferred_affinity_weight(self, node: Node) -> int:
        """Σ weights of existing pods' preferred affinity terms this pod matches, in the node's domains."""
        return affinity.lookup(self._state.affinity_score.existing_preferred, node)

    @exposed
    def existing_preferred_anti_affinity_weight(self, node: Node) -> int:
        """Σ weights of existing pods' preferred anti-affinity terms this pod matches, in the node's domains."""
        return affinity.lookup(self._state.affinity_score.existing_preferred_anti, node)

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


def make_cluster(pod: Pod, snapshot: ClusterSnapshot) -> Cluster:
    """Build the context for ``pod`` over the snapshot's current nodes.

    The snapshot also supplies the Services and controllers behind the default spread selector and the
    namespace labels that affinity terms' namespace selectors match.
    """
    nodes = list(snapshot.nodes)
    hard, soft, require_all = topology.effective_constraints(pod, snapshot)
    ns_labels = snapshot.namespace_labels
    own = pod.required_affinity_terms
    matches_own = bool(own) and all(affinity.incoming_term_matches(t, pod, ns_labels) for t in own)
    return Cluster(
        node_count=len(nodes),
        hard_spread_constraints=hard,
        soft_spread_constraints=soft,
        spread_require_all_topologies=require_all,
        pod_matches_own_affinity=matches_own,
        _state=_State(pod, nodes, ns_labels, snapshot.image_states, hard, soft, require_all),
    )
