"""The configuration file and the importer: located errors for bad files, never a traceback (fast)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from policyscheduler.cli import main
from policyscheduler.config import ConfigError, load_profile, parse_config
from policyscheduler.config.kubeimport import import_kube_config, render

HEAD = "apiVersion: policyscheduler.io/v1alpha1\nkind: PolicySchedulerConfiguration\n"
KUBE = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def _error(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_config("c.yaml", textwrap.dedent(text))
    return info.value


@pytest.mark.parametrize(("text", "line", "col", "words"), [
    (HEAD + "profiles:\n- schedulerName: a\n  polices: []\n", 5, 3, "unknown field 'polices'"),
    (HEAD + "verbosity: loud\n", 3, 12, "verbosity must be an integer"),
    (HEAD + "leaderElection:\n  leaseDuration: soon\n", 4, 18, "duration"),
    (HEAD + "bindAddress: nowhere\n", 3, 14, "HOST:PORT"),
    (HEAD + "profiles:\n- schedulerName: A_B\n", 4, 18, "DNS subdomain"),
    (HEAD + "profiles:\n- schedulerName: a\n- schedulerName: a\n", 5, 18, "duplicate schedulerName"),
    (HEAD + "profiles:\n- policies:\n  - {path: x, text: y}\n", 5, 5, "exactly one of"),
    (HEAD + "profiles:\n- policies:\n  - text: 'filter x'\n", 5, 5, "needs a name"),
    (HEAD + "profiles:\n- policies:\n  - {configMap: nope}\n", 5, 17, "NAMESPACE/NAME"),
    (HEAD + "profiles:\n- mode: shadow\n", 4, 9, "shadows"),
    (HEAD + "engine: fast\n", 3, 9, "vector, reference"),
    ("apiVersion: policyscheduler.io/v1alpha1\nkind: Other\n", 2, 7, "kind must be"),
    ("apiVersion: kubescheduler.config.k8s.io/v1\n", 1, 13, "config import"),
    (HEAD + "profiles: [\n", 4, 1, "invalid YAML"),
    (HEAD + "verbosity: 1\nverbosity: 2\n", 4, 1, "duplicate key"),
])
def test_bad_configuration_files_get_located_errors(text: str, line: int, col: int, words: str) -> None:
    err = _error(text)
    assert (err.line, err.col) == (line, col), str(err)
    assert words in err.message
    assert str(err).startswith(f"c.yaml:{line}:{col}: error: ")


def test_a_good_file_reads_and_its_profile_loads(tmp_path: Path) -> None:
    (tmp_path / "pol").mkdir()
    (tmp_path / "pol" / "extra.policy").write_text("override score taint_toleration weight 1\n")
    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text(HEAD + textwrap.dedent("""\
        clientConnection: {qps: 50, burst: 100}
        leaderElection: {leaderElect: true, leaseNamespace: sched, leaseDuration: 1m, renewDeadline: 30s, retryPeriod: 500ms}
        bindAddress: 0.0.0.0:10259
        verbosity: 3
        profiles:
        - schedulerName: tight
          policies:
          - path: pol
          - name: more.policy
            text: |
              disable score image_locality
          statements:
          - override score node_affinity weight 5
        - schedulerName: bare
          defaults: false
          policies:
          - name: only.policy
            text: |
              filter cordon
                reason "cordoned"
                require not node.unschedulable
        """))
    from policyscheduler.config import load_config

    cfg = load_config(cfg_file)
    assert (cfg.qps, cfg.burst, cfg.lease_duration, cfg.retry_period, cfg.verbosity) == (50, 100, 60, 0.5, 3)
    tight = cfg.profile("tight")
    assert tight.paths == [str(tmp_path / "pol")]
    loaded = load_profile(tight)
    assert loaded.policy_set is not None, loaded.diagnostics
    assert "image_locality" not in {s.name for s in loaded.policy_set.scores}
    bare = load_profile(cfg.profile("bare"))
    assert bare.policy_set is not None, bare.diagnostics
    assert [f.name for f in bare.policy_set.filters] == ["cordon"] and not bare.policy_set.scores
    with pytest.raises(ConfigError, match="several profiles"):
        cfg.profile(None)


@pytest.mark.parametrize(("text", "line", "words"), [
    (KUBE + "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy: {type: Most}\n",
     7, "must be one of LeastAllocated"),
    (KUBE + "profiles:\n- plugins:\n    scroe: {}\n", 5, "did you mean 'score'"),
    (KUBE + "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n"
     "        type: RequestedToCapacityRatio\n        requestedToCapacityRatio:\n          shape:\n"
     "          - {utilization: 50, score: 5}\n          - {utilization: 40, score: 11}\n", 12, "score must be in 0..10"),
    (KUBE + "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n    args:\n      addedAffinity:\n"
     "        requiredDuringSchedulingIgnoredDuringExecution:\n          nodeSelectorTerms:\n"
     "          - matchExpressions: [{key: a, operator: Gt, values: [x]}]\n", 10, "one integer value"),
    ("apiVersion: v1\nkind: KubeSchedulerConfiguration\n", 1, "apiVersion must be"),
])
def test_bad_kube_scheduler_files_get_located_errors(text: str, line: int, words: str) -> None:
    with pytest.raises(ConfigError) as info:
        import_kube_config("k.yaml", text)
    assert info.value.line == line, str(info.value)
    assert words in info.value.message


def test_untranslatable_parts_are_listed() -> None:
    text = KUBE + textwrap.dedent("""\
        extenders:
        - urlPrefix: http://extender
        profiles:
        - schedulerName: s
          plugins:
            multiPoint:
              enabled:
              - name: MyOutOfTree
            score:
              disabled:
              - name: ImageLocality
          pluginConfig:
          - name: PodTopologySpread
            args:
              defaultingType: List
              defaultConstraints:
              - {maxSkew: 1, topologyKey: rack, whenUnsatisfiable: DoNotSchedule}
        """)
    result = import_kube_config("k.yaml", text)
    joined = "\n".join(result.notes)
    assert "extenders" in joined and "MyOutOfTree" in joined and "DoNotSchedule" in joined
    assert all(n.startswith("k.yaml:") for n in result.notes)
    cfg = parse_config("out.yaml", render(result.config, "k.yaml"))
    loaded = load_profile(cfg.profile("s"))
    assert loaded.policy_set is not None, loaded.diagnostics
    assert "image_locality" not in {s.name for s in loaded.policy_set.scores}


def test_every_translation_loads_without_diagnostics() -> None:
    kube = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "profiles": [
        {"schedulerName": "a", "pluginConfig": [
            {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated", "resources": [
                {"name": "cpu", "weight": 1}, {"name": "nvidia.com/gpu", "weight": 5}]}}},
            {"name": "NodeResourcesBalancedAllocation", "args": {"resources": [
                {"name": "cpu"}, {"name": "memory"}, {"name": "nvidia.com/gpu"}]}},
            {"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 7}},
            {"name": "PodTopologySpread", "args": {"defaultingType": "List", "defaultConstraints": []}}]},
        {"schedulerName": "b", "plugins": {"multiPoint": {"disabled": [{"name": "*"}], "enabled": [
            {"name": "NodeResourcesFit"}, {"name": "TaintToleration", "weight": 9}]}}},
    ]}
    result = import_kube_config("k.yaml", yaml.safe_dump(kube))
    assert result.notes == []
    cfg = parse_config("out.yaml", render(result.config, "k.yaml"))
    for name in ("a", "b"):
        loaded = load_profile(cfg.profile(name))
        assert loaded.policy_set is not None and not loaded.diagnostics, (name, loaded.diagnostics)
    b = load_profile(cfg.profile("b")).policy_set
    assert {s.name: s.weight for s in b.scores} == {"node_resources_fit": 1, "taint_toleration": 9}
    assert [f.name for f in b.filters] == ["taint_toleration", "node_resources_fit"]


def test_cli_import_check_lint_and_simulate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kube = tmp_path / "kube.yaml"
    kube.write_text(KUBE + "profiles:\n- schedulerName: policy-scheduler\n  plugins:\n    score:\n"
                    "      disabled: [{name: ImageLocality}]\n")
    out = tmp_path / "ours.yaml"
    assert main(["config", "import", str(kube), "-o", str(out)]) == 0
    assert main(["config", "check", str(out)]) == 0
    assert main(["lint", "--config", str(out)]) == 0
    assert "profile policy-scheduler:" in capsys.readouterr().out
    assert main(["simulate", "--config", str(out), "-o", "json"]) == 0
    assert '"placements"' in capsys.readouterr().out
    bad = tmp_path / "bad.yaml"
    bad.write_text(HEAD + "profiles:\n- schedulerName: x\n  weight: 3\n")
    for argv in (["config", "check", str(bad)], ["simulate", "--config", str(bad)], ["run", "--config", str(bad)]):
        assert main(argv) == 2
        assert f"{bad}:5:3: error: unknown field 'weight'" in capsys.readouterr().err
    assert main(["lint", "--config", str(bad)]) == 1
    assert main(["config", "import", str(bad)]) == 2
    assert "apiVersion must be" in capsys.readouterr().err
