"""The vectorised backend: every rule on every node at once, the reference closures where it cannot.

Per PolicySet (once, cached by identity): each rule is lowered (:func:`.program.lower_rule`) or marked
for the reference with the reason. Per snapshot: the node tables (:class:`.columns.Tables`), kept in
step with the snapshot's changes. Per pod: :class:`VectorRun` evaluates lowered rules over the node set
the driver hands it, and asks :class:`~policyscheduler.evaluation.reference.ReferenceRun` for the rules
that were not lowered and for the rows a lowered rule flagged (runtime errors, numbers outside int64),
so every answer is the reference's answer.
"""

from __future__ import annotations

import dataclasses
import weakref
from collections import Counter
from typing import TYPE_CHECKING, Any

import numpy as np

from policyscheduler.evaluation.arrays import amax, amin, count_nonzero, every_slot, filled, positions
from policyscheduler.evaluation.driver import FilterOutcome, Indexes, ScoreOutcome
from policyscheduler.evaluation.reference import ReferenceRun
from policyscheduler.evaluation.vector.columns import Interner, Tables
from policyscheduler.evaluation.vector.context import PodState
from policyscheduler.evaluation.vector.program import (
    FilterProgram,
    ScoreProgram,
    lower_rule,
    run_filter,
    run_score,
)
from policyscheduler.evaluation.vector.reuse import (
    ALL_FIELDS,
    Entry,
    Reuse,
    Unfreezable,
    constant_array,
    freeze,
)
from policyscheduler.evaluation.vector.values import Unsupported
from policyscheduler.objects.cluster import COLUMNS, PER_POD
from policyscheduler.objects.records import Pod as PodRecord

if TYPE_CHECKING:
    from policyscheduler.compiler import FilterRule, PolicySet, ScoreRule
    from policyscheduler.objects import Cluster, Pod
    from policyscheduler.state import ClusterSnapshot

__all__ = ["VectorBackend", "VectorRun", "lowering_report", "lowered"]

_ALL_POD_FIELDS = tuple(f.name for f in dataclasses.fields(PodRecord))

Lowered = dict[int, "FilterProgram | ScoreProgram | str"]
"""id(rule) -> its program, or the reason it runs on the reference."""

_CACHE: dict[int, tuple[Any, Lowered]] = {}


def _only_used(codes: np.ndarray, verdicts: list[Any]) -> list[Any]:
    """The verdicts ``codes`` still refer to, with ``codes`` renumbered in place (a run on more rows than
    asked made verdicts of rows left out; the caller sees only the asked rows' ones)."""
    if not verdicts:
        return verdicts
    used = np.unique(codes[codes >= 0])
    if used.size == len(verdicts):
        return verdicts
    renumber = np.full(len(verdicts), -1, dtype=np.int32)
    renumber[used] = np.arange(used.size, dtype=np.int32)
    at = codes >= 0
    codes[at] = renumber[codes[at]]
    return [verdicts[i] for i in used.tolist()]


def lowered(policy_set: PolicySet) -> Lowered:
    """The lowering of every rule of ``policy_set`` (computed once per PolicySet object)."""
    hit = _CACHE.get(id(policy_set))
    if hit is not None and hit[0]() is policy_set:
        return hit[1]
    out: Lowered = {}
    for rule in policy_set.rules:
        try:
            out[id(rule)] = lower_rule(rule.checked)
        except Unsupported as exc:
            out[id(rule)] = str(exc)
    for key in [k for k, (ref, _) in _CACHE.items() if ref() is None]:
        del _CACHE[key]
    _CACHE[id(policy_set)] = (weakref.ref(policy_set), out)
    return out


def lowering_report(policy_set: PolicySet) -> dict[str, tuple[str, str]]:
    """``"filter NAME"`` / ``"score NAME"`` -> (``"vector"`` or ``"reference"``, why), for ``lint --costs``."""
    table = lowered(policy_set)
    report: dict[str, tuple[str, str]] = {}
    for rule in policy_set.rules:
        kind = "filter" if rule in policy_set.filters else "score"
        prog = table[id(rule)]
        if isinstance(prog, str):
            report[f"{kind} {rule.name}"] = ("reference", prog)
        else:
            report[f"{kind} {rule.name}"] = ("vector", "lowered to whole-cluster array operations")
    return report


SMALL = 8
"""Up to this many nodes, a rule is evaluated by the reference closures: on a handful of rows (the
nodes that changed since the previous pod) their per-node cost beats the vector path's fixed cost."""


class VectorRun:
    """One pod over the snapshot's nodes (see the module docstring)."""

    def __init__(self, programs: Lowered, tables: Tables, snapshot: ClusterSnapshot, pod: Pod, cluster: Cluster,
                 stats: Counter[str], reuse: Reuse | None = None) -> None:
        self._programs = programs
        self._stats = stats
        self._state = PodState(tables, pod, cluster)
        self._snapshot = snapshot
        self._pod = pod
        self._cluster = cluster
        self._reference: ReferenceRun | None = None
        self._reuse = reuse
        self._frozen: dict[str, Any] = {}
        self._prints: dict[tuple[str, ...], Any] = {}

    def _fingerprint(self, rule: Any, fields: tuple[str, ...] | None = None) -> Any:
        """The pod's values of the fields ``rule`` depends on (or of ``fields``), or None when its results
        cannot be reused."""
        reuse = self._reuse
        if reuse is None:
            return None
        if fields is None:
            fields = reuse.fields(rule)
        if fields is None:
            return None
        prints = self._prints
        if fields in prints:  # rules reading the same pod fields share one image (several per pod)
            return prints[fields]
        wanted = _ALL_POD_FIELDS if fields == (ALL_FIELDS,) else fields
        frozen = self._frozen
        out = []
        try:
            for f in wanted:
                v = frozen.get(f)
                if v is None:
                    v = frozen[f] = freeze(getattr(self._pod, f))
                out.append(v)
        except (Unfreezable, AttributeError):
            prints[fields] = None
            return None
        key = prints[fields] = tuple(out)
        return key

    def filter(self, rule: FilterRule, idx: Indexes) -> FilterOutcome:
        """The rule's verdicts on ``idx``, reusing the previous pods' results where they must be equal."""
        key = self._fingerprint(rule)
        if key is None or not self._reuse.worth(rule, key, int(idx.size)):  # type: ignore[union-attr]
            return self._filter(rule, idx)
        assert self._reuse is not None
        entry = self._reuse.entry(rule, key)
        stale = entry.stale(idx)
        if stale is None:
            out = self._filter(rule, self._all_slots())
            entry.put_filter(None, out.codes, out.verdicts)
        elif stale.size:
            out = self._filter(rule, stale)
            entry.put_filter(stale, out.codes, out.verdicts)
        return FilterOutcome(entry.filter_codes(idx), entry.verdicts)

    def score(self, rule: ScoreRule, idx: Indexes) -> ScoreOutcome:
        """The rule's raw scores on ``idx``, reusing the previous pods' results where they must be equal."""
        key = self._fingerprint(rule)
        if key is None:
            return self._memo_score(rule, idx)
        if not self._reuse.worth(rule, key, int(idx.size)):  # type: ignore[union-attr]
            return self._score(rule, idx)
        assert self._reuse is not None
        entry = self._reuse.entry(rule, key)
        stale = entry.stale(idx)
        if stale is None:
            out = self._score(rule, self._all_slots())
            entry.put_score(None, out.raw, out.ignored, out.errors, out.verdicts)
        elif stale.size:
            out = self._score(rule, stale)
            entry.put_score(stale, out.raw, out.ignored, out.errors, out.verdicts)
        same = entry.uniform()
        if same is not None:  # one value on every slot: shared constant arrays, the bounds told
            return _constant_outcome(idx.size, same)
        raw, ignored, errors = entry.score_parts(idx)
        return ScoreOutcome(raw, ignored, errors, entry.verdicts)

    def _memo_score(self, rule: ScoreRule, idx: Indexes) -> ScoreOutcome:
        """A rule reading ``cluster`` through whole-cluster builtins only: its value from an earlier pod of
        the same shape when every call still answers the same uniform value (:class:`.reuse.Memo`), or
        that pod's per-node results with only the changed nodes recomputed when every call is node-local
        with an unchanged token (:class:`.reuse.Delta`)."""
        reuse = self._reuse
        prog = self._programs.get(id(rule))
        uniform = getattr(self._cluster, "uniform", None)
        if reuse is None or uniform is None or not isinstance(prog, ScoreProgram) or idx.size <= SMALL:
            return self._score(rule, idx)
        fields = reuse.memo_fields(rule, _CLUSTER_CALLS)
        key = None if fields is None else self._fingerprint(rule, fields)
        if key is None:
            return self._score(rule, idx)
        hit = reuse.memo.get(rule, key)
        if hit is not None and _same_calls(uniform, hit[0]):
            reuse.memo.hits += 1
            return _constant_outcome(idx.size, hit[1])
        token = getattr(self._cluster, "column_token", None)
        delta, probe = reuse.delta.find(rule, key, token) if token is not None else (None, None)
        if delta is not None:  # found by the tokens its calls have now: they are the ones it recorded
            tokens, entry = delta
            stale = entry.stale(idx)  # None: the entry forgot everything (too many verdicts): start again
            if stale is not None:
                if stale.size:
                    part = self._score(rule, stale)
                    entry.put_score(stale, part.raw, part.ignored, part.errors, part.verdicts)
                reuse.delta.hits += 1
                same = entry.uniform()
                if same is not None:
                    return _constant_outcome(idx.size, same)
                raw, ignored, errors = entry.score_parts(idx)
                return ScoreOutcome(raw, ignored, errors, entry.verdicts)
            reuse.delta.drop(rule, key, tokens)
        # every slot when delta rows could be kept (as for an entry: not for a pod asking for a few nodes,
        # nor for a shape seen for the first time -- with its tokens, once its calls are known: the pods of
        # an app whose matched terms keep changing leave no entry -- nor for tokens of this pod's own)
        own = probe is not None and any(t is PER_POD for _, _, t in probe[1])
        rows = self._all_slots() if token is not None and not own and 2 * idx.size >= reuse.size \
            and reuse.delta.possible(rule) and reuse.seen_before(rule, key if probe is None else probe) else idx
        state = self._state
        calls: list[tuple[str, tuple[Any, ...], int | None]] = []
        state.recording = calls
        try:
            raw, ignored, err = run_score(prog, state, rows)
        finally:
            state.recording = None
        if not count_nonzero(err) and not count_nonzero(ignored) and calls and all(same is not None for _, _, same in calls) \
                and raw.dtype == np.int64 and raw.size and int(amin(raw)) == int(amax(raw)):
            reuse.memo.put(rule, key, tuple((name, argv, int(same)) for name, argv, same in calls if same is not None),
                           int(raw[0]))
        elif rows is not idx and calls and token is not None:
            made = tuple((name, argv, token(name, *argv)) for name, argv, _ in calls)
            if any(t is None for _, _, t in made):
                reuse.delta.never(rule)
            elif any(t is PER_POD for _, _, t in made):
                pass  # a column made for this pod alone: its rows serve no other pod
            else:
                out = self._merge_score(rule, rows, raw, ignored, err)
                entry = Entry(reuse.size)
                entry.put_score(None, out.raw, out.ignored, out.errors, out.verdicts)
                reuse.delta.put(rule, key, made, entry)
                raw_at, ignored_at, errors_at = entry.score_parts(idx)
                return ScoreOutcome(raw_at, ignored_at, errors_at, entry.verdicts)
        if rows is not idx:
            raw, ignored, err = raw.take(idx), ignored.take(idx), err.take(idx)
        return self._merge_score(rule, idx, raw, ignored, err)

    def _all_slots(self) -> Indexes:
        return np.arange(len(self._state.tables.nodes.objects), dtype=np.int64)

    @property
    def reference(self) -> ReferenceRun:
        if self._reference is None:
            self._reference = ReferenceRun(self._snapshot, self._pod, self._cluster)
        return self._reference

    def _filter(self, rule: FilterRule, idx: Indexes) -> FilterOutcome:
        """The rule's verdicts on ``idx``: lowered where possible, reference rows merged in."""
        prog = self._programs.get(id(rule))
        if idx.size <= SMALL:
            return self._few_filter(rule, idx)
        if not isinstance(prog, FilterProgram):
            return self.reference.filter(rule, idx)
        wide = self._wide(idx)
        if wide is None:
            codes, verdicts, err = run_filter(prog, self._state, idx)
        else:
            codes, verdicts, err = run_filter(prog, self._state, wide)
            codes, err = codes.take(idx), err.take(idx)
            verdicts = _only_used(codes, verdicts)
        if count_nonzero(err):
            at = positions(err)
            self._stats[f"filter {rule.name}"] += at.size
            ref = self.reference.filter(rule, idx[at])
            sub = ref.codes.copy()
            sub[sub >= 0] += len(verdicts)
            codes[at] = sub
            verdicts = [*verdicts, *ref.verdicts]
        return FilterOutcome(codes, verdicts)

    def _score(self, rule: ScoreRule, idx: Indexes) -> ScoreOutcome:
        """The rule's raw scores on ``idx``: lowered where possible, reference rows merged in."""
        prog = self._programs.get(id(rule))
        if idx.size <= SMALL:
            return self._few_score(rule, idx)
        if not isinstance(prog, ScoreProgram):
            return self.reference.score(rule, idx)
        wide = self._wide(idx)
        if wide is None:
            raw, ignored, err = run_score(prog, self._state, idx)
        else:
            raw, ignored, err = run_score(prog, self._state, wide)
            raw, ignored, err = raw.take(idx), ignored.take(idx), err.take(idx)
        return self._merge_score(rule, idx, raw, ignored, err)

    def _wide(self, idx: Indexes) -> Indexes | None:
        """Every slot, when ``idx`` leaves out only a few of them (at most a quarter); else None.

        Why: a lowered rule on a subset of the nodes gathers each table column it reads onto that subset
        (a copy per column per node set); on every slot it reads the columns as they are. When the subset
        is most of the nodes (the nodes left after the first filters, the feasible nodes the score rules
        run on) the extra rows cost less than the copies, and one array of every slot, the same object
        for every rule of the pod (:func:`~..arrays.every_slot`, shared read-only by every pod), lets them
        share their gathered columns (``program._start``). Rows are
        independent, so the answers on ``idx`` are the ones a run on ``idx`` gives (an error on a row
        outside ``idx`` is dropped with the row; one that poisons the whole run sends ``idx`` to the
        reference, as it would have)."""
        n = len(self._state.tables.nodes.objects)
        m = int(idx.size)
        if m == n or 4 * m < 3 * n:
            return None
        return every_slot(n)

    def _row_keys(self, rule: Any, idx: Indexes) -> tuple[dict[Any, Any], list[Any]] | None:
        """The row memo of ``rule`` (:class:`.reuse.Rows`) and each row's key, or None when not memoised."""
        reuse = self._reuse
        fields = reuse.row_fields(rule) if reuse is not None else None
        if fields is None:
            return None
        pod = self._fingerprint(rule)
        if pod is None:
            return None
        assert reuse is not None
        nodes, rows = self._snapshot.nodes, reuse.rows
        try:
            keys = [(pod, rows.node_image(nodes[i], fields)) for i in idx.tolist()]
        except Unfreezable:
            return None
        return rows.table(rule), keys

    def _memo_rows(self, rule: Any, idx: Indexes, evaluate: Any) -> list[Any] | None:
        """Each row's memoised result (:class:`.reuse.Rows`), the missing ones from ``evaluate(rows)`` (one
        result per row, stored); None when the rule's rows are not memoised."""
        memo = self._row_keys(rule, idx)
        if memo is None:
            return None
        table, keys = memo
        found = [table.get(k, _MISS) for k in keys]
        missing = [j for j, v in enumerate(found) if v is _MISS]
        if missing:
            for j, row in zip(missing, evaluate(idx[missing])):
                found[j] = table[keys[j]] = row
        if len(missing) < len(keys):
            self._reuse.rows.hits += len(keys) - len(missing)  # type: ignore[union-attr]
        return found

    def _few_filter(self, rule: FilterRule, idx: Indexes) -> FilterOutcome:
        """A few rows by the reference closures, through the row memo where the rule allows it."""
        def evaluate(rows: Indexes) -> list[Any]:
            ref = self.reference.filter(rule, rows)
            return [ref.verdicts[code] if code >= 0 else None for code in ref.codes.tolist()]

        found = self._memo_rows(rule, idx, evaluate)
        if found is None:
            return self.reference.filter(rule, idx)
        codes = filled(idx.size, -1, np.int32)
        verdicts: list[Any] = []
        for j, verdict in enumerate(found):
            if verdict is not None:
                codes[j] = len(verdicts)
                verdicts.append(verdict)
        return FilterOutcome(codes, verdicts)

    def _few_score(self, rule: ScoreRule, idx: Indexes) -> ScoreOutcome:
        """A few rows by the reference closures, through the row memo where the rule allows it."""
        def evaluate(rows: Indexes) -> list[Any]:
            ref = self.reference.score(rule, rows)
            return [(raw, ign, ref.verdicts[code] if code >= 0 else None)
                    for raw, ign, code in zip(ref.raw.tolist(), ref.ignored.tolist(), ref.errors.tolist())]

        found = self._memo_rows(rule, idx, evaluate)
        if found is None:
            return self.reference.score(rule, idx)
        raws = [row[0] for row in found]
        errors = filled(idx.size, -1, np.int32)
        verdicts: list[Any] = []
        for j, row in enumerate(found):
            if row[2] is not None:
                errors[j] = len(verdicts)
                verdicts.append(row[2])
        fits = all(-(2**63) <= r <= 2**63 - 1 for r in raws)
        return ScoreOutcome(np.array(raws, dtype=np.int64 if fits else object),
                            np.array([row[1] for row in found], dtype=np.bool_), errors, verdicts)

    def _merge_score(self, rule: ScoreRule, idx: Indexes, raw: Any, ignored: Any, err: Any) -> ScoreOutcome:
        """A lowered rule's outcome with the rows it could not decide (``err``) handed to the reference."""
        if not count_nonzero(err):  # no error code: the shared read-only "none" array (readers copy)
            return ScoreOutcome(raw, ignored, constant_array(idx.size, np.int32, -1), [])
        errors = filled(idx.size, -1, np.int32)
        at = positions(err)
        self._stats[f"score {rule.name}"] += at.size
        ref = self.reference.score(rule, idx[at])
        ignored = ignored.copy()
        ignored[at] = ref.ignored
        errors[at] = ref.errors
        if ref.raw.dtype == object:
            raw = raw.astype(object)
        else:
            raw = raw.copy()
        raw[at] = ref.raw
        return ScoreOutcome(raw, ignored, errors, list(ref.verdicts))


_MISS = object()


def _constant_outcome(size: int, value: int) -> ScoreOutcome:
    """A score of ``value`` on each of ``size`` nodes, none ignored or failed, with its bounds (read-only
    shared arrays: readers never write to an outcome)."""
    return ScoreOutcome(constant_array(size, np.int64, value), constant_array(size, np.bool_, False),
                        constant_array(size, np.int32, -1), [], (value, value))

_CLUSTER_CALLS = frozenset(COLUMNS)
"""The cluster builtins with a whole-cluster column (objects/cluster.py); :class:`.reuse.Memo` replays them."""


def _same_calls(uniform: Any, calls: Any) -> bool:
    """Whether every recorded cluster call still has its recorded uniform value."""
    try:
        return all(uniform(name, *argv) == same for name, argv, same in calls)
    except Exception:  # noqa: BLE001 -- a call the cluster cannot answer now: evaluate the rule
        return False


class VectorBackend:
    """Whole-cluster numpy evaluation (see the module docstring); a :class:`~..driver.Backend`."""

    name = "vector"

    def __init__(self) -> None:
        self.interner = Interner()
        self.tables = Tables(self.interner)
        self.reference_rows: Counter[str] = Counter()
        """Rows of lowered rules handed to the reference (runtime errors, int64 overflow), per rule."""
        self.reuse: Reuse | None = Reuse()
        """The equivalence cache (:mod:`.reuse`); None turns it off."""

    def start(self, policy_set: PolicySet, snapshot: ClusterSnapshot, pod: Pod, cluster: Cluster) -> VectorRun:
        """Bring the node tables (and the reused results) up to date and prepare ``pod``'s run."""
        tables = self.tables
        tables.sync(snapshot)
        reuse = self.reuse
        if reuse is not None:
            reuse.sync(policy_set, tables.epoch, tables.changed, len(tables.nodes.objects), tables.slot_fields)
        return VectorRun(lowered(policy_set), tables, snapshot, pod, cluster, self.reference_rows, reuse)
