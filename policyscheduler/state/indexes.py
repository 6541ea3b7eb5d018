"""Indexes the store keeps up to date so the ``cluster.*`` builtins cost what kube's PreFilter costs.

* :class:`MatchCounts`: per-node counts of the pods matching a :data:`MatchKey` (a conjunction of
  (namespace set / namespace selector, label selector) clauses). Placed pods are grouped by what a key
  can test -- (namespace, terminating, labels): the pods of one template share it -- so building a new
  key's array matches each *group* once (O(groups), not O(pods)), and a pod change updates the arrays of
  the keys its group is known to match (O(matching keys)), never a walk over every cached key or pod.
  A key's counts summed per domain of a topology key (:meth:`MatchCounts.totals`) are kept the same way
  once asked for (one scalar update per pod change), so spreading and the incoming pod's own terms
  read per-domain sums without a pass over the nodes. An LRU bounds the memory; a key not asked for
  again after a pod change (an incoming pod's own term, in a cluster of distinct pods) leaves after
  :data:`_PROBATION` newer keys, so placements do not keep updating the arrays of one-off keys. A key
  with a ``NotIn`` requirement is answered as the difference of two keys without it
  (:func:`_split_not_in`), and a new key is found and filed by its rarest ``In`` pair.
* :class:`TermIndex`: the inter-pod terms of the placed pods, per distinct term (kube's
  HavePodsWithAffinity / HavePodsWithRequiredAntiAffinity lists, folded): the nodes of the pods carrying
  it, with counts or summed weights, updated in O(terms of the pod) on every pod change. An incoming pod
  then matches each distinct term once instead of walking the pods that carry them; what is derived
  from a set of matched terms (their per-domain sums) is memoised per set, stamped by the terms' last
  change (:meth:`TermIndex.memo`), so the next pod of the same app reuses it. Terms are found by label
  and namespace; terms differing only in a ``NotIn`` requirement's values are matched as one family.
* :class:`LabelCodes`: a topology key's label values on every node as categorical codes, from which
  domain counts are one ``bincount`` (an O(nodes) group-by) instead of a dict walk per pod.

All are addressed by node *slot* (the node's position in the store's node list); a node removal shifts
slots, so the store drops them then (they are rebuilt on demand).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, cast

import numpy as np
import numpy.typing as npt

from policyscheduler.objects.records import Pod, PodAffinityTerm
from policyscheduler.objects.selectors import Requirement, Selector
from policyscheduler.objects.topology import (
    TERM_KINDS,
    LabelCodes,
    MatchKey,
    TermSlots,
    build_label_codes,
    match_key_matches,
)

__all__ = ["MatchCounts", "LabelCodeCache", "TermIndex"]

IntArray = npt.NDArray[np.int64]
_T = TypeVar("_T")
_MEMO_MAX = 256
"""Memoised values per term index (per set of matched terms: about one per app of incoming pods)."""
_DOMAINS_MAX = 256
"""Terms per kind whose per-domain sums a term index keeps (:meth:`TermIndex.domain_sums`: the terms some
incoming pod matched -- the running apps' terms and the families' stand-ins, not every pod's own). A
hostname term's sums are one int64 per node (40 KB at 5,000 nodes), like a cached match count array."""
_Signature = tuple[str, bool, frozenset[tuple[str, str]]]


def _signature(pod: Pod) -> _Signature:
    """Everything :func:`match_key_matches` reads of a pod: pods with equal signatures match alike."""
    return pod.namespace, pod.terminating, frozenset(pod.labels.items())


def _trigger(selectors: Iterable[Selector | None]) -> list[tuple[str, str]] | None:
    """Label pairs one of which every pod matching all ``selectors`` carries (the values of the first
    ``In`` requirement found), or None when there is no such requirement (then every pod is a candidate).
    Used to find the few selectors a pod's labels can match without testing every selector."""
    for sel in selectors:
        if sel is None:
            continue
        for req in sel.requirements:
            if req.operator == "In":
                return [(req.key, v) for v in req.values]
    return None


class _Triggers:
    """Items (match keys, terms) by their trigger label pairs: :meth:`candidates` of a label set is a
    superset of the items whose selectors can match it, found in O(labels + candidates).

    An item that only pods of some namespaces can match (a match key whose clauses name their
    namespaces, :func:`_key_namespaces`) is filed under each of those namespaces as well, so a pod of
    another namespace never sees it as a candidate: in a cluster of many apps over a few namespaces
    most keys that share a pod's app label belong to the other namespaces' apps."""

    __slots__ = ("by_ns", "by_pair", "everywhere", "ns_everywhere")

    def __init__(self) -> None:
        self.by_pair: dict[tuple[str, str], set[Any]] = {}
        self.everywhere: set[Any] = set()
        self.by_ns: dict[str, dict[tuple[str, str], set[Any]]] = {}  # namespace -> its items by pair
        self.ns_everywhere: dict[str, set[Any]] = {}  # namespace -> its items without trigger pairs

    def add(self, item: Any, pairs: list[tuple[str, str]] | None,
            namespaces: frozenset[str] | None = None) -> None:
        if namespaces is not None:
            for ns in namespaces:
                if pairs is None:
                    self.ns_everywhere.setdefault(ns, set()).add(item)
                else:
                    _bucket_add(self.by_ns.setdefault(ns, {}), item, pairs)
            return
        if pairs is None:
            self.everywhere.add(item)
            return
        _bucket_add(self.by_pair, item, pairs)

    def discard(self, item: Any, pairs: list[tuple[str, str]] | None,
                namespaces: frozenset[str] | None = None) -> None:
        if namespaces is not None:
            for ns in namespaces:
                if pairs is None:
                    found = self.ns_everywhere.get(ns)
                    if found is not None:
                        found.discard(item)
                        if not found:
                            del self.ns_everywhere[ns]
                    continue
                by_pair = self.by_ns.get(ns)
                if by_pair is not None:
                    _bucket_discard(by_pair, item, pairs)
                    if not by_pair:
                        del self.by_ns[ns]
            return
        if pairs is None:
            self.everywhere.discard(item)
            return
        _bucket_discard(self.by_pair, item, pairs)

    def candidates(self, labels: Mapping[str, str], namespace: str | None = None) -> list[Any]:
        """The items ``labels`` may match (``namespace``: the pod's, for the items filed by namespace;
        None: those are left out -- only for tables that never file by namespace)."""
        found = list(self.everywhere)
        for by_pair in (self.by_pair, self.by_ns.get(namespace) if namespace is not None else None):
            if by_pair:
                for pair in labels.items():
                    bucket = by_pair.get(pair)
                    if bucket:
                        found.extend(bucket)
        if namespace is not None:
            bucket = self.ns_everywhere.get(namespace)
            if bucket:
                found.extend(bucket)
        return found

    def clear(self) -> None:
        self.by_pair.clear()
        self.everywhere.clear()
        self.by_ns.clear()
        self.ns_everywhere.clear()


def _bucket_add(by_pair: dict[tuple[str, str], set[Any]], item: Any, pairs: list[tuple[str, str]]) -> None:
    for pair in pairs:
        bucket = by_pair.get(pair)
        if bucket is None:
            bucket = by_pair[pair] = set()
        bucket.add(item)


def _bucket_discard(by_pair: dict[tuple[str, str], set[Any]], item: Any, pairs: list[tuple[str, str]]) -> None:
    for pair in pairs:
        bucket = by_pair.get(pair)
        if bucket is not None:
            bucket.discard(item)
            if not bucket:
                del by_pair[pair]


def _key_namespaces(key: MatchKey) -> frozenset[str] | None:
    """The namespaces a pod must be in to match ``key`` (None: any namespace may): a clause without a
    namespace selector admits only its listed namespaces, and the clauses are ANDed."""
    allowed: frozenset[str] | None = None
    for names, ns_sel, _ in key[1]:
        if ns_sel is None:
            allowed = names if allowed is None else allowed & names
    return allowed


def _term_namespaces(term: PodAffinityTerm) -> frozenset[str] | None:
    """The namespaces an incoming pod must be in to match a placed pod's ``term`` (None: any may): a
    term without a namespace selector admits only the namespaces it lists (its owner's by default; see
    ``objects.affinity.existing_term_matches``). Filing terms under them keeps a pod from testing the
    terms of other namespaces' apps that require the same label pair (a shared ``tier``, say)."""
    return term._names if term._ns_selector is None else None


def _fewest_groups(key: MatchKey, tables: list[dict[tuple[str, str], set[_Signature]]]) -> list[tuple[str, str]] | None:
    """The trigger pairs of the key's ``In`` requirement that the fewest pod groups carry (in ``tables``:
    the groups by label pair of the namespaces the key admits), None when it has no ``In`` requirement.
    Every pod the key matches passes each of its ``In`` requirements, so any of them finds a superset of
    its groups; the rarest finds the fewest to test -- and files the key where the fewest placements test
    it (an app's selector narrowed to one release is found by the release, not by the app)."""
    best: list[tuple[str, str]] | None = None
    fewest = 0
    for _, _, sel in key[1]:
        for req in sel.requirements:
            if req.operator == "In":
                pairs = [(req.key, v) for v in req.values]
                size = sum(len(t.get(pair, ())) for t in tables for pair in pairs)
                if best is None or size < fewest:
                    best, fewest = pairs, size
    return best


def _key_trigger(key: MatchKey) -> list[tuple[str, str]] | None:
    return _trigger(sel for _, _, sel in key[1])


_TOTALS_MAX = 8
"""Per-domain totals kept per cached key (one per topology key in use; more only after node changes)."""

_PROBATION = 256
"""Cached keys that nobody asked for again after a pod change since they were built, kept at most: each
cached key costs every placement of a pod it may match a test and an update, and in a cluster of
distinct pods most keys are one incoming pod's own terms, never asked for again. A key asked for again
(the spread selector of an app, a term shared by its pods) joins the LRU proper."""

_SPARSE_MAX = 64
"""Slots of the sparse groups a new key matches up to which their counts are added in place one by one
(``add.at``); beyond, one ``bincount`` over every slot is cheaper."""

_DENSE_MIN = 64
"""A group on at least this many nodes also keeps its counts as a per-slot array, so a key it matches
adds it with one numpy addition instead of copying its slots (a big Deployment matched by a broad
selector); smaller groups -- most of them, in a cluster of distinct pods -- stay sparse."""


_SPLITS: dict[MatchKey, tuple[MatchKey, MatchKey] | None] = {}
_SPLITS_MAX = 4096
_UNKNOWN = object()


def _split_not_in(key: MatchKey) -> tuple[MatchKey, MatchKey] | None:
    """For a key with a ``k NotIn V`` requirement: (the key without it, the key with ``k In V`` instead),
    whose counts differ by exactly the key's (a pod fails ``NotIn`` exactly when it passes ``In``); None
    for a key without one. Memoised per key (keys are values), bounded like the parser's caches.

    Why: a ``NotIn`` requirement is how a selector leaves one pod or release out (``mismatchLabelKeys``,
    a template's "every replica but mine"), so such keys are distinct per pod and each would be built by
    matching every group of the rest of the selector. The key without it is shared by those pods (it
    stays cached), and the ``In`` key, tested first by the requirement's own label pair, matches few
    groups; so a new key costs two lookups and a subtraction, and no cached array per one-off key is
    updated on every placement."""
    found = _SPLITS.get(key, _UNKNOWN)
    if found is not _UNKNOWN:
        return found  # type: ignore[return-value]
    live_only, clauses = key
    split = None
    for i, (names, ns_sel, sel) in enumerate(clauses):
        reqs = sel.requirements
        for j, req in enumerate(reqs):
            if req.operator == "NotIn":
                rest = reqs[:j] + reqs[j + 1:]
                base = clauses[:i] + ((names, ns_sel, Selector(rest)),) + clauses[i + 1:]
                # the In requirement first: the key is then found by its own label pair (_trigger)
                inside = Selector((Requirement(req.key, "In", req.values), *rest))
                sub = clauses[:i] + ((names, ns_sel, inside),) + clauses[i + 1:]
                split = ((live_only, base), (live_only, sub))
                break
        if split is not None:
            break
    if len(_SPLITS) >= _SPLITS_MAX:
        _SPLITS.clear()
    _SPLITS[key] = split
    return split


class _Entry:
    """One cached match key: its per-node count array and the signatures of the groups it matches.

    Groups hold their keys' entries, not the keys: an entry hashes by identity, while a key (tuples of
    selectors) would be hashed again for every pod placed or removed."""

    __slots__ = ("array", "born", "key", "label_keys", "members", "namespaces", "pairs", "totals")

    def __init__(self, key: MatchKey, array: IntArray, members: set[_Signature],
                 pairs: list[tuple[str, str]] | None) -> None:
        self.key = key
        self.array = array
        self.members = members
        self.pairs = pairs  # its trigger pairs (:func:`_key_trigger`)
        self.namespaces = _key_namespaces(key)  # the only namespaces whose pods it may count (None: any)
        self.label_keys = frozenset(r.key for _, _, sel in key[1] for r in sel.requirements)
        """The pod label keys its clauses read (a pod's other labels cannot change its verdict)."""
        self.totals: dict[int, tuple[LabelCodes, IntArray]] = {}
        """id(label codes) -> (those codes, ``array`` summed per domain; last entry: nodes without the
        key), built on first use (:meth:`MatchCounts.totals`) and kept exact like ``array``."""
        self.born = -1
        """The count of pod changes when it was built while it is on probation (:data:`_PROBATION`),
        -1 once it was asked for again after a pod change."""


class _Group:
    """The placed pods of one signature: a representative, their count per slot, the keys they match."""

    __slots__ = ("dense", "entries", "pod", "slots")

    def __init__(self, pod: Pod) -> None:
        self.pod = pod
        self.slots: dict[int, int] = {}
        self.entries: set[_Entry] = set()
        self.dense: IntArray | None = None  # ``slots`` as an array, once the group is big (_DENSE_MIN)


class MatchCounts:
    """An LRU of per-node matching-pod counts, kept exact as pods come and go (see the module docstring)."""

    def __init__(self, ns_labels: Callable[[str], Mapping[str, str]], maxsize: int = 512) -> None:
        # OrderedDict rather than cachetools.LRUCache: the per-pod update reads cached arrays, and that
        # must not count as a use (LRUCache refreshes an entry on every read).
        self._entries: OrderedDict[MatchKey, _Entry] = OrderedDict()
        self._probation: OrderedDict[MatchKey, _Entry] = OrderedDict()  # not asked for again yet, oldest first
        self._changes = 0  # pod changes seen (what a key on probation must outlive to join the LRU)
        self._ns_labels = ns_labels
        self.maxsize = maxsize
        # Built on the first ``get`` (from the store's pods), dropped by ``clear``; while it is None no
        # array exists either, so pod changes have nothing to update.
        self._groups: dict[_Signature, _Group] | None = None
        self._keys = _Triggers()  # cached entries by trigger pair: a new group tests only the keys it may match
        # namespace -> label pair -> the groups of that namespace carrying it
        self._by_pair: dict[str, dict[tuple[str, str], set[_Signature]]] = {}
        self._label_keys: dict[str, int] = {}  # pod label key -> how many cached keys read it

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def groups(self) -> int:
        """How many pod groups (distinct signatures) are indexed (0 before the first ``get``)."""
        return len(self._groups) if self._groups is not None else 0

    def get(self, key: MatchKey, slots: int, pods_by_slot: Callable[[], Iterable[tuple[int, Iterable[Pod]]]]) -> IntArray:
        """The count array of ``key`` (built on first use by matching every pod group once; a key with a
        ``NotIn`` requirement is the difference of two keys without it: :func:`_split_not_in`)."""
        split = _split_not_in(key)
        if split is not None:
            return self.get(split[0], slots, pods_by_slot) - self.get(split[1], slots, pods_by_slot)
        return self._entry(key, slots, pods_by_slot).array

    def totals(self, key: MatchKey, codes: LabelCodes, slots: int,
               pods_by_slot: Callable[[], Iterable[tuple[int, Iterable[Pod]]]]) -> IntArray:
        """:meth:`get`'s counts summed per domain of ``codes`` (one entry per value, then one for the
        nodes without the key). Kept up to date per pod change like the counts (one scalar update per
        cached key and topology key), so a pod's per-domain sums cost no pass over the nodes. The array
        is the index's own: read it now, do not keep or edit it."""
        split = _split_not_in(key)
        if split is not None:
            return (self.totals(split[0], codes, slots, pods_by_slot)
                    - self.totals(split[1], codes, slots, pods_by_slot))
        entry = self._entry(key, slots, pods_by_slot)
        found = entry.totals.get(id(codes))
        if found is not None:
            return found[1]
        if len(entry.totals) >= _TOTALS_MAX:  # label codes replaced by node changes: drop the old ones
            entry.totals.clear()
        sums = codes.totals(entry.array)
        entry.totals[id(codes)] = (codes, sums)
        return sums

    def _entry(self, key: MatchKey, slots: int, pods_by_slot: Callable[[], Iterable[tuple[int, Iterable[Pod]]]]) -> _Entry:
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
            if entry.born >= 0 and entry.born != self._changes:  # asked for again after a pod change
                entry.born = -1
                del self._probation[key]
            return entry
        groups = self._groups
        if groups is None:
            groups = self._groups = {}
            for slot, pods in pods_by_slot():
                for pod in pods:
                    self._group_add(slot, pod)
        ns_labels = self._ns_labels
        members: set[_Signature] = set()
        where: list[int] = []
        counts: list[int] = []
        namespaces = _key_namespaces(key)
        by_ns = self._by_pair
        tables = [t for t in (by_ns.values() if namespaces is None else map(by_ns.get, namespaces)) if t]
        pairs = _fewest_groups(key, tables)
        arr = np.zeros(slots, dtype=np.int64)
        entry = _Entry(key, arr, members, pairs)
        candidates: Iterable[_Signature]
        if pairs is None:
            candidates = groups if namespaces is None else [sig for sig in groups if sig[0] in namespaces]
        else:  # only the groups carrying a label pair the key requires (in a namespace it admits) can match it
            found: set[_Signature] = set()
            for table in tables:
                for pair in pairs:
                    bucket = table.get(pair)
                    if bucket:
                        found.update(bucket)
            candidates = found
        for sig in candidates:
            group = groups[sig]
            if match_key_matches(key, group.pod, ns_labels):
                group.entries.add(entry)
                members.add(sig)
                dense = group.dense
                if dense is None and len(group.slots) >= _DENSE_MIN:
                    dense = group.dense = np.zeros(slots, dtype=np.int64)
                    dense[np.fromiter(group.slots, dtype=np.int64, count=len(group.slots))] = \
                        np.fromiter(group.slots.values(), dtype=np.int64, count=len(group.slots))
                if dense is not None:
                    arr += dense
                else:
                    where.extend(group.slots)
                    counts.extend(group.slots.values())
        if len(where) > _SPARSE_MAX:
            arr += np.rint(np.bincount(np.asarray(where, dtype=np.int64), weights=np.asarray(counts, dtype=np.float64),
                                       minlength=slots)).astype(np.int64)
        elif where:  # a few slots (a key matching one release's pods): added in place, no array per slot
            np.add.at(arr, np.asarray(where, dtype=np.int64), np.asarray(counts, dtype=np.int64))
        self._entries[key] = entry
        entry.born = self._changes
        self._probation[key] = entry
        self._keys.add(entry, pairs, entry.namespaces)
        label_keys = self._label_keys
        for name in entry.label_keys:
            label_keys[name] = label_keys.get(name, 0) + 1
        if len(self._probation) > _PROBATION:
            old_key, old = self._probation.popitem(last=False)
            del self._entries[old_key]
            self._forget(old)
        if len(self._entries) > self.maxsize:
            _, old = self._entries.popitem(last=False)
            self._probation.pop(old.key, None)
            self._forget(old)
        return entry

    def _group_add(self, slot: int, pod: Pod) -> None:
        """Count a pod into its group while the groups are built (no array exists yet)."""
        assert self._groups is not None
        sig = _signature(pod)
        group = self._groups.get(sig)
        if group is None:
            group = self._new_group(sig, pod)
        group.slots[slot] = group.slots.get(slot, 0) + 1

    def _new_group(self, sig: _Signature, pod: Pod) -> _Group:
        assert self._groups is not None
        group = self._groups[sig] = _Group(pod)
        self._pairs_add(sig)
        return group

    def _pairs_add(self, sig: _Signature) -> None:
        by_pair = self._by_pair.get(sig[0])
        if by_pair is None:
            by_pair = self._by_pair[sig[0]] = {}
        for pair in sig[2]:
            found = by_pair.get(pair)
            if found is None:
                found = by_pair[pair] = set()
            found.add(sig)

    def _pairs_discard(self, sig: _Signature) -> None:
        by_pair = self._by_pair.get(sig[0])
        if by_pair is None:
            return
        for pair in sig[2]:
            found = by_pair.get(pair)
            if found is not None:
                found.discard(sig)
                if not found:
                    del by_pair[pair]
        if not by_pair:
            del self._by_pair[sig[0]]

    def _forget(self, entry: _Entry) -> None:
        """Drop ``entry`` from the groups that match it (its array is gone)."""
        self._keys.discard(entry, entry.pairs, entry.namespaces)
        label_keys = self._label_keys
        for name in entry.label_keys:
            n = label_keys[name] - 1
            if n:
                label_keys[name] = n
            else:
                del label_keys[name]
        groups = self._groups or {}
        for sig in entry.members:
            group = groups.get(sig)
            if group is not None:
                group.entries.discard(entry)

    def pod_changed(self, slot: int, pod: Pod, delta: int) -> None:
        """A pod was placed on (``delta`` 1) or removed from (-1) the node in ``slot``."""
        groups = self._groups
        if groups is None:
            return
        self._changes += 1
        sig = _signature(pod)
        group = groups.get(sig)
        if group is None:
            if delta < 0:
                return  # not indexed (cannot happen while the store calls this for every placed pod)
            group = self._new_group(sig, pod)
            ns_labels = self._ns_labels
            for entry in self._keys.candidates(pod.labels, pod.namespace):
                if match_key_matches(entry.key, pod, ns_labels):
                    group.entries.add(entry)
                    entry.members.add(sig)
        n = group.slots.get(slot, 0) + delta
        if n:
            group.slots[slot] = n
        else:
            del group.slots[slot]
        if group.dense is not None:
            group.dense[slot] += delta
        for entry in group.entries:
            entry.array[slot] += delta
            if entry.totals:
                for codes, sums in entry.totals.values():
                    sums[codes.filled[slot]] += delta
        if not group.slots:
            del groups[sig]
            for entry in group.entries:
                entry.members.discard(sig)
            self._pairs_discard(sig)

    def pod_relabeled(self, slot: int, old: Pod, new: Pod) -> None:
        """A placed pod's labels changed, nothing else (the API server's topology labels on a bind).

        When the pod was the only member of its group (pods of distinct shapes each are) and no cached
        key reads a label that changed, every key matches it as before: the group just takes the new
        signature -- no key is matched again and no count moves. Otherwise it is a removal and a placement."""
        groups = self._groups
        if groups is None:
            return
        sig, new_sig = _signature(old), _signature(new)
        if sig == new_sig:
            return
        group = groups.get(sig)
        labels, new_labels = old.labels, new.labels
        read = self._label_keys
        if (group is None or new_sig in groups or sig[:2] != new_sig[:2] or len(group.slots) != 1
                or group.slots.get(slot) != 1
                or any(name in read for name in labels.keys() | new_labels.keys()
                       if labels.get(name) != new_labels.get(name))):
            self.pod_changed(slot, old, -1)
            self.pod_changed(slot, new, 1)
            return
        del groups[sig]
        groups[new_sig] = group
        group.pod = new
        for entry in group.entries:
            entry.members.discard(sig)
            entry.members.add(new_sig)
        self._pairs_discard(sig)
        self._pairs_add(new_sig)

    def node_appended(self) -> None:
        """A node with no pods joined at the end: every array grows by one zero."""
        for entry in self._entries.values():
            entry.array = np.append(entry.array, np.int64(0))
            entry.totals.clear()  # their label codes describe the old node list
        for group in (self._groups or {}).values():
            if group.dense is not None:
                group.dense = np.append(group.dense, np.int64(0))

    def clear(self) -> None:
        """Forget every array and group (node removal shifts slots; they are rebuilt on demand)."""
        self._entries.clear()
        self._probation.clear()
        self._keys.clear()
        self._by_pair.clear()
        self._label_keys.clear()
        self._groups = None

    def namespaces_changed(self) -> None:
        """Namespace labels changed: drop the arrays whose clauses use a non-empty namespace selector.

        An empty namespace selector ("every namespace": affinity terms' ``namespaceSelector: {}``, the
        policies' ``in_all_namespaces()`` selectors) matches whatever the labels are, so those arrays stay.
        """
        for key in [k for k in self._entries
                    if any(ns_sel is not None and not ns_sel.empty for _, ns_sel, _ in k[1])]:
            self._probation.pop(key, None)
            self._forget(self._entries.pop(key))


class _Family:
    """Placed pods' terms of one kind that differ only in the values of one ``k NotIn V`` requirement
    (a template's "every replica but mine"): one stand-in term without the requirement, carrying the
    members' summed per-slot counts or weights, and the members by each value they leave out."""

    __slots__ = ("by_value", "label", "per_slot", "rest", "term")

    def __init__(self, term: PodAffinityTerm, label: str, rest: tuple[Requirement, ...]) -> None:
        self.term = term  # the members' term without the NotIn requirement
        self.label = label  # the NotIn requirement's label key
        self.rest = rest  # the members' other requirements
        self.per_slot: dict[int, int] = {}
        self.by_value: dict[str, set[PodAffinityTerm]] = {}


def _not_in_split(term: PodAffinityTerm) -> tuple[tuple[Any, ...], Requirement, tuple[Requirement, ...]] | None:
    """(family key, the first NotIn requirement, the other requirements) of a term with a selector
    holding a NotIn requirement; None for any other term."""
    sel = term._selector
    if sel is None:
        return None
    reqs = sel.requirements
    for j, req in enumerate(reqs):
        if req.operator == "NotIn":
            rest = reqs[:j] + reqs[j + 1:]
            return (term.topology_key, term._names, term._ns_selector, rest, req.key), req, rest
    return None


class TermIndex:
    """Per kind of term (:data:`~policyscheduler.objects.topology.TERM_KINDS`), per distinct term of the
    placed pods: slot -> how many pods there carry it (required terms) or their summed weights
    (preferred terms). Terms are keyed by identity: the parser shares one object per distinct term.
    Each kind's terms are also indexed by a label pair their selector requires, so the terms an
    incoming pod may match are found from its labels (:meth:`candidates`), not by testing every term.

    Terms that differ only in the values of a ``k NotIn V`` requirement form a :class:`_Family`: a pod
    matches such a term exactly when it matches the term without the requirement and does not carry
    ``k`` with a value in ``V``. So a family is answered by one stand-in term without it (the members'
    sums) and, for the few members whose ``V`` holds the pod's value of ``k``, a stand-in term with
    ``k In V`` instead carrying that member's counts negated: the same sums, from a number of terms to
    match that does not grow with the members (one per pod of a template, in a cluster of distinct pods).
    """

    def __init__(self) -> None:
        self._tables: tuple[dict[PodAffinityTerm, dict[int, int]], ...] = tuple({} for _ in TERM_KINDS)
        self._triggers: tuple[_Triggers, ...] = tuple(_Triggers() for _ in TERM_KINDS)
        self._tick = 0  # counts term changes
        # last change per term (and per stand-in term: a family's on any member's change)
        self._stamps: tuple[dict[PodAffinityTerm, int], ...] = tuple({} for _ in TERM_KINDS)
        self._memo: dict[tuple[int, frozenset[PodAffinityTerm]], tuple[int, Any]] = {}
        self._families: tuple[dict[tuple[Any, ...], _Family], ...] = tuple({} for _ in TERM_KINDS)
        self._family_of: tuple[dict[PodAffinityTerm, _Family], ...] = tuple({} for _ in TERM_KINDS)
        # member -> its stand-in with ``k In V`` (made when a pod first needs it)
        self._exclusions: tuple[dict[PodAffinityTerm, PodAffinityTerm], ...] = tuple({} for _ in TERM_KINDS)
        # Per kind, what the selectors of its distinct terms read of a pod's labels: label key -> value
        # mentioned by an In / NotIn requirement -> how many requirements mention it (None: how many
        # requirements read the key at all). A pod's labels are matched alike by every term of the kind
        # when they agree on these keys, on the values mentioned (any other value passes or fails each
        # requirement alike): :meth:`recall`.
        self._reads: tuple[dict[str, dict[str | None, int]], ...] = tuple({} for _ in TERM_KINDS)
        # bumped when the kind's reads change their label keys, or a term joins or leaves whose matching pods
        # cannot be told by a label value (see :meth:`_terms_changed`)
        self._shape = [0] * len(TERM_KINDS)
        # (kind, namespace, labels as read) -> (shape then, the terms matched)
        self._matched: tuple[dict[tuple[Any, ...], tuple[int, frozenset[PodAffinityTerm]]], ...] = tuple(
            {} for _ in TERM_KINDS)
        # per kind, a label value -> the remembered read keys holding it (what a term change forgets is
        # found from its values, not by testing every key: :meth:`_terms_changed`)
        self._holding: tuple[dict[str, set[tuple[Any, ...]]], ...] = tuple({} for _ in TERM_KINDS)
        # term -> (the label codes of its topology key, its per-slot values summed per domain of them, the
        # nodes without the key last): made when a pod first matches the term (:meth:`domain_sums`), then
        # kept exact per change like the tables, so a memo built again costs an addition per term
        self._domains: tuple[dict[PodAffinityTerm, tuple[LabelCodes, IntArray]], ...] = tuple({} for _ in TERM_KINDS)
        self._stand_ins: tuple[dict[PodAffinityTerm, _Family], ...] = tuple({} for _ in TERM_KINDS)
        self._excluded: tuple[dict[PodAffinityTerm, PodAffinityTerm], ...] = tuple({} for _ in TERM_KINDS)
        """Per kind, a member's exclusion (its stand-in with ``k In V``) -> the member."""

    def memo(self, kind: int, terms: frozenset[PodAffinityTerm], build: Callable[[], _T]) -> _T:
        """``build()`` for a set of terms of one kind, kept while none of them changes (see
        ``ClusterState.existing_terms_memo``); a term that left and came back has a new stamp."""
        key = (kind, terms)
        hit = self._memo.get(key)
        if hit is not None:
            stamps = self._stamps[kind]
            made = hit[0]
            if all(stamps.get(t, made + 1) <= made for t in terms):
                return cast(_T, hit[1])
        value = build()
        if len(self._memo) >= _MEMO_MAX:
            self._memo.clear()
        self._memo[key] = (self._tick, value)
        return value

    def forget_memo(self) -> None:
        """Drop the memoised values and per-domain sums (the label codes they were built with changed)."""
        self._memo.clear()
        for domains in self._domains:
            domains.clear()

    def domain_sums(self, kind: int, term: PodAffinityTerm, codes: LabelCodes) -> IntArray | None:
        """The per-slot values of a term of :meth:`candidates` (a placed pods' term, a family's stand-in or
        a member's exclusion) summed per domain of ``codes`` (its topology key's label codes), one entry
        per value then one for the nodes without the key; None for a term the kind does not have now.

        Built on first use and kept exact per pod change (one scalar update), until the label codes
        change (:meth:`forget_memo`). The array is the index's own: read it now, do not keep or edit it."""
        domains = self._domains[kind]
        hit = domains.get(term)
        if hit is not None and hit[0] is codes:
            return hit[1]
        per_slot = self._per_slot(kind, term)
        if per_slot is None:
            return None
        sums = np.zeros(len(codes.values) + 1, dtype=np.int64)
        if per_slot and codes.identity:  # a node's own domain (hostname): the slots are the codes, each once
            sums[np.fromiter(per_slot, dtype=np.int64, count=len(per_slot))] = \
                np.fromiter(per_slot.values(), dtype=np.int64, count=len(per_slot))
        elif per_slot:
            where = codes.filled[np.fromiter(per_slot, dtype=np.int64, count=len(per_slot))]
            values = np.fromiter(per_slot.values(), dtype=np.float64, count=len(per_slot))
            sums += np.rint(np.bincount(where, weights=values, minlength=sums.size)).astype(np.int64)
        if len(domains) >= _DOMAINS_MAX:
            domains.clear()
        domains[term] = (codes, sums)
        return sums

    def _per_slot(self, kind: int, term: PodAffinityTerm) -> Mapping[int, int] | None:
        """A candidate term's per-slot values (as :meth:`candidates` gives them), None if the kind has no such term."""
        found = self._tables[kind].get(term)
        if found is not None:
            return found
        family = self._stand_ins[kind].get(term)
        if family is not None:
            return family.per_slot
        member = self._excluded[kind].get(term)
        if member is not None:
            return {s: -c for s, c in self._tables[kind][member].items()}
        return None

    def forget_matched(self) -> None:
        """Drop the terms remembered as matched (:meth:`remember`): namespace labels changed, which the
        terms' namespace selectors read."""
        for matched, holding in zip(self._matched, self._holding):
            matched.clear()
            holding.clear()

    def _read_key(self, kind: int, labels: Mapping[str, str], namespace: str) -> tuple[Any, ...]:
        """The pod's labels as the kind's terms read them (see ``_reads``): per key read, the value when a
        requirement mentions it, else 0 when the pod carries the key, 1 when it does not."""
        parts: list[Any] = [kind, namespace]
        for key, mentioned in self._reads[kind].items():
            value = labels.get(key)
            parts.append(1 if value is None else value if value in mentioned else 0)
        return tuple(parts)

    def remember(self, kind: int, labels: Mapping[str, str], namespace: str,
                 terms: frozenset[PodAffinityTerm]) -> None:
        """``terms`` are the terms of ``kind`` a pod of ``namespace`` with ``labels`` matches (the
        caller matched every candidate): pods reading alike (:meth:`_read_key`) match the same terms
        while the kind keeps its distinct terms and the namespaces their labels."""
        matched = self._matched[kind]
        holding = self._holding[kind]
        if len(matched) >= _MEMO_MAX * 4:
            matched.clear()
            holding.clear()
        shape = self._shape[kind]
        key = self._read_key(kind, labels, namespace)
        if key not in matched:
            for value in key[2:]:
                if type(value) is str:
                    found = holding.get(value)
                    if found is None:
                        holding[value] = {key}
                    else:
                        found.add(key)
        matched[key] = (shape, terms)

    def recall(self, kind: int, labels: Mapping[str, str], namespace: str) -> tuple[frozenset[PodAffinityTerm], Any] | None:
        """(the terms of ``kind`` the pod matches, their memoised value) when a pod reading alike was
        remembered since the kind last changed its distinct terms; the value is None for no terms and
        when it is not memoised or no longer valid (:meth:`memo`: build it again from the same terms).
        None when not known: match the candidates then."""
        key = self._read_key(kind, labels, namespace)
        shape = self._shape[kind]
        hit = self._matched[kind].get(key)
        if hit is None or hit[0] != shape:
            return None
        terms = hit[1]
        if not terms:
            return terms, None
        found = self._memo.get((kind, terms))
        if found is None:
            return terms, None
        stamps = self._stamps[kind]
        made = found[0]
        if all(stamps.get(t, made + 1) <= made for t in terms):
            return terms, found[1]
        return terms, None

    def _reads_change(self, kind: int, term: PodAffinityTerm, by: int) -> tuple[bool, set[str]]:
        """Count the requirements of a term that joined (``by`` 1) or left (-1) into the kind's reads.

        Returns (whether a label key joined or left the reads -- the read keys' layout changed --, the
        values that became or stopped being mentioned: the pods carrying them read otherwise now)."""
        sel = term._selector
        if sel is None:
            return False, set()
        reads = self._reads[kind]
        layout = False
        flipped: set[str] = set()
        for req in sel.requirements:
            mentioned = reads.get(req.key)
            if mentioned is None:
                mentioned = reads[req.key] = {}
                layout = True
            for value in (None, *req.values):
                n = mentioned.get(value, 0) + by
                if n:
                    if value is not None and value not in mentioned:
                        flipped.add(value)
                    mentioned[value] = n
                else:
                    del mentioned[value]
                    if value is not None:
                        flipped.add(value)
            if not mentioned:
                del reads[req.key]
                layout = True
        return layout, flipped

    def _narrowing(self, kind: int, term: PodAffinityTerm) -> tuple[frozenset[str], ...] | None:
        """Sets of label values such that every pod whose candidate terms change when ``term`` joins or
        leaves the kind carries a value of each set (asked before a join, after a leave); None when there
        is none. A family member's, when its family stays: its NotIn values (the pods carrying one match
        its exclusion; the stand-in is unchanged). Any other term's: the values of each of its In
        requirements (matchLabels are In requirements): the pods matching it carry one of each."""
        sel = term._selector
        if sel is None:
            return None
        split = _not_in_split(term)
        if split is not None:
            return (split[1].values,) if split[0] in self._families[kind] else None
        found = tuple(req.values for req in sel.requirements if req.operator == "In")
        return found or None

    def _terms_changed(self, kind: int, narrowing: tuple[frozenset[str], ...] | None, layout: bool,
                       flipped: set[str]) -> None:
        """Forget what :meth:`remember` filed that a term joining or leaving makes wrong.

        A remembered pod's terms change only if it carries a value of each ``narrowing`` set; a pod's
        read key reads otherwise only if it carries a ``flipped`` value. Both show in the read key (each
        such value is mentioned before or after the change, and the read key holds a mentioned value as
        it is), so forgetting the keys that hold one value of every narrowing set, or a flipped value,
        keeps every other key exact -- unless the layout of the read keys changed (a label key joined or
        left the reads) or there is no narrowing: then the kind's shape is bumped (all is forgotten)."""
        if narrowing is None or layout:
            self._shape[kind] += 1
            return
        matched = self._matched[kind]
        if not matched:
            return
        holding = self._holding[kind]
        stale: set[tuple[Any, ...]] = set()
        for value in flipped:
            stale.update(holding.get(value, ()))
        for value in min(narrowing, key=len):  # a key to forget holds one of these (and one of every set)
            for key in holding.get(value, ()):
                if all(not s.isdisjoint(key[2:]) for s in narrowing):
                    stale.add(key)
        for key in stale:
            matched.pop(key, None)
            for value in key[2:]:
                if type(value) is str:
                    found = holding.get(value)
                    if found is not None:
                        found.discard(key)
                        if not found:
                            del holding[value]

    def table(self, kind: int) -> TermSlots:
        """The terms of one kind with their per-slot counts or weights (read-only)."""
        return self._tables[kind]

    def candidates(self, kind: int, labels: Mapping[str, str],
                   namespace: str) -> list[tuple[PodAffinityTerm, Mapping[int, int]]]:
        """The terms of one kind whose selector may match a pod of ``namespace`` with ``labels`` (a
        superset; terms with a nil selector, which match nothing, are left out, and so are terms without
        a namespace selector that do not list ``namespace``), with their per-slot counts or weights.
        A family's members come as its stand-ins: summing the per-slot values of the stand-ins the pod
        matches gives the sums of the members it matches (see the class docstring)."""
        table = self._tables[kind]
        out: list[tuple[PodAffinityTerm, Mapping[int, int]]] = []
        for item in self._triggers[kind].candidates(labels, namespace):
            if type(item) is not _Family:
                out.append((item, table[item]))
                continue
            out.append((item.term, item.per_slot))
            value = labels.get(item.label)
            excluded = item.by_value.get(value) if value is not None else None
            if excluded:
                for member in excluded:
                    out.append((self._exclusion(kind, member, item), {s: -c for s, c in table[member].items()}))
        return out

    def _exclusion(self, kind: int, member: PodAffinityTerm, family: _Family) -> PodAffinityTerm:
        """The member's stand-in with its NotIn requirement turned into ``In`` (its stamp is the member's)."""
        found = self._exclusions[kind].get(member)
        if found is None:
            split = _not_in_split(member)
            assert split is not None
            inside = Selector((Requirement(split[1].key, "In", split[1].values), *family.rest))
            found = PodAffinityTerm(member.topology_key, member.namespaces, inside, member._ns_selector, member._names)
            self._exclusions[kind][member] = found
            self._excluded[kind][found] = member
            self._stamps[kind][found] = self._stamps[kind][member]
        return found

    def pod_changed(self, slot: int, pod: Pod, delta: int) -> None:
        """A pod was placed on (``delta`` 1) or removed from (-1) the node in ``slot``: O(its terms)."""
        for t in pod.required_anti_affinity_terms:
            self._bump(0, t, slot, delta)
        for t in pod.required_affinity_terms:
            self._bump(1, t, slot, delta)
        for w in pod.preferred_affinity_terms:
            self._bump(2, w.term, slot, delta * w.weight)
        for w in pod.preferred_anti_affinity_terms:
            self._bump(3, w.term, slot, delta * w.weight)

    def _bump(self, kind: int, term: PodAffinityTerm, slot: int, by: int) -> None:
        self._tick += 1
        stamps = self._stamps[kind]
        stamps[term] = self._tick
        table = self._tables[kind]
        per_slot = table.get(term)
        if per_slot is None:
            per_slot = table[term] = {}
            narrowing = self._narrowing(kind, term)
            layout, flipped = self._reads_change(kind, term, 1)
            if term._selector is not None:
                self._join(kind, term)
            self._terms_changed(kind, narrowing, layout, flipped)
        n = per_slot.get(slot, 0) + by
        if n:
            per_slot[slot] = n
        else:
            per_slot.pop(slot, None)
        domains = self._domains[kind]
        if domains:
            _domain_add(domains, term, slot, by)
        family = self._family_of[kind].get(term)
        if family is not None:
            stamps[family.term] = self._tick
            exclusion = self._exclusions[kind].get(term)
            if exclusion is not None:
                stamps[exclusion] = self._tick
                if domains:
                    _domain_add(domains, exclusion, slot, -by)
            if domains:
                _domain_add(domains, family.term, slot, by)
            total = family.per_slot.get(slot, 0) + by
            if total:
                family.per_slot[slot] = total
            else:
                family.per_slot.pop(slot, None)
        if not per_slot:
            del table[term]
            del stamps[term]
            domains.pop(term, None)
            layout, flipped = self._reads_change(kind, term, -1)
            if term._selector is not None:
                self._leave(kind, term)
            self._terms_changed(kind, self._narrowing(kind, term), layout, flipped)

    def _join(self, kind: int, term: PodAffinityTerm) -> None:
        """A term with a selector is carried by a placed pod again: file it, or its family."""
        split = _not_in_split(term)
        if split is None:
            self._triggers[kind].add(term, _trigger((term._selector,)), _term_namespaces(term))
            return
        key, req, rest = split
        family = self._families[kind].get(key)
        if family is None:
            stand_in = PodAffinityTerm(term.topology_key, term.namespaces, Selector(rest), term._ns_selector, term._names)
            family = self._families[kind][key] = _Family(stand_in, req.key, rest)
            self._stand_ins[kind][stand_in] = family
            self._triggers[kind].add(family, _trigger((stand_in._selector,)), _term_namespaces(stand_in))
        for value in req.values:
            family.by_value.setdefault(value, set()).add(term)
        self._family_of[kind][term] = family

    def _leave(self, kind: int, term: PodAffinityTerm) -> None:
        """No placed pod carries the term any more: drop its filing (and its family when it was the last)."""
        family = self._family_of[kind].pop(term, None)
        if family is None:
            self._triggers[kind].discard(term, _trigger((term._selector,)), _term_namespaces(term))
            return
        exclusion = self._exclusions[kind].pop(term, None)
        if exclusion is not None:
            del self._stamps[kind][exclusion]
            del self._excluded[kind][exclusion]
            self._domains[kind].pop(exclusion, None)
        split = _not_in_split(term)
        assert split is not None
        key, req, _ = split
        for value in req.values:
            members = family.by_value[value]
            members.discard(term)
            if not members:
                del family.by_value[value]
        if not family.by_value:
            del self._families[kind][key]
            del self._stamps[kind][family.term]
            del self._stand_ins[kind][family.term]
            self._domains[kind].pop(family.term, None)
            self._triggers[kind].discard(family, _trigger((family.term._selector,)), _term_namespaces(family.term))

    def clear(self) -> None:
        for table in self._tables:
            table.clear()
        for triggers in self._triggers:
            triggers.clear()
        for stamps in self._stamps:
            stamps.clear()
        for kind in range(len(TERM_KINDS)):
            self._families[kind].clear()
            self._family_of[kind].clear()
            self._exclusions[kind].clear()
            self._excluded[kind].clear()
            self._stand_ins[kind].clear()
            self._domains[kind].clear()
            self._reads[kind].clear()
            self._shape[kind] += 1
            self._matched[kind].clear()
            self._holding[kind].clear()
        self._memo.clear()


def _domain_add(domains: dict[PodAffinityTerm, tuple[LabelCodes, IntArray]], term: PodAffinityTerm, slot: int,
                by: int) -> None:
    """``by`` more for ``term`` on the node in ``slot``: into its domain's sum, when the sums are kept."""
    hit = domains.get(term)
    if hit is not None:
        hit[1][hit[0].filled[slot]] += by


class LabelCodeCache:
    """:class:`LabelCodes` per topology key, dropped when a node joins, leaves or changes labels."""

    def __init__(self) -> None:
        self._codes: dict[str, LabelCodes] = {}

    def get(self, key: str, labels: Callable[[], Iterable[Mapping[str, str]]]) -> LabelCodes:
        codes = self._codes.get(key)
        if codes is None:
            codes = self._codes[key] = build_label_codes(key, labels())
        return codes

    def clear(self) -> None:
        self._codes.clear()
