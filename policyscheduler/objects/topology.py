"""PodTopologySpread primitives (kube-scheduler v1.35 ``podtopologyspread`` PreFilter / PreScore).

Faithful to kube's bookkeeping, including its quirks: counts are keyed by the (topologyKey, value) pair,
so two constraints on the same key share their domain counts; a domain exists for the filter as soon as
an eligible node carries it (even with 0 matching pods); for scoring, a node without a key (when not
all topologies are required) counts into the "" domain of that key for the domain count.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from policyscheduler.objects.nodeaffinity import required_node_affinity_rows
from policyscheduler.objects.records import (
    Node,
    Pod,
    PodAffinityTerm,
    SpreadConstraint,
    pod_matches_required_node_affinity,
)
from policyscheduler.objects.selectors import Requirement, Selector, compile_label_selector, set_selector

__all__ = [
    "HOSTNAME",
    "ZONE",
    "count_matching",
    "node_included",
    "default_selector",
    "DefaultSelectorCache",
    "effective_constraints",
    "FilterCounts",
    "ScoreCounts",
    "MatchClause",
    "MatchKey",
    "match_key_matches",
    "spread_key",
    "LabelCodes",
    "build_label_codes",
    "node_affinity_mask",
    "ClusterIndex",
    "ControllerObjects",
    "domain_sums",
    "IndexedFilterCounts",
    "IndexedScoreCounts",
    "TERM_KINDS",
    "TermSlots",
]

IntArray = npt.NDArray[np.int64]
_T = TypeVar("_T")
BoolArray = npt.NDArray[np.bool_]

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
_NO_SCHEDULE = ("NoSchedule", "NoExecute")


def count_matching(pods: Iterable[Pod], selector: Selector | None, namespace: str) -> int:
    """``countPodsMatchSelector``: same namespace, not terminating; an empty or nil selector counts 0."""
    if selector is None or selector.empty:
        return 0
    return sum(1 for p in pods if not p.terminating and p.namespace == namespace and selector.matches(p.labels))


def node_included(c: SpreadConstraint, pod: Pod, node: Node) -> bool:
    """nodeAffinityPolicy (Honor: node must match the pod's required affinity) and nodeTaintsPolicy."""
    if c.node_affinity_policy == "Honor" and not pod_matches_required_node_affinity(pod, node):
        return False
    if c.node_taints_policy == "Honor":
        for taint in node.taints:
            if taint.effect in _NO_SCHEDULE and not pod.tolerates(taint):
                return False
    return True


class ControllerObjects(Protocol):
    """What DefaultSelector reads: Services (by namespace) and the controllers, by (namespace, name)."""

    @property
    def replica_sets(self) -> Mapping[tuple[str, str], Any]: ...

    @property
    def stateful_sets(self) -> Mapping[tuple[str, str], Any]: ...

    @property
    def replication_controllers(self) -> Mapping[tuple[str, str], dict[str, str] | None]: ...

    def service_selectors(self, namespace: str) -> Sequence[Mapping[str, str]]: ...


class DefaultSelectorCache:
    """Default spread selectors already built, for a state that empties it (:meth:`clear`) whenever a
    Service or controller changes.

    A pod's default selector is a function of its namespace, its values of the label keys the namespace's
    Services read, and its owner; so the pods of one app -- which differ in labels no Service reads -- get
    the same selector object, whose hash and count arrays are then found at once.
    """

    MAX = 4096
    """Selectors kept at most (beyond, the cache starts again: many apps, churning labels)."""

    def __init__(self) -> None:
        self.keys_read: dict[str, tuple[str, ...]] = {}
        """Namespace -> the label keys its Services read, sorted."""
        self.selectors: dict[tuple[Any, ...], Selector] = {}
        """(namespace, the pod's values of those keys, its owner) -> its default selector."""

    def clear(self) -> None:
        self.keys_read.clear()
        self.selectors.clear()


def default_selector(pod: Pod, objects: ControllerObjects) -> Selector:
    """``helper.DefaultSelector``: Services selecting the pod, plus its controller RC / RS / StatefulSet.

    An ``objects`` with a ``default_selectors`` :class:`DefaultSelectorCache` (the cluster state) keeps the
    answers per app.
    """
    services = objects.service_selectors(pod.namespace)
    labels = pod.labels
    cache: DefaultSelectorCache | None = getattr(objects, "default_selectors", None)
    if cache is None:
        return _default_selector(pod, objects, services)
    # Which Services select the pod depends only on its values of the label keys they read.
    read = cache.keys_read.get(pod.namespace)
    if read is None:
        read = cache.keys_read[pod.namespace] = tuple(sorted({k for sel in services for k in sel}))
    key = (pod.namespace, tuple(labels.get(k) for k in read), pod._owner)
    found = cache.selectors.get(key)
    if found is None:
        if len(cache.selectors) >= DefaultSelectorCache.MAX:
            cache.selectors.clear()
        found = cache.selectors[key] = _default_selector(pod, objects, services)
    return found


def _default_selector(pod: Pod, objects: ControllerObjects, services: Iterable[Mapping[str, str]]) -> Selector:
    """The selector itself: the namespace's ``services`` that select the pod, merged, then its controller."""
    labels = pod.labels
    merged: dict[str, str] = {}
    for sel in services:
        if all(labels.get(k) == v for k, v in sel.items()):
            merged.update(sel)
    selector = set_selector(merged)
    if pod._owner is None:
        return selector
    api_version, kind, name = pod._owner
    key = (pod.namespace, name)
    if kind == "ReplicationController" and api_version == "v1":
        rc = objects.replication_controllers.get(key)
        if rc is not None:
            merged.update(rc)
            selector = set_selector(merged)
    elif kind in ("ReplicaSet", "StatefulSet") and api_version == "apps/v1":
        table = objects.replica_sets if kind == "ReplicaSet" else objects.stateful_sets
        if key in table:
            other, _ = compile_label_selector(table[key])
            if other is not None:
                selector = selector.add(*other.requirements)
    return selector


def effective_constraints(pod: Pod, objects: ControllerObjects) -> tuple[tuple[SpreadConstraint, ...], tuple[SpreadConstraint, ...], bool]:
    """(DoNotSchedule constraints, ScheduleAnyway constraints, requireAllTopologies).

    With no constraints on the pod the system defaults apply (hostname maxSkew 3, zone maxSkew 5,
    ScheduleAnyway) if a default selector can be built; requireAllTopologies is then false.
    """
    own = pod.spread_constraints
    if own:
        hard = tuple(c for c in own if c.when_unsatisfiable == "DoNotSchedule")
        soft = tuple(c for c in own if c.when_unsatisfiable == "ScheduleAnyway")
        return hard, soft, True
    selector = default_selector(pod, objects)
    if selector.empty:
        return (), (), False
    return (), _default_constraints(selector), False


_DEFAULTS: dict[Selector, tuple[SpreadConstraint, ...]] = {}
_DEFAULTS_MAX = 4096


def _default_constraints(selector: Selector) -> tuple[SpreadConstraint, ...]:
    """The system default constraints over ``selector``, one tuple per selector value (a function of the
    value alone): the pods of an app share them, and with them whatever is keyed by the constraints."""
    found = _DEFAULTS.get(selector)
    if found is None:
        if len(_DEFAULTS) >= _DEFAULTS_MAX:
            _DEFAULTS.clear()
        found = _DEFAULTS[selector] = tuple(
            SpreadConstraint(skew, key, "ScheduleAnyway", 1, "Honor", "Ignore", [], selector)
            for key, skew in ((HOSTNAME, 3), (ZONE, 5)))
    return found


class FilterCounts:
    """PreFilter state: matching pods per (key, value) over eligible nodes, domains and minimum per key."""

    def __init__(self, pod: Pod, constraints: Sequence[SpreadConstraint], nodes: Sequence[Node]) -> None:
        self.pairs: dict[tuple[str, str], int] = {}
        for node in nodes:
            labels = node.labels
            if not all(c.topology_key in labels for c in constraints):
                continue
            per_node: dict[tuple[str, str], int] = {}
            for c in constraints:
                if node_included(c, pod, node):
                    per_node[(c.topology_key, labels[c.topology_key])] = count_matching(node.pods, c._selector, pod.namespace)
            for pair, n in per_node.items():
                self.pairs[pair] = self.pairs.get(pair, 0) + n
        self.domains: dict[str, int] = {}
        self.minimum: dict[str, int] = {}
        for (key, _), n in self.pairs.items():
            self.domains[key] = self.domains.get(key, 0) + 1
            self.minimum[key] = min(self.minimum.get(key, n), n)

    def count(self, c: SpreadConstraint, node: Node) -> int:
        value = node.labels.get(c.topology_key)
        return 0 if value is None else self.pairs.get((c.topology_key, value), 0)


class ScoreCounts:
    """PreScore state over the feasible ("filtered") nodes; counts over all nodes."""

    def __init__(
        self,
        pod: Pod,
        constraints: Sequence[SpreadConstraint],
        feasible: Sequence[Node],
        nodes: Sequence[Node],
        require_all: bool,
    ) -> None:
        self.ignored: set[str] = set()
        self.pairs: dict[tuple[str, str], int] = {}
        sizes = [0] * len(constraints)
        keys = [c.topology_key for c in constraints]
        for node in feasible:
            if require_all and not all(k in node.labels for k in keys):
                self.ignored.add(node.name)
                continue
            for i, c in enumerate(constraints):
                if c.topology_key == HOSTNAME:
                    continue
                pair = (c.topology_key, node.labels.get(c.topology_key, ""))
                if pair not in self.pairs:
                    self.pairs[pair] = 0
                    sizes[i] += 1
        self.domains = {
            id(c): (len(feasible) - len(self.ignored) if c.topology_key == HOSTNAME else sizes[i])
            for i, c in enumerate(constraints)
        }
        for node in nodes:
            if require_all and not all(k in node.labels for k in keys):
                continue
            for c in constraints:
                if not node_included(c, pod, node):
                    continue
                pair = (c.topology_key, node.labels.get(c.topology_key, ""))
                if pair in self.pairs:
                    self.pairs[pair] += count_matching(node.pods, c._selector, pod.namespace)

    def count(self, c: SpreadConstraint, node: Node, pod: Pod) -> int:
        if c.topology_key == HOSTNAME:
            return count_matching(node.pods, c._selector, pod.namespace)
        value = node.labels.get(c.topology_key)
        return 0 if value is None else self.pairs.get((c.topology_key, value), 0)


# -- indexed counterparts (the cluster state keeps the counts; these group them by domain) --------------

MatchClause = tuple[frozenset[str], Selector | None, Selector]
"""(namespace names, namespace selector or None, label selector): one affinity-term-like pod test.

A pod passes when its namespace is in the names -- or the namespace selector is empty or matches the
namespace's labels -- and the label selector matches its labels (``affinity.incoming_term_matches``)."""

MatchKey = tuple[bool, tuple[MatchClause, ...]]
"""(skip terminating pods, ANDed clauses): the key of a per-node matching-pod count array."""


def match_key_matches(key: MatchKey, pod: Pod, ns_labels: Callable[[str], Mapping[str, str]]) -> bool:
    """Does ``pod`` count towards ``key``?"""
    live_only, clauses = key
    if live_only and pod.terminating:
        return False
    ns = pod.namespace
    for names, ns_sel, sel in clauses:
        if ns not in names and (ns_sel is None or not (ns_sel.empty or ns_sel.matches(ns_labels(ns)))):
            return False
        if not sel.matches(pod.labels):
            return False
    return True


def spread_key(selector: Selector | None, namespace: str) -> MatchKey | None:
    """The key whose counts are ``count_matching(pods, selector, namespace)`` (None: always 0)."""
    if selector is None or selector.empty:
        return None
    return (True, ((frozenset((namespace,)), None, selector),))


@dataclass(frozen=True, slots=True)
class LabelCodes:
    """One label key over all nodes: ``values[codes[i]]`` is node i's value; code -1: no such label."""

    codes: IntArray
    values: tuple[str, ...]
    index: Mapping[str, int]
    filled: IntArray
    """``codes`` with -1 replaced by ``len(values)``: a node without the key in one extra last bucket, so
    per-domain totals of every node are one ``bincount`` (and a pod change one scalar update)."""
    missing: int
    """How many nodes lack the key (0: every node has a domain of it)."""
    smallest: int
    """The fewest nodes carrying one value (more than the nodes when there is no value): when fewer nodes
    than that fail the filters, every value's domain keeps a feasible node, so the domains the feasible
    nodes create are known without a pass over the nodes (:class:`IndexedScoreCounts`)."""
    identity: bool
    """Node i carries value i (``codes`` is ``0..n-1``: a key every node has with a value of its own, as
    the hostname): spreading a per-value table over the nodes is then a copy of it, not a gather."""
    order: IntArray
    """The nodes sorted by ``filled`` (stable), so each domain's nodes are one run: per-domain totals are
    one ``add.reduceat`` over the gathered values, in integers (:meth:`totals`)."""
    starts: IntArray
    """Where each non-empty run of ``order`` starts: every value's, then the nodes without the key's
    when there are any."""

    def totals(self, per_node: IntArray) -> IntArray:
        """``per_node`` summed per domain: one entry per value, then one for the nodes without the key
        (a new int64 array; the ``bincount`` of ``filled`` weighted by ``per_node``, without floats)."""
        out = np.zeros(len(self.values) + 1, dtype=np.int64)
        n = self.codes.size
        if self.identity:
            out[:n] = per_node
        elif n:
            out[:self.starts.size] = np.add.reduceat(np.asarray(per_node, dtype=np.int64).take(self.order),
                                                     self.starts)
        return out

    def spread(self, table: IntArray) -> IntArray:
        """Per node, ``table`` at its code (``table`` has one entry per value and a last one, read by the
        nodes without the key): a new array of the nodes' length."""
        if self.identity:
            return table[:self.codes.size].copy()
        return table.take(self.filled)

    def column(self, per_value: Mapping[str, int]) -> IntArray:
        """``per_value.get(node's value, 0)`` for every node (0 where the node lacks the key)."""
        table = np.zeros(len(self.values) + 1, dtype=np.int64)  # the extra last entry serves code -1
        if per_value:
            get = self.index.get
            where = np.fromiter((get(value, -1) for value in per_value), dtype=np.int64, count=len(per_value))
            counts = np.fromiter(per_value.values(), dtype=np.int64, count=len(per_value))
            known = where >= 0  # a value no node carries (any more) has no code: nothing to spread
            table[where[known]] = counts[known]
        return self.spread(table)


def build_label_codes(key: str, labels: Iterable[Mapping[str, str]]) -> LabelCodes:
    """Categorical codes of one label key, in first-seen order."""
    index: dict[str, int] = {}
    codes = []
    for node_labels in labels:
        value = node_labels.get(key)
        if value is None:
            codes.append(-1)
        else:
            code = index.get(value)
            if code is None:
                code = index[value] = len(index)
            codes.append(code)
    array = np.array(codes, dtype=np.int64)
    absent = array < 0
    filled = np.where(absent, len(index), array)
    sizes = np.bincount(array[~absent], minlength=len(index))
    smallest = int(sizes.min()) if len(index) else len(codes) + 1
    identity = len(index) == len(codes) and bool(np.array_equal(array, np.arange(len(codes))))
    missing = int(np.count_nonzero(absent))
    order = np.argsort(filled, kind="stable")
    runs = len(index) + (1 if missing else 0)  # every value has a node; the last run only with a node without
    starts = np.searchsorted(filled[order], np.arange(runs)).astype(np.int64)
    return LabelCodes(array, tuple(index), index, filled, missing, smallest, identity, order, starts)


TERM_KINDS = ("required_anti_affinity", "required_affinity", "preferred_affinity", "preferred_anti_affinity")
"""The kinds of placed pods' inter-pod terms :meth:`ClusterIndex.existing_terms` answers for, by position."""

TermSlots = Mapping[PodAffinityTerm, Mapping[int, int]]
"""Distinct term -> node slot -> how many
placed pods there carry it (required kinds) or the sum of their weights (preferred kinds)."""


class ClusterIndex(ControllerObjects, Protocol):
    """What the incremental cluster state offers a per-pod context (implemented by ``state``).

    Arrays are per node in the order of ``nodes``; they are valid while ``generation`` is unchanged.
    """

    @property
    def generation(self) -> int: ...

    @property
    def nodes(self) -> Sequence[Node]: ...

    @property
    def image_states(self) -> Mapping[str, tuple[int, int]]: ...

    def namespace_labels(self, namespace: str) -> Mapping[str, str]: ...

    def match_counts(self, key: MatchKey) -> IntArray: ...

    def match_totals(self, key: MatchKey, codes: LabelCodes) -> IntArray:
        """``match_counts(key)`` summed per domain of ``codes`` (one entry per value, then the nodes
        without the key), kept up to date by the state: read it at once, do not keep or edit it."""
        ...

    def label_codes(self, key: str) -> LabelCodes: ...

    def existing_terms_memo(self, kind: int, terms: frozenset[PodAffinityTerm], build: Callable[[], _T]) -> _T:
        """``build()``, memoised per (kind, set of placed pods' terms) while none of those terms gains or
        loses a pod and the nodes keep their labels: for values derived from the terms' slots and the
        label codes. The value is shared between pods: nobody may edit it."""
        ...

    def existing_terms_recall(self, kind: int, labels: Mapping[str, str],
                              namespace: str) -> tuple[frozenset[PodAffinityTerm], Any] | None:
        """(the terms of ``kind`` a pod matches, their :meth:`existing_terms_memo` value) when a pod of
        ``namespace`` whose labels those terms read alike was remembered since the kind's distinct terms
        last changed; the value is None for no terms and when it is not memoised or no longer valid
        (then build it from the same terms). None when not known."""
        ...

    def existing_term_sums(self, kind: int, term: PodAffinityTerm, codes: LabelCodes) -> IntArray | None:
        """A term of :meth:`existing_terms` with its per-slot values summed per domain of ``codes`` (its
        topology key's label codes: one entry per value, then the nodes without the key), kept up to
        date by the state; None when the kind has no such term now. Read it at once, do not keep or edit it."""
        ...

    def existing_terms_remember(self, kind: int, labels: Mapping[str, str], namespace: str,
                                terms: frozenset[PodAffinityTerm]) -> None:
        """A pod of ``namespace`` with ``labels`` matches exactly ``terms`` of ``kind`` (every candidate
        matched): for :meth:`existing_terms_recall`."""
        ...

    def existing_terms(self, kind: int, labels: Mapping[str, str],
                       namespace: str) -> Iterable[tuple[PodAffinityTerm, Mapping[int, int]]]:
        """The placed pods' distinct terms of ``TERM_KINDS[kind]`` that a pod of ``namespace`` with
        ``labels`` may match (a superset: the caller still matches each), with their nodes by slot
        (counts or summed weights)."""
        ...


def domain_sums(codes: IntArray, ncodes: int, per_node: IntArray, mask: BoolArray) -> tuple[IntArray, BoolArray]:
    """Σ ``per_node`` over the masked nodes of each domain, and which domains have a masked node."""
    sel = mask & (codes >= 0)
    picked = codes[sel]
    sums = np.bincount(picked, weights=per_node[sel], minlength=ncodes)  # float64: exact below 2**53
    present = np.bincount(picked, minlength=ncodes) > 0
    return np.rint(sums).astype(np.int64), present


MaskCache = dict[Hashable, BoolArray]
"""Node masks shared between pods, kept by the state while its nodes do not change (``node_masks``)."""

_MASK_CACHE_MAX = 256


def _included_key(c: SpreadConstraint, pod: Pod) -> Hashable:
    """Everything of the pod that :func:`node_included` reads under ``c``'s policies, as a value: pods
    with equal keys include the same nodes (most pods of a cluster share a handful of node selectors)."""
    parts: list[Hashable] = [c.node_affinity_policy, c.node_taints_policy]
    if c.node_affinity_policy == "Honor":
        parts.append(tuple(sorted(pod.node_selector.items())))
        parts.append(pod.has_required_node_affinity)
        if pod.has_required_node_affinity:
            parts.append(tuple((bool(t.match_expressions or t.match_fields), t._valid, t._labels, t._fields)
                               for t in pod.required_node_affinity))
    if c.node_taints_policy == "Honor":
        parts.append(tuple((t.key, t.operator, t.value, t.effect) for t in pod.tolerations))
    return tuple(parts)


class _Included:
    """``node_included`` of every node, per (nodeAffinityPolicy, nodeTaintsPolicy) pair, computed once.

    ``shared`` gives the state's mask cache while the state still has the nodes this context saw (None
    otherwise): a mask another pod with the same node selectors, affinity and tolerations computed is
    then reused instead of a pass over every node. ``codes`` likewise gives the state's label codes
    (None when they no longer describe these nodes): the node-affinity part is then computed per
    distinct label value (:func:`node_affinity_mask`), not per node.
    """

    def __init__(self, pod: Pod, nodes: Sequence[Node], shared: Callable[[], MaskCache | None] | None = None,
                 codes: Callable[[], Callable[[str], LabelCodes] | None] | None = None) -> None:
        self.pod = pod
        self.nodes = nodes
        self._masks: dict[tuple[str, str], BoolArray] = {}
        self._shared = shared
        self._codes = codes

    def everywhere(self, c: SpreadConstraint) -> bool:
        """True when ``c``'s policies include every node whatever it is (the mask is all ones): then the
        per-domain totals the state keeps serve as they are, with no pass over the nodes."""
        pod = self.pod
        return c.node_taints_policy != "Honor" and (
            c.node_affinity_policy != "Honor" or not (pod.node_selector or pod.has_required_node_affinity))

    def __call__(self, c: SpreadConstraint) -> BoolArray:
        policies = (c.node_affinity_policy, c.node_taints_policy)
        mask = self._masks.get(policies)
        if mask is None:
            pod, nodes = self.pod, self.nodes
            affinity_free = c.node_affinity_policy != "Honor" or not (pod.node_selector or pod.has_required_node_affinity)
            if affinity_free and c.node_taints_policy != "Honor":
                mask = np.ones(len(nodes), dtype=bool)
            else:
                cache = self._shared() if self._shared is not None else None
                key = _included_key(c, pod) if cache is not None else None
                found = cache.get(key) if cache is not None else None
                codes = self._codes() if self._codes is not None and c.node_taints_policy != "Honor" else None
                if found is not None and found.size == len(nodes):
                    mask = found
                else:
                    vector = node_affinity_mask(pod, len(nodes), codes) if codes is not None else None
                    mask = vector if vector is not None else np.fromiter(
                        (node_included(c, pod, n) for n in nodes), dtype=bool, count=len(nodes))
                    if cache is not None:
                        if len(cache) >= _MASK_CACHE_MAX:
                            cache.clear()
                        mask.flags.writeable = False  # shared between pods: nobody may edit it
                        cache[key] = mask
            self._masks[policies] = mask
        return mask


def node_affinity_mask(pod: Pod, n: int, codes: Callable[[str], LabelCodes]) -> BoolArray | None:
    """:func:`~policyscheduler.objects.records.pod_matches_required_node_affinity` of every node, from the
    label codes of the keys the pod's node selector and terms read: each requirement is tested once per
    distinct value of its key (and once for "no such label") with the requirement's own ``matches``, then
    spread over the nodes by code. None when a term tests ``metadata.name`` (matchFields): per node then.
    """

    def label_equals(key: str, value: str) -> BoolArray | None:
        lc = codes(key)
        if lc.codes.size != n:
            return None
        code = lc.index.get(value)
        return np.zeros(n, dtype=bool) if code is None else lc.codes == code

    def requirement(req: Requirement, on_fields: bool) -> BoolArray | None:
        if on_fields:
            return None
        lc = codes(req.key)
        if lc.codes.size != n:
            return None
        table = np.fromiter((req.matches({req.key: v}) for v in lc.values), dtype=bool, count=len(lc.values))
        return np.append(table, req.matches({}))[lc.codes]  # code -1 reads "no such label"

    return required_node_affinity_rows(pod, n, label_equals, requirement)


def _counts(index: ClusterIndex, c: SpreadConstraint, namespace: str, n: int) -> IntArray:
    key = spread_key(c._selector, namespace)
    return index.match_counts(key) if key is not None else np.zeros(n, dtype=np.int64)


def _totals(index: ClusterIndex, c: SpreadConstraint, namespace: str, codes: LabelCodes) -> IntArray:
    """Matching pods of ``c`` per domain of ``codes`` over every node, the nodes without the key last
    (a new array: the state's own is updated in place)."""
    key = spread_key(c._selector, namespace)
    if key is None:
        return np.zeros(len(codes.values) + 1, dtype=np.int64)
    return index.match_totals(key, codes).copy()


def _score_codes(lc: LabelCodes) -> IntArray:
    """The nodes' score codes of a key: a node without the key in the "" domain (the value "" when it
    is one, else one more code after the values)."""
    empty = lc.index.get("")
    return lc.filled if empty is None else np.where(lc.codes < 0, empty, lc.codes)


def _spread_table(codes: LabelCodes, table: IntArray) -> IntArray:
    """Per node, ``table`` at its domain's code (``table`` has one entry per value and a last one, read
    by the nodes without the key)."""
    return codes.spread(table)


class IndexedFilterCounts(FilterCounts):
    """:class:`FilterCounts` from the state's per-node counts: O(nodes) per constraint, no pod walk; no
    pass over the nodes at all when every node is eligible and included (the state's per-domain totals)."""

    def __init__(self, pod: Pod, constraints: Sequence[SpreadConstraint], nodes: Sequence[Node],
                 index: ClusterIndex, included: _Included | None = None) -> None:
        self.pairs = {}
        self.index = index
        self._tables: dict[str, tuple[LabelCodes, IntArray]] = {}
        n = len(nodes)
        if constraints:
            included = included if included is not None else _Included(pod, nodes)
            codes = {c.topology_key: index.label_codes(c.topology_key) for c in constraints}
            if all(lc.missing == 0 for lc in codes.values()) and all(included.everywhere(c) for c in constraints):
                # Every node eligible and included: the last constraint of a key sets every node's count.
                last = {c.topology_key: c for c in constraints}
                for key, c in last.items():
                    lc = codes[key]
                    table = _totals(index, c, pod.namespace, lc)
                    table[-1] = 0
                    self._tables[key] = (lc, table)
                    values = lc.values
                    for j, count in enumerate(table[:-1].tolist()):
                        self.pairs[(key, values[j])] = count
            else:
                eligible = np.ones(n, dtype=bool)
                for lc in codes.values():
                    eligible &= lc.codes >= 0
                # Per node, the last included constraint of a key sets that key's count (kube's per-node map).
                per_key: dict[str, tuple[IntArray, BoolArray]] = {}
                for c in constraints:
                    inc = included(c) & eligible
                    value, present = per_key.get(c.topology_key, (np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)))
                    per_key[c.topology_key] = (np.where(inc, _counts(index, c, pod.namespace, n), value), present | inc)
                for key, (value, present) in per_key.items():
                    lc = codes[key]
                    sums, domains = domain_sums(lc.codes, len(lc.values), value, present)
                    table = np.zeros(len(lc.values) + 1, dtype=np.int64)
                    table[:-1] = np.where(domains, sums, 0)
                    self._tables[key] = (lc, table)
                    for j in np.flatnonzero(domains).tolist():
                        self.pairs[(key, lc.values[j])] = int(sums[j])
        self.domains = {}
        self.minimum = {}
        for (key, _), count in self.pairs.items():
            self.domains[key] = self.domains.get(key, 0) + 1
            self.minimum[key] = min(self.minimum.get(key, count), count)

    def column(self, c: SpreadConstraint) -> IntArray:
        """:meth:`count` for every node."""
        found = self._tables.get(c.topology_key)
        if found is None:
            return np.zeros(len(self.index.nodes), dtype=np.int64)
        return _spread_table(*found)


class IndexedScoreCounts(ScoreCounts):
    """:class:`ScoreCounts` from the state's per-node counts; ``feasible`` is a mask over ``nodes``.

    The domain sums of a constraint that includes every node come from the state's per-domain totals
    (no pass over the nodes); only which domains the feasible nodes create is computed per pod.
    """

    def __init__(self, pod: Pod, constraints: Sequence[SpreadConstraint], feasible: BoolArray,
                 nodes: Sequence[Node], require_all: bool, index: ClusterIndex,
                 included: _Included | None = None) -> None:
        self.index = index
        self.pod = pod
        self.nodes = nodes
        self._position: dict[str, int] | None = None
        n = len(nodes)
        included = included if included is not None else _Included(pod, nodes)
        eligible: BoolArray | None = None  # None: every node carries every key (or keys are not required)
        if require_all:
            for c in constraints:
                lc = index.label_codes(c.topology_key)
                if lc.missing:
                    has = lc.codes >= 0
                    eligible = has if eligible is None else eligible & has
        hosts = int(np.count_nonzero(feasible))
        failed = n - hosts
        if eligible is None:
            self.ignored = set()
            counted = feasible
            everyone = hosts == n  # every node counted: every domain a node carries is created
        else:
            everyone = False
            self.ignored = {nodes[i].name for i in np.flatnonzero(feasible & ~eligible).tolist()}
            counted = feasible & eligible
        # Scoring puts a node lacking the key into the "" domain: one more code unless "" is a value.
        # key -> (label codes, score values, created domains); their sums per score code come after
        score_codes: dict[str, tuple[LabelCodes, tuple[str, ...], list[bool]]] = {}
        sizes = [0] * len(constraints)
        for i, c in enumerate(constraints):
            key = c.topology_key
            if key == HOSTNAME or key in score_codes:
                continue  # a later constraint on a key finds its domains already created (topoSize 0)
            lc = index.label_codes(key)
            empty = lc.index.get("")
            values = lc.values + ("",) if empty is None else lc.values
            if everyone or (eligible is None and lc.smallest > failed
                            and (empty is not None or lc.missing == 0 or lc.missing > failed)):
                # every domain (the "" one of the nodes without the key included, when they are more
                # than the failed nodes) holds more nodes than failed the filters: each has a feasible one
                made = [True] * len(lc.values)
                if empty is None:
                    made.append(lc.missing > 0)  # the "" domain of the nodes without the key
            else:
                made = (np.bincount(_score_codes(lc)[counted], minlength=len(values)) > 0).tolist()
            sizes[i] = made.count(True)
            score_codes[key] = (lc, values, made)
        hosts -= len(self.ignored)
        self.domains = {id(c): (hosts if c.topology_key == HOSTNAME else sizes[i]) for i, c in enumerate(constraints)}
        sums: dict[str, IntArray] = {}  # per key, per score code (none: every sum 0)
        for c in constraints:
            key = c.topology_key
            if key == HOSTNAME:
                continue
            lc, values, made = score_codes[key]
            if eligible is None and included.everywhere(c):
                # the state's own per-domain totals, read now (not kept): the nodes without the key last
                match = spread_key(c._selector, pod.namespace)
                if match is None:
                    continue
                part = index.match_totals(match, lc)
                if len(values) == len(lc.values):  # "" is a value: the nodes without the key count there
                    without_key = part[-1]
                    part = part[:-1].copy()
                    part[lc.index[""]] += without_key
            else:
                mask = included(c) if eligible is None else included(c) & eligible
                part, _ = domain_sums(_score_codes(lc), len(values), _counts(index, c, pod.namespace, n), mask)
            before = sums.get(key)
            sums[key] = part if before is None else before + part  # a new array: the state's is not edited
        self.pairs = {}
        self._tables: dict[str, tuple[LabelCodes, IntArray]] = {}
        pairs = self.pairs
        for key, (lc, values, made) in score_codes.items():
            nv = len(lc.values)
            table = np.zeros(nv + 1, dtype=np.int64)
            found = sums.get(key)
            counts = found.tolist() if found is not None else [0] * len(values)  # a few domains: in Python
            for j, value in enumerate(values):
                if made[j]:
                    pairs[(key, value)] = counts[j]
            # column: a node's value reads its created domain's sum; a node without the key reads 0
            if found is not None:
                table[:nv] = found[:nv]
                if not all(made[:nv]):
                    table[:nv][~np.array(made[:nv], dtype=bool)] = 0
            self._tables[key] = (lc, table)

    def count(self, c: SpreadConstraint, node: Node, pod: Pod) -> int:
        if c.topology_key == HOSTNAME:
            i = self._slot(node)
            if i is not None:
                return int(_counts(self.index, c, pod.namespace, len(self.nodes))[i])
        return super().count(c, node, pod)

    def _slot(self, node: Node) -> int | None:
        """The node's position in the view (None for a record from elsewhere: then count its pods)."""
        if self._position is None:
            self._position = {n.name: i for i, n in enumerate(self.nodes)}
        i = self._position.get(node.name)
        return i if i is not None and self.nodes[i] is node else None

    def column(self, c: SpreadConstraint) -> IntArray:
        """:meth:`count` for every node."""
        key = c.topology_key
        if key == HOSTNAME:
            return _counts(self.index, c, self.pod.namespace, len(self.index.nodes)).copy()
        found = self._tables.get(key)
        if found is None:
            return np.zeros(len(self.index.nodes), dtype=np.int64)
        return _spread_table(*found)
