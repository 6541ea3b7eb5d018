"""``Cluster.column`` equals the scalar builtin on every node, and the indexed precomputations equal the
from-scratch ones (the pre-index code, kept as the reference) on random clusters after random changes."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from policyscheduler.objects import affinity, topology
from policyscheduler.objects.cluster import COLUMNS, Cluster
from policyscheduler.state import ClusterSnapshot
from tests.state import gen


def _calls(cl: Cluster, pod: Any) -> list[tuple[str, tuple[Any, ...]]]:
    """Every column builtin with every argument the pod's rules could pass it."""
    calls: list[tuple[str, tuple[Any, ...]]] = []
    calls += [("spread_count", (c,)) for c in cl.hard_spread_constraints]
    calls += [("spread_score_count", (c,)) for c in cl.soft_spread_constraints]
    calls += [("affinity_count", (t,)) for t in pod.required_affinity_terms]
    calls += [("anti_affinity_count", (t,)) for t in pod.required_anti_affinity_terms]
    calls += [(name, ()) for name in ("existing_anti_affinity_count", "preferred_affinity_weight",
                                      "preferred_anti_affinity_weight", "existing_required_affinity_count",
                                      "existing_preferred_affinity_weight", "existing_preferred_anti_affinity_weight")]
    calls += [("scaled_image_size", (image,)) for image in (*pod.images, "img0:latest", "absent:latest")]
    calls += [("count_in_domain", (cl.pods_with("app", "a").honor_node_affinity(), "rack")),
              ("count_in_domain", (cl.pods_with("app", "b").in_all_namespaces(), "topology.kubernetes.io/zone"))]
    calls += [(name, ()) for name in STORAGE_COLUMNS]
    return calls


STORAGE_COLUMNS = ("disk_conflict", "volume_limit_exceeded", "volume_node_conflict", "volume_bind_conflict",
                   "volume_capacity_short", "volume_pv_missing", "volume_zone_conflict")
"""The volume plugins' per-node builtins (objects/volumes.py); storage scenarios exercise them below."""


def _scalar(cl: Cluster, name: str, args: tuple[Any, ...]) -> list[int]:
    method = getattr(cl, name)
    if name == "scaled_image_size":
        return [method(node, *args) for node in cl.nodes]
    return [method(*args, node) for node in cl.nodes]


def _maps(state: Any) -> dict[str, Any]:
    return dict(state.maps())


@pytest.mark.parametrize("seed", range(60))
def test_columns_and_indexes_match_the_reference(seed: int) -> None:
    snap = gen.mutated_snapshot(seed)
    rng = random.Random(10_000 + seed)
    nodes = snap.nodes
    for i in range(4):
        pod = snap.pod_record(gen.pod(rng, f"incoming{i}", None, 0.6))
        cl = snap.context(pod)
        feasible = [n.name for n in nodes if rng.random() < 0.7]
        cl.set_feasible(feasible)
        for name, args in _calls(cl, pod):
            column = cl.column(name, *args)
            assert column.dtype == np.int64 and column.tolist() == _scalar(cl, name, args), (seed, name)
            same = cl.uniform(name, *args)  # told without the column: then it is that value everywhere
            if same is not None:
                assert column.tolist() == [same] * len(nodes), (seed, name)

        # The indexed precomputations against the from-scratch reference, map for map.
        st = cl._state
        ns = snap.namespace_labels
        assert isinstance(st.affinity_filter, affinity.IndexedFilterState)
        assert _maps(st.affinity_filter) == _maps(affinity.FilterState(pod, nodes, ns)), seed
        assert _maps(st.affinity_score) == _maps(affinity.ScoreState(pod, nodes, ns)), seed
        assert isinstance(st.spread_filter, topology.IndexedFilterCounts)
        ref_filter = topology.FilterCounts(pod, st.hard, nodes)
        assert (st.spread_filter.pairs, st.spread_filter.domains, st.spread_filter.minimum) == (
            ref_filter.pairs, ref_filter.domains, ref_filter.minimum), seed
        wanted = set(feasible)
        ref_score = topology.ScoreCounts(pod, st.soft, [n for n in nodes if n.name in wanted], nodes, st.require_all)
        assert (st.spread_score.pairs, st.spread_score.domains, st.spread_score.ignored) == (
            ref_score.pairs, ref_score.domains, ref_score.ignored), seed


def test_uniform_answers_for_the_common_builtins() -> None:
    """``Cluster.uniform`` (checked against the columns above) does answer on these clusters: images no
    node has, and the inter-pod maps of pods that meet no term."""
    answered: set[str] = set()
    for seed in range(60):
        snap = gen.mutated_snapshot(seed)
        rng = random.Random(10_000 + seed)
        for i in range(4):
            pod = snap.pod_record(gen.pod(rng, f"incoming{i}", None, 0.6))
            cl = snap.context(pod)
            answered.update(name for name, args in _calls(cl, pod) if cl.uniform(name, *args) is not None)
    assert {"scaled_image_size", "preferred_affinity_weight", "existing_anti_affinity_count",
            "existing_preferred_affinity_weight", "affinity_count", "anti_affinity_count"} <= answered


def test_the_random_pods_exercise_every_column() -> None:
    seen: set[str] = set()
    for seed in range(60):
        snap = gen.mutated_snapshot(seed)
        rng = random.Random(10_000 + seed)
        for i in range(4):
            pod = snap.pod_record(gen.pod(rng, f"incoming{i}", None, 0.6))
            cl = snap.context(pod)
            seen.update(name for name, args in _calls(cl, pod))
    assert seen == set(COLUMNS)


def test_storage_columns_match_the_scalar_builtins() -> None:
    """On random storage scenarios (tests/gen/storage.py), every storage column equals the builtin called
    node by node, and the scenarios make each column non-zero somewhere."""
    from tests.gen.storage import storage_scenario

    nonzero: set[str] = set()
    for seed in range(40):
        objects, pods = storage_scenario(random.Random(seed))
        snap = ClusterSnapshot.from_objects(objects)
        for raw in pods:
            pod = snap.pod_record(raw)
            cl = snap.context(pod)
            for name in STORAGE_COLUMNS:
                column = cl.column(name)
                assert column.dtype == np.int64 and column.tolist() == [int(v) for v in _scalar(cl, name, ())], \
                    (seed, raw["metadata"]["name"], name)
                if column.any():
                    nonzero.add(name)
    assert nonzero >= {"disk_conflict", "volume_limit_exceeded", "volume_node_conflict", "volume_bind_conflict",
                       "volume_zone_conflict"}, nonzero


def test_a_context_outlives_a_change_by_falling_back_to_its_own_nodes() -> None:
    snap = gen.mutated_snapshot(7)
    rng = random.Random(1)
    pod = snap.pod_record(gen.pod(rng, "incoming", None, 1.0))
    before = snap.context(pod)
    old_nodes = list(snap.nodes)
    for k in range(20):  # the state moves on before the context builds anything
        snap.assume(gen.pod(rng, f"later{k}", None, 0.8), rng.choice(old_nodes).name)
    assert before._state.indexed is None
    ns = snap.namespace_labels
    assert _maps(before._state.affinity_filter) == _maps(affinity.FilterState(pod, old_nodes, ns))
    for name, args in _calls(before, pod):
        assert before.column(name, *args).tolist() == _scalar(before, name, args)


def test_column_rejects_builtins_without_a_node() -> None:
    snap = ClusterSnapshot.from_objects(gen.cluster(random.Random(3), 3, 2))
    cl = snap.context(snap.pod_record(gen.pod(random.Random(4), "x", None)))
    with pytest.raises(ValueError, match="spread_min_count"):
        cl.column("spread_min_count")
