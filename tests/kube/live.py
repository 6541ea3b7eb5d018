"""Helpers for the live-scheduler e2e tests: ``policyscheduler run`` as a child process, an
independent hard-constraint checker, and small API queries.

The checker deliberately shares no code with the evaluator or the object model: it re-reads the raw
pods and nodes from the API server and checks resources, pod count, nodeSelector, required node
affinity (In/NotIn/Exists/DoesNotExist), NoSchedule/NoExecute taints, required pod anti-affinity and
DoNotSchedule topology spread with its own few lines of code.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any, TypeVar

import pytest

from policyscheduler.loader import load_layered
from tests.controlplane import fakes, procs
from tests.controlplane.api import Api, wait_for
from tests.controlplane.harness import ControlPlane

REPO = Path(__file__).resolve().parents[2]


class RunProcess:
    """One ``policyscheduler run`` child (dies with the test process; see procs.Child)."""

    def __init__(self, cp: ControlPlane, log_file: Path, *args: str, name: str = "policy-scheduler",
                 entry: tuple[str, ...] = ("-m", "policyscheduler", "run"), env: dict[str, str] | None = None) -> None:
        """``entry``: what runs (``python -m policyscheduler run`` unless a test embeds the same ``run``
        in a script of its own, e.g. tests/e2e/volume_runner.py); ``env``: added to the environment."""
        self.log_file = log_file
        argv = [sys.executable, *entry, "--kubeconfig", str(cp.kubeconfig),
                "--scheduler-name", name, "--bind-address", "127.0.0.1:0", *args]
        env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
        self.child = procs.Child("policyscheduler-run", argv, log_file, env=env)

    @property
    def pid(self) -> int:
        return self.child.pid

    def lines(self) -> list[dict[str, Any]]:
        """The JSON log lines so far (non-JSON lines, e.g. a traceback, are returned as {"raw": ...})."""
        out = []
        for line in self.log_file.read_text(errors="replace").splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                out.append({"raw": line})
        return out

    def find(self, msg: str) -> list[dict[str, Any]]:
        return [line for line in self.lines() if line.get("msg") == msg]

    def wait_log(self, msg: str, timeout: float = 30.0) -> dict[str, Any]:
        def check() -> dict[str, Any] | None:
            if not self.child.alive():
                raise AssertionError(f"policyscheduler run exited ({self.child.popen.returncode}):\n"
                                     + self.child.log_tail(40))
            found = self.find(msg)
            return found[0] if found else None
        line: dict[str, Any] = wait_for(check, timeout=timeout, interval=0.1, what=f"log line {msg!r}")
        return line

    def terminate(self, timeout: float = 60.0) -> int:
        """SIGTERM and wait; the exit status."""
        if self.child.alive():
            os.kill(self.pid, signal.SIGTERM)
            self.child.popen.wait(timeout=timeout)
        self.child.stop()
        return int(self.child.popen.returncode)

    def kill(self) -> None:
        os.kill(self.pid, signal.SIGKILL)
        self.child.popen.wait(timeout=10)
        self.child.stop()


# -- API queries -----------------------------------------------------------------------------------------

def pods(api: Api, namespace: str) -> list[dict[str, Any]]:
    return api.list_items(f"/api/v1/namespaces/{namespace}/pods")


def events(api: Api, namespace: str) -> list[dict[str, Any]]:
    return api.list_items(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")


def wait_all_bound(api: Api, namespace: str, names: Iterable[str], timeout: float) -> dict[str, str]:
    wanted = set(names)

    def check() -> dict[str, str] | None:
        bound = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in pods(api, namespace)
                 if p["metadata"]["name"] in wanted}
        return {k: v for k, v in bound.items() if v} if all(bound.get(n) for n in wanted) else None

    try:
        placed: dict[str, str] = wait_for(check, timeout=timeout, interval=0.25, what="pods to be bound")
        return placed
    except TimeoutError:
        bound = {p["metadata"]["name"] for p in pods(api, namespace) if p["spec"].get("nodeName")}
        raise AssertionError(f"{len(wanted - bound)} of {len(wanted)} pods not bound after {timeout}s: "
                             f"{sorted(wanted - bound)[:10]}") from None


def scheduled_events(api: Api, namespace: str, controller: str) -> Counter[str]:
    """Pod name -> number of ``Scheduled`` events reported by ``controller``."""
    return Counter(e["regarding"]["name"] for e in events(api, namespace)
                   if e.get("reason") == "Scheduled" and e.get("reportingController") == controller)


# -- the independent checker ----------------------------------------------------------------------------

_SUFFIX: dict[str, Fraction | int] = {"m": Fraction(1, 1000), "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
           "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def quantity(text: str) -> Fraction:
    for suffix in sorted(_SUFFIX, key=len, reverse=True):
        if text.endswith(suffix):
            return Fraction(text[: -len(suffix)]) * _SUFFIX[suffix]
    return Fraction(text)


def _requests(pod: dict[str, Any]) -> dict[str, Fraction]:
    total: dict[str, Fraction] = defaultdict(Fraction)
    for c in pod["spec"].get("containers", []):
        for k, v in ((c.get("resources") or {}).get("requests") or {}).items():
            total[k] += quantity(v)
    return total


def _matches(labels: dict[str, str], selector: dict[str, Any]) -> bool:
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    return all(_expr(labels, e) for e in selector.get("matchExpressions") or [])


def _expr(labels: dict[str, str], e: dict[str, Any]) -> bool:
    key, op, values = e["key"], e["operator"], e.get("values") or []
    if op == "In":
        return labels.get(key) in values
    if op == "NotIn":
        return labels.get(key) not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    raise AssertionError(f"checker does not know operator {op}")


def _tolerates(pod: dict[str, Any], taint: dict[str, Any]) -> bool:
    for t in pod["spec"].get("tolerations") or []:
        if t.get("effect") and t["effect"] != taint["effect"]:
            continue
        if t.get("operator") == "Exists" and (not t.get("key") or t["key"] == taint["key"]):
            return True
        if t.get("key") == taint["key"] and t.get("value", "") == taint.get("value", ""):
            return True
    return False


def violations(all_pods: list[dict[str, Any]], nodes: list[dict[str, Any]]) -> list[str]:
    """Every hard-constraint violation and over-commit among the bound pods (empty = all good)."""
    problems: list[str] = []
    by_name = {n["metadata"]["name"]: n for n in nodes}
    on: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for p in all_pods:
        if p["spec"].get("nodeName"):
            on[p["spec"]["nodeName"]].append(p)
    for node_name, placed in on.items():
        node = by_name.get(node_name)
        if node is None:
            problems.append(f"{len(placed)} pods bound to unknown node {node_name}")
            continue
        alloc = node["status"]["allocatable"]
        if len(placed) > int(alloc["pods"]):
            problems.append(f"{node_name}: {len(placed)} pods > {alloc['pods']}")
        used: dict[str, Fraction] = defaultdict(Fraction)
        for p in placed:
            for k, v in _requests(p).items():
                used[k] += v
        for k, v in used.items():
            if v > quantity(alloc.get(k, "0")):
                problems.append(f"{node_name}: {k} requests {float(v)} > allocatable {alloc.get(k)}")
        labels = node["metadata"].get("labels") or {}
        for p in placed:
            name = p["metadata"]["name"]
            spec = p["spec"]
            if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
                problems.append(f"{name} on {node_name}: nodeSelector not matched")
            required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                        .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms")
            if required and not any(all(_expr(labels, e) for e in term.get("matchExpressions") or [])
                                    for term in required):
                problems.append(f"{name} on {node_name}: required node affinity not matched")
            for taint in node["spec"].get("taints") or []:
                if taint["effect"] in ("NoSchedule", "NoExecute") and not _tolerates(p, taint):
                    problems.append(f"{name} on {node_name}: untolerated taint {taint['key']}")
    placed_pods = [p for p in all_pods if p["spec"].get("nodeName") in by_name]

    def domain(p: dict[str, Any], key: str) -> str | None:
        return (by_name[p["spec"]["nodeName"]]["metadata"].get("labels") or {}).get(key)

    for p in placed_pods:
        spec, ns = p["spec"], p["metadata"]["namespace"]
        anti = (((spec.get("affinity") or {}).get("podAntiAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or [])
        for term in anti:
            mine = domain(p, term["topologyKey"])
            for q in placed_pods:
                if q is not p and q["metadata"]["namespace"] == ns and mine is not None \
                        and domain(q, term["topologyKey"]) == mine \
                        and _matches(q["metadata"].get("labels") or {}, term["labelSelector"]):
                    problems.append(f"{p['metadata']['name']} and {q['metadata']['name']} share "
                                    f"{term['topologyKey']}={mine} despite anti-affinity")
        for c in spec.get("topologySpreadConstraints") or []:
            if c.get("whenUnsatisfiable") != "DoNotSchedule":
                continue
            key = c["topologyKey"]
            domains = {(n["metadata"].get("labels") or {}).get(key) for n in nodes} - {None}
            counts = Counter(domain(q, key) for q in placed_pods if q["metadata"]["namespace"] == ns
                             and _matches(q["metadata"].get("labels") or {}, c["labelSelector"]))
            skew = max(counts[d] for d in domains) - min(counts[d] for d in domains)
            if skew > int(c["maxSkew"]):
                problems.append(f"spread {key}: skew {skew} > {c['maxSkew']} ({dict(counts)})")
    return sorted(set(problems))


def wait_until(check: Any, timeout: float, what: str) -> Any:
    return wait_for(check, timeout=timeout, interval=0.1, what=what)


def now() -> float:
    return time.monotonic()


class LiveEnv:
    """A test's namespace on a control plane and the ``policyscheduler run`` processes it started; cleanup
    stops them and deletes the nodes labelled with the namespace and its pods."""

    def __init__(self, cp: ControlPlane, tmp: Path, prefix: str) -> None:
        self.cp, self.api, self.tmp = cp, cp.api(), tmp
        self.ns = f"{prefix}-{uuid.uuid4().hex[:6]}"
        self.api.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.ns}})
        self.runs: list[RunProcess] = []

    def start(self, *args: str) -> RunProcess:
        """``policyscheduler run --engine reference --seed 1 ARGS``, once it logged ``started``."""
        run = RunProcess(self.cp, self.tmp / f"run-{len(self.runs)}.log", "--engine", "reference", "--seed", "1", *args)
        self.runs.append(run)
        run.wait_log("started", timeout=60)
        return run

    def cleanup(self) -> None:
        for run in self.runs:
            if run.child.alive():
                run.terminate()
        fakes.delete_owned(self.api, self.ns)
        for p in pods(self.api, self.ns):
            self.api.delete(f"/api/v1/namespaces/{self.ns}/pods/{p['metadata']['name']}", gracePeriodSeconds=0)


E = TypeVar("E", bound=LiveEnv)


def env_fixture(make: Callable[[ControlPlane, Path], E]) -> Any:
    """The ``env`` fixture of a live-run test module: ``make(cp, tmp_path)`` (the module's own control plane,
    see ``cp`` in tests/conftest.py), cleaned up after the test. Assign it as ``env = env_fixture(Env)``."""

    @pytest.fixture(name="env")
    def env(cp: ControlPlane, tmp_path: Path) -> Iterator[E]:
        e = make(cp, tmp_path)
        try:
            yield e
        finally:
            e.cleanup()

    return env


# -- policies for the ConfigMap-backed run tests (test_reload.py, test_run_lifecycle.py) ---------------------

BROKEN_POLICY = 'filter forbid_x\n  reason "x"\n  require node.allocatable["memory"] >= 5Xi\n'
"""A policy file that does not load (``bad-quantity``): what a bad ConfigMap edit puts in force."""


def forbid_rule(value: str, revision: int | None = None) -> str:
    """A one-filter policy keeping pods off nodes labelled ``x=value``; ``revision`` makes the text (and so
    the digest) differ between edits that decide the same."""
    head = "" if revision is None else f"# revision {revision}\n"
    return (f"{head}## Nodes labelled x={value} are off limits.\n"
            f"filter forbid_x\n"
            f'  reason "node(s) are labelled x={value}"\n'
            f'  require node.labels["x"] != "{value}"\n')


def policy_digest(text: str) -> str:
    """The full digest ``run`` reports for a ConfigMap holding ``text`` as ``site.policy``."""
    policy_set = load_layered([], texts=[("site.policy", text)]).policy_set
    assert policy_set is not None
    return policy_set.digest
