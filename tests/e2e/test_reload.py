"""Hot reload against the real control plane: the policy ConfigMap edited, broken, fixed, deleted and
recreated, and a ``--policies`` folder laid out like a mounted ConfigMap volume (``..data`` swap).

One control plane for the module; every test starts its own ``policyscheduler run`` and deletes its
nodes and pods afterwards. The delay test prints the 10 measured delays from the ConfigMap update (the
PUT's response) to the new set in force (``policyscheduler_policy_info{digest}`` on /metrics).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane import fakes
from tests.controlplane.harness import ControlPlane
from tests.kube.live import BROKEN_POLICY as BROKEN
from tests.kube.live import (
    REPO,
    LiveEnv,
    RunProcess,
    env_fixture,
    events,
    forbid_rule,
    policy_digest,
    wait_all_bound,
    wait_until,
)

pytestmark = pytest.mark.e2e

CM = "policies"


def rule(value: str, revision: int = 0) -> str:
    return forbid_rule(value, revision)


def digest_of(text: str) -> str:
    """The 12-character digest prefix ``run`` logs."""
    return policy_digest(text)[:12]


class Env(LiveEnv):
    def __init__(self, cp: ControlPlane, tmp: Path) -> None:
        super().__init__(cp, tmp, "reload")
        self.count = 0
        labels = {fakes.OWNER_LABEL: self.ns}
        fakes.create_all(self.api, [fakes.make_node(f"{self.ns}-xy", zone="zone-a", labels={**labels, "x": "y"}),
                                    fakes.make_node(f"{self.ns}-b", zone="zone-b", labels=labels),
                                    fakes.make_node(f"{self.ns}-c", zone="zone-c", labels=labels)])

    # -- the scheduler ------------------------------------------------------------------------------
    def metrics(self, run: RunProcess) -> str:
        address = run.find("started")[0]["status_address"]
        with urllib.request.urlopen(f"http://{address}/metrics", timeout=5) as resp:
            return str(resp.read().decode())

    def in_force(self, run: RunProcess) -> str | None:
        for line in self.metrics(run).splitlines():
            if line.startswith("policyscheduler_policy_info{"):
                return line.split('digest="', 1)[1].split('"', 1)[0]
        return None

    def wait_in_force(self, run: RunProcess, digest: str, timeout: float = 10.0) -> None:
        wait_until(lambda: self.in_force(run) == digest, timeout, f"digest {digest} in force")

    # -- the ConfigMap -------------------------------------------------------------------------------
    def cm_path(self, name: str = CM) -> str:
        return f"/api/v1/namespaces/{self.ns}/configmaps/{name}"

    def create_cm(self, text: str) -> None:
        self.api.post(f"/api/v1/namespaces/{self.ns}/configmaps", {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": CM},
            "data": {"site.policy": text, "README.md": "not a policy"}})

    def put_cm(self, text: str) -> float:
        """Replace the policy text; the monotonic time of the PUT's response."""
        cm = self.api.get(self.cm_path())
        cm["data"]["site.policy"] = text
        self.api.request("PUT", self.cm_path(), cm)
        return time.monotonic()

    def cm_events(self, reason: str) -> list[dict[str, Any]]:
        return [e for e in events(self.api, self.ns)
                if e["regarding"].get("kind") == "ConfigMap" and e["regarding"].get("name") == CM
                and e.get("reason") == reason]

    # -- pods ----------------------------------------------------------------------------------------
    def pods(self, n: int) -> list[str]:
        objs = []
        for _ in range(n):
            self.count += 1
            objs.append(fakes.make_pod(f"p{self.count}", scheduler_name="policy-scheduler", cpu="50m", memory="64Mi"))
            objs[-1]["metadata"]["namespace"] = self.ns
        fakes.create_all(self.api, objs)
        return [o["metadata"]["name"] for o in objs]

    def placements(self, names: list[str], timeout: float = 30.0) -> dict[str, str]:
        return wait_all_bound(self.api, self.ns, names, timeout=timeout)


env = env_fixture(Env)


def decided_with(run: RunProcess, ns: str) -> dict[str, str]:
    """pod name -> digest of its `scheduled` decision line."""
    return {line["pod"].split("/", 1)[1]: line["policy_digest"] for line in run.lines()
            if line.get("logger") == "policyscheduler.decisions" and line.get("msg") == "scheduled"
            and line.get("pod", "").startswith(ns + "/")}


def test_configmap_edit_is_obeyed_by_the_next_pods_and_10_reload_delays(env: Env) -> None:
    env.create_cm(rule("none"))
    run = env.start("--policies-configmap", f"{env.ns}/{CM}")
    first = digest_of(rule("none"))
    assert run.find("started")[0]["policy_digest"] == first
    env.wait_in_force(run, first)
    before = env.placements(env.pods(9))
    assert f"{env.ns}-xy" in before.values()  # the x=y node takes pods while no rule forbids it

    delays, logged = [], []
    for i in range(10):
        text = rule("y", i)
        digest = digest_of(text)
        put_wall = time.time()
        put = env.put_cm(text)
        while env.in_force(run) != digest:
            assert time.monotonic() - put < 10, f"digest {digest} not in force 10s after the update"
            time.sleep(0.005)
        delays.append(time.monotonic() - put)
        line = wait_until(lambda d=digest: next((x for x in run.find("policies reloaded")
                                                 if x["policy_digest"] == d), None), 5, "reload log line")
        logged.append(_ts(line["ts"]) - put_wall)
    print(f"\nupdate -> new digest on /metrics (10 reloads): median {statistics.median(delays) * 1000:.0f} ms, "
          f"max {max(delays) * 1000:.0f} ms; all: {', '.join(f'{d * 1000:.0f}' for d in delays)} ms")
    print(f"update -> 'policies reloaded' log line: median {statistics.median(logged) * 1000:.0f} ms, "
          f"max {max(logged) * 1000:.0f} ms")
    assert max(delays) < 2.0

    after = env.placements(env.pods(12))
    assert f"{env.ns}-xy" not in after.values(), after
    final = digest_of(rule("y", 9))
    decided = decided_with(run, env.ns)
    assert {decided[n] for n in after} == {final}
    loaded = wait_until(lambda: [e for e in env.cm_events("PoliciesLoaded") if final in e["note"]], 10,
                        "the Normal event naming the digest")
    assert loaded[0]["type"] == "Normal" and loaded[0]["regarding"]["namespace"] == env.ns
    assert 'policyscheduler_policy_reloads_total{profile="policy-scheduler",result="success"} 10.0' in env.metrics(run)
    assert run.terminate() == 0


def _ts(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text).timestamp()


class Stream:
    """Creates a pod every ``every`` seconds in the background (the scheduler must never pause)."""

    def __init__(self, env: Env, every: float = 0.2) -> None:
        self.env, self.every = env, every
        self.names: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.names.extend(self.env.pods(1))

    def __enter__(self) -> Stream:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def test_a_broken_configmap_is_reported_and_the_last_good_set_keeps_scheduling(env: Env) -> None:
    good = rule("y")
    env.create_cm(good)
    run = env.start("--policies-configmap", f"{env.ns}/{CM}")
    good_digest = digest_of(good)
    with Stream(env) as stream:
        time.sleep(1.0)
        env.put_cm(BROKEN)
        warning = wait_until(lambda: env.cm_events("PolicyLoadFailed"), 10, "the Warning event on the ConfigMap")[0]
        time.sleep(2.0)  # pods keep coming while the broken text is in the ConfigMap
    assert warning["type"] == "Warning" and warning["reportingController"] == "policy-scheduler"
    note = warning["note"]
    assert f"keeping policy set {good_digest}" in note
    assert "site.policy:3:" in note and "error bad-quantity: unknown unit 'Xi'" in note, note
    failed = run.find("policy reload failed; keeping the running set")
    assert failed and failed[0]["policy_digest"] == good_digest and "bad-quantity" in failed[0]["errors"][0]
    text = env.metrics(run)
    assert 'policyscheduler_policy_reloads_total{profile="policy-scheduler",result="error"} 1.0' in text
    assert 'policyscheduler_policy_last_reload_successful{profile="policy-scheduler"} 0.0' in text
    assert env.in_force(run) == good_digest

    # Not a gap: every pod created around and after the broken push was bound, by the old rules, quickly.
    assert len(stream.names) >= 10
    placed = env.placements(stream.names, timeout=15)
    assert f"{env.ns}-xy" not in placed.values()
    decided = decided_with(run, env.ns)
    assert {decided[n] for n in stream.names} == {good_digest}
    bound = [line for line in run.find("bound") if line["pod"].startswith(env.ns + "/")]
    assert len(bound) == len(stream.names)

    fixed = rule("y", 1)
    env.put_cm(fixed)
    fixed_digest = digest_of(fixed)
    env.wait_in_force(run, fixed_digest)
    loaded = wait_until(lambda: [e for e in env.cm_events("PoliciesLoaded") if fixed_digest in e["note"]], 10,
                        "the Normal event after the fix")
    assert loaded[0]["type"] == "Normal"
    assert 'policyscheduler_policy_last_reload_successful{profile="policy-scheduler"} 1.0' in env.metrics(run)
    later = env.pods(3)
    env.placements(later)
    assert {decided_with(run, env.ns)[n] for n in later} == {fixed_digest}
    assert run.terminate() == 0


def test_configmap_deleted_keeps_the_set_then_recreated_is_loaded(env: Env) -> None:
    good = rule("y")
    env.create_cm(good)
    run = env.start("--policies-configmap", f"{env.ns}/{CM}")
    good_digest = digest_of(good)
    env.api.delete(env.cm_path())
    missing = wait_until(lambda: env.cm_events("PolicySourceMissing"), 10, "the Warning event on deletion")[0]
    assert missing["type"] == "Warning" and f"keeping policy set {good_digest}" in missing["note"]
    assert run.find("policy source missing; keeping the running set")
    names = env.pods(4)
    placed = env.placements(names)
    assert f"{env.ns}-xy" not in placed.values()
    assert {decided_with(run, env.ns)[n] for n in names} == {good_digest} == {env.in_force(run)}
    # A pod only the forbidden node could take waits in the unschedulable pool ...
    needs = fakes.make_pod("needs-xy", env.ns, scheduler_name="policy-scheduler", cpu="50m",
                           node_selector={"x": "y"})
    fakes.create_all(env.api, [needs])
    # (its own PodScheduled=False patch comes back as a status-only update, which does not retry it)
    wait_until(lambda: [ln for ln in run.find("unschedulable") if ln["pod"] == f"{env.ns}/needs-xy"],
               15, "needs-xy unschedulable, in the unschedulable pool")
    time.sleep(0.5)

    recreated = rule("none", 2)
    env.create_cm(recreated)
    new_digest = digest_of(recreated)
    env.wait_in_force(run, new_digest)
    wait_until(lambda: [e for e in env.cm_events("PoliciesLoaded") if new_digest in e["note"]], 10,
               "the Normal event after recreation")
    assert len(env.cm_events("PolicySourceMissing")) == 1  # reported once
    # ... and is retried after the good reload, under the new set.
    assert env.placements(["needs-xy"], timeout=10) == {"needs-xy": f"{env.ns}-xy"}
    assert decided_with(run, env.ns)["needs-xy"] == new_digest
    assert run.find("policies reloaded")[-1]["requeued"] >= 1
    assert run.terminate() == 0


def kubelet_volume(root: Path, files: dict[str, str], stamp: str) -> None:
    """Write a ConfigMap volume the way the kubelet does: a new ``..<timestamp>`` directory, a new
    ``..data`` symlink renamed over the old one (atomic), one symlink per key through ``..data``."""
    data_dir = root / f"..{stamp}"
    data_dir.mkdir()
    for key, text in files.items():
        (data_dir / key).write_text(text)
    (root / "..data_tmp").symlink_to(data_dir.name)
    os.rename(root / "..data_tmp", root / "..data")
    for key in files:
        if not (root / key).is_symlink():
            (root / key).symlink_to(f"..data/{key}")


def test_policies_dir_with_the_kubelet_data_symlink_swap(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    volume = env.tmp / "volume"
    volume.mkdir()
    kubelet_volume(volume, {"site.policy": rule("none")}, "2026_11_30_12_00_00.000000001")
    monkeypatch.setenv("POD_NAME", "policy-scheduler-0")  # the downward API: reload events regard our Pod
    monkeypatch.setenv("POD_NAMESPACE", env.ns)
    run = env.start("--policies", str(volume))
    assert run.find("started")[0]["policy_digest"] == digest_of(rule("none"))

    swapped = time.monotonic()
    kubelet_volume(volume, {"site.policy": rule("y")}, "2026_11_30_12_01_00.000000002")
    env.wait_in_force(run, digest_of(rule("y")))
    print(f"\n..data swap -> new digest in force after {time.monotonic() - swapped:.2f}s (1 s polling)")
    placed = env.placements(env.pods(9))
    assert f"{env.ns}-xy" not in placed.values()

    with Stream(env) as stream:
        kubelet_volume(volume, {"site.policy": BROKEN}, "2026_11_30_12_02_00.000000003")
        failed = wait_until(lambda: run.find("policy reload failed; keeping the running set"), 10,
                            "the reload error log line")[0]
        time.sleep(1.5)
    assert failed["policy_digest"] == digest_of(rule("y")) and "bad-quantity" in failed["errors"][0]
    assert str(volume / "site.policy") in failed["errors"][0]
    env.placements(stream.names, timeout=15)
    assert {decided_with(run, env.ns)[n] for n in stream.names} == {digest_of(rule("y"))}
    warning = wait_until(lambda: [e for e in events(env.api, env.ns) if e.get("reason") == "PolicyLoadFailed"],
                         10, "the Warning event on our Pod")[0]
    assert warning["regarding"]["kind"] == "Pod" and warning["regarding"]["name"] == "policy-scheduler-0"
    assert "error bad-quantity" in warning["note"]
    assert 'policyscheduler_policy_reloads_total{profile="policy-scheduler",result="error"} 1.0' in env.metrics(run)

    kubelet_volume(volume, {"site.policy": rule("y", 5)}, "2026_11_30_12_03_00.000000004")
    env.wait_in_force(run, digest_of(rule("y", 5)))
    wait_until(lambda: [e for e in events(env.api, env.ns) if e.get("reason") == "PoliciesLoaded"
                        and digest_of(rule("y", 5)) in e["note"]], 10, "the Normal event after the fix")
    assert 'policyscheduler_policy_last_reload_successful{profile="policy-scheduler"} 1.0' in env.metrics(run)
    assert json.dumps(run.find("policies reloaded")[-1]).count(digest_of(rule("y", 5))) == 1
    assert run.terminate() == 0


def test_a_configmap_that_cannot_be_read_stops_start_up(env: Env) -> None:
    proc = subprocess.run([sys.executable, "-m", "policyscheduler", "run", "--kubeconfig", str(env.cp.kubeconfig),
                           "--bind-address", "127.0.0.1:0", "--policies-configmap", f"{env.ns}/absent"],
                          capture_output=True, text=True, timeout=60, cwd=REPO)
    assert proc.returncode == 2
    assert f"ConfigMap {env.ns}/absent not found" in proc.stderr
    env.create_cm(BROKEN)
    proc = subprocess.run([sys.executable, "-m", "policyscheduler", "run", "--kubeconfig", str(env.cp.kubeconfig),
                           "--bind-address", "127.0.0.1:0", "--policies-configmap", f"{env.ns}/{CM}"],
                          capture_output=True, text=True, timeout=60, cwd=REPO)
    assert proc.returncode == 2
    assert "site.policy:3:" in proc.stderr and "bad-quantity" in proc.stderr
