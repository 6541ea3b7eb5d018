"""The binder's answers, with a fake API client (no server)."""

from __future__ import annotations

import random
from typing import Any

from policyscheduler.cycle import ClusterCache, Cycle, SchedulingQueue
from policyscheduler.evaluation import make_evaluator
from policyscheduler.kube.binder import Binder
from policyscheduler.kube.rest import ApiError
from tests.evaluation.policies import default_policies


class FakeClient:
    def __init__(self, answers: list[Any], pod_node: str | None) -> None:
        self.answers, self.pod_node, self.posts = answers, pod_node, 0

    def post(self, path: str, body: Any, **query: Any) -> Any:
        self.posts += 1
        answer = self.answers.pop(0)
        if isinstance(answer, ApiError):
            raise answer
        return answer

    def get(self, path: str, **query: Any) -> Any:
        return {"metadata": {"name": "p", "uid": "uid-p"}, "spec": {"nodeName": self.pod_node}}


def bind_once(client: FakeClient) -> tuple[str, int]:
    node = {"kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "2", "pods": "10"}}}
    pod = {"kind": "Pod", "metadata": {"name": "p", "namespace": "default", "uid": "uid-p"},
           "spec": {"containers": [{"name": "c", "image": "x"}]}}
    results: list[str] = []
    cycle: Cycle | None = None
    binder = Binder(client, lambda: cycle, workers=1,  # type: ignore[arg-type,return-value]
                    on_done=lambda attempt, result, seconds, error: results.append(result))
    binder.retry_delays = (0.0, 0.0)
    cycle = Cycle(SchedulingQueue(), ClusterCache([node]), make_evaluator("reference"), default_policies(),
                  binder.bind, rng=random.Random(0))
    cycle.queue.add("p", pod)
    cycle.schedule_one()
    assert binder.drain(10)
    binder.shutdown()
    return results[0], client.posts


def test_lost_answer_then_409_on_our_node_counts_as_bound() -> None:
    lost = ApiError("POST", "/binding", 0, detail="connection reset")
    conflict = ApiError("POST", "/binding", 409, '{"message": "already assigned"}')
    assert bind_once(FakeClient([lost, conflict], pod_node="n1")) == ("bound", 2)


def test_409_on_another_node_is_a_conflict() -> None:
    conflict = ApiError("POST", "/binding", 409, '{"message": "already assigned"}')
    assert bind_once(FakeClient([conflict], pod_node="elsewhere")) == ("conflict", 1)


def test_persistent_server_errors_give_up_after_retries() -> None:
    down = ApiError("POST", "/binding", 503, "")
    assert bind_once(FakeClient([down, down, down], pod_node=None)) == ("error", 3)
