"""What ``policyscheduler run`` writes, and how often it decides, on the real control plane -- each scenario
run through the real kube-scheduler (v1.35) in the same test as the yardstick.

Both schedulers run at once, each on a lane of its own: its pods carry ``nodeSelector: lane=<lane>`` and
only that lane's nodes fit them, so neither takes the other's room (the other lane's nodes reject by
selector in both). Ours is ``policy-scheduler``, kube-scheduler's profile ``kube-ref``.

1. **No stale failure writes** (issue 21, scaled from 400 pods to 100 per scheduler to stay under a
   minute): 100 pods that do not fit, then -- while their failure writes are still going out -- room for
   all of them. Once all are bound: no bound pod has ``PodScheduled=False`` and no ``FailedScheduling``
   event of a pod came after its ``Scheduled`` event.
2. **No second decision** after our own bind: 100 pods, each labelled right after its creation (the update
   races the bind). Ours decides each once (decision log lines) and never gets a 409; kube-scheduler makes
   100 attempts (``scheduler_schedule_attempts_total``). A pod only node affinity rejects is attempted once
   while the others bind (no retry on unrelated binds).
3. **One event series**: a pod that does not fit, retried 10 times (a pod on its node comes and goes, so
   both schedulers move it; kube-style backoff: 1, 2, 4, 8, then 10 s -- about 65 s), has one ``FailedScheduling`` Event whose ``series.count``
   counts the attempts.
4. **Scheduled events are not held back** during a burst (below).
5. **No retry when pods arrive** where a pod was rejected for room: kube-scheduler's NodeResourcesFit
   registers pod Delete, never Add. A pod that fits on neither of two full nodes, then pods bound to those
   nodes one after another: ours makes as many attempts as kube-scheduler (one); then a pod leaves and both
   retry and bind it.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3

from tests.controlplane import fakes
from tests.controlplane.harness import ControlPlane, Scheduler
from tests.kube.live import LiveEnv, RunProcess, events, pods, wait_all_bound, wait_until

pytestmark = pytest.mark.e2e

LANES = {"ours": "policy-scheduler", "kube": "kube-ref"}


@pytest.fixture
def env(cp: ControlPlane, tmp_path: Path) -> Iterator[LiveEnv]:
    e = LiveEnv(cp, tmp_path, "writes")
    try:
        yield e
    finally:
        # one request for the namespace's hundreds of pods (cleanup deletes them one by one)
        e.api.delete(f"/api/v1/namespaces/{e.ns}/pods", gracePeriodSeconds=0)
        e.cleanup()


@pytest.fixture
def kube(env: LiveEnv) -> Iterator[Scheduler]:
    sched = env.cp.start_scheduler({"profiles": [{"schedulerName": "kube-ref"}]})
    try:
        yield sched
    finally:
        env.cp.stop_scheduler(sched)


def kube_metrics(env: LiveEnv, sched: Scheduler) -> str:
    cp = env.cp
    http = urllib3.PoolManager(cert_reqs="CERT_REQUIRED", ca_certs=str(cp.ca.pair.cert_file),
                               cert_file=str(cp.admin.cert_file), key_file=str(cp.admin.key_file), retries=False)
    resp = http.request("GET", f"{sched.url}/metrics")
    assert resp.status == 200, resp.data[:200]
    return str(resp.data.decode())


def sample_sum(text: str, name: str, **labels: str) -> float:
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            found = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}")[0])) if "{" in line else {}
            if all(found.get(k) == v for k, v in labels.items()):
                total += float(line.rsplit(" ", 1)[1])
    return total


def nodes(env: LiveEnv, lane: str, count: int, cpu: str, start: int = 0) -> None:
    fakes.create_all(env.api, [fakes.make_node(f"{env.ns}-{lane}-{i}", cpu=cpu, labels={"lane": lane}, owner=env.ns)
                               for i in range(start, start + count)])


def lane_pod(env: LiveEnv, lane: str, name: str, cpu: str = "200m", **kw: Any) -> dict[str, Any]:
    return fakes.make_pod(name, env.ns, cpu=cpu, memory="64Mi", scheduler_name=LANES[lane], owner=env.ns,
                          node_selector={"lane": lane}, **kw)


def our_decisions(run: RunProcess, ns: str) -> Counter[str]:
    """Pod name -> decisions ours logged for it (one line per attempt)."""
    return Counter(line["pod"].split("/", 1)[1] for line in run.lines()
                   if line.get("msg") in ("scheduled", "unschedulable", "error") and str(line.get("pod", "")).startswith(ns + "/"))


def condition(pod: dict[str, Any]) -> dict[str, Any] | None:
    return next((c for c in pod["status"].get("conditions") or [] if c["type"] == "PodScheduled"), None)


def stale_writes(env: LiveEnv, prefix: str) -> tuple[int, int]:
    """(bound pods whose PodScheduled is False, FailedScheduling events later than the pod's Scheduled)."""
    bound = [p for p in pods(env.api, env.ns) if p["metadata"]["name"].startswith(prefix) and p["spec"].get("nodeName")]
    stale_conditions = sum(1 for p in bound if (condition(p) or {}).get("status") == "False")
    scheduled: dict[str, str] = {}
    failed: dict[str, list[str]] = {}
    for e in events(env.api, env.ns):
        name = e["regarding"]["name"]
        if not name.startswith(prefix):
            continue
        when = str((e.get("series") or {}).get("lastObservedTime") or e.get("eventTime"))
        if e["reason"] == "Scheduled":
            scheduled[name] = str(e.get("eventTime"))
        elif e["reason"] == "FailedScheduling":
            failed.setdefault(name, []).append(when)
    late = sum(1 for name, times in failed.items() for t in times if name in scheduled and t > scheduled[name])
    return stale_conditions, late


def test_no_failure_write_lands_on_a_bound_pod(env: LiveEnv, kube: Scheduler) -> None:
    count = 100
    for lane in LANES:
        nodes(env, lane, 1, cpu="100m")  # a node, but no room: 0/N nodes ... Insufficient cpu
    run = env.start()
    made = [lane_pod(env, lane, f"{lane}-{i}") for lane in LANES for i in range(count)]
    fakes.create_all(env.api, made)
    # the failures are being reported: give room while their writes are still going out
    wait_until(lambda: any(e["reason"] == "FailedScheduling" for e in events(env.api, env.ns)
                           if e["regarding"]["name"].startswith("ours-"))
               and any(e["reason"] == "FailedScheduling" for e in events(env.api, env.ns)
                       if e["regarding"]["name"].startswith("kube-")), 30, "first FailedScheduling events")
    for lane in LANES:
        nodes(env, lane, 10, cpu="4", start=1)  # room for 20 pods each
    wait_all_bound(env.api, env.ns, [p["metadata"]["name"] for p in made], timeout=60)
    time.sleep(3)  # writes still queued or retried would land now
    found = {lane: stale_writes(env, f"{lane}-") for lane in LANES}
    print(f"\n(bound pods with PodScheduled=False, FailedScheduling after Scheduled) of {count} pods: {found}")
    assert found["kube"] == (0, 0), found  # the yardstick
    assert found["ours"] == (0, 0), found
    assert not run.find("bind conflict")


def test_an_update_racing_the_bind_never_brings_a_second_decision(env: LiveEnv, kube: Scheduler) -> None:
    count = 100
    for lane in LANES:
        nodes(env, lane, 10, cpu="8")  # room for all
    run = env.start()
    nowhere = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "disktype", "operator": "In", "values": ["nvme"]}]}]}}}
    fakes.create_all(env.api, [lane_pod(env, lane, f"{lane}-nowhere", affinity=nowhere) for lane in LANES])
    wait_until(lambda: sum(1 for e in events(env.api, env.ns) if e["reason"] == "FailedScheduling") >= 2, 30,
               "both affinity pods rejected")

    def create_and_label(lane: str, i: int) -> None:
        name = f"{lane}-{i}"
        fakes.create(env.api, lane_pod(env, lane, name))
        env.api.patch(f"/api/v1/namespaces/{env.ns}/pods/{name}", {"metadata": {"labels": {"touched": "yes"}}})

    def one_in_four(lane: str, k: int) -> None:
        for i in range(k, count, 4):
            create_and_label(lane, i)

    threads = [threading.Thread(target=one_in_four, args=(lane, k)) for lane in LANES for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wait_all_bound(env.api, env.ns, [f"{lane}-{i}" for lane in LANES for i in range(count)], timeout=60)
    time.sleep(2)  # a second decision would come now
    ours = our_decisions(run, env.ns)
    repeated = {name: n for name, n in ours.items() if n > 1 and name != "ours-nowhere"}
    text = kube_metrics(env, kube)
    kube_attempts = sample_sum(text, "scheduler_schedule_attempts_total", profile="kube-ref")
    kube_scheduled = sample_sum(text, "scheduler_schedule_attempts_total", profile="kube-ref", result="scheduled")
    print(f"\nours: {sum(ours.values())} decisions, {len(repeated)} pods decided twice, "
          f"affinity pod {ours['ours-nowhere']} attempt(s); kube-scheduler: {kube_attempts:.0f} attempts, "
          f"{kube_scheduled:.0f} scheduled")
    assert kube_scheduled == count and kube_attempts == count + 1  # the yardstick: one each (+ the affinity pod)
    assert repeated == {}, repeated
    assert sum(ours.values()) == count + 1 and ours["ours-nowhere"] == 1
    assert not run.find("bind conflict")


def test_a_pod_retried_ten_times_has_one_event_series(env: LiveEnv, kube: Scheduler) -> None:
    for lane in LANES:
        nodes(env, lane, 1, cpu="100m")
    run = env.start()
    fakes.create_all(env.api, [lane_pod(env, lane, f"{lane}-big", cpu="1") for lane in LANES])

    def attempts() -> dict[str, float]:
        return {"ours": float(our_decisions(run, env.ns)["ours-big"]),
                "kube": sample_sum(kube_metrics(env, kube), "scheduler_schedule_attempts_total", profile="kube-ref")}

    rounds = 0
    deadline = time.monotonic() + 100
    while min(attempts().values()) < 10:
        # a pod on its node comes and goes: resources freed there, which moves it (after its backoff) in both
        # schedulers (kube-scheduler 1.35 does not move it for its own label change: no plugin hint wants that)
        assert time.monotonic() < deadline, attempts()
        rounds += 1
        for lane in LANES:
            filler = fakes.make_pod(f"{lane}-filler-{rounds}", env.ns, cpu="10m", memory="8Mi", owner=env.ns,
                                    node_name=f"{env.ns}-{lane}-0")
            fakes.create(env.api, filler)
            env.api.delete(f"/api/v1/namespaces/{env.ns}/pods/{lane}-filler-{rounds}", gracePeriodSeconds=0)
        time.sleep(0.5)
    tried = attempts()

    def failed(lane: str) -> list[dict[str, Any]]:
        return [e for e in events(env.api, env.ns) if e["reason"] == "FailedScheduling"
                and e["regarding"]["name"] == f"{lane}-big"]

    # our count is written within SERIES_REFRESH (10 s) of the last occurrence
    try:
        wait_until(lambda: len(failed("ours")) == 1 and (failed("ours")[0].get("series") or {}).get("count")
                   == our_decisions(run, env.ns)["ours-big"], 20, "our series to count every attempt")
    except TimeoutError:
        pass  # the assertions below say what is there instead
    ours, theirs = failed("ours"), failed("kube")
    print(f"\nattempts {tried}; FailedScheduling Events: ours {len(ours)} "
          f"(series {[e.get('series') for e in ours]}), kube-scheduler {len(theirs)} "
          f"(series {[e.get('series') for e in theirs]})")
    assert 1 <= len(theirs) <= 2  # the yardstick: a series (its key holds the pod's resourceVersion, see events.py)
    assert len(ours) == 1, [(e["metadata"]["name"], e.get("series")) for e in ours]
    assert ours[0]["series"]["count"] == our_decisions(run, env.ns)["ours-big"] >= 10 and ours[0]["note"].startswith("0/")


class Watch:
    """A watch of one collection in a thread: when each object was first seen satisfying ``seen``
    (arrival time, monotonic), so bind-to-event delays are measured without polling error."""

    def __init__(self, env: LiveEnv, path: str, seen: Any) -> None:
        self.first: dict[str, float] = {}
        self._seen = seen
        self._resp = env.api._pool.request("GET", f"{env.api.server}{path}?watch=1", preload_content=False,
                                           timeout=urllib3.Timeout(connect=5.0, read=120.0))
        assert self._resp.status == 200
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        buf = b""
        try:
            for chunk in self._resp.stream(65536):
                buf += chunk
                *lines, buf = buf.split(b"\n")
                now = time.monotonic()
                for line in lines:
                    if line.strip():
                        obj = json.loads(line)["object"]
                        name = self._seen(obj)
                        if name:
                            self.first.setdefault(name, now)
        except Exception:  # noqa: BLE001 - closed by stop()
            return

    def stop(self) -> None:
        self._resp.close()  # closed first: the pool gets back a dead connection, not a streaming one
        self._resp.release_conn()


def test_scheduled_events_are_not_held_back_during_a_burst(env: LiveEnv, kube: Scheduler) -> None:
    """4. During a burst each pod's Scheduled event follows its bind within a fraction of a second (it was
    held back while the scheduler was busy, up to 10 s: a leader killed mid-burst never posted them)."""
    count = 200
    for lane in LANES:
        nodes(env, lane, 10, cpu="16")
    env.start()
    made = [lane_pod(env, lane, f"{lane}-{i}", cpu="100m") for i in range(count) for lane in LANES]
    bound = Watch(env, f"/api/v1/namespaces/{env.ns}/pods",
                  lambda p: p["metadata"]["name"] if p["spec"].get("nodeName") else None)
    scheduled = Watch(env, f"/apis/events.k8s.io/v1/namespaces/{env.ns}/events",
                      lambda e: e["regarding"]["name"] if e.get("reason") == "Scheduled" else None)
    try:
        fakes.create_all(env.api, made)
        wait_until(lambda: len(scheduled.first) == 2 * count, 90, "every Scheduled event")
    finally:
        bound.stop()
        scheduled.stop()
    lags = {lane: sorted(t - bound.first[n] for n, t in scheduled.first.items() if n.startswith(lane + "-"))
            for lane in LANES}
    print("\nseconds from a bind to its Scheduled event, as a watch sees them (median, max): "
          + ", ".join(f"{lane} {v[len(v) // 2]:.3f} {v[-1]:.3f}" for lane, v in lags.items()))
    # the yardstick, on a machine shared with other work: most within a fifth of a second, none after 2 s
    kube_median, kube_max = lags["kube"][len(lags["kube"]) // 2], lags["kube"][-1]
    assert kube_median < 0.5 and kube_max < 2.0
    # ours holds an event at most 0.1 s (or 100 of them); the rest is the API server's time and the GIL
    # shared with the scheduling loop mid-burst (measured on 2 busy cores: median 0.25-0.5 s, max 1.1-2.6 s;
    # before, held while the burst lasted: median 3.3 s, max 4.9 s)
    assert lags["ours"][len(lags["ours"]) // 2] < 1.0, lags["ours"]
    assert lags["ours"][-1] < kube_max + 2.0, lags["ours"][-20:]


def test_a_pod_rejected_for_room_is_not_retried_when_pods_arrive(env: LiveEnv, kube: Scheduler) -> None:
    """5. Pods added to the nodes that rejected a pod for cpu cannot make it fit (checker/polarity.py proves
    the fit rule "up"; cycle/events.py sends a bind as ``pods+``): neither scheduler tries it again until a
    pod leaves."""
    for lane in LANES:
        nodes(env, lane, 2, cpu="1")
    fakes.create_all(env.api, [fakes.make_pod(f"{lane}-full-{i}", env.ns, cpu="600m", memory="64Mi", owner=env.ns,
                                              node_name=f"{env.ns}-{lane}-{i}") for lane in LANES for i in range(2)])
    run = env.start()
    fakes.create_all(env.api, [lane_pod(env, lane, f"{lane}-big", cpu="600m") for lane in LANES])

    def attempts() -> dict[str, float]:
        return {"ours": float(our_decisions(run, env.ns)["ours-big"]),
                "kube": sample_sum(kube_metrics(env, kube), "scheduler_schedule_attempts_total", profile="kube-ref")}

    wait_until(lambda: min(attempts().values()) >= 1, 30, "both big pods attempted")
    first = attempts()
    # pods that fit arrive on both nodes (bound directly: an assigned pod added), spaced past the backoff
    # (1 s, then 2 s) after which a pod moved by them would be tried again
    for k in range(6):
        for lane in LANES:
            fakes.create(env.api, fakes.make_pod(f"{lane}-small-{k}", env.ns, cpu="50m", memory="8Mi", owner=env.ns,
                                                 node_name=f"{env.ns}-{lane}-{k % 2}"))
        time.sleep(1.5)
    time.sleep(3)
    after_adds = attempts()
    # a pod leaves node 0: the big pod fits there now (1000m - 150m of small pods >= 600m). One lane after the
    # other: kube-scheduler's Fit retries on a delete on any node, the other lane's too (ours only where the
    # rule that rejected it reads the pods: not on a node its selector rejected)
    placed: dict[str, str] = {}
    for lane in ("kube", "ours"):
        env.api.delete(f"/api/v1/namespaces/{env.ns}/pods/{lane}-full-0", gracePeriodSeconds=0)
        placed.update(wait_all_bound(env.api, env.ns, [f"{lane}-big"], timeout=30))
    time.sleep(1)
    final = attempts()
    series = {lane: [(e.get("series") or {}).get("count", 1) for e in events(env.api, env.ns)
                     if e["reason"] == "FailedScheduling" and e["regarding"]["name"] == f"{lane}-big"] for lane in LANES}
    print(f"\nattempts of the big pod: first {first}, after 6 pods arrived on its nodes {after_adds}, after one "
          f"left (bound to {placed}) {final}; FailedScheduling series counts {series}")
    assert after_adds["ours"] == after_adds["kube"], after_adds  # no retry on arrivals, as kube-scheduler
    assert final["ours"] == final["kube"], final  # one more, on the delete, in both
    assert placed["ours-big"] == f"{env.ns}-ours-0" and placed["kube-big"] == f"{env.ns}-kube-0"
    assert series["ours"] == series["kube"], series
