"""Both backends preempt alike: whole ``simulate`` runs of the parity test's random preemption scenarios
(priorities, PDBs, affinity among victims, ``Never``), offline, compared placement by placement -- the
nominated node, the victims and every FailedScheduling text included."""

from __future__ import annotations

import random
from typing import Any

import pytest

from policyscheduler.evaluation import make_evaluator
from policyscheduler.simulate.run import simulate
from tests.e2e.test_preemption_parity import Scenario, scenario
from tests.evaluation.policies import default_policies

SCENARIOS = 120


@pytest.fixture(autouse=True)
def _vector_path_on_small_clusters(monkeypatch: pytest.MonkeyPatch) -> None:
    """The vector engine hands a rule to the reference on a few nodes (cheaper there); these scenarios have
    2-4, so without this the vector side would mostly be the reference again."""
    from policyscheduler.evaluation.vector import backend

    monkeypatch.setattr(backend, "SMALL", 0)


def offline(s: Scenario) -> list[dict[str, Any]]:
    """The scenario as the API server would store it: priorities (and ``Never``) from the PriorityClass
    names, running pods' start times, the budgets' ``status.disruptionsAllowed``."""
    objects: list[dict[str, Any]] = [dict(n) for n in s.nodes]

    def prioritised(pod: dict[str, Any]) -> dict[str, Any]:
        spec = dict(pod["spec"])
        name = spec.pop("priorityClassName")
        spec["priority"] = int(name.rsplit("-", 1)[1])
        if name.startswith("pp-never-"):
            spec["preemptionPolicy"] = "Never"
        return {**pod, "spec": spec}

    for pod in s.pods:
        objects.append({**prioritised(pod), "status": {"phase": "Running", "startTime": s.starts[pod["metadata"]["name"]]}})
    for body, allowed in s.budgets:
        objects.append({**body, "status": {"disruptionsAllowed": allowed}})
    objects.append(prioritised(s.preemptor))
    return objects


@pytest.mark.parametrize("block", range(4))
def test_backends_preempt_alike_on_random_scenarios(block: int) -> None:
    rng = random.Random(7_000 + block)
    evaluators = {name: make_evaluator(name) for name in ("reference", "vector")}
    preempted = 0
    for i in range(SCENARIOS // 4):
        objects = offline(scenario(i, rng))
        docs = {name: simulate(default_policies(), objects, seed=i, evaluator=ev).to_json()
                for name, ev in evaluators.items()}
        assert docs["reference"] == docs["vector"], f"block {block} scenario {i}"
        preempted += any("preempted" in p for p in docs["vector"]["placements"])
    assert preempted >= SCENARIOS // 4 // 3, f"only {preempted} scenarios preempted: the generator drifted"
