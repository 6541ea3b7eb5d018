"""The volume plugins' pure logic (objects/volumes.py) and the claim work the snapshot assumes (state/volumes.py).

Expected values come from reading kube-scheduler v1.35 (volumebinding/binder.go, component-helpers
FindMatchingVolume, volumerestrictions, volumezone, nodevolumelimits/csi.go); each test names the rule.
"""

from __future__ import annotations

from typing import Any

from policyscheduler.cycle.events import ClusterEvent, Interest, facets_of_reads
from policyscheduler.objects.builders import build_node, build_pod
from policyscheduler.objects.storage import PersistentVolume, PersistentVolumeClaim, build_claim, build_volume
from policyscheduler.objects.volumes import (
    BIND_CONFLICT,
    NODE_CONFLICT,
    PV_NOT_EXIST,
    binding_error,
    find_matching_volume,
    find_pod_volumes,
    volume_limit_exceeded,
    zone_conflict,
)
from policyscheduler.state import ClusterSnapshot
from policyscheduler.state.storage import StorageState
from policyscheduler.state.volumeplan import StaticBinding
from policyscheduler.state.volumes import plan_volumes

ZONE = "topology.kubernetes.io/zone"


def node(name: str, zone: str | None = None) -> dict[str, Any]:
    labels = {ZONE: zone} if zone else {}
    return {"kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


def cls(name: str, mode: str = "WaitForFirstConsumer", prov: str = "csi.example.com") -> dict[str, Any]:
    return {"kind": "StorageClass", "metadata": {"name": name}, "provisioner": prov, "volumeBindingMode": mode}


def pv(name: str, size: str = "10Gi", *, sc: str = "local", zone: str | None = None, modes: tuple[str, ...] = ("ReadWriteOnce",),
       claim: str | None = None, phase: str = "Available", **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"storageClassName": sc, "capacity": {"storage": size}, "accessModes": list(modes),
                            "csi": {"driver": "csi.example.com", "volumeHandle": name}, **extra}
    if zone:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": ZONE, "operator": "In", "values": [zone]}]}]}}
    if claim:
        spec["claimRef"] = {"namespace": "default", "name": claim}
    return {"kind": "PersistentVolume", "metadata": {"name": name, "labels": {"tier": name[-1]}}, "spec": spec,
            "status": {"phase": phase}}


def pvc(name: str, size: str = "1Gi", *, sc: str = "local", volume: str | None = None,
        modes: tuple[str, ...] = ("ReadWriteOnce",), **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    spec: dict[str, Any] = {"storageClassName": sc, "accessModes": list(modes),
                            "resources": {"requests": {"storage": size}}, **extra}
    if volume:
        spec["volumeName"] = volume
        meta["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    return {"kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}


def pod(name: str, *claims: str, node_name: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x"}],
                            "volumes": [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
                                        for i, c in enumerate(claims)]}
    if node_name:
        spec["nodeName"] = node_name
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"}, "spec": spec}


def _vol(storage: StorageState, name: str) -> PersistentVolume:
    found = storage.volume(name)
    assert found is not None
    return found


def _claim(storage: StorageState, name: str) -> PersistentVolumeClaim:
    found = storage.claim("default", name)
    assert found is not None
    return found


def labels_of(zone: str) -> dict[str, str]:
    return {ZONE: zone}


# -- FindMatchingVolume --------------------------------------------------------------------------------------


def test_smallest_fitting_volume_wins() -> None:
    claim = build_claim(pvc("c", "3Gi"), [])
    volumes = [build_volume(pv(n, s), []) for n, s in (("pv-a", "10Gi"), ("pv-b", "2Gi"), ("pv-c", "4Gi"), ("pv-d", "5Gi"))]
    best = find_matching_volume(claim, volumes, {})
    assert best is not None and best.name == "pv-c"  # pv-b too small; 4Gi < 5Gi < 10Gi
    best = find_matching_volume(claim, volumes, {}, excluded=["pv-c"])
    assert best is not None and best.name == "pv-d"


def test_volume_filters() -> None:
    claim = build_claim(pvc("c", "1Gi", modes=("ReadWriteOnce", "ReadOnlyMany"), selector={"matchLabels": {"tier": "a"}}), [])
    ok = build_volume(pv("pv-a", modes=("ReadWriteOnce", "ReadOnlyMany")), [])
    assert find_matching_volume(claim, [ok], {}) is ok
    rejected = [
        pv("pv-a", modes=("ReadWriteOnce",)),  # lacks ReadOnlyMany
        pv("pv-b", modes=("ReadWriteOnce", "ReadOnlyMany")),  # label tier=b: the claim's selector says a
        pv("pv-a", modes=("ReadWriteOnce", "ReadOnlyMany"), phase="Released"),  # not Available
        pv("pv-a", modes=("ReadWriteOnce", "ReadOnlyMany"), sc="other"),  # another class
        pv("pv-a", modes=("ReadWriteOnce", "ReadOnlyMany"), volumeMode="Block"),  # claim is Filesystem
        pv("pv-a", modes=("ReadWriteOnce", "ReadOnlyMany"), claim="someone-else"),  # claimed by another claim
        pv("pv-a", modes=("ReadWriteOnce", "ReadOnlyMany"), zone="b"),  # node affinity: the node is in zone a
    ]
    for raw in rejected:
        assert find_matching_volume(claim, [build_volume(raw, [])], labels_of("a")) is None, raw


def test_prebound_volume_is_taken_whatever_its_size_rank() -> None:
    """A PV whose claimRef names the claim is returned at once (if it admits the node), before smaller
    available ones; if its node affinity excludes the node there is no match at all."""
    claim = build_claim(pvc("c", "1Gi"), [])
    small = build_volume(pv("pv-a", "1Gi"), [])
    mine = build_volume(pv("pv-z", "50Gi", claim="c", phase="Released"), [])
    assert find_matching_volume(claim, [small, mine], {}) is mine
    far = build_volume(pv("pv-z", "50Gi", claim="c", zone="b"), [])
    assert find_matching_volume(claim, [small, far], labels_of("a")) is None


# -- FindPodVolumes --------------------------------------------------------------------------------------------


def _snap(*objects: dict[str, Any]) -> ClusterSnapshot:
    return ClusterSnapshot.from_objects(list(objects))


def test_reasons_combine_bound_and_unbound_claims() -> None:
    """checkBoundClaims does not stop the unbound claims' check: both reasons are reported."""
    snap = _snap(node("n1", "b"), cls("local", prov="kubernetes.io/no-provisioner"), pv("pv-a", zone="a", claim="bound"),
                 pvc("bound", volume="pv-a"), pvc("free"))
    record = snap.pod_record(pod("p", "bound", "free"))
    check = find_pod_volumes(record, snap.nodes[0], snap.state.storage)
    assert check.reasons == (NODE_CONFLICT, BIND_CONFLICT)


def test_missing_bound_volume_and_prebound_claim() -> None:
    snap = _snap(node("n1"), cls("local"), pvc("bound", volume="gone"))
    record = snap.pod_record(pod("p", "bound"))
    assert find_pod_volumes(record, snap.nodes[0], snap.state.storage).reasons == (PV_NOT_EXIST,)
    # a claim naming a volume without bind-completed is "prebound": an unbound immediate claim
    snap = _snap(node("n1"), cls("local"), pvc("pre", volume=None, volumeName="pv-a"), pv("pv-a"))
    assert binding_error(snap.pod_record(pod("p", "pre")), snap.state.storage) == \
        "pod has unbound immediate PersistentVolumeClaims"


def test_ephemeral_claim_must_belong_to_the_pod() -> None:
    owned = {"kind": "PersistentVolumeClaim", "metadata": {"name": "p-scratch", "namespace": "default",
             "ownerReferences": [{"kind": "Pod", "name": "p", "uid": "uid-p", "controller": True}]},
             "spec": {"storageClassName": "wffc", "accessModes": ["ReadWriteOnce"]}}
    raw = {"kind": "Pod", "metadata": {"name": "p", "namespace": "default", "uid": "uid-p"},
           "spec": {"containers": [{"name": "c"}], "volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}}]}}
    assert binding_error(_snap(node("n1"), cls("wffc")).pod_record(raw), _snap(cls("wffc")).state.storage) == \
        'waiting for ephemeral volume controller to create the persistentvolumeclaim "p-scratch"'
    snap = _snap(node("n1"), cls("wffc"), owned)
    assert binding_error(snap.pod_record(raw), snap.state.storage) == ""
    other = {**raw, "metadata": {"name": "p", "namespace": "default", "uid": "uid-other"}}
    assert binding_error(snap.pod_record(other), snap.state.storage) == \
        "PVC default/p-scratch was not created for pod default/p (pod is not owner)"


# -- the plan and its assumption (kube's AssumePodVolumes) -----------------------------------------------------


def test_plan_and_assume_keep_the_next_pod_off_the_same_volume() -> None:
    snap = _snap(node("n1", "a"), cls("local", prov="kubernetes.io/no-provisioner"), cls("wffc"),
                 pv("pv-a", "5Gi", zone="a"), pvc("c1"), pvc("c2"), pvc("dyn", sc="wffc"))
    first, second = pod("p1", "c1", "dyn"), pod("p2", "c2")
    decision = plan_volumes(snap.state, snap.pod_record(first), "n1")
    assert decision.plan is not None
    assert decision.plan.static == (StaticBinding("default", "c1", "pv-a"),)
    assert decision.plan.provision == (("default", "dyn"),)
    snap.assume(first, "n1")
    assert snap.volume_plan(first) == decision.plan
    storage = snap.state.storage
    assert _vol(storage, "pv-a").claim_name == "c1"  # the PV reads as bound to c1
    assert _claim(storage, "dyn").selected_node == "n1"  # the claim as annotated
    blocked = plan_volumes(snap.state, snap.pod_record(second), "n1")
    assert blocked.plan is None and blocked.reasons == (BIND_CONFLICT,)
    snap.forget(first)
    assert _vol(storage, "pv-a").claim_name == "" and _claim(storage, "dyn").selected_node == ""
    assert plan_volumes(snap.state, snap.pod_record(second), "n1").plan is not None


def test_watched_object_replaces_the_assumption() -> None:
    snap = _snap(node("n1"), cls("wffc"), pvc("dyn", sc="wffc"))
    p = pod("p1", "dyn")
    snap.assume(p, "n1")
    annotated = pvc("dyn", sc="wffc")
    annotated["metadata"]["annotations"] = {"volume.kubernetes.io/selected-node": "n1", "extra": "x"}
    snap.add(annotated)
    snap.forget(p)  # the API server's version stays: forgetting does not bring back the pre-assumption one
    assert _claim(snap.state.storage, "dyn").annotations.get("extra") == "x"


def test_claim_users_follow_pods_and_nodes() -> None:
    """ReadWriteOncePod: "in use" counts pods on known nodes only (kube's snapshot of node infos)."""
    snap = _snap(node("n1"), pod("user", "solo", node_name="n1"))
    state = snap.state
    assert state.claim_in_use("default", "solo")
    state.remove_node("n1")
    assert not state.claim_in_use("default", "solo")
    snap.add(node("n1"))
    assert state.claim_in_use("default", "solo")
    snap.remove(pod("user", "solo", node_name="n1"))
    assert not state.claim_in_use("default", "solo")


# -- NodeVolumeLimits and VolumeZone ---------------------------------------------------------------------------


def test_attach_limit_counts_volume_attachments_and_unique_handles() -> None:
    csinode = {"kind": "CSINode", "metadata": {"name": "n1"},
               "spec": {"drivers": [{"name": "csi.example.com", "allocatable": {"count": 2}}]}}
    attachment = {"kind": "VolumeAttachment", "metadata": {"name": "va1"},
                  "spec": {"nodeName": "n1", "attacher": "csi.example.com", "source": {"persistentVolumeName": "pv-x"}}}
    snap = _snap(node("n1"), csinode, cls("wffc"), pv("pv-x", sc="wffc"), pv("pv-y", sc="wffc", claim="held"),
                 pvc("held", sc="wffc", volume="pv-y"), pod("holder", "held", node_name="n1"), pvc("new", sc="wffc"),
                 attachment)
    n1 = snap.nodes[0]
    # attached: pv-y (the pod) + pv-x (the attachment) = 2 = the limit; "new" would be the third
    assert volume_limit_exceeded(snap.pod_record(pod("p", "new")), n1, snap.state.storage)
    assert not volume_limit_exceeded(snap.pod_record(pod("p", "held")), n1, snap.state.storage)
    snap.remove(attachment)
    assert not volume_limit_exceeded(snap.pod_record(pod("p", "new")), n1, snap.state.storage)
    snap.add(attachment)
    assert volume_limit_exceeded(snap.pod_record(pod("p", "new")), n1, snap.state.storage)
    snap.add(csinode | {"spec": {"drivers": [{"name": "csi.example.com", "allocatable": {"count": 3}}]}})
    assert not volume_limit_exceeded(snap.pod_record(pod("p", "new")), n1, snap.state.storage)


def test_zone_labels() -> None:
    volume = pv("pv-z", claim="data")
    volume["metadata"]["labels"] = {"failure-domain.beta.kubernetes.io/zone": "a__ b"}  # beta key, spaces trimmed
    snap = _snap(node("a1", "a"), node("b1", "b"), node("c1", "c"), node("bare"), volume, pvc("data", volume="pv-z"))
    record = snap.pod_record(pod("p", "data"))
    conflicts = {n.name: zone_conflict(record, n, snap.state.storage) for n in snap.nodes}
    assert conflicts == {"a1": False, "b1": False, "c1": True, "bare": False}
    volume["metadata"]["labels"] = {ZONE: "a____b"}  # an empty zone in the list: kube ignores the label
    snap.add(volume)
    assert not zone_conflict(record, snap.nodes[2], snap.state.storage)


def test_pods_record_their_volumes() -> None:
    record = build_pod({"metadata": {"name": "p"}, "spec": {"volumes": [
        {"name": "a", "persistentVolumeClaim": {"claimName": "c"}}, {"name": "b", "ephemeral": {}},
        {"name": "d", "rbd": {"monitors": ["m"], "image": "i"}}, {"name": "e", "emptyDir": {}}],
        "resourceClaims": [{"name": "gpu"}]}}, [])
    assert [(v.name, v.source, v.claim_name) for v in record.volumes] == [
        ("a", "persistentVolumeClaim", "c"), ("b", "ephemeral", "p-b"), ("d", "rbd", ""), ("e", "emptyDir", "")]
    assert tuple(record.resource_claims) == ("gpu",)
    assert build_node(node("n"), []).name == "n"


# -- requeueing --------------------------------------------------------------------------------------------------


def test_storage_rules_wait_for_storage_events() -> None:
    assert facets_of_reads(["Cluster.volume_bind_conflict()"]) == {"storage", "cluster"}
    assert facets_of_reads(["PersistentVolume.labels"]) == {"storage"}
    interest = Interest({"n1": "volume_binding"}, {"volume_binding": frozenset({"storage", "cluster"})},
                        frozenset({"storage", "cluster"}))
    assert interest.wants(ClusterEvent.storage("PersistentVolumeClaimChange"))
    ports = Interest({"n1": "node_ports"}, {"node_ports": frozenset({"pods-"})}, frozenset({"pods-"}))
    assert not ports.wants(ClusterEvent.storage("PersistentVolumeClaimChange"))


def test_storage_scenarios_are_seeded_and_inline_disks_optional() -> None:
    """tests/gen/storage.py: a seed names one scenario, and leaving out the inline disks keeps every other
    object the same (the live parity test may need to)."""
    import random

    from tests.gen.storage import storage_scenario

    for seed in range(20):
        a = storage_scenario(random.Random(seed))
        assert a == storage_scenario(random.Random(seed))
        b = storage_scenario(random.Random(seed), inline_disks=False)

        def strip(objs: list[dict[str, Any]]) -> list[Any]:
            out = []
            for o in objs:
                if o["metadata"]["name"] == "disk-holder":
                    continue
                vols = [v for v in o.get("spec", {}).get("volumes", []) if "gcePersistentDisk" not in v]
                out.append((o["kind"], o["metadata"]["name"], vols))
            return out

        assert strip(a[0]) == strip(b[0]) and strip(a[1]) == strip(b[1])


def test_storage_scenario_prefix_renames_cluster_scoped_objects() -> None:
    """Several scenarios in one cluster: a prefix on every Node, CSINode, class and PV name and reference
    leaves the decisions as they were (the same nodes, by their prefixed names)."""
    import random

    from policyscheduler.simulate.run import simulate
    from tests.gen.policysets import default_policy_set
    from tests.gen.storage import storage_scenario

    policies = default_policy_set()
    for seed in range(8):
        plain = storage_scenario(random.Random(seed))
        prefixed = storage_scenario(random.Random(seed), prefix="s7-")
        names = {o["metadata"]["name"] for o in prefixed[0] if o["kind"] in ("Node", "PersistentVolume", "StorageClass")}
        assert all(n.startswith("s7-") for n in names)
        runs = []
        for objects, pods in (plain, prefixed):
            for p in pods:
                p["spec"]["schedulerName"] = "policy-scheduler"
            runs.append([(d.pod, d.node, d.message) for d in simulate(policies, objects + pods, seed=seed).decisions])
        assert [(pod, node and "s7-" + node, msg) for pod, node, msg in runs[0]] == runs[1], seed
