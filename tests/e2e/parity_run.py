"""One pod at a time: our decision on the API server's view vs the real kube-scheduler's.

Used by ``test_kube_parity.py``. :meth:`ParityRun.check` lists the cluster (what kube-scheduler's
informers see), creates the pod, evaluates the default policies on that listing for the pod *as the
API server stored it* (admission defaults included), waits for kube-scheduler's verdict and compares.
Because the listing is taken right before the create and kube-scheduler handles exactly one pending
pod at a time, both sides decide on the same state; a divergence never cascades, since every next
listing comes from the API server again.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from policyscheduler.evaluation import Decision, diff_decisions, make_evaluator
from policyscheduler.kobjects import namespace_of
from policyscheduler.state import ClusterSnapshot
from tests.controlplane.api import Api
from tests.e2e import parity_cluster as pc
from tests.e2e.parity_report import Mismatch, compare


class ParityRun:
    """Runs pods through both schedulers and keeps every decision, outcome and mismatch."""

    def __init__(self, api: Api, policy_set: Any, cluster: pc.DemoCluster) -> None:
        self.api = api
        self.policy_set = policy_set
        self.cluster = cluster
        self.decisions: list[Decision] = []
        self.outcomes: Counter[str] = Counter()
        self.mismatches: list[Mismatch] = []
        self.engine = make_evaluator("vector")  # the default engine decides; the reference must agree
        self.oracle = make_evaluator("reference")

    def check(self, body: dict[str, Any], seed: int) -> tuple[Decision, tuple[str, str]]:
        """Schedule one pod on both sides; an unschedulable pod is deleted again afterwards."""
        listing = pc.list_cluster(self.api)
        snapshot = ClusterSnapshot.from_objects(listing)
        meta = body["metadata"]
        namespace, name = namespace_of(body), meta["name"]
        stored = self.cluster.create_tracked({**body, "kind": "Pod"})
        decision = self.engine.evaluate(self.policy_set, snapshot, stored, rng=random.Random(seed))
        reference = self.oracle.evaluate(self.policy_set, ClusterSnapshot.from_objects(listing), stored,
                                         rng=random.Random(seed))
        assert diff_decisions(decision, reference) == [], diff_decisions(decision, reference)
        # Objects as the API server stores them are never malformed to our object model, so simulate's
        # strictness about malformed fields can never refuse a real `kubectl get -o yaml` snapshot.
        assert snapshot.warnings == [], snapshot.warnings
        self.decisions.append(decision)
        outcome = pc.wait_outcome(self.api, namespace, name)
        self.outcomes[outcome[0]] += 1
        if outcome[0] != "bound":
            pc.delete_pod(self.api, namespace, name)
        mismatch = compare(f"{namespace}/{name}", outcome, decision)
        if mismatch is not None:
            self.mismatches.append(mismatch)
        return decision, outcome

    def summary(self, elapsed: float) -> str:
        """One line: outcomes, how often our best node was unique, and which rules mattered."""
        unique = sum(1 for d in self.decisions if len(d.top) == 1)
        return (f"{len(self.decisions)} pods in {elapsed:.0f}s: kube {dict(self.outcomes)}; "
                f"{unique} placed pods had a single best node; rules exercised {coverage(self.decisions)}")


def coverage(decisions: list[Decision]) -> dict[str, int]:
    """Per rule, on how many pods it made a difference (a filter rejected a node / a score varied)."""
    seen: Counter[str] = Counter()
    for d in decisions:
        for rule in {v.rule for v in d.verdicts.values() if v.rule is not None}:
            seen[f"filter {rule}"] += 1
        for rule, per_node in d.scores.items():
            if len({s.weighted for s in per_node.values()}) > 1:
                seen[f"score {rule}"] += 1
    return dict(sorted(seen.items()))
