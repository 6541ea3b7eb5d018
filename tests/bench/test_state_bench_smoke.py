"""Smoke tests of the state benchmark's ``memory`` and ``scaling`` modes: tiny runs end to end, outputs
present and well-formed (the measured numbers are bench/README.md's business, not a test's)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OPS = ("add", "remove", "assume", "forget")


def _run(*args: str) -> str:
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "state_bench.py"), *args],
                          capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_memory_mode(tmp_path: Path) -> None:
    out = _run("memory", "--nodes", "20", "--per-node", "3", "--pods", "5", "--out", str(tmp_path))
    assert "20 nodes x 3 running pods/node" in out and "peak" in out
    result = json.loads((tmp_path / "state-memory-20.json").read_text())
    assert result["running_pods"] == 60 and result["placed_pods"] == 60 and result["watch_bookkeeping"] is True
    assert result["pods"] == 5 and 0 < result["placed"] <= 5
    for key in ("rss_start_mib", "rss_after_build_mib", "rss_after_pods_mib", "peak_after_build_mib", "peak_mib"):
        assert result[key] > 0, key
    assert result["peak_mib"] >= result["peak_after_build_mib"]


def test_memory_mode_state_only_with_tracemalloc(tmp_path: Path) -> None:
    _run("memory", "--nodes", "10", "--per-node", "2", "--pods", "2", "--state-only", "--tracemalloc", "--top", "5",
         "--out", str(tmp_path))
    result = json.loads((tmp_path / "state-memory-10.json").read_text())
    assert result["watch_bookkeeping"] is False and result["placed_pods"] == 20
    for when in ("top_after_build", "top_after_pods"):
        rows = result[when]
        assert 0 < len(rows) <= 5
        assert all(row["mib"] >= 0 and row["blocks"] > 0 and ":" in row["where"] for row in rows)
    assert result["traced_peak_mib"] > 0


def test_scaling_mode(tmp_path: Path) -> None:
    out = _run("scaling", "--sizes", "10,20", "--per-node", "2", "--pods", "6", "--warm", "3", "--out", str(tmp_path))
    result = json.loads((tmp_path / "state-scaling.json").read_text())
    assert [row["nodes"] for row in result["rows"]] == [10, 20]
    for row in result["rows"]:
        assert row["running_pods"] == 2 * row["nodes"] and row["pods"] == 6
        for kind in ("plain", "terms"):
            for op in OPS:
                cell = row[f"{kind}_{op}"]
                assert cell["median_us"] > 0 and cell["cpu_mean_us"] >= 0 and cell["p90_us"] >= cell["median_us"]
    table = (tmp_path / "state-scaling.md").read_text()
    assert table in out
    lines = table.splitlines()
    assert lines[0].startswith("| nodes | running pods | add (plain) |") and len(lines) == 5
    assert lines[2].startswith("| 10 | 20 |") and lines[3].startswith("| 20 | 40 |") and lines[4].startswith("| 20 / 10 |")
