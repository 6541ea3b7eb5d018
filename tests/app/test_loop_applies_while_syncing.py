"""The scheduling loop folds watched changes into the cluster state while the first lists are still
coming in, instead of holding every listed object until all kinds are synced: the raw objects of a big
cluster are then never all alive at once. (A standby that is not leading goes through the same branch.)"""

from __future__ import annotations

import threading
import time

from policyscheduler.app import LiveScheduler
from tests.app.test_live_requeue import node, pod, sched  # noqa: F401 - the fixture


def test_changes_are_applied_before_the_lists_are_synced(sched: LiveScheduler) -> None:  # noqa: F811
    assert not any(r.synced.is_set() for r in sched.reflectors)  # the lists are not in: no pod is decided
    sched.watch.on_upsert("Node", node("n1"))
    sched.watch.on_upsert("Pod", pod("running", node="n1"))
    assert sched.cache.pending == 2
    loop = threading.Thread(target=sched._loop, daemon=True)
    loop.start()
    try:
        applied = {"nodes": 1, "pods": 1, "assumed_pods": 0}
        deadline = time.monotonic() + 10  # the loop takes the recorded changes, then applies them: wait for both
        while (sched.cache.pending or sched.cache.counts() != applied) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert sched.cache.pending == 0
        assert sched.cache.counts() == applied
    finally:
        sched._stopping.set()
        sched._wake.set()
        loop.join(5)
    assert not loop.is_alive()


def test_ready_only_once_the_loop_has_built_the_state_from_the_first_lists(sched: LiveScheduler) -> None:  # noqa: F811
    """/readyz is kube-scheduler's sched-handler-sync: every first list in *and* folded into the cluster
    state, which the loop does (leading or not) right after the last list arrives."""
    ready, why = sched._ready()
    assert not ready and why.startswith("waiting for the first list of ")
    sched.watch.on_upsert("Node", node("n1"))
    for r in sched.reflectors:
        r.synced.set()
    ready, why = sched._ready()
    assert (ready, why) == (False, "building the cluster state from the first lists")
    loop = threading.Thread(target=sched._loop, daemon=True)
    loop.start()
    try:
        deadline = time.monotonic() + 10
        while not sched._ready()[0] and time.monotonic() < deadline:
            time.sleep(0.02)
        assert sched._ready() == (True, "ok")
        assert sched.cache.counts()["nodes"] == 1  # the listed node is in the state once ready
    finally:
        sched._stopping.set()
        sched._wake.set()
        loop.join(5)
    assert not loop.is_alive()
