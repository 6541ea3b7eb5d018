"""``policyscheduler explain NS/NAME --kubeconfig``: the live mode against the real API server.

Three nodes (one that fits, one too small, one tainted) and pods of ``policy-scheduler``: one bound, one
pending that fits nowhere, one pending that fits. ``explain`` runs as a child process with the admin
kubeconfig. It must name, for every node, the rule and the clause (``file:line``, the source line) that
rejected it; print the digest ``lint`` prints for the same policies; decide what ``simulate`` decides
when given the same objects (read back from the API server and written to a file); and, with
``--policies-configmap``, use the ConfigMap's policies (an extra rule) and that set's digest. An
unknown pod or ConfigMap gives a clear message and exit 2.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from policyscheduler.loader import bundled_defaults_dir
from tests.controlplane import fakes
from tests.controlplane.api import Api
from tests.controlplane.harness import ControlPlane

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
SCHEDULER = "policy-scheduler"
DRAIN = "policyscheduler.test/drain"
EXTRA_POLICY = f"""## Test rule: keep pods off nodes that are being drained.
filter no_drain
  require not ("{DRAIN}" in node.labels) else "node is being drained"
"""


def cli(*argv: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "policyscheduler", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)


def run_all(*commands: Sequence[str]) -> list[tuple[int, str, str]]:
    """Run the commands concurrently (each is an interpreter start-up); (exit, stdout, stderr) each."""
    children = [cli(*argv) for argv in commands]
    results = []
    for child in children:
        out, err = child.communicate(timeout=60)
        results.append((child.returncode, out, err))
    return results


def ok_json(result: tuple[int, str, str]) -> Any:
    code, out, err = result
    assert code == 0, f"exit {code}\nstdout:\n{out}\nstderr:\n{err}"
    assert "Traceback" not in err, err
    return json.loads(out)


def line_of(path: Path, marker: str) -> tuple[int, str]:
    """(1-based line, stripped text) of the only line of ``path`` containing ``marker``."""
    found = [(i, line.strip()) for i, line in enumerate(path.read_text().splitlines(), 1) if marker in line]
    assert len(found) == 1, (path, marker, found)
    return found[0]


def split_location(location: str) -> tuple[str, int, int]:
    file, line, col = location.rsplit(":", 2)
    return file, int(line), int(col)


def dump_cluster(api: Api, path: Path, pending: dict[str, Any]) -> Path:
    """Every node and bound pod the API server has, plus the one pending pod ``pending``, as a JSON List
    that ``simulate`` reads (the same objects ``explain`` reads live)."""
    nodes = [{"apiVersion": "v1", "kind": "Node", **n} for n in api.list_items("/api/v1/nodes")]
    bound = [{"apiVersion": "v1", "kind": "Pod", **p} for p in api.list_items("/api/v1/pods")
             if (p.get("spec") or {}).get("nodeName")]
    pod = {"apiVersion": "v1", "kind": "Pod", **pending}
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [*nodes, *bound, pod]}))
    return path


def placement(simulation: dict[str, Any], pod: str) -> dict[str, Any]:
    mine = [p for p in simulation["placements"] if p["pod"] == pod]
    assert mine, simulation
    return dict(mine[0])


def test_explain_live(control_plane: ControlPlane, namespace: str, tmp_path: Path) -> None:
    api = control_plane.api()
    ns, kubeconfig = namespace, str(control_plane.kubeconfig)
    big, small, tainted = f"{ns}-big", f"{ns}-small", f"{ns}-tainted"
    owner = {fakes.OWNER_LABEL: ns}
    cm_name = "explain-policies"
    try:
        fakes.create_all(api, [
            fakes.make_node(big, cpu="4", memory="32Gi", owner=ns, labels={DRAIN: "true"}),
            fakes.make_node(small, cpu="1", memory="4Gi", owner=ns, labels={"disktype": "ssd"}),
            fakes.make_node(tainted, cpu="4", memory="32Gi", owner=ns, labels={"disktype": "ssd"},
                            taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
        ])
        created = {p["metadata"]["name"]: p for p in fakes.create_all(api, [
            fakes.make_pod("running", ns, cpu="600m", node_name=small, scheduler_name=SCHEDULER, node_selector=owner),
            fakes.make_pod("nowhere", ns, cpu="2", scheduler_name=SCHEDULER,
                           node_selector={**owner, "disktype": "ssd"}),
            fakes.make_pod("fits", ns, cpu="500m", scheduler_name=SCHEDULER, node_selector=owner),
        ])}
        api.post(f"/api/v1/namespaces/{ns}/configmaps", {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": cm_name, "namespace": ns},
            "data": {"extra.policy": EXTRA_POLICY, "README.txt": "not a policy"}})
        configmap = api.get(f"/api/v1/namespaces/{ns}/configmaps/{cm_name}")
        cm_file = tmp_path / "configmap.yaml"
        cm_file.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                                           "metadata": {"name": cm_name, "namespace": ns},
                                           "data": configmap["data"]}))
        policy_dir = tmp_path / "extra"
        policy_dir.mkdir()
        (policy_dir / "extra.policy").write_text(EXTRA_POLICY)
        snap = {name: dump_cluster(api, tmp_path / f"{name}.json", created[name]) for name in ("nowhere", "fits")}
        live = ("--kubeconfig", kubeconfig, "--output", "json")
        with_cm = ("--policies-configmap", f"{ns}/{cm_name}")
        defaults = str(bundled_defaults_dir())

        (ex_nowhere, ex_fits, ex_fits_cm, ex_running, ex_table, lint_defaults, lint_cm, lint_dir, sim_nowhere,
         sim_fits, sim_fits_cm, unknown_pod, unknown_cm, bad_ref) = run_all(
            ["explain", f"{ns}/nowhere", *live],
            ["explain", f"{ns}/fits", *live],
            ["explain", f"{ns}/fits", *live, *with_cm],
            ["explain", f"{ns}/running", *live],
            ["explain", f"{ns}/fits", "--kubeconfig", kubeconfig, *with_cm, "--node", big],
            ["lint", defaults, "--format", "json"],
            ["lint", str(cm_file), "--format", "json"],
            ["lint", str(policy_dir), "--format", "json"],
            ["simulate", str(snap["nowhere"]), "--output", "json"],
            ["simulate", str(snap["fits"]), "--output", "json"],
            ["simulate", str(snap["fits"]), "--policies", str(policy_dir), "--output", "json"],
            ["explain", f"{ns}/nope", *live],
            ["explain", f"{ns}/fits", *live, "--policies-configmap", f"{ns}/no-such-configmap"],
            ["explain", f"{ns}/fits", *live, "--policies-configmap", "no-slash"],
        )

        # -- the digest is lint's, for the bundled defaults and for the ConfigMap's set ------------------
        default_digest = ok_json(lint_defaults)["digest"]
        cm_digest = ok_json(lint_cm)["digest"]
        assert default_digest and cm_digest and cm_digest != default_digest
        assert ok_json(lint_dir)["digest"] == cm_digest  # the ConfigMap's keys are files like any other

        # -- the pod that fits nowhere: each node names its rule, clause and line ---------------------------
        policies = bundled_defaults_dir()
        expected = {
            small: ("node_resources_fit", policies / "60-node-resources-fit.policy", "reject each [",
                    "Insufficient cpu"),
            tainted: ("taint_toleration", policies / "30-taint-toleration.policy",
                      "require all t in node.taints", "node(s) had untolerated taint(s)"),
            big: ("node_affinity", policies / "40-node-affinity.policy", "require all k, v in pod.node_selector",
                  "node(s) didn't match Pod's node affinity/selector"),
        }
        doc = ok_json(ex_nowhere)
        assert doc["pod"] == f"{ns}/nowhere"
        assert doc["policy_digest"] == default_digest
        assert doc["policy_source"] == "the bundled default set"
        assert doc["node"] is None and doc["top"] == [] and doc["message"]
        nodes = {n["name"]: n for n in doc["nodes"]}
        assert {big, small, tainted} <= set(nodes)
        assert not any(n["feasible"] for n in doc["nodes"])
        for node, (rule, file, marker, reason) in expected.items():
            got = nodes[node]
            assert got["rule"] == rule, got
            assert reason in got["reasons"], got
            rule_line, _ = line_of(file, f"filter {rule}")
            loc_file, loc_line, _ = split_location(got["location"])
            assert Path(loc_file).resolve() == file.resolve() and loc_line == rule_line, got
            clause_line, clause_text = line_of(file, marker)
            assert len(got["clauses"]) == 1, got
            clause = got["clauses"][0]
            loc_file, loc_line, _ = split_location(clause["location"])
            assert Path(loc_file).resolve() == file.resolve() and loc_line == clause_line, clause
            # the whole clause (a multi-line one in full): its first line is the marked one
            assert clause["source"].splitlines()[0] == clause_text and clause["error"] is False
            assert reason in clause["reasons"] and clause["keyword"] in clause_text
        want = placement(ok_json(sim_nowhere), f"{ns}/nowhere")
        assert want["node"] is None
        assert {k: doc[k] for k in ("node", "score", "top", "message")} == {
            k: want[k] for k in ("node", "score", "top", "message")}

        # -- the pod that fits: only the big node (the small one is full with the bound pod) -----------------
        doc = ok_json(ex_fits)
        nodes = {n["name"]: n for n in doc["nodes"]}
        assert doc["policy_digest"] == default_digest
        assert doc["node"] == big and nodes[big]["feasible"] and nodes[big]["total"] == doc["score"]
        assert nodes[big]["scores"] and nodes[big]["rule"] is None
        assert nodes[small]["rule"] == "node_resources_fit" and "Insufficient cpu" in nodes[small]["reasons"]
        assert nodes[tainted]["rule"] == "taint_toleration"
        want = placement(ok_json(sim_fits), f"{ns}/fits")
        assert want["node"] == big
        assert {k: doc[k] for k in ("node", "score", "top", "message")} == {
            k: want[k] for k in ("node", "score", "top", "message")}

        # -- the ConfigMap's policies: its extra rule rejects the big node, and its digest is printed --------
        doc = ok_json(ex_fits_cm)
        assert doc["policy_digest"] == cm_digest
        assert doc["policy_source"] == f"ConfigMap {ns}/{cm_name}"
        nodes = {n["name"]: n for n in doc["nodes"]}
        assert doc["node"] is None
        got = nodes[big]
        assert got["rule"] == "no_drain" and got["reasons"] == ["node is being drained"]
        extra_lines = EXTRA_POLICY.splitlines()
        assert got["location"] == "extra.policy:2:8"
        assert [(c["keyword"], c["location"], c["source"]) for c in got["clauses"]] == [
            ("require", "extra.policy:3:3", extra_lines[2].strip())]
        assert nodes[small]["rule"] == "node_resources_fit" and nodes[tainted]["rule"] == "taint_toleration"
        want = placement(ok_json(sim_fits_cm), f"{ns}/fits")
        assert ok_json(sim_fits_cm)["policy_digest"] == cm_digest
        assert {k: doc[k] for k in ("node", "score", "top", "message")} == {
            k: want[k] for k in ("node", "score", "top", "message")}

        # table output says where the policies came from and which digest
        code, out, err = ex_table
        assert code == 0 and "Traceback" not in err, err
        assert f"policies: ConfigMap {ns}/{cm_name} (digest {cm_digest})" in out
        assert f"{big}: rejected by filter no_drain (extra.policy:2:8)" in out
        assert small not in out  # --node narrows the table to one node

        # a bound pod is explained as if it were pending
        code, out, err = ex_running
        assert code == 0 and f"bound to {small}; explained as if it were pending" in err
        assert json.loads(out)["pod"] == f"{ns}/running"

        # -- failures: a message and exit 2, never a traceback ------------------------------------------------
        code, out, err = unknown_pod
        assert code == 2 and out == "" and "Traceback" not in err
        assert f"no pod {ns}/nope in the cluster" in err
        code, out, err = unknown_cm
        assert code == 2 and out == "" and "Traceback" not in err
        assert f"ConfigMap {ns}/no-such-configmap not found" in err
        code, out, err = bad_ref
        assert code == 2 and out == "" and "Traceback" not in err and "NAMESPACE/NAME" in err
    finally:
        fakes.delete_owned(api, ns)
        try:
            api.delete(f"/api/v1/namespaces/{ns}/configmaps/{cm_name}")
        except Exception:  # noqa: BLE001 - never created, or already gone
            pass
