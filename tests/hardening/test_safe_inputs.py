"""Issue 24, the input side: every YAML/JSON file goes through one bounded reader, objects are validated as the
API server validates them, output failures never exit 70, and CRLF/BOM policy files mean what LF ones mean.

One test per probe of the issue. Most run the real command line in this process (``cli.main``, as the
console script does); the ones about closed descriptors run it in a child process, since that is the only
way to start with a descriptor closed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from policyscheduler.cli import main

ROOT = Path(__file__).resolve().parents[2]

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1", "namespace": "default"},
       "spec": {"schedulerName": "policy-scheduler", "containers": [{"name": "c", "image": "nginx"}]}}
CONFIG = "apiVersion: policyscheduler.io/v1alpha1\nkind: PolicySchedulerConfiguration\n"
KUBE_CONFIG = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
POLICY = 'filter mine\n  reason "r"\n  require node.name != "x"\n'


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    assert status != 70 and "internal error" not in err and "Traceback" not in err, err
    return status, out, err


def child(shell: str, timeout: float = 60) -> tuple[int, str, str]:
    """The command line in a child process with a shell redirection (``>&-``); ``PS`` is the command."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PS": f"{sys.executable} -m policyscheduler"}
    done = subprocess.run(["bash", "-c", shell], capture_output=True, env=env, timeout=timeout, cwd=ROOT)
    out, err = done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")
    assert done.returncode != 70 and "internal error" not in err and "Traceback" not in err, err
    return done.returncode, out, err


def configmap(data: str, extra: str = "") -> str:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: pol, namespace: ns}}\n{extra}data:\n{data}"


def bomb(levels: int = 7) -> str:
    """Each anchor nine aliases of the previous one: 9**levels nodes once expanded, a few hundred bytes."""
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


# -- recursive anchors: exit 70 before ------------------------------------------------------------------

RECURSIVE = "a: &a [1, *a]\n"


def test_recursive_anchor_in_a_configmap_manifest_is_a_located_lint_error(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "cm.yaml"
    f.write_text(configmap('  a.policy: "x"\n', "extra: &m {name: x, self: *m}\n"))
    status, out, _ = run(capsys, "lint", str(f))
    assert status == 1
    assert f"{f}:4:27: error unreadable-file: recursive YAML anchor: alias *m refers to the collection it is in" in out


@pytest.mark.parametrize("command", [["config", "check"], ["config", "import"], ["lint", "--config"]])
def test_recursive_anchor_in_a_configuration_file_is_a_located_error(
        command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "c.yaml"
    f.write_text((KUBE_CONFIG if command[1] == "import" else CONFIG) + RECURSIVE)
    status, _, err = run(capsys, *command, str(f))
    assert status == (1 if command[0] == "lint" else 2)
    assert f"{f}:3:11: error: recursive YAML anchor: alias *a refers to the collection it is in" in err


# -- alias bombs: exit 70, minutes and gigabytes before --------------------------------------------------

def test_alias_bomb_snapshot_is_refused_early(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "bomb.yaml"
    f.write_text(bomb() + "kind: Pod\n")
    assert len(f.read_bytes()) < 4096
    status, _, err = run(capsys, "simulate", str(f))
    assert status == 2
    assert f"error: {f}:6:10: YAML aliases expand to more than 100,000 nodes (an alias bomb?)" in err


def test_configmap_list_alias_bomb_is_refused_by_lint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "cms.yaml"
    items = "\n".join(f"- *c{i}" for i in range(3))
    f.write_text("x: &c0 " + json.dumps({"kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"a.policy": POLICY}})
                 + "\n" + bomb(7).replace("a0: &a0", "y: &a0") + "apiVersion: v1\nkind: List\nitems: [*a6]\n" + items)
    status, out, _ = run(capsys, "lint", str(f))
    assert status == 1 and "YAML aliases expand to more than 100,000 nodes" in out


def test_alias_limit_is_a_parameter_and_counts_expanded_nodes() -> None:
    from policyscheduler.inputs import safeload

    text = "a: &a [1, 2, 3]\nb: [*a, *a]\n"  # the two aliases add 4 nodes each
    assert safeload.load_yaml("t.yaml", text, safeload.Limits(max_alias_nodes=8)) == [{"a": [1, 2, 3],
                                                                                        "b": [[1, 2, 3], [1, 2, 3]]}]
    with pytest.raises(safeload.InputError, match=r"t.yaml:2:9: YAML aliases expand to more than 7 nodes"):
        safeload.load_yaml("t.yaml", text, safeload.Limits(max_alias_nodes=7))


def test_depth_counts_what_aliases_add() -> None:
    from policyscheduler.inputs import safeload

    text = "x: &x " + "[" * 6 + "]" * 6 + "\ny: [[*x]]\n"
    assert safeload.load_yaml("t.yaml", text, safeload.Limits(max_depth=9))
    with pytest.raises(safeload.InputError, match=r"t.yaml:2:6: nesting deeper than 8 levels once alias \*x"):
        safeload.load_yaml("t.yaml", text, safeload.Limits(max_depth=8))


# -- files that are not regular, or too large -----------------------------------------------------------

# In a child process with a memory and time limit: before the fix these read forever (or until the memory ran out).

def test_config_check_of_dev_zero_is_refused_by_type() -> None:
    status, _, err = child("ulimit -v 3000000; $PS config check /dev/zero", timeout=30)
    assert status == 2 and err == "/dev/zero: error: cannot read the configuration file: a device, not a regular file\n"


def test_config_import_of_a_fifo_is_refused_not_waited_for(tmp_path: Path) -> None:
    fifo = tmp_path / "kube.yaml"
    os.mkfifo(fifo)
    status, _, err = child(f"$PS config import {fifo}", timeout=30)
    assert status == 2 and err == f"{fifo}: error: cannot read the configuration file: a FIFO, not a regular file\n"


def test_manifest_over_16_mib_is_refused_before_reading(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from policyscheduler.inputs import safeload

    f = tmp_path / "big.yaml"
    with f.open("wb") as fh:
        fh.truncate(safeload.MAX_FILE_BYTES + 1)  # sparse: costs nothing, refused by its size
    status, out, _ = run(capsys, "lint", str(f))
    assert status == 1 and "cannot read: 16,777,217 bytes, over the limit of 16 MiB" in out
    status, _, err = run(capsys, "config", "check", str(f))
    assert status == 2 and "cannot read the configuration file: 16,777,217 bytes, over the limit of 16 MiB" in err


# -- invalid objects that were accepted silently ---------------------------------------------------------

def snapshot(tmp_path: Path, text: str, name: str = "c.json") -> Path:
    f = tmp_path / name
    f.write_text(text)
    return f


def with_labels(labels: dict[str, str], annotations: dict[str, str] | None = None) -> str:
    node = json.loads(json.dumps(NODE))
    node["metadata"]["labels"] = labels
    if annotations is not None:
        node["metadata"]["annotations"] = annotations
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": [node, POD]})


@pytest.mark.parametrize("labels, annotations, message", [
    ({"a": "v" * 1_000_000}, None, "metadata.labels: value of 1,000,000 characters (at most 63)"),
    ({"a": "bad value!"}, None, "metadata.labels: value 'bad value!' must be empty or alphanumerics"),
    ({"k" * 100_000: "v"}, None, "metadata.labels: key 'kkkkk"),
    ({"Example.com/a": "v"}, None, "metadata.labels: key 'Example.com/a': the prefix must be a DNS-1123 subdomain"),
    ({}, {"a": "x" * (256 * 1024)}, "metadata.annotations: 262,145 bytes in all (at most 262,144)"),
])
def test_snapshot_labels_and_annotations_are_validated(labels: dict[str, str], annotations: dict[str, str] | None,
                                                       message: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    f = snapshot(tmp_path, with_labels(labels, annotations))
    status, _, err = run(capsys, "simulate", str(f))
    assert status == 2 and f"error: {f}: document 1: Node n1: {message}" in err


def test_valid_labels_still_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = snapshot(tmp_path, with_labels({"kubernetes.io/hostname": "n1", "a": "", "x_y.z-1": "A.b_c-9"}))
    status, _, _ = run(capsys, "simulate", str(f))
    assert status == 0


def test_duplicate_json_key_in_a_snapshot_is_located(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = snapshot(tmp_path, '{"kind": "List", "items": [\n  {"kind": "Node", "metadata": {"name": "n1", "name": "n2"}}]}')
    status, _, err = run(capsys, "simulate", str(f))
    assert status == 2 and f"error: {f}:2:32: duplicate key 'name' in an object" in err


@pytest.mark.parametrize("name, text, where", [
    ("big.json", '{"kind": "Node", "metadata": {"name": "n1"},\n "x": ' + "9" * 5000 + "}", ":2:7:"),
    ("big.yaml", "kind: Node\nmetadata: {name: n1}\nx: " + "9" * 5000 + "\n", ":3:4:"),
])
def test_5000_digit_integer_in_a_snapshot_names_the_file(name: str, text: str, where: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    f = snapshot(tmp_path, text, name)
    status, _, err = run(capsys, "simulate", str(f))
    assert status == 2 and f"error: {f}{where} an integer of 5,000 digits is too long to read" in err


@pytest.mark.parametrize("manifest, message", [
    (configmap('  a.policy: "x"\n') + 'binaryData:\n  a.policy: eA==\n',
     "ConfigMap pol: key 'a.policy' is in both data and binaryData"),
    (configmap('  a.policy: [x]\n'), "ConfigMap pol: data['a.policy'] must be a string, not a list"),
    (configmap('  b.policy: "x"\n  n: 5\n'), "ConfigMap pol: data['n'] must be a string, not a int (5)"),
    (configmap('  a.policy: "x"\n  a.policy: "y"\n'), "duplicate key 'a.policy' in a mapping"),
    (configmap('  a.policy: "x"\n  bad/key: "y"\n'), "ConfigMap pol: data: key 'bad/key' must be alphanumerics"),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pol\n  labels: {a: 'no spaces'}\ndata:\n  a.policy: x\n",
     "ConfigMap pol: metadata.labels: value 'no spaces'"),
])
def test_configmap_manifest_is_validated_like_the_api_server(manifest: str, message: str, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "cm.yaml"
    f.write_text(manifest)
    status, out, _ = run(capsys, "lint", str(f))
    assert status == 1 and message in out, out


def test_configmap_over_1_mib_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "cm.yaml"
    f.write_text(json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pol"},
                             "data": {"a.policy": POLICY, "pad": "#" * 1_048_576}}))
    status, out, _ = run(capsys, "lint", str(f))
    assert status == 1 and "ConfigMap pol: data and binaryData hold 1,048,6" in out
    assert "(the API server stores at most 1,048,576 in a ConfigMap)" in out


def test_negative_percentage_of_nodes_to_score_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "kube.yaml"
    f.write_text(KUBE_CONFIG + "percentageOfNodesToScore: -5\n")
    status, _, err = run(capsys, "config", "import", str(f))
    assert status == 2 and f"{f}:3:27: error: percentageOfNodesToScore must be in 0..100, not -5" in err


@pytest.mark.parametrize("value", [".inf", "9" * 400 + "h"])
def test_infinite_duration_is_refused(value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(CONFIG + f"leaderElection:\n  leaseDuration: {value}\nprofiles:\n- schedulerName: a\n")
    status, _, err = run(capsys, "config", "check", str(f))
    assert status == 2 and f"{f}:4:18: error: leaseDuration must be a finite duration" in err


# -- output failures: exit 70 before ------------------------------------------------------------------

@pytest.fixture()
def tiny(tmp_path: Path) -> Path:
    f = tmp_path / "c.json"
    f.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [NODE, POD]}))
    return f


def test_lint_with_stdout_closed_reports_once_and_exits_2(tmp_path: Path) -> None:
    f = tmp_path / "mine.policy"
    f.write_text(POLICY)
    status, out, err = child(f"$PS lint {f} >&-")
    assert status == 2 and out == "" and err == "policyscheduler: cannot write output: standard output is closed\n"


def test_simulate_with_stdout_closed_reports_once_and_exits_2(tiny: Path) -> None:
    status, out, err = child(f"$PS simulate {tiny} >&-")
    assert status == 2 and out == "" and err == "policyscheduler: cannot write output: standard output is closed\n"


def test_simulate_with_stderr_closed_still_prints_its_result(tiny: Path) -> None:
    status, out, _ = child(f"$PS simulate -o json {tiny} 2>&-")
    assert status == 0 and json.loads(out)["placements"][0]["node"] == "n1"


def test_simulate_with_stderr_full_still_prints_its_result(tiny: Path) -> None:
    status, out, _ = child(f"$PS simulate {tiny} 2>/dev/full")
    assert status == 0 and "placed 1/1 pods" in out


def test_docs_output_into_a_missing_directory_is_refused_first(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "docs", "--output", "/nonexistent/x.md")
    assert status == 2 and err == "policyscheduler docs: cannot write /nonexistent/x.md: no directory /nonexistent\n"


def test_fmt_of_a_read_only_file_is_refused_first(tmp_path: Path) -> None:
    f = tmp_path / "ro.policy"
    f.write_text("filter   mine\n" + POLICY.split("\n", 1)[1])
    f.chmod(0o444)
    prefix = ""
    if os.geteuid() == 0:  # root writes read-only files: run without the capability that allows it
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: a read-only file cannot be made")
        prefix = "setpriv --bounding-set=-dac_override "
    status, _, err = child(f"{prefix}$PS fmt {f}")
    assert status == 2 and err == f"error: cannot write {f}: Permission denied\n"
    assert f.read_text().startswith("filter   mine")


def test_fmt_diff_escapes_control_characters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "esc.policy"
    f.write_text('# \x1b[31mred\x1b[0m\nfilter   mine\n  reason "r"\n  require node.name != "x"\n')
    status, out, _ = run(capsys, "fmt", "--diff", str(f))
    assert status == 1 and "\x1b" not in out and " # \\x1b[31mred\\x1b[0m\n" in out and "+filter mine\n" in out


def test_compare_reads_a_configmap_manifest_as_a_configmap(tmp_path: Path, tiny: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "cm.yaml"
    f.write_text(configmap("  no-spot.policy: |\n    filter no_spot\n      require node.name != \"x\" else \"r\"\n"))
    status, out, err = run(capsys, "simulate", "--compare", "defaults", str(f), str(tiny))
    assert status == 0, err
    assert f"NEW  {f} (ConfigMap ns/pol)" in out


# -- CRLF and BOM ------------------------------------------------------------------------------------------

def test_crlf_copies_of_the_defaults_lint_clean_with_the_same_digest(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    for p in sorted((ROOT / "policies").glob("*.policy")):
        (tmp_path / p.name).write_bytes(p.read_bytes().replace(b"\n", b"\r\n"))
    status, lf, _ = run(capsys, "lint", str(ROOT / "policies"))
    assert status == 0
    status, crlf, _ = run(capsys, "lint", str(tmp_path))
    assert status == 0 and crlf == lf and "digest" in crlf


def test_bom_and_crlf_policy_has_the_digest_of_the_plain_one(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "mine.policy").write_text(POLICY)
    (tmp_path / "b" / "mine.policy").write_bytes(b"\xef\xbb\xbf" + POLICY.encode().replace(b"\n", b"\r\n"))
    status, plain, _ = run(capsys, "lint", str(tmp_path / "a" / "mine.policy"))
    assert status == 0
    status, marked, _ = run(capsys, "lint", str(tmp_path / "b" / "mine.policy"))
    assert status == 0 and marked == plain
