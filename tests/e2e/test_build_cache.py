"""A second build is a no-op: the stamped binaries are reused."""

from __future__ import annotations

import subprocess
import time

import pytest

from tests.controlplane.harness import BIN_ENV, BUILD_SCRIPT, ensure_binaries

pytestmark = pytest.mark.e2e


def test_second_build_reuses_the_binaries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BIN_ENV, raising=False)
    built = ensure_binaries()  # builds on a cold cache, reuses otherwise
    before = {p: p.stat().st_mtime_ns for p in (built.etcd, built.kube_apiserver, built.kube_scheduler)}
    t0 = time.monotonic()
    proc = subprocess.run(["bash", str(BUILD_SCRIPT)], capture_output=True, text=True, timeout=120)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr
    assert "up to date" in proc.stderr
    assert proc.stdout.strip() == str(built.etcd.parent)
    assert elapsed < 10
    assert {p: p.stat().st_mtime_ns for p in before} == before
