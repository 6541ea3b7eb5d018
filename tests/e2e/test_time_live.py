"""``now`` and creation times on the real control plane: ``policyscheduler run`` reads the wall clock.

examples/policies/no-evict-young-pods.policy run beside the real kube-scheduler (the pair of schedulers of
tests/e2e/test_preemption_live.py, each on its own nodes). The API server stamps every running pod's
``creationTimestamp`` seconds before the preemptor arrives, so at the wall clock's ``now`` every candidate
victim is younger than 10 minutes: ours protects them all and nominates nothing, the preemptor's
FailedScheduling text carries the rule's reason, while kube-scheduler (no such rule) evicts a pod.
``explain --kubeconfig`` decides at the wall clock too, and says so.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from policyscheduler.times import SECOND, parse_timestamp
from tests.e2e.test_preemption_live import SIDES, Pair, _explain_live, pair  # noqa: F401 -- the fixture
from tests.kube.live import wait_until

pytestmark = pytest.mark.e2e

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "policies" / "no-evict-young-pods.policy"
REASON = "pods younger than 10 minutes are never preempted"


def test_young_pods_are_protected_at_the_wall_clock(pair: Pair, tmp_path: Path) -> None:  # noqa: F811
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / EXAMPLE.name).write_text(EXAMPLE.read_text())
    pair.fill(2)
    pair.preemptors()
    before = time.time_ns()
    doc = _explain_live(pair, policies)  # pending, fits nowhere: preemption is explained
    now = parse_timestamp(doc["now"])
    assert now is not None and before - 5 * SECOND <= now <= time.time_ns() + 5 * SECOND, doc["now"]
    protected = {(p["pod"], p["rule"]) for p in doc["preemption"]["protected"]}
    assert {(f"{pair.ns}/ours-n{i}-p{k}", "preempt settled_pods_only") for i in range(2) for k in range(2)} \
        <= protected, protected
    assert doc["preemption"]["node"] is None
    pair.kube = pair.env.cp.start_scheduler({"percentageOfNodesToScore": 100,
                                             "profiles": [{"schedulerName": SIDES["kube"]}]})
    pair.run = pair.env.start("--policies", str(policies))
    wait_until(lambda: (pair.outcome("kube")["victims"] and REASON in pair.outcome("ours")["message"]) or None, 30,
               "kube-scheduler evicted a pod and ours reported the rule's reason")
    time.sleep(1.0)  # a (wrong) eviction by ours would have time to show
    ours, kube = pair.outcome("ours"), pair.outcome("kube")
    print("\nours:", ours, "\nkube:", kube)
    assert len(kube["victims"]) == 1 and kube["nominated"]
    assert (ours["victims"], ours["terminating"], ours["nominated"], ours["node"]) == ([], [], None, None)
    assert ours["message"].endswith(f"preemption: 0/4 nodes are available: 2 Preemption is not helpful for "
                                    f"scheduling, 2 {REASON}."), ours["message"]  # the other side's 2 nodes: not helpful
