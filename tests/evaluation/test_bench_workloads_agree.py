"""Differential test on the benchmark's heterogeneous workloads: both backends decide every pod alike.

bench/workloads.py's ``heterogeneous`` workload and its scheduler_perf-like ``het-*`` variants are what
issue 25's numbers are measured on: running pods with inter-pod terms (required anti-affinity, preferred
affinity with selectors of their own), pending pods of many apps each a distinct shape, and churn --
running pods deleted between two scheduling cycles, often ones with terms, so the state's term indexes
and per-domain sums change under the per-shape caches and delta rows. Here a small cluster of that
generator (tens of nodes) schedules each workload's stream one pod at a time, the way bench/engine.py
does (evaluate, assume the chosen node, apply the churn), once per backend on its own snapshot; every
:class:`Decision` must be equal -- verdicts, reasons, scores, chosen node -- and most pods placed.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from bench import workloads
from policyscheduler.evaluation import Decision, ReferenceEvaluator, diff_decisions, make_evaluator
from policyscheduler.simulate.run import prepare
from tests.gen.policysets import default_policy_set

STREAM = 36
"""Pending pods per (workload, cluster): with churn every 4th pod, 8-9 running pods go between pods."""


@pytest.fixture(autouse=True)
def _vector_path_on_small_clusters() -> Any:
    """As in test_backends_agree.py: the vector engine hands a rule to the reference on clusters this
    small; without this the comparison would be the reference against itself."""
    from policyscheduler.evaluation.vector import backend

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(backend, "SMALL", 0)
        yield


def _run(evaluator: Any, cluster: list[dict[str, Any]], pods: list[dict[str, Any]],
         churn: dict[int, dict[str, Any]]) -> list[Decision]:
    """bench/engine.py's loop: every pod decided on the state its predecessors and the churn left."""
    policies = default_policy_set()
    snapshot, queue = prepare(cluster + pods)
    decisions = []
    for done, pod in enumerate(queue):
        decision = evaluator.evaluate(policies, snapshot, pod, rng=random.Random(done))
        if decision.node is not None:
            snapshot.assume(pod, decision.node)
        gone = churn.get(done)
        if gone is not None:
            snapshot.remove_pod(gone)
        decisions.append(decision)
    return decisions


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("workload", ["heterogeneous", *workloads.HET_WORKLOADS])
def test_backends_agree_on_the_heterogeneous_workloads_with_churn(workload: str, seed: int) -> None:
    # seed 1 runs on nodes of four sizes in racks (bench/e2e.py's heterogeneous cluster), seed 0 on equal ones
    cluster = workloads.base_cluster(24 + 8 * seed, 6, seed=seed, terms=True, varied=bool(seed))
    pods = workloads.pending_pods(workload, STREAM, seed=seed)
    churn = workloads.churn_plan(workload, cluster, STREAM, seed)
    assert len(churn) >= STREAM // workloads.CHURN_EVERY - 1
    assert any(p["spec"].get("affinity") for p in churn.values())  # term indexes change between pods
    reference = _run(ReferenceEvaluator(), cluster, pods, churn)
    vector = _run(make_evaluator("vector"), cluster, pods, churn)
    for index, (left, right) in enumerate(zip(reference, vector)):
        assert left == right, f"{workload} seed {seed} pod {index}:\n  " + "\n  ".join(diff_decisions(left, right))
    placed = sum(d.node is not None for d in reference)
    assert placed >= 0.8 * STREAM, f"{workload}: only {placed} of {STREAM} pods placed"
    # the scores separate nodes (a stream where every node ties would compare little)
    assert sum(len(d.top) < len(d.feasible) for d in reference if d.node is not None) >= placed // 2
