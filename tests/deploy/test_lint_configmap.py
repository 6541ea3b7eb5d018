"""``policyscheduler lint`` of what is deployed: ConfigMap manifests and kustomization directories.

Diagnostics land at the line and column of the YAML file where the policy text sits (block scalars,
double-quoted JSON strings), or in the ``.policy`` file a ``configMapGenerator`` read; the digest is the
one the scheduler computes from the same ConfigMap keys.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from policyscheduler.cli import lint
from policyscheduler.inputs import configmap
from policyscheduler.loader import load_layered

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
KUBECTL = shutil.which("kubectl")
# Both ways of reading a kustomization: rendered by kubectl (when installed) and read directly.
KUBECTL_MODES = [pytest.param(None, id="no-kubectl"),
                 pytest.param("auto", id="kubectl", marks=pytest.mark.skipif(KUBECTL is None,
                                                                             reason="kubectl is not on PATH"))]

BAD_LINE = '  require node.allocatable["memory"] >= 5Xi'
BAD_RULE = f'## Planted error.\nfilter planted\n  reason "x"\n{BAD_LINE}\n'


def _errors(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, Any]]:
    assert lint.main([*argv, "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    return [d for d in doc["diagnostics"] if d["severity"] == "error"]


@pytest.fixture
def no_kubectl(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make lint read kustomizations directly, as on a machine without kubectl."""
    monkeypatch.setenv("PATH", "/nonexistent")


# --------------------------------------------------------------------------------------- deploy/ itself


@pytest.mark.parametrize("kubectl", KUBECTL_MODES)
def test_lint_deploy_is_clean(kubectl: str | None, capsys: pytest.CaptureFixture[str],
                              monkeypatch: pytest.MonkeyPatch) -> None:
    if kubectl is None:
        monkeypatch.setenv("PATH", "/nonexistent")
    assert lint.main([str(DEPLOY)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ok: ") and "21 bundled default rules" in out
    assert lint.main([str(DEPLOY), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["diagnostics"] == [] and doc["configmap"] == "policyscheduler-system/policy-scheduler-policies"
    # The digest the scheduler computes from the ConfigMap's keys (load_layered(texts=...)).
    texts = [(p.name, p.read_text()) for p in sorted((DEPLOY / "policies").glob("*.policy"))]
    expected = load_layered(texts=texts).policy_set
    assert expected is not None and doc["digest"] == expected.digest


def test_every_deploy_policy_file_is_in_the_generator() -> None:
    """Kustomize does not expand globs: a .policy file added to deploy/policies/ must be listed."""
    import yaml

    kust = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    gens = {g["name"]: g for g in kust["configMapGenerator"]}
    listed = {f.split("=")[-1] for f in gens["policy-scheduler-policies"]["files"]}
    on_disk = {f"policies/{p.name}" for p in (DEPLOY / "policies").glob("*.policy")}
    assert listed == on_disk


# ---------------------------------------------------------------------------- ConfigMap YAML manifests


MANIFEST = """\
# a comment, then two documents
apiVersion: v1
kind: Namespace
metadata:
  name: site
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: site-policies
  namespace: site
data:
  README: "not a policy"
  20-site.policy: |
    ## Planted error.
    filter planted
      reason "x"
      require node.allocatable["memory"] >= 5Xi
  10-ok.policy: |-
    ## Fine.
    filter fine
      reason "y"
      require not node.unschedulable
"""


def test_block_scalar_error_at_yaml_line_and_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "cm.yaml"
    f.write_text(MANIFEST)
    [err] = _errors(capsys, str(f))
    lines = MANIFEST.splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "5Xi" in text)
    assert (err["file"], err["line"], err["col"]) == (str(f), line, lines[line - 1].index("5Xi") + 1)
    assert err["code"] == "bad-quantity" and err["end_col"] == err["col"] + 3
    # The text report shows the YAML line itself under file:line:col, caret on 5Xi.
    assert lint.main([str(f)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"{f}:{line}:{err['col']}: error bad-quantity: ")
    shown, caret = out.splitlines()[1:3]
    assert shown.strip() == lines[line - 1].strip() and caret.strip() == "^^^"
    assert caret.index("^") == shown.index("5Xi")


def test_yaml_positions_survive_crlf_blank_lines_and_explicit_indentation(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = ("kind: ConfigMap\nmetadata: {name: c, namespace: n}\ndata:\n"
            "  a.policy: |2\n"
            "      \n"            # a blank first line (spaces only)
            "    ## Planted error.\n    filter planted\n      reason \"x\"\n"
            f"    {BAD_LINE}\n")
    f = tmp_path / "crlf.yaml"
    f.write_bytes(text.replace("\n", "\r\n").encode())
    [err] = _errors(capsys, str(f))
    lines = text.splitlines()
    line = next(i for i, t in enumerate(lines, 1) if "5Xi" in t)
    assert (err["line"], err["col"]) == (line, lines[line - 1].index("5Xi") + 1)


def test_json_configmap_maps_into_the_quoted_string(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``kubectl get configmap -o json``: one line per value, escapes; the column lands on the character."""
    doc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"},
           "data": {"x.policy": BAD_RULE}}
    f = tmp_path / "cm.json"
    f.write_text(json.dumps(doc, indent=2).replace(">", "\\u003e"))  # as kubectl writes it
    [err] = _errors(capsys, str(f))
    raw = f.read_text().splitlines()
    line = next(i for i, t in enumerate(raw, 1) if "5Xi" in t)
    assert (err["line"], err["col"]) == (line, raw[line - 1].index("5Xi") + 1)


def test_list_kind_and_several_configmaps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A ``List`` (``kubectl get cm -o yaml`` of several) and each ConfigMap linted as its own set."""
    text = ("apiVersion: v1\nkind: List\nitems:\n"
            "- kind: ConfigMap\n  metadata: {name: good, namespace: a}\n  data:\n"
            "    ok.policy: |\n      filter fine\n        reason \"y\"\n        require not node.unschedulable\n"
            "- kind: ConfigMap\n  metadata: {name: bad, namespace: b}\n  data:\n"
            "    bad.policy: |\n      filter planted\n        reason \"x\"\n      " + BAD_LINE + "\n")
    f = tmp_path / "list.yaml"
    f.write_text(text)
    assert lint.main([str(f), "--format", "json"]) == 1
    docs = json.loads(capsys.readouterr().out)
    assert [d["configmap"] for d in docs] == ["a/good", "b/bad"]
    assert docs[0]["diagnostics"] == [] and docs[0]["digest"]
    [err] = docs[1]["diagnostics"]
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "5Xi" in t)
    assert (err["line"], err["col"]) == (line, text.splitlines()[line - 1].index("5Xi") + 1)


def test_cross_references_in_messages_point_into_the_yaml(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    rule = "  filter twice\n    reason \"x\"\n    require not node.unschedulable\n"
    text = "kind: ConfigMap\nmetadata: {name: c}\ndata:\n  a.policy: |\n" + "  " + rule.replace("\n  ", "\n    ") \
        + "  b.policy: |\n" + "  " + rule.replace("\n  ", "\n    ")
    f = tmp_path / "dup.yaml"
    f.write_text(text)
    [err] = _errors(capsys, str(f))
    assert err["code"] == "duplicate-rule" and err["line"] == 9
    assert f"already defined at {f}:5:12" in str(err["message"])


def test_manifest_problems_are_located_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: ConfigMap\ndata:\n  a.policy: |\n    x\n  b: [unclosed\n")
    [err] = _errors(capsys, str(broken))
    assert err["code"] == "unreadable-file" and err["file"] == str(broken) and err["line"] == 6
    other = tmp_path / "deploy.yaml"
    other.write_text("kind: Deployment\nmetadata: {name: x}\n")
    [err] = _errors(capsys, str(other))
    assert err["code"] == "no-policy-files" and "no ConfigMap" in str(err["message"])


def test_digest_equals_the_scheduler_s_for_the_same_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = MANIFEST.replace("5Xi", "5Gi")
    f = tmp_path / "cm.yaml"
    f.write_text(good)
    assert lint.main([str(f), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    import yaml

    data = next(d for d in yaml.safe_load_all(good) if d["kind"] == "ConfigMap")["data"]
    texts = [(k, v) for k, v in sorted(data.items()) if k.endswith(".policy")]
    expected = load_layered(texts=texts).policy_set
    assert expected is not None and doc["digest"] == expected.digest


# ------------------------------------------------------------------------------ generated ConfigMaps


@pytest.fixture
def planted_deploy(tmp_path: Path) -> Path:
    """A copy of deploy/ with the planted error appended to its site policy file."""
    copy = tmp_path / "deploy"
    shutil.copytree(DEPLOY, copy)
    site = copy / "policies" / "site.policy"
    site.write_text(site.read_text() + BAD_RULE)
    return copy


@pytest.mark.parametrize("kubectl", KUBECTL_MODES)
def test_generated_configmap_maps_to_the_policy_file(planted_deploy: Path, kubectl: str | None,
                                                     capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    if kubectl is None:
        monkeypatch.setenv("PATH", "/nonexistent")
    site = planted_deploy / "policies" / "site.policy"
    [err] = _errors(capsys, str(planted_deploy))
    lines = site.read_text().splitlines()
    line = next(i for i, t in enumerate(lines, 1) if "5Xi" in t)
    assert (err["file"], err["line"], err["col"]) == (str(site), line, lines[line - 1].index("5Xi") + 1)
    assert lint.main([str(planted_deploy)]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[1].strip() == BAD_LINE.strip()  # the excerpt is the .policy file's line


def test_kustomization_resource_configmap_maps_to_its_yaml(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A hand-written ConfigMap listed under ``resources:`` (not generated): positions in that YAML file."""
    (tmp_path / "kustomization.yaml").write_text("resources:\n  - cm.yaml\nnamespace: site\n")
    (tmp_path / "cm.yaml").write_text(MANIFEST)
    for path in (None, "auto") if KUBECTL else (None,):
        if path is None:
            monkeypatch.setenv("PATH", "/nonexistent")
        else:
            monkeypatch.undo()
        [err] = _errors(capsys, str(tmp_path))
        line = next(i for i, t in enumerate(MANIFEST.splitlines(), 1) if "5Xi" in t)
        assert (err["file"], err["line"]) == (str(tmp_path / "cm.yaml"), line)


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not on PATH")
def test_kustomize_errors_are_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """kustomize's own refusal (here the load restrictor: a file outside the kustomization root) is an error
    at the kustomization, not a silent pass."""
    (tmp_path / "outside.policy").write_text(BAD_RULE)
    k = tmp_path / "k"
    k.mkdir()
    (k / "kustomization.yaml").write_text("configMapGenerator:\n- name: p\n  files:\n  - ../outside.policy\n")
    errs = _errors(capsys, str(k))
    assert errs and errs[0]["code"] == "unreadable-file" and "kustomize" in str(errs[0]["message"])
    assert errs[0]["file"] == str(k / "kustomization.yaml")


def test_plain_policy_paths_still_lint_as_before(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert not configmap.is_manifest(REPO / "policies") and configmap.is_manifest(DEPLOY)
    assert lint.main([str(REPO / "policies")]) == 0
    assert capsys.readouterr().out.startswith("ok: 21 bundled default rules in 16 files")
