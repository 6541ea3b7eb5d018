"""Compare two policy sets on one snapshot: which pods move, from where to where, and why.

Both sets schedule the same snapshot through :func:`policyscheduler.simulate.simulate` -- the project's
one scheduling cycle, with the same pod order and the same seed -- OLD first, then NEW. A pod *moved*
when its node differs between the two runs (a node, or none: "unschedulable"); pods with the same node,
or unschedulable under both, *kept* their place.

Why a pod moved is decided **at the point of the NEW run where the pod was decided**, on that very
state: the NEW run's evaluator is wrapped so that, whenever NEW decides a pod differently from where OLD
left it, the OLD set is evaluated for the same pod on the same snapshot (with an evaluator and a random
source of its own, so the NEW run is exactly what a plain ``simulate`` would do). Comparing the two
decisions on one state separates what the *rules* changed from what *earlier moves* changed:

The tests, in order (the first that holds is the cause):

1. ``knock_on`` -- OLD, on this state, would also pick the NEW node (it is among OLD's best nodes here,
   and NEW did not break a tie OLD had between it and the old node), or neither set finds a node here.
2. ``filter`` -- a NEW filter rejects the old node, which OLD accepts here; its reasons are reported
   (the FailedScheduling strings).
3. ``filter_lifted`` -- an OLD filter rejects the NEW node here; NEW lets it through.
4. The old node still fits under both sets: ``knock_on`` when both rank the pair alike (OLD puts the new
   node above the old one too, or both level), else ``score``: the score rule whose weighted, normalised
   points for (new node - old node) grew most from OLD to NEW (a rule in one set only counts 0 in the
   other).
5. The old node fits under neither (earlier moves filled it) or OLD left the pod unschedulable: the same
   against the node OLD would choose here -- ``filter`` when a NEW filter rejects it, else ``score``.

Costs: only the causes of the pods currently decided differently are kept (one small record per pod,
replaced at each new attempt); a comparison costs two simulations plus, per differing attempt, one OLD
evaluation and, for a score cause, one evaluation per set of only the score rules that differ (reading a
decision's per-rule scores for every rule and node would cost more than deciding).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from policyscheduler.evaluation import Decision, Evaluator, NodeVerdict, make_evaluator
from policyscheduler.simulate.run import Prepared, Simulation, prepare, simulate

if TYPE_CHECKING:
    from policyscheduler.compiler import PolicySet
    from policyscheduler.state import ClusterSnapshot

__all__ = ["Cause", "Comparison", "Move", "compare", "explain_move"]

SCORE = "score"
FILTER = "filter"
FILTER_LIFTED = "filter_lifted"
KNOCK_ON = "knock_on"
UNSCHEDULABLE = "unschedulable"


@dataclasses.dataclass(frozen=True)
class Cause:
    """Why one pod moved (see the module docstring for the kinds).

    ``rule`` / ``location``: the filter or score rule (``file:line:col`` in the set that has it; None for a
    knock-on). ``node``: the node the filter judged (``filter``, ``filter_lifted``), or for ``score`` the
    node the new one is compared with. ``reasons``: the filter's reasons on that node. ``old_points`` /
    ``new_points`` (``score`` only): the rule's weighted points on the new node minus those on the compared
    node, under OLD and under NEW, on the same state. ``text``: one sentence for people.
    """

    kind: str
    text: str
    rule: str | None = None
    location: str | None = None
    node: str | None = None
    reasons: tuple[str, ...] = ()
    old_points: int | None = None
    new_points: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The ``cause`` object of ``simulate --compare -o json``."""
        return {"kind": self.kind, "rule": self.rule, "location": self.location, "node": self.node,
                "reasons": list(self.reasons), "old_points": self.old_points, "new_points": self.new_points,
                "text": self.text}


@dataclasses.dataclass(frozen=True)
class Move:
    """One pod placed differently: ``old`` / ``new`` are node names, None for unschedulable."""

    pod: str
    old: str | None
    new: str | None
    cause: Cause

    @property
    def knock_on(self) -> bool:
        """True when no rule difference explains the move (earlier moves or a tie draw do)."""
        return self.cause.kind == KNOCK_ON

    def to_json(self) -> dict[str, Any]:
        """One item of ``moved`` in ``simulate --compare -o json``."""
        return {"pod": self.pod, "from": self.old, "to": self.new, "knock_on": self.knock_on,
                "cause": self.cause.to_json()}


@dataclasses.dataclass(frozen=True)
class Comparison:
    """The two runs and what differs. ``moves`` are in the NEW run's settled order (placements in the
    order they happened, then the pods NEW could not place), so a knock-on follows the moves behind it."""

    old: Simulation
    new: Simulation
    moves: tuple[Move, ...]
    seed: int

    @property
    def pods(self) -> int:
        """Pending pods scheduled by both runs."""
        return len(self.new.decisions)

    @property
    def unschedulable_in_both(self) -> int:
        """Pods neither set could place."""
        old_unplaced = {d.pod for d in self.old.unplaced}
        return sum(1 for d in self.new.unplaced if d.pod in old_unplaced)

    @property
    def kept(self) -> int:
        """Pods on the same node under both sets (unschedulable under both included)."""
        return self.pods - len(self.moves)

    @property
    def by_rules(self) -> list[Move]:
        """Moves a rule difference explains."""
        return [m for m in self.moves if not m.knock_on]

    @property
    def knock_ons(self) -> list[Move]:
        """Moves explained by earlier moves only."""
        return [m for m in self.moves if m.knock_on]

    def to_json(self, *, old_source: str = "", new_source: str = "") -> dict[str, Any]:
        """The ``simulate --compare -o json`` document (shape in the README's "Policy tools")."""

        def side(sim: Simulation, source: str) -> dict[str, Any]:
            return {"source": source, "policy_digest": sim.policy_digest, "placed": len(sim.placed),
                    "unschedulable": len(sim.unplaced)}

        return {
            "old": side(self.old, old_source),
            "new": side(self.new, new_source),
            "seed": self.seed,
            "pods": self.pods,
            "kept": self.kept,
            "unschedulable_in_both": self.unschedulable_in_both,
            "moved": [m.to_json() for m in self.moves],
        }


# ------------------------------------------------------------------------------------------- the cause


def _location(rule: Any) -> str | None:
    span = getattr(rule, "span", None)
    return None if span is None else f"{span.file}:{span.line}:{span.col}"


def _points(decision: Decision, rule: str, node: str) -> int:
    per_node = decision.scores.get(rule)
    score = per_node.get(node) if per_node is not None else None
    return score.weighted if score is not None else 0


def _feasible(decision: Decision, node: str | None) -> bool:
    if node is None:
        return False
    verdict = decision.verdicts.get(node)
    return verdict is not None and verdict.feasible


def _name(node: str | None) -> str:
    return node if node is not None else UNSCHEDULABLE


def _reasons(decision: Decision, node: str) -> tuple[str, ...]:
    verdict = decision.verdicts.get(node)
    if verdict is None or verdict.feasible:
        return ()
    return verdict.reasons or ((verdict.error,) if verdict.error else ())


def explain_move(old_node: str | None, new_node: str | None, new: Decision, old: Decision,
                 new_set: PolicySet, old_set: PolicySet,
                 points: Callable[[], tuple[Decision, Decision]] | None = None) -> Cause:
    """Why a pod OLD left on ``old_node`` is decided ``new`` (NEW set) where OLD decides ``old`` on the
    same state (see the module docstring for the order of the tests).

    ``points()``, when given, returns the (NEW, OLD) decisions whose per-rule scores the score test reads
    (by default ``new`` and ``old`` themselves): :func:`compare` passes decisions of the score rules that
    differ between the sets only, which are far cheaper to read on a large cluster."""
    old_top, new_top = set(old.top), set(new.top)
    gone = (f"{old_node} no longer fits here ({'; '.join(_reasons(new, old_node)) or 'rejected'})"
            if old_node is not None and not _feasible(new, old_node) and not _feasible(old, old_node) else None)

    def knock_on(text: str) -> Cause:
        return Cause(KNOCK_ON, text, node=old_node, reasons=_reasons(new, old_node) if old_node else ())

    # 1. OLD would decide alike on this state: not the rules' doing.
    if new_node is None and old.node is None:
        return knock_on((gone + "; " if gone else "") + "no node fits here under either set")
    if new_node is not None and new_node in old_top and (old_node not in old_top or old_node in new_top):
        if old_node is not None and old_node in new_top:
            return knock_on(f"{old_node} and {new_node} tie under both sets here; the tie-break went the other way")
        return knock_on((gone + "; " if gone else "") + f"OLD would choose {new_node} here too")
    # 2. A NEW filter rejects the old node, which OLD accepts here.
    if old_node is not None and _feasible(old, old_node) and not _feasible(new, old_node):
        return _filter_cause("", old_node, new, new_set)
    # 3. An OLD filter rejected the NEW node here; NEW lets it through.
    if new_node is not None and not _feasible(old, new_node):
        verdict = old.verdicts.get(new_node)
        rule = verdict.rule if verdict is not None else None
        reasons = _reasons(old, new_node)
        filters_old = {r.name: r for r in old_set.filters}
        return Cause(FILTER_LIFTED, f"OLD filter {rule} rejected {new_node} here ({'; '.join(reasons)}); NEW does not",
                     rule=rule, location=_location(filters_old.get(rule or "")), node=new_node, reasons=reasons)
    # 4. The old node fits under both sets: if OLD ranks the pair as NEW does, the rules agree about this
    #    move (earlier moves made the old node less attractive); else the score rule that turned it.
    if old_node is not None and new_node is not None and _feasible(new, old_node) and _feasible(old, old_node):
        before_total = old.totals.get(new_node, 0) - old.totals.get(old_node, 0)
        after_total = new.totals.get(new_node, 0) - new.totals.get(old_node, 0)
        if before_total > 0 or (before_total == 0 and after_total == 0):
            return knock_on(f"both sets rank {new_node} {'above' if before_total else 'level with'} {old_node} here")
        return _score_cause("", new_node, old_node, *(points() if points else (new, old)), new_set, old_set)
    # 5. The old node is gone (or OLD left the pod unschedulable): against the node OLD would choose here.
    prefix = (gone + "; ") if gone else ""
    for node in dict.fromkeys([old.node, *old.top]):
        if node is not None and not _feasible(new, node):
            return _filter_cause(prefix, node, new, new_set, chosen_by_old=True)
    compared = next((n for n in [old.node, *old.top] if n is not None and n != new_node), None)
    if new_node is None or compared is None:  # not expected: 1. and 5. cover these
        return Cause(SCORE, prefix + "the two sets rank the nodes differently here")
    return _score_cause(prefix, new_node, compared, *(points() if points else (new, old)), new_set, old_set)


def _filter_cause(prefix: str, node: str, new: Decision, new_set: PolicySet, *, chosen_by_old: bool = False) -> Cause:
    """A NEW filter rejects ``node`` (which OLD accepts on the same state)."""
    verdict = new.verdicts[node]
    reasons = _reasons(new, node)
    rules = {r.name: r for r in new_set.filters}
    where = " (the node OLD would choose here)" if chosen_by_old else ""
    return Cause(FILTER, prefix + f"filter {verdict.rule} rejects {node}{where}: {'; '.join(reasons)}",
                 rule=verdict.rule, location=_location(rules.get(verdict.rule or "")), node=node, reasons=reasons)


def _score_cause(prefix: str, new_node: str, compared: str, new: Decision, old: Decision,
                 new_set: PolicySet, old_set: PolicySet) -> Cause:
    """The score rule whose contribution to (new node - compared node) grew most from OLD to NEW."""
    scores_new = {r.name: r for r in new_set.scores}
    scores_old = {r.name: r for r in old_set.scores}
    best: tuple[int, str, int, int] | None = None
    for rule in dict.fromkeys(r for r in [*scores_new, *scores_old] if r in new.scores or r in old.scores):
        after = _points(new, rule, new_node) - _points(new, rule, compared)
        before = _points(old, rule, new_node) - _points(old, rule, compared)
        if best is None or after - before > best[0]:
            best = (after - before, rule, before, after)
    if best is None:
        return Cause(SCORE, prefix + "the two sets rank the nodes differently here")
    _, rule, before, after = best
    where = scores_new.get(rule) or scores_old.get(rule)
    change = ("a NEW rule" if rule not in scores_old else "not in NEW" if rule not in scores_new
              else _weight_change(scores_old[rule], scores_new[rule]))
    text = (prefix + f"score {rule}: {new_node} vs {compared}: {before:+d} -> {after:+d} points"
            + (f" ({change})" if change else ""))
    return Cause(SCORE, text, rule=rule, location=_location(where), node=compared, old_points=before,
                 new_points=after)


def _weight_change(old: Any, new: Any) -> str:
    parts = []
    if old.weight != new.weight:
        parts.append(f"weight {old.weight} -> {new.weight}")
    if old.normalize != new.normalize:
        parts.append(f"normalize {old.normalize} -> {new.normalize}")
    return ", ".join(parts)


# ------------------------------------------------------------------------------------------- the runs


def _same_rule(a: Any, b: Any) -> bool:
    """Two compiled score rules that score every node alike: same name, place, weight, normalisation and
    checked AST (an inline file of the same name in two configurations differs in its AST)."""
    if a != b:
        return False
    ca, cb = getattr(a, "checked", None), getattr(b, "checked", None)
    return ca is not None and cb is not None and ca.rule == cb.rule


def _changed_scores(new_set: PolicySet, old_set: PolicySet) -> frozenset[str]:
    """Names of the score rules in one set only, or different in the two."""
    old = {r.name: r for r in old_set.scores}
    new = {r.name: r for r in new_set.scores}
    return frozenset(name for name in {*old, *new}
                     if name not in old or name not in new or not _same_rule(new[name], old[name]))


def _with_scores(policy_set: PolicySet, names: frozenset[str]) -> PolicySet:
    """``policy_set`` with only the score rules ``names`` (same filters, so the same feasible nodes); its
    digest is marked so no cache can take it for the full set."""
    return dataclasses.replace(policy_set, scores=tuple(r for r in policy_set.scores if r.name in names),
                               digest=f"{policy_set.digest}+scores:{','.join(sorted(names))}")



class _Watching:
    """The NEW run's evaluator: decides exactly as ``inner`` (same calls, same random draws) and, when the
    decision differs from where OLD left the pod, evaluates OLD on the same state and keeps the cause."""

    def __init__(self, inner: Evaluator, new_set: PolicySet, old_set: PolicySet,
                 old_nodes: Mapping[str, str | None], seed: int, engine: str) -> None:
        self.inner = inner
        self.old_evaluator = make_evaluator(engine)
        self.old_set = old_set
        self.old_nodes = old_nodes
        self.seed = seed
        self.causes: dict[str, Cause] = {}
        # Reading a decision's per-rule scores builds them for every node and rule (tens of ms on 1,000
        # nodes); only the score rules that differ between the sets can change a node pair's ranking when
        # both sets keep the same nodes, so those are evaluated apart, with the same filters.
        changed = _changed_scores(new_set, old_set)
        self.reduced = [(_with_scores(s, changed), make_evaluator(engine)) for s in (new_set, old_set)]

    def evaluate(self, policy_set: PolicySet, snapshot: ClusterSnapshot, pod: dict[str, Any], *,
                 rng: random.Random, rejected: Mapping[int, NodeVerdict] | None = None) -> Decision:
        # ``rejected``: nodes held by nominated pods (see Driver.evaluate); OLD is judged with them held too
        held: dict[str, Any] = {"rejected": rejected} if rejected else {}
        decision = self.inner.evaluate(policy_set, snapshot, pod, rng=rng, **held)
        key = decision.pod
        if key not in self.old_nodes or decision.node == self.old_nodes[key]:
            self.causes.pop(key, None)
            return decision
        # Its own random source: the NEW run's draws stay those of a plain simulation.
        old = self.old_evaluator.evaluate(self.old_set, snapshot, pod, rng=random.Random(self.seed), **held)

        def points() -> tuple[Decision, Decision]:
            if set(decision.feasible) != set(old.feasible):  # normalised over other nodes: every rule may differ
                return decision, old
            (new_scores, new_eval), (old_scores, old_eval) = self.reduced
            return (new_eval.evaluate(new_scores, snapshot, pod, rng=random.Random(self.seed)),
                    old_eval.evaluate(old_scores, snapshot, pod, rng=random.Random(self.seed)))

        self.causes[key] = explain_move(self.old_nodes[key], decision.node, decision, old, policy_set, self.old_set,
                                        points)
        return decision

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def compare(
    old_set: PolicySet,
    new_set: PolicySet,
    objects: Iterable[dict[str, Any]],
    *,
    seed: int = 0,
    engine: str = "vector",
    prepared: Prepared | None = None,
    progress: Callable[[str], Callable[[int, int], None] | None] | None = None,
) -> Comparison:
    """Schedule ``objects`` under ``old_set`` then ``new_set`` (same snapshot, order and seed) and explain
    every pod placed differently (see the module docstring).

    ``prepared``: :func:`prepare` of ``objects`` when the caller already checked it; it is used by the OLD
    run (a run uses its snapshot up), the NEW run prepares its own. ``progress(label)`` returns the
    progress callback of the run named ``label`` (``"OLD"``, ``"NEW"``), or None.
    """
    objects = list(objects)
    first = prepared if prepared is not None else prepare(objects)
    now = first.snapshot.now_ns  # both runs decide at the same instant (the caller's --now)
    old = simulate(old_set, objects, seed=seed, evaluator=make_evaluator(engine), prepared=first, detail=False,
                   progress=progress("OLD") if progress is not None else None)
    old_nodes = {d.pod: d.node for d in old.decisions}
    watching = _Watching(make_evaluator(engine), new_set, old_set, old_nodes, seed, engine)
    again = prepare(objects) if now is None else prepare(objects, now)
    new = simulate(new_set, objects, seed=seed, evaluator=watching, prepared=again, detail=False,
                   progress=progress("NEW") if progress is not None else None)
    moves: list[Move] = []
    for decision in new.decisions:
        if decision.pod not in old_nodes or decision.node == old_nodes[decision.pod]:
            continue
        cause = watching.causes.get(decision.pod) or Cause(SCORE, "the two sets rank the nodes differently here")
        moves.append(Move(decision.pod, old_nodes[decision.pod], decision.node, cause))
    return Comparison(old, new, tuple(moves), seed)
