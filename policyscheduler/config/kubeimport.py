"""``policyscheduler config import``: a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) as
a PolicySchedulerConfiguration whose profiles carry the equivalent policy overlays inline.

What maps (per profile):

* plugins enabled/disabled per extension point (``multiPoint``, ``filter``, ``score``, ``preFilter``,
  ``preScore``; ``"*"``): ``disable filter|score RULE`` for the default rules of a disabled plugin;
* score weights: ``override score RULE weight N`` (kube's unset/0 weight is 1);
* NodeResourcesFit ``scoringStrategy`` LeastAllocated / MostAllocated / RequestedToCapacityRatio (shape,
  resources and weights): ``replace score node_resources_fit`` with the formula;
* NodeResourcesBalancedAllocation ``resources``; InterPodAffinity ``hardPodAffinityWeight``;
* PodTopologySpread ``defaultingType: List`` with ``defaultConstraints`` (ScheduleAnyway, on the hostname
  and zone keys);
* NodeAffinity ``addedAffinity`` (required: checked first with kube's "scheduler-enforced" reason;
  preferred: added to the score);
* clientConnection qps/burst/kubeconfig, leaderElection, percentageOfNodesToScore (we always score every node).

What does not (said on stderr through :attr:`ImportResult.notes`): out-of-tree plugins, extenders,
plugins we have no rules for (volumes, DRA: a no-op when disabled), DoNotSchedule default constraints.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import yaml

from policyscheduler.config.located import (
    ConfigError,
    Doc,
    expect_duration,
    expect_int,
    expect_list,
    expect_map,
    expect_str,
    fmt_path,
    load_yaml,
)
from policyscheduler.config.model import API_VERSION, KIND
from policyscheduler.kobjects import DEFAULT_SCHEDULER

__all__ = ["ImportResult", "import_kube_config", "render"]

KUBE_API = "kubescheduler.config.k8s.io/v1"
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"

# kube plugin -> (filter rules, score rules, default weight)
PLUGINS: dict[str, tuple[tuple[str, ...], tuple[str, ...], int]] = {
    "NodeUnschedulable": (("node_unschedulable",), (), 0),
    "NodeName": (("node_name",), (), 0),
    "TaintToleration": (("taint_toleration",), ("taint_toleration",), 3),
    "NodeAffinity": (("node_affinity_node_names", "node_affinity"), ("node_affinity",), 2),
    "NodePorts": (("node_ports",), (), 0),
    "NodeResourcesFit": (("node_resources_fit",), ("node_resources_fit",), 1),
    "PodTopologySpread": (("pod_topology_spread",), ("pod_topology_spread",), 2),
    "InterPodAffinity": (("inter_pod_affinity",), ("inter_pod_affinity",), 2),
    "VolumeRestrictions": (("volume_restrictions",), (), 0),
    "NodeVolumeLimits": (("node_volume_limits",), (), 0),
    "VolumeBinding": (("volume_binding",), (), 0),  # its score needs StorageCapacityScoring (off in v1.35)
    "VolumeZone": (("volume_zone",), (), 0),
    # DRA is not modelled: the rule rejects pods with spec.resourceClaims ("not supported yet"); disabling
    # DynamicResources disables that rejection, as kube then ignores the claims.
    "DynamicResources": (("dynamic_resources",), (), 0),
    "NodeResourcesBalancedAllocation": ((), ("node_resources_balanced_allocation",), 1),
    "ImageLocality": ((), ("image_locality",), 1),
}
# Default kube-scheduler plugins with no rule here: enabling or disabling them changes nothing we model.
NO_RULES = {
    "PrioritySort": "the queue order is ours (priority, then creation time)",
    "DefaultBinder": "we bind through the API server",
    "DefaultPreemption": "policyscheduler does not preempt",
    "SchedulingGates": "built in (PreEnqueue): a gated pod waits in the gated pool, never decided, and is "
                       "queued at once when its last gate is removed",
    "EBSLimits": "not a v1.35 plugin: NodeVolumeLimits counts in-tree EBS volumes under their CSI driver",
    "GCEPDLimits": "not a v1.35 plugin: NodeVolumeLimits counts in-tree GCE PD volumes under their CSI driver",
    "AzureDiskLimits": "not a v1.35 plugin: NodeVolumeLimits counts in-tree Azure Disk volumes under their CSI driver",
}
POINTS = ("multiPoint", "preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore", "score",
          "reserve", "permit", "preBind", "bind", "postBind")
_TOP = ("apiVersion", "kind", "parallelism", "leaderElection", "clientConnection", "healthzBindAddress",
        "metricsBindAddress", "enableProfiling", "enableContentionProfiling", "percentageOfNodesToScore",
        "podInitialBackoffSeconds", "podMaxBackoffSeconds", "profiles", "extenders", "delayCacheUntilActive")
_PROFILE = ("schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig")
_NONZERO = ("cpu", "memory")
_NATIVE = ("cpu", "memory", "ephemeral-storage", "pods")


@dataclasses.dataclass
class ImportResult:
    config: dict[str, Any]
    notes: list[str]


def import_kube_config(file: str, text: str) -> ImportResult:
    """Translate; ConfigError (located) for input kube-scheduler itself would reject."""
    doc = load_yaml(file, text)
    top = expect_map(doc, (), _TOP, "a KubeSchedulerConfiguration")
    if top.get("apiVersion") != KUBE_API:
        raise doc.error(("apiVersion",) if "apiVersion" in top else (),
                        f"apiVersion must be {KUBE_API}, not {top.get('apiVersion')!r}")
    if top.get("kind") != "KubeSchedulerConfiguration":
        raise doc.error(("kind",) if "kind" in top else (),
                        f"kind must be KubeSchedulerConfiguration, not {top.get('kind')!r}")
    notes: list[str] = []

    def note(path: tuple[Any, ...], message: str) -> None:
        line, col = doc.at(path)
        notes.append(f"{file}:{line}:{col}: cannot translate: {message}" if line else f"{file}: cannot translate: {message}")

    out: dict[str, Any] = {"apiVersion": API_VERSION, "kind": KIND}
    if "clientConnection" in top:
        cc = doc.get(("clientConnection",))
        if isinstance(cc, dict):
            conn = {k: cc[k] for k in ("kubeconfig", "qps", "burst") if cc.get(k) not in (None, "")}
            if conn:
                out["clientConnection"] = conn
    if isinstance(top.get("leaderElection"), dict):
        le = top["leaderElection"]
        mapped: dict[str, Any] = {}
        for src, dst in (("leaderElect", "leaderElect"), ("resourceName", "leaseName"),
                         ("resourceNamespace", "leaseNamespace"), ("leaseDuration", "leaseDuration"),
                         ("renewDeadline", "renewDeadline"), ("retryPeriod", "retryPeriod")):
            if le.get(src) not in (None, ""):
                if src in ("leaseDuration", "renewDeadline", "retryPeriod"):  # finite and positive, or refused
                    expect_duration(doc, ("leaderElection", src), f"leaderElection.{src}")
                mapped[dst] = le[src]
        if le.get("resourceLock") not in (None, "leases"):
            note(("leaderElection", "resourceLock"), f"resourceLock {le['resourceLock']!r}: we always use a Lease")
        _lease_where_rbac_allows(le, mapped, note)
        if mapped:
            out["leaderElection"] = mapped
    if top.get("extenders"):
        note(("extenders",), "extenders (HTTP webhooks) have no equivalent; write their logic as rules")
    pct = top.get("percentageOfNodesToScore")
    if pct is not None:  # kube-scheduler refuses a value outside 0..100
        expect_int(doc, ("percentageOfNodesToScore",), "percentageOfNodesToScore", low=0, high=100)
    if pct not in (None, 0, 100):
        note(("percentageOfNodesToScore",), f"percentageOfNodesToScore {pct}: policyscheduler always scores "
             "every feasible node")
    for key in ("podInitialBackoffSeconds", "podMaxBackoffSeconds", "parallelism"):
        if key in top:
            note((key,), f"{key} is not configurable (ignored)")
    profiles = expect_list(doc, ("profiles",), "profiles") if "profiles" in top else []
    if not profiles:
        profiles_out = [_profile(doc, None, note)]
    else:
        profiles_out = [_profile(doc, ("profiles", i), note) for i in range(len(profiles))]
        names = [p["schedulerName"] for p in profiles_out]
        for i, n in enumerate(names):
            if n in names[:i]:
                raise doc.error(("profiles", i), f"duplicate schedulerName {n!r}")
    out["profiles"] = profiles_out
    return ImportResult(out, notes)


LEASE_NAMESPACE = "policyscheduler-system"
"""Where deploy/rbac.yaml's Role lets the scheduler create and renew its Lease."""
KUBE_LEASE = ("kube-system", "kube-scheduler")
"""kube-scheduler's default Lease: kube-scheduler's own, which our scheduler must never contend for."""


def _lease_where_rbac_allows(le: dict[str, Any], mapped: dict[str, Any], note: Any) -> None:
    """kube-scheduler keeps its Lease in kube-system (the default, often spelled out): copied as is, our
    scheduler would need Lease rights in kube-system, which deploy/rbac.yaml does not grant, and, with the
    name kube-scheduler, would take turns with kube-scheduler itself. The imported Lease goes to
    deploy/'s namespace, named after the scheduler as ``run`` does; a namespace of the user's own choosing
    (not kube-system) is kept."""
    if mapped.get("leaderElect") is False:
        return
    if mapped.get("leaseNamespace") in (None, KUBE_LEASE[0]):
        if "leaseNamespace" in mapped:
            note(("leaderElection", "resourceNamespace"), f"resourceNamespace {KUBE_LEASE[0]}: not kept; the Lease "
                 f"goes to {LEASE_NAMESPACE}, where deploy/rbac.yaml grants Leases")
        mapped["leaseNamespace"] = LEASE_NAMESPACE
    if mapped.get("leaseName") == KUBE_LEASE[1]:
        note(("leaderElection", "resourceName"), f"resourceName {KUBE_LEASE[1]}: not kept (it is kube-scheduler's own "
             "Lease); ours is named after the scheduler")
        del mapped["leaseName"]


def _profile(doc: Doc, p: tuple[Any, ...] | None, note: Any) -> dict[str, Any]:
    raw = expect_map(doc, p, _PROFILE, "a profile") if p is not None else {}
    pp = p or ()
    name = expect_str(doc, pp + ("schedulerName",), "schedulerName") if "schedulerName" in raw else DEFAULT_SCHEDULER
    pct = raw.get("percentageOfNodesToScore")
    if pct is not None:
        expect_int(doc, pp + ("percentageOfNodesToScore",), "percentageOfNodesToScore", low=0, high=100)
    if pct not in (None, 0, 100):
        note(pp + ("percentageOfNodesToScore",), f"percentageOfNodesToScore {pct}: every feasible node is scored")
    disabled_filters: set[str] = set()
    disabled_scores: set[str] = set()
    weights: dict[str, int] = {}
    if "plugins" in raw:
        _plugins(doc, pp + ("plugins",), note, disabled_filters, disabled_scores, weights)
    args: dict[str, tuple[tuple[Any, ...], Any]] = {}
    if "pluginConfig" in raw:
        for i, _ in enumerate(expect_list(doc, pp + ("pluginConfig",), "pluginConfig")):
            q = pp + ("pluginConfig", i)
            item = expect_map(doc, q, ("name", "args"), "a pluginConfig entry")
            plugin = expect_str(doc, q + ("name",), "name")
            if plugin in args:
                raise doc.error(q + ("name",), f"duplicate pluginConfig for {plugin}")
            args[plugin] = (q + ("args",), item.get("args") or {})
    lines: list[str] = [f"# Imported from a KubeSchedulerConfiguration (profile {name}) by 'policyscheduler config import'.", ""]
    for plugin, (apath, value) in args.items():
        if plugin in NO_RULES:
            continue
        if plugin not in PLUGINS:
            note(apath, f"arguments of plugin {plugin!r}: not a default plugin (out-of-tree plugins need rules of their own)")
            continue
        if not isinstance(value, dict):
            raise doc.error(apath, f"args of {plugin} must be a mapping")
        filters, scores, _ = PLUGINS[plugin]
        if all(f in disabled_filters for f in filters) and all(s in disabled_scores for s in scores):
            continue  # the plugin is off: its arguments do not matter
        translate = _ARGS[plugin]
        replaced = translate(doc, apath, value, note, weights)
        for kind, rule, text in replaced:
            if (kind == "filter" and rule in disabled_filters) or (kind == "score" and rule in disabled_scores):
                continue
            lines.append(text.rstrip("\n"))
            lines.append("")
            if kind == "score" and rule in weights:
                weights.pop(rule)  # the replacement carries the weight
    for rule in sorted(disabled_filters):
        lines.append(f"disable filter {rule}")
    for rule in sorted(disabled_scores):
        lines.append(f"disable score {rule}")
    for rule, w in sorted(weights.items()):
        lines.append(f"override score {rule} weight {w}")
    body = "\n".join(lines).rstrip("\n") + "\n"
    profile: dict[str, Any] = {"schedulerName": name}
    if body.count("\n") > 2:
        profile["policies"] = [{"name": "kube-scheduler-import.policy", "text": body}]
    return profile


def _plugins(doc: Doc, p: tuple[Any, ...], note: Any, dis_f: set[str], dis_s: set[str], weights: dict[str, int]) -> None:
    expect_map(doc, p, POINTS, "plugins")
    enabled_f: set[str] = set()
    enabled_s: set[str] = set()
    for point in POINTS:
        if point not in doc.get(p):
            continue
        q = p + (point,)
        expect_map(doc, q, ("enabled", "disabled"), f"plugins.{point}")
        for i, _item in enumerate(expect_list(doc, q + ("disabled",), "disabled") if "disabled" in doc.get(q) else []):
            expect_map(doc, q + ("disabled", i), ("name", "weight"), "a plugin")
            plugin = expect_str(doc, q + ("disabled", i, "name"), "name")
            targets = list(PLUGINS) if plugin == "*" else [plugin]
            if plugin != "*" and plugin not in PLUGINS:
                if plugin not in NO_RULES:
                    note(q + ("disabled", i), f"disabling {plugin!r}: not a default plugin")
                elif plugin == "SchedulingGates":
                    note(q + ("disabled", i), "disabling 'SchedulingGates': policyscheduler always keeps gated "
                         "pods out of the queue (the API server refuses to bind a gated pod anyway)")
                continue
            for t in targets:
                filters, scores, _ = PLUGINS[t]
                if point in ("multiPoint", "filter"):
                    dis_f.update(filters)
                if point in ("multiPoint", "score"):
                    dis_s.update(scores)
                if point in ("preFilter", "preScore") and plugin != "*":
                    note(q + ("disabled", i), f"{t} disabled at {point} only: its rules stay in force")
        for i, item in enumerate(expect_list(doc, q + ("enabled",), "enabled") if "enabled" in doc.get(q) else []):
            expect_map(doc, q + ("enabled", i), ("name", "weight"), "a plugin")
            plugin = expect_str(doc, q + ("enabled", i, "name"), "name")
            weight = expect_int(doc, q + ("enabled", i, "weight"), "weight", low=0) if "weight" in item else 0
            if plugin not in PLUGINS:
                if plugin in NO_RULES:
                    continue
                note(q + ("enabled", i), f"plugin {plugin!r} is not a default kube-scheduler plugin (out-of-tree "
                     "plugins need rules of their own)")
                continue
            filters, scores, default_weight = PLUGINS[plugin]
            if point in ("multiPoint", "filter"):
                enabled_f.update(filters)
            if point in ("multiPoint", "score"):
                enabled_s.update(scores)
                if scores:
                    w = weight or (1 if point == "score" else default_weight)
                    if w > 100:
                        note(q + ("enabled", i, "weight"), f"weight {w} of {plugin}: our weights are 1..100; using 100")
                        w = 100
                    for s in scores:
                        if w != default_weight:
                            weights[s] = w
                        else:
                            weights.pop(s, None)
    dis_f.difference_update(enabled_f)
    dis_s.difference_update(enabled_s)
    for s in dis_s:
        weights.pop(s, None)


# -- plugin arguments --------------------------------------------------------------------------------------

def _q(s: str) -> str:
    return json.dumps(s)


def _resources(doc: Doc, path: tuple[Any, ...], value: Any) -> list[tuple[str, int]]:
    items = expect_list(doc, path, "resources")
    out: list[tuple[str, int]] = []
    for i, _ in enumerate(items):
        expect_map(doc, path + (i,), ("name", "weight"), "a resource")
        name = expect_str(doc, path + (i, "name"), "name")
        weight = expect_int(doc, path + (i, "weight"), "weight", low=1, high=100) if "weight" in items[i] else 1
        out.append((name, weight))
    return out


def _requested(r: str) -> str:
    if r in _NONZERO:
        return f'(node.nonzero_requested[{_q(r)}] + pod.nonzero_requests[{_q(r)}])'
    return f'(node.requested[{_q(r)}] + pod.requests[{_q(r)}])'


def _counts(r: str) -> str:
    """kube skips a resource with allocatable 0, and a scalar resource the pod does not request."""
    cond = f'node.allocatable[{_q(r)}] > 0'
    if r not in _NATIVE:
        cond += f' and pod.requests[{_q(r)}] > 0'
    return cond


def _fit(doc: Doc, path: tuple[Any, ...], args: dict[str, Any], note: Any, weights: dict[str, int]) -> list[tuple[str, str, str]]:
    expect_map(doc, path, ("ignoredResources", "ignoredResourceGroups", "scoringStrategy"), "NodeResourcesFitArgs")
    for key in ("ignoredResources", "ignoredResourceGroups"):
        if args.get(key):
            note(path + (key,), f"NodeResourcesFit {key}: the fit filter checks every requested resource")
    if "scoringStrategy" not in args:
        return []
    sp = path + ("scoringStrategy",)
    strategy = expect_map(doc, sp, ("type", "resources", "requestedToCapacityRatio"), "scoringStrategy")
    kind = expect_str(doc, sp + ("type",), "type", choices=("LeastAllocated", "MostAllocated",
                                                         "RequestedToCapacityRatio")) if "type" in strategy else "LeastAllocated"
    resources = _resources(doc, sp + ("resources",), strategy["resources"]) if strategy.get("resources") else [("cpu", 1), ("memory", 1)]
    weight = weights.get("node_resources_fit", 1)
    if kind == "LeastAllocated":
        if resources == [("cpu", 1), ("memory", 1)]:
            return []

        def least(i: int, r: str, req: str) -> tuple[list[str], str]:
            a = f"node.allocatable[{_q(r)}]"
            return [], f"if {req} > {a} then 0 else trunc(({a} - {req}) * 100 / {a})"
        doc_line = "## LeastAllocated: per resource (allocatable - requested) * 100 / allocatable, weighted mean."
        return [("score", "node_resources_fit", _weighted(doc_line, weight, resources, least, rounded=False))]
    if kind == "MostAllocated":
        if "requestedToCapacityRatio" in strategy:
            note(sp + ("requestedToCapacityRatio",), "requestedToCapacityRatio is ignored by MostAllocated")

        def most(i: int, r: str, req: str) -> tuple[list[str], str]:
            a = f"node.allocatable[{_q(r)}]"
            return [], f"if {req} > {a} then 100 else trunc({req} * 100 / {a})"
        doc_line = ("## MostAllocated (kube-scheduler NodeResourcesFit scoringStrategy): per resource\n"
                    "## min(requested, allocatable) * 100 / allocatable, averaged by weight.")
        return [("score", "node_resources_fit", _weighted(doc_line, weight, resources, most, rounded=False))]
    rp = sp + ("requestedToCapacityRatio",)
    if "requestedToCapacityRatio" not in strategy:
        raise doc.error(sp, "RequestedToCapacityRatio needs requestedToCapacityRatio.shape")
    expect_map(doc, rp, ("shape",), "requestedToCapacityRatio")
    shape_items = expect_list(doc, rp + ("shape",), "shape")
    if not shape_items:
        raise doc.error(rp + ("shape",), "shape must have at least one point")
    shape: list[tuple[int, int]] = []
    for i, _ in enumerate(shape_items):
        expect_map(doc, rp + ("shape", i), ("utilization", "score"), "a shape point")
        u = expect_int(doc, rp + ("shape", i, "utilization"), "utilization", low=0, high=100) if "utilization" in shape_items[i] else 0
        s = expect_int(doc, rp + ("shape", i, "score"), "score", low=0, high=10) if "score" in shape_items[i] else 0
        if shape and u <= shape[-1][0]:
            raise doc.error(rp + ("shape", i, "utilization"), "utilization values must be strictly increasing")
        shape.append((u, s * 10))

    def ratio(i: int, r: str, req: str) -> tuple[list[str], str]:
        a = f"node.allocatable[{_q(r)}]"
        return ([f"  let u{i} = if {_counts(r)} and not ({req} > {a}) then trunc({req} * 100 / {a}) else 100"],
                _broken_linear(f"u{i}", shape))
    doc_line = ("## RequestedToCapacityRatio (kube-scheduler NodeResourcesFit scoringStrategy): per resource the\n"
                "## utilization requested * 100 / allocatable mapped through the piecewise-linear shape\n## "
                + ", ".join(f"({u}, {s})" for u, s in shape)
                + "; resources scoring 0 are left out of the weighted mean, which is rounded.")
    return [("score", "node_resources_fit", _weighted(doc_line, weight, resources, ratio, rounded=True))]


def _broken_linear(x: str, shape: list[tuple[int, int]]) -> str:
    """kube's BuildBrokenLinearFunction of ``x`` as nested if/then/else (Go's truncating division)."""
    out = str(shape[-1][1])
    for i in range(len(shape) - 1, -1, -1):
        u, s = shape[i]
        if i == 0:
            branch = str(s)
        else:
            pu, ps = shape[i - 1]
            branch = f"{ps} + ({s - ps}) * ({x} - {pu}) / {u - pu}"
        out = f"if {x} <= {u} then {branch} else {out}"
    return out


def _weighted(doc_line: str, weight: int, resources: list[tuple[str, int]], per: Any, *, rounded: bool) -> str:
    lines = [doc_line, f"replace score node_resources_fit weight {weight} normalize none"]
    terms_w, terms_s = [], []
    for i, (r, w) in enumerate(resources):
        req = _requested(r)
        lets, expr = per(i, r, req)
        lines.extend(lets)
        lines.append(f"  let s{i} = if {_counts(r)} then {expr} else 0")
        cond = f"{_counts(r)}" + (f" and s{i} > 0" if rounded else "")
        lines.append(f"  let w{i} = if {cond} then {w} else 0")
        terms_w.append(f"w{i}")
        terms_s.append(f"s{i} * w{i}")
    total_w = " + ".join(terms_w)
    total_s = " + ".join(terms_s)
    lines.append("  # lint: ignore[score-range-unproven] because each part is 0..100, so their weighted mean is too")
    if rounded:
        lines.append(f"  value if {total_w} == 0 then 0 else round(float({total_s}) / float({total_w}))")
    else:
        lines.append(f"  value if {total_w} == 0 then 0 else ({total_s}) / ({total_w})")
    return "\n".join(lines) + "\n"


def _balanced(doc: Doc, path: tuple[Any, ...], args: dict[str, Any], note: Any, weights: dict[str, int]) -> list[tuple[str, str, str]]:
    expect_map(doc, path, ("resources",), "NodeResourcesBalancedAllocationArgs")
    if not args.get("resources"):
        return []
    resources = [r for r, _ in _resources(doc, path + ("resources",), args["resources"])]
    if resources == ["cpu", "memory"]:
        return []
    weight = weights.get("node_resources_balanced_allocation", 1)
    names = "[" + ", ".join(_q(r) for r in resources) + "]"
    scalar = [r for r in resources if r not in _NATIVE]
    cond = "node.allocatable[r] > 0" + (" and (not (r in " + "[" + ", ".join(_q(r) for r in scalar) + "]) or pod.requests[r] > 0)" if scalar else "")
    best_effort = " or ".join(f"pod.requests[{_q(r)}] != 0" for r in resources)
    return [("score", "node_resources_balanced_allocation", "\n".join([
        f"## BalancedAllocation over {', '.join(resources)} (kube-scheduler v1.35): f = min(1, requested / allocatable)",
        "## per resource; std = |f1 - f2| / 2 for two, the population standard deviation for more; (1 - std) * 100.",
        f"replace score node_resources_balanced_allocation weight {weight} normalize none",
        f"  applies when {best_effort}",
        "  let fractions = [",
        "    min(1.0, float((node.requested[r] + pod.requests[r]) / node.allocatable[r]))",
        f"    for r in {names}",
        f"    where {cond}",
        "  ]",
        "  let mean = if len(fractions) == 0 then 0.0 else sum(f in fractions: f) / float(len(fractions))",
        "  let std = if len(fractions) == 2 then abs((fractions[0] - fractions[1]) / 2.0)",
        "    else if len(fractions) > 2 then sqrt(sum(f in fractions: (f - mean) * (f - mean)) / float(len(fractions)))",
        "    else 0.0",
        "  # lint: ignore[score-range-unproven] because fractions are in 0..1, so std is in 0..1 and the value in 0..100",
        "  value trunc((1.0 - std) * 100.0)",
    ]) + "\n")]


def _interpod(doc: Doc, path: tuple[Any, ...], args: dict[str, Any], note: Any, weights: dict[str, int]) -> list[tuple[str, str, str]]:
    expect_map(doc, path, ("hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"), "InterPodAffinityArgs")
    if args.get("ignorePreferredTermsOfExistingPods"):
        note(path + ("ignorePreferredTermsOfExistingPods",), "ignorePreferredTermsOfExistingPods: existing pods' "
             "preferred terms always count")
    if "hardPodAffinityWeight" not in args:
        return []
    hard = expect_int(doc, path + ("hardPodAffinityWeight",), "hardPodAffinityWeight", low=0, high=100)
    if hard == 1:
        return []
    weight = weights.get("inter_pod_affinity", 2)
    return [("score", "inter_pod_affinity", "\n".join([
        f"## InterPodAffinity score with hardPodAffinityWeight {hard} (kube-scheduler InterPodAffinityArgs).",
        f"replace score inter_pod_affinity weight {weight} normalize minmax",
        "  value cluster.preferred_affinity_weight(node)",
        "    - cluster.preferred_anti_affinity_weight(node)",
        f"    + {hard} * cluster.existing_required_affinity_count(node)",
        "    + cluster.existing_preferred_affinity_weight(node)",
        "    - cluster.existing_preferred_anti_affinity_weight(node)",
    ]) + "\n")]


def _spread(doc: Doc, path: tuple[Any, ...], args: dict[str, Any], note: Any, weights: dict[str, int]) -> list[tuple[str, str, str]]:
    expect_map(doc, path, ("defaultConstraints", "defaultingType"), "PodTopologySpreadArgs")
    kind = expect_str(doc, path + ("defaultingType",), "defaultingType", choices=("System", "List")) \
        if "defaultingType" in args else "System"
    items = expect_list(doc, path + ("defaultConstraints",), "defaultConstraints") if "defaultConstraints" in args else []
    if kind == "System":
        if items:
            raise doc.error(path + ("defaultConstraints",), "defaultConstraints must be empty with defaultingType: System")
        return []
    constraints: list[tuple[str, int]] = []
    for i, _ in enumerate(items):
        q = path + ("defaultConstraints", i)
        c = expect_map(doc, q, ("maxSkew", "topologyKey", "whenUnsatisfiable", "labelSelector", "minDomains",
                                "nodeAffinityPolicy", "nodeTaintsPolicy", "matchLabelKeys"), "a default constraint")
        skew = expect_int(doc, q + ("maxSkew",), "maxSkew", low=1)
        key = expect_str(doc, q + ("topologyKey",), "topologyKey")
        when = expect_str(doc, q + ("whenUnsatisfiable",), "whenUnsatisfiable", choices=("DoNotSchedule", "ScheduleAnyway"))
        if "labelSelector" in c:
            raise doc.error(q + ("labelSelector",), "default constraints must not have a labelSelector (kube-scheduler "
                            "builds it from the pod's Services and controllers)", key=True)
        if when == "DoNotSchedule":
            note(q, f"default constraint on {key} with DoNotSchedule: only ScheduleAnyway default constraints translate; left out")
            continue
        if key not in (HOSTNAME, ZONE):
            note(q, f"default constraint on {key}: only {HOSTNAME} and {ZONE} translate; left out")
            continue
        if any(k in c for k in ("minDomains", "nodeAffinityPolicy", "nodeTaintsPolicy", "matchLabelKeys")):
            note(q, "minDomains / node policies / matchLabelKeys of a default constraint are not translated (defaults used)")
        if key in (k for k, _ in constraints):
            note(q, f"a second default constraint on {key}: left out")
            continue
        constraints.append((key, skew))
    weight = weights.get("pod_topology_spread", 2)
    keys = "[" + ", ".join(_q(k) for k, _ in constraints) + "]"
    skew_expr = "0"
    for k, s in constraints:
        skew_expr = f"(if c.topology_key == {_q(k)} then {s} else {skew_expr})"
    own = ("float(cluster.spread_score_count(c, node)) * ln(float(cluster.spread_score_domain_count(c) + 2))\n"
           "      + float(c.max_skew - 1)")
    listed = ("float(cluster.spread_score_count(c, node)) * ln(float(cluster.spread_score_domain_count(c) + 2))\n"
              f"      + float({skew_expr} - 1)")
    desc = ", ".join(f"{k} maxSkew {s}" for k, s in constraints) or "none"
    text = "\n".join([
        f"## PodTopologySpread score with defaultingType List ({desc}): pods without constraints of their",
        "## own are spread over these ScheduleAnyway constraints (selector from their Services and controllers);",
        "## nodes lacking one of the keys are ignored, as kube-scheduler does for listed defaults.",
        f"replace score pod_topology_spread weight {weight} normalize spread",
        "  applies when len(cluster.soft_spread_constraints) > 0"
        + ("" if constraints else " and cluster.spread_require_all_topologies"),
        "  ignore node when if cluster.spread_require_all_topologies",
        "    then not (all c in cluster.soft_spread_constraints: c.topology_key in node.labels)",
        f"    else not (all k in {keys}: k in node.labels)" if constraints else "    else false",
        "  value if cluster.spread_require_all_topologies",
        "    then round(sum(c in cluster.soft_spread_constraints where c.topology_key in node.labels:",
        f"      {own}))",
        f"    else round(sum(c in cluster.soft_spread_constraints where c.topology_key in {keys}"
        " and c.topology_key in node.labels:" if constraints else "    else 0",
    ] + ([f"      {listed}))"] if constraints else [])) + "\n"
    return [("score", "pod_topology_spread", text)]


def _selector_term(doc: Doc, path: tuple[Any, ...]) -> str:
    term = expect_map(doc, path, ("matchExpressions", "matchFields"), "a node selector term")
    parts: list[str] = []
    for field in ("matchExpressions", "matchFields"):
        for i, _ in enumerate(expect_list(doc, path + (field,), field) if field in term else []):
            q = path + (field, i)
            req = expect_map(doc, q, ("key", "operator", "values"), "a node selector requirement")
            key = expect_str(doc, q + ("key",), "key")
            op = expect_str(doc, q + ("operator",), "operator",
                            choices=("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"))
            values = [str(v) for v in (expect_list(doc, q + ("values",), "values") if "values" in req else [])]
            if field == "matchFields":
                if key != "metadata.name" or op not in ("In", "NotIn") or not values:
                    raise doc.error(q, "matchFields supports only metadata.name with In or NotIn and values")
                test = f"node.name in [{', '.join(_q(v) for v in values)}]"
                parts.append(test if op == "In" else f"not ({test})")
                continue
            label = f"node.labels[{_q(key)}]"
            has = f"{_q(key)} in node.labels"
            if op in ("In", "NotIn"):
                if not values:
                    raise doc.error(q, f"operator {op} needs values")
                test = f"({has} and {label} in [{', '.join(_q(v) for v in values)}])"
                parts.append(test if op == "In" else f"not {test}")
            elif op in ("Exists", "DoesNotExist"):
                if values:
                    raise doc.error(q + ("values",), f"operator {op} takes no values")
                parts.append(has if op == "Exists" else f"not ({has})")
            else:
                if len(values) != 1 or not values[0].lstrip("-").isdigit():
                    raise doc.error(q, f"operator {op} needs exactly one integer value")
                v = int(values[0])
                parts.append(f"int({label}, default {v}) {'>' if op == 'Gt' else '<'} {v}")
    return "(" + " and ".join(parts) + ")" if parts else "false"


def _affinity(doc: Doc, path: tuple[Any, ...], args: dict[str, Any], note: Any, weights: dict[str, int]) -> list[tuple[str, str, str]]:
    expect_map(doc, path, ("addedAffinity",), "NodeAffinityArgs")
    if not args.get("addedAffinity"):
        return []
    ap = path + ("addedAffinity",)
    added = expect_map(doc, ap, ("requiredDuringSchedulingIgnoredDuringExecution",
                                 "preferredDuringSchedulingIgnoredDuringExecution"), "addedAffinity")
    out: list[tuple[str, str, str]] = []
    req_key = "requiredDuringSchedulingIgnoredDuringExecution"
    if added.get(req_key) is not None:
        rp = ap + (req_key,)
        expect_map(doc, rp, ("nodeSelectorTerms",), "a node selector")
        terms = [_selector_term(doc, rp + ("nodeSelectorTerms", i))
                 for i, _ in enumerate(expect_list(doc, rp + ("nodeSelectorTerms",), "nodeSelectorTerms"))]
        match = " or ".join(terms) if terms else "false"
        out.append(("filter", "node_affinity", "\n".join([
            "## NodeAffinity with the scheduler-enforced addedAffinity checked first (kube-scheduler NodeAffinityArgs),",
            "## then the pod's nodeSelector and required node affinity.",
            "replace filter node_affinity",
            "  reason \"node(s) didn't match Pod's node affinity/selector\"",
            f"  require {match}",
            "    else \"node(s) didn't match scheduler-enforced node affinity\"",
            "  require all k, v in pod.node_selector: k in node.labels and node.labels[k] == v",
            "  require not pod.has_required_node_affinity or (any t in pod.required_node_affinity: t.matches(node))",
        ]) + "\n"))
    pref_key = "preferredDuringSchedulingIgnoredDuringExecution"
    prefs = expect_list(doc, ap + (pref_key,), pref_key) if added.get(pref_key) else []
    extra: list[str] = []
    for i, _ in enumerate(prefs):
        q = ap + (pref_key, i)
        expect_map(doc, q, ("weight", "preference"), "a preferred scheduling term")
        w = expect_int(doc, q + ("weight",), "weight", low=1, high=100)
        if "preference" not in prefs[i]:
            raise doc.error(q, "a preferred term needs a preference")
        term = _selector_term(doc, q + ("preference",))
        if term != "false":
            extra.append(f"(if {term} then {w} else 0)")
    if extra:
        weight = weights.get("node_affinity", 2)
        out.append(("score", "node_affinity", "\n".join([
            "## NodeAffinity score plus the scheduler-enforced preferred terms of addedAffinity (weights summed,",
            "## scaled so the best node gets 100).",
            f"replace score node_affinity weight {weight} normalize scale",
            "  value sum(p in pod.preferred_node_affinity where p.weight != 0 and p.preference.matches(node): p.weight)",
            *[f"    + {e}" for e in extra],
        ]) + "\n"))
    return out


_ARGS = {
    "NodeResourcesFit": _fit,
    "NodeResourcesBalancedAllocation": _balanced,
    "InterPodAffinity": _interpod,
    "PodTopologySpread": _spread,
    "NodeAffinity": _affinity,
}
def _untranslated(plugin: str) -> Any:
    """The argument handler of a plugin whose arguments we do not translate: say so, add nothing."""

    def handler(doc: Any, path: Any, args: Any, note: Any, weights: Any) -> list[str]:
        if args:
            note(path, f"arguments of {plugin} are not translated")
        return []

    return handler


for _plugin in PLUGINS:
    _ARGS.setdefault(_plugin, _untranslated(_plugin))


class _Literal(str):
    pass


def _literal(dumper: yaml.SafeDumper, data: _Literal) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", str(data), style="|")


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Literal, _literal)


def render(config: dict[str, Any], source: str) -> str:
    """The configuration as YAML, policy text as block scalars."""
    def convert(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: (_Literal(x) if k == "text" and isinstance(x, str) else convert(x)) for k, x in v.items()}
        if isinstance(v, list):
            return [convert(x) for x in v]
        return v

    head = f"# Generated by 'policyscheduler config import {source}'.\n"
    return head + yaml.dump(convert(config), Dumper=_Dumper, sort_keys=False, width=120, allow_unicode=True)


_ = (ConfigError, fmt_path)
