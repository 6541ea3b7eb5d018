"""The state's indexes stay exact while the cluster changes between pods.

The per-pod contexts read the state's indexes (per-node match counts per pod group, the placed pods'
terms per distinct term); both backends use them, so the differential test between backends cannot see
an index that drifted. Here the oracle is the from-scratch walk over the node records (the reference
code of objects/affinity.py and objects/topology.py), asked after every change of a random sequence of
pod adds and removals, assumes and forgets, label changes, node adds / removals / relabels and namespace
relabels -- with the caches warm, so every change goes through the incremental updates. The second test
runs both backends over such a sequence, one pod decided between changes.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from policyscheduler.evaluation import Decision, ReferenceEvaluator, diff_decisions
from policyscheduler.objects import affinity, topology
from policyscheduler.objects.affinity import FilterState, IndexedFilterState, IndexedScoreState, ScoreState
from policyscheduler.objects.records import Pod
from policyscheduler.objects.topology import match_key_matches, spread_key
from policyscheduler.state import ClusterSnapshot, indexes
from policyscheduler.state.store import replace_fields
from tests.gen.policysets import default_policy_set, user_policy_set

from . import gen

AFFINITY_MAPS = ("existing_anti", "affinity", "anti")
SCORE_MAPS = ("preferred_affinity", "preferred_anti", "existing_required", "existing_preferred",
              "existing_preferred_anti")


def _brute_counts(snap: ClusterSnapshot, key: topology.MatchKey) -> list[int]:
    return [sum(1 for p in node.pods if match_key_matches(key, p, snap.namespace_labels)) for node in snap.nodes]


def _keys(record: Pod) -> list[topology.MatchKey]:
    """The match keys a pod's context asks for: spread selectors and its own terms' clauses."""
    keys = [spread_key(c._selector, record.namespace) for c in record.spread_constraints]
    for t in (*record.required_affinity_terms, *record.required_anti_affinity_terms,
              *(w.term for w in record.preferred_affinity_terms), *(w.term for w in record.preferred_anti_affinity_terms)):
        if t._selector is not None:
            keys.append((False, ((t._names, t._ns_selector, t._selector),)))
    return [k for k in keys if k is not None]


def _check(snap: ClusterSnapshot, incoming: list[Pod], where: str) -> int:
    """Every indexed answer equals the walk; returns how many non-empty answers were compared."""
    nodes, ns_labels, index = snap.nodes, snap.namespace_labels, snap.state
    compared = 0
    for record in incoming:
        plain_f, indexed_f = FilterState(record, nodes, ns_labels), IndexedFilterState(record, nodes, ns_labels, index)
        for name in AFFINITY_MAPS:
            assert getattr(indexed_f, name) == getattr(plain_f, name), (where, record.name, name)
            compared += bool(getattr(plain_f, name))
        for name in AFFINITY_MAPS:  # the columns come from the sums (shared ones for placed pods' terms)
            want = [affinity.lookup(getattr(plain_f, name), node) for node in nodes]
            assert indexed_f.column(name, len(nodes)).tolist() == want, (where, record.name, name)
        plain_s, indexed_s = ScoreState(record, nodes, ns_labels), IndexedScoreState(record, nodes, ns_labels, index)
        for name in SCORE_MAPS:
            assert getattr(indexed_s, name) == getattr(plain_s, name), (where, record.name, name)
            want = [affinity.lookup(getattr(plain_s, name), node) for node in nodes]
            assert indexed_s.column(name, len(nodes)).tolist() == want, (where, record.name, name)
            compared += bool(getattr(plain_s, name))
        for key in _keys(record):
            assert index.match_counts(key).tolist() == _brute_counts(snap, key), (where, record.name, key)
        hard, soft, require_all = topology.effective_constraints(record, snap.state)
        fc, ifc = topology.FilterCounts(record, hard, nodes), topology.IndexedFilterCounts(record, hard, nodes, index)
        assert (ifc.pairs, ifc.domains, ifc.minimum) == (fc.pairs, fc.domains, fc.minimum), (where, record.name)
        for c in hard:
            assert ifc.column(c).tolist() == [fc.count(c, node) for node in nodes], (where, record.name)
        every = topology.ScoreCounts(record, soft, nodes, nodes, require_all)
        for feasible in (np.ones(len(nodes), dtype=bool), np.arange(len(nodes)) % 2 == 0):
            sc = topology.ScoreCounts(record, soft, [n for n, f in zip(nodes, feasible) if f], nodes, require_all)
            isc = topology.IndexedScoreCounts(record, soft, feasible, nodes, require_all, index)
            assert (isc.pairs, isc.ignored) == (sc.pairs, sc.ignored), (where, record.name)
            assert [isc.domains[id(c)] for c in soft] == [sc.domains[id(c)] for c in soft], (where, record.name)
            for c in soft:
                want = [sc.count(c, node, record) for node in nodes]
                assert isc.column(c).tolist() == want, (where, record.name, c)
        compared += bool(fc.pairs) + bool(every.pairs)
        # through a context: its node masks come from the state's cache shared between pod shapes
        context = snap.context(record)._state
        cfc = context.spread_filter
        assert (cfc.pairs, cfc.domains, cfc.minimum) == (fc.pairs, fc.domains, fc.minimum), (where, record.name)
        assert (context.spread_score.pairs, context.spread_score.ignored) == (every.pairs, every.ignored), (where, record.name)
    return compared


def _change(snap: ClusterSnapshot, rng: random.Random, step: int, assumed: list[dict[str, Any]]) -> str:
    """One random change of the cluster; returns its name."""
    names = [n.name for n in snap.nodes]
    r = rng.random()
    if r < 0.25 and names:
        obj = gen.pod(rng, f"new{step}", None, 0.5)
        snap.assume(obj, rng.choice(names))
        assumed.append(obj)
        return "assume"
    if r < 0.35 and assumed:
        snap.forget(assumed.pop(rng.randrange(len(assumed))))
        return "forget"
    if r < 0.5 and names:
        victim = rng.choice(snap.nodes)
        if victim.pods:
            snap.state.remove_pod(rng.choice(victim.pods).uid)
        return "remove pod"
    if r < 0.6 and names:
        snap.add_pod(gen.pod(rng, f"run{step}", rng.choice(names), 0.5))
        return "add pod"
    if r < 0.7 and names:
        victim = rng.choice(snap.nodes)
        if victim.pods:
            old = rng.choice(victim.pods)
            labels = dict(old.labels)
            if rng.random() < 0.5:
                labels["app"] = rng.choice(gen.APPS)
            else:  # a label no selector reads, as the API server's topology labels on a bind: a pod relabelled
                labels[f"bound{step}"] = "yes"  # twice is then its group's only member (the re-keying path)
            snap.state.relabel_pod(replace_fields(old, labels=labels))
        return "relabel pod"
    if r < 0.77:
        snap.add_node(gen.node(rng, f"extra{step}"))
        return "add node"
    if r < 0.84 and len(names) > 1:
        snap.remove_node({"kind": "Node", "metadata": {"name": rng.choice(names)}})
        return "remove node"
    if r < 0.92:
        snap.add({"kind": "Namespace", "metadata": {"name": rng.choice(gen.NAMESPACES),
                                                   "labels": {"team": rng.choice(("x", "y"))}}})
        return "namespace labels"
    if names:
        snap.update_node(gen.node(rng, rng.choice(names)))
        return "node labels"
    return "nothing"


@pytest.mark.parametrize(("dense_min", "domains_max"), [(64, 256), (2, 1)])
@pytest.mark.parametrize("seed", range(12))
def test_indexes_equal_the_walk_after_every_change(seed: int, dense_min: int, domains_max: int,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # dense_min 2: most pod groups also keep their counts as arrays (the path of big Deployments);
    # domains_max 1: the per-term domain sums are dropped whenever another term needs one (made again)
    monkeypatch.setattr(indexes, "_DENSE_MIN", dense_min)
    monkeypatch.setattr(indexes, "_DOMAINS_MAX", domains_max)
    rng = random.Random(seed)
    snap = ClusterSnapshot.from_objects(gen.cluster(rng, rng.randint(4, 10), rng.randint(2, 5)))
    incoming = [snap.pod_record(gen.pod(rng, f"in{i}", None, 0.6)) for i in range(6)]
    compared = _check(snap, incoming, "start")  # warms every cache: later changes update them in place
    assumed: list[dict[str, Any]] = []
    done: list[str] = []
    for step in range(30):
        done.append(_change(snap, rng, step, assumed))
        compared += _check(snap, incoming, f"after {done[-1]} (step {step})")
    assert compared > 50  # the comparisons were not all of empty maps


def test_the_churn_sequence_covers_every_change() -> None:
    seen: set[str] = set()
    for seed in range(12):
        rng = random.Random(seed)
        snap = ClusterSnapshot.from_objects(gen.cluster(rng, rng.randint(4, 10), rng.randint(2, 5)))
        [snap.pod_record(gen.pod(rng, f"in{i}", None, 0.6)) for i in range(6)]
        assumed: list[dict[str, Any]] = []
        seen.update(_change(snap, rng, step, assumed) for step in range(30))
    assert seen >= {"assume", "forget", "remove pod", "add pod", "relabel pod", "add node", "remove node",
                    "namespace labels", "node labels"}


@pytest.fixture
def _vector_path_on_small_clusters() -> Any:
    """As in tests/evaluation/test_backends_agree.py: without this the vector engine hands these small
    clusters' rules to the reference, and the comparison would be the reference with itself."""
    from policyscheduler.evaluation.vector import backend

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(backend, "SMALL", 0)
        yield


@pytest.mark.usefixtures("_vector_path_on_small_clusters")
@pytest.mark.parametrize("policy_name", ["default", "user"])
@pytest.mark.parametrize("seed", range(4))
def test_backends_agree_while_the_cluster_changes_between_pods(policy_name: str, seed: int) -> None:
    from policyscheduler.evaluation import make_evaluator

    policies = default_policy_set() if policy_name == "default" else user_policy_set()
    reference, vector = ReferenceEvaluator(), make_evaluator("vector")
    objects = gen.cluster(random.Random(seed), 8, 4)
    snaps = [ClusterSnapshot.from_objects(objects) for _ in range(2)]
    rngs = [random.Random(100 + seed) for _ in range(2)]  # each snapshot sees the same changes
    assumed: list[list[dict[str, Any]]] = [[], []]
    pod_rng = random.Random(200 + seed)
    for step in range(25):
        for snap, rng, mine in zip(snaps, rngs, assumed):
            _change(snap, rng, step, mine)
        pod = gen.pod(pod_rng, f"q{step}", None, 0.6)
        decisions: list[Decision] = []
        for evaluator, snap in ((reference, snaps[0]), (vector, snaps[1])):
            decisions.append(evaluator.evaluate(policies, snap, pod, rng=random.Random(step)))
        left, right = decisions
        assert left == right, f"seed {seed} step {step}:\n  " + "\n  ".join(diff_decisions(left, right))
        if left.node is not None:
            for snap in snaps:
                snap.assume(pod, left.node)


@pytest.mark.usefixtures("_vector_path_on_small_clusters")
@pytest.mark.parametrize("seed", range(4))
def test_backends_agree_on_a_heterogeneous_stream_with_delta_rows(seed: int) -> None:
    """A stream of pods of distinct shapes (labels, requests, inter-pod terms, spreading) that share a few
    images, with the cluster changing between pods as above: image locality's per-image rows are reused
    across pods and only the changed nodes recomputed (delta rows), the inter-pod maps come from the
    indexes as per-domain sums. Every decision equals the reference's and the delta rows were used."""
    from policyscheduler.evaluation import make_evaluator
    from policyscheduler.evaluation.vector.backend import VectorBackend

    policies = default_policy_set()
    reference, vector = ReferenceEvaluator(), make_evaluator("vector")
    objects = gen.cluster(random.Random(seed), 10, 4)
    snaps = [ClusterSnapshot.from_objects(objects) for _ in range(2)]
    rngs = [random.Random(300 + seed) for _ in range(2)]
    assumed: list[list[dict[str, Any]]] = [[], []]
    pod_rng = random.Random(400 + seed)
    for step in range(40):
        if step % 3 == 0:  # every third pod the cluster changes (nodes, pods, labels, namespaces, images)
            for snap, rng, mine in zip(snaps, rngs, assumed):
                _change(snap, rng, step, mine)
        pod = gen.pod(pod_rng, f"h{step}", None, 0.6)
        pod["spec"]["containers"][0]["image"] = f"img{step % 2}"
        if step % 2 and "affinity" in pod["spec"]:  # half the pods may go anywhere: rows for every node
            pod["spec"]["affinity"].pop("nodeAffinity", None)
        pod["spec"]["containers"][0]["resources"]["requests"]["memory"] = f"{pod_rng.randint(1, 4000)}Mi"
        left, right = (evaluator.evaluate(policies, snap, pod, rng=random.Random(step))
                       for evaluator, snap in ((reference, snaps[0]), (vector, snaps[1])))
        assert left == right, f"seed {seed} step {step}:\n  " + "\n  ".join(diff_decisions(left, right))
        if left.node is not None:
            for snap in snaps:
                snap.assume(pod, left.node)
    assert isinstance(vector.backend, VectorBackend) and vector.backend.reuse is not None
    assert vector.backend.reuse.delta.hits > 0
