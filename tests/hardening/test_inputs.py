"""Issue 12: every bad input has its own message and exit status; none reaches the internal-error exit 70.

Each test runs the real command line in a child process (as a user would) and asserts the message and
the exit code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, stdin: bytes | None = None, shell: str | None = None, timeout: float = 120) -> tuple[int, str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if shell is not None:
        done = subprocess.run(["bash", "-o", "pipefail", "-c", shell], capture_output=True, env=env, timeout=timeout,
                              cwd=ROOT)
    else:
        done = subprocess.run([sys.executable, "-m", "policyscheduler", *args], input=stdin, capture_output=True,
                              env=env, timeout=timeout, cwd=ROOT)
    out, err = done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")
    assert "internal error" not in err and "Traceback" not in err, err
    return done.returncode, out, err


NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


def pod(name: str = "p1", **spec: object) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulerName": "policy-scheduler", "containers": [{"name": "c", "image": "nginx"}], **spec}}


def write(tmp_path: Path, name: str, objs: Sequence[Mapping[str, object]]) -> Path:
    f = tmp_path / name
    f.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    return f


# -- numbers that overflowed ---------------------------------------------------------------------------

def test_huge_affinity_weight_is_refused_not_overflowed(tmp_path: Path) -> None:
    p = pod(affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10**400, "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}}]}})
    status, _, err = cli("simulate", str(write(tmp_path, "c.json", [NODE, p])))
    assert status == 2
    assert "Pod default/p1: spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight" in err
    assert "must be an integer in the range 1-100" in err


def test_score_above_float_range_is_a_located_overflow(tmp_path: Path) -> None:
    pol = tmp_path / "huge.policy"
    pol.write_text('score huge weight 1 normalize minmax\n  value trunc(float("1e300") * float(len(node.name)))\n')
    status, out, err = cli("simulate", "--policies", str(pol), "-o", "json", str(write(tmp_path, "c.json", [NODE, pod()])))
    assert status == 0
    assert "huge.policy:2:9" in err and "overflow" in err
    assert json.loads(out)["placements"][0]["node"] == "n1"


def test_int64_overflow_is_a_located_runtime_error(tmp_path: Path) -> None:
    pol = tmp_path / "sq.policy"
    pol.write_text("score sq weight 1 normalize minmax\n  let a = len(node.name) * 4294967296\n"
                   "  value a * a\n")
    status, _out, err = cli("simulate", "--policies", str(pol), "-o", "json", str(write(tmp_path, "c.json", [NODE, pod()])))
    assert status == 0
    assert "sq.policy:3:11: score rule sq failed: overflow: the result of '*' is outside the 64-bit integer range" in err


def test_5000_digit_quantity_is_too_large(tmp_path: Path) -> None:
    pol = tmp_path / "q.policy"
    pol.write_text('filter q\n  reason "r"\n  require pod.requests["cpu"] < ' + "9" * 5000 + "m\n")
    status, out, _ = cli("lint", str(pol))
    assert status == 1
    assert "q.policy:3:33: error too-large: this quantity has 5,000 digits" in out


def test_5000_digit_integer_is_too_large(tmp_path: Path) -> None:
    pol = tmp_path / "i.policy"
    pol.write_text('filter i\n  reason "r"\n  require node.pod_count < ' + "9" * 5000 + "\n")
    status, out, _ = cli("lint", str(pol))
    assert status == 1
    assert "error too-large: this integer is outside the 64-bit range" in out


# -- policy directories --------------------------------------------------------------------------------

def test_symlink_loop_in_policy_dir_is_a_diagnostic_and_the_rest_loads(tmp_path: Path) -> None:
    d = tmp_path / "pol"
    d.mkdir()
    (d / "ok.policy").write_text('filter mine\n  reason "r"\n  require node.name != "x"\n')
    (d / "loop").symlink_to(d)  # a directory loop
    (d / "self.policy").symlink_to(d / "self.policy")  # a file loop
    status, out, _ = cli("lint", str(d))
    assert status == 1  # the looping file is an error for that path ...
    assert f"{d / 'self.policy'}:1:1: error unreadable-file: cannot read {d / 'self.policy'}: a symlink loop" in out
    assert f"warning symlink-loop: {d / 'loop'} leads back to a directory already being searched" in out
    assert "mine" not in out  # ... and ok.policy loaded without a diagnostic
    (d / "self.policy").unlink()
    status, out, _ = cli("lint", str(d))
    assert status == 0 and "1 rule in 1 file" in out


def test_unreadable_policy_file_is_a_diagnostic(tmp_path: Path) -> None:
    """A file the kernel refuses to read (/proc/self/mem fails with EIO even for root, who ignores
    permission bits): a located diagnostic for that path, the rest of the folder still loads."""
    d = tmp_path / "pol"
    d.mkdir()
    (d / "ok.policy").write_text('filter mine\n  reason "r"\n  require node.name != "x"\n')
    broken = d / "broken.policy"
    broken.symlink_to("/proc/self/mem")
    status, out, _ = cli("lint", str(d))
    assert status == 1 and f"cannot read {broken}: Input/output error" in out
    assert "mine" not in out  # ok.policy loaded without a diagnostic


def test_fifo_policy_in_dir_is_refused(tmp_path: Path) -> None:
    d = tmp_path / "pol"
    d.mkdir()
    (d / "ok.policy").write_text('filter mine\n  reason "r"\n  require node.name != "x"\n')
    os.mkfifo(d / "pipe.policy")
    status, out, _ = cli("lint", str(d), timeout=30)
    assert status == 1 and f"cannot read {d / 'pipe.policy'}: not a regular file" in out


def test_dev_zero_as_policy_is_refused() -> None:
    status, out, _ = cli("lint", "/dev/zero", timeout=30)
    assert status == 1 and "/dev/zero is not a policy file or a directory of them" in out


# -- inputs ------------------------------------------------------------------------------------------

def test_deeply_nested_json_is_a_located_error(tmp_path: Path) -> None:
    f = tmp_path / "deep.json"
    f.write_text('{"apiVersion": "v1", "kind": "List", "items": [\n' + "[" * 100_000 + "]" * 100_000 + "]}")
    status, _, err = cli("simulate", str(f))
    assert status == 2 and f"error: {f}:2:99: nesting deeper than 100 levels" in err


def test_deeply_nested_yaml_is_a_located_error(tmp_path: Path) -> None:
    for text in ("kind: Pod\nx: " + "[" * 50_000 + "]" * 50_000 + "\n",
                 "kind: Pod\nx: &a " + "[" * 5_000 + "]" * 5_000 + "\n"):  # an anchor: the full loader
        f = tmp_path / "deep.yaml"
        f.write_text(text)
        status, _, err = cli("simulate", str(f))
        # the libyaml parser stops at 1,000 levels by itself, before the reader's own limit (100) is reached
        assert status == 2 and f"error: {f}:2:" in err and ("nesting deeper than 100 levels" in err or
                                                          "exceeded maximum nesting depth" in err), err


def test_duplicate_yaml_key_is_a_located_error(tmp_path: Path) -> None:
    f = tmp_path / "dup.yaml"
    f.write_text("kind: Node\nmetadata:\n  name: n1\n  name: n2\n")
    status, _, err = cli("simulate", str(f))
    assert status == 2 and f"error: {f}:4:3: duplicate key 'name' in a mapping" in err


def test_fifo_input_is_refused_not_waited_for(tmp_path: Path) -> None:
    fifo = tmp_path / "in.yaml"
    os.mkfifo(fifo)
    status, _, err = cli("simulate", str(fifo), timeout=30)
    assert status == 2 and f"error: {fifo}: cannot read: a FIFO, not a regular file" in err


def test_dev_zero_input_is_refused() -> None:
    status, _, err = cli("simulate", "/dev/zero", timeout=30)
    assert status == 2 and "error: /dev/zero: cannot read: a device, not a regular file" in err


def test_input_over_the_size_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from policyscheduler.inputs import reader

    monkeypatch.setattr(reader, "MAX_INPUT_BYTES", 1000)
    f = tmp_path / "big.yaml"
    f.write_text("kind: Node\nmetadata: {name: n1}\n" + "#" * 2000 + "\n")
    result = reader.read_objects([f])
    assert result.errors == [f"{f}: cannot read: 2,033 bytes, over the limit of 1,000 bytes"]


@pytest.mark.parametrize("spec, message", [
    ({"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "-1"}}}]},
     "spec.containers[0].resources.requests['cpu']: -1 is negative (must be greater than or equal to 0)"),
    ({"containers": [{"name": "c", "image": "i"}], "priority": 2**31},
     "spec.priority: 2147483648 (must be a 32-bit integer)"),
    ({"containers": [{"name": "c", "image": "i"}], "affinity": {"podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "podAffinityTerm": {"topologyKey": "k"}}]}}},
     "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: 0 (must be an integer "
     "in the range 1-100)"),
])
def test_fields_the_api_server_would_refuse(tmp_path: Path, spec: dict[str, object], message: str) -> None:
    p = pod()
    p["spec"] = {"schedulerName": "policy-scheduler", **spec}
    f = write(tmp_path, "c.json", [NODE, p])
    status, _, err = cli("simulate", str(f))
    assert status == 2 and f"error: {f}: document 1: Pod default/p1: {message}" in err


def test_bad_names_and_duplicates(tmp_path: Path) -> None:
    f = write(tmp_path, "c.json", [NODE, pod("Bad_Name\x1b[31m")])
    status, _, err = cli("simulate", str(f))
    assert status == 2 and "metadata.name is not a valid name (the API server wants a DNS-1123 subdomain" in err
    assert "\x1b" not in err and "\\x1b[31m" in err
    f = write(tmp_path, "d.json", [NODE, pod("same"), pod("same")])
    status, _, err = cli("simulate", str(f))
    assert status == 2 and f"error: {f}: document 1: duplicate Pod default/same (first in {f}: document 1)" in err


# -- output ------------------------------------------------------------------------------------------

def test_broken_pipe_keeps_the_status_the_run_earned(tmp_path: Path) -> None:
    bad = tmp_path / "bad.policy"
    bad.write_text("".join(f"filter f{i}\n  require x{i}\n" for i in range(3000)))
    for _ in range(3):
        status, _out, err = cli(shell=f"{sys.executable} -m policyscheduler lint {bad} | head -1")
        assert status == 1, err
        assert err == ""
    status, _, err = cli(shell=f"{sys.executable} -m policyscheduler lint --costs policies/ | head -1")
    assert status == 0 and err == ""


def test_full_disk_is_cannot_write_output() -> None:
    status, _, err = cli(shell=f"{sys.executable} -m policyscheduler lint --costs policies/ > /dev/full")
    assert status == 2 and "policyscheduler: cannot write output: No space left on device" in err
    status, _, err = cli(shell=f"{sys.executable} -m policyscheduler simulate > /dev/full")
    assert status == 2 and "policyscheduler: cannot write output: No space left on device" in err


def test_control_characters_are_escaped_in_lint_and_simulate(tmp_path: Path) -> None:
    pol = tmp_path / "c.policy"
    pol.write_text('filter ctl\n  reason "evil\\n\x1b[2J"\n  require node.name == "\x07" and nope\n')
    status, out, _ = cli("lint", str(pol))
    assert status == 1 and "unknown name 'nope'" in out
    assert "\x1b" not in out and "\x07" not in out and 'node.name == "\\x07" and nope' in out
    pol.write_text('filter ctl\n  reason "evil\\n\x1b]0;title\x07"\n  require node.name == "nope"\n')
    status, out, _ = cli("simulate", "--policies", str(pol), str(write(tmp_path, "c.json", [NODE, pod()])))
    assert status == 0 and "\x1b" not in out and "\x07" not in out and "\\x1b]0;title\\x07" in out
    status, out, _err = cli("simulate", "-o", "json", "--policies", str(pol),
                           str(write(tmp_path, "c.json", [NODE, pod()])))
    assert "\x1b" not in out and "\\u001b]0;title\\u0007" in out


def test_normalisation_clamps_scores_outside_int64() -> None:
    import numpy as np

    from policyscheduler.evaluation.normalize import normalize, normalize_array

    assert normalize("minmax", [10**400, 0, 5]) == [100, 0, 0]
    assert normalize("scale", [10**400, 2**62]) == [100, 50]
    assert normalize_array("minmax", np.array([10**400, 0], dtype=object)).tolist() == [100, 0]


def test_policy_file_over_the_size_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from policyscheduler import loader

    monkeypatch.setattr(loader, "MAX_POLICY_FILE_BYTES", 100)
    f = tmp_path / "big.policy"
    f.write_text("# " + "x" * 200 + "\n")
    result = loader.load_policy_set([f])
    assert [d.message for d in result.diagnostics] == [
        f"cannot read {f}: 203 bytes, over the 0 MiB limit for a policy file"]
