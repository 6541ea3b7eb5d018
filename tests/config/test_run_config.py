"""``run --config``: the file -> the profiles ``run`` starts and its options (flags override the file)."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import pytest

from policyscheduler.cli.config import RunProfilePlan, apply_run_config, run_profiles
from policyscheduler.cli.run import add_arguments

HEAD = "apiVersion: policyscheduler.io/v1alpha1\nkind: PolicySchedulerConfiguration\n"

FULL = HEAD + """\
clientConnection: {qps: 40, burst: 80}
leaderElection: {leaderElect: true, leaseName: my-lease, leaseNamespace: sched}
profiles:
- schedulerName: fast
  policies:
  - path: extra/
- schedulerName: tidy
  defaults: false
  policies:
  - name: only.policy
    text: |
      filter f
        reason "x"
        require true
- schedulerName: judge
  mode: shadow
  shadows: default-scheduler
  policies:
  - configMap: kube-system/judge-policies
"""


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


def write(tmp_path: Path, text: str) -> str:
    (tmp_path / "extra").mkdir(exist_ok=True)
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return str(path)


def test_every_profile_runs_and_the_file_sets_qps_burst_and_the_lease(tmp_path: Path) -> None:
    args = parse("--config", write(tmp_path, FULL))
    assert apply_run_config(args, io.StringIO())
    plans = run_profiles(args)
    assert [(p.name, p.shadows, p.configmap) for p in plans] == [
        ("fast", None, None), ("tidy", None, None), ("judge", "default-scheduler", "kube-system/judge-policies")]
    assert plans[0].paths == (str(tmp_path / "extra"),)
    inline = Path(plans[1].paths[0])
    assert sorted(p.name for p in inline.iterdir()) == ["00-use-defaults-none.policy", "only.policy"]
    assert "require true" in (inline / "only.policy").read_text()
    assert (args.kube_api_qps, args.kube_api_burst) == (40, 80)
    assert (args.leader_elect, args.leader_elect_resource_name, args.leader_elect_lease_namespace) == (
        True, "my-lease", "sched")
    assert args.scheduler_name == "fast"


def test_flags_override_the_file_and_scheduler_name_picks_one_profile(tmp_path: Path) -> None:
    args = parse("--config", write(tmp_path, FULL), "--scheduler-name", "judge", "--kube-api-qps", "7",
                 "--leader-elect-resource-name", "other", "--policies", str(tmp_path / "extra"))
    assert apply_run_config(args, io.StringIO())
    assert run_profiles(args) == [RunProfilePlan("judge", (str(tmp_path / "extra"),), None, "default-scheduler")]
    assert (args.kube_api_qps, args.kube_api_burst, args.leader_elect_resource_name) == (7, 80, "other")


def test_policies_flag_with_several_profiles_and_unknown_names_are_refused(tmp_path: Path) -> None:
    file = write(tmp_path, FULL)
    err = io.StringIO()
    assert not apply_run_config(parse("--config", file, "--policies", str(tmp_path)), err)
    assert "choose one with --scheduler-name" in err.getvalue()
    err = io.StringIO()
    assert not apply_run_config(parse("--config", file, "--scheduler-name", "nobody"), err)
    assert "no profile has schedulerName 'nobody'" in err.getvalue()


def test_without_config_one_profile_comes_from_the_flags() -> None:
    args = parse("--scheduler-name", "solo", "--policies", "a", "--policies-configmap", "ns/cm")
    assert run_profiles(args) == [RunProfilePlan("solo", ("a",), "ns/cm", None)]


@pytest.mark.parametrize(("argv", "words"), [
    (["--kube-api-qps", "0"], "--kube-api-qps must be positive"),
    (["--kube-api-burst", "5"], "--kube-api-burst needs --kube-api-qps"),
    (["--kube-api-qps", "5", "--kube-api-burst", "0"], "--kube-api-burst must be at least 1"),
])
def test_bad_rate_limits_are_usage_errors(argv: list[str], words: str) -> None:
    from policyscheduler.cli.run import run

    err = io.StringIO()
    assert run(parse("--kubeconfig", "/nonexistent", *argv), stderr=err) == 2
    assert words in err.getvalue()
