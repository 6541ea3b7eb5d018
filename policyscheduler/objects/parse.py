"""Plain Kubernetes object dicts -> records, never raising on malformed input.

Every problem (a field of the wrong type, a bad quantity, a malformed selector) is appended to the
``warnings`` list as ``"<kind> <ns/name>: <problem>"`` and replaced by a safe default, so a bad object
degrades to "this field is empty" rather than a traceback. API-server defaulting that a real cluster
would already have applied is reproduced here: requests default to limits, hostNetwork pods get
hostPort = containerPort, ports default to TCP.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from policyscheduler.objects.records import (
    HostPort,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodAffinityTerm,
    PreferredSchedulingTerm,
    SpreadConstraint,
    Taint,
    Toleration,
    WeightedPodAffinityTerm,
)
from policyscheduler.objects.selectors import Requirement, Selector, compile_label_selector, compile_requirement
from policyscheduler.quantity import QuantityError, to_quantity

__all__ = ["Reader"]


_TermValue = tuple[builtins.str, tuple[builtins.str, ...], Selector | None, Selector | None, frozenset[builtins.str]]
_SHARED: dict[_TermValue, PodAffinityTerm] = {}
_SHARED_MAX = 4096


def _shared_term(topology_key: builtins.str, namespaces: tuple[builtins.str, ...], selector: Selector | None,
                 ns_selector: Selector | None, names: frozenset[builtins.str]) -> PodAffinityTerm:
    """One :class:`PodAffinityTerm` object per distinct term (terms are immutable values): the pods of a
    workload then share their terms, which lets the affinity walks match each distinct term once per
    decision (objects/affinity.py). Bounded: forgotten when it grows past ``_SHARED_MAX`` terms."""
    value = (topology_key, namespaces, selector, ns_selector, names)
    known = _SHARED.get(value)
    if known is not None:
        return known
    if len(_SHARED) >= _SHARED_MAX:
        _SHARED.clear()
    term = _SHARED[value] = PodAffinityTerm(topology_key, namespaces, selector, ns_selector, names)
    return term


_QUANTITIES: dict[builtins.str, Fraction] = {}
_QUANTITIES_MAX = 4096


def _remember_quantity(text: builtins.str, value: Fraction) -> None:
    """Cache a valid, non-negative quantity string's value: pods of a workload repeat the same few
    ("100m", "500Mi"), and parsing one (a regex and Fraction arithmetic) costs more than the rest of a
    container. Fractions are immutable, so sharing them is safe. Bounded like ``_SHARED``."""
    if len(_QUANTITIES) >= _QUANTITIES_MAX:
        _QUANTITIES.clear()
    _QUANTITIES[text] = value


class Reader:
    """Typed access to one object's fields, collecting warnings under the object's name."""

    def __init__(self, what: builtins.str, warnings: builtins.list[builtins.str]) -> None:
        self.what = what
        self.warnings = warnings

    def warn(self, problem: builtins.str) -> None:
        self.warnings.append(f"{self.what}: {problem}")

    # Every accessor tests ``type(x) is dict`` before ``isinstance(x, Mapping)``: objects decoded from JSON
    # are plain dicts, and the ABC check costs about ten times more (a few dozen of them per pod add up on
    # the live scheduler's watch thread). Other mappings still take the ``isinstance`` path.

    def map(self, obj: Any, key: builtins.str, where: builtins.str = "") -> dict[builtins.str, Any]:
        """The mapping at ``key`` (``{}`` when absent or not a mapping). A plain dict is returned as is,
        not copied: callers only read it."""
        if type(obj) is dict or isinstance(obj, Mapping):
            value = obj.get(key)
        else:
            return {}
        if type(value) is dict:
            return value
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            self.warn(f"{where or key} is not a mapping; ignored")
            return {}
        return dict(value)

    def list(self, obj: Any, key: builtins.str, where: builtins.str = "") -> builtins.list[Any]:
        if type(obj) is dict or isinstance(obj, Mapping):
            value = obj.get(key)
        else:
            return []
        if value is None:
            return []
        if not isinstance(value, list):
            self.warn(f"{where or key} is not a list; ignored")
            return []
        return value

    def str(self, obj: Any, key: builtins.str, default: builtins.str = "", where: builtins.str = "") -> builtins.str:
        if type(obj) is dict or isinstance(obj, Mapping):
            value = obj.get(key)
        else:
            return default
        if type(value) is str:
            return value
        if value is None:
            return default
        if not isinstance(value, str):
            self.warn(f"{where or key} is not a string; ignored")
            return default
        return value

    def int(self, obj: Any, key: builtins.str, default: builtins.int = 0, where: builtins.str = "") -> builtins.int:
        if type(obj) is dict or isinstance(obj, Mapping):
            value = obj.get(key)
        else:
            return default
        if type(value) is int:
            return value
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            self.warn(f"{where or key} is not an integer; using {default}")
            return default
        return value

    def bool(self, obj: Any, key: builtins.str, where: builtins.str = "") -> builtins.bool:
        if type(obj) is dict or isinstance(obj, Mapping):
            value = obj.get(key)
        else:
            return False
        if value is None:
            return False
        if not isinstance(value, bool):
            self.warn(f"{where or key} is not a boolean; using false")
            return False
        return value

    def str_map(self, obj: Any, key: builtins.str, where: builtins.str = "") -> dict[builtins.str, builtins.str]:
        raw = self.map(obj, key, where)
        out: dict[str, str] = {}
        for k, v in raw.items():
            if isinstance(k, str) and isinstance(v, str):
                out[k] = v
            elif isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool):
                out[k] = str(v)
            else:
                self.warn(f"{where or key} entry {k!r} is not a string; ignored")
        return out

    def resources(self, obj: Any, key: builtins.str, where: builtins.str) -> dict[builtins.str, Fraction]:
        out: dict[str, Fraction] = {}
        raw_map = self.map(obj, key, where)
        if not raw_map:
            return out
        for name, raw in raw_map.items():
            value = _QUANTITIES.get(raw) if type(raw) is str else None
            if value is None:
                try:
                    value = to_quantity(raw)
                except QuantityError as err:
                    self.warn(f"{where}[{name}]: {err}; ignored")
                    continue
                if value < 0:  # the API server refuses negative requests and capacities
                    self.warn(f"{where}[{name}]: {raw} is negative (must be greater than or equal to 0); ignored")
                    continue
                if type(raw) is str:
                    _remember_quantity(raw, value)
            out[name if type(name) is str else str(name)] = value
        return out


    # -- pieces -------------------------------------------------------------------------------------

    def taints(self, spec: Any) -> tuple[Taint, ...]:
        out = []
        for i, raw in enumerate(self.list(spec, "taints", "spec.taints")):
            if not isinstance(raw, Mapping):
                self.warn(f"spec.taints[{i}] is not a mapping; ignored")
                continue
            out.append(Taint(self.str(raw, "key"), self.str(raw, "value"), self.str(raw, "effect")))
        return tuple(out)

    def tolerations(self, spec: Any) -> tuple[Toleration, ...]:
        out = []
        for i, raw in enumerate(self.list(spec, "tolerations", "spec.tolerations")):
            if type(raw) is dict:  # every API-server pod has two (not-ready, unreachable): read them directly
                key, op, value, effect = raw.get("key"), raw.get("operator"), raw.get("value"), raw.get("effect")
                if ((key is None or type(key) is str) and (op is None or type(op) is str)
                        and (value is None or type(value) is str) and (effect is None or type(effect) is str)):
                    out.append(Toleration(key or "", op or "", value or "", effect or ""))
                    continue
            elif not isinstance(raw, Mapping):
                self.warn(f"spec.tolerations[{i}] is not a mapping; ignored")
                continue
            out.append(
                Toleration(self.str(raw, "key"), self.str(raw, "operator"), self.str(raw, "value"), self.str(raw, "effect"))
            )
        return tuple(out)

    def node_selector_term(self, raw: Any, where: builtins.str) -> NodeSelectorTerm:
        if not isinstance(raw, Mapping):
            self.warn(f"{where} is not a mapping; it matches nothing")
            return NodeSelectorTerm((), (), None, None, False)
        valid = True
        parts: list[tuple[tuple[NodeSelectorRequirement, ...], Selector | None]] = []
        for field_name in ("matchExpressions", "matchFields"):
            shown, reqs = [], []
            for j, expr in enumerate(self.list(raw, field_name, f"{where}.{field_name}")):
                if isinstance(expr, Mapping):
                    values = expr.get("values")
                    values = tuple(v for v in values if isinstance(v, str)) if isinstance(values, list) else ()
                    shown.append(NodeSelectorRequirement(self.str(expr, "key"), self.str(expr, "operator"), values))
                if field_name == "matchFields":
                    req, problem = self._field_requirement(expr)
                else:
                    req, problem = compile_requirement(expr, node=True)
                if req is None:
                    self.warn(f"{where}.{field_name}[{j}]: {problem}; the term matches nothing")
                    valid = False
                else:
                    reqs.append(req)
            parts.append((tuple(shown), Selector(tuple(reqs)) if reqs else None))
        (exprs, labels), (fields, fields_sel) = parts
        return NodeSelectorTerm(exprs, fields, labels, fields_sel, valid)

    @staticmethod
    def _field_requirement(expr: Any) -> tuple[Requirement | None, builtins.str | None]:
        """matchFields: only In / NotIn with exactly one value (nodeSelectorRequirementsAsFieldSelector)."""
        if not isinstance(expr, Mapping):
            return None, "field requirement is not a mapping"
        op, values, key = expr.get("operator"), expr.get("values"), expr.get("key")
        if op not in ("In", "NotIn"):
            return None, f"field selector operator {op!r} is not supported"
        if not isinstance(values, list) or len(values) != 1 or not isinstance(values[0], str):
            return None, "field selector values must have exactly one element"
        if not isinstance(key, str):
            return None, "field selector key is not a string"
        return Requirement(key, op, frozenset(values)), None

    def affinity_term(self, raw: Any, where: builtins.str, namespace: builtins.str, labels: Mapping[builtins.str, builtins.str]) -> PodAffinityTerm | None:
        if not isinstance(raw, Mapping):
            self.warn(f"{where} is not a mapping; ignored")
            return None
        selector, problem = compile_label_selector(raw.get("labelSelector"))
        if problem:
            self.warn(f"{where}.labelSelector: {problem}; it matches no pod")
        ns_selector, problem = compile_label_selector(raw.get("namespaceSelector"))
        if problem:
            self.warn(f"{where}.namespaceSelector: {problem}; it matches no namespace")
        namespaces = tuple(n for n in self.list(raw, "namespaces", f"{where}.namespaces") if isinstance(n, str))
        if not namespaces and raw.get("namespaceSelector") is None:
            names = frozenset([namespace])
        else:
            names = frozenset(namespaces)
        # matchLabelKeys / mismatchLabelKeys: the API server merges them into the selector at creation;
        # doing it again is idempotent, and it makes objects that skipped the API server behave the same.
        extra = []
        for key in self.list(raw, "matchLabelKeys", f"{where}.matchLabelKeys"):
            if isinstance(key, str) and key in labels:
                extra.append(Requirement(key, "In", frozenset([labels[key]])))
        for key in self.list(raw, "mismatchLabelKeys", f"{where}.mismatchLabelKeys"):
            if isinstance(key, str) and key in labels:
                extra.append(Requirement(key, "NotIn", frozenset([labels[key]])))
        if extra and selector is not None:
            selector = selector.add(*extra)
        return _shared_term(self.str(raw, "topologyKey"), namespaces, selector, ns_selector, names)

    def affinity_terms(
        self, block: Any, where: builtins.str, namespace: builtins.str, labels: Mapping[builtins.str, builtins.str]
    ) -> tuple[tuple[PodAffinityTerm, ...], tuple[WeightedPodAffinityTerm, ...]]:
        required = []
        for i, raw in enumerate(self.list(block, "requiredDuringSchedulingIgnoredDuringExecution", f"{where}.required")):
            term = self.affinity_term(raw, f"{where}.required[{i}]", namespace, labels)
            if term is not None:
                required.append(term)
        preferred = []
        for i, raw in enumerate(self.list(block, "preferredDuringSchedulingIgnoredDuringExecution", f"{where}.preferred")):
            if not isinstance(raw, Mapping):
                self.warn(f"{where}.preferred[{i}] is not a mapping; ignored")
                continue
            term = self.affinity_term(raw.get("podAffinityTerm"), f"{where}.preferred[{i}].podAffinityTerm", namespace, labels)
            weight = _weight(self, raw, f"{where}.preferred[{i}]")
            if term is not None and weight is not None:
                preferred.append(WeightedPodAffinityTerm(weight, term))
        return tuple(required), tuple(preferred)

    def preferred_node_terms(self, node_affinity: Any) -> tuple[PreferredSchedulingTerm, ...]:
        out = []
        key = "preferredDuringSchedulingIgnoredDuringExecution"
        for i, raw in enumerate(self.list(node_affinity, key, "nodeAffinity.preferred")):
            if not isinstance(raw, Mapping):
                self.warn(f"nodeAffinity.preferred[{i}] is not a mapping; ignored")
                continue
            term = self.node_selector_term(raw.get("preference") or {}, f"nodeAffinity.preferred[{i}].preference")
            weight = _weight(self, raw, f"nodeAffinity.preferred[{i}]")
            if weight is not None:
                out.append(PreferredSchedulingTerm(weight, term))
        return tuple(out)

    def spread_constraints(self, spec: Any, labels: Mapping[builtins.str, builtins.str]) -> tuple[SpreadConstraint, ...]:
        out = []
        for i, raw in enumerate(self.list(spec, "topologySpreadConstraints", "spec.topologySpreadConstraints")):
            where = f"spec.topologySpreadConstraints[{i}]"
            if not isinstance(raw, Mapping):
                self.warn(f"{where} is not a mapping; ignored")
                continue
            selector, problem = compile_label_selector(raw.get("labelSelector"))
            if problem:
                self.warn(f"{where}.labelSelector: {problem}; it matches no pod")
            keys = tuple(k for k in self.list(raw, "matchLabelKeys", f"{where}.matchLabelKeys") if isinstance(k, str))
            extra = [Requirement(k, "In", frozenset([labels[k]])) for k in keys if k in labels]
            if extra and selector is not None:  # a nil selector stays "nothing" (mergeLabelSetWithSelector)
                selector = selector.add(*extra)
            min_domains = raw.get("minDomains")
            if min_domains is None:
                min_domains = 1
            elif isinstance(min_domains, bool) or not isinstance(min_domains, int):
                self.warn(f"{where}.minDomains is not an integer; using 1")
                min_domains = 1
            out.append(
                SpreadConstraint(
                    max_skew=self.int(raw, "maxSkew", 1, f"{where}.maxSkew"),
                    topology_key=self.str(raw, "topologyKey"),
                    when_unsatisfiable=self.str(raw, "whenUnsatisfiable", "DoNotSchedule"),
                    min_domains=min_domains,
                    node_affinity_policy=self.str(raw, "nodeAffinityPolicy", "Honor") or "Honor",
                    node_taints_policy=self.str(raw, "nodeTaintsPolicy", "Ignore") or "Ignore",
                    match_label_keys=keys,
                    _selector=selector,
                )
            )
        return tuple(out)

    def host_ports(self, container: Any, where: builtins.str, host_network: builtins.bool) -> builtins.list[HostPort]:
        out = []
        for j, port in enumerate(self.list(container, "ports", f"{where}.ports")):
            if type(port) is not dict and not isinstance(port, Mapping):
                self.warn(f"{where}.ports[{j}] is not a mapping; ignored")
                continue
            host_port = self.int(port, "hostPort", 0, f"{where}.ports[{j}].hostPort")
            if host_network and host_port == 0:
                host_port = self.int(port, "containerPort", 0, f"{where}.ports[{j}].containerPort")
            if host_port > 0:
                out.append(
                    HostPort(
                        self.str(port, "hostIP") or "0.0.0.0",
                        self.str(port, "protocol") or "TCP",
                        host_port,
                    )
                )
        return out


def _weight(r: Reader, raw: Any, where: builtins.str) -> builtins.int | None:
    """A preferred term's weight: an integer in 1..100 (the API server's rule), else None with a warning."""
    w = raw.get("weight") if isinstance(raw, Mapping) else None
    if isinstance(w, bool) or not isinstance(w, int) or not 1 <= w <= 100:
        r.warn(f"{where}.weight: {w!r} must be an integer in the range 1-100; the term is ignored")
        return None
    return w
