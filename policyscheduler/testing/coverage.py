"""Coverage of a policy test run: which filters, score rules and clauses some case exercised.

What "covered" means, rule kind by rule kind (the same text is in the README and in the output):

* a **filter** is covered when some case saw it *reject* a node (a filter that only ever passes is not
  tested: deleting it would change no outcome);
* a **score rule** is covered when some case saw it *score* a feasible node it applies to (not ignored);
* a **clause** is covered when some case saw it *act*: a ``require``/``reject`` emit its reason, a
  ``let``/``value`` be computed, an ``applies when``/``ignore node when`` hold.

Filters and score rules are counted apart, so a set with many filters cannot hide untested scores.
Only the rules of the files under test count (not the bundled defaults they are layered on); a file that
only disables or overrides defaults defines no rule, and the report says so instead of "100% of 0".
"""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["Coverage", "MEANING"]

MEANING = ("covered = a filter rejected a node, a score rule scored a feasible node it applies to, "
           "a clause acted (emitted its reason, was computed, held), in some case")


def _pct(hit: int, total: int) -> float:
    return 100.0 if total == 0 else round(100.0 * hit / total, 1)


@dataclasses.dataclass
class Coverage:
    """Rules and clauses of the sets under test, and which ones some case exercised."""

    rules: dict[str, str] = dataclasses.field(default_factory=dict)  # "filter x" / "score x" -> location
    clauses: dict[str, str] = dataclasses.field(default_factory=dict)  # location -> "filter x: keyword"
    rules_hit: set[str] = dataclasses.field(default_factory=set)
    clauses_hit: set[str] = dataclasses.field(default_factory=set)

    def counts(self, kind: str) -> tuple[int, int]:
        """(covered, total) rules of ``kind`` (``"filter"``, ``"score"`` or ``"preempt"``)."""
        names = [r for r in self.rules if r.startswith(kind + " ")]
        return sum(1 for r in names if r in self.rules_hit), len(names)

    @property
    def filter_percent(self) -> float:
        return _pct(*self.counts("filter"))

    @property
    def score_percent(self) -> float:
        return _pct(*self.counts("score"))

    @property
    def rule_percent(self) -> float:
        return _pct(len(self.rules_hit & set(self.rules)), len(self.rules))

    @property
    def clause_percent(self) -> float:
        return _pct(len(self.clauses_hit & set(self.clauses)), len(self.clauses))

    def summary(self) -> str:
        """The one-line text summary: filters and scores apart, then clauses."""
        if not self.rules:
            return ("coverage: no rules under test (the files under test define no filter, score or preempt rule; "
                    "they only disable or override defaults: assert that with want.absent)")
        fh, ft = self.counts("filter")
        sh, st = self.counts("score")
        ch, ct = len(self.clauses_hit & set(self.clauses)), len(self.clauses)
        ph, pt = self.counts("preempt")
        preempts = f"preempt rules {_pct(ph, pt)}% ({ph}/{pt}), " if pt else ""
        return (f"coverage: filters {self.filter_percent}% ({fh}/{ft}), scores {self.score_percent}% ({sh}/{st}), "
                f"{preempts}clauses {self.clause_percent}% ({ch}/{ct})")

    def to_json(self) -> dict[str, Any]:
        fh, ft = self.counts("filter")
        sh, st = self.counts("score")
        return {
            "meaning": MEANING,
            "filters": {"covered": fh, "total": ft, "percent": self.filter_percent},
            "scores": {"covered": sh, "total": st, "percent": self.score_percent},
            "preempts": {"covered": self.counts("preempt")[0], "total": self.counts("preempt")[1],
                         "percent": _pct(*self.counts("preempt"))},
            "rule_percent": self.rule_percent,
            "clause_percent": self.clause_percent,
            "rules": {r: r in self.rules_hit for r in self.rules},
            "uncovered_rules": [{"rule": r, "location": loc} for r, loc in self.rules.items() if r not in self.rules_hit],
            "uncovered_clauses": [{"clause": what, "location": loc} for loc, what in self.clauses.items()
                                  if loc not in self.clauses_hit],
        }
