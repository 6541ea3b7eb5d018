"""Preemption on the real control plane: ``policyscheduler run`` beside the real kube-scheduler (v1.35).

Each scheduler gets its own nodes (labelled ``pl-side: ours`` / ``pl-side: kube``; every pod's
nodeSelector names its side, so the other side's nodes are UnschedulableAndUnresolvable for it and
neither scheduler's preemption can touch the other's pods) filled the same way with running pods of
priority 100 (distinct ``startTime``s: no order is left to chance). Then one preemptor each (``pre-ours``
with schedulerName ``policy-scheduler``, ``pre-kube`` for a kube-scheduler profile ``kube-ref``).

Compared between the two, with the side taken out of the names: the victims (pods with the
``DisruptionTarget`` / ``PreemptionByScheduler`` condition, and exactly those have a deletionTimestamp:
nothing else is evicted), the condition's text, the ``Preempted`` events on the victims, the preemptor's
``status.nominatedNodeName`` and the node it is finally bound to. Victims have a long grace period (no
kubelet runs), so they stay Terminating until the test, standing in for the kubelet, removes them.

1. three full nodes, a priority-1,000,000 pod that fits only if one pod goes;
2. a PodDisruptionBudget (``minAvailable``, ``disruptionsAllowed`` 0) on the pods of the node that would
   otherwise be chosen: both go to the other node;
3. ``preemptionPolicy: Never``: no victim, no nomination, the same ``preemption: not eligible`` text (kube's
   has DynamicResources' "no new claims to deallocate, " before it; we have no DRA);
4. a preemptor deleted while nominated frees the room it held: both retry the pods it held it against;
5. a ``preempt`` rule of examples/policies/ (``batch_evicts_batch``): ours evicts elsewhere than kube (which
   has no such rule), and ``explain --kubeconfig`` names the rule and its file:line for the protected pods.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane import fakes
from tests.controlplane.harness import ControlPlane, Scheduler
from tests.kube.live import LiveEnv, RunProcess, events, pods, wait_all_bound, wait_until

pytestmark = pytest.mark.e2e

SIDES = {"ours": "policy-scheduler", "kube": "kube-ref"}
SIDE = "pl-side"
PDB_PATH = "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets"
DRA_NOTE = "no new claims to deallocate, "
KUBE_CONFIG = {"percentageOfNodesToScore": 100, "profiles": [{"schedulerName": "kube-ref"}]}


class Pair:
    """Both schedulers on one namespace; priority classes named after it."""

    def __init__(self, env: LiveEnv) -> None:
        self.env, self.api, self.ns = env, env.api, env.ns
        self.classes = {"low": f"{self.ns}-low", "high": f"{self.ns}-high", "never": f"{self.ns}-never"}
        for key, value in (("low", 100), ("high", 1_000_000), ("never", 1_000_000)):
            body: dict[str, Any] = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                    "metadata": {"name": self.classes[key]}, "value": value}
            if key == "never":
                body["preemptionPolicy"] = "Never"
            fakes.create(self.api, body)
        self.kube: Scheduler | None = None
        self.run: RunProcess | None = None

    def start(self) -> None:
        self.kube = self.env.cp.start_scheduler(KUBE_CONFIG)
        self.run = self.env.start("-v", "4")  # debug lines: the queue says what sent a pod back (moves())

    def moves(self) -> list[dict[str, Any]]:
        """Our queue's debug lines: which event sent which pod back for another attempt."""
        return [] if self.run is None else [ln for ln in self.run.find("queue move")]

    def close(self) -> None:
        if self.kube is not None:
            self.env.cp.stop_scheduler(self.kube)
        for name in self.classes.values():
            self.api.delete(f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")

    def fill(self, nodes: int, *, labels_of: Any = lambda i: {}) -> None:
        """Per side: ``nodes`` nodes of 2 CPUs, each with two running 1-CPU priority-100 pods (node i's start
        later than node i-1's; within a node, p0 before p1)."""
        for side in SIDES:
            made = [fakes.make_node(f"{self.ns}-{side}-{i}", cpu="2", memory="8Gi", labels={SIDE: side},
                                    owner=self.ns) for i in range(nodes)]
            fakes.create_all(self.api, made)
            for i in range(nodes):
                for k in range(2):
                    name = f"{side}-n{i}-p{k}"
                    pod = fakes.make_pod(name, self.ns, cpu="1", memory="64Mi", node_name=f"{self.ns}-{side}-{i}",
                                         labels={SIDE: side, "role": "running", **labels_of(i)}, owner=self.ns)
                    pod["spec"]["priorityClassName"] = self.classes["low"]
                    pod["spec"]["terminationGracePeriodSeconds"] = 3600  # stays Terminating: observable
                    fakes.create(self.api, pod)
                    self.api.patch(f"/api/v1/namespaces/{self.ns}/pods/{name}/status",
                                   {"status": {"phase": "Running",
                                               "startTime": f"2026-01-01T00:{10 * i + k:02d}:00Z"}})

    def preemptors(self, cls: str = "high") -> dict[str, dict[str, Any]]:
        out = {}
        for side, scheduler in SIDES.items():
            pod = fakes.make_pod(f"pre-{side}", self.ns, cpu="1", memory="64Mi", scheduler_name=scheduler,
                                 node_selector={SIDE: side}, labels={SIDE: side, "role": "preemptor"}, owner=self.ns)
            pod["spec"]["priorityClassName"] = self.classes[cls]
            out[side] = fakes.create(self.api, pod)
        return out

    def pods(self) -> dict[str, dict[str, Any]]:
        return {p["metadata"]["name"]: p for p in pods(self.api, self.ns)}

    def strip(self, name: str, side: str) -> str:
        return name.replace(f"{self.ns}-{side}-", "node-").replace(f"{side}-", "")

    def outcome(self, side: str) -> dict[str, Any]:
        """What one scheduler did, in side-free names."""
        all_pods = self.pods()
        mine = {n: p for n, p in all_pods.items() if p["metadata"]["labels"].get(SIDE) == side}
        pre = mine[f"pre-{side}"]
        marked, terminating, conditions = set(), set(), []
        for name, p in mine.items():
            for c in (p.get("status") or {}).get("conditions") or []:
                if c.get("type") == "DisruptionTarget":
                    marked.add(self.strip(name, side))
                    conditions.append((c["status"], c["reason"], c["message"].replace(SIDES[side], "<scheduler>")))
            if p["metadata"].get("deletionTimestamp"):
                terminating.add(self.strip(name, side))
        notes = sorted((self.strip(e["regarding"]["name"], side), e["reason"], e.get("action"),
                        e["note"].replace(pre["metadata"]["uid"], "<uid>").replace(f"{self.ns}-{side}-", "node-"),
                        e.get("reportingController") == SIDES[side])
                       for e in events(self.api, self.ns)
                       if e["reason"] == "Preempted" and e["regarding"]["name"].startswith(f"{side}-"))
        status = pre.get("status") or {}
        message = next((c.get("message", "") for c in status.get("conditions") or []
                        if c.get("type") == "PodScheduled" and c.get("status") == "False"), "")
        nominated = status.get("nominatedNodeName")
        return {"victims": sorted(marked), "terminating": sorted(terminating), "conditions": sorted(conditions),
                "events": notes, "nominated": self.strip(nominated, side) if nominated else None,
                "node": self.strip(pre["spec"].get("nodeName") or "", side) or None,
                "message": message}

    def kubelet(self) -> None:
        """What a kubelet would do once the grace period is over: remove the Terminating pods."""
        for name, p in self.pods().items():
            if p["metadata"].get("deletionTimestamp"):
                self.api.delete(f"/api/v1/namespaces/{self.ns}/pods/{name}", gracePeriodSeconds=0)


@pytest.fixture
def pair(cp: ControlPlane, tmp_path: Path) -> Iterator[Pair]:
    env = LiveEnv(cp, tmp_path, "pl")
    p = Pair(env)
    try:
        yield p
    finally:
        p.close()
        env.cleanup()


def _nominated_with_victims(pair: Pair) -> dict[str, dict[str, Any]] | None:
    got = {side: pair.outcome(side) for side in SIDES}
    if all(o["nominated"] and o["victims"] and len(o["events"]) == len(o["victims"]) for o in got.values()):
        return got
    return None


def _preempt_and_bind(pair: Pair) -> dict[str, dict[str, Any]]:
    """Preemptors created; both nominated with victims marked; Terminating pods removed; both bound."""
    made = pair.preemptors()
    got: dict[str, dict[str, Any]] = wait_until(lambda: _nominated_with_victims(pair), 30,
                                                "both preemptors nominated, victims marked and evented")
    time.sleep(1.0)  # anything else either scheduler would (wrongly) evict has time to show
    got = {side: pair.outcome(side) for side in SIDES}
    print("\nours:", got["ours"], "\nkube:", got["kube"])
    for side, o in got.items():
        assert o["terminating"] == o["victims"], f"{side}: evicted beyond the marked victims"
        assert o["node"] is None, f"{side}: bound before its victims were gone"
        assert all(e[1:] == ("Preempted", "Preempting", f"Preempted by pod <uid> on node {o['nominated']}", True)
                   for e in o["events"]), o["events"]
        assert o["conditions"] == [("True", "PreemptionByScheduler",
                                    "<scheduler>: preempting to accommodate a higher priority pod")] * len(o["victims"])
        assert made[side]["metadata"]["uid"]
    assert got["ours"] == got["kube"], f"our queue's moves: {pair.moves()}"
    pair.kubelet()
    wait_until(lambda: all(pair.outcome(s)["node"] for s in SIDES), 30, "both preemptors bound")
    final = {side: pair.outcome(side) for side in SIDES}
    for side in SIDES:
        assert final[side]["node"] == got[side]["nominated"], f"{side}: bound elsewhere than nominated"
    return got


def test_a_high_priority_pod_evicts_what_kube_scheduler_evicts_and_binds(pair: Pair) -> None:
    pair.fill(3)
    pair.start()
    got = _preempt_and_bind(pair)
    assert len(got["ours"]["victims"]) == 1  # one 1-CPU pod is enough
    assert pair.run is not None and not [ln for ln in pair.run.lines() if ln.get("level") == "error"]
    logged = pair.run.find("preempted")  # one log line per victim, with the preemptor
    assert [(ln["pod"], ln["preemptor"]) for ln in logged] == [
        (f"{pair.ns}/ours-{got['ours']['victims'][0]}", f"{pair.ns}/pre-ours")]


def test_a_pdb_with_min_available_is_respected_when_another_node_is_possible(pair: Pair) -> None:
    # node 1's pods start later: without the budget both schedulers would pick node 1 (test 1 shows the rule)
    pair.fill(2, labels_of=lambda i: {"app": "protected" if i == 1 else "free"})
    for side in SIDES:
        body = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": {"name": f"pdb-{side}", "namespace": pair.ns},
                "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "protected", SIDE: side}}}}
        pair.api.post(PDB_PATH.format(ns=pair.ns), body)
        pair.api.patch(PDB_PATH.format(ns=pair.ns) + f"/pdb-{side}/status",  # no disruption controller runs
                       {"status": {"disruptionsAllowed": 0, "currentHealthy": 2, "desiredHealthy": 2,
                                   "expectedPods": 2, "observedGeneration": 1}})
    pair.start()
    got = _preempt_and_bind(pair)
    assert got["ours"]["nominated"] == "node-0" and got["ours"]["victims"] == ["n0-p1"]


def test_preemption_policy_never_never_preempts(pair: Pair) -> None:
    pair.fill(3)
    pair.start()
    pair.preemptors("never")
    wait_until(lambda: all(pair.outcome(s)["message"] for s in SIDES), 30, "both FailedScheduling conditions")
    time.sleep(2.0)
    got = {side: pair.outcome(side) for side in SIDES}
    for side, o in got.items():
        assert (o["victims"], o["terminating"], o["events"], o["nominated"], o["node"]) == ([], [], [], None, None), side
        assert o["message"].endswith("preemption: not eligible due to preemptionPolicy=Never."), o["message"]
    # kube's DynamicResources PostFilter adds its own reason before DefaultPreemption's; we have no DRA
    # (the same difference tests/e2e/parity_report.py allows): everything else is word for word kube's
    assert DRA_NOTE in got["kube"]["message"]
    assert got["ours"]["message"] == got["kube"]["message"].replace(DRA_NOTE, "")


def _tries(pair: Pair, name: str) -> dict[str, int]:
    """Per side, the failed attempts of pod ``<side>-<name>`` its FailedScheduling Events count: one Event,
    then a series of 2 (both recorders write the second occurrence at once; later counts may wait)."""
    out = dict.fromkeys(SIDES, 0)
    for e in events(pair.api, pair.ns):
        side = next((s for s in SIDES if e["regarding"]["name"] == f"{s}-{name}"), None)
        if side is not None and e["reason"] == "FailedScheduling":
            out[side] += (e.get("series") or {}).get("count", 1)
    return out


def test_a_deleted_nominated_pod_frees_the_room_it_held(pair: Pair) -> None:
    """A preemptor nominated to a node (its victim still Terminating) holds that room against pods of lower
    or equal priority. A waiting pod of its priority (``preemptionPolicy: Never``) fails once; the preemptor
    is deleted: kube-scheduler (``deletePodFromSchedulingQueue``) moves the pods it held room against, with
    an ``AssignedPodDelete``, and so must ours -- the same number of attempts (the node is still full: the
    victim is Terminating). When the victim goes, both bind the waiting pod there."""
    pair.fill(1)
    pair.start()
    pair.preemptors()
    wait_until(lambda: _nominated_with_victims(pair), 30, "both preemptors nominated, victims marked")
    for side, scheduler in SIDES.items():
        pod = fakes.make_pod(f"{side}-mid", pair.ns, cpu="1", memory="64Mi", scheduler_name=scheduler,
                             node_selector={SIDE: side}, labels={SIDE: side, "role": "waiting"}, owner=pair.ns)
        pod["spec"]["priorityClassName"] = pair.classes["never"]  # the preemptor's priority; never preempts
        fakes.create(pair.api, pod)
    wait_until(lambda: min(_tries(pair, "mid").values()) >= 1, 30, "both waiting pods tried")
    time.sleep(3.0)  # nothing else may send them back: both stay at one attempt
    first = _tries(pair, "mid")
    for side in SIDES:
        pair.api.delete(f"/api/v1/namespaces/{pair.ns}/pods/pre-{side}", gracePeriodSeconds=0)
    deadline = time.monotonic() + 15
    while _tries(pair, "mid")["kube"] == first["kube"] and time.monotonic() < deadline:
        time.sleep(0.5)
    time.sleep(3.0)  # past ours' backoff too
    after = _tries(pair, "mid")
    print(f"\nwaiting pod's attempts: before the preemptor was deleted {first}, after {after}; "
          f"our queue's moves: {pair.moves()}")
    assert first["ours"] == first["kube"] == 1, first
    assert after["ours"] == after["kube"], f"{after}; our queue's moves: {pair.moves()}; log: {[ln for ln in pair.run.lines() if 'mid' in str(ln)] if pair.run else None}"
    pair.kubelet()  # the victim goes: room for the waiting pod on its side's node
    placed = wait_all_bound(pair.api, pair.ns, [f"{side}-mid" for side in SIDES], 30)
    assert placed == {f"{side}-mid": f"{pair.ns}-{side}-0" for side in SIDES}, placed


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "policies" / "no-evict-payments.policy"


def _explain_live(pair: Pair, policies: Path) -> dict[str, Any]:
    """``policyscheduler explain NS/pre-ours --kubeconfig ... --policies DIR -o json`` as a child process."""
    import json
    import os
    import subprocess
    import sys

    repo = EXAMPLE.parents[2]
    done = subprocess.run([sys.executable, "-m", "policyscheduler", "explain", f"{pair.ns}/pre-ours",
                           "--kubeconfig", str(pair.env.cp.kubeconfig), "--policies", str(policies),
                           "--output", "json"], capture_output=True, text=True, timeout=120, cwd=repo,
                          env={**os.environ, "PYTHONPATH": str(repo)})
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


def test_a_preempt_rule_from_the_examples_changes_the_victims_and_explain_names_it(pair: Pair,
                                                                                   tmp_path: Path) -> None:
    """examples/policies/no-evict-payments.policy's ``batch_evicts_batch``: a batch preemptor may evict only
    batch pods. Node 1's pods start later, so kube-scheduler's DefaultPreemption (no such rule) evicts there;
    they are web pods, so ours must evict on node 0 (batch pods) instead, and ``explain`` names the rule
    and its file:line for the protected pods."""
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / EXAMPLE.name).write_text(EXAMPLE.read_text())
    pair.fill(2, labels_of=lambda i: {"tier": "batch" if i == 0 else "web"})
    for side, scheduler in SIDES.items():
        pod = fakes.make_pod(f"pre-{side}", pair.ns, cpu="1", memory="64Mi", scheduler_name=scheduler,
                             node_selector={SIDE: side}, labels={SIDE: side, "role": "preemptor", "tier": "batch"},
                             owner=pair.ns)
        pod["spec"]["priorityClassName"] = pair.classes["high"]
        fakes.create(pair.api, pod)
    doc = _explain_live(pair, policies)  # before either scheduler runs: the pod is pending and fits nowhere
    protected = [(p["pod"], p["rule"], p["location"]) for p in doc["preemption"]["protected"]]
    assert {(f"{pair.ns}/ours-n1-p{k}", "preempt batch_evicts_batch") for k in range(2)} <= {p[:2] for p in protected}
    assert all(loc == f"{policies / EXAMPLE.name}:11" for _, rule, loc in protected
               if rule == "preempt batch_evicts_batch"), protected
    assert doc["preemption"]["node"] == f"{pair.ns}-ours-0"
    pair.kube = pair.env.cp.start_scheduler(KUBE_CONFIG)
    pair.run = pair.env.start("--policies", str(policies))
    got: dict[str, dict[str, Any]] = wait_until(lambda: _nominated_with_victims(pair), 30,
                                                "both preemptors nominated, victims marked and evented")
    time.sleep(1.0)
    got = {side: pair.outcome(side) for side in SIDES}
    print("\nours:", got["ours"], "\nkube:", got["kube"])
    assert (got["kube"]["nominated"], got["kube"]["victims"]) == ("node-1", ["n1-p1"])  # DefaultPreemption
    assert (got["ours"]["nominated"], got["ours"]["victims"]) == ("node-0", ["n0-p1"])  # the rule moved it
    for o in got.values():
        assert o["terminating"] == o["victims"]
