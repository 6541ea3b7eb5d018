"""Storage scenarios run through our scheduler and through kube-scheduler on the same control plane.

A :class:`VolumeScenario` is one pod with claims and the storage objects it needs (StorageClasses, static
PVs, claims). :class:`StorageBench` creates a scenario once per
scheduler -- StorageClasses and PVs are cluster-wide, so their names get the run's suffix, and each run
has its own namespace for the claims and the pod -- and :meth:`StorageBench.outcome` reads how it ended:
the pod's node or its FailedScheduling message, and per claim its volume and selected node. Two outcomes
compare with :meth:`Outcome.same_as`, with the run suffixes taken out.

Both schedulers plan the claims themselves (ours: the storage rules, ``ClusterSnapshot.assume``).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from tests.controlplane import fakes
from tests.controlplane.api import Api, ApiError
from tests.controlplane.provisioner import SELECTED_NODE, wait_claim_bound

BIND_COMPLETED = "pv.kubernetes.io/bind-completed"


@dataclasses.dataclass
class VolumeScenario:
    """One pod and its storage. Names in ``classes`` and ``volumes`` are base names
    (the run adds its suffix); claims and the pod are created in the run's namespace."""

    name: str
    classes: Sequence[Mapping[str, Any]] = ()
    volumes: Sequence[Mapping[str, Any]] = ()
    claims: Sequence[Mapping[str, Any]] = ()
    pod_claims: Sequence[str] = ()
    node_selector: Mapping[str, str] | None = None
    expect_bound: bool = True
    claims_bound_first: bool = False
    """Wait until the PV controller has bound every claim (Immediate classes) before creating any pod."""
    running_first: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Pods (name -> node) already running with the same claims, created before the scenario's pod."""


@dataclasses.dataclass
class Outcome:
    """How a scenario ended for one scheduler."""

    node: str | None
    message: str | None
    claims: dict[str, dict[str, Any]]
    """claim -> {"volume": PV name with the suffix taken out, "selected_node": ..., "bound": fully bound}"""

    def same_as(self, other: Outcome) -> bool:
        return (self.node, self.message, self.claims) == (other.node, other.message, other.claims)


class StorageBench:
    """Creates scenarios for one scheduler (``scheduler_name``) and reads their outcomes."""

    def __init__(self, api: Api, scheduler_name: str, *, prefix: str = "vol") -> None:
        self.api = api
        self.scheduler_name = scheduler_name
        self.suffix = uuid.uuid4().hex[:6]
        self.ns = f"{prefix}-{self.suffix}"
        self.controller = scheduler_name
        api.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.ns}})
        self.cluster_objects: list[str] = []

    def named(self, base: str) -> str:
        return f"{base}-{self.suffix}"

    def unnamed(self, name: str | None) -> str | None:
        return name[: -len(self.suffix) - 1] if name and name.endswith("-" + self.suffix) else name

    def create(self, scenario: VolumeScenario) -> str:
        """Create the scenario's objects, the pod last; the pod's name."""
        for sc in scenario.classes:
            obj = copy.deepcopy(dict(sc))
            obj["metadata"]["name"] = self.named(obj["metadata"]["name"])
            self.api.post("/apis/storage.k8s.io/v1/storageclasses", obj)
            self.cluster_objects.append(f"/apis/storage.k8s.io/v1/storageclasses/{obj['metadata']['name']}")
        for pv in scenario.volumes:
            obj = copy.deepcopy(dict(pv))
            obj["metadata"]["name"] = self.named(obj["metadata"]["name"])
            obj["spec"]["storageClassName"] = self.named(obj["spec"]["storageClassName"])
            self.api.post("/api/v1/persistentvolumes", obj)
            self.cluster_objects.append(f"/api/v1/persistentvolumes/{obj['metadata']['name']}")
        for claim in scenario.claims:
            obj = copy.deepcopy(dict(claim))
            obj["metadata"]["namespace"] = self.ns
            if obj["spec"].get("storageClassName"):
                obj["spec"]["storageClassName"] = self.named(obj["spec"]["storageClassName"])
            self.api.post(f"/api/v1/namespaces/{self.ns}/persistentvolumeclaims", obj)
        if scenario.claims_bound_first:
            for claim in scenario.claims:
                wait_claim_bound(self.api, self.ns, claim["metadata"]["name"], timeout=30)
        for name, node in scenario.running_first.items():
            self.api.post(f"/api/v1/namespaces/{self.ns}/pods",
                          self._with_claims(fakes.make_pod(name, self.ns, node_name=node), scenario.pod_claims))
        pod = self._with_claims(fakes.make_pod(scenario.name, self.ns, scheduler_name=self.scheduler_name,
                                               node_selector=scenario.node_selector), scenario.pod_claims)
        self.api.post(f"/api/v1/namespaces/{self.ns}/pods", pod)
        return scenario.name

    @staticmethod
    def _with_claims(pod: dict[str, Any], claims: Sequence[str]) -> dict[str, Any]:
        pod["spec"]["volumes"] = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
                                  for i, c in enumerate(claims)]
        pod["spec"]["containers"][0]["volumeMounts"] = [{"name": f"v{i}", "mountPath": f"/data/{i}"}
                                                        for i in range(len(claims))]
        return pod

    # -- reading the outcome -----------------------------------------------------------------------------

    def pod(self, name: str) -> dict[str, Any]:
        obj: dict[str, Any] = self.api.get(f"/api/v1/namespaces/{self.ns}/pods/{name}")
        return obj

    def claim(self, name: str) -> dict[str, Any]:
        obj: dict[str, Any] = self.api.get(f"/api/v1/namespaces/{self.ns}/persistentvolumeclaims/{name}")
        return obj

    def failures(self, pod: str) -> list[str]:
        """The FailedScheduling messages on ``pod`` by this run's scheduler, oldest first."""
        items = self.api.list_items(f"/apis/events.k8s.io/v1/namespaces/{self.ns}/events")
        found = [e for e in items if e.get("reason") == "FailedScheduling" and e["regarding"]["name"] == pod
                 and e.get("reportingController") == self.controller]
        found.sort(key=lambda e: e.get("eventTime") or e["metadata"].get("creationTimestamp") or "")
        return [str(e.get("note")) for e in found]

    def scheduled_events(self, pod: str) -> int:
        items = self.api.list_items(f"/apis/events.k8s.io/v1/namespaces/{self.ns}/events")
        return sum(1 for e in items if e.get("reason") == "Scheduled" and e["regarding"]["name"] == pod
                   and e.get("reportingController") == self.controller)

    def outcome(self, scenario: VolumeScenario, timeout: float = 60.0) -> Outcome:
        """Wait until the pod is bound with its claims (``expect_bound``) or has a FailedScheduling event
        (not ``expect_bound``), then read the outcome; AssertionError with what was seen on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            pod = self.pod(scenario.name)
            node = pod["spec"].get("nodeName")
            claims = {c: self._claim_view(c) for c in scenario.pod_claims}
            failures = self.failures(scenario.name)
            if scenario.expect_bound and node and all(v["bound"] for v in claims.values()):
                return Outcome(node, None, claims)
            if not scenario.expect_bound and failures:
                return Outcome(node, failures[-1], claims)
            if time.monotonic() > deadline:
                raise AssertionError(f"{scenario.name} ({self.scheduler_name}) did not end as expected in "
                                     f"{timeout:.0f}s: node={node}, claims={claims}, failures={failures}")
            time.sleep(0.2)

    def _claim_view(self, name: str) -> dict[str, Any]:
        try:
            obj = self.claim(name)
        except ApiError as exc:
            if exc.status == 404:
                return {"volume": None, "selected_node": None, "bound": False, "missing": True}
            raise
        notes = obj["metadata"].get("annotations") or {}
        volume = obj["spec"].get("volumeName")
        # a provisioned PV is named after the claim's uid: compare "provisioned" rather than the name
        shown = "provisioned" if volume and volume == f"pvc-{obj['metadata']['uid']}" else self.unnamed(volume)
        return {"volume": shown, "selected_node": notes.get(SELECTED_NODE),
                "bound": bool(volume) and BIND_COMPLETED in notes}

    def cleanup(self) -> None:
        for pod in self.api.list_items(f"/api/v1/namespaces/{self.ns}/pods"):
            self.api.delete(f"/api/v1/namespaces/{self.ns}/pods/{pod['metadata']['name']}", gracePeriodSeconds=0)
        for path in self.cluster_objects:
            self.api.delete(path)
        self.api.delete(f"/api/v1/namespaces/{self.ns}")


def describe(outcome: Outcome) -> str:
    return json.dumps(dataclasses.asdict(outcome), sort_keys=True)
