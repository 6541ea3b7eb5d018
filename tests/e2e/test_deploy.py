"""deploy/ against the real API server: `kubectl apply -k deploy/` is accepted, and the ServiceAccount it
creates can do everything `policyscheduler run` needs -- and nothing else.

The scheduler runs here with the ServiceAccount's own identity: a token from the TokenRequest API
(`kubectl create token`), not the admin certificate. No kubelet or controller-manager runs, so the
Deployment makes no pods; we run the same `policyscheduler run` the Deployment would, with its args.
"""

from __future__ import annotations

import json
import subprocess
import sys
import types
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import Kube
from tests.controlplane.api import ApiError, wait_for
from tests.controlplane.harness import ControlPlane
from tests.kube.live import RunProcess, events, pods, wait_all_bound

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
NS = "policyscheduler-system"
SA = "policy-scheduler"
CONFIGMAP = "policy-scheduler-policies"
SCHEDULER = "policy-scheduler"


def kubectl(kubeconfig: Path | str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), *args], capture_output=True, text=True,
                          timeout=120)
    if check:
        assert proc.returncode == 0, f"kubectl {' '.join(args)}: {proc.stderr}"
    return proc


def _rendered() -> list[dict[str, Any]]:
    out = subprocess.run(["kubectl", "kustomize", str(DEPLOY)], capture_output=True, text=True, timeout=60,
                         check=True).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def _ensure_namespace(cp: ControlPlane, tmp: Path) -> None:
    """The Namespace of deploy/, created for real: a server-side dry run cannot create the namespace its
    other objects go into (NamespaceLifecycle admission looks for it), so it must exist first."""
    ns = tmp / "namespace.yaml"
    ns.write_text(yaml.safe_dump(next(d for d in _rendered() if d["kind"] == "Namespace")))
    kubectl(cp.kubeconfig, "apply", "-f", str(ns))


def test_apply_k_deploy_server_dry_run(control_plane: ControlPlane, tmp_path: Path) -> None:
    _ensure_namespace(control_plane, tmp_path)
    proc = kubectl(control_plane.kubeconfig, "apply", "-k", str(DEPLOY), "--dry-run=server")
    # PodSecurity "restricted" is enforced on the namespace: the Deployment's pod template passes (the API
    # server would print "Warning: would violate PodSecurity ..." otherwise).
    assert "Warning" not in proc.stderr, proc.stderr
    done = {line.split(" ")[0] for line in proc.stdout.splitlines() if line.endswith("(server dry run)")}
    assert done == {"namespace/policyscheduler-system", f"serviceaccount/{SA}", f"role.rbac.authorization.k8s.io/{SA}",
                    "clusterrole.rbac.authorization.k8s.io/policyscheduler:policy-scheduler",
                    f"rolebinding.rbac.authorization.k8s.io/{SA}",
                    "clusterrolebinding.rbac.authorization.k8s.io/policyscheduler:policy-scheduler",
                    "clusterrolebinding.rbac.authorization.k8s.io/policyscheduler:policy-scheduler:auth-delegator",
                    f"configmap/{CONFIGMAP}", "service/policy-scheduler-metrics", "deployment.apps/policy-scheduler",
                    "poddisruptionbudget.policy/policy-scheduler", "resourcequota/policy-scheduler-critical-pods"}


def test_the_scheduler_pod_is_admitted_with_its_critical_priority(control_plane: ControlPlane, tmp_path: Path) -> None:
    """The Deployment's pod template as a Pod (server dry run): the Priority admission resolves
    system-cluster-critical outside kube-system, and PodSecurity "restricted" admits it."""
    _ensure_namespace(control_plane, tmp_path)
    deployment = next(d for d in _rendered() if d["kind"] == "Deployment")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "priority-probe", "namespace": NS,
                                                            **deployment["spec"]["template"]["metadata"]},
           "spec": {**deployment["spec"]["template"]["spec"], "serviceAccountName": "default"}}
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(yaml.safe_dump(pod))
    proc = kubectl(control_plane.kubeconfig, "create", "-f", str(manifest), "--dry-run=server", "-o", "json")
    created = json.loads(proc.stdout)
    assert created["spec"]["priorityClassName"] == "system-cluster-critical"
    assert created["spec"]["priority"] == 2000000000
    assert "Warning" not in proc.stderr, proc.stderr


@pytest.fixture(scope="module")
def installed(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """deploy/ applied for real, and a kubeconfig holding a TokenRequest token of its ServiceAccount."""
    tmp = tmp_path_factory.mktemp("deploy")
    _ensure_namespace(control_plane, tmp)
    kubectl(control_plane.kubeconfig, "apply", "-k", str(DEPLOY))
    token = kubectl(control_plane.kubeconfig, "create", "token", SA, "-n", NS, "--duration=1h").stdout.strip()
    config = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "test", "cluster": {"server": control_plane.server,
                                                  "certificate-authority": str(control_plane.ca.pair.cert_file)}}],
        "users": [{"name": SA, "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "test", "user": SA}}],
        "current-context": "sa",
    }
    path = tmp / "sa.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def test_the_token_is_the_service_account(installed: Path) -> None:
    who = json.loads(kubectl(installed, "auth", "whoami", "-o", "json").stdout)
    assert who["status"]["userInfo"]["username"] == f"system:serviceaccount:{NS}:{SA}"


# What `policyscheduler run` does (policyscheduler/kube/*.py), as `kubectl auth can-i` questions.
ALLOWED = [
    ("list", "pods", "-A"), ("watch", "pods", "-A"), ("get", "pods", "-n", "default"),
    ("create", "pods", "--subresource=binding", "-n", "default"),
    ("patch", "pods", "--subresource=status", "-n", "default"),
    ("delete", "pods", "-n", "default"),  # preemption's victims
    ("list", "poddisruptionbudgets.policy", "-A"), ("watch", "poddisruptionbudgets.policy", "-A"),
    ("list", "nodes"), ("watch", "nodes"), ("list", "namespaces"), ("watch", "namespaces"),
    ("list", "services", "-A"), ("watch", "replicationcontrollers", "-A"),
    ("list", "replicasets.apps", "-A"), ("watch", "statefulsets.apps", "-A"),
    ("create", "events.events.k8s.io", "-n", "default"), ("create", "events.events.k8s.io", "-n", NS),
    ("patch", "events.events.k8s.io", "-n", "default"),  # an event series' count
    ("create", "leases.coordination.k8s.io", "-n", NS),
    ("get", f"leases.coordination.k8s.io/{SCHEDULER}", "-n", NS),
    ("update", f"leases.coordination.k8s.io/{SCHEDULER}", "-n", NS),
    ("get", f"configmaps/{CONFIGMAP}", "-n", NS), ("watch", f"configmaps/{CONFIGMAP}", "-n", NS),
    # delegated authn/authz of the HTTPS status port (system:auth-delegator), as kube-scheduler
    ("create", "tokenreviews.authentication.k8s.io"), ("create", "subjectaccessreviews.authorization.k8s.io"),
    # the last good policy set (app/lastgood.py): created once, then read and updated by name
    ("create", "configmaps", "-n", NS), ("get", "configmaps/policyscheduler-last-good", "-n", NS),
    ("update", "configmaps/policyscheduler-last-good", "-n", NS),
    # volumes: watched for the volume rules; a pod's claims bound before the pod (app/volumes.py)
    ("list", "persistentvolumeclaims", "-A"), ("watch", "persistentvolumeclaims", "-A"),
    ("update", "persistentvolumeclaims", "-n", "default"), ("list", "persistentvolumes"),
    ("watch", "persistentvolumes"), ("update", "persistentvolumes"),
    ("list", "storageclasses.storage.k8s.io"), ("watch", "csinodes.storage.k8s.io"),
    ("list", "csidrivers.storage.k8s.io"), ("list", "csistoragecapacities.storage.k8s.io", "-A"),
    ("watch", "volumeattachments.storage.k8s.io"),
]
REFUSED = [
    ("get", "secrets", "-n", NS), ("list", "secrets", "-A"),
    ("deletecollection", "pods", "-n", "default"), ("create", "pods", "-n", "default"),
    ("update", "pods", "-n", "default"),
    ("update", "pods", "--subresource=status", "-n", "default"), ("patch", "nodes"), ("get", "nodes/some-node"),
    ("create", "events", "-n", "default"),  # core/v1 events: we post events.k8s.io/v1 only
    ("update", "events.events.k8s.io", "-n", "default"),
    ("get", "configmaps", "-n", NS), ("get", "configmaps/other", "-n", NS), ("get", "configmaps", "-n", "kube-system"),
    ("update", f"configmaps/{CONFIGMAP}", "-n", NS), ("update", "configmaps/other", "-n", NS),
    ("get", "leases.coordination.k8s.io/kube-scheduler", "-n", "kube-system"),
    ("update", "leases.coordination.k8s.io/other", "-n", NS), ("delete", f"leases.coordination.k8s.io/{SCHEDULER}", "-n", NS),
    ("create", "leases.coordination.k8s.io", "-n", "kube-system"),
    ("create", "poddisruptionbudgets.policy", "-n", "default"),
    ("create", "persistentvolumes"), ("delete", "persistentvolumes"), ("patch", "persistentvolumeclaims", "-n", "default"),
    ("delete", "persistentvolumeclaims", "-n", "default"), ("update", "storageclasses.storage.k8s.io"),
    ("create", "csistoragecapacities.storage.k8s.io", "-n", "default"), ("update", "volumeattachments.storage.k8s.io"),
    ("create", "serviceaccounts/token", "-n", NS),
    ("create", "clusterrolebindings.rbac.authorization.k8s.io"), ("impersonate", "users"),
]


@pytest.mark.parametrize("question", ALLOWED, ids=lambda q: " ".join(q))
def test_grants_cover_what_run_does(installed: Path, question: tuple[str, ...]) -> None:
    proc = kubectl(installed, "auth", "can-i", *question, check=False)
    assert proc.stdout.strip() == "yes", proc.stdout + proc.stderr


@pytest.mark.parametrize("question", REFUSED, ids=lambda q: " ".join(q))
def test_refused_outside_its_grants(installed: Path, question: tuple[str, ...]) -> None:
    proc = kubectl(installed, "auth", "can-i", *question, check=False)
    assert proc.stdout.strip() == "no", proc.stdout + proc.stderr


def test_real_requests_outside_the_grants_are_forbidden(installed: Path, kube: Kube) -> None:
    """Not only what `can-i` says: the API server refuses the requests themselves."""
    [victim] = kube.create_pods(1, prefix="victim")
    [node] = kube.create_nodes(1)
    name = victim["metadata"]["name"]
    for args in (("get", "secrets", "-n", NS), ("get", "secrets", "-A"),
                 ("annotate", "pod", name, "-n", kube.namespace, "x=y"),  # pods: no patch (delete: preemption)
                 ("label", "node", node["metadata"]["name"], "x=y"),
                 ("-n", NS, "patch", "configmap", CONFIGMAP, "-p", '{"data":{"x.policy":""}}')):
        proc = kubectl(installed, *args, check=False)
        assert proc.returncode != 0 and "forbidden" in proc.stderr.lower(), (args, proc.stderr)
    assert kube.api.get(f"/api/v1/namespaces/{kube.namespace}/pods/{name}")["metadata"]["name"] == name


def _run_flags() -> list[str]:
    """The Deployment's `run` args, minus what cannot apply outside a pod (the fixed port), plus the test's
    engine and seed; `--policies-configmap` only once `run` has it (the live scheduler adds it)."""
    dep = next(d for d in _rendered() if d["kind"] == "Deployment")
    args = [a for a in dep["spec"]["template"]["spec"]["containers"][0]["args"][1:]
            if not a.startswith(("--bind-address", "--scheduler-name"))]
    help_text = subprocess.run([sys.executable, "-m", "policyscheduler", "run", "--help"], capture_output=True,
                               text=True, timeout=60, cwd=REPO).stdout
    if "--policies-configmap" not in help_text:
        args = [a for a in args if not a.startswith("--policies-configmap")]
    return [*args, "--engine", "reference", "--seed", "1"]


@pytest.fixture
def scheduler(installed: Path, tmp_path: Path) -> Iterator[RunProcess]:
    run = RunProcess(types.SimpleNamespace(kubeconfig=installed), tmp_path / "run.log",  # type: ignore[arg-type]  # only .kubeconfig is read
                     *_run_flags(), name=SCHEDULER)
    try:
        run.wait_log("started", timeout=60)
        yield run
    finally:
        if run.child.alive():
            run.terminate()


def _lease(kube: Kube) -> dict[str, Any]:
    try:
        lease: dict[str, Any] = kube.api.get(f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{SCHEDULER}")
        return lease
    except ApiError:
        return {}


def test_scheduler_runs_with_the_service_account_identity(scheduler: RunProcess, kube: Kube) -> None:
    kube.create_nodes(3, zones=("z1", "z2", "z3"))
    # It leads (the Lease in our namespace, created and renewed with the Role's grants) ...
    try:
        wait_for(lambda: (_lease(kube).get("spec") or {}).get("holderIdentity"), timeout=30, what="the lease holder")
    except TimeoutError:
        refused = [ln for ln in scheduler.log_file.read_text().splitlines() if "403" in ln][:3]
        raise AssertionError("no leader after 30s; requests refused:\n" + "\n".join(refused)) from None
    # ... schedules and binds (pods/binding), posts Scheduled events (events.k8s.io) ...
    created = kube.create_pods(6, prefix="web", scheduler_name=SCHEDULER)
    names = [p["metadata"]["name"] for p in created]
    bound = wait_all_bound(kube.api, kube.namespace, names, timeout=60)
    assert set(bound) == set(names)
    # ... and reports a pod that fits nowhere (FailedScheduling event + PodScheduled condition: pods/status).
    [stuck] = kube.create_pods(1, prefix="nowhere", scheduler_name=SCHEDULER, node_selector={"no-such": "label"})

    def reported() -> bool:
        evs = [e for e in events(kube.api, kube.namespace) if e["regarding"]["name"] == stuck["metadata"]["name"]
               and e.get("reason") == "FailedScheduling"]
        pod = kube.api.get(f"/api/v1/namespaces/{kube.namespace}/pods/{stuck['metadata']['name']}")
        conds = [c for c in pod["status"].get("conditions") or [] if c["type"] == "PodScheduled"]
        return bool(evs) and bool(conds) and conds[0]["reason"] == "Unschedulable"
    wait_for(reported, timeout=30, what="FailedScheduling event and PodScheduled=False")

    def scheduled_events() -> bool:
        evs = {e["regarding"]["name"] for e in events(kube.api, kube.namespace)
               if e.get("reason") == "Scheduled" and e.get("reportingController") == SCHEDULER}
        return set(names) <= evs
    wait_for(scheduled_events, timeout=30, what="Scheduled events")
    # /healthz and /readyz answer (the Deployment's probes).
    started = scheduler.find("started")[0]
    for path in ("/healthz", "/readyz"):
        with urllib.request.urlopen(f"http://{started['status_address']}{path}", timeout=5) as resp:
            assert resp.status == 200
    # Not one request was refused: the grants cover everything it did.
    log = scheduler.log_file.read_text()
    assert "forbidden" not in log.lower() and "HTTP 403" not in log, log[-3000:]
    assert scheduler.terminate() == 0
    assert not (_lease(kube).get("spec") or {}).get("holderIdentity")  # released on SIGTERM
    assert all(p["spec"].get("nodeName") for p in pods(kube.api, kube.namespace) if p["metadata"]["name"] in names)


def test_lint_the_configmap_as_the_cluster_stores_it(installed: Path, control_plane: ControlPlane,
                                                     tmp_path: Path) -> None:
    """`kubectl get configmap -o yaml` of the applied ConfigMap lints clean with the digest of `lint deploy/`
    (the ServiceAccount itself may read it: by name)."""
    stored = tmp_path / "stored.yaml"
    stored.write_text(kubectl(installed, "-n", NS, "get", "configmap", CONFIGMAP, "-o", "yaml").stdout)
    digests = []
    for path in (stored, DEPLOY):
        proc = subprocess.run([sys.executable, "-m", "policyscheduler", "lint", str(path), "--format", "json"],
                              capture_output=True, text=True, timeout=120, cwd=REPO)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        digests.append(json.loads(proc.stdout)["digest"])
    assert digests[0] == digests[1]
