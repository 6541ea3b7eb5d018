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
from typing import cast

import numpy as np

from policyscheduler.objects.records import Node, Pod, PodAffinityTerm
from policyscheduler.objects.topology import (
    BoolArray,
    ClusterIndex,
    IntArray,
    LabelCodes,
    MatchClause,
    MatchKey,
)

__all__ = [
    "incoming_term_matches", "existing_term_matches", "FilterState", "ScoreState", "count_in_domain", "lookup",
    "term_clause", "IndexedFilterState", "IndexedScoreState", "IndexedMaps", "lookup_column", "domain_column",
]

NsLabels = Callable[[str], Mapping[str, str]]
TopologyMap = dict[str, dict[str, int]]
"""topology key -> domain (the node label value) -> count or summed weight."""


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


def _add(m: TopologyMap, node: Node, key: str, by: int) -> None:
    """Add ``by`` to the node's domain of ``key``; a node without the key has no domain there."""
    value = node.labels.get(key)
    if value is not None:
        inner = m.setdefault(key, {})
        inner[value] = inner.get(value, 0) + by


def count_in_domain(m: TopologyMap, key: str, node: Node) -> int:
    """The map's value for the node's domain of one topology key (0 when the node lacks the key)."""
    value = node.labels.get(key)
    return 0 if value is None else m.get(key, {}).get(value, 0)


def lookup(m: TopologyMap, node: Node) -> int:
    """Σ over topology keys the node carries of the map's value for the node's domain."""
    labels = node.labels
    return sum(inner.get(labels[key], 0) for key, inner in m.items() if key in labels)


class FilterState:
    """PreFilter state: existingAntiAffinityCounts, affinityCounts and antiAffinityCounts over all nodes."""

    MAPS: tuple[str, ...] = ("existing_anti", "affinity", "anti")

    def maps(self) -> dict[str, TopologyMap]:
        """Every map by attribute name (what two states are compared by)."""
        return {name: getattr(self, name) for name in self.MAPS}

    def __init__(self, pod: Pod, nodes: Sequence[Node], ns_labels: NsLabels) -> None:
        own_labels = ns_labels(pod.namespace)
        self.existing_anti: TopologyMap = {}
        self.affinity: TopologyMap = {}
        self.anti: TopologyMap = {}
        aff, anti = pod.required_affinity_terms, pod.required_anti_affinity_terms
        for node in nodes:
            for other in node.pods:
                for term in other.required_anti_affinity_terms:
                    if existing_term_matches(term, pod, own_labels):
                        _add(self.existing_anti, node, term.topology_key, 1)
                if aff and all(incoming_term_matches(t, other, ns_labels) for t in aff):
                    for t in aff:
                        _add(self.affinity, node, t.topology_key, 1)
                for t in anti:
                    if incoming_term_matches(t, other, ns_labels):
                        _add(self.anti, node, t.topology_key, 1)


class ScoreState:
    """The PreScore topology scores, kept per source so the policy can weigh and sign them."""

    MAPS: tuple[str, ...] = ("preferred_affinity", "preferred_anti", "existing_required", "existing_preferred",
            "existing_preferred_anti")

    def maps(self) -> dict[str, TopologyMap]:
        """Every map by attribute name (what two states are compared by)."""
        return {name: getattr(self, name) for name in self.MAPS}

    def __init__(self, pod: Pod, nodes: Sequence[Node], ns_labels: NsLabels) -> None:
        own_labels = ns_labels(pod.namespace)
        self.preferred_affinity: TopologyMap = {}
        self.preferred_anti: TopologyMap = {}
        self.existing_required: TopologyMap = {}
        self.existing_preferred: TopologyMap = {}
        self.existing_preferred_anti: TopologyMap = {}
        incoming = [(terms, m) for terms, m in ((pod.preferred_affinity_terms, self.preferred_affinity),
                                                 (pod.preferred_anti_affinity_terms, self.preferred_anti)) if terms]
        for node in nodes:
            if not node.labels:
                continue
            for other in node.pods:
                for terms, m in incoming:
                    for w in terms:
                        if incoming_term_matches(w.term, other, ns_labels):
                            _add(m, node, w.term.topology_key, w.weight)
                # Most pods carry no affinity at all (kube walks only HavePodsWithAffinityList here).
                if not (other.required_affinity_terms or other.preferred_affinity_terms
                        or other.preferred_anti_affinity_terms):
                    continue
                for t in other.required_affinity_terms:
                    if existing_term_matches(t, pod, own_labels):
                        _add(self.existing_required, node, t.topology_key, 1)
                for terms, m in ((other.preferred_affinity_terms, self.existing_preferred),
                                 (other.preferred_anti_affinity_terms, self.existing_preferred_anti)):
                    for w in terms:
                        if existing_term_matches(w.term, pod, own_labels):
                            _add(m, node, w.term.topology_key, w.weight)


# -- indexed counterparts: the incoming pod's terms from per-node counts, existing pods' terms from the ---
# -- state's term index (each distinct term once, with the nodes of the pods carrying it) ---------------

def term_clause(term: PodAffinityTerm) -> MatchClause | None:
    """The count key clause of an incoming term (None: its nil selector matches no pod)."""
    if term._selector is None:
        return None
    return (term._names, term._ns_selector, term._selector)


Sums = dict[str, tuple[LabelCodes, IntArray, BoolArray]]
"""topology key -> (its label codes, Σ per domain code, which domains hold a counted node): a
:data:`TopologyMap` as arrays, so a column is one gather (``sums[codes]``) and a hostname key (one
domain per node) costs no Python step per domain; the map itself is built only when a scalar builtin
or a test asks for it."""


def _add_totals(d: Sums, key: str, index: ClusterIndex, match: MatchKey, by: int) -> None:
    """``_add`` of ``match``'s counts, ``by`` each, from the state's per-domain totals (no pass over the nodes):
    a domain holds a counted node exactly when its total is positive (counts are never negative)."""
    codes = index.label_codes(key)
    sums = index.match_totals(match, codes)[:-1]  # the nodes without the key have no domain
    present = sums > 0
    if not present.any():
        return
    sums = sums * by  # a new array: the state's own changes in place
    old = d.get(key)
    d[key] = (codes, sums, present) if old is None else (codes, old[1] + sums, old[2] | present)


def _to_map(d: Sums) -> TopologyMap:
    m: TopologyMap = {}
    for key, (codes, sums, present) in d.items():
        found = np.flatnonzero(present)
        values = codes.values
        m[key] = dict(zip([values[j] for j in found.tolist()], sums[found].tolist()))
    return m


def _spread(codes: LabelCodes, sums: IntArray) -> IntArray:
    """Per node, its domain's sum (0 for a node without the key: code -1 reads the extra last entry)."""
    if codes.identity:  # node i's domain is value i: its sum as it is (the caller's own copy)
        return sums[:codes.codes.size].copy()
    table = np.zeros(sums.size + 1, dtype=np.int64)
    table[:-1] = sums
    return codes.spread(table)


def domain_column(m: TopologyMap, key: str, index: ClusterIndex) -> IntArray:
    """:func:`count_in_domain` for every node of the index."""
    return index.label_codes(key).column(m.get(key, {}))


def lookup_column(m: TopologyMap, index: ClusterIndex) -> IntArray:
    """:func:`lookup` for every node of the index."""
    out = np.zeros(len(index.nodes), dtype=np.int64)
    for key, inner in m.items():
        out += index.label_codes(key).column(inner)
    return out


class _Shared:
    """Sums memoised by the state for a set of placed pods' terms, with their :func:`lookup` column
    built by the first pod that asks for it (shared by the pods matching the same terms)."""

    __slots__ = ("column", "sums", "zero")

    def __init__(self, sums: Sums) -> None:
        self.sums = sums
        self.column: IntArray | None = None
        self.zero: bool | None = None  # every domain's sum is 0 (told once: the sums never change)


def _existing_sums(index: ClusterIndex, kind: int, pod: Pod, own_labels: Mapping[str, str], n: int) -> _Shared | None:
    """The :data:`Sums` of the placed pods' terms of one kind that ``pod`` matches.

    Pods of one app match the same terms (the labels a term reads are the app's), so the sums are
    memoised by the state per set of matched terms, valid while none of those terms gains or loses a
    pod and no node changes its labels: a pod then pays for matching the candidate terms, not for
    summing their nodes again. The returned sums are shared: nobody may edit them. The next pod of the
    app whose labels the terms read alike does not even match them: the state recalls which terms the
    last such pod matched (``own_labels`` are the state's labels of the pod's namespace, as the recall
    assumes: it forgets when namespace labels change) -- also when their sums must be made again.

    The sums are made from each term's per-domain sums, which the state keeps up to date per pod change
    (``existing_term_sums``): one addition per matched term. Adding them per domain equals summing the
    per-node totals of the nodes where they are positive (what the walk's map holds), because no node's
    total is negative: weights are 1-100, and a family member's exclusion (negative) is matched only with
    its family's stand-in, which holds that member's values.
    """
    known = index.existing_terms_recall(kind, pod.labels, pod.namespace)
    if known is not None:  # a pod of the app was matched since the kind's terms last changed: the same terms
        matched, value = known
        if value is not None or not matched:
            return cast(_Shared | None, value)
    else:
        matched = frozenset(term for term, _ in index.existing_terms(kind, pod.labels, pod.namespace)
                            if existing_term_matches(term, pod, own_labels))
        index.existing_terms_remember(kind, pod.labels, pod.namespace, matched)
        if not matched:
            return None

    def build() -> _Shared:
        by_key: dict[str, tuple[LabelCodes, IntArray]] = {}
        for term in matched:
            key = term.topology_key
            codes = index.label_codes(key)
            sums = index.existing_term_sums(kind, term, codes)
            if sums is None:  # the index no longer has a term it recalled: a broken invariant, said loudly
                raise RuntimeError(f"placed pods' term {term} of kind {kind} is not indexed")
            hit = by_key.get(key)
            if hit is None:
                by_key[key] = (codes, sums.copy())  # never the index's own array
            else:
                total = hit[1]
                total += sums  # our own copy: added in place
        d: Sums = {}
        for key, (codes, total) in by_key.items():
            total = total[:-1]  # the nodes without the key have no domain
            present = total > 0
            if present.any():
                d[key] = (codes, total, present)
        return _Shared(d)

    return index.existing_terms_memo(kind, matched, build)


class IndexedMaps:
    """The maps of an indexed state kept as :data:`Sums`; a map attribute is built on first read."""

    _sums: dict[str, Sums]
    _shared: dict[str, _Shared]

    def __getattr__(self, name: str) -> TopologyMap:
        # only reached for an attribute not set yet: a map nobody read so far
        sums = self.__dict__.get("_sums")
        if sums is None or name not in sums:
            raise AttributeError(name)
        m = _to_map(sums[name])
        setattr(self, name, m)
        return m

    def shared(self, name: str) -> object | None:
        """The state's shared sums behind the map (one object while they hold: a token for reusing what
        was computed from them), None when the map is this pod's own."""
        return self._shared.get(name)

    def is_zero(self, name: str, key: str | None = None) -> bool:
        """True when the map (or its ``key``) holds 0 in every domain (the usual map: empty)."""
        d = self._sums[name]
        if key is not None:
            hit = d.get(key)
            return hit is None or not hit[1].any()
        shared = self._shared.get(name)
        if shared is not None:
            if shared.zero is None:
                shared.zero = not any(sums.any() for _, sums, _ in d.values())
            return shared.zero
        return not any(sums.any() for _, sums, _ in d.values())

    def column(self, name: str, n: int, key: str | None = None) -> IntArray:
        """:func:`lookup` (``key`` None) or :func:`count_in_domain` of ``key`` of the map, for every node."""
        d = self._sums[name]
        if key is not None:
            hit = d.get(key)
            return np.zeros(n, dtype=np.int64) if hit is None else _spread(hit[0], hit[1])
        shared = self._shared.get(name)
        if shared is not None and shared.column is not None and shared.column.size == n:
            return shared.column.copy()  # the caller's own array
        out: IntArray | None = None
        for codes, sums, _ in d.values():
            part = _spread(codes, sums)
            if out is None:
                out = part  # the first key's array is a new one: the others add into it
            else:
                out += part
        if out is None:
            out = np.zeros(n, dtype=np.int64)
        if shared is not None:
            shared.column = out.copy()
        return out


class IndexedFilterState(IndexedMaps, FilterState):
    """:class:`FilterState` from the cluster state's indexes (same maps, no walk over every pod)."""

    def __init__(self, pod: Pod, nodes: Sequence[Node], ns_labels: NsLabels, index: ClusterIndex) -> None:
        affinity: Sums = {}
        anti: Sums = {}
        existing = _existing_sums(index, 0, pod, ns_labels(pod.namespace), len(nodes))
        self._shared = {} if existing is None else {"existing_anti": existing}
        self._sums = {"existing_anti": {} if existing is None else existing.sums, "affinity": affinity, "anti": anti}
        aff = pod.required_affinity_terms
        if aff:
            clauses = [term_clause(t) for t in aff]
            if all(c is not None for c in clauses):
                match: MatchKey = (False, tuple(c for c in clauses if c is not None))
                for t in aff:
                    _add_totals(affinity, t.topology_key, index, match, 1)
        for t in pod.required_anti_affinity_terms:
            clause = term_clause(t)
            if clause is not None:
                _add_totals(anti, t.topology_key, index, (False, (clause,)), 1)


class IndexedScoreState(IndexedMaps, ScoreState):
    """:class:`ScoreState` from the cluster state's indexes."""

    def __init__(self, pod: Pod, nodes: Sequence[Node], ns_labels: NsLabels, index: ClusterIndex) -> None:
        own_labels = ns_labels(pod.namespace)
        sums: dict[str, Sums] = {name: {} for name in ScoreState.MAPS}
        self._sums = sums
        self._shared = {}
        for terms, d in ((pod.preferred_affinity_terms, sums["preferred_affinity"]),
                         (pod.preferred_anti_affinity_terms, sums["preferred_anti"])):
            for w in terms:
                clause = term_clause(w.term)
                if clause is not None:
                    _add_totals(d, w.term.topology_key, index, (False, (clause,)), w.weight)
        for kind, name in ((1, "existing_required"), (2, "existing_preferred"), (3, "existing_preferred_anti")):
            shared = _existing_sums(index, kind, pod, own_labels, len(nodes))
            if shared is not None:
                sums[name] = shared.sums
                self._shared[name] = shared
