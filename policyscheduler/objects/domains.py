"""Topology primitives: other pods, counted per topology domain, for rules written in policy text.

kube-scheduler's PodTopologySpread and InterPodAffinity see other pods only through the pod's own
constraints and terms. These primitives give a policy the same machinery with selectors it builds itself
("pods labelled app=web in my namespace"), so rack spreading, custom (anti-)affinity by label and
"at most N per zone" are a few lines of policy instead of a plugin:

* :class:`PodSelector` (built by ``cluster.pods_with(key, value)``, refined by ``with_label``,
  ``in_namespace``, ``in_all_namespaces``, ``honor_node_affinity``) says which pods count;
* ``cluster.count_in_domain(sel, key, node)``, ``cluster.domain_count(sel, key)``,
  ``cluster.min_in_domains(sel, key)``, ``cluster.max_in_domains(sel, key)`` (on
  :class:`~policyscheduler.objects.cluster.Cluster`) read one :class:`Domains` table per (selector, key);
* ``cluster.count_in_cluster(sel)`` is the whole-cluster total: the counting pods on every counted node,
  whatever its labels (a node is counted unless the selector honours node affinity and the node is not
  allowed), so "this zone's share of the app" needs no label every node shares.

Semantics (also in grammar/LANGUAGE.md, "Topology: other pods by domain"): a pod *counts* for a selector
when it is placed (or assumed) on a node, is not terminating, is in one of the selector's namespaces
(the namespace of the pod being scheduled unless changed) and carries every label of the selector. A node
is *counted* for a topology key when it carries the key (any value, "" included) and, for a selector
that honours node affinity, matches the scheduled pod's nodeSelector and required node affinity. A
*domain* is a value of the key on a counted node; its count is the number of counting pods on the
counted nodes with that value. The pod being scheduled is on no node, so it never counts itself:
``sel.matches(pod)`` says whether it would (kube's PodTopologySpread adds that 1).

Speed: a table is built from the cluster state's indexes -- the per-node count array of the selector's
:data:`~policyscheduler.objects.topology.MatchKey` (kept exact on every pod change, shared with the
PodTopologySpread counts of the same selector) and the key's label codes -- in O(nodes) numpy per pod,
never a walk over the pods. :func:`walk_domains` is the from-scratch reference over node records, used
when the state has moved on since the context was made, and by the tests as the oracle.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from policyscheduler.objects.records import Node, Pod, pod_matches_required_node_affinity
from policyscheduler.objects.selectors import Selector, set_selector
from policyscheduler.objects.topology import ClusterIndex, MatchKey, domain_sums
from policyscheduler.schema import exposed, record

__all__ = ["PodSelector", "SelectorPool", "Domains", "walk_domains", "indexed_domains", "walk_total", "indexed_total"]

BoolArray = npt.NDArray[np.bool_]

_ALL_NAMESPACES = Selector()
"""The empty namespace selector of a MatchKey clause: every namespace (``match_key_matches``)."""


@record
@dataclass(frozen=True, eq=False)
class PodSelector:
    """Which other pods count: labels that must all be equal, namespaces, and which nodes are counted.

    Made by ``cluster.pods_with(key, value)``. Every refinement returns a new selector (values are
    immutable); equal selectors of one pod's context are the same object, so per-pod caches (and the
    vector backend's column cache, keyed by identity) never confuse two of them.
    """

    labels: dict[str, str]
    namespaces: list[str]
    """The namespaces whose pods count, sorted; empty: every namespace."""
    honors_node_affinity: bool
    """True: only nodes matching the scheduled pod's nodeSelector / required node affinity are counted."""
    _selector: Selector = field(repr=False)
    _key: MatchKey = field(repr=False)
    _pool: SelectorPool = field(repr=False)

    @exposed
    def with_label(self, key: str, value: str) -> PodSelector:
        """This selector, also requiring label ``key`` equal to ``value`` (replaces a requirement on ``key``)."""
        labels = dict(self.labels)
        labels[key] = value
        return self._pool.make(labels, tuple(self.namespaces), self.honors_node_affinity)

    @exposed
    def in_namespace(self, name: str) -> PodSelector:
        """This selector, counting the pods of namespace ``name`` only (instead of its namespaces)."""
        return self._pool.make(self.labels, (name,), self.honors_node_affinity)

    @exposed
    def in_all_namespaces(self) -> PodSelector:
        """This selector, counting pods of every namespace (kube's empty ``namespaceSelector``)."""
        return self._pool.make(self.labels, (), self.honors_node_affinity)

    @exposed
    def honor_node_affinity(self) -> PodSelector:
        """This selector, counting only nodes the scheduled pod's nodeSelector and required node affinity
        allow (PodTopologySpread's default ``nodeAffinityPolicy: Honor``): a domain the pod can never
        reach then does not hold the minimum down."""
        return self._pool.make(self.labels, tuple(self.namespaces), True)

    @exposed
    def matches(self, p: Pod) -> bool:
        """True if ``p`` would count were it on a counted node: not terminating, in one of the selector's
        namespaces, carrying every label. ``sel.matches(pod)`` is "the pod being scheduled would count
        itself" (kube's PodTopologySpread adds 1 to the node's domain in that case)."""
        if p.terminating:
            return False
        if self.namespaces and p.namespace not in self.namespaces:
            return False
        return self._selector.matches(p.labels)


class SelectorPool:
    """Interns one context's selectors: equal (labels, namespaces, node scope) give the same object.

    Why: caches keyed by the selector (here and in the vector backend, which keys its per-pod column
    cache by the argument's ``id``) must never mistake a new selector for a dead one whose address it
    reuses; keeping every selector of the pod alive in the pool rules that out.
    """

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self._made: dict[tuple[tuple[tuple[str, str], ...], tuple[str, ...], bool], PodSelector] = {}

    def make(self, labels: Mapping[str, str], namespaces: tuple[str, ...], honor: bool) -> PodSelector:
        """The selector of these labels, namespaces (empty: all) and node scope."""
        items = tuple(sorted(labels.items()))
        names = tuple(sorted(set(namespaces)))
        ident = (items, names, honor)
        made = self._made.get(ident)
        if made is None:
            selector = set_selector(dict(items))
            clause = (frozenset(names), None, selector) if names else (frozenset(), _ALL_NAMESPACES, selector)
            made = self._made[ident] = PodSelector(
                labels=dict(items), namespaces=names,  # type: ignore[arg-type]  # lists are stored as tuples
                honors_node_affinity=honor, _selector=selector, _key=(True, (clause,)), _pool=self)
        return made

    def pods_with(self, key: str, value: str) -> PodSelector:
        """Pods of the scheduled pod's namespace labelled ``key=value`` (all nodes counted)."""
        return self.make({key: value}, (self.namespace,), False)


@dataclass(frozen=True, slots=True)
class Domains:
    """One (selector, topology key) table: the count of every domain among the counted nodes."""

    per_value: Mapping[str, int]
    """Domain value -> counting pods on the counted nodes of that value (every domain, 0s included)."""

    @property
    def count(self) -> int:
        """How many domains the counted nodes form."""
        return len(self.per_value)

    @property
    def minimum(self) -> int:
        """The smallest domain count; 0 when there is no domain."""
        return min(self.per_value.values(), default=0)

    @property
    def maximum(self) -> int:
        """The largest domain count; 0 when there is no domain."""
        return max(self.per_value.values(), default=0)

    def at(self, key: str, node: Node) -> int:
        """The count of the node's domain of ``key``; 0 when the node lacks the key (or its domain has no
        counted node, which only a selector honouring node affinity can give)."""
        value = node.labels.get(key)
        return 0 if value is None else self.per_value.get(value, 0)


def walk_domains(sel: PodSelector, key: str, nodes: Sequence[Node], pod: Pod) -> Domains:
    """The table from the node records and their pods (the reference; O(pods))."""
    per_value: dict[str, int] = {}
    for node in nodes:
        value = node.labels.get(key)
        if value is None:
            continue
        if sel.honors_node_affinity and not pod_matches_required_node_affinity(pod, node):
            continue
        per_value[value] = per_value.get(value, 0) + sum(1 for p in node.pods if sel.matches(p))
    return Domains(per_value)


def indexed_domains(sel: PodSelector, key: str, index: ClusterIndex,
                    allowed: Callable[[], BoolArray]) -> Domains:
    """The table from the state's indexes: the selector's per-node counts summed per label code.

    ``allowed`` gives, per node of the index, whether the scheduled pod's node affinity allows it; it is
    only called for a selector that honours node affinity (it costs a pass over the nodes).
    """
    codes = index.label_codes(key)
    mask = codes.codes >= 0
    if sel.honors_node_affinity:
        mask = mask & allowed()
    sums, present = domain_sums(codes.codes, len(codes.values), index.match_counts(sel._key), mask)
    values = codes.values
    return Domains({values[j]: int(sums[j]) for j in np.flatnonzero(present).tolist()})


def walk_total(sel: PodSelector, nodes: Sequence[Node], pod: Pod) -> int:
    """``count_in_cluster`` from the node records and their pods (the reference; O(pods))."""
    total = 0
    for node in nodes:
        if sel.honors_node_affinity and not pod_matches_required_node_affinity(pod, node):
            continue
        total += sum(1 for p in node.pods if sel.matches(p))
    return total


def indexed_total(sel: PodSelector, index: ClusterIndex, allowed: Callable[[], BoolArray]) -> int:
    """``count_in_cluster`` from the selector's per-node count array (kept exact on every pod change by
    the state): one numpy sum over the nodes, never a walk over the pods. ``allowed`` as in
    :func:`indexed_domains`."""
    counts = index.match_counts(sel._key)
    if sel.honors_node_affinity:
        return int(counts[allowed()].sum())
    return int(counts.sum())
