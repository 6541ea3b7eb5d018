import pytest

from policyscheduler.objects import Taint, Toleration
from tests.objects.conftest import PodFactory

T = Taint("dedicated", "gpu", "NoSchedule")


@pytest.mark.parametrize(
    "tol, taint, ok",
    [
        (Toleration("dedicated", "Equal", "gpu", "NoSchedule"), T, True),
        (Toleration("dedicated", "", "gpu", "NoSchedule"), T, True),  # "" operator = Equal
        (Toleration("dedicated", "Equal", "cpu", "NoSchedule"), T, False),
        (Toleration("dedicated", "Exists", "", "NoSchedule"), T, True),
        (Toleration("dedicated", "Exists", "", ""), T, True),  # empty effect matches all effects
        (Toleration("dedicated", "Exists", "", "NoExecute"), T, False),
        (Toleration("", "Exists", "", ""), T, True),  # empty key + Exists tolerates everything
        (Toleration("other", "Exists", "", ""), T, False),
        (Toleration("dedicated", "Gt", "1", ""), T, False),  # unknown operator never matches
        (Toleration("k", "Equal", "", "PreferNoSchedule"), Taint("k", "", "PreferNoSchedule"), True),
    ],
)
def test_toleration_matches_taint(tol: Toleration, taint: Taint, ok: bool) -> None:
    assert tol.tolerates(taint) is ok


def test_pod_tolerates_any(pod_factory: PodFactory) -> None:
    from policyscheduler.state import ClusterSnapshot

    snap = ClusterSnapshot.from_objects([])
    pod = snap.pod_record(pod_factory("p", tolerations=[{"key": "a", "operator": "Exists"},
                                                        {"key": "dedicated", "value": "gpu"}]))
    assert pod.tolerates(T)
    assert not pod.tolerates(Taint("b", "", "NoSchedule"))
