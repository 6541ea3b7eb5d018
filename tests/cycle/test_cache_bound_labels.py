"""The cache when the watch shows an assumed pod bound with more labels: the API server's
PodTopologyLabels admission copies the node's zone/region labels onto every pod it binds."""

from __future__ import annotations

import copy
import random
from typing import Any

from policyscheduler.cycle import SCHEDULED, UNSCHEDULABLE, Attempt, ClusterCache, Cycle, SchedulingQueue
from policyscheduler.cycle.cache import CHANGED, RELABELED, SAME, _same_placement
from policyscheduler.evaluation import make_evaluator
from tests.evaluation.policies import default_policies

ZONE = "topology.kubernetes.io/zone"


def node(name: str, zone: str) -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, ZONE: zone}},
            "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}}}


def pod(name: str, labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                                        "resourceVersion": "1", "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}], **spec}}


def bound_copy(obj: dict[str, Any], node_name: str, zone: str) -> dict[str, Any]:
    """What the watch shows after the binding: nodeName set, the zone label added, a new version."""
    out = copy.deepcopy(obj)
    out["spec"]["nodeName"] = node_name
    out["metadata"]["labels"] = {**out["metadata"]["labels"], ZONE: zone}
    out["metadata"]["resourceVersion"] = "2"
    return out


def affine_to_zone_labelled(name: str, zone: str) -> dict[str, Any]:
    """Requires a pod labelled with ``zone`` in its own zone: only a relabelled pod can be that."""
    term = {"labelSelector": {"matchLabels": {ZONE: zone}}, "topologyKey": ZONE}
    return pod(name, {"app": "b"}, affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})


def make() -> tuple[Cycle, list[Any]]:
    bound: list[Any] = []
    cycle = Cycle(SchedulingQueue(), ClusterCache([node("n1", "z1"), node("n2", "z2")]), make_evaluator("reference"),
                  default_policies(), bound.append, rng=random.Random(0))
    return cycle, bound


def one(cycle: Cycle) -> Attempt:
    """One scheduling attempt; the queue holds a pod in these tests, so there is one."""
    attempt = cycle.schedule_one()
    assert attempt is not None
    return attempt


def test_the_bound_pods_new_labels_are_seen_by_the_next_decision() -> None:
    cycle, bound = make()
    a = pod("a", {"app": "a"}, nodeSelector={"kubernetes.io/hostname": "n1"})
    cycle.queue.add("a", a)
    assert one(cycle).result == SCHEDULED
    cycle.binding_succeeded(bound[0])
    # before the watch shows a bound, nothing carries the zone label: b fits nowhere
    cycle.queue.add("b", affine_to_zone_labelled("b", "z1"))
    assert one(cycle).result == UNSCHEDULABLE
    cycle.cache.upsert("Pod", bound_copy(a, "n1", "z1"))
    snap = cycle.cache.snapshot()
    record = snap.state.pod("uid-a")
    assert record is not None and record.node_name == "n1" and record.labels == {"app": "a", ZONE: "z1"}
    assert snap.nodes[0].pod_count == 1 and cycle.cache.counts()["assumed_pods"] == 0
    cycle.queue.move_all("Test")
    cycle.queue._clock = lambda: 1e9  # past every backoff
    again = cycle.schedule_one()
    assert again is not None and again.result == SCHEDULED and again.node == "n1"


def test_a_relabelled_pod_is_freed_by_its_delete() -> None:
    cycle, _ = make()
    a = pod("a", {"app": "a"})
    cycle.queue.add("a", a)
    attempt = one(cycle)
    assert attempt.node is not None
    shown = bound_copy(a, attempt.node, "z1" if attempt.node == "n1" else "z2")
    cycle.cache.upsert("Pod", shown)
    cycle.cache.forget(a)  # a late bind failure after the confirmation frees nothing
    assert sum(n.pod_count for n in cycle.cache.snapshot().nodes) == 1
    cycle.cache.remove("Pod", shown)
    assert sum(n.pod_count for n in cycle.cache.snapshot().nodes) == 0


def test_which_differences_keep_or_rebuild_the_record() -> None:
    a = pod("a", {"app": "a"})
    assert _same_placement(a, "n1", bound_copy(a, "n1", "z1")) == RELABELED
    same = copy.deepcopy(a)
    same["spec"]["nodeName"] = "n1"
    assert _same_placement(a, "n1", same) == SAME
    assert _same_placement(a, "n2", bound_copy(a, "n1", "z1")) == CHANGED  # another node
    other_spec = bound_copy(a, "n1", "z1")
    other_spec["spec"]["priority"] = 5
    assert _same_placement(a, "n1", other_spec) == CHANGED
    # matchLabelKeys turn labels into selector terms: the record must be parsed again
    keyed = pod("k", {"app": "k"}, topologySpreadConstraints=[
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "k"}}, "matchLabelKeys": [ZONE]}])
    assert _same_placement(keyed, "n1", bound_copy(keyed, "n1", "z1")) == CHANGED
    term = {"labelSelector": {"matchLabels": {"app": "k"}}, "topologyKey": ZONE, "mismatchLabelKeys": [ZONE]}
    keyed = pod("k", {"app": "k"}, affinity={"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "podAffinityTerm": term}]}})
    assert _same_placement(keyed, "n1", bound_copy(keyed, "n1", "z1")) == CHANGED


def test_a_label_keyed_pod_is_rebuilt_with_its_bound_labels() -> None:
    cycle, _ = make()
    term = {"labelSelector": {"matchLabels": {"app": "k"}}, "topologyKey": ZONE, "matchLabelKeys": [ZONE]}
    k = pod("k", {"app": "k"}, affinity={"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "podAffinityTerm": term}]}})
    cycle.queue.add("k", k)
    attempt = one(cycle)
    assert attempt.node is not None
    zone = "z1" if attempt.node == "n1" else "z2"
    cycle.cache.upsert("Pod", bound_copy(k, attempt.node, zone))
    record = cycle.cache.snapshot().state.pod("uid-k")
    assert record is not None and record.labels[ZONE] == zone
    selector = record.preferred_affinity_terms[0].term._selector
    assert selector is not None and any(r.key == ZONE for r in selector.requirements)


def test_a_confirmed_relabel_changes_only_the_nodes_pods() -> None:
    """The confirmation of a relabelled bind keeps the node's resource aggregates (same objects), so the
    engine's cached rows of rules that read only resources stay valid; label counts follow the new labels."""
    from policyscheduler.evaluation.vector.columns import Interner, Tables

    cycle, _ = make()
    a = pod("a", {"app": "a"}, nodeSelector={"kubernetes.io/hostname": "n1"})
    cycle.queue.add("a", a)
    assert one(cycle).node == "n1"
    tables = Tables(Interner())
    snap = cycle.cache.snapshot()
    tables.sync(snap)
    before = snap.nodes[0]
    cycle.cache.upsert("Pod", bound_copy(a, "n1", "z1"))
    snap = cycle.cache.snapshot()
    tables.sync(snap)
    after = snap.nodes[0]
    assert tables.changed == [0] and tables.slot_fields == [frozenset({"pods"})]
    assert after.requested is before.requested and after.nonzero_requested is before.nonzero_requested
    assert [p.labels for p in after.pods] == [{"app": "a", ZONE: "z1"}]
    # the label index counts the new labels: a pod requiring a zone-labelled pod in z1 now fits
    cycle.queue.add("b", affine_to_zone_labelled("b", "z1"))
    assert one(cycle).node == "n1"


def test_a_relabel_with_other_requests_falls_back_to_a_full_replace() -> None:
    """``relabel_pod`` refuses a record whose requests differ (its aggregates would be wrong)."""
    import dataclasses
    from fractions import Fraction

    cycle, _ = make()
    a = pod("a", {"app": "a"}, nodeSelector={"kubernetes.io/hostname": "n1"})
    cycle.queue.add("a", a)
    cycle.schedule_one()
    snap = cycle.cache.snapshot()
    stored = snap.state.pod("uid-a")
    assert stored is not None
    bigger = dataclasses.replace(stored, requests={"cpu": Fraction(3)})
    assert snap.state.relabel_pod(bigger) is False
    assert snap.state.relabel_pod(dataclasses.replace(stored, labels={"app": "z"})) is True
    assert snap.nodes[0].requested["cpu"] == Fraction(1)
    assert snap.state.relabel_pod(dataclasses.replace(stored, node_name="n2")) is False  # not stored there
