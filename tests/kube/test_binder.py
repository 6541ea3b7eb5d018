"""The binder against the real API server: pipelined binds, a lost answer, 409 and 404, a server that
stays away. A TCP proxy (tests/kube/proxy.py) loses answers the way a dying connection does."""

from __future__ import annotations

import random
import socket
from typing import TYPE_CHECKING, Any

import pytest

from policyscheduler.cycle import Attempt, ClusterCache, Cycle, SchedulingQueue
from policyscheduler.evaluation import make_evaluator
from policyscheduler.kube import RestClient
from policyscheduler.kube.binder import Binder
from tests.controlplane import fakes
from tests.evaluation.policies import default_policies
from tests.kube.proxy import Proxy, client_for

if TYPE_CHECKING:
    from tests.conftest import Kube
    from tests.controlplane.harness import ControlPlane

pytestmark = pytest.mark.e2e



class Binding:
    """A cycle with the default policies on ``nodes`` whose attempts go to a :class:`Binder`; ``results``:
    pod name -> (result, chosen node, error)."""

    def __init__(self, client: RestClient, nodes: list[dict[str, Any]]) -> None:
        self.results: dict[str, tuple[str, str | None, str | None]] = {}
        self.binder = Binder(client, lambda: self.cycle, lanes=2, on_done=self._done)
        self.binder.retry_delays = (0.05, 0.05)
        self.cycle = Cycle(SchedulingQueue(), ClusterCache(nodes), make_evaluator("vector"), default_policies(),
                           self.binder.bind, rng=random.Random(0))

    def _done(self, attempt: Attempt, result: str, seconds: float, error: str | None) -> None:
        name = attempt.pod["metadata"]["name"]
        assert name not in self.results, f"{name} reported twice"
        self.results[name] = (result, attempt.node, error)

    def run(self, pods: list[dict[str, Any]]) -> None:
        for pod in pods:
            self.cycle.queue.add(pod["metadata"]["name"], pod)
        while self.cycle.schedule_one() is not None:
            pass
        assert self.binder.drain(30)


def bind_all(client: RestClient, nodes: list[dict[str, Any]], pods: list[dict[str, Any]],
             ) -> tuple[dict[str, tuple[str, str | None, str | None]], Binder[Any], Cycle]:
    """Schedule ``pods`` on ``nodes`` and bind them; the results, the binder and the cycle."""
    binding = Binding(client, nodes)
    binding.run(pods)
    binding.binder.shutdown()
    return binding.results, binding.binder, binding.cycle


def pending(kube: Kube, n: int, prefix: str = "p") -> list[dict[str, Any]]:
    return kube.create_pods(n, prefix=prefix, scheduler_name="nobody")


def assumed(cycle: Cycle) -> int:
    """Pods still assumed once the binder's forgets are applied (the next snapshot applies them)."""
    cycle.cache.snapshot()
    return cycle.cache.counts()["assumed_pods"]


def on_server(kube: Kube) -> dict[str, str | None]:
    return {p["metadata"]["name"]: p["spec"].get("nodeName")
            for p in kube.api.list_items(f"/api/v1/namespaces/{kube.namespace}/pods")}


def test_every_pod_lands_on_the_node_chosen_for_it(kube: Kube, control_plane: ControlPlane) -> None:
    nodes = kube.create_nodes(5)
    pods = pending(kube, 60)
    results, binder, cycle = bind_all(client_for(control_plane), nodes, pods)
    assert {r for r, _, _ in results.values()} == {"bound"} and len(results) == 60
    assert on_server(kube) == {name: node for name, (_, node, _) in results.items()}
    assert binder.counts == {"bound": 60} and binder.in_flight == 0
    assert assumed(cycle) == 60  # assumed until the watch confirms them


def test_a_lost_answer_then_409_on_our_node_counts_as_bound(kube: Kube, proxy: Proxy,
                                                             control_plane: ControlPlane) -> None:
    nodes = kube.create_nodes(2)
    pods = pending(kube, 2)
    client = client_for(control_plane, f"https://127.0.0.1:{proxy.port}")
    client.get(f"/api/v1/namespaces/{kube.namespace}")  # the client pool's connection, for the retry
    original_post = client.post
    retried: list[str] = []

    def post(path: str, body: Any, **query: Any) -> Any:
        retried.append(path)
        return original_post(path, body, **query)

    client.post = post  # type: ignore[method-assign]  # count the retry POSTs; they still go to the server
    binding = Binding(client, nodes)
    binding.run(pods[:1])  # the pipeline's connection is open now
    proxy.cut_next_answer()  # the server binds the next pod; its answer is lost
    binding.run(pods[1:])
    binding.binder.shutdown()
    name = pods[1]["metadata"]["name"]
    result, node, error = binding.results[name]
    assert (result, error) == ("bound", None)
    assert on_server(kube)[name] == node
    assert retried == [f"/api/v1/namespaces/{kube.namespace}/pods/{name}/binding"]  # the retry met the 409
    assert binding.binder.counts == {"bound": 2}


def test_409_on_another_node_is_a_conflict(kube: Kube, control_plane: ControlPlane) -> None:
    nodes = kube.create_nodes(2)
    pods = pending(kube, 1)
    name = pods[0]["metadata"]["name"]
    fakes.bind(kube.api, kube.namespace, name, nodes[1]["metadata"]["name"])  # someone else was first
    results, _, cycle = bind_all(client_for(control_plane), nodes[:1], pods)
    assert results[name][0] == "conflict" and "409" in str(results[name][2])
    assert on_server(kube)[name] == nodes[1]["metadata"]["name"]
    assert assumed(cycle) == 0  # forgotten


def test_a_deleted_pod_is_gone(kube: Kube, control_plane: ControlPlane) -> None:
    nodes = kube.create_nodes(1)
    pods = pending(kube, 1)
    name = pods[0]["metadata"]["name"]
    kube.api.delete(f"/api/v1/namespaces/{kube.namespace}/pods/{name}", gracePeriodSeconds=0)
    results, _, cycle = bind_all(client_for(control_plane), nodes, pods)
    assert results[name][0] == "gone"
    assert assumed(cycle) == 0


def test_a_server_that_stays_away_gives_up_after_the_retries(kube: Kube, control_plane: ControlPlane) -> None:
    nodes = kube.create_nodes(1)
    pods = pending(kube, 3)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once closed
    results, binder, cycle = bind_all(client_for(control_plane, f"https://127.0.0.1:{port}"), nodes, pods)
    assert {r for r, _, _ in results.values()} == {"error"}
    assert all("ConnectionRefusedError" in str(e) for _, _, e in results.values())
    assert binder.counts == {"error": 3}
    assert assumed(cycle) == 0
    assert cycle.queue.pending()["backoff"] == 3  # retried after backoff, not dropped


def test_a_bind_after_shutdown_is_an_error_not_a_crash(kube: Kube, control_plane: ControlPlane) -> None:
    """A pod decided while the scheduler shuts down (SIGTERM, a lost lease) gets ``error`` and goes back to
    the queue; the scheduling loop sees no exception."""
    nodes = kube.create_nodes(1)
    pods = pending(kube, 2)
    binding = Binding(client_for(control_plane), nodes)
    binding.run(pods[:1])
    binding.binder.shutdown()
    binding.run(pods[1:])
    late = pods[1]["metadata"]["name"]
    assert binding.results[late][0] == "error" and "closed" in str(binding.results[late][2])
    assert binding.binder.in_flight == 0
    assert assumed(binding.cycle) == 1  # the first pod only (bound; the watch would confirm it)
    assert on_server(kube)[late] is None
