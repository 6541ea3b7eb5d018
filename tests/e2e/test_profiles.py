"""Several profiles in one ``policyscheduler run --config`` process, on the real control plane.

Two profiles share one process (one cache, one queue, one lease): ``plain`` runs the default policies,
``ssd-lover`` the defaults plus a strong preference for ``disk=ssd`` nodes read from a watched folder. The
ssd nodes are partly filled, so the defaults' LeastAllocated sends ``plain`` pods to the hdd nodes while
``ssd-lover`` pods go to the ssd ones. Then ``ssd-lover``'s file is edited to prefer hdd: only its digest
changes (metrics, log), ``plain``'s stays, and both keep scheduling.
"""

from __future__ import annotations

import os
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane import fakes, procs
from tests.controlplane.harness import ControlPlane
from tests.kube.live import REPO, RunProcess, events, pods, wait_all_bound, wait_until

pytestmark = pytest.mark.e2e

HEAD = "apiVersion: policyscheduler.io/v1alpha1\nkind: PolicySchedulerConfiguration\n"
PREFER = ('score prefer_{disk} weight 50 normalize none\n'
          '  value if node.labels["disk"] == "{disk}" then 100 else 0\n')


class ConfigRun(RunProcess):
    """``policyscheduler run --config FILE`` (no --scheduler-name: every profile of the file runs)."""

    def __init__(self, cp: ControlPlane, log_file: Path, *args: str) -> None:
        self.log_file = log_file
        argv = [sys.executable, "-m", "policyscheduler", "run", "--kubeconfig", str(cp.kubeconfig),
                "--bind-address", "127.0.0.1:0", *args]
        self.child = procs.Child("policyscheduler-run", argv, log_file, env={**os.environ, "PYTHONPATH": str(REPO)})

    def metrics(self) -> str:
        address = self.find("started")[0]["status_address"]
        with urllib.request.urlopen(f"http://{address}/metrics", timeout=5) as resp:
            return str(resp.read().decode())

    def digests(self) -> dict[str, str]:
        """profile -> digest from ``policyscheduler_policy_info{digest,profile}``."""
        out = {}
        for line in self.metrics().splitlines():
            if line.startswith("policyscheduler_policy_info{"):
                labels = dict(part.split("=", 1) for part in line.split("{", 1)[1].split("}", 1)[0].split(","))
                out[labels["profile"].strip('"')] = labels["digest"].strip('"')
        return out


@pytest.fixture
def ns(cp: ControlPlane) -> Iterator[str]:
    api = cp.api()
    name = f"prof-{uuid.uuid4().hex[:6]}"
    api.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    try:
        yield name
    finally:
        fakes.delete_owned(api, name)
        for p in pods(api, name):
            api.delete(f"/api/v1/namespaces/{name}/pods/{p['metadata']['name']}", gracePeriodSeconds=0)


def _pod(name: str, ns: str, scheduler: str) -> dict[str, Any]:
    return fakes.make_pod(name, ns, scheduler_name=scheduler, cpu="200m", memory="256Mi")


def _create(cp: ControlPlane, objs: list[dict[str, Any]]) -> None:
    fakes.create_all(cp.api(), objs)


def test_two_profiles_schedule_side_by_side_and_reload_independently(cp: ControlPlane, ns: str,
                                                                     tmp_path: Path) -> None:
    api = cp.api()
    nodes = [fakes.make_node(f"{ns}-ssd-{i}", cpu="4", memory="16Gi", labels={"disk": "ssd"}, owner=ns)
             for i in range(3)]
    nodes += [fakes.make_node(f"{ns}-hdd-{i}", cpu="4", memory="16Gi", labels={"disk": "hdd"}, owner=ns)
              for i in range(3)]
    _create(cp, nodes)
    # A quarter of every ssd node is taken: LeastAllocated (the defaults) prefers the empty hdd nodes.
    _create(cp, [fakes.make_pod(f"filler-{i}", ns, node_name=f"{ns}-ssd-{i}", cpu="1", memory="4Gi")
                 for i in range(3)])
    folder = tmp_path / "ssd-lover"
    folder.mkdir()
    (folder / "prefer.policy").write_text(PREFER.format(disk="ssd"))
    config = tmp_path / "config.yaml"
    config.write_text(HEAD + f"""\
clientConnection: {{qps: 500, burst: 1000}}
leaderElection: {{leaderElect: true, leaseName: two-profiles, leaseNamespace: {ns}}}
engine: reference
profiles:
- schedulerName: plain
- schedulerName: ssd-lover
  policies:
  - path: {folder}
- schedulerName: plain-judge
  mode: shadow
  shadows: plain
""")
    run = ConfigRun(cp, tmp_path / "run.log", "--config", str(config), "--policies-poll-interval", "0.2",
                    "--seed", "1")
    try:
        started = run.wait_log("started", timeout=60)
        assert [p["name"] for p in started["profiles"]] == ["plain", "ssd-lover", "plain-judge"]
        assert started["lease_name"] == "two-profiles" and started["kube_api_qps"] == 500
        lease = wait_until(lambda: _lease_holder(api, ns, "two-profiles"), 30, "the Lease named by leaseName")
        assert lease
        before = run.digests()
        assert set(before) == {"plain", "ssd-lover", "plain-judge"} and before["plain"] != before["ssd-lover"]

        first = [_pod(f"plain-{i}", ns, "plain") for i in range(6)] + \
                [_pod(f"ssd-{i}", ns, "ssd-lover") for i in range(6)]
        _create(cp, first)
        placed = wait_all_bound(api, ns, [p["metadata"]["name"] for p in first], timeout=60)
        disk = {n["metadata"]["name"]: n["metadata"]["labels"]["disk"] for n in nodes}
        assert {disk[placed[f"plain-{i}"]] for i in range(6)} == {"hdd"}, placed
        assert {disk[placed[f"ssd-{i}"]] for i in range(6)} == {"ssd"}, placed

        # Edit ssd-lover's source: it now prefers hdd. Only its digest changes.
        (folder / "prefer.policy").write_text(PREFER.format(disk="hdd"))
        wait_until(lambda: run.digests().get("ssd-lover") not in (None, before["ssd-lover"]), 20,
                   "ssd-lover's new digest in force")
        after = run.digests()
        assert after["plain"] == before["plain"]
        reloaded = [line for line in run.find("policies reloaded") if line.get("profile") == "ssd-lover"]
        assert reloaded and reloaded[0]["policy_digest"] == after["ssd-lover"][:12]
        assert not [line for line in run.find("policies reloaded") if line.get("profile") == "plain"]

        second = [_pod(f"plain-b{i}", ns, "plain") for i in range(3)] + \
                 [_pod(f"ssd-b{i}", ns, "ssd-lover") for i in range(3)]
        _create(cp, second)
        placed2 = wait_all_bound(api, ns, [p["metadata"]["name"] for p in second], timeout=60)
        assert {disk[placed2[f"ssd-b{i}"]] for i in range(3)} == {"hdd"}, placed2  # the new set decides
        assert {disk[placed2[f"plain-b{i}"]] for i in range(3)} == {"hdd"}, placed2

        # Every pod bound exactly once, reported by its own profile; decisions carry the profile.
        names = [p["metadata"]["name"] for p in first + second]

        def all_reported() -> dict[str, list[str]] | None:
            found = scheduled_by(api, ns)
            return found if all(n in found for n in names) else None

        by_pod = wait_until(all_reported, 30, "a Scheduled event for every pod")
        for n in names:
            assert by_pod[n] == ["plain" if n.startswith("plain") else "ssd-lover"], (n, by_pod.get(n))
        bound = run.find("bound")
        assert sorted(line["pod"].split("/")[1] for line in bound) == sorted(names)
        assert {line["profile"] for line in bound if line["pod"].split("/")[1].startswith("ssd")} == {"ssd-lover"}
        metrics = run.metrics()
        assert 'scheduler_schedule_attempts_total{profile="ssd-lover",result="scheduled"} 9.0' in metrics
        assert 'scheduler_schedule_attempts_total{profile="plain",result="scheduled"} 9.0' in metrics
        # The shadow of our own profile judged each of plain's pods once (in a cache of its own).
        judged = [line for line in run.find("shadow decision") if line["pod"].startswith(ns + "/")]
        assert sorted(line["pod"].split("/")[1] for line in judged) == sorted(n for n in names if n.startswith("plain"))
        assert all(line["profile"] == "plain-judge" and line["theirs"] == (placed | placed2)[line["pod"].split("/")[1]]
                   for line in judged)
        agreed = sum(line["agreement"] in ("agree", "tie") for line in judged)
        print(f"\nplain-judge (shadow of plain, same policies): {agreed}/{len(judged)} agree or tie")
        # Our binds run concurrently, so the watch may show two of them in the other order than they were
        # decided: the shadow then sees one pod fewer in place than the decision did (a rare disagreement).
        assert agreed >= len(judged) - 2, judged
        assert run.terminate() == 0
    finally:
        if run.child.alive():
            run.kill()


def _lease_holder(api: Any, ns: str, name: str) -> str | None:
    from tests.controlplane.api import ApiError

    try:
        lease = api.get(f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}")
    except ApiError:
        return None
    holder = lease.get("spec", {}).get("holderIdentity")
    return str(holder) if holder else None


def scheduled_by(api: Any, ns: str) -> dict[str, list[str]]:
    """Pod name -> the reportingController of each of its Scheduled events."""
    out: dict[str, list[str]] = {}
    for e in events(api, ns):
        if e.get("reason") == "Scheduled":
            out.setdefault(e["regarding"]["name"], []).append(e["reportingController"])
    return out


def test_kube_api_qps_paces_the_requests(cp: ControlPlane, ns: str, tmp_path: Path) -> None:
    """--kube-api-qps 4 --kube-api-burst 1: 12 binds take about 3 s (unlimited: a fraction of a second)."""
    api = cp.api()
    _create(cp, [fakes.make_node(f"{ns}-n{i}", owner=ns) for i in range(3)])
    run = ConfigRun(cp, tmp_path / "run.log", "--scheduler-name", "paced", "--kube-api-qps", "4",
                    "--kube-api-burst", "1", "--engine", "reference")
    try:
        run.wait_log("started", timeout=60)
        wait_until(lambda: len(run.find("watch Service: list delivered")) > 0 or None, 30, "the first lists")
        time.sleep(1.0)  # let the bucket settle after the lists
        objs = [_pod(f"paced-{i}", ns, "paced") for i in range(12)]
        began = time.monotonic()
        _create(cp, objs)
        wait_all_bound(api, ns, [p["metadata"]["name"] for p in objs], timeout=60)
        elapsed = time.monotonic() - began
        print(f"\n12 binds at qps 4, burst 1: {elapsed:.2f}s")
        assert elapsed >= 2.2, elapsed  # 11 tokens at 4/s after the first = 2.75 s, minus polling slack
    finally:
        if run.child.alive():
            run.kill()
