"""Nothing the harness starts survives it: not on an exception, not on SIGKILL, not on Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane import procs
from tests.controlplane.harness import HERE, ControlPlane, sweep_stale_dirs

pytestmark = pytest.mark.e2e
REPO = HERE.parent.parent


def _survivors(pids: list[int], timeout: float = 15.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while True:
        alive = [p for p in pids if procs.process_alive(p)]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)


def _env(control_plane: ControlPlane) -> dict[str, str]:
    # Reuse the binaries the session already built instead of calling build.sh again.
    return {**os.environ, "POLICYSCHEDULER_CONTROLPLANE_BIN": str(control_plane.binaries.etcd.parent)}


def test_exception_inside_the_harness_stops_everything(control_plane: ControlPlane) -> None:
    seen: dict[str, Any] = {}
    with pytest.raises(RuntimeError, match="boom"), ControlPlane.start(control_plane.binaries) as cp:
        cp.start_scheduler()
        seen["pids"], seen["workdir"] = cp.pids(), cp.workdir
        assert len(cp.pids()) == 3 and all(procs.process_alive(p) for p in cp.pids())
        raise RuntimeError("boom")
    assert _survivors(seen["pids"]) == []
    assert not Path(seen["workdir"]).exists()


def test_sigkilled_parent_leaves_no_processes(control_plane: ControlPlane) -> None:
    script = textwrap.dedent("""
        import time
        from tests.controlplane.harness import ControlPlane
        cp = ControlPlane.start()
        cp.start_scheduler()
        print(",".join(map(str, cp.pids())), cp.workdir, flush=True)
        time.sleep(600)
    """)
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, env=_env(control_plane),
                              stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        line = parent.stdout.readline().split()
        assert line, "harness subprocess did not start"
        pids, workdir = [int(p) for p in line[0].split(",")], Path(line[1])
        assert len(pids) == 3 and all(procs.process_alive(p) for p in pids)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()
    assert _survivors(pids) == []
    # Nothing could clean the work dir after SIGKILL; the next harness start sweeps it.
    assert workdir.exists()
    sweep_stale_dirs()
    assert not workdir.exists()


def test_cli_up_serves_kubectl_and_cleans_up_on_ctrl_c(control_plane: ControlPlane) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "tests.controlplane", "up", "--nodes", "2"], cwd=REPO,
                            env=_env(control_plane), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    values: dict[str, str] = {}
    try:
        assert proc.stdout is not None
        while "WORKDIR" not in values:
            line = proc.stdout.readline()
            assert line, f"`up` exited early: {proc.stderr.read() if proc.stderr else ''}"
            key, _, value = line.strip().partition("=")
            values[key] = value
        out = subprocess.run(["kubectl", "get", "nodes", "-o", "name"], capture_output=True, text=True, timeout=60,
                             env={**os.environ, "KUBECONFIG": values["KUBECONFIG"]})
        assert out.returncode == 0, out.stderr
        assert sorted(out.stdout.split()) == ["node/node-0", "node/node-1"]
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
    assert proc.returncode == 0
    assert _survivors([int(p) for p in values["PIDS"].split(",")]) == []
    assert not Path(values["WORKDIR"]).exists()
