"""The equivalence cache: a rule's per-node results reused across pods that look the same to it.

A rule that never mentions ``cluster`` computes, on each node, a function of the node's record and of
the pod fields it reads -- nothing else. So when the next pod carries *equal* values in those fields
(``pod.requests``, ``pod.tolerations`` ...; the name and uid of a Deployment's replicas differ, but
rules rarely read them), the rule's verdict, raw score, ``ignored`` flag and runtime error on every
node whose record did not change since are exactly the ones already computed, and only the changed
nodes (the one the previous pod was assumed on, typically) are evaluated again. kube-scheduler once had
the same idea as its equivalence-class cache; here it is exact by construction:

* which pod fields a rule depends on is read off its AST (:func:`pod_fields`): ``pod.f`` reads ``f``;
  a method of the pod reads the fields listed in :data:`METHOD_FIELDS`; ``pod`` used any other way
  (passed to a method, compared, put in a list) makes the rule depend on *every* field (name and uid
  included, so it effectively never hits); a rule mentioning ``cluster`` or ``now`` is never cached;
* the values are compared structurally (:func:`freeze`): records by type and every field, maps in
  order, numbers with their type -- anything :func:`freeze` does not know disables the cache for that
  pod;
* node changes come from the node tables' sync (the snapshot's change journal): changed slots are
  invalidated in every entry of a rule that reads a node field that changed there (:func:`node_fields`:
  placing a pod changes a node's aggregates -- ``requested``, ``pods`` ... -- so a taint or label rule
  keeps its results); a node set change (or another snapshot) drops everything.

Entries hold one value per node slot over the whole cluster; a pod only reads them at its ``idx``
(so a filter that saw fewer nodes for one pod fills in the rest for the next one).
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, TypeGuard

import numpy as np
import numpy.typing as npt

from policyscheduler.checker.analysis import clause_expressions
from policyscheduler.checker.passes import CheckedRule
from policyscheduler.evaluation.arrays import amax, amin, constant_array, count_nonzero, filled
from policyscheduler.evaluation.decision import NodeVerdict
from policyscheduler.objects.records import Node, Pod
from policyscheduler.syntax import ast
from policyscheduler.syntax.visitor import children

__all__ = ["ALL_FIELDS", "METHOD_FIELDS", "NODE_ARG_FIELDS", "NODE_METHOD_FIELDS", "Delta", "Entry", "Memo", "Reuse",
           "constant_array", "freeze", "memo_fields", "node_fields", "pod_fields"]

ALL_FIELDS = "*"
"""A rule that depends on the whole pod record."""

METHOD_FIELDS: dict[str, tuple[str, ...]] = {
    "tolerates": ("tolerations",),
    "matches_node_affinity": ("node_selector", "has_required_node_affinity", "required_node_affinity"),
}
"""The pod fields each exposed Pod method reads (objects/records.py); an unlisted method reads them all."""

NODE_METHOD_FIELDS: dict[str, frozenset[str]] = {
    "port_conflict": frozenset({"used_ports"}),
}
"""The node fields each exposed Node method reads (objects/records.py)."""

NODE_ARG_FIELDS: dict[str, frozenset[str]] = {
    "matches": frozenset({"labels", "name"}),
    "matches_node_affinity": frozenset({"labels", "name"}),
}
"""The node fields read by the exposed methods taking a node (NodeSelectorTerm.matches,
Pod.matches_node_affinity); ``cluster`` methods are not listed (a rule reading ``cluster`` is not cached)."""

CLUSTER_NODE_FIELDS: dict[str, frozenset[str]] = {
    "scaled_image_size": frozenset({"images"}),
    # the inter-pod sums over the node's label domains: a shared sum's column reads the node's labels
    **{name: frozenset({"labels"}) for name in (
        "existing_anti_affinity_count", "preferred_affinity_weight", "preferred_anti_affinity_weight",
        "existing_required_affinity_count", "existing_preferred_affinity_weight",
        "existing_preferred_anti_affinity_weight")},
}
"""The node fields read by the node-local ``cluster`` builtins (those with a ``Cluster.column_token``):
with their token, these fields of a node decide the builtin's value there (:class:`Delta`)."""

ENTRIES_PER_RULE = 4
"""Distinct pod shapes remembered per rule (a mixed queue alternates between a few)."""

SEEN_PER_RULE = 64
"""Pod shapes remembered per rule (fingerprints only) to tell a shape that comes back from a new one: an
entry is made the second time a shape is seen (:meth:`Reuse.worth`). A stream where every pod is a new
shape would otherwise pay, for every rule and pod, an entry computed on every slot, stored and gathered
back, then evicted unused."""


class Unfreezable(Exception):
    """A value :func:`freeze` cannot compare structurally."""


_POD_FIELDS = frozenset(f.name for f in dataclasses.fields(Pod))
_NODE_FIELDS = frozenset(f.name for f in dataclasses.fields(Node))

_ATOMS = (str, int, float, bool, type(None))


def freeze(x: Any) -> Any:
    """A hashable structural image of a pod field value: equal images mean equal values for every rule.

    A Fraction (every quantity) becomes its numerator and denominator: hashing a Fraction costs a
    modular inverse, and an image is hashed for every cached rule of every pod. Exact types are looked
    up first (the values are plain dicts, lists, records), subclasses go the general way."""
    kind = type(x)
    if kind in _ATOM_TYPES:
        return (kind.__name__, x)
    if kind is dict:
        return ("D", tuple((freeze(k), freeze(v)) for k, v in x.items()))
    if kind is tuple or kind is list:
        return ("L", tuple(freeze(i) for i in x))
    if kind is Fraction:
        return ("Fraction", x.numerator, x.denominator)
    names = _RECORD_FIELDS.get(kind)
    if names is not None:
        return (kind.__qualname__, tuple(freeze(getattr(x, f)) for f in names))
    if isinstance(x, _ATOMS):
        return (type(x).__name__, x)
    if isinstance(x, Fraction):
        return ("Fraction", x.numerator, x.denominator)
    if isinstance(x, (list, tuple)):
        return ("L", tuple(freeze(i) for i in x))
    if isinstance(x, dict):
        return ("D", tuple((freeze(k), freeze(v)) for k, v in x.items()))
    if isinstance(x, (set, frozenset)):
        return ("S", frozenset(freeze(i) for i in x))
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        names = _RECORD_FIELDS[kind] = tuple(f.name for f in dataclasses.fields(x))
        return (kind.__qualname__, tuple(freeze(getattr(x, f)) for f in names))
    raise Unfreezable(type(x).__name__)


_ATOM_TYPES = frozenset(_ATOMS)
_RECORD_FIELDS: dict[type, tuple[str, ...]] = {}
"""Field names per dataclass type met by :func:`freeze` (``dataclasses.fields`` is slow per call)."""


def pod_fields(checked: CheckedRule | None) -> tuple[str, ...] | None:
    """The pod fields a rule's results depend on (``(ALL_FIELDS,)`` for the whole pod), or None when
    the rule cannot be cached (it reads ``cluster``, or its shape is not understood)."""
    return _pod_fields(checked, None)


def memo_fields(checked: CheckedRule | None, cluster_calls: frozenset[str]) -> tuple[str, ...] | None:
    """For a rule that reads ``cluster`` only through ``cluster.NAME(..., node, ...)`` with NAME in
    ``cluster_calls`` (the builtins with a whole-cluster column) and reads ``node`` only as their
    argument: the pod fields it depends on besides those calls (see :class:`Memo`); None for any other rule.

    When every such call is the same on every node, such a rule is the same on every node, and its
    value is a function of those pod fields and of the calls' values alone.
    """
    return _pod_fields(checked, cluster_calls)


def _is_cluster_call(e: ast.Expr | None, cluster_calls: frozenset[str] | None) -> TypeGuard[ast.Call]:
    """``cluster.NAME(..., node, ...)`` with NAME in ``cluster_calls`` and ``node`` itself an argument."""
    return cluster_calls is not None and isinstance(e, ast.Call) and isinstance(e.func, ast.Attr) \
        and isinstance(e.func.obj, ast.Name) and e.func.obj.id == "cluster" and e.func.name in cluster_calls \
        and any(isinstance(a, ast.Name) and a.id == "node" for a in e.args)


class _GiveUp(Exception):
    """Raised by a :func:`_walk` visitor: the rule's reads cannot be told."""


Visit = Callable[[ast.Expr, "ast.Expr | None"], "Sequence[ast.Expr] | None"]


def _walk(checked: CheckedRule | None, visit: Visit) -> set[str] | None:
    """Hand every expression of a rule's clauses, with its parent, to ``visit``, which returns the
    expressions to walk in place of the children (None: the visitor module's ``children``) or raises
    :class:`_GiveUp`. The names the rule binds (lets and loop variables), for the callers' shadowing
    checks; None when the visitor gave up. One walk for the pod and the node analyses; the clauses'
    expressions and every node's children come from the same definitions as the checker's."""
    if checked is None:
        return None
    rule = checked.rule
    names = {c.name for c in rule.clauses if isinstance(c, ast.Let)}
    stack: list[tuple[ast.Expr, ast.Expr | None]] = [(e, None) for c in rule.clauses for e in clause_expressions(c)]
    try:
        while stack:
            e, parent = stack.pop()
            if isinstance(e, (ast.Quantifier, ast.Comprehension, ast.Aggregate)):
                names.update(b.name for b in e.loop.binders)
            kids = visit(e, parent)
            if kids is None:
                kids = children(e)
            stack.extend((k, e) for k in kids)
    except _GiveUp:
        return None
    return names


def _method_of(e: ast.Expr, receiver: str) -> str | None:
    """The method's name when ``e`` is ``receiver.method(...)``, else None."""
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Attr) and isinstance(e.func.obj, ast.Name) \
            and e.func.obj.id == receiver:
        return e.func.name
    return None


def _call_args(e: ast.Call) -> tuple[ast.Expr, ...]:
    """A method call's arguments and default: walked without its receiver, which the caller accounted for."""
    return e.args if e.default is None else (*e.args, e.default)


def _pod_fields(checked: CheckedRule | None, cluster_calls: frozenset[str] | None) -> tuple[str, ...] | None:
    fields: set[str] = set()
    whole = False
    calls = 0

    def visit(e: ast.Expr, parent: ast.Expr | None) -> Sequence[ast.Expr] | None:
        nonlocal whole, calls
        if isinstance(e, ast.Name):
            if e.id in ("cluster", "now"):  # now: the decision time moves between pods (the scheduler's run)
                raise _GiveUp
            if e.id == "pod":
                if isinstance(parent, ast.Attr) and parent.obj is e and parent.name in _POD_FIELDS:
                    fields.add(parent.name)
                else:
                    whole = True
            if e.id == "node" and cluster_calls is not None and not _is_cluster_call(parent, cluster_calls):
                raise _GiveUp
            return None
        if _is_cluster_call(e, cluster_calls):
            calls += 1
            return e.args  # the receiver is the call's own business
        method = _method_of(e, "pod")
        if method is not None:
            assert isinstance(e, ast.Call)
            read = METHOD_FIELDS.get(method)
            if read is None:
                whole = True
            else:
                fields.update(read)
            return _call_args(e)
        return None

    names = _walk(checked, visit)
    if names is None:
        return None
    if names & {"pod", "cluster", "node"} if cluster_calls is not None else names & {"pod", "cluster"}:
        return None  # a binder shadowing a global: not worth reasoning about
    if cluster_calls is not None and not calls:
        return None
    if whole:
        return (ALL_FIELDS,)
    return tuple(sorted(fields))


def node_fields(checked: CheckedRule | None) -> frozenset[str] | None:
    """The node record fields a rule's results depend on, or None for "every field" (``node`` used in a
    way not understood here: bound to a name, compared, passed to an unlisted method ...)."""
    fields: set[str] = set()

    def visit(e: ast.Expr, parent: ast.Expr | None) -> Sequence[ast.Expr] | None:
        if isinstance(e, ast.Name) and e.id == "node":
            if isinstance(parent, ast.Attr) and parent.obj is e and parent.name in _NODE_FIELDS:
                fields.add(parent.name)
            elif isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attr) \
                    and parent.func.name in NODE_ARG_FIELDS and len(parent.args) == 1 and parent.args[0] is e:
                fields.update(NODE_ARG_FIELDS[parent.func.name])
            elif isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attr) \
                    and isinstance(parent.func.obj, ast.Name) and parent.func.obj.id == "cluster" \
                    and parent.func.name in CLUSTER_NODE_FIELDS:
                fields.update(CLUSTER_NODE_FIELDS[parent.func.name])
            else:
                raise _GiveUp
            return None
        method = _method_of(e, "node")
        if method is not None:
            assert isinstance(e, ast.Call)
            read = NODE_METHOD_FIELDS.get(method)
            if read is None:
                raise _GiveUp
            fields.update(read)
            return _call_args(e)
        return None

    names = _walk(checked, visit)
    if names is None or "node" in names:  # a binder shadowing the node: not worth reasoning about
        return None
    return frozenset(fields)


class Entry:
    """One rule's results for one pod shape, on every node slot (see the module docstring).

    The first query computes the rule on *every* slot (not only the nodes asked for), so that later
    queries only ever recompute the slots invalidated since (``pending``, a handful per pod) and never
    scan a validity mask. ``any_code`` / ``any_ignored`` say whether any slot was ever rejected / failed
    / ignored: while they are false a query returns constant arrays instead of gathering. ``same`` is the
    raw score every slot holds when they all hold one int64 value (a taint score where no node has a
    PreferNoSchedule taint: 0 on every node), else None: such a query is answered without a gather and
    without the driver's passes for the bounds.
    """

    __slots__ = ("any_code", "any_ignored", "codes", "complete", "ignored", "index", "pending", "raw", "same",
                 "verdicts")

    def __init__(self, n: int) -> None:
        self.complete = False
        self.pending: set[int] = set()
        self.codes = filled(n, -1, np.int32)  # filter verdicts / score error verdicts
        self.raw: npt.NDArray[Any] | None = None
        self.ignored: npt.NDArray[np.bool_] | None = None
        self.any_code = False
        self.any_ignored = False
        self.same: int | None = None
        self.verdicts: list[NodeVerdict] = []
        self.index: dict[NodeVerdict, int] = {}

    def stale(self, idx: npt.NDArray[np.int64]) -> npt.NDArray[np.int64] | None:
        """The slots to (re)compute before answering for ``idx``: every slot (``None``) the first time,
        then the pending slots that ``idx`` contains (ascending)."""
        if not self.complete:
            return None
        m = idx.size
        if not self.pending or m == 0:
            return idx[:0]
        if len(self.pending) <= 16:  # the usual case: a slot or two, tested one by one
            hits = [p for p in sorted(self.pending) if (k := int(idx.searchsorted(p))) < m and int(idx[k]) == p]
            return np.array(hits, dtype=np.int64)
        wanted = np.fromiter(sorted(self.pending), dtype=np.int64, count=len(self.pending))
        pos = np.searchsorted(idx, wanted)
        inside = pos < m
        inside[inside] = idx[pos[inside]] == wanted[inside]
        return wanted[inside]

    def _remap(self, codes: npt.NDArray[np.int32], verdicts: Any) -> npt.NDArray[np.int32]:
        if not len(verdicts):
            return codes
        table = np.empty(len(verdicts) + 1, dtype=np.int32)
        table[0] = -1
        for k, v in enumerate(verdicts):
            code = self.index.get(v)
            if code is None:
                code = self.index[v] = len(self.verdicts)
                self.verdicts.append(v)
            table[k + 1] = code
        out = table[codes.astype(np.int64) + 1]
        if not self.any_code and bool(count_nonzero(out >= 0)):
            self.any_code = True
        return out

    def _done(self, rows: npt.NDArray[np.int64] | None) -> None:
        if rows is None:
            self.complete = True
            self.pending.clear()
        else:
            self.pending.difference_update(rows.tolist())

    def put_filter(self, rows: npt.NDArray[np.int64] | None, codes: npt.NDArray[np.int32], verdicts: Any) -> None:
        """Store a filter's outcome on ``rows`` (None: every slot, in order)."""
        if rows is None:
            self.codes[:] = self._remap(codes, verdicts)
        else:
            self.codes[rows] = self._remap(codes, verdicts)
        self._done(rows)

    def put_score(self, rows: npt.NDArray[np.int64] | None, raw: npt.NDArray[Any], ignored: npt.NDArray[np.bool_],
                  errors: npt.NDArray[np.int32], verdicts: Any) -> None:
        """Store a score rule's outcome on ``rows`` (None: every slot, in order)."""
        n = self.codes.size
        if self.raw is None:
            self.raw = np.zeros(n, dtype=np.int64)
            self.ignored = np.zeros(n, dtype=np.bool_)
        if raw.dtype == object and self.raw.dtype != object:
            self.raw = self.raw.astype(object)
        assert self.ignored is not None
        at: Any = slice(None) if rows is None else rows
        self.raw[at] = raw
        self.ignored[at] = ignored
        if not self.any_ignored and bool(count_nonzero(ignored)):
            self.any_ignored = True
        self.codes[at] = self._remap(errors, verdicts)
        self._same_after(rows, raw)
        self._done(rows)

    def _same_after(self, rows: npt.NDArray[np.int64] | None, raw: npt.NDArray[Any]) -> None:
        """Keep ``same`` true to the slots after a store of ``raw`` on ``rows``: taken afresh from a store of
        every slot, kept by a store of a few slots that all hold it, dropped by anything else (until the next
        store of every slot)."""
        if self.any_code or self.any_ignored or raw.dtype != np.int64 or not raw.size:
            self.same = None
        elif rows is None:
            lo = int(amin(raw))
            self.same = lo if lo == int(amax(raw)) else None
        elif self.same is not None and not (int(amin(raw)) == self.same == int(amax(raw))):
            self.same = None

    def uniform(self) -> int | None:
        """The raw score of every slot when they all hold the same one and no slot is ignored or failed
        (see ``same``); only meaningful once the slots asked for are up to date (:meth:`stale`)."""
        return self.same

    def filter_codes(self, idx: npt.NDArray[np.int64]) -> npt.NDArray[np.int32]:
        return self.codes.take(idx) if self.any_code else constant_array(idx.size, np.int32, -1)

    def score_parts(self, idx: npt.NDArray[np.int64]) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_],
                                                              npt.NDArray[np.int32]]:
        assert self.raw is not None and self.ignored is not None
        ignored = self.ignored.take(idx) if self.any_ignored else constant_array(idx.size, np.bool_, False)
        return self.raw.take(idx), ignored, self.filter_codes(idx)

    def invalidate(self, slots: list[int]) -> None:
        """Forget the results of ``slots`` (slots whose node changed)."""
        if not self.complete:
            return
        if len(self.verdicts) > 256:  # forget verdicts no row uses any more (they only accumulate)
            self.complete = False
            self.pending.clear()
            self.any_code = False
            self.any_ignored = False
            self.verdicts.clear()
            self.index.clear()
            return
        self.pending.update(slots)


ROWS_PER_RULE = 4096
"""Remembered (pod image, node image) results per rule before the table is cleared (a bound, not an LRU)."""

_UNSAFE_NODE_FIELDS = frozenset({"pods", "images"})
"""Node fields too large to image per row (a node's pods, its image list): rules reading them are not memoised."""


class Rows:
    """Per-row results of rules that read only the pod and the node (no ``cluster``), keyed by the values
    they read: (pod fields image, node fields image) -> the row's verdict (filters) or (raw, ignored,
    verdict) (scores).

    Why: a node that changed since the previous pod (usually the one that pod went to) is re-evaluated
    by the reference closures, about 40 us per resource rule with exact fractions. Nodes of one pool look
    alike: the same allocatable, the same few pod shapes, so the same requested totals. Such a rule's
    result on a node is a function of the fields it reads, so equal images give equal results.
    """

    def __init__(self) -> None:
        self.tables: dict[int, dict[Any, Any]] = {}
        self.hits = 0
        self._images: dict[int, tuple[Any, Any]] = {}

    def node_image(self, node: Any, fields: tuple[str, ...]) -> Any:
        """The image (:func:`freeze`) of ``fields`` of a node record, each field value imaged once per object.

        A node's allocatable and labels are the same objects in every record of it, and its aggregates
        change only when its pods do, so most values were imaged before. Values are cached by identity
        with a reference kept (an id cannot be reused while the object lives); records never mutate them.
        """
        images = self._images
        if len(images) >= 4 * ROWS_PER_RULE:
            images.clear()
        out = []
        for f in fields:
            value = getattr(node, f)
            hit = images.get(id(value))
            if hit is None or hit[0] is not value:
                hit = images[id(value)] = (value, freeze(value))
            out.append(hit[1])
        return tuple(out)

    def table(self, rule: Any) -> dict[Any, Any]:
        table = self.tables.get(id(rule))
        if table is None:
            table = self.tables[id(rule)] = {}
        elif len(table) >= ROWS_PER_RULE:
            table.clear()
        return table


class Memo:
    """Score rules of :func:`memo_fields` shape whose every cluster call came out uniform: their value,
    keyed by rule and pod shape, with the calls made ((name, other arguments, value) each).

    Such a rule's value on every node is a function of the pod fields it reads and of those calls'
    values, so a later pod of the same shape whose calls still answer the same (asked again through
    ``Cluster.uniform``, which builds no column) gets the value without evaluating the rule. This is
    what a pod without inter-pod terms, on a cluster without pods with such terms, meets at every
    inter-pod affinity and image locality score: constants that cost a rule evaluation each.
    """

    def __init__(self) -> None:
        self._by_rule: dict[int, OrderedDict[Any, tuple[tuple[tuple[str, tuple[Any, ...], int], ...], int]]] = {}
        self.hits = 0
        """Rule evaluations answered from the memo (for tests and profiles)."""

    def get(self, rule: Any, key: Any) -> tuple[tuple[tuple[str, tuple[Any, ...], int], ...], int] | None:
        per_rule = self._by_rule.get(id(rule))
        return None if per_rule is None else per_rule.get(key)

    def put(self, rule: Any, key: Any, calls: tuple[tuple[str, tuple[Any, ...], int], ...], value: int) -> None:
        _lru_put(self._by_rule, rule, key, (calls, value), ENTRIES_PER_RULE)


DELTA_ENTRIES_PER_RULE = 64
"""Pod shapes remembered per rule by :class:`Delta`: a heterogeneous queue cycles through dozens of apps'
images; 13 bytes per node each (about 4 MiB for 64 shapes at 5,000 nodes)."""

Token = tuple[str, tuple[Any, ...], Any]
"""A whole-cluster builtin call as a delta row depends on it: (name, other arguments, the cluster's
:meth:`~policyscheduler.objects.cluster.Cluster.column_token` for it)."""


class Delta:
    """Score rules of :func:`memo_fields` shape whose cluster calls were not uniform but each *node-local*:
    the call's value on a node is a function of that node's record and of a cluster-wide token
    (``Cluster.column_token``: for ``scaled_image_size``, the image's size and holder count and the node
    count; for the inter-pod sums over a node's label domains, the state's shared sums of the placed pods'
    terms the pod matches, one object while they hold). Their per-node results, keyed by rule, pod shape
    and the tokens of the calls made -- a shape keeps an entry per set of tokens (the pods of one shape
    but many apps, each matching its own placed pods' terms, keep one each); a call whose token is the
    pod's own (``PER_POD``) keeps none.

    Why it is exact: such a rule's value on a node is a function of the pod fields it reads (equal: same
    key) and of its calls' values on that node; while every recorded call's token is unchanged, a call's
    value changes only on nodes whose record changed, and those slots are invalidated by
    :meth:`Reuse.sync` like any entry's (a rule passing ``node`` to ``cluster`` reads "every field", so any
    change of the node invalidates). The calls made on an unchanged node are the same calls (same pod
    fields, same values of the calls that decided which), so no unrecorded call can matter there. So a
    later pod of the same shape recomputes only the changed nodes (delta rows), not the whole row;
    a changed token (an image pulled on another node changes its holder count) drops the entry.
    """

    def __init__(self) -> None:
        self._by_rule: dict[int, OrderedDict[Any, tuple[tuple[Token, ...], Entry]]] = {}
        self._calls: dict[int, OrderedDict[Any, tuple[tuple[str, tuple[Any, ...]], ...]]] = {}
        """Per rule and pod shape, the calls (name, other arguments) its newest entry recorded: a pod's
        tokens are asked for these, and the entry is found by them (so a shape keeps an entry per set of
        tokens: the pods of many apps, each matching its own placed pods' terms, keep one each)."""
        self.hits = 0
        """Rule evaluations answered from delta rows (for tests and profiles; kept across :meth:`clear`)."""
        self._never: set[int] = set()

    def possible(self, rule: Any) -> bool:
        """False once ``rule`` made a call that is not node-local: its rows are then computed only on the
        nodes asked for (a rule's calls are the same kind from pod to pod: inter-pod affinity never has
        node-local calls, image locality always)."""
        return id(rule) not in self._never

    def never(self, rule: Any) -> None:
        self._never.add(id(rule))

    def find(self, rule: Any, key: Any,
             token: Callable[..., Any]) -> tuple[tuple[tuple[Token, ...], Entry] | None, tuple[Any, tuple[Token, ...]] | None]:
        """(the entry of ``rule`` for the pod shape ``key`` whose recorded calls have the tokens ``token``
        gives them now (``Cluster.column_token``), or None; the (shape, tokens) looked for, or None when the
        shape's calls are not known). The key of an entry is the shape with its tokens, so an entry is
        only ever found while every token it recorded is unchanged."""
        shapes = self._calls.get(id(rule))
        calls = None if shapes is None else shapes.get(key)
        if calls is None:
            return None, None
        try:
            tokens = tuple((name, argv, token(name, *argv)) for name, argv in calls)
        except Exception:  # noqa: BLE001 -- a call the cluster cannot answer now: evaluate the rule
            return None, None
        full = (key, tokens)
        per_rule = self._by_rule.get(id(rule))
        hit = None if per_rule is None else per_rule.get(full)
        if hit is not None and len(per_rule) > 1:  # type: ignore[arg-type]
            per_rule.move_to_end(full)  # type: ignore[union-attr]
        return hit, full

    def put(self, rule: Any, key: Any, tokens: tuple[Token, ...], entry: Entry) -> None:
        _lru_put(self._by_rule, rule, (key, tokens), (tokens, entry), DELTA_ENTRIES_PER_RULE)
        _lru_put(self._calls, rule, key, tuple((name, argv) for name, argv, _ in tokens), DELTA_ENTRIES_PER_RULE)

    def clear(self) -> None:
        """Forget every entry (another node set or policy set); ``hits`` keeps counting."""
        self._by_rule.clear()
        self._calls.clear()
        self._never.clear()

    def drop(self, rule: Any, key: Any, tokens: tuple[Token, ...]) -> None:
        per_rule = self._by_rule.get(id(rule))
        if per_rule is not None:
            per_rule.pop((key, tokens), None)

    def invalidate(self, changed: list[int], slot_fields: Sequence[frozenset[str] | None] | None,
                   reads: Callable[[int], frozenset[str] | None]) -> None:
        """Forget the ``changed`` slots in every entry of a rule reading a node field that changed there
        (``reads(id(rule))``: :func:`node_fields`; placing a pod does not change a node's images)."""
        for key, per_rule in self._by_rule.items():
            slots = changed
            read = reads(key)
            if slot_fields is not None and read is not None:
                slots = [i for i, f in zip(changed, slot_fields) if f is None or not read.isdisjoint(f)]
                if not slots:
                    continue
            for _, entry in per_rule.values():
                entry.invalidate(slots)


class Reuse:
    """Every entry of one backend, keyed by rule and pod shape, kept in step with the node tables."""

    def __init__(self) -> None:
        self.memo = Memo()
        self.delta = Delta()
        self.rows = Rows()
        self._row_fields: dict[int, tuple[str, ...] | None] = {}
        self._memo_fields: dict[int, tuple[str, ...] | None] = {}
        self._owner: Any = None
        self._epoch = -1
        self._n = 0
        self._fields: dict[int, tuple[str, ...] | None] = {}
        self._node_fields: dict[int, frozenset[str] | None] = {}
        self._entries: dict[int, OrderedDict[Any, Entry]] = {}
        self._seen: dict[int, OrderedDict[Any, None]] = {}

    def sync(self, policy_set: Any, epoch: int, changed: list[int], n: int,
             slot_fields: Sequence[frozenset[str] | None] | None = None) -> None:
        """Forget everything on another policy set / node set; else invalidate the ``changed`` slots in the
        entries of the rules reading a field that changed on that slot (``slot_fields``, aligned with
        ``changed``; None, or None for a slot: every rule)."""
        if self._owner is not policy_set:  # rows are keyed by values, not slots: they outlive a node set
            self.rows = Rows()
            self._row_fields = {}
        if self._owner is not policy_set or epoch != self._epoch or n != self._n:
            self._owner = policy_set
            self._epoch = epoch
            self._n = n
            self._fields = {}
            self._node_fields = {}
            self._entries = {}
            self._seen = {}
            self._memo_fields = {}
            self.memo = Memo()
            self.delta.clear()
            return
        if not changed:
            return
        self.delta.invalidate(changed, slot_fields, self._node_fields.get)
        for key, per_rule in self._entries.items():
            reads = self._node_fields.get(key)
            slots = changed
            if slot_fields is not None and reads is not None:
                slots = [i for i, f in zip(changed, slot_fields) if f is None or not reads.isdisjoint(f)]
                if not slots:
                    continue
            for entry in per_rule.values():
                entry.invalidate(slots)

    def fields(self, rule: Any) -> tuple[str, ...] | None:
        key = id(rule)
        if key not in self._fields:
            checked = getattr(rule, "checked", None)
            self._fields[key] = pod_fields(checked)
            self._node_fields[key] = node_fields(checked)
        return self._fields[key]

    def row_fields(self, rule: Any) -> tuple[str, ...] | None:
        """The node fields whose values, with the pod's fingerprint, determine ``rule``'s result on a node
        (sorted), or None when its rows are not memoised (it reads ``cluster``, a large or unknown part of
        the node, or nothing of it)."""
        key = id(rule)
        if key not in self._row_fields:
            out: tuple[str, ...] | None = None
            if self.fields(rule) is not None:  # pod fields known, no ``cluster``
                reads = self._node_fields.get(key)
                if reads and not reads & _UNSAFE_NODE_FIELDS:
                    out = tuple(sorted(reads))
            self._row_fields[key] = out
        return self._row_fields[key]

    def memo_fields(self, rule: Any, cluster_calls: frozenset[str]) -> tuple[str, ...] | None:
        """:func:`memo_fields` of ``rule`` (computed once per rule)."""
        key = id(rule)
        if key not in self._memo_fields:
            self._memo_fields[key] = memo_fields(getattr(rule, "checked", None), cluster_calls)
        return self._memo_fields[key]

    @property
    def size(self) -> int:
        """The node slots every entry covers."""
        return self._n

    def worth(self, rule: Any, fingerprint: Any, asked: int) -> bool:
        """Whether to answer through an entry: it exists, or the pod asks for at least half the nodes (a new
        entry computes every slot, which must not turn a pod pinned to one node into a whole-cluster run)
        and its shape was seen before (see :data:`SEEN_PER_RULE`)."""
        per_rule = self._entries.get(id(rule))
        if per_rule is not None and fingerprint in per_rule:
            return True
        return 2 * asked >= self._n and self.seen_before(rule, fingerprint)

    def seen_before(self, rule: Any, fingerprint: Any) -> bool:
        """Whether ``rule`` met a pod of this shape before (among its last :data:`SEEN_PER_RULE` shapes);
        remembers it either way."""
        seen = self._seen.get(id(rule))
        if seen is None:
            seen = self._seen[id(rule)] = OrderedDict()
        if fingerprint in seen:
            seen.move_to_end(fingerprint)
            return True
        seen[fingerprint] = None
        if len(seen) > SEEN_PER_RULE:
            seen.popitem(last=False)
        return False

    def entry(self, rule: Any, fingerprint: Any) -> Entry:
        per_rule = self._entries.get(id(rule))
        if per_rule is None:
            per_rule = self._entries[id(rule)] = OrderedDict()
        entry = per_rule.get(fingerprint)
        if entry is None:
            entry = per_rule[fingerprint] = Entry(self._n)
            if len(per_rule) > ENTRIES_PER_RULE:
                per_rule.popitem(last=False)
        elif len(per_rule) > 1:
            per_rule.move_to_end(fingerprint)
        return entry


def _lru_put(by_rule: dict[int, OrderedDict[Any, Any]], rule: Any, key: Any, value: Any, cap: int) -> None:
    """Store ``value`` as the newest entry of ``rule``'s LRU table in ``by_rule``, dropping the oldest past ``cap``
    (both reuse caches keep one such table per rule)."""
    per_rule = by_rule.get(id(rule))
    if per_rule is None:
        per_rule = by_rule[id(rule)] = OrderedDict()
    per_rule[key] = value
    per_rule.move_to_end(key)
    if len(per_rule) > cap:
        per_rule.popitem(last=False)
