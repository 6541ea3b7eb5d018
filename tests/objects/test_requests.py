"""PodRequests and the non-zero variant, expected values from kube's rules worked by hand."""

from fractions import Fraction
from typing import Any

import pytest

from policyscheduler.objects.records import Pod
from policyscheduler.objects.requests import is_scalar_resource
from policyscheduler.state import ClusterSnapshot

Mi = 1024**2


def record(spec: dict[str, Any]) -> Pod:
    snap = ClusterSnapshot.from_objects([])
    return snap.pod_record({"kind": "Pod", "metadata": {"name": "p"}, "spec": spec})


def c(cpu: str | None = None, mem: str | None = None, restart: str | None = None,
      limits: dict[str, str] | None = None, **extra: str) -> dict[str, Any]:
    requests: dict[str, str] = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if mem is not None:
        requests["memory"] = mem
    requests.update(extra)
    out: dict[str, Any] = {"name": "x", "image": "i", "resources": {"requests": requests}}
    if limits:
        out["resources"]["limits"] = limits
    if restart:
        out["restartPolicy"] = restart
    return out


def test_containers_are_summed() -> None:
    p = record({"containers": [c("100m", "1Gi"), c("250m", "1Gi")]})
    assert p.requests["cpu"] == Fraction(350, 1000)
    assert p.requests["memory"] == 2 * 1024**3


def test_init_container_max_wins_over_sum() -> None:
    # containers 300m; init 1 cpu -> max(300m, 1) = 1
    p = record({"containers": [c("300m")], "initContainers": [c("1")]})
    assert p.requests["cpu"] == 1


def test_sidecars_add_and_raise_later_inits() -> None:
    # sidecar 200m (runs on), then regular init 500m sees 500m + 200m = 700m;
    # containers 100m + sidecar 200m = 300m; result max(300m, 700m) = 700m.
    p = record({"containers": [c("100m")], "initContainers": [c("200m", restart="Always"), c("500m")]})
    assert p.requests["cpu"] == Fraction(700, 1000)


def test_init_before_sidecar_does_not_see_it() -> None:
    # init 500m runs before the sidecar: in-use 500m; sidecar in-use 200m;
    # containers 100m + 200m = 300m -> max = 500m.
    p = record({"containers": [c("100m")], "initContainers": [c("500m"), c("200m", restart="Always")]})
    assert p.requests["cpu"] == Fraction(1, 2)


def test_overhead_added_after_max() -> None:
    p = record({"containers": [c("100m")], "initContainers": [c("1")], "overhead": {"cpu": "250m"}})
    assert p.requests["cpu"] == Fraction(1250, 1000)


def test_limits_default_requests() -> None:
    p = record({"containers": [{"name": "x", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}}]})
    assert p.requests["cpu"] == 2 and p.requests["memory"] == 1024**3


def test_pod_level_resources_replace_cpu_memory() -> None:
    p = record({"containers": [c("1", "1Gi")], "resources": {"requests": {"cpu": "3"}}})
    assert p.requests["cpu"] == 3 and p.requests["memory"] == 1024**3


def test_nonzero_defaults_per_container_including_init() -> None:
    # two containers without requests -> 200m / 400Mi; init without requests in-use 100m / 200Mi
    p = record({"containers": [c(), c()], "initContainers": [c()]})
    assert p.requests.get("cpu", 0) == 0
    assert p.nonzero_requests["cpu"] == Fraction(200, 1000)
    assert p.nonzero_requests["memory"] == 400 * Mi


def test_nonzero_keeps_explicit_zero() -> None:
    p = record({"containers": [c(cpu="0", mem="0")]})
    assert p.nonzero_requests["cpu"] == 0 and p.nonzero_requests["memory"] == 0


def test_nonzero_sidecar_defaults() -> None:
    # sidecar without requests: 100m/200Mi joins the sum: containers 1 cpu + 100m
    p = record({"containers": [c("1", "1Gi")], "initContainers": [c(restart="Always")]})
    assert p.nonzero_requests["cpu"] == Fraction(1100, 1000)
    assert p.nonzero_requests["memory"] == 1024**3 + 200 * Mi


def test_cpu_rounded_up_per_pod() -> None:
    p = record({"containers": [c("0.1m"), c("0.1m")]})
    assert p.requests["cpu"] == Fraction(1, 1000)


def test_scalar_resources_listed() -> None:
    # ** of a literal dict: mypy cannot see that its keys miss c()'s other (non-str) parameters
    p = record({"containers": [c("1", **{"nvidia.com/gpu": "2", "example.com/zero": "0", "foo": "1"})]})  # type: ignore[arg-type]
    assert p.scalar_resources == ("nvidia.com/gpu",)


@pytest.mark.parametrize(
    "name, scalar",
    [("nvidia.com/gpu", True), ("hugepages-2Mi", True), ("cpu", False), ("foo", False),
     ("kubernetes.io/something", True), ("attachable-volumes-aws-ebs", True), ("requests.x/y", False)],
)
def test_is_scalar_resource(name: str, scalar: bool) -> None:
    assert is_scalar_resource(name) is scalar


def test_bad_quantity_is_a_warning_not_a_crash() -> None:
    snap = ClusterSnapshot.from_objects([])
    p = snap.pod_record({"kind": "Pod", "metadata": {"name": "bad", "namespace": "ns"},
                         "spec": {"containers": [c("lots", "1Gi")]}})
    assert p.requests.get("cpu", 0) == 0 and p.requests["memory"] == 1024**3
    assert any("Pod ns/bad" in w and "lots" in w for w in snap.warnings)


def _running(status_requests: dict[str, str], allocated: dict[str, str] | None = None, infeasible: bool = False) -> Pod:
    status: dict[str, Any] = {"containerStatuses": [{"name": "x", "resources": {"requests": status_requests},
                                     **({"allocatedResources": allocated} if allocated else {})}]}
    if infeasible:
        status["conditions"] = [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]
    snap = ClusterSnapshot.from_objects([])
    return snap.pod_record({"kind": "Pod", "metadata": {"name": "p"},
                            "spec": {"containers": [c("1", "1Gi")]}, "status": status})


def test_in_place_resize_counts_the_larger_of_spec_and_status() -> None:
    p = _running({"cpu": "2"}, {"memory": "512Mi"})
    assert p.requests["cpu"] == 2 and p.requests["memory"] == 1024**3  # max(spec, actual, allocated)


def test_in_place_resize_infeasible_uses_status_only() -> None:
    p = _running({"cpu": "500m"}, {"memory": "512Mi"}, infeasible=True)
    assert p.requests["cpu"] == Fraction(1, 2) and p.requests["memory"] == 512 * Mi
    # the key present in status (memory) is not defaulted in the non-zero variant; cpu is present too
    assert p.nonzero_requests["cpu"] == Fraction(1, 2)
