"""The vectorised backend: every rule on every node at once, the reference closures where it cannot.

Per PolicySet (once, cached by identity): each rule is lowered (:func:`.program.lower_rule`) or marked
for the reference with the reason. Per snapshot: the node tables (:class:`.columns.Tables`), kept in
step with the snapshot's changes. Per pod: :class:`VectorRun` evaluates lowered rules over the node set
the driver hands it, and asks :class:`~policyscheduler.evaluation.reference.ReferenceRun` for the rules
that were not lowered and for the rows a lowered rule flagged (runtime errors, numbers outside int64),
so every answer is the reference's answer.
"""

from __future__ import annotations

import weakref
from collections import Counter
from typing import TYPE_CHECKING, Any

import numpy as np

from policyscheduler.evaluation.driver import FilterOutcome, Indexes, ScoreOutcome
from policyscheduler.evaluation.reference import ReferenceRun
from policyscheduler.evaluation.vector.columns import Interner, Tables
from policyscheduler.evaluation.vector.lower import PodState
from policyscheduler.evaluation.vector.program import (
    FilterProgram,
    ScoreProgram,
    lower_rule,
    run_filter,
    run_score,
)
from policyscheduler.evaluation.vector.values import Unsupported

if TYPE_CHECKING:
    from policyscheduler.compiler import FilterRule, PolicySet, ScoreRule
    from policyscheduler.objects import Cluster, ClusterSnapshot, Pod

__all__ = ["VectorBackend", "VectorRun", "lowering_report", "lowered"]

Lowered = dict[int, "FilterProgram | ScoreProgram | str"]
"""id(rule) -> its program, or the reason it runs on the reference."""

_CACHE: dict[int, tuple[Any, Lowered]] = {}


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


class VectorRun:
    """One pod over the snapshot's nodes (see the module docstring)."""

    def __init__(self, programs: Lowered, tables: Tables, snapshot: ClusterSnapshot, pod: Pod, cluster: Cluster,
                 stats: Counter[str]) -> None:
        self._programs = programs
        self._stats = stats
        self._state = PodState(tables, pod, cluster)
        self._snapshot = snapshot
        self._pod = pod
        self._cluster = cluster
        self._reference: ReferenceRun | None = None

    @property
    def reference(self) -> ReferenceRun:
        if self._reference is None:
            self._reference = ReferenceRun(self._snapshot, self._pod, self._cluster)
        return self._reference

    def filter(self, rule: FilterRule, idx: Indexes) -> FilterOutcome:
        """The rule's verdicts on ``idx``: lowered where possible, reference rows merged in."""
        prog = self._programs.get(id(rule))
        if not isinstance(prog, FilterProgram):
            return self.reference.filter(rule, idx)
        codes, verdicts, err = run_filter(prog, self._state, idx)
        if err.any():
            at = np.flatnonzero(err)
            self._stats[f"filter {rule.name}"] += at.size
            ref = self.reference.filter(rule, idx[at])
            sub = ref.codes.copy()
            sub[sub >= 0] += len(verdicts)
            codes[at] = sub
            verdicts = [*verdicts, *ref.verdicts]
        return FilterOutcome(codes, verdicts)

    def score(self, rule: ScoreRule, idx: Indexes) -> ScoreOutcome:
        """The rule's raw scores on ``idx``: lowered where possible, reference rows merged in."""
        prog = self._programs.get(id(rule))
        if not isinstance(prog, ScoreProgram):
            return self.reference.score(rule, idx)
        raw, ignored, err = run_score(prog, self._state, idx)
        errors = np.full(idx.size, -1, dtype=np.int32)
        if not err.any():
            return ScoreOutcome(raw, ignored, errors, [])
        at = np.flatnonzero(err)
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


class VectorBackend:
    """Whole-cluster numpy evaluation (see the module docstring); a :class:`~..driver.Backend`."""

    name = "vector"

    def __init__(self) -> None:
        self.interner = Interner()
        self.tables = Tables(self.interner)
        self.reference_rows: Counter[str] = Counter()
        """Rows of lowered rules handed to the reference (runtime errors, int64 overflow), per rule."""

    def start(self, policy_set: PolicySet, snapshot: ClusterSnapshot, pod: Pod, cluster: Cluster) -> VectorRun:
        """Bring the node tables up to date and prepare ``pod``'s run."""
        self.tables.sync(snapshot)
        return VectorRun(lowered(policy_set), self.tables, snapshot, pod, cluster, self.reference_rows)
