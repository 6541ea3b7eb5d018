"""Parity of preemption: the real kube-scheduler v1.35.4 and our cycle choose the same victims and node.

320 seeded random scenarios run at once on one control plane, each in its own namespace with its own
nodes (labelled ``pp-scenario: s<i>``; the preemptor's nodeSelector names them, so every other node is
UnschedulableAndUnresolvable for it and kube's dry run only looks at the scenario's nodes). A scenario:
2-4 nodes filled with running pods of PriorityClass priorities (distinct ``status.startTime`` so that no
order is left to chance), 0-2 PodDisruptionBudgets (``status.disruptionsAllowed`` 0 or 1, set through
``/status``: no disruption controller runs), pods with required anti-affinity against the preemptor,
preemptors with required affinity or anti-affinity to the running pods, some with ``preemptionPolicy:
Never`` and some that fit without preempting.

kube-scheduler starts after everything is created (its first list sees it all), then every preemptor is
created. kube's outcome per scenario: bound (it fitted), or nominated to a node with the victims it
marked (``DisruptionTarget`` / ``PreemptionByScheduler``; victims have a grace period, so they stay
Terminating and the preemptor stays nominated), or no candidate (its ``preemption: ...`` text). Ours:
the cycle (``schedule_one`` with the vector engine, the reference checked to agree) on the scenario's
objects as the API server stored them, before kube acted. Compared: the nominated node and the victim
set; for "no candidate" the per-node reasons of the preemption text (kube counts every other scenario's
node as "Preemption is not helpful for scheduling", so that one reason is left out). A final tie among
candidates (kube takes a Go map's first key) is reported, not failed, when kube's node is one of ours.
"""

from __future__ import annotations

import random
import re
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pytest

from policyscheduler.cycle import SCHEDULED, Attempt, ClusterCache, Cycle, SchedulingQueue
from policyscheduler.cycle.preemption import NOT_HELPFUL
from policyscheduler.evaluation import make_evaluator
from policyscheduler.loader import load_policy_set
from policyscheduler.simulate.defaults import default_policies_dir
from tests.controlplane import fakes
from tests.controlplane.api import Api
from tests.controlplane.harness import ControlPlane

pytestmark = pytest.mark.e2e

SCENARIOS = 320
SEED = 19_002
LABEL = "pp-scenario"
RUNNING_PRIORITIES = (10, 20, 30, 50, 100)
PREEMPTOR_PRIORITIES = (30, 50, 100, 200, 1000)
CPUS = ("500m", "1", "1500m", "2")
HOST = "kubernetes.io/hostname"
PDB_PATH = "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets"
SCHEDULER_CONFIG = {"percentageOfNodesToScore": 100, "leaderElection": {"leaderElect": False},
                    "profiles": [{"schedulerName": "default-scheduler"}]}


def _millis(cpu: str) -> int:
    return int(cpu[:-1]) if cpu.endswith("m") else int(float(cpu) * 1000)


@dataclass
class Scenario:
    """One scenario's objects (as created) and, later, both sides' outcomes."""

    index: int
    ns: str
    nodes: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)
    starts: dict[str, str] = field(default_factory=dict)
    budgets: list[tuple[dict[str, Any], int]] = field(default_factory=list)
    preemptor: dict[str, Any] = field(default_factory=dict)
    stored: list[dict[str, Any]] = field(default_factory=list)  # the API server's objects, before kube acts


def _priority_class(value: int, never: bool = False) -> dict[str, Any]:
    name = f"pp-{'never' if never else 'prio'}-{value}"
    body: dict[str, Any] = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                            "metadata": {"name": name}, "value": value}
    if never:
        body["preemptionPolicy"] = "Never"
    return body


def scenario(index: int, rng: random.Random) -> Scenario:
    """A seeded scenario (see the module docstring)."""
    s = Scenario(index, f"pp-{index}")
    stamp = iter(rng.sample(range(3000), 40))  # distinct start seconds within the scenario
    free: list[int] = []
    for j in range(rng.randint(2, 4)):
        cap = rng.choice((2000, 3000, 4000))
        name = f"pp{index}-n{j}"
        s.nodes.append(fakes.make_node(name, cpu=f"{cap}m", memory="16Gi", labels={LABEL: f"s{index}"}))
        used = 0
        for k in range(rng.randint(1, 4)):
            cpu = rng.choice(CPUS)
            if used + _millis(cpu) > cap:
                break
            used += _millis(cpu)
            app = rng.choice("abc")
            affinity = None
            if rng.random() < 0.15:
                affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"role": "preemptor"}}, "topologyKey": HOST}]}}
            pod = fakes.make_pod(f"r{j}-{k}", s.ns, cpu=cpu, memory="64Mi", labels={"app": app, "role": "running"},
                                 node_name=name, affinity=affinity)
            pod["spec"]["priorityClassName"] = f"pp-prio-{rng.choice(RUNNING_PRIORITIES)}"
            pod["spec"]["terminationGracePeriodSeconds"] = 3600  # victims stay Terminating: observable
            s.pods.append(pod)
            t = next(stamp)
            s.starts[pod["metadata"]["name"]] = f"2026-01-01T00:{t // 60:02d}:{t % 60:02d}Z"
        free.append(cap - used)
    for b in range(rng.choice((0, 0, 1, 1, 2))):
        app = rng.choice("abc")
        body = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": {"name": f"pdb-{b}", "namespace": s.ns},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}}}
        s.budgets.append((body, rng.choice((0, 0, 1))))
    fits = rng.random() < 0.08
    cpu_m = max(free) if fits and max(free) > 0 else min(4000, max(free) + rng.choice((500, 1000, 1500)))
    affinity = None
    roll = rng.random()
    if roll < 0.12:
        affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": rng.choice("abc")}}, "topologyKey": HOST}]}}
    elif roll < 0.24:
        affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": rng.choice("abc")}}, "topologyKey": HOST}]}}
    pre = fakes.make_pod("preemptor", s.ns, cpu=f"{cpu_m}m", memory="64Mi", labels={"role": "preemptor"},
                         node_selector={LABEL: f"s{index}"}, affinity=affinity)
    never = rng.random() < 0.05
    pre["spec"]["priorityClassName"] = f"pp-{'never' if never else 'prio'}-{rng.choice(PREEMPTOR_PRIORITIES)}"
    s.preemptor = pre
    return s


def _pool(fn: Any, items: list[Any]) -> list[Any]:
    with ThreadPoolExecutor(max_workers=16) as pool:
        return list(pool.map(fn, items))


def create_all(api: Api, scenarios: list[Scenario]) -> None:
    """Namespaces, priority classes, nodes, running pods (+ phase and startTime), PDBs (+ status)."""
    classes = [_priority_class(v) for v in sorted({*RUNNING_PRIORITIES, *PREEMPTOR_PRIORITIES})]
    classes += [_priority_class(v, never=True) for v in PREEMPTOR_PRIORITIES]
    _pool(lambda c: fakes.create(api, c), classes)
    _pool(lambda s: fakes.create(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": s.ns}}), scenarios)
    _pool(lambda n: fakes.create(api, n), [n for s in scenarios for n in s.nodes])
    _pool(lambda p: fakes.create(api, p), [p for s in scenarios for p in s.pods])

    def run(item: tuple[Scenario, dict[str, Any]]) -> None:
        s, pod = item
        name = pod["metadata"]["name"]
        api.patch(f"/api/v1/namespaces/{s.ns}/pods/{name}/status",
                  {"status": {"phase": "Running", "startTime": s.starts[name]}})

    _pool(run, [(s, p) for s in scenarios for p in s.pods])

    def budget(item: tuple[Scenario, tuple[dict[str, Any], int]]) -> None:
        s, (body, allowed) = item
        api.post(PDB_PATH.format(ns=s.ns), body)
        api.patch(PDB_PATH.format(ns=s.ns) + f"/{body['metadata']['name']}/status",
                  {"status": {"disruptionsAllowed": allowed, "currentHealthy": 1 + allowed, "desiredHealthy": 1,
                              "expectedPods": 1 + allowed, "observedGeneration": 1}})

    _pool(budget, [(s, b) for s in scenarios for b in s.budgets])


def read_back(api: Api, scenarios: list[Scenario]) -> None:
    """Each scenario's objects as the API server stores them (what kube-scheduler's informers list)."""
    nodes: dict[str, list[dict[str, Any]]] = {}
    for n in api.list_items("/api/v1/nodes", labelSelector=LABEL):
        n["kind"] = "Node"
        nodes.setdefault(n["metadata"]["labels"][LABEL], []).append(n)

    def one(s: Scenario) -> None:
        pods = api.list_items(f"/api/v1/namespaces/{s.ns}/pods")
        budgets = api.list_items(PDB_PATH.format(ns=s.ns))
        s.stored = [*nodes[f"s{s.index}"], *({**p, "kind": "Pod"} for p in pods),
                    *({**b, "kind": "PodDisruptionBudget"} for b in budgets)]

    _pool(one, scenarios)


@dataclass(frozen=True)
class Outcome:
    kind: str  # bound | nominated | none
    node: str | None
    victims: frozenset[str]
    text: str


def kube_outcomes(api: Api, scenarios: list[Scenario], timeout: float = 120.0) -> dict[str, Outcome]:
    """Wait until every preemptor is bound, nominated (victims settled) or rejected without a candidate."""
    deadline = time.monotonic() + timeout
    stable = 0
    last: dict[str, Outcome] = {}
    wanted = {s.ns for s in scenarios}
    while time.monotonic() < deadline:
        pods = api.list_items("/api/v1/pods", labelSelector="role")
        marked: dict[str, set[str]] = {}
        out: dict[str, Outcome] = {}
        for p in pods:
            ns = p["metadata"]["namespace"]
            if ns not in wanted:
                continue
            if p["metadata"]["labels"].get("role") == "running":
                for c in (p.get("status") or {}).get("conditions") or []:
                    if c.get("type") == "DisruptionTarget" and c.get("reason") == "PreemptionByScheduler":
                        marked.setdefault(ns, set()).add(p["metadata"]["name"])
                continue
            status = p.get("status") or {}
            if p["spec"].get("nodeName"):
                out[ns] = Outcome("bound", p["spec"]["nodeName"], frozenset(), "")
                continue
            text = next((c.get("message", "") for c in status.get("conditions") or []
                         if c.get("type") == "PodScheduled" and c.get("status") == "False"), None)
            if status.get("nominatedNodeName"):
                out[ns] = Outcome("nominated", status["nominatedNodeName"], frozenset(), text or "")
            elif text is not None:
                out[ns] = Outcome("none", None, frozenset(), text)
        out = {ns: Outcome(o.kind, o.node, frozenset(marked.get(ns, ())), o.text) for ns, o in out.items()}
        settled = len(out) == len(wanted) and all(o.kind != "nominated" or o.victims for o in out.values())
        stable = stable + 1 if settled and out == last else 0
        last = out
        if stable >= 2:
            return out
        time.sleep(1.0)
    return last


def _preemption_reasons(text: str) -> Counter[str] | str:
    """The per-node reasons of a ``preemption: 0/N nodes are available: ...`` suffix, without "Preemption
    is not helpful" (see the module docstring); any other suffix as its text."""
    match = re.search(r"preemption: (.*)$", text)
    if match is None:
        return ""
    tail = match.group(1)
    hist = re.match(r"0/\d+ nodes are available: (.*)\.$", tail)
    if hist is None:
        return tail
    reasons: Counter[str] = Counter()
    for part in hist.group(1).split(", "):
        count, reason = part.split(" ", 1)
        if reason != NOT_HELPFUL:
            reasons[reason] += int(count)
    return reasons


def ours(policy_set: Any, s: Scenario, engine: str) -> Attempt:
    """Our cycle on the scenario as stored (before kube acted): one attempt of the preemptor."""
    pre = next(o for o in s.stored if o["kind"] == "Pod" and o["metadata"]["name"] == "preemptor")
    objects = [o for o in s.stored if o is not pre]
    cycle = Cycle(SchedulingQueue(clock=lambda: 0.0), ClusterCache(objects), make_evaluator(engine), policy_set,
                  lambda a: None, rng=random.Random(s.index))
    cycle.queue.add("p", pre)
    attempt = cycle.schedule_one()
    assert attempt is not None
    return attempt


@pytest.fixture(scope="module")
def policy_set() -> Any:
    loaded = load_policy_set([default_policies_dir()])
    assert loaded.policy_set is not None, loaded.diagnostics
    return loaded.policy_set


@pytest.fixture(scope="module")
def run(cp: ControlPlane) -> Iterator[tuple[list[Scenario], dict[str, Outcome]]]:
    """The module's own control plane (nothing to clean up): scenarios created, our view read, kube-scheduler
    started, preemptors created (their create responses are our preemptors), kube's outcomes collected."""
    api = cp.api()
    rng = random.Random(SEED)
    scenarios = [scenario(i, rng) for i in range(SCENARIOS)]
    create_all(api, scenarios)
    read_back(api, scenarios)
    sched = cp.start_scheduler(SCHEDULER_CONFIG, args=("-v=2",))
    try:
        created = _pool(lambda s: fakes.create(api, s.preemptor), scenarios)
        for s, stored in zip(scenarios, created):
            s.stored.append({**stored, "kind": "Pod"})
        yield scenarios, kube_outcomes(api, scenarios)
    finally:
        cp.stop_scheduler(sched)


def test_preemption_chooses_kube_schedulers_victims_and_node(
        run: tuple[list[Scenario], dict[str, Outcome]], policy_set: Any) -> None:
    scenarios, kube = run
    assert len(kube) == len(scenarios), f"kube-scheduler decided only {len(kube)} of {len(scenarios)} scenarios"
    kinds: Counter[str] = Counter()
    ties: list[str] = []
    mismatches: list[str] = []
    for s in scenarios:
        theirs = kube[s.ns]
        mine = ours(policy_set, s, "vector")
        check = ours(policy_set, s, "reference")
        assert (check.nominated_node, [v.key for v in check.victims]) == \
            (mine.nominated_node, [v.key for v in mine.victims]), f"{s.ns}: the backends disagree"
        kinds[theirs.kind] += 1
        victims = frozenset(v.name for v in mine.victims)
        if theirs.kind == "bound":
            ok = mine.result == SCHEDULED and mine.decision is not None and theirs.node in mine.decision.top
            what = f"kube bound it on {theirs.node}; ours: {mine.result} {mine.node} top {mine.decision and list(mine.decision.top)}"
        elif theirs.kind == "nominated":
            tied = mine.preemption.tied if mine.preemption is not None else ()
            if tied and theirs.node in tied and theirs.node != mine.nominated_node:
                ties.append(f"{s.ns}: kube chose {theirs.node}, ours {mine.nominated_node} among {sorted(tied)}")
                continue
            ok = mine.nominated_node == theirs.node and victims == theirs.victims
            what = (f"kube nominated {theirs.node} evicting {sorted(theirs.victims)}; ours {mine.nominated_node} "
                    f"evicting {sorted(victims)} ({mine.decision and mine.decision.message})")
        else:
            mine_text = mine.decision.message if mine.decision is not None else ""
            ok = mine.nominated_node is None and _preemption_reasons(theirs.text) == _preemption_reasons(mine_text or "")
            what = f"kube: {theirs.text!r}; ours: nominated {mine.nominated_node}, {mine_text!r}"
        if not ok:
            mismatches.append(f"{s.ns}: {what}")
    print(f"{len(scenarios)} scenarios: kube {dict(kinds)}; {len(ties)} random ties reported")
    for line in ties:
        print("tie:", line)
    assert kinds["nominated"] >= len(scenarios) // 3 and kinds["none"] > 0 and kinds["bound"] > 0, dict(kinds)
    assert not mismatches, f"{len(mismatches)} of {len(scenarios)} scenarios differ:\n" + "\n".join(mismatches[:30])
