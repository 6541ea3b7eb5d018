"""``make demo``'s driver (examples/demo/live.py) end to end: control plane, ``policyscheduler run``, the
bundled demo cluster; every pending pod is either bound or reported unschedulable, exit 0."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.kube.live import REPO

pytestmark = pytest.mark.e2e


def test_live_demo_runs_end_to_end_and_exits_0() -> None:
    proc = subprocess.run([sys.executable, str(REPO / "examples" / "demo" / "live.py")], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-3000:]
    assert "Traceback" not in out + proc.stderr
    summary = re.search(r"summary: (\d+)/(\d+) pods bound, (\d+) unschedulable, (\d+) undecided", out)
    assert summary, out[-2000:]
    bound, pending, unschedulable, undecided = map(int, summary.groups())
    assert pending == 200 and undecided == 0 and bound + unschedulable == pending
    assert bound >= 150  # the demo's workload mostly fits; the rest is there to show reasons
    assert re.search(r"\] \S+/\S+ +-> \S+", out)  # placements printed as they happen
    assert "0/38 nodes are available:" in out  # kube-scheduler's FailedScheduling format
    assert "export KUBECONFIG=" in out and "done in" in out
