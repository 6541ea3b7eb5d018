"""The per-pod ``cluster`` value: everything a rule needs that depends on more than one node.

One :class:`Cluster` is made per pod evaluation (``snapshot.context(pod)``). Cheap pod-level facts are
fields; the per-pod precomputations (topology spread counts, inter-pod affinity counts and scores) are
built lazily on first use and cached. They come from the cluster state's indexes (a
:class:`~policyscheduler.objects.topology.ClusterIndex`): per-node counts of matching pods kept up to date
on every pod change, the placed pods' inter-pod terms per distinct term (with the nodes carrying them),
label codes per topology key and node masks shared by pods of equal node selectors, so a pod costs
O(nodes + distinct terms its labels may match), like kube's PreFilter but without its walk over the pods
with affinity terms, instead of a walk over every pod.
A context is a view of the state at the moment it was made: if the state changes before a
precomputation is built, that precomputation falls back to walking the node records the context saw
(the original from-scratch code, kept as the reference the indexed code is tested against).

The score of PodTopologySpread depends on the *feasible* nodes (kube's PreScore gets the filtered
list): the evaluator calls :meth:`Cluster.set_feasible` between filtering and scoring. Without that
call every node is taken as feasible.

Vector kernels: :meth:`Cluster.column` gives, for a builtin that takes a ``node``, its value on every
node at once (int64, in the order of the context's nodes) for the vectorised backend.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from policyscheduler.objects import affinity, domains, topology, volumes
from policyscheduler.objects.domains import PodSelector
from policyscheduler.objects.records import Node, Pod, PodAffinityTerm, SpreadConstraint
from policyscheduler.objects.storage import PersistentVolume, PersistentVolumeClaim
from policyscheduler.schema import exposed, record

__all__ = ["Cluster", "make_cluster", "COLUMNS", "PER_POD"]

IntArray = npt.NDArray[np.int64]


_HONOR_AFFINITY = SpreadConstraint(1, "", "DoNotSchedule", 1, "Honor", "Ignore", [], None)
"""A constraint shape whose ``_Included`` mask is "the pod's node affinity allows the node", so the
domain primitives share that per-pod mask with PodTopologySpread instead of computing it again."""


class _PerPod:
    """The type of :data:`PER_POD`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "PER_POD"


PER_POD = _PerPod()
"""What :meth:`Cluster.column_token` gives for a column that is a function of a token and the node's
record, but whose token is this pod's own (its own preferred terms' sums): no other pod's rows can be
reused for it, though another pod's may be for the same call."""


class _State:
    """Mutable per-pod caches behind a frozen Cluster (never visible to policies).

    Each precomputation is built on first use (a pod without spread constraints never builds the
    spread counts); ``set_feasible`` drops the one that depends on the feasible nodes.
    """

    def __init__(self, pod: Pod, nodes: Sequence[Node], index: topology.ClusterIndex | None,
                 ns_labels: affinity.NsLabels, image_states: Mapping[str, tuple[int, int]],
                 hard: tuple[SpreadConstraint, ...], soft: tuple[SpreadConstraint, ...], require_all: bool,
                 now: int = 0) -> None:
        self.pod = pod
        self.now = now
        self.nodes = nodes
        self.index = index
        self.generation = index.generation if index is not None else -1
        self.ns_labels = ns_labels
        self.image_states = image_states
        self.hard = hard
        self.soft = soft
        self.require_all = require_all
        self.feasible_mask: npt.NDArray[np.bool_] | None = None
        self.selectors = domains.SelectorPool(pod.namespace)
        self.domain_tables: dict[tuple[int, str], domains.Domains] = {}
        self.totals: dict[int, int] = {}
        self.storage: volumes.StorageView = volumes.EmptyStorage()
        self.binding_checks: dict[str, volumes.BindingCheck] = {}
        self.new_volumes: dict[tuple[bool, bool], dict[str, str]] = {}

    def binding_check(self, node: Node) -> volumes.BindingCheck:
        """VolumeBinding's FindPodVolumes for this pod on ``node``, once per node and context."""
        check = self.binding_checks.get(node.name)
        if check is None:
            check = self.binding_checks[node.name] = volumes.find_pod_volumes(self.pod, node, self.storage,
                                                                              self.pod_claims)
        return check

    @cached_property
    def pod_claims(self) -> volumes.PodClaims:
        return volumes.classify_claims(self.pod, self.storage)

    @cached_property
    def zone_topologies(self) -> tuple[tuple[str, frozenset[str]], ...]:
        return volumes.zone_topologies(self.pod, self.storage)

    def limit_exceeded(self, node: Node) -> bool:
        """NodeVolumeLimits on ``node``, the pod's new volumes computed once per kind of CSINode."""
        pod = self.pod
        if not pod.volumes:
            return False
        csi_node = self.storage.csi_node(node.name)
        if csi_node is None or not csi_node.attach_limits:
            return False
        key = volumes.migration_key(csi_node)
        new = self.new_volumes.get(key)
        if new is None:
            new = self.new_volumes[key] = volumes.new_attachable(pod, csi_node, self.storage)
        return volumes.volume_limit_exceeded(pod, node, self.storage, new)

    def has_disks(self) -> bool:
        return any(v._disk is not None for v in self.pod.volumes)

    @cached_property
    def missing_claim(self) -> str:
        return volumes.missing_claim(self.pod, self.storage)

    @cached_property
    def binding_error(self) -> str:
        return volumes.binding_error(self.pod, self.storage)

    @cached_property
    def zone_error(self) -> str:
        return volumes.zone_error(self.pod, self.storage)

    @cached_property
    def rwop_conflict(self) -> bool:
        return volumes.read_write_once_pod_conflict(self.pod, self.storage)

    def feasible_nodes(self) -> Sequence[Node]:
        """The nodes passing the filters (every node before ``set_feasible``), built only when asked."""
        mask = self.feasible_mask
        if mask is None:
            return self.nodes
        nodes = self.nodes
        return [nodes[i] for i in np.flatnonzero(mask).tolist()]

    @property
    def indexed(self) -> topology.ClusterIndex | None:
        """The index, if it still describes the nodes this context saw."""
        index = self.index
        return index if index is not None and index.generation == self.generation else None

    @cached_property
    def included(self) -> topology._Included:
        # closures over the index and the generation, not methods of this object: the _Included is kept
        # here, and a cycle through it would keep every context (and its precomputations) alive until the
        # garbage collector ran -- a collection every few pods
        index, generation = self.index, self.generation

        def label_codes() -> Callable[[str], topology.LabelCodes] | None:
            """The state's label codes while the index still describes this context's nodes."""
            return index.label_codes if index is not None and index.generation == generation else None

        def mask_cache() -> topology.MaskCache | None:
            """The state's node-mask cache while the index still describes this context's nodes."""
            if index is None or index.generation != generation:
                return None
            return getattr(index, "node_masks", None)

        return topology._Included(self.pod, self.nodes, mask_cache, label_codes)

    def domains(self, sel: PodSelector, key: str) -> domains.Domains:
        """The (selector, topology key) table, built once per context (indexed while the index is current).

        Keyed by the selector's identity: selectors are interned in this context's pool, which keeps them
        alive, so an id is never reused by another selector while the table is cached.
        """
        cache_key = (id(sel), key)
        table = self.domain_tables.get(cache_key)
        if table is None:
            if sel._pool is not self.selectors:
                raise ValueError("a pod selector can only be used with the cluster value that made it")
            index = self.indexed
            if index is None:
                table = domains.walk_domains(sel, key, self.nodes, self.pod)
            else:
                table = domains.indexed_domains(sel, key, index, lambda: self.included(_HONOR_AFFINITY))
            self.domain_tables[cache_key] = table
        return table

    def total(self, sel: PodSelector) -> int:
        """``count_in_cluster(sel)``, computed once per context (keyed like :meth:`domains`)."""
        found = self.totals.get(id(sel))
        if found is None:
            if sel._pool is not self.selectors:
                raise ValueError("a pod selector can only be used with the cluster value that made it")
            index = self.indexed
            if index is None:
                found = domains.walk_total(sel, self.nodes, self.pod)
            else:
                found = domains.indexed_total(sel, index, lambda: self.included(_HONOR_AFFINITY))
            self.totals[id(sel)] = found
        return found

    @cached_property
    def spread_filter(self) -> topology.FilterCounts:
        index = self.indexed
        if index is None:
            return topology.FilterCounts(self.pod, self.hard, self.nodes)
        return topology.IndexedFilterCounts(self.pod, self.hard, self.nodes, index, self.included)

    @cached_property
    def spread_score(self) -> topology.ScoreCounts:
        index = self.indexed
        if index is None:
            feasible = self.feasible_nodes()
            return topology.ScoreCounts(self.pod, self.soft, feasible, self.nodes, self.require_all)
        mask = self.feasible_mask if self.feasible_mask is not None else np.ones(len(self.nodes), dtype=bool)
        return topology.IndexedScoreCounts(self.pod, self.soft, mask, self.nodes, self.require_all, index,
                                           self.included)

    @cached_property
    def affinity_filter(self) -> affinity.FilterState:
        index = self.indexed
        if index is None:
            return affinity.FilterState(self.pod, self.nodes, self.ns_labels)
        return affinity.IndexedFilterState(self.pod, self.nodes, self.ns_labels, index)

    @cached_property
    def affinity_score(self) -> affinity.ScoreState:
        index = self.indexed
        if index is None:
            return affinity.ScoreState(self.pod, self.nodes, self.ns_labels)
        return affinity.IndexedScoreState(self.pod, self.nodes, self.ns_labels, index)


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
        nodes = self._state.nodes
        self.set_feasible_mask(np.fromiter((n.name in wanted for n in nodes), dtype=bool, count=len(nodes)))

    def set_feasible_mask(self, mask: npt.NDArray[np.bool_]) -> None:
        """:meth:`set_feasible` with one boolean per node (in the context's node order); no per-node work
        (the list of feasible nodes is only built if a non-indexed precomputation asks for it)."""
        state = self._state
        state.feasible_mask = np.asarray(mask, dtype=bool)
        state.__dict__.pop("spread_score", None)

    @property
    def now(self) -> int:
        """The decision time (epoch nanoseconds) that rules read as the root name ``now`` (a ``timestamp``):
        the same for every rule and node of this pod's evaluation (not a policy-visible member)."""
        return self._state.now

    @property
    def nodes(self) -> Sequence[Node]:
        """The nodes this context describes, in the order of :meth:`column` (not visible to policies;
        read-only: the state lends its own list)."""
        return self._state.nodes

    def column(self, name: str, *args: Any) -> IntArray:
        """The builtin ``name`` on every node: ``[getattr(self, name)(..., node, ...) for node in nodes]``.

        ``name`` is one of :data:`COLUMNS` (the exposed methods taking a ``node``); ``args`` are its other
        arguments in order (``node`` left out). The result is int64, one entry per node of :attr:`nodes`.
        """
        if name not in COLUMNS:
            raise ValueError(f"no column for {name!r}; columns exist for {', '.join(sorted(COLUMNS))}")
        state = self._state
        index = state.indexed
        if index is not None:
            return COLUMNS[name](self, index, *args)
        method = getattr(self, name)
        if name == "scaled_image_size":
            values = [method(node, *args) for node in state.nodes]
        else:
            values = [method(*args, node) for node in state.nodes]
        return np.array(values, dtype=np.int64).reshape(len(state.nodes))

    def uniform(self, name: str, *args: Any) -> int | None:
        """The value of :meth:`column` when it is the same on every node and that can be told without
        building the column (no pod with inter-pod terms anywhere, an image no node has), else None.

        The vectorised backend asks this first: a rule whose cluster builtins are all uniform folds to
        constants with no per-node work, which is the common case for pods without inter-pod terms.
        """
        state = self._state
        if name not in COLUMNS or state.indexed is None:
            return None
        if name in _LOOKUPS:
            attr, part = _LOOKUPS[name]
            maps = getattr(state, part)
            if isinstance(maps, affinity.IndexedMaps):
                return 0 if maps.is_zero(attr) else None
            return 0 if _all_zero(getattr(maps, attr)) else None
        if name in ("affinity_count", "anti_affinity_count") and len(args) == 1:
            attr = "affinity" if name == "affinity_count" else "anti"
            filtered = state.affinity_filter
            if isinstance(filtered, affinity.IndexedMaps):
                return 0 if filtered.is_zero(attr, args[0].topology_key) else None
            inner = getattr(filtered, attr).get(args[0].topology_key)
            return 0 if not inner or not any(inner.values()) else None
        if name == "scaled_image_size" and len(args) == 1:
            return 0 if self.node_count == 0 or state.image_states.get(args[0]) is None else None
        return None

    def column_token(self, name: str, *args: Any) -> Any:
        """A hashable token such that :meth:`column` of ``name`` on a node is a function of this token and
        of that node's record alone, or None when the column depends on other nodes (per-domain counts,
        normalisation over the feasible nodes, the pod's labels against other pods' terms).

        The vectorised backend keeps a rule's per-node results across pods of the same shape while the
        tokens of its calls are unchanged, and recomputes only the nodes whose record changed (delta
        rows). ``scaled_image_size`` is node-local: the node's image list, the image's size and holder
        count, and the node count. So are the inter-pod sums over the node's label domains (``_LOOKUPS``)
        on an indexed state: the node's labels and the per-domain sums -- for the placed pods' terms
        the pod matches, the state's shared sums of those terms (one object while it is valid: the state
        makes a new one when a term gains or loses a pod or a node changes its labels), ``("zero",)``
        when every sum is 0, :data:`PER_POD` for sums of this pod's own terms (and for a context whose
        state changed since it was made: its sums come from the walk).
        """
        if name == "scaled_image_size" and len(args) == 1 and isinstance(args[0], str):
            return (args[0], self._state.image_states.get(args[0]), self.node_count)
        if name in _LOOKUPS and not args:
            if self._state.indexed is None:
                return PER_POD
            attr, part = _LOOKUPS[name]
            maps = getattr(self._state, part)
            if not isinstance(maps, affinity.IndexedMaps):
                return PER_POD
            if maps.is_zero(attr):
                return ("zero",)
            shared = maps.shared(attr)
            return shared if shared is not None else PER_POD
        return None

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
        return _nonempty(self._state.affinity_filter, "affinity")

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
        return _nonempty(self._state.affinity_filter, "existing_anti")

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

    # -- Topology: other pods by domain (objects/domains.py; grammar/LANGUAGE.md has the semantics) -----

    @exposed
    def pods_with(self, key: str, value: str) -> PodSelector:
        """A selector of the pods in the scheduled pod's namespace labelled ``key=value`` (a label with an
        empty value matches only pods carrying the key with an empty value). Refine it with
        ``with_label``, ``in_namespace``, ``in_all_namespaces``, ``honor_node_affinity``; it is made here,
        not by a free function, because "same namespace" needs the pod being scheduled."""
        return self._state.selectors.pods_with(key, value)

    @exposed
    def count_in_domain(self, sel: PodSelector, key: str, node: Node) -> int:
        """Pods counting for ``sel`` on the counted nodes that share the node's value of label ``key``.

        0 for a node without the key: test ``key in node.labels`` to tell "no domain" from "empty
        domain". The pod being scheduled is never counted (add ``if sel.matches(pod) then 1 else 0``).
        """
        return self._state.domains(sel, key).at(key, node)

    @exposed
    def domain_count(self, sel: PodSelector, key: str) -> int:
        """How many distinct values of label ``key`` the counted nodes carry (kube's minDomains check);
        it depends on ``sel`` only through ``honor_node_affinity``."""
        return self._state.domains(sel, key).count

    @exposed
    def min_in_domains(self, sel: PodSelector, key: str) -> int:
        """The smallest ``count_in_domain`` over the domains of ``key`` (a domain with no matching pod
        counts 0, as in kube's spread filter); 0 when no counted node carries the key."""
        return self._state.domains(sel, key).minimum

    @exposed
    def max_in_domains(self, sel: PodSelector, key: str) -> int:
        """The largest ``count_in_domain`` over the domains of ``key``; 0 when no counted node carries it."""
        return self._state.domains(sel, key).maximum

    @exposed
    def count_in_cluster(self, sel: PodSelector) -> int:
        """Pods counting for ``sel`` on every node of the cluster (with ``honor_node_affinity``: on the
        nodes the scheduled pod's node affinity allows), whatever labels the nodes carry: the total that
        a domain's share is taken of (``count_in_domain(sel, key, node) * 100 / count_in_cluster(sel)``).
        The pod being scheduled is never counted."""
        return self._state.total(sel)

    # -- Storage (objects/volumes.py: kube-scheduler's volume plugins) ----------------------------------

    @exposed
    def claims(self) -> list[PersistentVolumeClaim]:
        """The PersistentVolumeClaims the pod's volumes use (named and generic ephemeral ones), in volume
        order; claims that do not exist are left out (``missing_claim`` names the first)."""
        state = self._state
        found = (state.storage.claim(state.pod.namespace, v.claim_name) for v in volumes.claim_volumes(state.pod))
        return [c for c in found if c is not None]

    @exposed
    def bound_volumes(self) -> list[PersistentVolume]:
        """The PersistentVolumes the pod's ``persistentVolumeClaim`` claims name (``spec.volumeName``), in
        volume order: where the pod's data already lives (VolumeZone reads their zone labels)."""
        return volumes.pod_bound_volumes(self._state.pod, self._state.storage)

    @exposed
    def missing_claim(self) -> str:
        """The first ``persistentVolumeClaim`` volume's claim that does not exist, ``""`` when all do
        (VolumeRestrictions' PreFilter: kube says ``persistentvolumeclaim "NAME" not found``)."""
        return self._state.missing_claim

    @exposed
    def read_write_once_pod_conflict(self) -> bool:
        """True if a ``ReadWriteOncePod`` claim of the pod is already used by a pod on some node
        (VolumeRestrictions): the pod fits no node until that pod is gone."""
        return self._state.rwop_conflict

    @exposed
    def disk_conflict(self, node: Node) -> bool:
        """True if an inline GCE PD / AWS EBS / iSCSI / RBD volume of the pod conflicts with a volume of a
        pod on the node (VolumeRestrictions: "node(s) had no available disk")."""
        return volumes.disk_conflict(self._state.pod, node)

    @exposed
    def volume_limit_exceeded(self, node: Node) -> bool:
        """True if the pod's new CSI volumes (in-tree ones counted under their CSI driver as kube
        migrates them) would take a driver past the node's CSINode ``allocatable.count`` (NodeVolumeLimits)."""
        return self._state.limit_exceeded(node)

    @exposed
    def volume_binding_error(self) -> str:
        """VolumeBinding's PreFilter rejection, ``""`` when there is none: a missing or lost claim, one being
        deleted, or "pod has unbound immediate PersistentVolumeClaims"."""
        return self._state.binding_error

    @exposed
    def volume_node_conflict(self, node: Node) -> bool:
        """True if a bound claim's PersistentVolume has node affinity that excludes the node (VolumeBinding:
        "node(s) didn't match PersistentVolume's node affinity")."""
        return volumes.NODE_CONFLICT in self._state.binding_check(node).reasons

    @exposed
    def volume_bind_conflict(self, node: Node) -> bool:
        """True if an unbound ``WaitForFirstConsumer`` claim finds neither a matching static PV usable on the
        node nor a class that may provision there (VolumeBinding: "node(s) didn't find available persistent
        volumes to bind")."""
        return volumes.BIND_CONFLICT in self._state.binding_check(node).reasons

    @exposed
    def volume_capacity_short(self, node: Node) -> bool:
        """True if a claim to provision finds no CSIStorageCapacity with room for it that reaches the node
        (only for CSI drivers with ``storageCapacity: true``; "node(s) did not have enough free storage")."""
        return volumes.NOT_ENOUGH_SPACE in self._state.binding_check(node).reasons

    @exposed
    def volume_pv_missing(self, node: Node) -> bool:
        """True if a bound claim's PersistentVolume does not exist (VolumeBinding: "node(s) unavailable due
        to one or more pvc(s) bound to non-existent pv(s)")."""
        return volumes.PV_NOT_EXIST in self._state.binding_check(node).reasons

    @exposed
    def volume_zone_error(self) -> str:
        """VolumeZone's PreFilter rejection, ``""`` when there is none (in practice a bound claim whose
        PersistentVolume does not exist: ``persistentvolume "NAME" not found``)."""
        return self._state.zone_error

    @exposed
    def volume_zone_conflict(self, node: Node) -> bool:
        """True if a bound PersistentVolume's zone or region label (``topology.kubernetes.io/zone`` /
        ``region`` or the ``failure-domain.beta`` ones; several zones separated by ``__``) names no value of
        the node's (VolumeZone: "node(s) had no available volume zone"); a node without such labels fits."""
        state = self._state
        return volumes.zone_conflict(state.pod, node, state.storage, state.zone_topologies)

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


def _image_column(cl: Cluster, index: topology.ClusterIndex, image: str) -> IntArray:
    """``scaled_image_size`` on every node: one scalar where the node has the image (an image no node
    has is 0 everywhere); presence per slot comes from the state's image index when it has one."""
    nodes = cl._state.nodes
    state = cl._state.image_states.get(image)
    if state is None or cl.node_count == 0:
        return np.zeros(len(nodes), dtype=np.int64)
    presence = getattr(index, "image_presence", None)
    has = presence(image) if presence is not None else None
    if has is None or has.size != len(nodes):
        has = np.fromiter((image in n.images for n in nodes), dtype=bool, count=len(nodes))
    size, holders = state
    out = np.zeros(len(nodes), dtype=np.int64)
    out[has] = int(float(size) * (float(holders) / float(cl.node_count)))
    return out


def _lookup(attr: str, part: str) -> Callable[[Cluster, topology.ClusterIndex], IntArray]:
    def column(cl: Cluster, index: topology.ClusterIndex) -> IntArray:
        maps = getattr(cl._state, part)
        if isinstance(maps, affinity.IndexedMaps):  # the per-domain sums spread back: no map built
            return maps.column(attr, len(index.nodes))
        return affinity.lookup_column(getattr(maps, attr), index)
    return column


_LOOKUPS: dict[str, tuple[str, str]] = {
    "existing_anti_affinity_count": ("existing_anti", "affinity_filter"),
    "preferred_affinity_weight": ("preferred_affinity", "affinity_score"),
    "preferred_anti_affinity_weight": ("preferred_anti", "affinity_score"),
    "existing_required_affinity_count": ("existing_required", "affinity_score"),
    "existing_preferred_affinity_weight": ("existing_preferred", "affinity_score"),
    "existing_preferred_anti_affinity_weight": ("existing_preferred_anti", "affinity_score"),
}
"""The builtins that sum a topology map over the node's label domains: (map attribute, precomputation)."""


def _nonempty(maps: affinity.FilterState, attr: str) -> bool:
    """``bool`` of one of the maps, without building it from an indexed state's sums (a key is there
    only with a domain holding a counted node, as in the map)."""
    if isinstance(maps, affinity.IndexedMaps):
        return bool(maps._sums[attr])
    return bool(getattr(maps, attr))


def _all_zero(m: affinity.TopologyMap) -> bool:
    """True when every domain of every key of the map holds 0 (the usual map: empty)."""
    return not m or not any(v for inner in m.values() for v in inner.values())


def _domain(attr: str) -> Callable[[Cluster, topology.ClusterIndex, PodAffinityTerm], IntArray]:
    def column(cl: Cluster, index: topology.ClusterIndex, t: PodAffinityTerm) -> IntArray:
        filtered = cl._state.affinity_filter
        if isinstance(filtered, affinity.IndexedMaps):
            return filtered.column(attr, len(index.nodes), t.topology_key)
        return affinity.domain_column(getattr(filtered, attr), t.topology_key, index)
    return column


def _spread_filter_column(cl: Cluster, index: topology.ClusterIndex, c: SpreadConstraint) -> IntArray:
    counts = cl._state.spread_filter
    assert isinstance(counts, topology.IndexedFilterCounts)
    return counts.column(c)


def _spread_score_column(cl: Cluster, index: topology.ClusterIndex, c: SpreadConstraint) -> IntArray:
    counts = cl._state.spread_score
    assert isinstance(counts, topology.IndexedScoreCounts)
    return counts.column(c)


def _domain_column(cl: Cluster, index: topology.ClusterIndex, sel: PodSelector, key: str) -> IntArray:
    """``count_in_domain`` on every node: the domain table spread back over the nodes by label code."""
    return index.label_codes(key).column(cl._state.domains(sel, key).per_value)


def _bool_column(test: Callable[[Cluster], Callable[[Node], bool] | None]) -> Callable[[Cluster, topology.ClusterIndex], IntArray]:
    """A storage builtin on every node: zeros when the pod-level part already says "no node" (``test``
    returns None), else the per-node check over the context's nodes (as 0 / 1)."""
    def column(cl: Cluster, index: topology.ClusterIndex) -> IntArray:
        nodes = cl._state.nodes
        check = test(cl)
        if check is None:
            return np.zeros(len(nodes), dtype=np.int64)
        return np.fromiter((check(n) for n in nodes), dtype=np.int64, count=len(nodes))
    return column


def _binding_reason(reason: str) -> Callable[[Cluster], Callable[[Node], bool] | None]:
    def test(cl: Cluster) -> Callable[[Node], bool] | None:
        state = cl._state
        if state.pod_claims.empty:
            return None
        return lambda n: reason in state.binding_check(n).reasons
    return test


def _disk_test(cl: Cluster) -> Callable[[Node], bool] | None:
    state = cl._state
    return (lambda n: volumes.disk_conflict(state.pod, n)) if state.has_disks() else None


def _limit_test(cl: Cluster) -> Callable[[Node], bool] | None:
    state = cl._state
    return state.limit_exceeded if state.pod.volumes else None


def _zone_test(cl: Cluster) -> Callable[[Node], bool] | None:
    state = cl._state
    if not state.pod.volumes or not state.zone_topologies:
        return None
    return lambda n: volumes.zone_conflict(state.pod, n, state.storage, state.zone_topologies)


COLUMNS: dict[str, Callable[..., IntArray]] = {
    "spread_count": _spread_filter_column,
    "spread_score_count": _spread_score_column,
    "affinity_count": _domain("affinity"),
    "anti_affinity_count": _domain("anti"),
    **{name: _lookup(attr, part) for name, (attr, part) in _LOOKUPS.items()},
    "scaled_image_size": _image_column,
    "count_in_domain": _domain_column,
    "disk_conflict": _bool_column(_disk_test),
    "volume_limit_exceeded": _bool_column(_limit_test),
    "volume_node_conflict": _bool_column(_binding_reason(volumes.NODE_CONFLICT)),
    "volume_bind_conflict": _bool_column(_binding_reason(volumes.BIND_CONFLICT)),
    "volume_capacity_short": _bool_column(_binding_reason(volumes.NOT_ENOUGH_SPACE)),
    "volume_pv_missing": _bool_column(_binding_reason(volumes.PV_NOT_EXIST)),
    "volume_zone_conflict": _bool_column(_zone_test),
}
"""Builtins with a vector kernel for :meth:`Cluster.column`: every exposed method that takes a ``node``."""


def make_cluster(pod: Pod, snapshot: topology.ClusterIndex, now: int = 0) -> Cluster:
    """Build the context for ``pod`` over the state's current nodes, at decision time ``now`` (epoch ns).

    The state also supplies the Services and controllers behind the default spread selector, the
    namespace labels that affinity terms' namespace selectors match, and the indexes.
    """
    # the state lends its list of the node records as they are now (it changes a copy while the context
    # lives); another index gives a copy here
    lend: Callable[[object], Sequence[Node]] | None = getattr(snapshot, "lend_nodes", None)
    nodes: Sequence[Node] = () if lend is not None else tuple(snapshot.nodes)
    hard, soft, require_all = topology.effective_constraints(pod, snapshot)
    ns_labels = snapshot.namespace_labels
    own = pod.required_affinity_terms
    matches_own = bool(own) and all(affinity.incoming_term_matches(t, pod, ns_labels) for t in own)
    state = _State(pod, nodes, snapshot, ns_labels, snapshot.image_states, hard, soft, require_all, now)
    if lend is not None:
        nodes = state.nodes = lend(state)
    cluster = Cluster(
        node_count=len(nodes),
        hard_spread_constraints=hard,  # type: ignore[arg-type]  # lists are stored as tuples (records.py)
        soft_spread_constraints=soft,  # type: ignore[arg-type]
        spread_require_all_topologies=require_all,
        pod_matches_own_affinity=matches_own,
        _state=state,
    )
    storage = getattr(snapshot, "storage", None)
    if storage is not None:
        cluster._state.storage = storage
    return cluster
