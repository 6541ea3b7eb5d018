"""Indexes the store keeps up to date so the ``cluster.*`` builtins cost what kube's PreFilter costs.

* :class:`MatchCounts`: per-node counts of the pods matching a :data:`MatchKey` (a conjunction of
  (namespace set / namespace selector, label selector) clauses). Placed pods are grouped by what a key
  can test -- (namespace, terminating, labels): the pods of one template share it -- so building a new
  key's array matches each *group* once (O(groups), not O(pods)), and a pod change updates the arrays of
  the keys its group is known to match (O(matching keys)), never a walk over every cached key or pod.
  An LRU bounds the memory.
* :class:`TermIndex`: the inter-pod terms of the placed pods, per distinct term (kube's
  HavePodsWithAffinity / HavePodsWithRequiredAntiAffinity lists, folded): the nodes of the pods carrying
  it, with counts or summed weights, updated in O(terms of the pod) on every pod change. An incoming pod
  then matches each distinct term once instead of walking the pods that carry them.
* :class:`LabelCodes`: a topology key's label values on every node as categorical codes, from which
  domain counts are one ``bincount`` (an O(nodes) group-by) instead of a dict walk per pod.

All are addressed by node *slot* (the node's position in the store's node list); a node removal shifts
slots, so the store drops them then (they are rebuilt on demand).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from policyscheduler.objects.records import Pod, PodAffinityTerm
from policyscheduler.objects.selectors import Selector
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
    superset of the items whose selectors can match it, found in O(labels + candidates)."""

    __slots__ = ("by_pair", "everywhere")

    def __init__(self) -> None:
        self.by_pair: dict[tuple[str, str], set[Any]] = {}
        self.everywhere: set[Any] = set()

    def add(self, item: Any, pairs: list[tuple[str, str]] | None) -> None:
        if pairs is None:
            self.everywhere.add(item)
            return
        for pair in pairs:
            bucket = self.by_pair.get(pair)
            if bucket is None:
                bucket = self.by_pair[pair] = set()
            bucket.add(item)

    def discard(self, item: Any, pairs: list[tuple[str, str]] | None) -> None:
        if pairs is None:
            self.everywhere.discard(item)
            return
        for pair in pairs:
            bucket = self.by_pair.get(pair)
            if bucket is not None:
                bucket.discard(item)
                if not bucket:
                    del self.by_pair[pair]

    def candidates(self, labels: Mapping[str, str]) -> list[Any]:
        found = list(self.everywhere)
        by_pair = self.by_pair
        if by_pair:
            for pair in labels.items():
                bucket = by_pair.get(pair)
                if bucket:
                    found.extend(bucket)
        return found

    def clear(self) -> None:
        self.by_pair.clear()
        self.everywhere.clear()


def _key_trigger(key: MatchKey) -> list[tuple[str, str]] | None:
    return _trigger(sel for _, _, sel in key[1])


_DENSE_MIN = 64
"""A group on at least this many nodes also keeps its counts as a per-slot array, so a key it matches
adds it with one numpy addition instead of copying its slots (a big Deployment matched by a broad
selector); smaller groups -- most of them, in a cluster of distinct pods -- stay sparse."""


class _Group:
    """The placed pods of one signature: a representative, their count per slot, the keys they match."""

    __slots__ = ("dense", "keys", "pod", "slots")

    def __init__(self, pod: Pod) -> None:
        self.pod = pod
        self.slots: dict[int, int] = {}
        self.keys: set[MatchKey] = set()
        self.dense: IntArray | None = None  # ``slots`` as an array, once the group is big (_DENSE_MIN)


class MatchCounts:
    """An LRU of per-node matching-pod counts, kept exact as pods come and go (see the module docstring)."""

    def __init__(self, ns_labels: Callable[[str], Mapping[str, str]], maxsize: int = 512) -> None:
        # OrderedDict rather than cachetools.LRUCache: the per-pod update reads cached arrays, and that
        # must not count as a use (LRUCache refreshes an entry on every read).
        self._arrays: OrderedDict[MatchKey, IntArray] = OrderedDict()
        self._ns_labels = ns_labels
        self.maxsize = maxsize
        # Built on the first ``get`` (from the store's pods), dropped by ``clear``; while it is None no
        # array exists either, so pod changes have nothing to update.
        self._groups: dict[_Signature, _Group] | None = None
        self._members: dict[MatchKey, set[_Signature]] = {}  # key -> signatures of the groups it matches
        self._keys = _Triggers()  # cached keys by trigger pair: a new group tests only the keys it may match
        self._by_pair: dict[tuple[str, str], set[_Signature]] = {}  # label pair -> groups carrying it

    def __len__(self) -> int:
        return len(self._arrays)

    @property
    def groups(self) -> int:
        """How many pod groups (distinct signatures) are indexed (0 before the first ``get``)."""
        return len(self._groups) if self._groups is not None else 0

    def get(self, key: MatchKey, slots: int, pods_by_slot: Callable[[], Iterable[tuple[int, Iterable[Pod]]]]) -> IntArray:
        """The count array of ``key`` (built on first use by matching every pod group once)."""
        arr = self._arrays.get(key)
        if arr is not None:
            self._arrays.move_to_end(key)
            return arr
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
        pairs = _key_trigger(key)
        if pairs is None:
            candidates: Iterable[_Signature] = groups
        else:  # only the groups carrying a label pair the key requires can match it
            found: set[_Signature] = set()
            for pair in pairs:
                found.update(self._by_pair.get(pair, ()))
            candidates = found
        arr = np.zeros(slots, dtype=np.int64)
        for sig in candidates:
            group = groups[sig]
            if match_key_matches(key, group.pod, ns_labels):
                group.keys.add(key)
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
        if where:
            arr += np.rint(np.bincount(np.asarray(where, dtype=np.int64), weights=np.asarray(counts, dtype=np.float64),
                                       minlength=slots)).astype(np.int64)
        self._arrays[key] = arr
        self._members[key] = members
        self._keys.add(key, pairs)
        if len(self._arrays) > self.maxsize:
            old, _ = self._arrays.popitem(last=False)
            self._forget(old)
        return arr

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
        by_pair = self._by_pair
        for pair in sig[2]:
            found = by_pair.get(pair)
            if found is None:
                found = by_pair[pair] = set()
            found.add(sig)
        return group

    def _forget(self, key: MatchKey) -> None:
        """Drop ``key`` from the groups that match it (its array is gone)."""
        self._keys.discard(key, _key_trigger(key))
        groups = self._groups or {}
        for sig in self._members.pop(key, ()):
            group = groups.get(sig)
            if group is not None:
                group.keys.discard(key)

    def pod_changed(self, slot: int, pod: Pod, delta: int) -> None:
        """A pod was placed on (``delta`` 1) or removed from (-1) the node in ``slot``."""
        groups = self._groups
        if groups is None:
            return
        sig = _signature(pod)
        group = groups.get(sig)
        if group is None:
            if delta < 0:
                return  # not indexed (cannot happen while the store calls this for every placed pod)
            group = self._new_group(sig, pod)
            ns_labels = self._ns_labels
            for key in self._keys.candidates(pod.labels):
                if match_key_matches(key, pod, ns_labels):
                    group.keys.add(key)
                    self._members[key].add(sig)
        n = group.slots.get(slot, 0) + delta
        if n:
            group.slots[slot] = n
        else:
            del group.slots[slot]
        if group.dense is not None:
            group.dense[slot] += delta
        arrays = self._arrays
        for key in group.keys:
            arrays[key][slot] += delta
        if not group.slots:
            del groups[sig]
            for key in group.keys:
                self._members[key].discard(sig)
            by_pair = self._by_pair
            for pair in sig[2]:
                found = by_pair.get(pair)
                if found is not None:
                    found.discard(sig)
                    if not found:
                        del by_pair[pair]

    def node_appended(self) -> None:
        """A node with no pods joined at the end: every array grows by one zero."""
        for key in list(self._arrays):
            self._arrays[key] = np.append(self._arrays[key], np.int64(0))
        for group in (self._groups or {}).values():
            if group.dense is not None:
                group.dense = np.append(group.dense, np.int64(0))

    def clear(self) -> None:
        """Forget every array and group (node removal shifts slots; they are rebuilt on demand)."""
        self._arrays.clear()
        self._members.clear()
        self._keys.clear()
        self._by_pair.clear()
        self._groups = None

    def namespaces_changed(self) -> None:
        """Namespace labels changed: drop the arrays whose clauses use a non-empty namespace selector.

        An empty namespace selector ("every namespace": affinity terms' ``namespaceSelector: {}``, the
        policies' ``in_all_namespaces()`` selectors) matches whatever the labels are, so those arrays stay.
        """
        for key in [k for k in self._arrays
                    if any(ns_sel is not None and not ns_sel.empty for _, ns_sel, _ in k[1])]:
            del self._arrays[key]
            self._forget(key)


class TermIndex:
    """Per kind of term (:data:`~policyscheduler.objects.topology.TERM_KINDS`), per distinct term of the
    placed pods: slot -> how many pods there carry it (required terms) or their summed weights
    (preferred terms). Terms are keyed by identity: the parser shares one object per distinct term.
    Each kind's terms are also indexed by a label pair their selector requires, so the terms an
    incoming pod may match are found from its labels (:meth:`candidates`), not by testing every term.
    """

    def __init__(self) -> None:
        self._tables: tuple[dict[PodAffinityTerm, dict[int, int]], ...] = tuple({} for _ in TERM_KINDS)
        self._triggers: tuple[_Triggers, ...] = tuple(_Triggers() for _ in TERM_KINDS)

    def table(self, kind: int) -> TermSlots:
        """The terms of one kind with their per-slot counts or weights (read-only)."""
        return self._tables[kind]

    def candidates(self, kind: int, labels: Mapping[str, str]) -> list[tuple[PodAffinityTerm, Mapping[int, int]]]:
        """The terms of one kind whose selector may match ``labels`` (a superset; terms with a nil
        selector, which match nothing, are left out), with their per-slot counts or weights."""
        table = self._tables[kind]
        return [(t, table[t]) for t in self._triggers[kind].candidates(labels)]

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
        table = self._tables[kind]
        per_slot = table.get(term)
        if per_slot is None:
            per_slot = table[term] = {}
            if term._selector is not None:
                self._triggers[kind].add(term, _trigger((term._selector,)))
        n = per_slot.get(slot, 0) + by
        if n:
            per_slot[slot] = n
        else:
            per_slot.pop(slot, None)
            if not per_slot:
                del table[term]
                if term._selector is not None:
                    self._triggers[kind].discard(term, _trigger((term._selector,)))

    def clear(self) -> None:
        for table in self._tables:
            table.clear()
        for triggers in self._triggers:
            triggers.clear()


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
