"""Fast checks of build.sh's contract and of the no-orphans process handling."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tests.controlplane import procs
from tests.controlplane.harness import BUILD_SCRIPT, HERE, Binaries

REPO = HERE.parent.parent


def _pinned(mod: str, path: str) -> str:
    text = (HERE / mod / "go.mod").read_text()
    match = re.search(rf"^require {re.escape(path)} (v\S+)", text, re.M)
    assert match, f"{mod}/go.mod does not pin {path}"
    return match.group(1)


def test_go_mod_pins_kubernetes_1_35_and_etcd_3_6() -> None:
    k8s = _pinned("kube", "k8s.io/kubernetes")
    etcd = _pinned("etcd", "go.etcd.io/etcd/server/v3")
    assert k8s.startswith("v1.35.") and etcd.startswith("v3.6.")
    kube_mod = (HERE / "kube" / "go.mod").read_text()
    minor = "v0." + k8s[len("v1."):]
    # Every staging module must be replaced by its published tag of the same release.
    for name in ("api", "apimachinery", "apiserver", "client-go", "kube-scheduler", "kubelet"):
        assert f"k8s.io/{name} => k8s.io/{name} {minor}" in kube_mod
    for tool in ("kube-apiserver", "kube-scheduler", "kube-controller-manager"):
        assert f"k8s.io/kubernetes/cmd/{tool}" in kube_mod
    assert (HERE / "kube" / "go.sum").is_file() and (HERE / "etcd" / "go.sum").is_file()


def test_bin_dir_is_keyed_by_versions() -> None:
    out = subprocess.run(["bash", str(BUILD_SCRIPT), "--bin-dir"], capture_output=True, text=True, check=True)
    k8s = _pinned("kube", "k8s.io/kubernetes")
    etcd = _pinned("etcd", "go.etcd.io/etcd/server/v3")
    assert out.stdout.strip().endswith(f"/controlplane/k8s-{k8s}-etcd-{etcd}/bin")


def test_binaries_include_the_controller_manager(tmp_path: Path) -> None:
    found = Binaries.in_dir(tmp_path)
    assert found.kube_controller_manager == tmp_path / "kube-controller-manager"
    assert found.kube_controller_manager in found.missing()
    build = BUILD_SCRIPT.read_text()
    assert "binaries=(etcd kube-apiserver kube-scheduler kube-controller-manager)" in build


def test_build_without_go_fails_with_a_clear_message(tmp_path: Path) -> None:
    # A PATH with the shell tools build.sh needs, but no `go`.
    for tool in ("bash", "awk", "dirname", "cat", "date"):
        found = shutil.which(tool)
        assert found
        (tmp_path / tool).symlink_to(found)
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path)}
    proc = subprocess.run([str(tmp_path / "bash"), str(BUILD_SCRIPT)], capture_output=True, text=True, env=env)
    assert proc.returncode == 2
    assert "Go toolchain ('go') is not on PATH" in proc.stderr
    assert "Traceback" not in proc.stderr


def _wait_dead(pids: list[int], timeout: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [p for p in pids if procs.process_alive(p)]
        if not alive:
            return []
        time.sleep(0.05)
    return alive


def test_children_die_when_the_python_parent_is_sigkilled() -> None:
    script = textwrap.dedent("""
        import sys, time
        from pathlib import Path
        from tests.controlplane import procs
        c = procs.Child("sleep", ["sleep", "600"], Path(sys.argv[1]))
        print(c.pid, flush=True)
        time.sleep(600)
    """)
    log = Path(os.devnull)
    parent = subprocess.Popen([sys.executable, "-c", script, str(log)], cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child_pid = int(parent.stdout.readline())
    parent.stdout.close()
    assert procs.process_alive(child_pid)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    assert _wait_dead([child_pid]) == []


def test_stop_kills_the_whole_process_group(tmp_path: Path) -> None:
    marker = tmp_path / "grandchild.pid"
    child = procs.Child("sh", ["bash", "-c", f"sleep 600 & echo $! > {marker}; wait"], tmp_path / "log")
    deadline = time.monotonic() + 10
    while not (marker.exists() and marker.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.02)
    grandchild = int(marker.read_text())
    assert procs.process_alive(grandchild)
    child.stop(grace=2.0)
    assert not child.alive()
    assert _wait_dead([grandchild]) == []
