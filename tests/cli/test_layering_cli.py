"""Commands resolve policies one way: the bundled defaults plus the user's files (issue 7)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.cli.test_simulate_cli import DEMO, REPO, node, pod, run

INERT = """\
## Applies to no demo pod: the demo's placements must not move.
filter only_for_special_pods
  reason "node(s) are not special"
  applies when pod.labels["special"] == "yes"
  require node.labels["special"] == "yes"
"""

AVOID_EDGE = """\
## Nothing lands on edge-1.
filter avoid_edge_1
  reason "node(s) are edge-1"
  require node.name != "edge-1"
"""


def _placements(out: str) -> dict[str, str | None]:
    return {p["pod"]: p["node"] for p in json.loads(out)["placements"]}


def test_a_folder_of_one_extra_rule_keeps_every_default_rule(tmp_path: Path) -> None:
    defaults = run("simulate", "-o", "json")
    assert defaults.returncode == 0, defaults.stderr
    inert = tmp_path / "inert"
    inert.mkdir()
    (inert / "extra.policy").write_text(INERT)
    extra = run("simulate", "-o", "json", "--policies", str(inert))
    assert extra.returncode == 0, extra.stderr
    assert _placements(extra.stdout) == _placements(defaults.stdout)  # every default rule still in force
    assert json.loads(extra.stdout)["policy_digest"] != json.loads(defaults.stdout)["policy_digest"]

    avoid = tmp_path / "avoid"
    avoid.mkdir()
    (avoid / "edge.policy").write_text(AVOID_EDGE)
    moved = _placements(run("simulate", "-o", "json", "--policies", str(avoid)).stdout)
    before = _placements(defaults.stdout)
    assert "edge-1" in before.values() and "edge-1" not in moved.values()
    # the defaults still bound each placement: the pods that fit before and did not use edge-1 still fit
    assert sum(n is not None for n in moved.values()) >= sum(n not in (None, "edge-1") for n in before.values())


def test_policies_yielding_no_rules_exit_2(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    for target in (str(empty), "/dev/null"):
        proc = run("simulate", "--policies", target)
        assert proc.returncode == 2 and "no-policy-files" in proc.stderr and "nothing was simulated" in proc.stderr
    allowed = run("simulate", "-o", "json", "--policies", "/dev/null", "--allow-empty")
    assert allowed.returncode == 0, allowed.stderr
    scores_only = tmp_path / "scores"
    scores_only.mkdir()
    (scores_only / "s.policy").write_text("use defaults none\nscore s weight 1\n  value 1\n")
    proc = run("simulate", "--policies", str(scores_only))
    assert proc.returncode == 2 and "no-filters" in proc.stderr


def test_lint_and_simulate_print_the_same_digest_for_the_same_inputs(tmp_path: Path) -> None:
    (tmp_path / "extra.policy").write_text(INERT)
    lint = run("lint", "--format", "json", str(tmp_path))
    sim = run("simulate", "-o", "json", "--policies", str(tmp_path))
    assert lint.returncode == 0 and sim.returncode == 0
    assert json.loads(lint.stdout)["digest"] == json.loads(sim.stdout)["policy_digest"]
    bundled = run("policies", "path")
    assert bundled.returncode == 0 and Path(bundled.stdout.strip()).is_dir()
    assert sorted(p.name for p in Path(bundled.stdout.strip()).glob("*.policy")) == \
        sorted(p.name for p in (REPO / "policies").glob("*.policy"))
    defaults_lint = run("lint", "--format", "json", bundled.stdout.strip())
    defaults_sim = run("simulate", "-o", "json")
    assert json.loads(defaults_lint.stdout)["digest"] == json.loads(defaults_sim.stdout)["policy_digest"]


def test_only_pods_of_the_simulated_scheduler_are_scheduled(tmp_path: Path) -> None:
    ours = pod("ours")
    theirs = pod("theirs", schedulerName="other-scheduler")
    default = pod("default")
    default["spec"].pop("schedulerName")
    (tmp_path / "c.yaml").write_text(yaml.safe_dump_all([node("n1", "a"), ours, theirs, default]))
    proc = run("simulate", "-o", "json", str(tmp_path / "c.yaml"))
    assert proc.returncode == 0
    assert set(_placements(proc.stdout)) == {"default/ours"}
    assert "skipped 2 pending pods that another scheduler owns (1 default-scheduler, 1 other-scheduler)" in proc.stderr
    assert "--include-default-scheduler" in proc.stderr
    both = run("simulate", "-o", "json", "--include-default-scheduler", str(tmp_path / "c.yaml"))
    assert set(_placements(both.stdout)) == {"default/ours", "default/default"}
    named = run("simulate", "-o", "json", "--scheduler-name", "other-scheduler", str(tmp_path / "c.yaml"))
    assert set(_placements(named.stdout)) == {"default/theirs"}


def test_the_bundled_demo_pods_are_all_the_simulated_schedulers() -> None:
    for doc in yaml.safe_load_all((DEMO / "50-pending-pods.yaml").read_text()):
        if doc and doc.get("kind") == "Pod":
            assert doc["spec"]["schedulerName"] == "policy-scheduler"
    proc = run("simulate")
    assert proc.returncode == 0 and "skipped" not in proc.stderr


def test_score_errors_are_reported_on_stderr_and_in_json(tmp_path: Path) -> None:
    (tmp_path / "gpu.policy").write_text(
        "## Fewer pods per GPU is better (nodes without GPUs divide by zero).\n"
        "score pods_per_gpu weight 1 normalize reverse\n"
        "  value node.pod_count * 100 / trunc(node.allocatable[\"nvidia.com/gpu\"])\n")
    gpu_node = node("gpu", "a")
    gpu_node["status"]["allocatable"]["nvidia.com/gpu"] = "2"
    (tmp_path / "c.yaml").write_text(yaml.safe_dump_all([node("plain", "a", cpu="4"), gpu_node, pod("p")]))
    proc = run("simulate", "-o", "json", "--policies", str(tmp_path / "gpu.policy"), str(tmp_path / "c.yaml"))
    assert proc.returncode == 0, proc.stderr
    (placement,) = json.loads(proc.stdout)["placements"]
    assert placement["node"] is not None  # the node lacking GPUs stayed feasible
    (error,) = placement["score_errors"]
    location = f"{tmp_path / 'gpu.policy'}:3:30"  # at the '/'
    assert error == {"rule": "pods_per_gpu", "node": "plain", "location": location,
                     "message": "integer division by zero"}
    assert f"warning: {location}: score rule pods_per_gpu failed: integer division by zero -- on 1 node for 1 pod" \
        in proc.stderr
