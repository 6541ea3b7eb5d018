"""InterPodAffinity primitives (kube-scheduler v1.35 ``interpodaffinity`` PreFilter / PreScore).

Namespaces: a term without ``namespaces`` and without ``namespaceSelector`` means the owner pod's
namespace; ``namespaceSelector: {}`` means every namespace. The *incoming* pod's terms have their
selector resolved against the namespaces of the cluster (kube merges them into the name set); an
*existing* pod's terms are matched against the incoming pod's namespace labels. Every namespace is
taken to exist, with its declared labels or just ``kubernetes.io/metadata.name`` (which the API server
always sets).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from policyscheduler.objects.records import Node, Pod, PodAffinityTerm, WeightedPodAffinityTerm

__all__ = ["incoming_term_matches", "existing_term_matches", "FilterState", "ScoreState", "lookup"]

NsLabels = Callable[[str], Mapping[str, str]]
TopologyMap = dict[str, dict[str, int]]


def incoming_term_matches(term: PodAffinityTerm, pod: Pod, ns_labels: NsLabels) -> bool:
    """Does ``pod`` (an existing pod) match a term of the incoming pod?"""
    if term._selector is None:
        return False
    ns = pod.namespace
    ns_sel = term._ns_selector
    if ns not in term._names:
        if ns_sel is None or not (ns_sel.empty or ns_sel.matches(ns_labels(ns))):
            return False
    return term._selector.matches(pod.labels)


def existing_term_matches(term: PodAffinityTerm, incoming: Pod, incoming_ns_labels: Mapping[str, str]) -> bool:
    """Does the incoming pod match a term of an existing pod?"""
    if term._selector is None:
        return False
    if incoming.namespace not in term._names:
        if term._ns_selector is None or not term._ns_selector.matches(incoming_ns_labels):
            return False
    return term._selector.matches(incoming.labels)


def _bump(counts: dict[tuple[str, str], int], node: Node, key: str, by: int = 1) -> None:
    value = node.labels.get(key)
    if value is not None:
        counts[(key, value)] = counts.get((key, value), 0) + by


class FilterState:
    """existingAntiAffinityCounts, affinityCounts and antiAffinityCounts over all nodes."""

    def __init__(self, pod: Pod, nodes: Sequence[Node], ns_labels: NsLabels) -> None:
        own_labels = ns_labels(pod.namespace)
        self.existing_anti: dict[tuple[str, str], int] = {}
        self.affinity: dict[tuple[str, str], int] = {}
        self.anti: dict[tuple[str, str], int] = {}
        aff, anti = pod.required_affinity_terms, pod.required_anti_affinity_terms
        for node in nodes:
            for other in node.pods:
                for term in other.required_anti_affinity_terms:
                    if existing_term_matches(term, pod, own_labels):
                        _bump(self.existing_anti, node, term.topology_key)
                if aff and all(incoming_term_matches(t, other, ns_labels) for t in aff):
                    for t in aff:
                        _bump(self.affinity, node, t.topology_key)
                for t in anti:
                    if incoming_term_matches(t, other, ns_labels):
                        _bump(self.anti, node, t.topology_key)


class ScoreState:
    """The PreScore topology scores, kept per source so the policy can weigh and sign them."""

    def __init__(self, pod: Pod, nodes: Sequence[Node], ns_labels: NsLabels) -> None:
        own_labels = ns_labels(pod.namespace)
        self.preferred_affinity: TopologyMap = {}
        self.preferred_anti: TopologyMap = {}
        self.existing_required: TopologyMap = {}
        self.existing_preferred: TopologyMap = {}
        self.existing_preferred_anti: TopologyMap = {}
        for node in nodes:
            if not node.labels:
                continue
            for other in node.pods:
                self._weighted(pod.preferred_affinity_terms, self.preferred_affinity, node,
                               lambda t: incoming_term_matches(t, other, ns_labels))
                self._weighted(pod.preferred_anti_affinity_terms, self.preferred_anti, node,
                               lambda t: incoming_term_matches(t, other, ns_labels))
                for t in other.required_affinity_terms:
                    if existing_term_matches(t, pod, own_labels):
                        self._add(self.existing_required, node, t.topology_key, 1)
                self._weighted(other.preferred_affinity_terms, self.existing_preferred, node,
                               lambda t: existing_term_matches(t, pod, own_labels))
                self._weighted(other.preferred_anti_affinity_terms, self.existing_preferred_anti, node,
                               lambda t: existing_term_matches(t, pod, own_labels))

    @staticmethod
    def _add(m: TopologyMap, node: Node, key: str, by: int) -> None:
        value = node.labels.get(key)
        if value is not None:
            inner = m.setdefault(key, {})
            inner[value] = inner.get(value, 0) + by

    def _weighted(self, terms: Sequence[WeightedPodAffinityTerm], m: TopologyMap, node: Node,
                  match: Callable[[PodAffinityTerm], bool]) -> None:
        for w in terms:
            if match(w.term):
                self._add(m, node, w.term.topology_key, w.weight)


def lookup(m: TopologyMap, node: Node) -> int:
    """Σ over topology keys the node carries of the map's value for the node's domain."""
    labels = node.labels
    return sum(inner.get(labels[key], 0) for key, inner in m.items() if key in labels)
