"""A decision's node lists and maps are built on first use; their lengths are known without building them."""

from __future__ import annotations

import random

from policyscheduler.evaluation import make_evaluator
from policyscheduler.evaluation.decision import LazyList
from policyscheduler.state.snapshot import ClusterSnapshot
from tests.evaluation.policies import default_policies


def test_a_known_length_does_not_build_the_list() -> None:
    built: list[int] = []

    def thunk() -> list[str]:
        built.append(1)
        return ["a", "b", "c"]

    lazy = LazyList(thunk, 3)
    assert len(lazy) == 3 and not built
    assert lazy == ["a", "b", "c"] and built == [1]
    assert len(lazy) == 3 and list(lazy) == ["a", "b", "c"] and built == [1]


def test_feasible_and_top_lengths_match_their_lists() -> None:
    nodes = [{"kind": "Node", "metadata": {"name": f"n{i}", "labels": {"big": str(i % 2 == 0).lower()}},
              "status": {"allocatable": {"cpu": "4" if i % 2 == 0 else "1", "memory": "8Gi", "pods": "10"}}}
             for i in range(6)]
    pod = {"kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "2"}}}]}}
    for engine in ("vector", "reference"):
        decision = make_evaluator(engine).evaluate(default_policies(), ClusterSnapshot.from_objects(nodes), pod,
                                                   rng=random.Random(0))
        feasible, top = len(decision.feasible), len(decision.top)
        assert (feasible, top) == (len(list(decision.feasible)), len(list(decision.top)))
        assert feasible == 3 and 1 <= top <= 3, engine
