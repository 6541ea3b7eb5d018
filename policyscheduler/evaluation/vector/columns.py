"""Node tables as columns (struct of arrays), kept across pods and updated from the change journal.

:class:`Tables` belongs to one backend and follows one snapshot. Columns are built lazily -- only the
fields the policy set reads -- and each is refreshed row by row when nodes change (when it is next
read, and only if a field it reads changed there): the per-pod Python work is O(changed nodes), never
O(cluster). Where the snapshot has no change journal (``generation`` / ``changed_nodes_since``), changed
slots are found by record identity, chunk-wise (list comparison runs in C), which still touches no
column of an unchanged node.

* Scalar fields and map entries (``node.labels["zone"]``, ``node.allocatable["cpu"]``) are one column
  per key: strings as int32 codes of a shared :class:`Interner` (so columns compare by code), ints as
  int64, quantities as exact fixed-point int64 over a per-column denominator (rows that cannot be
  represented are flagged and evaluated by the reference).
* List fields (``node.taints``, ``node.pods``, ``node.used_ports``) are :class:`ElementTable` arenas:
  every slot's items sit contiguously at ``start[slot]`` (``count[slot]`` of them); a changed slot's
  items are appended and the arena is compacted when half of it is garbage. Small record types (taints,
  host ports) are interned by value so that a loop body is computed once per distinct taint.
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from policyscheduler.evaluation.arrays import amax
from policyscheduler.evaluation.vector.values import Arr, Col, from_python

_CHUNK = 64
_FEW = 8

Getter = Callable[[Any], Any]


class Interner:
    """Strings <-> int32 codes, shared by every column of a backend (code 0 is "")."""

    def __init__(self) -> None:
        self._codes: dict[str, int] = {"": 0}
        self._strings: list[str] = [""]

    def code(self, s: str) -> int:
        c = self._codes.get(s)
        if c is None:
            c = self._codes[s] = len(self._strings)
            self._strings.append(s)
        return c

    def lookup(self, s: str) -> int:
        """The code of a known string, -1 otherwise (no column holds -1)."""
        return self._codes.get(s, -1)

    def codes(self, values: Sequence[str]) -> Arr:
        get, code = self._codes.get, self.code
        return np.fromiter(((c if (c := get(s)) is not None else code(s)) for s in values),
                           dtype=np.int32, count=len(values))

    def codes_if_known(self, values: Sequence[str]) -> Arr:
        return np.array([self._codes.get(s, -1) for s in values], dtype=np.int32)

    def strings(self, codes: Any) -> list[str]:
        """The strings of ``codes`` (an integer array or a sequence of ints)."""
        if isinstance(codes, np.ndarray) and codes.dtype.kind not in "iu":
            raise TypeError(f"string codes are integers, not {codes.dtype}")
        s = self._strings
        return [s[c] for c in (codes.tolist() if isinstance(codes, np.ndarray) else codes)]

    def string(self, code: int) -> str:
        return self._strings[code]


def _getter(key: tuple[Any, ...]) -> Getter:
    """The Python read of one column key from a record (the reference's own field semantics)."""
    op, field = key[0], key[1]
    if op == "f":
        return lambda r: getattr(r, field)
    if op == "get":
        k, zero = key[2], key[4]
        return lambda r: getattr(r, field).get(k, zero)
    if op == "has":
        k = key[2]
        return lambda r: k in getattr(r, field)
    if op == "len":
        return lambda r: len(getattr(r, field))
    raise ValueError(key)


def key_kind(key: tuple[Any, ...]) -> str:
    op = key[0]
    if op == "has":
        return "bool"
    if op == "len":
        return "int"
    return str(key[3] if op == "get" else key[2])


def column_key(op: str, field: str, kind: str = "", map_key: str = "", zero: Any = None) -> tuple[Any, ...]:
    """The cache key of a column: ``("f", field, kind)``, ``("get", field, key, kind, zero)``,
    ``("has", field, key)`` or ``("len", field)``."""
    if op == "f":
        return ("f", field, kind)
    if op == "get":
        if type(zero) is Fraction and zero.denominator == 1:
            # an integral quantity default as the int it equals: the column holds the same values (an int
            # and a Fraction of one value are the same quantity to from_python / _set_few), and hashing
            # the key no longer runs Fraction.__hash__ in Python on every read
            zero = zero.numerator
        return ("get", field, map_key, kind, zero)
    if op == "has":
        return ("has", field, map_key)
    return ("len", field)


class _Column:
    """A built column over table rows, with a rebuild of single rows."""

    def __init__(self, key: tuple[Any, ...], objects: Sequence[Any], interner: Interner) -> None:
        self.key = key
        self.kind = key_kind(key)
        self.get = _getter(key)
        self.interner = interner
        col = from_python([self.get(o) for o in objects], self.kind, interner)
        self.data, self.err, self.den, self.bound = col.data, col.err, col.den, col.bound

    def value(self) -> Col:
        return Col(self.kind, self.data, self.err, self.den, self.bound)

    def at(self, rows: Arr | None) -> Col:
        """The column on the table rows ``rows`` (None: every row, in order): :meth:`value` then
        :meth:`Col.take <.values.Col.take>` in one step (a rule reads a few dozen columns per pod)."""
        if rows is None:
            return Col(self.kind, self.data, self.err, self.den, self.bound)
        err, den = self.err, self.den
        return Col(self.kind, self.data.take(rows), None if err is None else err.take(rows),
                   den.take(rows) if isinstance(den, np.ndarray) else den, self.bound)

    def set_rows(self, rows: Sequence[int], objects: Sequence[Any]) -> bool:
        """Refresh ``rows``; False when the column must be rebuilt (a new quantity denominator)."""
        vals = [self.get(objects[i]) for i in rows]
        if len(vals) <= _FEW and self._set_few(rows, vals):
            return True
        col = from_python(vals, self.kind, self.interner)
        if self.kind == "q" and col.den != self.den:
            if col.err is not None or self.den % col.den:
                return False
            factor = self.den // col.den
            if col.data.size and float(amax(np.abs(col.data))) * factor >= 2.0**62:
                return False
            col.data = col.data * factor
        ix = np.fromiter(rows, dtype=np.int64, count=len(rows))
        self.data[ix] = col.data
        if self.bound is not None and col.data.size:
            self.bound = max(self.bound, float(amax(np.abs(col.data))))
        if col.err is not None or self.err is not None:
            if self.err is None:
                self.err = np.zeros(self.data.size, dtype=np.bool_)
            self.err[ix] = col.err if col.err is not None else False
        return True

    def _set_few(self, rows: Sequence[int], vals: list[Any]) -> bool:
        """:meth:`set_rows` for a few plain values, element by element (the per-pod case: the node the
        previous pod went to); False to take the general path (errors, a new denominator, big numbers)."""
        kind, data = self.kind, self.data
        if self.err is not None:
            return False
        out: list[Any] = []
        if kind == "q":
            den = self.den
            if not isinstance(den, int):
                return False
            for x in vals:
                if type(x) is int:
                    num = x * den
                elif type(x) is Fraction and den % x.denominator == 0:
                    num = x.numerator * (den // x.denominator)
                else:
                    return False
                if not -(2**62) < num < 2**62:
                    return False
                out.append(num)
        elif kind == "int":
            for x in vals:
                if type(x) is not int or not -(2**62) < x < 2**62:
                    return False
                out.append(x)
        elif kind == "bool":
            out = [bool(x) for x in vals]
        elif kind == "str":
            code = self.interner.code
            for x in vals:
                if type(x) is not str:
                    return False
                out.append(code(x))
        else:
            return False
        for i, x in zip(rows, out):
            data[i] = x
        if self.bound is not None and out and kind in ("int", "q"):
            self.bound = max(self.bound, float(max(abs(x) for x in out)))
        return True

    def extend(self, objects: Sequence[Any], start: int) -> None:
        """Append rows ``start:`` of ``objects`` (element arenas only grow)."""
        col = from_python([self.get(o) for o in objects[start:]], self.kind, self.interner)
        if self.kind == "q" and col.den != self.den:
            both = _Column(self.key, objects, self.interner)
            self.data, self.err, self.den, self.bound = both.data, both.err, both.den, both.bound
            return
        n0 = self.data.size
        self.data = np.concatenate([self.data, col.data])
        if self.bound is not None and col.data.size:
            self.bound = max(self.bound, float(amax(np.abs(col.data))))
        if col.err is not None or self.err is not None:
            old = self.err if self.err is not None else np.zeros(n0, dtype=np.bool_)
            new = col.err if col.err is not None else np.zeros(col.data.size, dtype=np.bool_)
            self.err = np.concatenate([old, new])


class NodeTable:
    """Columns over node slots (``snapshot.nodes``).

    A changed slot is only *noted* for each built column of a field that changed there, and the column
    reads the slot's record again when it is next asked for: in the steady state the reused results
    (:mod:`.reuse`) answer most rules, and the columns they were computed from are not read at all."""

    def __init__(self, nodes: list[Any], interner: Interner) -> None:
        self.objects = nodes
        self.interner = interner
        self.columns: dict[tuple[Any, ...], _Column] = {}
        self._dirty: dict[tuple[Any, ...], set[int]] = {}

    def _fresh(self, key: tuple[Any, ...]) -> _Column:
        """The built column ``key`` with its noted rows refreshed."""
        col = self.columns.get(key)
        if col is None:
            col = self.columns[key] = _Column(key, self.objects, self.interner)
        elif self._dirty:
            rows = self._dirty.pop(key, None)
            if rows and not col.set_rows(sorted(rows), self.objects):
                col = self.columns[key] = _Column(key, self.objects, self.interner)
        return col

    def column(self, key: tuple[Any, ...]) -> Col:
        return self._fresh(key).value()

    def gather(self, key: tuple[Any, ...], rows: Arr | None) -> Col:
        """The column ``key`` on ``rows`` (None: every row), see :meth:`_Column.at`."""
        return self._fresh(key).at(rows)

    def update(self, slots: list[int], fields: frozenset[str] | None = None) -> None:
        """Note that ``slots`` changed, for every built column (only those of ``fields`` when given: the
        record fields that changed on those slots; a column of any other field reads the same object)."""
        for key in self.columns:
            if fields is not None and key[1] not in fields:
                continue
            rows = self._dirty.get(key)
            if rows is None:
                self._dirty[key] = set(slots)
            else:
                rows.update(slots)


_DISTINCT: dict[str, Callable[[Any], Any]] = {
    "Taint": lambda t: (t.key, t.value, t.effect),
    "HostPort": lambda p: (p.host_ip, p.protocol, p.port),
}
"""Record types interned by value: every field of these is a plain value, so records with equal
fields behave identically under every expression."""


class ElementTable:
    """The items of one list field of every node, as an append-only arena (see the module docstring)."""

    def __init__(self, field: str, record: str, nodes: list[Any], interner: Interner) -> None:
        self.field = field
        self.record = record
        self.interner = interner
        self.distinct_key = _DISTINCT.get(record)
        self.columns: dict[tuple[Any, ...], _Column] = {}
        self._build(nodes)

    def _build(self, nodes: list[Any]) -> None:
        self.objects: list[Any] = []
        self.lists: list[Any] = []
        n = len(nodes)
        self.start = np.zeros(n, dtype=np.int64)
        self.count = np.zeros(n, dtype=np.int64)
        self.distinct: list[Any] = []
        self._distinct_index: dict[Any, int] = {}
        self.dcode = np.zeros(0, dtype=np.int64)
        codes: list[int] = []
        for i, node in enumerate(nodes):
            items = getattr(node, self.field)
            self.lists.append(items)
            self.start[i] = len(self.objects)
            self.count[i] = len(items)
            self.objects.extend(items)
            if self.distinct_key is not None:
                codes.extend(self._intern(x) for x in items)
        self.dcode = np.array(codes, dtype=np.int64)
        self.columns = {}

    def _intern(self, item: Any) -> int:
        assert self.distinct_key is not None
        k = self.distinct_key(item)
        c = self._distinct_index.get(k)
        if c is None:
            c = self._distinct_index[k] = len(self.distinct)
            self.distinct.append(item)
        return c

    def update(self, slots: list[int], nodes: list[Any]) -> None:
        n0 = len(self.objects)
        codes: list[int] = []
        for i in slots:
            items = getattr(nodes[i], self.field)
            old = self.lists[i]
            if items is old or (type(items) is type(old) and len(items) == len(old)
                                and all(a is b for a, b in zip(items, old))):
                self.lists[i] = items  # the same records: the arena already holds them
                continue
            self.lists[i] = items
            self.start[i] = len(self.objects)
            self.count[i] = len(items)
            self.objects.extend(items)
            if self.distinct_key is not None:
                codes.extend(self._intern(x) for x in items)
        if len(self.objects) == n0:
            return
        if len(self.objects) > 2 * int(self.count.sum()) + 1024:
            self._build(nodes)  # compaction: more garbage than live items
            return
        if codes:
            self.dcode = np.concatenate([self.dcode, np.array(codes, dtype=np.int64)])
        for col in self.columns.values():
            col.extend(self.objects, n0)

    def _fresh(self, key: tuple[Any, ...]) -> _Column:
        col = self.columns.get(key)
        if col is None:
            col = self.columns[key] = _Column(key, self.objects, self.interner)
        return col

    def column(self, key: tuple[Any, ...]) -> Col:
        return self._fresh(key).value()

    def gather(self, key: tuple[Any, ...], rows: Arr | None) -> Col:
        """The column ``key`` on the items ``rows`` (None: every item), see :meth:`_Column.at`."""
        return self._fresh(key).at(rows)


class Tables:
    """Every table of one snapshot, kept in step with it (see the module docstring)."""

    def __init__(self, interner: Interner) -> None:
        self.interner = interner
        self._snapshot: Any = None
        self._generation: int | None = None
        self._seen: list[Any] = []
        self.nodes: NodeTable = NodeTable([], interner)
        self.elements: dict[str, ElementTable] = {}
        self.epoch = 0
        """Grows whenever the tables are rebuilt from scratch (another snapshot, nodes came or went)."""
        self.changed: list[int] = []
        """The slots the last :meth:`sync` refreshed (within the same epoch)."""
        self.changed_fields: frozenset[str] | None = None
        """The record fields that differ (by identity) on the ``changed`` slots; None: unknown, take all."""
        self.slot_fields: list[frozenset[str] | None] = []
        """Per slot of ``changed``, the fields that differ on that slot (None: unknown). A pod placed on one
        node and a label change confirmed on another change different fields: rules that read resources
        must keep their rows on the second."""

    def sync(self, snapshot: Any) -> None:
        """Follow ``snapshot``'s changes (O(changed nodes)): element tables are updated, node columns
        refresh the changed slots when next read; ``changed`` / ``changed_fields`` say what changed."""
        self.changed = []
        self.changed_fields = None
        self.slot_fields = []
        nodes = snapshot.nodes
        owner = self._snapshot() if self._snapshot is not None else None
        if owner is not snapshot or len(nodes) != len(self._seen):
            self._reset(snapshot)
            return
        changed: list[int] | None
        journal = getattr(snapshot, "changed_nodes_since", None)
        generation = getattr(snapshot, "generation", None)
        if journal is not None and isinstance(generation, int) and self._generation is not None:
            if generation == self._generation:
                return
            changed = journal(self._generation)
            self._generation = generation
            if changed is None:
                self._reset(snapshot)
                return
        else:
            changed = _changed_slots(nodes, self._seen)
        if not changed:
            return
        changed = sorted(set(changed))
        self.changed = changed
        per_slot = self.slot_fields = [_changed_fields(self._seen[i], nodes[i]) for i in changed]
        fields = self.changed_fields = (None if any(f is None for f in per_slot)
                                        else frozenset().union(*per_slot))  # type: ignore[arg-type]
        for i in changed:
            self._seen[i] = nodes[i]
        self.nodes.objects = self._seen
        self.nodes.update(changed, fields)
        for table in self.elements.values():
            table.update(changed, self._seen)

    def _reset(self, snapshot: Any) -> None:
        self.epoch += 1
        try:
            self._snapshot = weakref.ref(snapshot)
        except TypeError:  # pragma: no cover -- snapshots are plain objects
            self._snapshot = lambda: snapshot
        generation = getattr(snapshot, "generation", None)
        self._generation = generation if isinstance(generation, int) else None
        self._seen = list(snapshot.nodes)
        self.nodes = NodeTable(self._seen, self.interner)
        self.elements = {}

    def element_table(self, field: str, record: str) -> ElementTable:
        table = self.elements.get(field)
        if table is None:
            table = self.elements[field] = ElementTable(field, record, self._seen, self.interner)
        return table


_FIELDS: dict[type, tuple[str, ...]] = {}


def _changed_fields(old: Any, new: Any) -> frozenset[str] | None:
    """The dataclass fields whose value object differs between the old and the new record of a node (a
    pod placed on a node changes its aggregates, never its labels or taints), or None when they are not
    two records of the same dataclass type (then everything counts as changed)."""
    kind = type(new)
    if type(old) is not kind:
        return None
    names = _FIELDS.get(kind)
    if names is None:
        if not dataclasses.is_dataclass(kind):
            return None
        names = _FIELDS[kind] = tuple(f.name for f in dataclasses.fields(kind))
    return frozenset(name for name in names if getattr(old, name) is not getattr(new, name))


def _changed_slots(nodes: list[Any], seen: list[Any]) -> list[int]:
    """Slots whose record is not the one the columns were built from (identity, compared in C)."""
    if nodes == seen:  # records compare by identity (eq=False): a C loop over pointers
        return []
    out: list[int] = []
    for a in range(0, len(nodes), _CHUNK):
        b = a + _CHUNK
        if nodes[a:b] != seen[a:b]:
            out.extend(i for i in range(a, min(b, len(nodes))) if nodes[i] is not seen[i])
    return out
