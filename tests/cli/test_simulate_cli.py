"""``policyscheduler simulate`` end to end, as a subprocess (the way users and CI call it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "policyscheduler" / "data" / "demo"


def run(*args: str, stdin: str | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "POLICYSCHEDULER_DEBUG"}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-m", "policyscheduler", *args],
        capture_output=True, text=True, input=stdin, timeout=timeout, env=env, cwd=REPO,
    )


def node(name: str, zone: str, cpu: str = "2", pods: str = "10") -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone}},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": pods}},
    }


def pod(name: str, cpu: str = "500m", **spec: object) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
        "spec": {"schedulerName": "policy-scheduler",
                 "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}], **spec},
    }


@pytest.fixture
def small_cluster(tmp_path: Path) -> Path:
    """Nodes as a kubectl-style List, pods as multi-document YAML, plus a kind we skip."""
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [node("n1", "a"), node("n2", "b")]}))
    docs = [pod("small"), pod("medium", cpu="1"), pod("giant", cpu="64"),
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}]
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all(docs))
    return tmp_path


def test_json_output_follows_the_schema_on_a_small_cluster(small_cluster: Path) -> None:
    proc = run("simulate", str(small_cluster), "--output", "json")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    doc = json.loads(proc.stdout)
    assert set(doc) == {"policy_digest", "placements", "now"}
    assert isinstance(doc["policy_digest"], str) and len(doc["policy_digest"]) == 64
    assert doc["now"] == "2026-01-01T00:00:00Z"  # the fixed decision time (no --now)
    by_pod = {p["pod"]: p for p in doc["placements"]}
    assert set(by_pod) == {"default/small", "default/medium", "default/giant"}
    for p in doc["placements"]:
        assert set(p) == {"pod", "node", "score", "top", "message"}
    assert by_pod["default/giant"]["node"] is None
    assert by_pod["default/giant"]["score"] is None
    assert by_pod["default/giant"]["message"] == "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    for name in ("default/small", "default/medium"):
        p = by_pod[name]
        assert p["node"] in {"n1", "n2"} and p["node"] in p["top"]
        assert isinstance(p["score"], int) and p["message"] is None
    # the skipped Deployment is reported, not fatal
    assert "skipped 1 object of kind Deployment" in proc.stderr


def test_table_output_has_rows_and_summary(small_cluster: Path) -> None:
    proc = run("simulate", str(small_cluster))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:4] == ["POD", "NODE", "SCORE", "TIES"]
    assert any(line.startswith("default/giant") and "<pending>" in line for line in lines)
    assert "placed 2/3 pods" in proc.stdout and "1 pending" in proc.stdout
    # per-node utilisation: two pods placed on two nodes of 2 cpu (500m + 1 => one of them is 50%)
    node_rows = [line.split() for line in lines if line.startswith(("n1 ", "n2 "))]
    assert len(node_rows) == 2
    assert sorted(row[-2] for row in node_rows) == ["25%", "50%"]


def test_stdin_input(small_cluster: Path) -> None:
    text = (small_cluster / "nodes.yaml").read_text() + "---\n" + (small_cluster / "pods.yaml").read_text()
    proc = run("simulate", "-", "--output", "json", stdin=text)
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)["placements"]) == 3


def test_bad_yaml_exits_2_without_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Node\nmetadata: {name: [\n")
    proc = run("simulate", str(bad))
    assert proc.returncode == 2
    assert "bad.yaml" in proc.stderr and "invalid YAML" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_missing_path_exits_2(tmp_path: Path) -> None:
    proc = run("simulate", str(tmp_path / "nope"))
    assert proc.returncode == 2
    assert "no such file" in proc.stderr and "Traceback" not in proc.stderr


def test_malformed_field_exits_2_naming_the_object(tmp_path: Path) -> None:
    bad = tmp_path / "x.yaml"
    bad.write_text(yaml.safe_dump_all([node("n1", "a"), pod("p", cpu="12 parsecs")]))
    proc = run("simulate", str(bad))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert any("default/p" in e and "12 parsecs" in e for e in errors), proc.stderr


def test_valid_oddities_are_notes_not_errors(tmp_path: Path) -> None:
    odd = tmp_path / "x.yaml"
    no_pods = node("n2", "a")
    del no_pods["status"]["allocatable"]["pods"]
    elsewhere = pod("running-elsewhere")
    elsewhere["spec"]["nodeName"] = "not-in-input"
    odd.write_text(yaml.safe_dump_all([node("n1", "a"), no_pods, elsewhere, pod("p")]))
    proc = run("simulate", str(odd), "--output", "json")
    assert proc.returncode == 0, proc.stderr
    notes = [line for line in proc.stderr.splitlines() if line.startswith("note: ")]
    assert any("n2" in n and "pods" in n for n in notes) and any("not-in-input" in n for n in notes), proc.stderr


def test_bad_policies_exit_2_with_diagnostics(tmp_path: Path, small_cluster: Path) -> None:
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "10-broken.policy").write_text("filter oops\n  require node.no_such_field == 1\n")
    proc = run("simulate", str(small_cluster), "--policies", str(policies))
    assert proc.returncode == 2
    assert "10-broken.policy:" in proc.stderr and "error" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_usage_error_exits_2() -> None:
    proc = run("simulate", "--output", "xml")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr


def test_version() -> None:
    proc = run("--version")
    assert proc.returncode == 0
    assert proc.stdout.startswith("policyscheduler ")


def test_lint_default_policies_is_clean() -> None:
    proc = run("lint", str(REPO / "policies"))
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def demo_json() -> dict[str, Any]:
    proc = run("simulate", "--output", "json", "--seed", "7")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


def test_default_demo_cluster_runs_and_covers_the_interesting_cases(demo_json: dict[str, Any]) -> None:
    pending = 0
    node_names = set()
    for path in sorted(DEMO.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            items = doc.get("items", [doc]) if doc else []
            for obj in items:
                if obj["kind"] == "Pod" and not obj["spec"].get("nodeName"):
                    pending += 1
                if obj["kind"] == "Node":
                    node_names.add(obj["metadata"]["name"])
    placements = demo_json["placements"]
    assert len(placements) == pending >= 150
    placed = [p for p in placements if p["node"] is not None]
    unplaced = [p for p in placements if p["node"] is None]
    assert len(placed) > len(placements) // 2
    assert unplaced, "the demo includes pods that fit nowhere"
    for p in placed:
        assert p["node"] in node_names and p["node"] in p["top"] and p["message"] is None
    for p in unplaced:
        assert p["message"].startswith(f"0/{len(node_names)} nodes are available: ")
    # settled order: every placed pod before every pod that fits nowhere
    assert [p["node"] is None for p in placements] == sorted(p["node"] is None for p in placements)
    # nobody lands on the cordoned node
    assert all(p["node"] != "large-c-5" for p in placed)


def test_seed_is_reproducible(demo_json: dict[str, Any]) -> None:
    proc = run("simulate", "--output", "json", "--seed", "7")
    assert proc.returncode == 0
    assert json.loads(proc.stdout) == demo_json


def test_empty_input_is_a_warning_not_an_error() -> None:
    proc = run("simulate", "-", "--output", "json", stdin="apiVersion: v1\nkind: List\nitems: []\n")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["placements"] == []
    assert "warning: the input holds no Nodes, Pods" in proc.stderr
