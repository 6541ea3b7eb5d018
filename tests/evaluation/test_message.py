"""FailedScheduling text: kube-scheduler's FitError format."""

from __future__ import annotations

from policyscheduler.evaluation.message import NO_NODES, failed_scheduling_message, reason_histogram


def test_histogram_sorted_as_strings() -> None:
    reasons = ["y"] * 2 + ["x"] * 10
    # "10 x" < "2 y" lexicographically, as kube-scheduler sorts
    assert reason_histogram(reasons) == ["10 x", "2 y"]


def test_message_kube_example() -> None:
    reasons = ["node(s) had untolerated taint(s)", "Insufficient cpu", "Insufficient cpu"]
    assert (
        failed_scheduling_message(3, reasons)
        == "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu."
    )


def test_node_contributes_several_reasons() -> None:
    reasons = ["Insufficient cpu", "Insufficient memory", "Insufficient cpu", "Insufficient memory", "Too many pods"]
    assert failed_scheduling_message(2, reasons) == (
        "0/2 nodes are available: 1 Too many pods, 2 Insufficient cpu, 2 Insufficient memory."
    )


def test_zero_nodes() -> None:
    assert failed_scheduling_message(0, []) == NO_NODES == "no nodes available to schedule pods"


def test_no_reasons_still_well_formed() -> None:
    assert failed_scheduling_message(4, []) == "0/4 nodes are available."


def test_pod_level_rejection_has_no_counts() -> None:
    from policyscheduler.evaluation.message import pod_rejected_message

    assert pod_rejected_message(5, ["pod affinity terms conflict"]) == "0/5 nodes are available: pod affinity terms conflict."
    assert pod_rejected_message(2, ["a", "b"]) == "0/2 nodes are available: a, b."
    assert pod_rejected_message(0, ["a"]) == "no nodes available to schedule pods"
