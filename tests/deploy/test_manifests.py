"""deploy/: the manifests say what the issue asks, and agree with each other and with the code.

The e2e tests (tests/e2e/test_deploy.py) prove the same things against a real API server; these catch a
slip in seconds: a grant the scheduler does not use, a probe on the wrong port, a lease name that does
not match the scheduler name.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
NAMESPACE = "policyscheduler-system"
SA = "policy-scheduler"
CONFIGMAP = "policy-scheduler-policies"

# Every grant `policyscheduler run` needs, and nothing more: (group, resource) -> verbs. Derived from the API
# calls in policyscheduler/kube/*.py (watch.RESOURCES lists/watches, binder POST binding + GET pod, PUT of PVs and
# PVCs before a pod's bind (app/volumes.py), events
# POST and series PATCH, pods/status PATCH, lease GET/POST/PUT) and the ConfigMap watch of --policies-configmap.
CLUSTER_GRANTS = {
    ("", "pods"): {"get", "list", "watch", "delete"},  # delete: preemption's victims (app/preemption.py)
    ("", "pods/binding"): {"create"},
    ("", "pods/status"): {"patch"},
    ("", "nodes"): {"list", "watch"},
    ("", "namespaces"): {"list", "watch"},
    ("", "services"): {"list", "watch"},
    ("", "replicationcontrollers"): {"list", "watch"},
    ("apps", "replicasets"): {"list", "watch"},
    ("apps", "statefulsets"): {"list", "watch"},
    ("policy", "poddisruptionbudgets"): {"list", "watch"},
    ("events.k8s.io", "events"): {"create", "patch"},
    # the volume plugins read these (objects/volumes.py); update: PreBind (app/volumes.py)
    ("", "persistentvolumeclaims"): {"list", "watch", "update"},
    ("", "persistentvolumes"): {"list", "watch", "update"},
    ("storage.k8s.io", "storageclasses"): {"list", "watch"},
    ("storage.k8s.io", "csinodes"): {"list", "watch"},
    ("storage.k8s.io", "csidrivers"): {"list", "watch"},
    ("storage.k8s.io", "csistoragecapacities"): {"list", "watch"},
    ("storage.k8s.io", "volumeattachments"): {"list", "watch"},
}
NAMESPACED_GRANTS = {
    ("coordination.k8s.io", "leases", None): {"create"},
    ("coordination.k8s.io", "leases", "policy-scheduler"): {"get", "update"},
    ("", "configmaps", CONFIGMAP): {"get", "list", "watch"},
    ("", "configmaps", None): {"create"},  # the last good set's ConfigMap, created once (app/lastgood.py)
    ("", "configmaps", "policyscheduler-last-good"): {"get", "update"},
}


def _docs(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((DEPLOY / name).read_text()) if d]


def _kustomization() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    return doc


def _all() -> list[dict[str, Any]]:
    return [d for name in _kustomization()["resources"] for d in _docs(name)]


def _one(kind: str, name: str | None = None) -> dict[str, Any]:
    [doc] = [d for d in _all() if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    return doc


def _expand(rules: list[dict[str, Any]], named: bool) -> dict[tuple[Any, ...], set[str]]:
    out: dict[tuple[Any, ...], set[str]] = {}
    for r in rules:
        for g in r["apiGroups"]:
            for res in r["resources"]:
                for rn in (r.get("resourceNames") or [None]) if named else [None]:
                    assert not named or rn is not None or "resourceNames" not in r
                    key = (g, res, rn) if named else (g, res)
                    out.setdefault(key, set()).update(r["verbs"])
    return out


def test_cluster_role_grants_exactly_what_run_uses() -> None:
    role = _one("ClusterRole")
    assert all("resourceNames" not in r and "nonResourceURLs" not in r for r in role["rules"])
    assert _expand(role["rules"], named=False) == CLUSTER_GRANTS


def test_namespaced_role_is_by_name_where_rbac_allows() -> None:
    role = _one("Role")
    assert role["metadata"]["namespace"] == NAMESPACE
    assert _expand(role["rules"], named=True) == NAMESPACED_GRANTS


def test_no_wildcards_no_secrets_no_deletes() -> None:
    text = (DEPLOY / "rbac.yaml").read_text()
    for role in (_one("ClusterRole"), _one("Role")):
        for r in role["rules"]:
            assert "*" not in r["verbs"] + r["resources"] + r["apiGroups"]
            forbidden = {"deletecollection", "escalate", "bind", "impersonate"}
            if r["resources"] != ["pods"]:  # preemption deletes its victims: pods, nothing else
                forbidden.add("delete")
            assert not forbidden & set(r["verbs"])
            assert "secrets" not in r["resources"]
    # Every rule carries its reason: a comment line right above each `- apiGroups:`.
    lines = text.splitlines()
    rule_lines = [i for i, ln in enumerate(lines) if ln.strip().startswith("- apiGroups:")]
    # services+RCs, RS+STS, PVCs+PVs share a rule; the five storage.k8s.io resources share one
    assert len(rule_lines) == len(CLUSTER_GRANTS) - 2 - 1 - 4 + len(NAMESPACED_GRANTS)
    assert all(lines[i - 1].strip().startswith("#") for i in rule_lines)


def test_bindings_name_the_service_account() -> None:
    sa = _one("ServiceAccount")
    assert (sa["metadata"]["name"], sa["metadata"]["namespace"]) == (SA, NAMESPACE)
    for kind, role_kind in (("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")):
        [b] = [d for d in _all() if d["kind"] == kind and d["roleRef"]["name"] != "system:auth-delegator"]
        assert b["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind,
                                "name": _one(role_kind)["metadata"]["name"]}
        assert b["subjects"] == [{"kind": "ServiceAccount", "name": SA, "namespace": NAMESPACE}]


def test_service_account_may_delegate_authn_and_authz() -> None:
    """Secure serving asks the API server about each /metrics caller (TokenReview, SubjectAccessReview),
    as kube-scheduler does: the ServiceAccount needs system:auth-delegator."""
    [b] = [d for d in _all() if d["kind"] == "ClusterRoleBinding" and d["roleRef"]["name"] == "system:auth-delegator"]
    assert b["roleRef"]["kind"] == "ClusterRole"
    assert b["subjects"] == [{"kind": "ServiceAccount", "name": SA, "namespace": NAMESPACE}]


def _args() -> dict[str, str]:
    container = _one("Deployment")["spec"]["template"]["spec"]["containers"][0]
    out = {}
    for a in container["args"][1:]:
        key, _, value = a.partition("=")
        out[key] = value
    assert container["args"][0] == "run"
    return out


def test_deployment_runs_two_replicas_behind_our_lease_and_configmap() -> None:
    dep = _one("Deployment")
    assert dep["spec"]["replicas"] == 2
    args = _args()
    assert "--leader-elect" in args
    assert args["--leader-elect-lease-namespace"] == NAMESPACE == _one("Role")["metadata"]["namespace"]
    # The Lease is named after the scheduler: the Role's lease resourceNames must be that name.
    assert args["--scheduler-name"] in {k[2] for k in NAMESPACED_GRANTS if k[1] == "leases" and k[2]}
    gen = {g["name"]: g for g in _kustomization()["configMapGenerator"]}
    assert args["--policies-configmap"] == f"{_kustomization()['namespace']}/{CONFIGMAP}" and CONFIGMAP in gen
    assert _kustomization()["generatorOptions"]["disableNameSuffixHash"] is True  # watched by name
    pod = dep["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == SA and "schedulerName" not in pod  # placed by the default scheduler


def test_probes_and_service_use_the_bind_address_port() -> None:
    pod = _one("Deployment")["spec"]["template"]["spec"]
    c = pod["containers"][0]
    assert _args()["--bind-address"] == "0.0.0.0"
    port = _args()["--secure-port"]
    [p] = c["ports"]
    assert p["containerPort"] == int(port)
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": p["name"], "scheme": "HTTPS"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": p["name"], "scheme": "HTTPS"}
    svc = _one("Service")
    assert svc["spec"]["selector"] == _one("Deployment")["spec"]["selector"]["matchLabels"]
    assert [sp["targetPort"] for sp in svc["spec"]["ports"]] == [p["name"]]


def test_pod_is_locked_down() -> None:
    pod = _one("Deployment")["spec"]["template"]["spec"]
    c = pod["containers"][0]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    sc = c["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False and sc["readOnlyRootFilesystem"] is True
    assert sc["capabilities"] == {"drop": ["ALL"]} and sc["runAsNonRoot"] is True
    for what in ("requests", "limits"):
        assert set(c["resources"][what]) == {"cpu", "memory"}
    assert _one("Namespace")["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


def test_dockerfile_is_slim_wheel_and_non_root() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    assert re.search(r"^ARG PYTHON_IMAGE=python:3\.11-slim@sha256:[0-9a-f]{64}$", text, re.M)
    assert re.search(r"pip install /tmp/wheels/policyscheduler-\*\.whl", text)
    user = re.findall(r"^USER (\S+)$", text, re.M)
    assert user and not user[-1].startswith(("root", "0"))
    assert re.search(r'^ENTRYPOINT \["policyscheduler"\]$', text, re.M)


def test_example_workload_uses_the_scheduler_and_is_not_installed() -> None:
    examples = sorted((DEPLOY / "examples").glob("*.yaml"))
    assert examples
    for f in examples:
        for doc in yaml.safe_load_all(f.read_text()):
            spec = doc["spec"]["template"]["spec"] if doc["kind"] != "Pod" else doc["spec"]
            assert spec["schedulerName"] == "policy-scheduler"
    assert not any(r.startswith("examples") for r in _kustomization()["resources"])


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")
def test_kustomize_renders_every_object_once() -> None:
    """`kubectl kustomize deploy/` (what `kubectl apply -k deploy/` applies): no load-restrictor error, the
    generated ConfigMap holds the site policy files, everything namespaced is in our namespace."""
    out = subprocess.run(["kubectl", "kustomize", str(DEPLOY)], capture_output=True, text=True, timeout=60,
                         check=True).stdout
    docs = [d for d in yaml.safe_load_all(out) if d]
    kinds = sorted(d["kind"] for d in docs)
    assert kinds == sorted(["Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ClusterRoleBinding", "Role",
                            "RoleBinding", "ConfigMap", "Deployment", "Service", "PodDisruptionBudget",
                            "ResourceQuota"])
    cm = next(d for d in docs if d["kind"] == "ConfigMap")
    assert cm["metadata"] == {**cm["metadata"], "name": CONFIGMAP, "namespace": NAMESPACE}
    assert cm["data"] == {p.name: p.read_text() for p in (DEPLOY / "policies").glob("*.policy")}
    for d in docs:
        if d["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
            assert d["metadata"]["namespace"] == NAMESPACE, d["kind"]


def test_every_from_is_pinned_by_digest() -> None:
    """A tag moves (every CPython or Debian patch): each FROM is a digest, directly or through an ARG whose
    default is one."""
    text = (DEPLOY / "Dockerfile").read_text()
    args = dict(re.findall(r"^ARG (\w+)=(\S+)$", text, re.M))
    froms = re.findall(r"^FROM\s+(\S+)", text, re.M)
    assert froms
    for image in froms:
        ref = re.fullmatch(r"\$\{?(\w+)\}?", image)
        resolved = args.get(ref.group(1), "") if ref else image
        assert re.fullmatch(r"[\w./:-]+@sha256:[0-9a-f]{64}", resolved), f"FROM {image} is not pinned by digest"


def test_the_scheduler_pods_have_a_critical_priority_the_quota_admits() -> None:
    spec = _one("Deployment")["spec"]["template"]["spec"]
    assert spec["priorityClassName"] == "system-cluster-critical"
    quota = _one("ResourceQuota")
    assert quota["metadata"]["namespace"] == NAMESPACE
    [expr] = quota["spec"]["scopeSelector"]["matchExpressions"]
    assert (expr["scopeName"], expr["operator"], expr["values"]) == ("PriorityClass", "In", [spec["priorityClassName"]])
    assert int(quota["spec"]["hard"]["pods"]) >= _one("Deployment")["spec"]["replicas"]
