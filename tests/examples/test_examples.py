"""The issue's everyday custom rules (examples/policies/*.policy): each lints clean on top of the
bundled defaults, and `simulate` on a small snapshot shows its intended effect."""

from __future__ import annotations

from pathlib import Path

import pytest

from policyscheduler.cli import lint
from tests.examples.helpers import EXAMPLES, messages, node, placements, pod, simulate

GiB = 2**30


@pytest.mark.parametrize("example", sorted(EXAMPLES.glob("*.policy")), ids=lambda p: p.name)
def test_example_lints_clean_on_top_of_the_defaults(example: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert lint.main([str(example)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ok: ") and "bundled default rules" in out and "warning" not in out, out


def test_all_examples_lint_together(capsys: pytest.CaptureFixture[str]) -> None:
    assert lint.main([str(EXAMPLES)]) == 0, capsys.readouterr().out


def test_batch_pods_stay_off_latency_critical_nodes_with_a_custom_reason(tmp_path: Path) -> None:
    policy = EXAMPLES / "batch-off-latency-critical.policy"
    objects = [node("fast", {"node-role": "latency-critical"}),
               pod("batch-job", labels={"workload": "batch"}), pod("web", labels={"workload": "web"})]
    status, doc, _ = simulate(tmp_path, objects, policy)
    assert status == 0
    assert placements(doc) == {"web": "fast", "batch-job": None}
    assert messages(doc)["batch-job"] == "0/1 nodes are available: 1 node(s) are reserved for latency-critical workloads. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    # with an ordinary node next to it, the batch pod goes there (and would have taken "fast" otherwise: emptier)
    objects = [node("fast", {"node-role": "latency-critical"}), node("std", cpu="2"),
               pod("busy", on="std", cpu="1", memory="1Gi"), pod("batch-job", labels={"workload": "batch"})]
    assert placements(simulate(tmp_path, objects, policy)[1]) == {"batch-job": "std"}
    assert placements(simulate(tmp_path, objects)[1]) == {"batch-job": "fast"}


def test_gpu_nodes_only_for_gpu_pods_and_vice_versa(tmp_path: Path) -> None:
    policy = EXAMPLES / "gpu-nodes-for-gpu-pods.policy"
    gpu = {"nvidia.com/gpu": "4"}
    objects = [node("gpu-1", extra=gpu), node("cpu-1", cpu="2", memory="4Gi"),
               pod("trainer", extra={"nvidia.com/gpu": "1"}), *(pod(f"web-{i}") for i in range(3))]
    status, doc, _ = simulate(tmp_path, objects, policy)
    assert status == 0
    assert placements(doc) == {"trainer": "gpu-1", "web-0": "cpu-1", "web-1": "cpu-1", "web-2": "cpu-1"}
    # without the rule the (emptier, bigger) GPU node attracts the web pods
    assert "gpu-1" in {n for p, n in placements(simulate(tmp_path, objects)[1]).items() if p.startswith("web")}
    only_gpu = [node("gpu-1", extra=gpu), pod("web")]
    assert messages(simulate(tmp_path, only_gpu, policy)[1])["web"] == \
        "0/1 nodes are available: 1 node(s) have GPUs, kept for pods that request one." \
        " preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."


def test_most_allocated_for_tight_packing_without_copying_the_default(tmp_path: Path) -> None:
    policy = EXAMPLES / "packing-tight.policy"
    objects = [node("half-full"), node("empty"), pod("running", on="half-full", cpu="2", memory="4Gi"),
               pod("tight", labels={"packing": "tight"}), pod("normal")]
    status, doc, _ = simulate(tmp_path, objects, policy)
    assert status == 0
    assert placements(doc) == {"tight": "half-full", "normal": "empty"}
    # the defaults alone spread both to the emptiest node
    assert placements(simulate(tmp_path, objects)[1]) == {"tight": "empty", "normal": "empty"}


def test_spot_nodes_preferred_for_low_cost_pods(tmp_path: Path) -> None:
    policy = EXAMPLES / "spot-for-low-cost.policy"
    objects = [node("spot", {"lifecycle": "spot"}), node("on-demand"),
               pod("running", on="spot", cpu="1", memory="2Gi"),
               pod("cheap", annotations={"cost-tier": "low"}), pod("normal")]
    status, doc, _ = simulate(tmp_path, objects, policy)
    assert status == 0
    assert placements(doc) == {"cheap": "spot", "normal": "on-demand"}
    assert placements(simulate(tmp_path, objects)[1])["cheap"] == "on-demand"


def test_at_most_ten_pods_of_a_team_per_node_with_the_count_in_the_reason(tmp_path: Path) -> None:
    policy = EXAMPLES / "team-pods-per-node.policy"
    running = [pod(f"a-{i}", labels={"team": "a"}, on="n1", cpu="10m", memory="10Mi") for i in range(10)]
    objects = [node("n1"), *running, pod("a-new", labels={"team": "a"}), pod("b-new", labels={"team": "b"})]
    status, doc, _ = simulate(tmp_path, objects, policy)
    assert status == 0
    assert placements(doc) == {"b-new": "n1", "a-new": None}
    assert messages(doc)["a-new"] == "0/1 nodes are available: 1 node(s) already run 10 pods of team a (at most 10). preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    nine = [node("n1"), *running[:9], pod("a-new", labels={"team": "a"})]
    assert placements(simulate(tmp_path, nine, policy)[1]) == {"a-new": "n1"}


def test_kernel_major_compares_as_a_number(tmp_path: Path) -> None:
    policy = EXAMPLES / "newer-kernel.policy"
    # "10" > "5" is false as text; as numbers the busier k10 node must win over the empty k5 and k-bad
    objects = [node("k10", {"kernel-major": "10"}), node("k5", {"kernel-major": "5"}),
               node("k-bad", {"kernel-major": "five"}), pod("running", on="k10", cpu="1", memory="1Gi"),
               pod("app")]
    status, doc, err = simulate(tmp_path, objects, policy)
    assert status == 0 and "score rule" not in err  # 'five' takes the default: no runtime error
    assert placements(doc) == {"app": "k10"}
    assert placements(simulate(tmp_path, objects)[1])["app"] != "k10"


def test_taint_toleration_weight_and_image_locality_changed_in_one_line_each(tmp_path: Path) -> None:
    policy = EXAMPLES / "tune-defaults.policy"
    # one plain node: the total drops by exactly 2 x 100 (TaintToleration's 100 at weight 3 -> 1; no images)
    single = [node("n1"), pod("app")]
    before, after = simulate(tmp_path, single)[1], simulate(tmp_path, single, policy)[1]
    assert before is not None and after is not None
    assert before["placements"][0]["score"] - after["placements"][0]["score"] == 200
    assert before["policy_digest"] != after["policy_digest"]
    # ImageLocality: the node that has the pod's (big) image wins with the defaults, not without it
    objects = [node("cached", images=[("registry.example/app:1", 2000 * 2**20)]), node("other"),
               pod("running", on="cached", cpu="2", memory="4Gi"), pod("app")]
    assert placements(simulate(tmp_path, objects)[1]) == {"app": "cached"}
    assert placements(simulate(tmp_path, objects, policy)[1]) == {"app": "other"}
