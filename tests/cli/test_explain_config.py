"""``policyscheduler explain POD --config FILE``: the profile's policies, loaded as ``run --config`` loads them.

The digest ``explain`` prints for a configuration file is the one ``simulate --config``, ``lint --config``
and ``run --config`` (its own loading code, :class:`policyscheduler.app.sources.PolicySources`) get
for the same file; the profile's rules decide (a filter of the file rejects nodes); the file's engine is
used; flags override the file; bad files, unknown profiles and unreachable ConfigMaps are messages with
exit 2. The cluster is a snapshot (the bundled demo): no API server is needed.
"""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from policyscheduler.cli import main
from policyscheduler.simulate.defaults import demo_cluster_dir

NO_SPOT = """## Keep pods off spot nodes.
filter no_spot
  require not ("lifecycle" in node.labels) else "node(s) are spot instances"
"""
POD = "batch/job-flfc9"  # a pending demo pod the defaults would put on a spot node


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "internal error" not in captured.err, captured.err
    return code, captured.out, captured.err


def _config(path: Path, profiles: list[dict[str, Any]], **top: Any) -> Path:
    path.write_text(yaml.safe_dump({"apiVersion": "policyscheduler.io/v1alpha1",
                                    "kind": "PolicySchedulerConfiguration", **top, "profiles": profiles}))
    return path


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """A profile with every kind of file source: a path, inline text and statements; engine reference."""
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "no-spot.policy").write_text(NO_SPOT)
    profile = {"schedulerName": "policy-scheduler",
               "policies": [{"path": "policies"},
                            {"name": "tuning.policy", "text": "override score taint_toleration weight 1\n"}],
               "statements": ["disable score image_locality"]}
    return _config(tmp_path / "scheduler.yaml", [profile], engine="reference")


def _explain(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code, out, err = _cli(capsys, "explain", POD, "--cluster", str(demo_cluster_dir()), "-o", "json", *argv)
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    return doc


def _run_digest(config: Path, *argv: str) -> str:
    """The digest ``run --config`` starts with, from its own argument handling and policy loading."""
    from policyscheduler.app.sources import PolicySources
    from policyscheduler.cli import run as run_cli
    from policyscheduler.cli.config import apply_run_config, run_profiles

    parser = argparse.ArgumentParser()
    run_cli.add_arguments(parser)
    args = parser.parse_args(["--config", str(config), *argv])
    assert apply_run_config(args, io.StringIO())
    plan = next(p for p in run_profiles(args) if p.name == args.scheduler_name)
    assert plan.configmap is None
    loaded = PolicySources(list(plan.paths), None).load_initial(None)
    assert loaded.policy_set is not None, loaded.diagnostics
    return loaded.policy_set.digest


def test_the_digest_is_the_one_run_simulate_and_lint_get_for_the_file(capsys: pytest.CaptureFixture[str],
                                                                     config: Path) -> None:
    doc = _explain(capsys, "--config", str(config))
    digest = doc["policy_digest"]
    assert digest == _run_digest(config)
    code, out, err = _cli(capsys, "simulate", "--config", str(config), "-o", "json")
    assert code == 0, err
    assert json.loads(out)["policy_digest"] == digest
    code, out, err = _cli(capsys, "lint", "--config", str(config), "--format", "json")
    assert code == 0, err
    assert json.loads(out)[0]["digest"] == digest
    # ... and not the bundled defaults': the profile's sources are in force
    plain = _explain(capsys)
    assert plain["policy_digest"] != digest


def test_the_profile_rules_decide_and_the_file_engine_is_used(capsys: pytest.CaptureFixture[str], config: Path) -> None:
    doc = _explain(capsys, "--config", str(config))
    assert doc["engine"] == "reference"  # engine: reference in the file
    nodes = {n["name"]: n for n in doc["nodes"]}
    for name in ("spot-a-1", "spot-b-1", "spot-c-1"):
        assert nodes[name]["rule"] == "no_spot" and nodes[name]["reasons"] == ["node(s) are spot instances"]
        assert nodes[name]["location"].startswith(str(config.parent / "policies" / "no-spot.policy"))
    assert doc["node"] is not None and not doc["node"].startswith("spot-")
    feasible = next(n for n in doc["nodes"] if n["feasible"])
    assert "image_locality" not in feasible["scores"]  # the statement disabled it
    assert feasible["scores"]["taint_toleration"]["weight"] == 1  # the inline override
    assert doc["policy_source"].startswith(f"{config} profile policy-scheduler: ")
    assert "inline tuning.policy" in doc["policy_source"]
    # flags override the file
    assert _explain(capsys, "--config", str(config), "--engine", "vector")["engine"] == "vector"
    code, out, _ = _cli(capsys, "explain", POD, "--cluster", str(demo_cluster_dir()), "--config", str(config))
    assert code == 0 and f"digest {doc['policy_digest'][:12]}" in out and "rejected by filter no_spot" in out


def test_policies_flag_replaces_the_profile_sources(capsys: pytest.CaptureFixture[str], config: Path,
                                                   tmp_path: Path) -> None:
    extra = tmp_path / "only.policy"
    extra.write_text("override score taint_toleration weight 2\n")
    with_flag = _explain(capsys, "--config", str(config), "--policies", str(extra))
    plain = _explain(capsys, "--policies", str(extra))
    assert with_flag["policy_digest"] == plain["policy_digest"]
    assert with_flag["engine"] == "reference"  # the rest of the file still applies
    assert f"the flags replace the policies of {config} profile policy-scheduler" in with_flag["policy_source"]


def test_several_profiles_need_a_scheduler_name(capsys: pytest.CaptureFixture[str], config: Path, tmp_path: Path) -> None:
    profiles = yaml.safe_load(config.read_text())["profiles"]
    two = _config(tmp_path / "two.yaml", [*profiles, {"schedulerName": "plain"}])
    code, out, err = _cli(capsys, "explain", POD, "--cluster", str(demo_cluster_dir()), "--config", str(two))
    assert code == 2 and out == "" and "several profiles" in err and "--scheduler-name" in err
    first = _explain(capsys, "--config", str(two), "--scheduler-name", "policy-scheduler")
    plain = _explain(capsys, "--config", str(two), "--scheduler-name", "plain")
    assert first["policy_digest"] == _run_digest(two, "--scheduler-name", "policy-scheduler")
    assert plain["policy_digest"] == _run_digest(two, "--scheduler-name", "plain") == _explain(capsys)["policy_digest"]
    code, _, err = _cli(capsys, "explain", POD, "--config", str(two), "--scheduler-name", "nope")
    assert code == 2 and "no profile has schedulerName 'nope'" in err
    code, _, err = _cli(capsys, "explain", POD, "--scheduler-name", "plain")
    assert code == 2 and "--scheduler-name chooses a profile of --config" in err


def test_bad_files_are_located_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: policyscheduler.io/v1alpha1\nkind: PolicySchedulerConfiguration\n"
                   "profiles:\n- schedulerName: policy-scheduler\n  polices: []\n")
    code, out, err = _cli(capsys, "explain", POD, "--config", str(bad))
    assert code == 2 and out == "" and f"{bad}:5:3" in err and "polices" in err
    code, _, err = _cli(capsys, "explain", POD, "--config", str(tmp_path / "missing.yaml"))
    assert code == 2 and "cannot read the configuration file" in err
    broken = _config(tmp_path / "broken.yaml", [{"policies": [{"name": "x.policy", "text": "score oops weight\n"}]}])
    code, _, err = _cli(capsys, "explain", POD, "--config", str(broken))
    assert code == 2 and "x.policy:1:" in err and "the policies have errors" in err


def test_a_configmap_source_is_read_through_the_file_kubeconfig(capsys: pytest.CaptureFixture[str],
                                                                tmp_path: Path) -> None:
    """Snapshot mode still reads the profile's ConfigMap (as run would), through clientConnection.kubeconfig:
    an unusable one is a message, not a traceback."""
    cfg = _config(tmp_path / "cm.yaml", [{"policies": [{"configMap": "kube-system/policies"}]}],
                  clientConnection={"kubeconfig": "no-such-kubeconfig"})
    code, out, err = _cli(capsys, "explain", POD, "--cluster", str(demo_cluster_dir()), "--config", str(cfg))
    assert code == 2 and out == ""
    assert "cannot read the policies" in err and "no-such-kubeconfig" in err


def test_inline_files_come_before_the_configmap_keys_as_in_run(tmp_path: Path) -> None:
    """run puts a profile's inline files in a folder layered before the ConfigMap's keys; explain keeps that
    order even where sorting all texts by name would interleave them (the digest depends on the order)."""
    from policyscheduler.app.sources import PolicySources
    from policyscheduler.cli.explain import _load_profile, _Profile
    from policyscheduler.loader import load_layered

    inline = [("zz-statements.policy", "disable score image_locality\n")]
    keys = [("custom.policy", NO_SPOT)]
    profile = _Profile([], inline, ("kube-system", "policies"), None, "test")
    loaded, folder = _load_profile(profile, keys, allow_empty=False)
    assert loaded.policy_set is not None and folder is not None and not Path(folder).exists()
    run_like = tmp_path / "inline"
    run_like.mkdir()
    (run_like / "zz-statements.policy").write_text(inline[0][1])
    expected = PolicySources._load([str(run_like)], keys)  # run: the inline folder, then the ConfigMap's keys
    assert expected.policy_set is not None
    assert loaded.policy_set.digest == expected.policy_set.digest
    sorted_together = load_layered([], texts=[*inline, *keys])
    assert sorted_together.policy_set is not None and sorted_together.policy_set.digest != expected.policy_set.digest
    # without interleaving the texts are loaded as they are (locations keep the inline names)
    loaded, folder = _load_profile(_Profile([], [("a.policy", NO_SPOT)], None, None, "test"), [], allow_empty=False)
    assert folder is None and loaded.policy_set is not None and "a.policy" in loaded.sources


@pytest.mark.e2e
def test_on_the_control_plane_the_digest_is_the_running_schedulers(control_plane: Any, namespace: str, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A profile taking a ConfigMap (read through the file's kubeconfig), inline text and statements, whose
    inline files sort after the ConfigMap's keys: ``explain --config`` (live: the file names the cluster)
    prints the digest ``run --config`` starts with, and the ConfigMap's filter decides."""
    from tests.controlplane import fakes
    from tests.kube.live import RunProcess

    api = control_plane.api()
    ns = namespace
    api.post(f"/api/v1/namespaces/{ns}/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "policies", "namespace": ns},
        "data": {"custom.policy": NO_SPOT}})
    name = f"cfg-{ns}"[:63]
    config = _config(tmp_path / "scheduler.yaml", [{
        "schedulerName": name,
        "policies": [{"configMap": f"{ns}/policies"},
                     {"name": "tuning.policy", "text": "override score taint_toleration weight 1\n"}],
        "statements": ["disable score image_locality"]}], clientConnection={"kubeconfig": str(control_plane.kubeconfig)})
    spot = fakes.make_node(f"{ns}-spot", cpu="8", memory="16Gi", labels={"lifecycle": "spot"}, owner=ns)
    regular = fakes.make_node(f"{ns}-regular", cpu="2", memory="8Gi", owner=ns)
    fakes.create_all(api, [spot, regular, fakes.make_pod("web", ns, scheduler_name=name, cpu="500m", memory="256Mi")])
    try:  # the nodes live in the session control plane: later tests count every node
        code, out, err = _cli(capsys, "explain", f"{ns}/web", "--config", str(config), "-o", "json", "--node", f"{ns}-spot")
        assert code == 0, err
        doc = json.loads(out)
        assert doc["nodes"][0]["rule"] == "no_spot"  # the ConfigMap's filter
        assert f"ConfigMap {ns}/policies" in doc["policy_source"]
        run = RunProcess(control_plane, tmp_path / "run.log", "--config", str(config), name=name)
        try:
            started = run.wait_log("started", timeout=60)
        finally:
            run.terminate()
    finally:
        fakes.delete_owned(api, ns)
    assert started["policy_digest"] == doc["policy_digest"][:12]
