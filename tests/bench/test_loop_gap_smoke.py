"""Smoke test of ``bench/loop_gap.py``: a tiny run end to end, outputs present and well-formed, and each case
doing what its name says (the measured numbers are bench/README.md's business, not a test's)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "bench" / "loop_gap.py"), *args],
                          capture_output=True, text=True, timeout=180, cwd=ROOT, check=False)


def test_tiny_run(tmp_path: Path) -> None:
    done = _run("--nodes", "20", "--pods-per-node", "2", "--pods", "12", "--rounds", "1", "--lag", "2",
                "--cases", "prepared,fed,confirmed+python", "--out", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "kernel" in done.stderr  # which BLAS kernel ran
    result = json.loads((tmp_path / "loop-gap.json").read_text())
    rows = {r["case"]: r for r in result["runs"]}
    assert set(rows) == {"prepared", "fed", "confirmed+python"}
    for row in rows.values():
        assert row["pods"] == 12 and row["cpu_ms_per_pod"] > 0 and row["wall_ms_per_pod"] > 0
        assert row["placed"] > 0 and row["deleted"] > 0  # churn in every case
    # only the confirmed case replays the watch's confirmations, all but the last ``--lag`` of its binds
    assert rows["prepared"]["confirmed"] == rows["fed"]["confirmed"] == 0
    assert rows["confirmed+python"]["confirmed"] == rows["confirmed+python"]["placed"] - 2
    assert rows["confirmed+python"]["neighbour"] == "python" and rows["prepared"]["neighbour"] is None
    table = (tmp_path / "loop-gap.md").read_text()
    assert table in done.stdout
    assert [line.split(" | ")[0] for line in table.splitlines() if line.startswith("| ") and "] |" in line and "[range]" not in line] == \
        ["| prepared", "| fed", "| confirmed+python"]


def test_unknown_case_is_a_usage_error() -> None:
    done = _run("--cases", "prepared,confirmed+ghost")
    assert done.returncode == 2
    assert "unknown case 'confirmed+ghost'" in done.stderr and "Traceback" not in done.stderr


def test_counts_below_one_are_usage_errors() -> None:
    done = _run("--rounds", "0")
    assert done.returncode == 2
    assert "--rounds must be at least 1" in done.stderr and "Traceback" not in done.stderr
