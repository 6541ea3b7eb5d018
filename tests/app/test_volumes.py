"""The pure parts of binding a pod's claims before the pod (policyscheduler/app/volumes.py), against kube's
helpers they follow (component-helpers storage/volume: GetBindVolumeToClaim, CheckNodeAffinity; the
volume binder's isPVCFullyBound and its claims of a pod). The executor itself is tested live
(tests/e2e/test_volumes_live.py)."""

from __future__ import annotations

from typing import Any

from policyscheduler.app.volumes import (
    BOUND_BY_CONTROLLER,
    SELECTED_NODE,
    annotated_claim,
    bound_volume,
    claim_is_fully_bound,
    node_affinity_error,
    pod_claim_names,
)

CLAIM = {"metadata": {"name": "data", "namespace": "ns", "uid": "u-1", "resourceVersion": "7"}, "spec": {}}


def _pv(claim_ref: dict[str, Any] | None = None, **notes: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"capacity": {"storage": "1Gi"}}
    if claim_ref is not None:
        spec["claimRef"] = claim_ref
    return {"metadata": {"name": "pv", "resourceVersion": "3", "annotations": dict(notes)}, "spec": spec}


def test_an_available_pv_gets_the_claims_reference_and_bound_by_controller() -> None:
    new = bound_volume(_pv(), CLAIM)
    assert new is not None
    assert new["spec"]["claimRef"] == {"kind": "PersistentVolumeClaim", "namespace": "ns", "name": "data",
                                       "uid": "u-1", "apiVersion": "v1", "resourceVersion": "7"}
    assert new["metadata"]["annotations"] == {BOUND_BY_CONTROLLER: "yes"}
    assert new["metadata"]["resourceVersion"] == "3"  # the update is conditional on the version planned from


def test_a_pv_prebound_by_the_user_gets_the_uid_but_no_bound_by_controller() -> None:
    new = bound_volume(_pv({"namespace": "ns", "name": "data"}), CLAIM)
    assert new is not None and new["spec"]["claimRef"]["uid"] == "u-1"
    assert BOUND_BY_CONTROLLER not in new["metadata"]["annotations"]


def test_a_pv_already_bound_to_the_claim_needs_no_write() -> None:
    ref = {"namespace": "ns", "name": "data", "uid": "u-1"}
    assert bound_volume(_pv(ref, **{BOUND_BY_CONTROLLER: "yes"}), CLAIM) is None


def test_a_pv_bound_to_another_claim_is_taken_over_as_kube_does() -> None:
    new = bound_volume(_pv({"namespace": "ns", "name": "other", "uid": "u-2"}), CLAIM)
    assert new is not None and new["spec"]["claimRef"]["name"] == "data"
    assert new["metadata"]["annotations"][BOUND_BY_CONTROLLER] == "yes"


def test_the_selected_node_annotation_is_written_once() -> None:
    new = annotated_claim(CLAIM, "n1")
    assert new is not None and new["metadata"]["annotations"] == {SELECTED_NODE: "n1"}
    assert annotated_claim(new, "n1") is None
    moved = annotated_claim(new, "n2")
    assert moved is not None and moved["metadata"]["annotations"][SELECTED_NODE] == "n2"
    assert CLAIM["metadata"].get("annotations") is None  # the watched object is never changed


def test_fully_bound_needs_the_volume_name_and_bind_completed() -> None:
    assert not claim_is_fully_bound({"metadata": {}, "spec": {"volumeName": "pv"}})
    assert not claim_is_fully_bound({"metadata": {"annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
                                     "spec": {}})
    assert claim_is_fully_bound({"metadata": {"annotations": {"pv.kubernetes.io/bind-completed": ""}},
                                 "spec": {"volumeName": "pv"}})


def _affine(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "pv"}, "spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": list(terms)}}}}


def _node(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}}


def test_pv_node_affinity_is_checked_on_the_nodes_labels() -> None:
    host = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["a"]}]}
    zone = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]}
    assert node_affinity_error(_affine(host), _node("a", **{"kubernetes.io/hostname": "a"})) is None
    assert node_affinity_error(_affine(host), _node("b", **{"kubernetes.io/hostname": "b"})) == \
        "no matching NodeSelectorTerms"
    assert node_affinity_error(_affine(host, zone), _node("b", zone="z1")) is None  # terms are ORed
    assert node_affinity_error({"metadata": {"name": "pv"}, "spec": {}}, _node("b")) is None


def test_pv_match_fields_see_no_node_name_as_in_kube() -> None:
    """CheckNodeAffinity builds a node from the labels alone, so a metadata.name term never matches."""
    by_name = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a"]}]}
    assert node_affinity_error(_affine(by_name), _node("a")) == "no matching NodeSelectorTerms"


def test_a_pods_claims_include_its_ephemeral_volumes() -> None:
    pod = {"metadata": {"name": "web-0"}, "spec": {"volumes": [
        {"name": "config", "configMap": {"name": "c"}},
        {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-0"}},
        {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
    ]}}
    assert pod_claim_names(pod) == ("data-web-0", "web-0-scratch")
    assert pod_claim_names({"metadata": {"name": "p"}, "spec": {"containers": []}}) == ()
