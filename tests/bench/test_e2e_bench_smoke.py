"""bench/e2e.py at toy sizes: every run kind completes, binds everything, violates nothing, and the
JSON / markdown / PNG outputs are written."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bench import e2e

pytestmark = pytest.mark.e2e


def test_e2e_bench_smoke(tmp_path: Path) -> None:
    args = e2e.parse_args(["--nodes", "12", "--pods", "15", "--workloads", "mixed",
                           "--runs", "ours,kube-100,ceiling", "--latency-pods", "5", "--latency-rate", "20",
                           "--timeout", "60", "--out", str(tmp_path)])
    results = e2e.run_all(args, progress=lambda _: None)
    assert [(r["workload"], r["run"]) for r in results["runs"]] == [
        (w, k) for w in ("mixed",) for k in ("ours", "kube-100", "ceiling")]
    for run in results["runs"]:
        assert run["bound"] == 15 and run["latency_bound"] == 5, run
        assert run["violations"] == 0, run["violation_examples"]
        assert run["pods_per_s"] > 0 and run["p99_ms"] >= run["p50_ms"] > 0
        assert run["cpu_s"] >= 0 and run["peak_rss_mb"] > 0 and run["server_cpu_s"] >= 0 and run["wall_s"] >= 0
    assert json.loads((tmp_path / "e2e.json").read_text())["nodes"] == 12
    table = (tmp_path / "e2e.md").read_text()
    assert "| mixed |" in table and "ours/kube-100" in table and "ours/ceiling" in table
    assert "CPU per bound pod" in table
    assert (tmp_path / "e2e.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_e2e_bench_profile_of_ours(tmp_path: Path) -> None:
    """``--profile``: ours runs under the profiling wrapper and its report names the threads and the
    functions where the throughput phase's CPU went."""
    args = e2e.parse_args(["--nodes", "12", "--pods", "15", "--workloads", "basic", "--runs", "ours",
                           "--latency-pods", "5", "--latency-rate", "20", "--timeout", "60",
                           "--out", str(tmp_path / "out"), "--profile", str(tmp_path / "prof")])
    results = e2e.run_all(args, progress=lambda _: None)
    assert results["runs"][0]["bound"] == 15 and results["runs"][0]["violations"] == 0
    report = (tmp_path / "prof" / "basic-ours.prof.txt").read_text()
    assert report.startswith("process CPU ") and "scheduling-loop" in report
    assert "schedule.py" in report and "by cumtime" in report


def test_e2e_bench_pinned_and_repeated(tmp_path: Path) -> None:
    """``--pin``: the scheduler runs on its own CPU, the results say so, and this process gets its CPUs back;
    ``--repeat 2``: two interleaved rounds, every round kept, the table shows medians and ranges."""
    before = os.sched_getaffinity(0)
    args = e2e.parse_args(["--nodes", "12", "--pods", "10", "--workloads", "basic", "--runs", "ours,ceiling",
                           "--latency-pods", "3", "--latency-rate", "20", "--timeout", "60",
                           "--out", str(tmp_path), "--pin", "--repeat", "2"])
    results = e2e.run_all(args, progress=lambda _: None)
    assert os.sched_getaffinity(0) == before
    assert results["pinned"] and "pinned" in results["machine"]
    assert [(r["run"], r["round"]) for r in results["runs"]] == [("ours", 0), ("ceiling", 0), ("ours", 1),
                                                                  ("ceiling", 1)]
    for run in results["runs"]:
        assert run["bound"] == 10 and run["violations"] == 0, run
        assert run["scheduler_cpus"] == sorted(e2e.SCHEDULER_CPUS)
    table = (tmp_path / "e2e-pinned.md").read_text()
    assert "each on its own core" in table and "median of 2 rounds" in table
    ours = [r["pods_per_s"] for r in results["runs"] if r["run"] == "ours"]
    assert f"[{min(ours):.0f}-{max(ours):.0f}]" in table
    assert not (tmp_path / "e2e.md").exists()


def test_e2e_bench_heterogeneous(tmp_path: Path) -> None:
    """The heterogeneous workload: running pods with terms bound before the runs, pending pods in their
    namespaces, churn during each run, and the same starting cluster restored for the next scheduler."""
    args = e2e.parse_args(["--nodes", "12", "--pods-per-node", "8", "--pods", "16", "--workloads", "heterogeneous",
                           "--runs", "ours,kube-default,ceiling", "--latency-pods", "4", "--latency-rate", "20",
                           "--timeout", "60", "--out", str(tmp_path)])
    results = e2e.run_all(args, progress=lambda _: None)
    assert results["running_pods"] == 96 and results["running_with_terms"] > 0
    assert [r["run"] for r in results["runs"]] == ["ours", "kube-default", "ceiling"]
    for run in results["runs"]:
        assert run["bound"] == 16 and run["latency_bound"] == 4, run
        assert run["violations"] == 0, run["violation_examples"]
        assert run["deleted"] == 4, run  # one running pod after every fourth bound
    table = (tmp_path / "e2e.md").read_text()
    assert "heterogeneous: 12 nodes" in table and "96 running pods" in table
    assert "scheduler CPU ours/kube-100" in table


def test_e2e_bench_heterogeneous_alone() -> None:
    """Its cluster is its own: mixing it with the identical-pod workloads is refused with a message."""
    args = e2e.parse_args(["--workloads", "basic,heterogeneous", "--runs", "ours"])
    with pytest.raises(SystemExit, match="run it on its own"):
        e2e.run_all(args, progress=lambda _: None)
