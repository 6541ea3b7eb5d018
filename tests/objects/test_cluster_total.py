"""``cluster.count_in_cluster(sel)``: the whole-cluster count of a pod selector (objects/domains.py).

* by hand on the small cluster of test_domains.py (nodes without any topology label count too);
* the indexed total equals the from-scratch walk on random clusters after random changes;
* the builtin is pod-level (no column) and a rule reading it requeues on cluster events.
"""

from __future__ import annotations

import random

import pytest

from policyscheduler.cycle.events import facets_of_reads
from policyscheduler.loader import load_policy_texts
from policyscheduler.objects.cluster import COLUMNS
from policyscheduler.objects.domains import walk_total
from tests.objects.test_domains import incoming, selectors, small_cluster
from tests.state import gen


def test_total_by_hand() -> None:
    snap = small_cluster()
    cl = snap.context(snap.pod_record(incoming()))
    web = cl.pods_with("app", "web")
    # default namespace, not terminating: w1..w6 (x1 has no rack, e1 an empty one: both count)
    assert cl.count_in_cluster(web) == 6
    assert cl.count_in_cluster(web.in_all_namespaces()) == 7  # o1 in namespace other
    assert cl.count_in_cluster(web.with_label("tier", "front")) == 2
    assert cl.count_in_cluster(cl.pods_with("app", "db")) == 1
    assert cl.count_in_cluster(cl.pods_with("app", "none")) == 0


def test_total_honours_node_affinity() -> None:
    snap = small_cluster()
    cl = snap.context(snap.pod_record(incoming(nodeSelector={"disk": "ssd"})))
    web = cl.pods_with("app", "web")
    assert cl.count_in_cluster(web) == 6
    assert cl.count_in_cluster(web.honor_node_affinity()) == 2  # a2 (w3) and b1 (w4)


@pytest.mark.parametrize("seed", range(40))
def test_indexed_total_matches_the_walk(seed: int) -> None:
    snap = gen.mutated_snapshot(seed)
    rng = random.Random(30_000 + seed)
    for i in range(3):
        pod = snap.pod_record(gen.pod(rng, f"incoming{i}", None, 0.6))
        cl = snap.context(pod)
        assert cl._state.indexed is not None
        for sel in selectors(cl, rng):
            assert cl.count_in_cluster(sel) == walk_total(sel, snap.nodes, pod), (seed, sel)


def test_total_is_pod_level_and_requeues_on_cluster_events() -> None:
    assert "count_in_cluster" not in COLUMNS
    loaded = load_policy_texts([("cap.policy", """
## At most 2 pods of the app anywhere.
filter app_total
  reason "node(s) are full"
  require cluster.count_in_cluster(cluster.pods_with("app", "web")) < 2
""")])
    assert loaded.policy_set is not None, loaded.diagnostics
    reads = loaded.policy_set.analyses["filter app_total"].reads
    assert "Cluster.count_in_cluster()" in reads
    assert "cluster" in facets_of_reads(reads)
