"""Indexes the store keeps up to date so the ``cluster.*`` builtins cost what kube's PreFilter costs.

* :class:`MatchCounts`: per-node counts of the pods matching a :data:`MatchKey` (a conjunction of
  (namespace set / namespace selector, label selector) clauses). Arrays are built lazily on first use in
  O(pods) and then kept exact on every pod add/remove in O(cached keys), so a Deployment's pods, which
  share their selectors, pay the walk once. An LRU bounds the memory.
* :class:`LabelCodes`: a topology key's label values on every node as categorical codes, from which
  domain counts are one ``bincount`` (an O(nodes) group-by) instead of a dict walk per pod.

Both are addressed by node *slot* (the node's position in the store's node list).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping

import numpy as np
import numpy.typing as npt

from policyscheduler.objects.records import Pod
from policyscheduler.objects.topology import LabelCodes, MatchKey, build_label_codes, match_key_matches

__all__ = ["MatchCounts", "LabelCodeCache"]

IntArray = npt.NDArray[np.int64]


class MatchCounts:
    """An LRU of per-node matching-pod counts, kept exact as pods come and go."""

    def __init__(self, ns_labels: Callable[[str], Mapping[str, str]], maxsize: int = 512) -> None:
        # OrderedDict rather than cachetools.LRUCache: the per-pod update walks every cached array, and
        # that walk must not count as a use (LRUCache refreshes an entry on every read).
        self._arrays: OrderedDict[MatchKey, IntArray] = OrderedDict()
        self._ns_labels = ns_labels
        self.maxsize = maxsize

    def __len__(self) -> int:
        return len(self._arrays)

    def get(self, key: MatchKey, slots: int, pods_by_slot: Callable[[], Iterable[tuple[int, Iterable[Pod]]]]) -> IntArray:
        """The count array of ``key`` (built on first use by walking every placed pod once)."""
        arr = self._arrays.get(key)
        if arr is not None:
            self._arrays.move_to_end(key)
            return arr
        arr = np.zeros(slots, dtype=np.int64)
        ns_labels = self._ns_labels
        for slot, pods in pods_by_slot():
            n = 0
            for pod in pods:
                if match_key_matches(key, pod, ns_labels):
                    n += 1
            arr[slot] = n
        self._arrays[key] = arr
        if len(self._arrays) > self.maxsize:
            self._arrays.popitem(last=False)
        return arr

    def pod_changed(self, slot: int, pod: Pod, delta: int) -> None:
        """A pod was placed on (``delta`` 1) or removed from (-1) the node in ``slot``."""
        ns_labels = self._ns_labels
        for key, arr in self._arrays.items():
            if match_key_matches(key, pod, ns_labels):
                arr[slot] += delta

    def node_appended(self) -> None:
        """A node with no pods joined at the end: every array grows by one zero."""
        for key in list(self._arrays):
            self._arrays[key] = np.append(self._arrays[key], np.int64(0))

    def clear(self) -> None:
        """Forget every array (node removal; they are rebuilt on demand)."""
        self._arrays.clear()

    def namespaces_changed(self) -> None:
        """Namespace labels changed: drop the arrays whose clauses use a non-empty namespace selector.

        An empty namespace selector ("every namespace": affinity terms' ``namespaceSelector: {}``, the
        policies' ``in_all_namespaces()`` selectors) matches whatever the labels are, so those arrays stay.
        """
        for key in [k for k in self._arrays
                    if any(ns_sel is not None and not ns_sel.empty for _, ns_sel, _ in k[1])]:
            del self._arrays[key]


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
