"""The phase driver: one scheduling decision, whichever backend evaluates the rules.

Everything that is *policy semantics above a single rule* lives here, once: ``applies when`` and
``reject pod`` decided once per pod (kube-scheduler's PreFilter / PreScore *Skip* and PreFilter
rejection), filters in PolicySet order with the first failing filter as a node's verdict, the feasible
set handed to the ``cluster`` context before scoring, ignored nodes, the raw-value checks of each
normalisation mode, normalisation, weights, totals and the tie-break. A :class:`Backend` only answers
"what does this one rule say on these nodes?" (:meth:`PodRun.filter`, :meth:`PodRun.score`), so the
per-node reference backend and the vectorised backend cannot drift apart in anything but that answer.

Node sets travel as numpy arrays of *slot indexes* into ``snapshot.nodes``; verdicts travel as small
code arrays into a table of distinct :class:`NodeVerdict` values (a rule rejecting 4,000 nodes for the
same reason yields one verdict and 4,000 int32 codes). The :class:`Decision` keeps these compact arrays
and expands its per-node dicts only when someone reads them.

Runtime errors never crash a decision. In a *filter* the node gets an error verdict naming the rule and
becomes infeasible (a filter that cannot decide must not let a pod through); a failing filter ``applies
when`` fails every node that reaches the rule. Each such failure is also recorded in
``Decision.filter_errors`` (rule, node, ``file:line:col``, message), reported like score failures. In a *score* rule a failure (or a raw value the rule's
normalisation cannot take) gives that node 0 for that rule, leaves it out of that rule's normalisation
and keeps it feasible -- a preference never acts as a filter -- and the failure is recorded in
``Decision.score_errors`` with the rule, the node and ``file:line:col`` (see grammar/LANGUAGE.md); a
failing score ``applies when`` gives 0 on every node, recorded once with no node.
"""

from __future__ import annotations

import itertools
import random
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from policyscheduler.compiler.closures import POD_STEP_BUDGET, set_allowance
from policyscheduler.diagnostics import PolicyRuntimeError
from policyscheduler.evaluation.arrays import count_nonzero, every_slot, filled, positions
from policyscheduler.evaluation.decision import (
    FEASIBLE,
    Decision,
    FilterError,
    LazyList,
    LazyMap,
    NodeVerdict,
    RuleScore,
    ScoreError,
)
from policyscheduler.evaluation.message import failed_scheduling_message, pod_rejected_message
from policyscheduler.evaluation.normalize import normalize_array, normalize_bounded, raw_error
from policyscheduler.kobjects import pod_key  # re-exported: evaluation.pod_key
from policyscheduler.syntax import ast

if TYPE_CHECKING:
    from policyscheduler.compiler import FilterRule, PolicySet, ScoreRule
    from policyscheduler.objects import Cluster, Node, Pod
    from policyscheduler.state import ClusterSnapshot

__all__ = [
    "Backend",
    "Driver",
    "FilterOutcome",
    "PodRun",
    "ScoreOutcome",
    "error_verdict",
    "pod_key",
    "runtime_verdict",
]

Indexes = npt.NDArray[np.int64]
"""Slot indexes into ``snapshot.nodes``, ascending."""
Codes = npt.NDArray[np.int32]
"""Per node of an :data:`Indexes` array: -1 for "no verdict", k for ``verdicts[k]``."""


class FilterOutcome(NamedTuple):
    """One filter on a set of nodes: ``codes[j]`` is -1 when node ``idx[j]`` passes, else the index
    of its verdict (rejection reasons, or a runtime error) in ``verdicts``."""

    codes: Codes
    verdicts: Sequence[NodeVerdict]


class ScoreOutcome(NamedTuple):
    """One score rule's ``value`` on a set of nodes (its ``applies when`` already held).

    ``raw`` holds Python-int-exact values (int64, or object dtype for integers beyond int64);
    entries where ``ignored`` is true or ``errors >= 0`` are meaningless. ``errors[j] = k`` names
    ``verdicts[k]``, the runtime error of node ``idx[j]``.
    """

    raw: npt.NDArray[Any]
    ignored: npt.NDArray[np.bool_]
    errors: Codes
    verdicts: Sequence[NodeVerdict]
    bounds: tuple[int, int] | None = None
    """Optional: (min, max) of ``raw`` when ``raw`` is int64, no node is ignored and none failed -- a
    backend that knows it (a value the same on every node) spares the driver three passes."""


class PodRun(Protocol):
    """A backend's state for one pod (pod-level values computed once, reused for every rule)."""

    def filter(self, rule: FilterRule, idx: Indexes) -> FilterOutcome:
        """The node-level clauses of ``rule`` on the nodes ``idx``."""
        ...

    def score(self, rule: ScoreRule, idx: Indexes) -> ScoreOutcome:
        """``ignore node when`` and ``value`` of ``rule`` on the nodes ``idx``."""
        ...


class Backend(Protocol):
    """How rules are evaluated on nodes: per node (reference) or per cluster (vectorised)."""

    name: str

    def start(self, policy_set: PolicySet, snapshot: ClusterSnapshot, pod: Pod, cluster: Cluster) -> PodRun:
        """Prepare the evaluation of one pod over ``snapshot.nodes``."""
        ...


def error_verdict(rule: str, message: str, detail: str | None = None) -> NodeVerdict:
    """The verdict of a node on which ``rule`` failed at run time."""
    return NodeVerdict(
        rule=rule,
        reasons=(f"policy error in rule {rule}: {message}",),
        error=detail if detail is not None else message,
    )


def runtime_verdict(rule: str, err: PolicyRuntimeError) -> NodeVerdict:
    """:func:`error_verdict` for a located runtime error (``file:line:col: message`` as the detail)."""
    span = getattr(err, "span", None)
    message = str(getattr(err, "message", err))
    detail = message if span is None else f"{span.file}:{span.line}:{span.col}: {message}"
    return error_verdict(rule, message, detail)


_NOT_APPLIED = RuleScore(0, 0, 0, False)
"""A score rule's result on every node when its ``applies when`` is false (shared: immutable)."""
_IGNORED = RuleScore(0, 0, 0, True)
"""A score rule's result on a node its ``ignore node when`` clause excludes."""
_FAILED = RuleScore(0, 0, 0, False)
"""A score rule's result on a node where it failed (the failure is in ``Decision.score_errors``)."""

_Filters = list[tuple["FilterRule", int, NodeVerdict | None]]
"""The filters that apply to the pod, each with its step allowance per node (see :func:`_allowance`) and
the verdict of every node reaching it when its per-pod part (``applies when`` / ``reject pod``) failed at
run time, else None."""

_MIN = np.minimum.reduce
_MAX = np.maximum.reduce
"""``raw.min()`` / ``raw.max()`` without numpy's Python-level wrappers (twelve calls per pod)."""


class _Scored(NamedTuple):
    """An applying score rule's results over the feasible nodes: ``failed[j]`` is the error message of
    node j (None when the rule worked there)."""

    rule: ScoreRule
    raw: npt.NDArray[Any]
    ignored: npt.NDArray[np.bool_]
    failed: list[str | None] | None
    any_ignored: bool
    bounds: tuple[int, int] | None
    """(min, max) of ``raw`` when every node takes part and the values suit the normalisation, else None;
    the min may be 0 instead for the modes that do not read it (see :func:`_raw_bounds`)."""


class _NodeNames:
    """``[n.name for n in snapshot.nodes]``, rebuilt only when the node set changes.

    At 5,000 nodes the list costs more to build than the vectorised backend spends on a pod, and it
    changes only when nodes are added or removed (never on assume), which the state's change journal
    reports as ``changed_nodes_since(...) is None``.
    """

    def __init__(self) -> None:
        self._owner: object = None
        self._generation: int = -1
        self._names: list[str] = []

    def get(self, snapshot: ClusterSnapshot) -> list[str]:
        changed = getattr(snapshot, "changed_nodes_since", None)
        generation = getattr(snapshot, "generation", None)
        count = len(snapshot.nodes)
        if (self._owner is snapshot and changed is not None and isinstance(generation, int)
                and changed(self._generation) is not None and len(self._names) == count):
            self._generation = generation
            return self._names
        self._owner = snapshot
        self._generation = generation if isinstance(generation, int) else -1
        self._names = [n.name for n in snapshot.nodes]
        return self._names


class _Plan(NamedTuple):
    """What the driver needs of each rule of a PolicySet, read off once per PolicySet (see :class:`_Clauses`)."""

    filters: tuple[tuple[FilterRule, bool, bool, int], ...]
    """Per filter in order: the rule, whether it has ``applies when``, whether it has ``reject pod``, and
    twice its static cost bound (its per-pod step allowance per node, see :func:`_allowance`)."""
    scores: tuple[tuple[ScoreRule, bool, int], ...]
    """Per score rule in order: the rule, whether it has ``applies when``, twice its static cost bound."""


class _Clauses:
    """Which rules of a PolicySet have an ``applies when`` / ``reject pod`` clause, read off their checked
    form once per PolicySet: a rule without one applies to every pod and rejects none, so the driver
    skips the closure call (a copy of the env and a budget reset, a dozen times per pod). A few policy
    sets are remembered (a scheduler with several profiles alternates between them)."""

    def __init__(self) -> None:
        self._known: dict[int, tuple[weakref.ref[PolicySet], _Plan]] = {}

    def of(self, policy_set: PolicySet) -> _Plan:
        """The :class:`_Plan` of ``policy_set``; rules of unknown shape count as having both clauses."""
        hit = self._known.get(id(policy_set))
        if hit is not None and hit[0]() is policy_set:
            return hit[1]
        plan = _Plan(tuple((r, *_has_clauses(r), _per_node(r)) for r in policy_set.filters),
                     tuple((r, _has_clauses(r)[0], _per_node(r)) for r in policy_set.scores))
        try:
            ref = weakref.ref(policy_set)
        except TypeError:  # not weak-referenceable: nothing to key a cache entry safely by
            return plan
        if len(self._known) >= 8:
            self._known = {k: v for k, v in self._known.items() if v[0]() is not None}
            if len(self._known) >= 8:
                self._known.clear()
        self._known[id(policy_set)] = (ref, plan)
        return plan


def _has_clauses(rule: FilterRule | ScoreRule) -> tuple[bool, bool]:
    """(has ``applies when``, has ``reject pod``) of ``rule``; (True, True) when its checked form is unknown."""
    checked = getattr(rule, "checked", None)
    clauses = getattr(getattr(checked, "rule", None), "clauses", None)
    if clauses is None:
        return True, True
    return any(isinstance(c, ast.Applies) for c in clauses), any(isinstance(c, ast.RejectPod) for c in clauses)


def _per_node(rule: FilterRule | ScoreRule) -> int:
    """Twice the rule's static cost bound: its step allowance per node (see :func:`_allowance`)."""
    return 2 * int(getattr(rule, "cost", 0))


class Driver:
    """Decides where one pod goes with a :class:`Backend`; an :class:`~policyscheduler.evaluation.Evaluator`."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._names = _NodeNames()
        self._clauses = _Clauses()

    @property
    def name(self) -> str:
        """The backend's name (``reference`` or ``vector``)."""
        return self.backend.name

    def filter_nodes(
        self, policy_set: PolicySet, snapshot: ClusterSnapshot, pod: dict[str, Any], slots: Sequence[int]
    ) -> list[NodeVerdict | None]:
        """The filter verdict of ``pod`` on each node of ``slots`` (indexes into ``snapshot.nodes``; None
        = passes every filter), exactly as :meth:`evaluate` would give it, without scoring.

        This is the what-if question of preemption and of nominated pods, asked of the state as it is
        now (see :mod:`policyscheduler.state.whatif` for views with pods taken away or added): only the
        named nodes are evaluated, so a question costs one node's filters, not the cluster's."""
        if not slots:
            return []
        pod_rec = snapshot.pod_record(pod)
        cluster = snapshot.context(pod_rec)
        pod_env = {"pod": pod_rec, "cluster": cluster}
        filters, rejection = _pre_filter(self._clauses.of(policy_set).filters, pod_env)
        if rejection is not None:
            return [rejection] * len(slots)
        order = sorted(set(slots))
        idx: Indexes = np.asarray(order, dtype=np.int64)
        codes: Codes = filled(len(snapshot.nodes), -1, np.int32)
        table: list[NodeVerdict] = []
        run = self.backend.start(policy_set, snapshot, pod_rec, cluster)
        active = idx
        for rule, _, failed in filters:
            if active.size == 0:
                break
            if failed is not None:
                codes[active] = _intern(table, failed)
                break
            outcome = run.filter(rule, active)
            active = _record(codes, table, active, outcome.codes, outcome.verdicts)
        return [table[c] if c >= 0 else None for c in codes[np.asarray(slots, dtype=np.int64)].tolist()]

    def evaluate(
        self, policy_set: PolicySet, snapshot: ClusterSnapshot, pod: dict[str, Any], *, rng: random.Random,
        rejected: Mapping[int, NodeVerdict] | None = None,
    ) -> Decision:
        """Filter and score every node of ``snapshot`` for ``pod``; consumes ``rng`` only to break a tie.

        ``rejected``: nodes (slot -> verdict) already known not to fit, e.g. because a nominated pod of
        higher priority holds their room (kube's filters "with nominated pods"); they get that verdict
        and take no further part, as if a filter before all others had rejected them."""
        key = pod_key(pod)
        digest = policy_set.digest
        nodes: Sequence[Node] = snapshot.nodes
        n = len(nodes)
        if n == 0:
            return Decision(key, None, {}, [], {}, {}, [], None, failed_scheduling_message(0, ()), digest)
        names = self._names.get(snapshot)
        pod_rec = snapshot.pod_record(pod)
        cluster = snapshot.context(pod_rec)
        pod_env = {"pod": pod_rec, "cluster": cluster}

        # 1. PreFilter: applies and pod-level rejections once per pod, before any node.
        plan = self._clauses.of(policy_set)
        filters, rejection = _pre_filter(plan.filters, pod_env)
        if rejection is not None:
            message = pod_rejected_message(n, rejection.reasons)
            return Decision(key, None, LazyMap(lambda: dict.fromkeys(names, rejection)), [], {}, {}, [], None,
                            message, digest)

        # 2. Filter: the first failing rule is a node's verdict; nodes leave ``active`` as they fail.
        run = self.backend.start(policy_set, snapshot, pod_rec, cluster)
        codes: Codes = filled(n, -1, np.int32)
        table: list[NodeVerdict] = []
        active: Indexes = every_slot(n)
        every_node: list[FilterError] = []  # filters whose pod-level clauses failed: every node reaching them
        if rejected:
            held = np.array(sorted(i for i in rejected if 0 <= i < n), dtype=np.int64)
            for i in held.tolist():
                codes[i] = _intern(table, rejected[i])
            active = np.setdiff1d(active, held, assume_unique=True)
        for rule, per_node, failed in filters:
            if active.size == 0:
                break
            if failed is not None:
                codes[active] = _intern(table, failed)
                active = active[:0]
                if failed.error is not None:
                    every_node.append(_filter_error(rule.name, None, failed, rule))
                break
            set_allowance(max(POD_STEP_BUDGET, per_node * int(active.size)))
            try:
                outcome = run.filter(rule, active)
            finally:
                set_allowance(None)
            active = _record(codes, table, active, outcome.codes, outcome.verdicts)
        filter_errors = _filter_errors(names, codes, table, every_node, policy_set.filters)
        if active.size == 0:
            return _unschedulable(key, names, codes, table, digest, filter_errors)
        _set_feasible(cluster, active, codes, names)  # kube's PreScore sees the filtered nodes

        # 3. Score: raw values rule by rule. A failure (or a value the mode cannot take) costs the node
        #    this rule's points and is recorded; it never makes the node infeasible.
        scored: list[_Scored | ScoreRule] = []
        score_errors: list[ScoreError] = []
        for srule, has_applies, per_node in plan.scores:
            try:
                applies = srule.applies(pod_env) if has_applies else True
            except PolicyRuntimeError as err:
                score_errors.append(ScoreError(srule.name, None, _where(err.span), err.message))
                scored.append(srule)
                continue
            if not applies:
                scored.append(srule)
                continue
            set_allowance(max(POD_STEP_BUDGET, per_node * int(active.size)))
            try:
                out = run.score(srule, active)
            finally:
                set_allowance(None)
            raw, ignored = out.raw, out.ignored
            if out.bounds is not None and _bounds_ok(srule.normalize, *out.bounds):
                scored.append(_Scored(srule, raw, ignored, None, False, out.bounds))
                continue
            any_ignored = bool(count_nonzero(ignored))
            any_failed = bool(out.verdicts) and bool(count_nonzero(out.errors >= 0))
            if not (any_ignored or any_failed) and raw.dtype == np.int64 and raw.size:
                # the common case: every feasible node takes part; its bounds serve the checks and the
                # normalisation alike
                bounds = _raw_bounds(srule.normalize, raw)
                if bounds is not None:
                    scored.append(_Scored(srule, raw, ignored, None, False, bounds))
                    continue
            usable = None if not (any_ignored or any_failed) else (out.errors < 0) & ~ignored
            bad = _mode_bad(srule.normalize, raw, usable)
            failures: list[str | None] | None = None
            if any_failed or bad is not None:
                errors, verdicts = out.errors.copy(), list(out.verdicts)
                if bad is not None:
                    _mode_errors(srule, raw, bad, errors, verdicts)
                failures = [None] * int(active.size)
                for j in positions(errors >= 0).tolist():
                    error = _score_error(srule, names[int(active[j])], verdicts[int(errors[j])])
                    score_errors.append(error)
                    failures[j] = error.message
            scored.append(_Scored(srule, raw, ignored, failures, any_ignored, None))

        # 4. Normalise over the kept (feasible, not ignored, not failed) nodes; weight; sum; pick among the best.
        #    A rule whose normalised score is the same on every node adds one number (``offset``).
        kept = active
        totals: npt.NDArray[np.int64] | None = None
        offset = 0
        per_rule: list[tuple[str, _Detail | None]] = []
        for item in scored:
            if not isinstance(item, _Scored):
                per_rule.append((item.name, None))
                continue
            norm: npt.NDArray[np.int64] | int
            if item.bounds is not None:  # every kept node takes part, raw values checked
                norm = normalize_bounded(item.rule.normalize, item.raw, *item.bounds)
            elif item.failed is None and not item.any_ignored:
                norm = normalize_array(item.rule.normalize, item.raw)
            else:
                norm = np.zeros(kept.size, dtype=np.int64)
                take = ~item.ignored
                if item.failed is not None:
                    take &= np.array([f is None for f in item.failed], dtype=np.bool_)
                if count_nonzero(take):
                    norm[take] = normalize_array(item.rule.normalize, item.raw[take])
            weight = item.rule.weight
            if isinstance(norm, int):
                offset += norm * weight
            elif weight:
                if totals is None:
                    totals = norm * weight  # a new array: never an alias of ``norm``
                elif weight == 1:
                    totals += norm
                else:
                    totals += norm * weight
            per_rule.append((item.rule.name, (item.raw, norm, item.ignored, weight, item.failed)))
        if totals is None:
            totals = filled(kept.size, offset, np.int64)
        elif offset:
            totals += offset
        best = int(_MAX(totals))
        top_idx = kept[totals == best]
        # rng.choice(top) without building ``top`` (hundreds of names when empty nodes tie): choice(seq) is
        # seq[randbelow(len(seq))], as is randrange(len), so the rng is consumed exactly as the contract says
        chosen = names[int(top_idx[rng.randrange(int(top_idx.size))])]
        top = LazyList(lambda: [names[i] for i in top_idx.tolist()], int(top_idx.size))
        kept_names = LazyList(lambda: [names[i] for i in kept.tolist()], int(kept.size))
        return Decision(
            key, chosen,
            LazyMap(lambda: _verdict_map(names, codes, table)),
            kept_names,
            LazyMap(lambda: _score_maps(per_rule, kept_names)),
            LazyMap(lambda: dict(zip(kept_names, totals.tolist()))),
            top, best, None, digest, tuple(score_errors), filter_errors,
        )


_Detail = tuple[npt.NDArray[Any], "npt.NDArray[np.int64] | int", npt.NDArray[np.bool_], int, "list[str | None] | None"]
"""A score rule's raw values, normalised values (one int: the same on every node), ignored mask, weight and
per-node failure messages."""


def _allowance(rule: FilterRule | ScoreRule, nodes: int) -> int:
    """The steps ``rule`` may take over ``nodes`` nodes for one pod (see closures.POD_STEP_BUDGET): never less
    than twice its static bound per node, so a rule within its bound never reaches it. (The driver's loops
    compute the same from the :class:`_Plan`'s ``per_node``.)"""
    return max(POD_STEP_BUDGET, _per_node(rule) * nodes)


def _where(span: Any) -> str | None:
    return None if span is None else f"{span.file}:{span.line}:{span.col}"


def _value_location(rule: ScoreRule) -> str:
    """``file:line:col`` of the rule's ``value`` expression (where a raw value comes from)."""
    checked = rule.checked
    if checked is not None and checked.rule.clauses:
        last = checked.rule.clauses[-1]
        value = getattr(last, "value", None)
        span = getattr(value, "span", None) or last.span
        return f"{span.file}:{span.line}:{span.col}"
    return f"{rule.span.file}:{rule.span.line}:{rule.span.col}"


def _located(verdict: NodeVerdict) -> tuple[str | None, str]:
    """(``file:line:col`` or None, message) of a backend's error verdict (see :func:`error_verdict`)."""
    prefix = f"policy error in rule {verdict.rule}: "
    first = verdict.reasons[0] if verdict.reasons else ""
    message = first[len(prefix):] if first.startswith(prefix) else (verdict.error or first)
    detail = verdict.error or message
    location: str | None = None
    if detail.endswith(": " + message) and len(detail) > len(message) + 2:
        location = detail[: -len(message) - 2]
    return location, message


def _score_error(rule: ScoreRule, node: str, verdict: NodeVerdict) -> ScoreError:
    """The :class:`ScoreError` of a backend's error verdict (see :func:`error_verdict`)."""
    location, message = _located(verdict)
    return ScoreError(rule.name, node, location or _value_location(rule), message)


def _filter_error(name: str, node: str | None, verdict: NodeVerdict, rule: FilterRule | None) -> FilterError:
    """The :class:`FilterError` of a backend's error verdict; the rule's own location when it has none."""
    location, message = _located(verdict)
    if location is None and rule is not None:
        location = f"{rule.span.file}:{rule.span.line}:{rule.span.col}"
    return FilterError(name, node, location, message)


def _filter_errors(names: list[str], codes: Codes, table: list[NodeVerdict], every_node: list[FilterError],
                   filters: Sequence[FilterRule]) -> tuple[FilterError, ...]:
    """Every filter failure of the decision, in rule order then node order. Only the verdicts that are
    errors are looked up in ``codes`` (usually none: then this costs one pass over the short table)."""
    failing = [k for k, v in enumerate(table) if v.error is not None]
    if not failing and not every_node:
        return ()
    by_name = {r.name: r for r in filters}
    order = {r.name: i for i, r in enumerate(filters)}
    out = list(every_node)
    for k in failing:
        verdict = table[k]
        if verdict.rule is None or any(e.rule == verdict.rule and e.node is None for e in every_node):
            continue
        rule = by_name.get(verdict.rule)
        for i in positions(codes == k).tolist():
            out.append(_filter_error(verdict.rule, names[i], verdict, rule))
    node_order = {n: i for i, n in enumerate(names)}
    out.sort(key=lambda e: (order.get(e.rule, len(order)), -1 if e.node is None else node_order.get(e.node, 0)))
    return tuple(out)


def _pre_filter(rules: Sequence[tuple[FilterRule, bool, bool, int]],
                pod_env: dict[str, Any]) -> tuple[_Filters, NodeVerdict | None]:
    """The filters that apply to the pod (with their per-node step allowance), and the verdict of a
    ``reject pod`` clause that holds (or None); the clauses a rule does not have are not called (see
    :class:`_Clauses`)."""
    filters: _Filters = []
    for rule, has_applies, has_rejects, per_node in rules:
        try:
            if has_applies and not rule.applies(pod_env):
                continue
            rejection = rule.pod_rejection(pod_env) if has_rejects else None
        except PolicyRuntimeError as err:
            filters.append((rule, per_node, runtime_verdict(rule.name, err)))
            continue
        if rejection is not None:
            return filters, NodeVerdict(rule=rule.name, reasons=(rejection,))
        filters.append((rule, per_node, None))
    return filters, None


def _set_feasible(cluster: Cluster, active: Indexes, codes: Codes, names: list[str]) -> None:
    """Hand the feasible nodes to the context: one boolean per slot when it takes a mask (no per-node
    Python), else their names. The mask is ``codes < 0``: a node leaves ``active`` exactly when it gets
    a verdict code, so one comparison gives it (no scatter of thousands of indexes)."""
    by_mask = getattr(cluster, "set_feasible_mask", None)
    if by_mask is None:
        cluster.set_feasible([names[i] for i in active.tolist()])
        return
    by_mask(codes < 0)


def _intern(table: list[NodeVerdict], verdict: NodeVerdict) -> int:
    table.append(verdict)
    return len(table) - 1


def _record(codes: Codes, table: list[NodeVerdict], active: Indexes, out_codes: Codes,
            verdicts: Sequence[NodeVerdict]) -> Indexes:
    """Write the verdicts of the nodes of ``active`` that failed into ``codes``; the nodes that passed."""
    if not verdicts:  # codes index the verdicts: none, so every node passed
        return active
    bad = out_codes >= 0
    at = positions(bad)  # usually a few nodes: gathered by index, not by a mask over all of them
    if not at.size:
        return active
    codes[active[at]] = out_codes[at] + len(table)
    table.extend(verdicts)
    return active[np.logical_not(bad, out=bad)]


_NO_MIN = frozenset({"none", "scale", "reverse"})
"""The normalisations whose arithmetic reads the largest raw value only, and need every value >= 0."""
_INT64_MAX = 2**63 - 1


def _raw_bounds(mode: str, raw: npt.NDArray[np.int64]) -> tuple[int, int] | None:
    """The bounds :func:`~.normalize.normalize_bounded` takes for the int64 values ``raw`` (not empty), or
    None when some value does not suit ``mode`` (see :func:`_bounds_ok`).

    (min, max) for ``minmax`` and ``spread``. For the modes of :data:`_NO_MIN` (0, max) from a single pass:
    read as unsigned, a negative value is larger than every non-negative one, so the largest unsigned
    value is the max when no value is negative and is above ``2**63 - 1`` when one is; 0 <= min, and
    0 == max only when every value is 0, which is what normalize_bounded asks of ``lo``."""
    if mode in _NO_MIN:
        top = int(_MAX(raw.view(np.uint64)))
        if top > _INT64_MAX or (mode == "none" and top > 100):
            return None
        return 0, top
    lo, hi = int(_MIN(raw)), int(_MAX(raw))
    return (lo, hi) if _bounds_ok(mode, lo, hi) else None


def _bounds_ok(mode: str, lo: int, hi: int) -> bool:
    """Whether raw values between ``lo`` and ``hi`` all suit the normalisation ``mode`` (see :func:`raw_error`)."""
    if mode == "none":
        return lo >= 0 and hi <= 100
    if mode in ("scale", "reverse", "spread"):
        return lo >= 0
    return mode == "minmax"


def _mode_bad(mode: str, raw: npt.NDArray[Any], usable: npt.NDArray[np.bool_] | None) -> npt.NDArray[np.bool_] | None:
    """The usable nodes (all when ``usable`` is None) whose raw value the normalisation ``mode`` cannot
    take, or None when there is none (decided with one or two reductions in the common case)."""
    if mode == "none":
        lo_ok, hi = 0, 100
    elif mode in ("scale", "reverse", "spread"):
        lo_ok, hi = 0, None
    else:
        return None
    vals = raw if usable is None else raw[usable]
    if vals.size == 0 or (_MIN(vals) >= lo_ok and (hi is None or _MAX(vals) <= hi)):
        return None
    out = (raw < lo_ok) if hi is None else ((raw < lo_ok) | (raw > hi))
    out = np.asarray(out, dtype=np.bool_)
    return out if usable is None else out & usable


def _mode_errors(rule: ScoreRule, raw: npt.NDArray[Any], bad: npt.NDArray[np.bool_], errors: Codes,
                 verdicts: list[NodeVerdict]) -> None:
    """Turn the raw values of ``bad`` nodes (see :func:`_mode_bad`) into error codes (appended to ``verdicts``)."""
    mode = rule.normalize
    for j in positions(bad).tolist():
        problem = raw_error(mode, int(raw[j]))
        assert problem is not None
        errors[j] = len(verdicts)
        verdicts.append(error_verdict(rule.name, problem))


def _verdict_map(names: list[str], codes: Codes, table: list[NodeVerdict]) -> dict[str, NodeVerdict]:
    return {name: (table[c] if c >= 0 else FEASIBLE) for name, c in zip(names, codes.tolist())}


def _score_maps(per_rule: list[tuple[str, _Detail | None]], kept: Sequence[str]) -> dict[str, Mapping[str, RuleScore]]:
    out: dict[str, Mapping[str, RuleScore]] = {}
    for name, detail in per_rule:
        if detail is None:
            out[name] = dict.fromkeys(kept, _NOT_APPLIED)
            continue
        raw, norm, ignored, weight, failed = detail
        errs = failed if failed is not None else [None] * len(kept)
        norms = [norm] * len(kept) if isinstance(norm, int) else norm.tolist()
        out[name] = {
            node: (_IGNORED if ign else _FAILED if err is not None else RuleScore(int(r), nv, nv * weight, False))
            for node, r, nv, ign, err in zip(kept, raw.tolist(), norms, ignored.tolist(), errs)
        }
    return out


def _unschedulable(key: str, names: list[str], codes: Codes, table: list[NodeVerdict], digest: str,
                   filter_errors: tuple[FilterError, ...] = ()) -> Decision:
    """The decision for a pod no node accepts, with kube-scheduler's FailedScheduling text."""
    counts = np.bincount(codes[codes >= 0], minlength=len(table))
    reasons = itertools.chain.from_iterable(
        table[k].reasons * int(c) for k, c in enumerate(counts.tolist()) if c
    )
    message = failed_scheduling_message(len(names), reasons)
    return Decision(key, None, LazyMap(lambda: _verdict_map(names, codes, table)), [], {}, {}, [], None,
                    message, digest, (), filter_errors)
