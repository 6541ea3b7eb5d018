"""Differential test: the default policy set decides like the real kube-scheduler v1.35.4.

The bundled demo cluster (38 nodes, 41 running pods, Services and controllers) is loaded into the
test API server and the real kube-scheduler is started on it (every node scored, leader election
off, one profile ``default-scheduler``). Then, one pod at a time (``parity_run.ParityRun.check``):

1. the cluster is listed from the API server (what kube-scheduler's informers see, admission
   defaults included) and turned into our snapshot;
2. the pod is created; our Decision is computed on that snapshot for the pod *as stored* (e.g. with
   the DefaultTolerationSeconds tolerations);
3. we wait for kube-scheduler: bound => its node must be one of our best-scored nodes (ties are random
   on both sides); unschedulable => we place nothing either and its PodScheduled message, without the
   PostFilter suffix we deliberately omit (DRA's "no new claims to deallocate, " and DefaultPreemption's
   "preemption: ..."; see ``parity_report.strip_post_filter``), equals ours -- and the pod is deleted
   so kube-scheduler cannot bind it later behind our back.

The first test runs all 200 pending demo pods in simulate's queue order; the second then adds the
probe pods of ``parity_probes.py`` (corners the demo does not reach) to the resulting cluster. Every
mismatch is collected, with both sides' per-rule scores (kube-scheduler logs them at level 10), and
reported at the end. How the demo objects are adapted for the API server: ``parity_cluster.py``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from policyscheduler.loader import load_policy_set
from policyscheduler.simulate.defaults import default_policies_dir
from tests.controlplane import fakes
from tests.controlplane.harness import ControlPlane, Scheduler
from tests.e2e import parity_cluster as pc
from tests.e2e import parity_probes
from tests.e2e.parity_report import kube_scores
from tests.e2e.parity_run import ParityRun

pytestmark = pytest.mark.e2e

SCHEDULER_CONFIG = {
    "percentageOfNodesToScore": 100,
    "leaderElection": {"leaderElect": False},
    "profiles": [{"schedulerName": pc.SCHEDULER}],
}
# Level 10 only in schedule_one.go: per-plugin scores, without client-go's request dumps.
SCHEDULER_ARGS = ("-v=2", "--vmodule=schedule_one=10")
SETTLE_SECONDS = 1.0


class Parity:
    """The loaded demo cluster, the running kube-scheduler and the policies, shared by both tests."""

    def __init__(self, run: ParityRun, sched: Scheduler) -> None:
        self.run = run
        self.sched = sched

    def verify(self, what: str, started: float) -> None:
        """Fail with every mismatch so far, rendered with kube-scheduler's per-plugin scores."""
        run = self.run
        summary = f"{what}: {run.summary(time.monotonic() - started)}"
        print(summary)
        if run.mismatches:
            scores = kube_scores(Path(self.sched.child.log_file))
            report = "\n".join(m.render(scores) for m in run.mismatches)
            pytest.fail(f"{len(run.mismatches)} of {len(run.decisions)} pods differ from kube-scheduler "
                        f"v1.35.4 ({summary})\n{report}", pytrace=False)


@pytest.fixture(scope="module")
def parity(control_plane: ControlPlane) -> Iterator[Parity]:
    loaded = load_policy_set([default_policies_dir()])
    assert loaded.policy_set is not None, loaded.diagnostics
    api = control_plane.api()
    cluster = pc.DemoCluster(api, pc.demo_objects())
    sched = None
    try:
        cluster.load()
        sched = control_plane.start_scheduler(SCHEDULER_CONFIG, args=SCHEDULER_ARGS)
        yield Parity(ParityRun(api, loaded.policy_set, cluster), sched)
    finally:
        if sched is not None:
            control_plane.stop_scheduler(sched)
        cluster.delete()


def test_demo_pods_are_placed_as_kube_scheduler_places_them(parity: Parity) -> None:
    started = time.monotonic()
    queue = pc.pending_queue(parity.run.cluster.objects)
    assert len(queue) == 200
    for index, demo_pod in enumerate(queue):
        parity.run.check(pc.adapt_pod(demo_pod, parity.run.cluster.owner_uids, pending=True), seed=index)
    parity.verify("demo queue", started)
    assert parity.run.outcomes["bound"] > 0 and parity.run.outcomes["unschedulable"] > 0


def test_probe_pods_are_placed_as_kube_scheduler_places_them(parity: Parity) -> None:
    started = time.monotonic()
    parity.run.mismatches.clear()
    parity.run.decisions.clear()
    parity.run.outcomes.clear()
    run = parity.run
    run.cluster.create_tracked(dict(parity_probes.RUNTIME_CLASS))
    for index, (action, pod) in enumerate(parity_probes.probes()):
        if action == parity_probes.SCHEDULE:
            run.check(pod, seed=1000 + index)
            continue
        stored = run.cluster.create_tracked(pod)
        meta = stored["metadata"]
        if action == parity_probes.BIND_SUCCEEDED:
            fakes.set_pod_phase(run.api, meta["namespace"], meta["name"], "Succeeded")
        elif action == parity_probes.BIND_TERMINATING:
            run.api.delete(fakes.object_path(stored), gracePeriodSeconds=3600)
            assert run.api.get(fakes.object_path(stored))["metadata"].get("deletionTimestamp")
        # No signal tells when kube-scheduler's informers have seen a pod it did not bind itself.
        time.sleep(SETTLE_SECONDS)
    parity.verify("probes", started)
