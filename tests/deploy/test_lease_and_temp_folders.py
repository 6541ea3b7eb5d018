"""Where ``config import`` puts the Lease agrees with deploy/rbac.yaml, and ``run`` leaves no folders of
inline policies behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from policyscheduler.config.kubeimport import import_kube_config

REPO = Path(__file__).resolve().parents[2]
KUBE = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def lease_grants() -> dict[str, set[str]]:
    """Namespace -> verbs on Leases that deploy/rbac.yaml's Roles grant (by name or not)."""
    out: dict[str, set[str]] = {}
    for doc in yaml.safe_load_all((REPO / "deploy" / "rbac.yaml").read_text()):
        if doc and doc["kind"] == "Role":
            for rule in doc["rules"]:
                if "leases" in rule["resources"] and "coordination.k8s.io" in rule["apiGroups"]:
                    out.setdefault(doc["metadata"]["namespace"], set()).update(rule["verbs"])
    return out


@pytest.mark.parametrize("leader_election", [
    "leaderElection: {leaderElect: true}\n",
    "leaderElection: {leaderElect: true, resourceNamespace: kube-system, resourceName: kube-scheduler}\n",
])
def test_an_imported_lease_lives_where_deploy_rbac_lets_it(leader_election: str) -> None:
    result = import_kube_config("ks.yaml", KUBE + leader_election)
    le: dict[str, Any] = result.config["leaderElection"]
    assert {"create", "get", "update"} <= lease_grants().get(le["leaseNamespace"], set())
    assert le.get("leaseName") != "kube-scheduler"  # kube-scheduler's own Lease: never shared


def test_a_lease_namespace_of_the_users_choosing_is_kept() -> None:
    result = import_kube_config("ks.yaml", KUBE + "leaderElection: {leaderElect: true, resourceNamespace: sched}\n")
    assert result.config["leaderElection"]["leaseNamespace"] == "sched"
    assert not result.notes


def test_the_kube_system_lease_is_reported_as_not_kept() -> None:
    result = import_kube_config(
        "ks.yaml", KUBE + "leaderElection: {leaderElect: true, resourceNamespace: kube-system}\n")
    assert [n for n in result.notes if "resourceNamespace kube-system: not kept" in n]


def test_inline_policies_leave_no_temp_folder_after_run_exits(tmp_path: Path) -> None:
    """``run --config`` writes a profile's inline policies to a temp folder; it is removed when the process
    exits (here ``run`` exits 1 at once: the kubeconfig does not exist)."""
    config = tmp_path / "config.yaml"
    config.write_text("apiVersion: policyscheduler.io/v1alpha1\nkind: PolicySchedulerConfiguration\n"
                      "profiles:\n- schedulerName: inline-one\n  policies:\n  - name: a.policy\n"
                      "    text: |\n      filter f\n        reason \"x\"\n        require true\n")
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(temp)}
    done = subprocess.run([sys.executable, "-m", "policyscheduler", "run", "--config", str(config),
                           "--kubeconfig", str(tmp_path / "missing.kubeconfig")],
                          env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0 and "missing.kubeconfig" in done.stderr
    assert [p.name for p in temp.iterdir() if p.name.startswith("policyscheduler-inline-one-")] == []
