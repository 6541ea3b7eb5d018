"""The result of evaluating one pod: plain, comparable data.

A :class:`Decision` is what every evaluator produces and what the simulator, ``explain`` and the
scheduling cycle consume. It is deliberately plain (frozen dataclasses of strings, ints, tuples,
dicts and lists, no references to rules or objects) so that the two evaluation backends -- the
per-node reference and the vectorised one (``evaluation/vector``) -- can be compared with ``==`` on
random clusters (``tests/evaluation/test_backends_agree.py``), and so that a decision can be logged or
turned into JSON without touching the cluster snapshot.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, overload

if TYPE_CHECKING:  # annotations only: a Decision is plain data and must not pull in the compiler or object model
    from policyscheduler.compiler import PolicySet
    from policyscheduler.state import ClusterSnapshot

__all__ = ["NodeVerdict", "RuleScore", "ScoreError", "FilterError", "Decision", "Evaluator", "FEASIBLE", "LazyMap", "LazyList"]

_K = TypeVar("_K")
_V = TypeVar("_V")


class LazyMap(Mapping[_K, _V], Generic[_K, _V]):
    """A read-only mapping built on first use.

    A decision over 5,000 nodes would spend more time building its per-node dicts than the vectorised
    backend spends deciding; most callers (the scheduling cycle, simulate's JSON) never read them. The
    thunk holds the compact arrays the driver computed; ``==`` compares contents like a dict.
    """

    __slots__ = ("_thunk", "_value")

    def __init__(self, thunk: Callable[[], dict[_K, _V]]) -> None:
        self._thunk: Callable[[], dict[_K, _V]] | None = thunk
        self._value: dict[_K, _V] | None = None

    def _get(self) -> dict[_K, _V]:
        if self._value is None:
            assert self._thunk is not None
            self._value = self._thunk()
            self._thunk = None
        return self._value

    def __getitem__(self, key: _K) -> _V:
        return self._get()[key]

    def __iter__(self) -> Iterator[_K]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return self._get() == dict(other.items())
        return NotImplemented

    def __hash__(self) -> int:  # mutable-looking container: unhashable like dict
        raise TypeError("unhashable type: 'LazyMap'")

    def __repr__(self) -> str:
        return repr(self._get())


class LazyList(Sequence[_V], Generic[_V]):
    """A read-only list built on first use (see :class:`LazyMap`); ``==`` compares with lists. ``length``,
    when the caller knows it, answers ``len`` without building the list (the live scheduler's decision
    line reports how many nodes were feasible, for every pod)."""

    __slots__ = ("_length", "_thunk", "_value")

    def __init__(self, thunk: Callable[[], list[_V]], length: int | None = None) -> None:
        self._thunk: Callable[[], list[_V]] | None = thunk
        self._value: list[_V] | None = None
        self._length = length

    def _get(self) -> list[_V]:
        if self._value is None:
            assert self._thunk is not None
            self._value = self._thunk()
            self._thunk = None
        return self._value

    @overload
    def __getitem__(self, index: int) -> _V: ...

    @overload
    def __getitem__(self, index: slice) -> list[_V]: ...

    def __getitem__(self, index: int | slice) -> _V | list[_V]:
        return self._get()[index]

    def __len__(self) -> int:
        if self._value is None and self._length is not None:
            return self._length
        return len(self._get())

    def __iter__(self) -> Iterator[_V]:  # the list's own iterator: Sequence's would index item by item
        return iter(self._get())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple, LazyList)):
            return self._get() == list(other)
        return NotImplemented

    def __hash__(self) -> int:
        raise TypeError("unhashable type: 'LazyList'")

    def __repr__(self) -> str:
        return repr(self._get())


@dataclasses.dataclass(frozen=True)
class NodeVerdict:
    """Why a node is (in)feasible for the pod.

    ``rule is None`` means the node passed every filter. Otherwise ``rule`` names the first filter
    (or, for a runtime error in scoring, the score rule) that rejected the node, ``reasons`` are the
    strings that go into the FailedScheduling histogram, and ``error`` is set when the rule failed at
    run time rather than rejecting the node (the node is then infeasible too).
    """

    rule: str | None
    reasons: tuple[str, ...] = ()
    error: str | None = None

    @property
    def feasible(self) -> bool:
        """True when no filter rejected the node and no rule failed on it."""
        return self.rule is None


FEASIBLE = NodeVerdict(rule=None)
"""The verdict of a node every filter accepted (shared; verdicts are immutable)."""


@dataclasses.dataclass(frozen=True)
class RuleScore:
    """One score rule's result on one node: raw value, normalised 0..100, and × weight.

    A rule that failed on the node gives ``RuleScore(0, 0, 0)`` there (a score is a preference: a failure
    costs the node this rule's points, never its feasibility); the failure is in ``Decision.score_errors``.
    """

    raw: int
    normalized: int
    weighted: int
    ignored: bool = False


@dataclasses.dataclass(frozen=True)
class ScoreError:
    """A score rule that failed for the pod on a node (``node`` None: on every node, e.g. its ``applies
    when`` failed). The node kept its feasibility and got 0 for the rule; this says so, with where.

    ``location`` is ``file:line:col`` of the failing expression (for a raw value the normalisation cannot
    take, the rule's ``value``); ``message`` the error.
    """

    rule: str
    node: str | None
    location: str | None
    message: str

    def to_json(self) -> dict[str, Any]:
        """The ``score_errors`` item of ``simulate --output json``."""
        return {"rule": self.rule, "node": self.node, "location": self.location, "message": self.message}


@dataclasses.dataclass(frozen=True)
class FilterError:
    """A filter rule that failed at run time for the pod on a node (``node`` None: on every node that
    reached the rule, e.g. its ``applies when`` failed). A filter that cannot decide must not let a pod
    through, so that node became infeasible (its verdict reads ``policy error in rule ...``); this says
    so, with where, exactly as :class:`ScoreError` does for score rules.
    """

    rule: str
    node: str | None
    location: str | None
    message: str

    def to_json(self) -> dict[str, Any]:
        """The ``filter_errors`` item of ``simulate --output json``."""
        return {"rule": self.rule, "node": self.node, "location": self.location, "message": self.message}


@dataclasses.dataclass(frozen=True)
class Decision:
    """Everything an evaluator decided about one pod.

    ``scores`` maps score rule name -> node name -> :class:`RuleScore` for the feasible nodes;
    ``totals`` the summed weighted score per feasible node; ``top`` the feasible nodes sharing the best
    total (in node order); ``node`` the one chosen among them (``None`` when nothing is feasible, then
    ``message`` holds the FailedScheduling text). ``score_errors`` lists the score rules that failed on
    some node (that node got 0 for the rule and stayed feasible), in rule order then node order;
    ``filter_errors`` the filter rules that failed on some node (that node became infeasible), in rule
    order then node order.
    """

    pod: str
    node: str | None
    verdicts: Mapping[str, NodeVerdict]
    feasible: Sequence[str]
    scores: Mapping[str, Mapping[str, RuleScore]]
    totals: Mapping[str, int]
    top: Sequence[str]
    score: int | None
    message: str | None
    policy_digest: str
    score_errors: tuple[ScoreError, ...] = ()
    filter_errors: tuple[FilterError, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The JSON-ready summary used by ``simulate --output json`` (one placement); ``score_errors`` and
        ``filter_errors`` are there only when some score / filter rule failed for the pod (additive
        extensions of the documented shape)."""
        doc: dict[str, Any] = {
            "pod": self.pod,
            "node": self.node,
            "score": self.score,
            "top": list(self.top),
            "message": self.message,
        }
        if self.score_errors:
            doc["score_errors"] = [e.to_json() for e in self.score_errors]
        if self.filter_errors:
            doc["filter_errors"] = [e.to_json() for e in self.filter_errors]
        return doc


class Evaluator(Protocol):
    """Anything that can decide where one pod goes.

    The reference implementation (:class:`policyscheduler.evaluation.reference.ReferenceEvaluator`)
    runs rules node by node; a vectorised implementation must return an equal :class:`Decision` for
    the same inputs and consume ``rng`` identically (exactly one ``rng.choice(top)`` when ``top`` is
    not empty, nothing otherwise).
    """

    def evaluate(
        self, policy_set: PolicySet, snapshot: ClusterSnapshot, pod: dict[str, Any], *, rng: random.Random
    ) -> Decision:
        """Filter and score every node of ``snapshot`` for ``pod``."""
        ...
