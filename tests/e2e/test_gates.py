"""Scheduling gates on the real control plane, ours beside the real kube-scheduler (v1.35).

The same scenario runs through both, one pod each (``gated`` for policy-scheduler, ``gated-ref`` for a
kube-scheduler profile named ``kube-ref``), on the same nodes:

1. the pod is created with two gates: neither scheduler attempts or binds it; both count it in
   ``pending_pods{queue="gated"}`` and ours logs it once (``gated``, with kube-scheduler's PreEnqueue
   text); its PodScheduled condition is the API server's ``SchedulingGated`` one, the same for both,
   and neither scheduler writes to the pod (its resourceVersion does not move);
2. one gate is removed: still gated, still no attempt, no second log line;
3. the last gate is removed: the pod is bound within 1 s (measured for both schedulers and printed),
   with exactly one attempt.
"""

from __future__ import annotations

import re
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3

from policyscheduler.cycle.gates import GATED_CONDITION_MESSAGE, GATED_REASON
from tests.controlplane import fakes
from tests.controlplane.harness import ControlPlane, Scheduler
from tests.kube.live import LiveEnv, RunProcess, events, wait_until

pytestmark = pytest.mark.e2e

GATES = ["example.com/quota", "example.com/admission"]
SETTLE = 1.5
"""Seconds both schedulers get to (wrongly) act on a gated pod before we look."""


def sample_sum(text: str, name: str, **labels: str) -> float:
    """The sum of the samples of ``name`` whose labels include ``labels`` (Prometheus text exposition)."""
    total = 0.0
    for line in text.splitlines():
        if not (line.startswith(name + "{") or line.startswith(name + " ")):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}")[0])) if "{" in line else {}
        if all(found.get(k) == v for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


class Pair:
    """Both schedulers, their metrics and the two pods."""

    def __init__(self, env: LiveEnv, run: RunProcess, kube: Scheduler) -> None:
        self.env, self.run, self.kube = env, run, kube
        self.address = run.find("started")[0]["status_address"]
        cp = env.cp
        self._kube_http = urllib3.PoolManager(cert_reqs="CERT_REQUIRED", ca_certs=str(cp.ca.pair.cert_file),
                                              cert_file=str(cp.admin.cert_file), key_file=str(cp.admin.key_file),
                                              retries=False, timeout=urllib3.Timeout(connect=5.0, read=10.0))

    def ours(self) -> str:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(f"http://{self.address}/metrics", timeout=5) as resp:
            return str(resp.read().decode())

    def theirs(self) -> str:
        resp = self._kube_http.request("GET", f"{self.kube.url}/metrics")
        assert resp.status == 200, resp.data[:200]
        return str(resp.data.decode())

    def counts(self) -> dict[str, tuple[float, float, float]]:
        """Per scheduler: (pods gated, attempts of any result, binds)."""
        ours, theirs = self.ours(), self.theirs()
        return {
            "ours": (sample_sum(ours, "scheduler_pending_pods", queue="gated"),
                     sample_sum(ours, "scheduler_schedule_attempts_total"),
                     sample_sum(ours, "scheduler_framework_extension_point_duration_seconds_count",
                                extension_point="Bind")),
            "kube": (sample_sum(theirs, "scheduler_pending_pods", queue="gated"),
                     sample_sum(theirs, "scheduler_schedule_attempts_total", profile="kube-ref"),
                     sample_sum(theirs, "scheduler_schedule_attempts_total", profile="kube-ref", result="scheduled")),
        }

    def pod(self, name: str) -> dict[str, Any]:
        got: dict[str, Any] = self.env.api.get(f"/api/v1/namespaces/{self.env.ns}/pods/{name}")
        return got

    def set_gates(self, name: str, gates: list[str]) -> dict[str, Any]:
        patched: dict[str, Any] = self.env.api.patch(f"/api/v1/namespaces/{self.env.ns}/pods/{name}",
                                                     {"spec": {"schedulingGates": [{"name": g} for g in gates]}})
        return patched


def condition(pod: dict[str, Any]) -> dict[str, Any] | None:
    return next((c for c in pod["status"].get("conditions") or [] if c["type"] == "PodScheduled"), None)


@pytest.fixture
def env(cp: ControlPlane, tmp_path: Path) -> Iterator[LiveEnv]:
    e = LiveEnv(cp, tmp_path, "gates")
    try:
        yield e
    finally:
        e.cleanup()


def test_gated_pod_waits_unattempted_then_binds_within_a_second_like_kube_scheduler(env: LiveEnv) -> None:
    fakes.create_all(env.api, fakes.make_nodes(2, prefix=f"{env.ns}-n", owner=env.ns))
    kube = env.cp.start_scheduler({"profiles": [{"schedulerName": "kube-ref"}]})
    try:
        pair = Pair(env, env.start(), kube)
        made = {}
        for name, scheduler in (("gated", "policy-scheduler"), ("gated-ref", "kube-ref")):
            p = fakes.make_pod(name, env.ns, scheduler_name=scheduler, owner=env.ns)
            p["spec"]["schedulingGates"] = [{"name": g} for g in GATES]
            made[name] = fakes.create(env.api, p)

        # 1. created gated: in the gated pool of both, no attempt, no bind, no write
        wait_until(lambda: all(c[0] == 1 for c in pair.counts().values()), 30, "both schedulers to count 1 gated pod")
        time.sleep(SETTLE)
        assert pair.counts() == {"ours": (1, 0, 0), "kube": (1, 0, 0)}
        stored = {name: pair.pod(name) for name in made}
        for name, pod in stored.items():
            assert not pod["spec"].get("nodeName")
            assert pod["metadata"]["resourceVersion"] == made[name]["metadata"]["resourceVersion"], name
        ours, theirs = condition(stored["gated"]), condition(stored["gated-ref"])
        assert ours is not None and theirs is not None
        assert (ours["status"], ours["reason"], ours["message"]) == (theirs["status"], theirs["reason"], theirs["message"])
        assert (ours["status"], ours["reason"], ours["message"]) == ("False", GATED_REASON, GATED_CONDITION_MESSAGE)
        gated_lines = wait_until(lambda: pair.run.find("gated"), 10, "our 'gated' log line")
        assert gated_lines[0]["pod"] == f"{env.ns}/gated" and gated_lines[0]["queue"] == "gated"
        assert gated_lines[0]["gates"] == GATES
        assert gated_lines[0]["message"] == "waiting for scheduling gates: [example.com/quota example.com/admission]"

        # 2. one of the two gates removed: still gated for both, still nothing written
        after = {name: pair.set_gates(name, GATES[1:]) for name in made}
        time.sleep(SETTLE)
        assert pair.counts() == {"ours": (1, 0, 0), "kube": (1, 0, 0)}
        for name in made:
            assert pair.pod(name)["metadata"]["resourceVersion"] == after[name]["metadata"]["resourceVersion"], name
        assert len(pair.run.find("gated")) == 1  # logged once, not on every update
        assert not [e for e in events(env.api, env.ns) if e["regarding"]["name"] in made]

        # 3. the last gate removed: bound within a second, one attempt each
        took = {}
        for name in ("gated", "gated-ref"):
            started = time.monotonic()
            pair.set_gates(name, [])
            while not pair.pod(name)["spec"].get("nodeName"):
                assert time.monotonic() - started < 10, f"{name} not bound 10 s after its last gate was removed"
                time.sleep(0.01)
            took[name] = time.monotonic() - started
        print(f"\nbound after the last gate was removed: policy-scheduler {took['gated'] * 1000:.0f} ms, "
              f"kube-scheduler {took['gated-ref'] * 1000:.0f} ms (poll every 10 ms)")
        assert took["gated"] <= 1.0 and took["gated-ref"] <= 1.0, took
        wait_until(lambda: pair.counts() == {"ours": (0, 1, 1), "kube": (0, 1, 1)}, 10,
                   "one scheduled attempt and no gated pod on both sides")
        ungated = wait_until(lambda: pair.run.find("ungated"), 10, "our 'ungated' log line")
        assert [line["pod"] for line in ungated] == [f"{env.ns}/gated"]
        assert not [line for line in pair.run.lines() if line.get("level") == "error"]
        assert pair.run.terminate() == 0
    finally:
        env.cp.stop_scheduler(kube)
