"""``policyscheduler run``'s lifecycle on the real control plane: SIGTERM while the API server is down or
hanging, a leader that loses its lease while the API server is down (beside the real kube-scheduler on
the same harness, both measured), a restart with a broken or missing policy ConfigMap (the last good
set saved in the cluster keeps scheduling), an edit that leaves no ``*.policy`` key, and a repeated
``--policies-configmap``.

The tests that stop the API server get a control plane of their own (``own_cp``); the others share the
module's. Measured times are printed (``pytest -s``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane import fakes
from tests.controlplane.harness import ControlPlane, start_apiserver, stop_apiserver
from tests.kube.live import BROKEN_POLICY as BROKEN
from tests.kube.live import REPO, LiveEnv, RunProcess, env_fixture, events, wait_all_bound, wait_until
from tests.kube.live import forbid_rule as rule
from tests.kube.live import policy_digest as digest_of

pytestmark = pytest.mark.e2e

CM = "policies"
LAST_GOOD = "policyscheduler-last-good"
LEASE = ("--leader-elect", "--leader-elect-lease-namespace", "kube-system", "--leader-elect-lease-duration", "6",
         "--leader-elect-renew-deadline", "4", "--leader-elect-retry-period", "1")
LONG_LEASE = ("--leader-elect", "--leader-elect-lease-namespace", "kube-system", "--leader-elect-lease-duration", "40",
              "--leader-elect-renew-deadline", "30", "--leader-elect-retry-period", "2")
"""SIGTERM tests: still leading when the signal comes (stopping kube-apiserver takes seconds itself)."""



@pytest.fixture
def own_cp() -> Iterator[ControlPlane]:
    """A control plane for one test: it stops the API server."""
    plane = ControlPlane.start()
    try:
        yield plane
    finally:
        plane.stop()


def _wait_exit(run: RunProcess, timeout: float) -> tuple[int | None, float]:
    """Wait up to ``timeout`` for the process to end: (exit status or None, seconds waited)."""
    start = time.monotonic()
    try:
        code: int | None = run.child.popen.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        code = None
    return code, time.monotonic() - start


def _last_line(run: RunProcess) -> dict[str, Any]:
    lines = [line for line in run.lines() if "raw" not in line]
    assert lines, run.child.log_tail(20)
    return lines[-1]


def _leading(run: RunProcess) -> bool:
    return any("became leader" in str(line.get("msg")) for line in run.lines())


# -- SIGTERM ------------------------------------------------------------------------------------------------

def _sigterm_while(run: RunProcess, what: str) -> tuple[int | None, float]:
    os.kill(run.pid, signal.SIGTERM)
    code, took = _wait_exit(run, 30.0)
    print(f"\nSIGTERM with the API server {what}: exited {code} after {took:.2f}s")
    if code is None:
        run.kill()
    return code, took


def test_sigterm_with_the_apiserver_down_or_hanging_exits_within_5s(own_cp: ControlPlane, tmp_path: Path) -> None:
    cp = own_cp
    api, ns = cp.api(), "default"
    fakes.create_all(api, fakes.make_nodes(4, prefix="n", cpu="2", memory="16Gi"))
    run = RunProcess(cp, tmp_path / "down.log", "--engine", "reference", *LONG_LEASE)
    wait_until(lambda: _leading(run), 60, "leading")
    run.wait_log("started", timeout=60)
    # a burst: binds and Scheduled events in flight, and pods that fit nowhere (FailedScheduling + condition)
    fakes.create_all(api, fakes.make_pods(60, ns, prefix="fit", scheduler_name="policy-scheduler", cpu="100m",
                                          memory="64Mi"))
    fakes.create_all(api, fakes.make_pods(40, ns, prefix="huge", scheduler_name="policy-scheduler", cpu="64",
                                          memory="64Mi"))
    wait_until(lambda: run.find("bound"), 30, "a first bind")
    stop_apiserver(cp)
    code, took = _sigterm_while(run, "down")
    assert code is not None and took <= 5.0, f"still running {took:.1f}s after SIGTERM:\n{run.child.log_tail(15)}"
    last = _last_line(run)
    assert str(last.get("msg", "")).startswith("shutdown: "), last
    assert isinstance(last.get("events_not_sent"), int) and isinstance(last.get("binds_not_sent"), int)
    # leading with no API server: the lease cannot be released, so the hand-over is incomplete (exit 3)
    assert last["lease_released"] is False and "lease not released" in last["msg"]
    assert code == 3 == last["exit_code"]
    print(f"last line: {last['msg']}")

    # an API server that accepts connections and never answers (SIGSTOP)
    start_apiserver(cp)
    run2 = RunProcess(cp, tmp_path / "hang.log", "--engine", "reference")
    run2.wait_log("started", timeout=60)
    fakes.create_all(cp.api(), fakes.make_pods(30, ns, prefix="more", scheduler_name="policy-scheduler",
                                               cpu="64", memory="64Mi"))
    wait_until(lambda: run2.find("unschedulable") or any(line.get("result") == "unschedulable"
                                                         for line in run2.lines()), 30, "a decision")
    assert cp.apiserver is not None
    os.kill(cp.apiserver.pid, signal.SIGSTOP)
    try:
        code, took = _sigterm_while(run2, "hanging (SIGSTOP)")
    finally:
        os.kill(cp.apiserver.pid, signal.SIGCONT)
    assert code is not None and took <= 5.0, f"still running {took:.1f}s after SIGTERM:\n{run2.child.log_tail(15)}"
    last = _last_line(run2)
    assert str(last.get("msg", "")).startswith("shutdown: "), last
    print(f"last line: {last['msg']}")


def test_sigterm_with_the_apiserver_up_is_a_clean_hand_over(own_cp: ControlPlane, tmp_path: Path) -> None:
    api = own_cp.api()
    fakes.create_all(api, fakes.make_nodes(4, prefix="n", cpu="8", memory="16Gi"))
    run = RunProcess(own_cp, tmp_path / "up.log", "--engine", "reference", *LONG_LEASE)
    wait_until(lambda: _leading(run), 60, "leading")
    pods = fakes.make_pods(40, "default", prefix="p", scheduler_name="policy-scheduler", cpu="100m", memory="64Mi")
    fakes.create_all(api, pods)
    wait_all_bound(api, "default", [p["metadata"]["name"] for p in pods], timeout=60)
    code, took = _sigterm_while(run, "up")
    assert code == 0 and took <= 5.0
    last = _last_line(run)
    assert last["msg"] == "shutdown: clean hand-over" and last["lease_released"] is True, last
    lease = api.get("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/policy-scheduler")
    assert not lease["spec"].get("holderIdentity")


# -- a lost lease ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("outage", ["stopped", "hanging"])
def test_lost_lease_during_a_burst_exits_like_kube_scheduler(own_cp: ControlPlane, tmp_path: Path,
                                                             outage: str) -> None:
    """The API server goes away (stopped, or SIGSTOPped: connections accepted, never answered) while
    binds, Scheduled events and FailedScheduling writes are pending: both schedulers must give up the
    lease within the renew deadline and exit 1."""
    cp = own_cp
    api, ns = cp.api(), "default"
    fakes.create_all(api, fakes.make_nodes(4, prefix="n", cpu="2", memory="16Gi"))
    kube = cp.start_scheduler({"leaderElection": {
        "leaderElect": True, "leaseDuration": "6s", "renewDeadline": "4s", "retryPeriod": "1s",
        "resourceLock": "leases", "resourceName": "kube-scheduler", "resourceNamespace": "kube-system"}})
    run = RunProcess(cp, tmp_path / "run.log", "--engine", "reference", *LEASE)
    wait_until(lambda: _leading(run), 60, "our scheduler leading")
    wait_until(lambda: "successfully acquired lease" in kube.child.log_file.read_text(errors="replace").lower(),
               60, "kube-scheduler leading")
    fakes.create_all(api, fakes.make_pods(60, ns, prefix="fit", scheduler_name="policy-scheduler", cpu="100m",
                                          memory="64Mi"))
    fakes.create_all(api, fakes.make_pods(40, ns, prefix="huge", scheduler_name="policy-scheduler", cpu="64",
                                          memory="64Mi"))
    wait_until(lambda: run.find("bound") and run.find("unschedulable"), 30, "binds and failures")
    down = time.monotonic()
    assert cp.apiserver is not None
    if outage == "hanging":
        os.kill(cp.apiserver.pid, signal.SIGSTOP)
    else:  # stopping kube-apiserver takes seconds (graceful): measure from the start
        threading.Thread(target=stop_apiserver, args=(cp,), daemon=True).start()
    ours: float | None = None
    theirs: float | None = None
    try:
        while time.monotonic() - down < 40 and (ours is None or theirs is None):
            if ours is None and not run.child.alive():
                ours = time.monotonic() - down
            if theirs is None and not kube.child.alive():
                theirs = time.monotonic() - down
            time.sleep(0.05)
    finally:
        if outage == "hanging":
            os.kill(cp.apiserver.pid, signal.SIGCONT)
    print(f"\nAPI server {outage}: policyscheduler exited after {ours}s (status {run.child.popen.poll()}), "
          f"kube-scheduler after {theirs}s (status {kube.child.popen.poll()}); lease 6s, renew deadline 4s, retry 1s")
    assert theirs is not None, "kube-scheduler did not exit: the harness is not what this test assumes"
    assert kube.child.popen.returncode == 1
    assert ours is not None, f"policyscheduler still running 40s after the API server went away:\n" \
                             f"{run.child.log_tail(15)}"
    assert run.child.popen.returncode == 1  # as kube-scheduler: exit 1 on a lost lease
    assert ours <= theirs + 2.0
    assert run.find("leader election lost: scheduling stopped"), run.child.log_tail(15)
    last = _last_line(run)
    assert last.get("reason") == "leaderelection lost" and str(last["msg"]).startswith("shutdown: "), last
    print(f"last line: {last['msg']}")


# -- the last good set -------------------------------------------------------------------------------------

class Env(LiveEnv):
    """A namespace with three nodes, one labelled x=y (the site rule keeps pods off it); the policy
    ConfigMap and the last good ConfigMap both live in the namespace (``--leader-elect-lease-namespace``)."""

    def __init__(self, cp: ControlPlane, tmp: Path) -> None:
        super().__init__(cp, tmp, "lifecycle")
        labels = {fakes.OWNER_LABEL: self.ns}
        fakes.create_all(self.api, [fakes.make_node(f"{self.ns}-xy", labels={**labels, "x": "y"}),
                                    fakes.make_node(f"{self.ns}-b", labels=labels),
                                    fakes.make_node(f"{self.ns}-c", labels=labels)])
        self.count = 0

    @property
    def args(self) -> tuple[str, ...]:
        return ("--policies-configmap", f"{self.ns}/{CM}", "--leader-elect-lease-namespace", self.ns)

    def cm_path(self, name: str = CM) -> str:
        return f"/api/v1/namespaces/{self.ns}/configmaps/{name}"

    def create_cm(self, data: dict[str, str]) -> None:
        self.api.post(f"/api/v1/namespaces/{self.ns}/configmaps",
                      {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": CM}, "data": data})

    def put_cm(self, data: dict[str, str]) -> None:
        cm = self.api.get(self.cm_path())
        cm["data"] = data
        self.api.request("PUT", self.cm_path(), cm)

    def saved(self) -> dict[str, Any] | None:
        try:
            cm = self.api.get(self.cm_path(LAST_GOOD))
        except Exception:  # noqa: BLE001 -- not there yet
            return None
        text = (cm.get("data") or {}).get("policy-scheduler.json")
        return json.loads(text) if text else None

    def cm_events(self, reason: str) -> list[dict[str, Any]]:
        return [e for e in events(self.api, self.ns) if e["regarding"].get("kind") == "ConfigMap"
                and e["regarding"].get("name") == CM and e.get("reason") == reason]

    def pods(self, n: int) -> list[str]:
        objs = []
        for _ in range(n):
            self.count += 1
            objs.append(fakes.make_pod(f"p{self.count}", scheduler_name="policy-scheduler", cpu="50m", memory="64Mi"))
            objs[-1]["metadata"]["namespace"] = self.ns
        fakes.create_all(self.api, objs)
        return [o["metadata"]["name"] for o in objs]

    def placed_off_xy(self, n: int) -> None:
        placed = wait_all_bound(self.api, self.ns, self.pods(n), timeout=30)
        assert f"{self.ns}-xy" not in placed.values(), placed


env = env_fixture(Env)


def _in_force(run: RunProcess) -> str:
    import urllib.request

    address = run.find("started")[0]["status_address"]
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=5) as resp:
        text: str = resp.read().decode()
    for line in text.splitlines():
        if line.startswith("policyscheduler_policy_info{"):
            return line.split('digest="', 1)[1].split('"', 1)[0]
    raise AssertionError("no policyscheduler_policy_info")


def test_restart_with_a_broken_or_missing_configmap_keeps_scheduling_with_the_last_good_set(env: Env) -> None:
    good = digest_of(rule("y"))
    env.create_cm({"site.policy": rule("y"), "README.md": "not a policy"})
    first = env.start(*env.args)
    saved = wait_until(env.saved, 20, "the last good set saved")
    version = env.api.get(env.cm_path())["metadata"]["resourceVersion"]
    assert saved["digest"] == good and saved["source"] == f"{env.ns}/{CM}"
    assert saved["resourceVersion"] == version and saved["files"] == {"site.policy": rule("y")}
    env.placed_off_xy(4)
    assert first.terminate() == 0

    env.put_cm({"site.policy": BROKEN})  # a bad edit, then a restart (rollout, OOM, node loss)
    second = env.start(*env.args)
    assert _in_force(second).startswith(good[:12])
    warning = second.find("policy source unusable at start-up; running the last good set")
    assert warning and warning[0]["last_good_digest"] == good[:12], second.child.log_tail(10)
    wait_until(lambda: env.cm_events("PolicyLastGoodUsed"), 20, "a Warning event PolicyLastGoodUsed")
    assert env.cm_events("PolicyLastGoodUsed")[0]["type"] == "Warning"
    env.placed_off_xy(4)
    assert (env.saved() or {}).get("digest") == good  # the broken edit never replaces the saved set
    assert second.terminate() == 0

    env.api.delete(env.cm_path())  # the ConfigMap is gone altogether
    third = env.start(*env.args)
    assert _in_force(third).startswith(good[:12])
    env.placed_off_xy(3)
    env.create_cm({"site.policy": rule("z")})  # the source is back: it takes over and becomes the last good
    wait_until(lambda: _in_force(third) == digest_of(rule("z"))[:12], 20, "the recreated ConfigMap in force")
    wait_until(lambda: (env.saved() or {}).get("digest") == digest_of(rule("z")), 20, "the new set saved")
    assert third.terminate() == 0


def test_an_edit_with_no_policy_key_is_refused_and_the_last_good_set_kept(env: Env) -> None:
    good = digest_of(rule("y"))
    env.create_cm({"site.policy": rule("y")})
    run = env.start(*env.args)
    env.put_cm({"README.md": "the policies moved elsewhere"})
    failed = wait_until(lambda: env.cm_events("PolicyLoadFailed"), 20, "a Warning event PolicyLoadFailed")
    assert failed[0]["type"] == "Warning" and "no-policy-files" in failed[0]["note"], failed[0]["note"]
    assert not [e for e in env.cm_events("PoliciesLoaded") if "stays in force" not in e["note"]
                and good[:12] not in e["note"].split("in force")[0]]
    assert _in_force(run).startswith(good[:12])
    env.placed_off_xy(6)
    assert run.terminate() == 0


def test_a_configmap_with_no_policy_key_at_start_up_without_a_saved_set_exits_2(env: Env) -> None:
    env.create_cm({"README.md": "nothing here"})
    proc = subprocess.run([sys.executable, "-m", "policyscheduler", "run", "--kubeconfig", str(env.cp.kubeconfig),
                           "--bind-address", "127.0.0.1:0", *env.args],
                          capture_output=True, text=True, timeout=60, cwd=REPO)
    assert proc.returncode == 2, proc.stderr
    assert "no-policy-files" in proc.stderr and f"ConfigMap {env.ns}/{CM} has no *.policy key" in proc.stderr


def test_two_policies_configmap_flags_are_refused(env: Env) -> None:
    env.create_cm({"site.policy": rule("y")})
    env.api.post(f"/api/v1/namespaces/{env.ns}/configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                                                               "metadata": {"name": "more"},
                                                               "data": {"more.policy": rule("z")}})
    argv = [sys.executable, "-m", "policyscheduler", "run", "--kubeconfig", str(env.cp.kubeconfig),
            "--bind-address", "127.0.0.1:0", "--policies-configmap", f"{env.ns}/{CM}",
            "--policies-configmap", f"{env.ns}/more"]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=20, cwd=REPO)
    except subprocess.TimeoutExpired:
        pytest.fail("started with one of the two ConfigMaps (the other silently ignored)")
    assert proc.returncode == 2
    assert f"--policies-configmap: given twice ({env.ns}/{CM}, {env.ns}/more)" in proc.stderr
