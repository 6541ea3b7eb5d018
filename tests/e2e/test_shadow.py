"""Shadow profiles beside the real kube-scheduler, on the real control plane.

kube-scheduler (``percentageOfNodesToScore: 100``) schedules a mixed workload -- varied requests, required
and preferred node affinity, zone spreading, required and preferred pod anti-affinity -- on 30 nodes, one
pod at a time. One ``policyscheduler run --config`` process runs two shadow profiles of
``default-scheduler``: ``judge`` with the default policies (it must agree: same node or a tie on >= 95% of
the pods) and ``packer``, whose policies add a strong preference for ``pool=b`` nodes (it must disagree on
the pods kube-scheduler put elsewhere, and say so per pod: log line and ShadowDisagreement event naming both
nodes). The shadow process never binds and never writes a pod.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane import fakes
from tests.controlplane.api import Api
from tests.controlplane.harness import ControlPlane
from tests.e2e.test_profiles import HEAD, ConfigRun
from tests.kube.live import events, pods, wait_until

pytestmark = pytest.mark.e2e

NODES = 30
PODS = 80
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
PREFER_B = ('score prefer_pool_b weight 20 normalize none\n'
            '  value if node.labels["pool"] == "b" then 100 else 0\n')


@pytest.fixture(scope="module")
def cp() -> Iterator[ControlPlane]:
    plane = ControlPlane.start()
    try:
        plane.start_scheduler({"percentageOfNodesToScore": 100, "profiles": [{"schedulerName": "default-scheduler"}]},
                              args=("-v=2",))
        yield plane
    finally:
        plane.stop()


def _nodes(owner: str) -> list[dict[str, Any]]:
    out = []
    for i in range(NODES):
        cpu, memory = [("4", "16Gi"), ("8", "32Gi"), ("16", "64Gi")][i % 3]
        out.append(fakes.make_node(f"{owner}-n{i:02d}", cpu=cpu, memory=memory, zone=f"zone-{'abc'[i % 3 - (i // 3) % 2]}",
                                   labels={"pool": "ab"[(i // 2) % 2]}, owner=owner))
    return out


def _pod(i: int, ns: str) -> dict[str, Any]:
    """The i-th pod of the mixed workload (deterministic)."""
    kind = i % 5
    cpu = f"{100 + (i * 37) % 900}m"
    memory = f"{128 + (i * 53) % 1024}Mi"
    kw: dict[str, Any] = {}
    labels = {"i": str(i)}
    if kind == 0:  # spread over zones, softly
        labels["app"] = "web"
        kw["topology_spread"] = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway",
                                  "labelSelector": {"matchLabels": {"app": "web"}}}]
    elif kind == 1:  # one db per node
        labels["app"] = "db"
        kw["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": HOST, "labelSelector": {"matchLabels": {"app": "db"}}}]}}
    elif kind == 2:  # zones a/b only, pool b preferred
        kw["affinity"] = {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["zone-a", "zone-b"]}]}]},
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 30, "preference": {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["b"]}]}}]}}
    elif kind == 3:  # big
        cpu, memory = f"{1 + i % 3}", f"{2 + i % 4}Gi"
    else:  # keep away from web pods, softly
        labels["app"] = "batch"
        kw["affinity"] = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 50, "podAffinityTerm": {"topologyKey": HOST, "labelSelector": {"matchLabels": {"app": "web"}}}}]}}
    return fakes.make_pod(f"w-{i:03d}", ns, cpu=cpu, memory=memory, labels=labels, **kw)


def _bound(api: Api, ns: str, name: str) -> str | None:
    node = api.get(f"/api/v1/namespaces/{ns}/pods/{name}")["spec"].get("nodeName")
    return str(node) if node else None


def _shadow_counts(run: ConfigRun) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for line in run.metrics().splitlines():
        if line.startswith("policyscheduler_shadow_decisions_total{"):
            labels = dict(p.split("=", 1) for p in line.split("{", 1)[1].split("}", 1)[0].split(","))
            out.setdefault(labels["profile"].strip('"'), {})[labels["agreement"].strip('"')] = float(line.split()[-1])
    return out


def test_shadow_profiles_agree_with_kube_scheduler_on_defaults_and_report_a_changed_rule(
        cp: ControlPlane, tmp_path: Path) -> None:
    api = cp.api()
    ns = f"shadow-{uuid.uuid4().hex[:6]}"
    api.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    fakes.create_all(api, _nodes(ns))
    config = tmp_path / "config.yaml"
    config.write_text(HEAD + """\
engine: reference
profiles:
- schedulerName: judge
  mode: shadow
  shadows: default-scheduler
- schedulerName: packer
  mode: shadow
  shadows: default-scheduler
  policies:
  - name: prefer-pool-b.policy
    text: |
""" + "".join(f"      {line}\n" for line in PREFER_B.splitlines()))
    run = ConfigRun(cp, tmp_path / "run.log", "--config", str(config), "--seed", "1")
    try:
        started = run.wait_log("started", timeout=60)
        assert [(p["name"], p["mode"], p["shadows"]) for p in started["profiles"]] == [
            ("judge", "shadow", "default-scheduler"), ("packer", "shadow", "default-scheduler")]
        wait_until(lambda: len(run.find("watch Pod: list delivered")) > 0 or None, 30, "the first lists")
        time.sleep(1.0)
        placed: dict[str, str] = {}
        for i in range(PODS):  # one at a time: each decision sees every earlier pod in place
            obj = fakes.create(api, _pod(i, ns))
            name = obj["metadata"]["name"]
            placed[name] = wait_until(lambda n=name: _bound(api, ns, n), 30, f"kube-scheduler to bind {name}")

        def judged() -> dict[str, dict[str, float]] | None:
            counts = _shadow_counts(run)
            done = all(sum(counts.get(p, {}).values()) >= PODS for p in ("judge", "packer"))
            return counts if done else None

        counts = wait_until(judged, 30, "a shadow decision for every pod")
        judge, packer = counts["judge"], counts["packer"]
        lines = [line for line in run.find("shadow decision") if line["pod"].startswith(ns + "/")]
        by_profile = {p: {line["pod"]: line for line in lines if line["profile"] == p} for p in ("judge", "packer")}
        assert sum(judge.values()) == PODS and len(by_profile["judge"]) == PODS  # one evaluation per pod
        assert judge["error"] == 0 and packer["error"] == 0
        agreed = judge["agree"] + judge["tie"]
        print(f"\nshadow judge (defaults) vs kube-scheduler: {judge}; agreement {agreed / PODS:.1%}")
        print(f"shadow packer (prefers pool=b): {packer}")
        assert agreed / PODS >= 0.95, [line for line in by_profile["judge"].values()
                                        if line["agreement"] not in ("agree", "tie")]
        for pod_name, line in by_profile["judge"].items():
            assert line["theirs"] == placed[pod_name.split("/")[1]]

        # The changed rule: disagreement on every pod kube-scheduler put outside pool b (where b fits).
        pool = {n["metadata"]["name"]: n["metadata"]["labels"]["pool"] for n in api.list_items(
            "/api/v1/nodes", labelSelector=f"{fakes.OWNER_LABEL}={ns}")}
        disagreements = [line for line in by_profile["packer"].values() if line["agreement"] == "disagree"]
        assert packer["disagree"] == len(disagreements) >= PODS // 4
        for line in disagreements:
            assert pool[line["ours"]] == "b" and pool[line["theirs"]] == "a", line
            assert line["rule"] == "prefer_pool_b" and line["rule_difference"] == 2000, line
            assert line["score_difference"] == line["our_score"] - line["their_score"] > 0, line
        assert all(pool[line["theirs"]] == "b" for line in by_profile["packer"].values()
                   if line["agreement"] in ("agree", "tie"))

        def disagreement_events() -> list[dict[str, Any]] | None:
            found = [e for e in events(api, ns) if e.get("reason") == "ShadowDisagreement"]
            return found if len(found) >= len(disagreements) else None

        posted = wait_until(disagreement_events, 30, "a ShadowDisagreement event per disagreement")
        assert len(posted) == len(disagreements)
        for e in posted:
            line = by_profile["packer"][f"{ns}/{e['regarding']['name']}"]
            assert e["type"] == "Normal" and e["reportingController"] == "packer" and e["action"] == "Shadow"
            assert line["ours"] in e["note"] and line["theirs"] in e["note"] and "prefer_pool_b" in e["note"]

        # Never binds, never writes a pod: kube-scheduler reported every Scheduled event, no pod has a field
        # manager of ours, and the process logged no bind.
        scheduled = [e for e in events(api, ns) if e.get("reason") == "Scheduled"]
        assert len(scheduled) == PODS and {e["reportingController"] for e in scheduled} == {"default-scheduler"}
        for p in pods(api, ns):
            managers = {m.get("manager", "") for m in p["metadata"].get("managedFields") or []}
            assert not any(m.startswith("policyscheduler") for m in managers), managers
        assert not run.find("bound") and not run.find("scheduled")
        assert run.terminate() == 0
    finally:
        if run.child.alive():
            run.kill()
        fakes.delete_owned(api, ns)
        for p in pods(api, ns):
            api.delete(f"/api/v1/namespaces/{ns}/pods/{p['metadata']['name']}", gracePeriodSeconds=0)
