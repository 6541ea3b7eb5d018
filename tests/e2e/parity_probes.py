"""Extra pending pods for the parity test: the corners the demo workload does not reach.

Used by ``test_kube_parity.py`` after the demo queue, on the same cluster (its bound pods stay, so
these pods meet a realistically full cluster). Each probe aims at one semantic corner of a default
rule -- PreFilter rejections and their message shape, node-name pinning, nil vs empty selectors,
minDomains, nodeTaintsPolicy/nodeAffinityPolicy, matchLabelKeys, host IPs and protocols, hugepages,
pod overhead from a RuntimeClass, untagged images, system default spreading through a Service or a
ReplicationController, the first pod of a self-affine group ... Probes run in list order and the bound
ones stay, so later probes see earlier ones (the group/minDomains sequences rely on that).
"""

from __future__ import annotations

from typing import Any

RUNTIME_CLASS: dict[str, Any] = {
    "apiVersion": "node.k8s.io/v1",
    "kind": "RuntimeClass",
    "metadata": {"name": "parity-heavy"},
    "handler": "parity",
    "overhead": {"podFixed": {"cpu": "1500m", "memory": "512Mi"}},
}


def _pod(name: str, namespace: str = "shop", *, cpu: str | None = "100m", memory: str | None = "128Mi",
         image: str = "registry.k8s.io/pause:3.10", labels: dict[str, str] | None = None,
         container: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    main: dict[str, Any] = {"name": "main", "image": image}
    if requests:
        main["resources"] = {"requests": requests}
    main.update(container or {})
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"probe-{name}", "namespace": namespace, "labels": dict(labels or {})},
            "spec": {"schedulerName": "default-scheduler", "containers": [main], **spec}}


def _required_node_affinity(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def _name_in(*names: str) -> dict[str, Any]:
    return {"key": "metadata.name", "operator": "In", "values": list(names)}


def _term(selector: dict[str, Any] | None, key: str, **extra: Any) -> dict[str, Any]:
    term: dict[str, Any] = {"topologyKey": key, **extra}
    if selector is not None:
        term["labelSelector"] = selector
    return term


HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


SCHEDULE = "schedule"  # a pending pod for both schedulers
BIND = "bind"  # created already bound (spec.nodeName), like a running pod
BIND_SUCCEEDED = "bind-succeeded"  # bound, then status.phase Succeeded: kube's informer drops it
BIND_TERMINATING = "bind-terminating"  # bound, then deleted with a grace period: stays Terminating


def _bound(name: str, node: str, **kwargs: Any) -> dict[str, Any]:
    pod = _pod(name, **kwargs)
    pod["spec"]["nodeName"] = node
    pod["spec"]["terminationGracePeriodSeconds"] = 3600
    return pod


def probes() -> list[tuple[str, dict[str, Any]]]:
    """(action, pod) in order: mostly pending pods, plus a few set-up pods placed directly."""
    return [(SCHEDULE, p) for p in _pending_probes()] + [
        # A finished pod's requests no longer count (kube lists pods with status.phase!=Succeeded,Failed).
        (BIND_SUCCEEDED, _bound("succeeded-hog", "large-c-5", cpu="7")),
        (SCHEDULE, _pod("after-hog", cpu="2", nodeSelector={HOST: "large-c-5"}, tolerations=[
            {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}])),
        # A terminating pod still uses its node's resources and is still seen by inter-pod affinity,
        # but PodTopologySpread does not count it (countPodsMatchSelector skips DeletionTimestamp).
        (BIND_TERMINATING, _bound("terminating-a", "small-b-3", labels={"probe": "term"})),
        (BIND, _bound("live-b", "small-b-4", labels={"probe": "term"})),
        (SCHEDULE, _pod("spread-vs-terminating", labels={"probe": "term"}, topologySpreadConstraints=[
            {"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {"probe": "term"}}}],
            affinity=_required_node_affinity({"matchExpressions": [
                {"key": HOST, "operator": "In", "values": ["small-b-3", "small-b-4"]}]}))),
        (SCHEDULE, _pod("anti-vs-terminating", affinity={"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [_term({"matchLabels": {"probe": "term"}}, HOST)]}})),
        (SCHEDULE, _pod("soft-spread-vs-terminating", labels={"probe": "term"}, topologySpreadConstraints=[
            {"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "ScheduleAnyway",
             "labelSelector": {"matchLabels": {"probe": "term"}}}])),
    ]


def _pending_probes() -> list[dict[str, Any]]:
    """The pending probe pods, in the order they are scheduled."""
    spread_md = {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", "minDomains": 5,
                 "labelSelector": {"matchLabels": {"probe": "min-domains"}}}
    return [
        # -- resources --
        _pod("best-effort", cpu=None, memory=None),
        _pod("cpu-zero", cpu="0", memory="1Gi"),
        _pod("init-heavy", initContainers=[{"name": "init", "image": "registry.k8s.io/pause:3.10",
                                            "resources": {"requests": {"cpu": "1800m", "memory": "64Mi"}}}]),
        _pod("sidecar-plus-init", initContainers=[
            {"name": "side", "image": "docker.io/envoyproxy/envoy:v1.32.1", "restartPolicy": "Always",
             "resources": {"requests": {"cpu": "900m", "memory": "64Mi"}}},
            {"name": "init", "image": "registry.k8s.io/pause:3.10",
             "resources": {"requests": {"cpu": "1", "memory": "64Mi"}}}]),
        _pod("hugepages", container={"resources": {"requests": {"memory": "64Mi", "hugepages-2Mi": "4Mi"},
                                                   "limits": {"memory": "64Mi", "hugepages-2Mi": "4Mi"}}}),
        _pod("ephemeral-150gi", container={"resources": {"requests": {"cpu": "100m", "ephemeral-storage": "150Gi"}}}),
        _pod("overhead", cpu="500m", runtimeClassName=RUNTIME_CLASS["metadata"]["name"]),
        # -- node name pinning (NodeAffinity PreFilter) --
        _pod("pin-two", affinity=_required_node_affinity({"matchFields": [_name_in("small-a-1")]},
                                                         {"matchFields": [_name_in("large-b-1")]})),
        _pod("pin-too-small", cpu="5", affinity=_required_node_affinity({"matchFields": [_name_in("edge-1")]})),
        _pod("pin-missing-node", affinity=_required_node_affinity({"matchFields": [_name_in("no-such-node")]})),
        _pod("pin-conflict", affinity=_required_node_affinity(
            {"matchFields": [_name_in("small-a-1"), _name_in("small-a-2")]})),
        _pod("pin-or-label", affinity=_required_node_affinity(
            {"matchFields": [_name_in("small-a-1")]},
            {"matchExpressions": [{"key": "accelerator", "operator": "Exists"}]})),
        # -- taints, cordon --
        _pod("tolerate-cordon", nodeSelector={HOST: "large-c-5"}, tolerations=[
            {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]),
        _pod("tolerate-everything", tolerations=[{"operator": "Exists"}]),
        _pod("prefer-spot", nodeSelector={"lifecycle": "spot"},
             tolerations=[{"key": "lifecycle", "operator": "Exists"}]),
        _pod("spot-untolerated", nodeSelector={"lifecycle": "spot"}),
        # Preferred affinity (2 x 100) for the spot nodes against their PreferNoSchedule taint (3 x 100).
        _pod("spot-attracted", cpu="10m", memory="16Mi", affinity={"nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference": {
                "matchExpressions": [{"key": "lifecycle", "operator": "In", "values": ["spot"]}]}}]}}),
        # -- node affinity operators --
        _pod("gen-gt-3", affinity=_required_node_affinity(
            {"matchExpressions": [{"key": "example.com/cpu-generation", "operator": "Gt", "values": ["3"]}]})),
        _pod("no-workload-class", affinity={"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "workload-class", "operator": "DoesNotExist"},
                {"key": "accelerator", "operator": "NotIn", "values": ["nvidia-tesla-v100"]}]}]},
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "preference": {"matchExpressions": [
                    {"key": "example.com/cpu-generation", "operator": "Lt", "values": ["3"]}]}},
                {"weight": 90, "preference": {"matchExpressions": [
                    {"key": "disktype", "operator": "In", "values": ["hdd"]}]}}]}}),
        _pod("selector-nowhere", nodeSelector={"disktype": "nvme"}),
        # -- host ports --
        _pod("port-80-udp", container={"ports": [{"containerPort": 80, "hostPort": 80, "protocol": "UDP"}]}),
        _pod("port-443-hostip", container={"ports": [{"containerPort": 443, "hostPort": 443, "hostIP": "10.0.0.5"}]}),
        _pod("host-network", hostNetwork=True, container={"ports": [{"containerPort": 9100}]}),
        # -- topology spread --
        *[_pod(f"min-domains-{i}", labels={"probe": "min-domains"}, topologySpreadConstraints=[spread_md])
          for i in range(4)],
        _pod("spread-honor-taints", labels={"app": "web"}, nodeSelector={"disktype": "ssd"},
             topologySpreadConstraints=[{"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule",
                                         "nodeAffinityPolicy": "Ignore", "nodeTaintsPolicy": "Honor",
                                         "labelSelector": {"matchLabels": {"app": "web"}}}]),
        _pod("spread-match-label-keys", labels={"app": "web", "pod-template-hash": "6d8f9c"},
             topologySpreadConstraints=[{"maxSkew": 2, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway",
                                         "matchLabelKeys": ["pod-template-hash"],
                                         "labelSelector": {"matchLabels": {"app": "web"}}}]),
        _pod("service-only-spread", "payments", labels={"app": "ledger"}),
        _pod("rc-spread", "default", labels={"app": "legacy"}),
        # -- inter-pod affinity --
        _pod("group-first", labels={"probe": "group"}, affinity={"podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                _term({"matchLabels": {"probe": "group"}}, ZONE)]}}),
        _pod("group-second", labels={"probe": "group"}, affinity={"podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                _term({"matchLabels": {"probe": "group"}}, ZONE)]}}),
        _pod("affinity-to-nothing", affinity={"podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [_term({"matchLabels": {"app": "absent"}}, HOST)]}}),
        _pod("with-ledger", affinity={"podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                _term({"matchLabels": {"app": "ledger"}}, HOST, namespaces=["payments"])]}}),
        _pod("anti-empty-selector", affinity={"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [_term({}, HOST, namespaceSelector={})]}}),
        _pod("anti-nil-selector", affinity={"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [_term(None, HOST, namespaceSelector={})]}}),
        _pod("away-from-ingress-zone", affinity={"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                _term({"matchLabels": {"app": "ingress-nginx"}}, ZONE, namespaceSelector={})]}}),
        _pod("preferred-mix", labels={"probe": "mix"}, affinity={
            "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 80, "podAffinityTerm": _term({"matchLabels": {"app": "cache"}}, ZONE)}]},
            "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 30, "podAffinityTerm": _term({"matchLabels": {"app": "web"}}, HOST,
                                                         namespaceSelector={"matchLabels": {"team": "shop"}})}]}}),
        _pod("mismatch-label-keys", labels={"app": "web", "pod-template-hash": "zzz"}, affinity={"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                _term({"matchLabels": {"app": "web"}}, HOST, mismatchLabelKeys=["pod-template-hash"])]}}),
        # -- images --
        _pod("image-untagged", image="docker.io/library/python"),
        _pod("image-big", image="registry.example.com/shop/search:8.11.0"),
    ]
