"""``policyscheduler run`` when the control plane misbehaves: an API server restart with an etcd
compaction in between (watches must relist after 410 Gone), and a SIGKILLed leader.

Each test gets a control plane of its own: stopping the API server must not disturb other tests.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane import fakes
from tests.controlplane.api import Api
from tests.controlplane.harness import ControlPlane, compact_etcd, start_apiserver, stop_apiserver
from tests.kube.live import RunProcess, pods, scheduled_events, violations, wait_all_bound, wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture
def cp() -> Iterator[ControlPlane]:
    """A control plane per test (not per module, as in tests/conftest.py): these tests stop the API server
    and compact etcd."""
    plane = ControlPlane.start()
    try:
        yield plane
    finally:
        plane.stop()


def _pods(prefix: str, count: int, ns: str, scheduler: str = "policy-scheduler") -> list[dict[str, Any]]:
    return fakes.make_pods(count, ns, prefix=prefix, scheduler_name=scheduler, cpu="100m", memory="64Mi")


def _wait_scheduled_events(api: Api, ns: str, controller: str, names: list[str]) -> None:
    def each_has_one() -> bool:
        counts = scheduled_events(api, ns, controller)
        return all(counts[n] >= 1 for n in names)

    wait_until(each_has_one, 90, f"a Scheduled event from {controller} for every pod")


def _bound_lines(*runs: RunProcess) -> Counter[str]:
    return Counter(line["pod"] for run in runs for line in run.lines() if line.get("msg") == "bound")


def test_apiserver_restart_and_compaction_every_pod_bound_exactly_once(cp: ControlPlane, tmp_path: Path) -> None:
    """Ours and the real kube-scheduler (its own pods, same nodes) go through the same restart: each binds
    every pod and writes one Scheduled event per pod, however many of its writes lost their answers."""
    api, ns = cp.api(), "default"
    fakes.create_all(api, fakes.make_nodes(20, prefix="n", cpu="8", memory="64Gi"))
    run = RunProcess(cp, tmp_path / "run.log", "--engine", "reference")
    run.wait_log("started", timeout=60)
    kube = cp.start_scheduler({"profiles": [{"schedulerName": "kube-ref"}]})
    first, kube_first = _pods("before", 150, ns), _pods("kube-before", 150, ns, "kube-ref")
    fakes.create_all(api, first + kube_first)
    wait_until(lambda: sum(1 for p in pods(api, ns) if p["spec"].get("nodeName")) >= 40, 30, "some pods bound")

    stop_apiserver(cp)
    down = time.monotonic()
    revision = compact_etcd(cp)  # every resourceVersion our watches hold is now compacted away
    time.sleep(max(0.0, 10.0 - (time.monotonic() - down)))
    start_apiserver(cp)
    api = cp.api()
    second, kube_second = _pods("after", 50, ns), _pods("kube-after", 50, ns, "kube-ref")
    fakes.create_all(api, second + kube_second)

    names = [p["metadata"]["name"] for p in first + second]
    kube_names = [p["metadata"]["name"] for p in kube_first + kube_second]
    wait_all_bound(api, ns, names + kube_names, timeout=90)
    nodes = api.list_items("/api/v1/nodes")
    assert violations(pods(api, ns), nodes) == []
    # Scheduled events are written by a low-priority writer (after the burst, retried after the restart)
    for controller, wanted in (("policy-scheduler", names), ("kube-ref", kube_names)):
        _wait_scheduled_events(api, ns, controller, wanted)
    time.sleep(2.0)  # a late duplicate would show up now
    ours, theirs = scheduled_events(api, ns, "policy-scheduler"), scheduled_events(api, ns, "kube-ref")
    assert max(theirs.values()) == 1, [n for n, c in theirs.items() if c > 1]  # kube-scheduler: one each
    assert max(ours.values()) == 1, [n for n, c in ours.items() if c > 1]  # never a second Scheduled event
    assert all(ours[p["metadata"]["name"]] == 1 for p in second)
    bound = _bound_lines(run)
    assert max(bound.values()) == 1  # no bind of ours succeeded twice
    assert run.child.alive()
    relisted = [line for line in run.lines() if "410" in str(line.get("msg", "")) + str(line.get("error", ""))
                or line.get("msg") == "watch Pod: list delivered"]
    assert len([line for line in relisted if line.get("msg") == "watch Pod: list delivered"]) >= 2, \
        f"the Pod watch never relisted after compacting to revision {revision}"
    cp.stop_scheduler(kube)
    assert run.terminate() == 0


def test_leader_killed_standby_takes_over_within_lease_duration(cp: ControlPlane, tmp_path: Path) -> None:
    api, ns = cp.api(), "default"
    fakes.create_all(api, fakes.make_nodes(10, prefix="n", cpu="8", memory="64Gi"))
    lease = ("--leader-elect", "--leader-elect-lease-namespace", "kube-system", "--leader-elect-lease-duration", "6",
             "--leader-elect-renew-deadline", "4", "--leader-elect-retry-period", "1", "--engine", "reference")
    a = RunProcess(cp, tmp_path / "a.log", *lease)
    wait_until(lambda: any("became leader" in str(line.get("msg")) for line in a.lines()), 30, "a leader")
    b = RunProcess(cp, tmp_path / "b.log", *lease)
    b.wait_log("started", timeout=60)
    first = _pods("one", 60, ns)
    fakes.create_all(api, first)
    wait_all_bound(api, ns, [p["metadata"]["name"] for p in first], timeout=60)
    assert not any("became leader" in str(line.get("msg")) for line in b.lines())  # the standby idles
    assert not _bound_lines(b)

    a.kill()
    killed = time.monotonic()
    second = _pods("two", 60, ns)
    fakes.create_all(api, second)
    wait_until(lambda: any("became leader" in str(line.get("msg")) for line in b.lines()), 6 + 5, "takeover")
    took = time.monotonic() - killed
    wait_all_bound(api, ns, [p["metadata"]["name"] for p in second], timeout=30)
    bound = _bound_lines(a, b)
    assert max(bound.values()) == 1 and len(bound) == 120
    # the killed leader's held-back Scheduled events die with it; the new leader's arrive
    wait_until(lambda: (c := scheduled_events(api, ns, "policy-scheduler")) and
               all(c[p["metadata"]["name"]] >= 1 for p in second), 30, "Scheduled events of the new leader")
    events = scheduled_events(api, ns, "policy-scheduler")
    assert max(events.values()) == 1
    print(f"\nstandby took over {took:.1f}s after the leader was SIGKILLed (lease 6s)")
    assert b.terminate() == 0
    lease_obj = api.get("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/policy-scheduler")
    assert not lease_obj["spec"].get("holderIdentity")  # released on SIGTERM
