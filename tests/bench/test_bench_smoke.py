"""Smoke test of the engine benchmark: one tiny run end to end, outputs present and well-formed.

The full benchmark takes minutes and is run by hand (bench/README.md); this keeps the one command
working -- argument parsing, the per-size child process, both engines, every workload, the JSON /
markdown / PNG writers -- on a 20-node cluster in a few seconds.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKLOADS = ["basic", "node-affinity", "required-anti-affinity", "required-affinity", "preferred-affinity",
             "spreading", "mixed", "heterogeneous", "het-basic", "het-spreading", "het-node-affinity",
             "het-preferred-affinity", "het-anti-affinity", "het-affinity"]


def _png_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    """(type, payload) of every chunk, checking each CRC; fails on a truncated or corrupt file."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, pos = [], 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, payload = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert crc == zlib.crc32(kind + payload) & 0xFFFFFFFF, kind
        chunks.append((kind, payload))
        pos += 12 + length
    return chunks


def test_engine_benchmark_smoke(tmp_path: Path) -> None:
    out = tmp_path / "results"
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "engine.py"), "--nodes", "20", "--pods", "5",
         "--reference-sample", "5", "--engines", "vector,reference", "--budget", "10", "--ceiling", "1234",
         "--out", str(out)],
        capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "OPENBLAS_CORETYPE=" in done.stdout and "targets at 5,000 nodes" in done.stdout
    assert "bind ceiling of this machine: 1,234 pods/s" in done.stdout
    assert "| workload | nodes |" in done.stdout

    results = json.loads((out / "engine.json").read_text())
    assert results["engines"] == ["vector", "reference"]
    assert [s["nodes"] for s in results["sizes"]] == [20]
    size = results["sizes"][0]
    assert size["running_pods"] == 200 and size["peak_rss_mb"] > 0
    cells = {(c["workload"], c["engine"]): c for c in size["cells"]}
    assert set(cells) == {(w, e) for w in WORKLOADS for e in ("vector", "reference")}
    for cell in cells.values():
        assert cell["pods"] == 5 and cell["pods_per_s"] > 0 and 0 <= cell["placed"] <= 5
        assert cell["agree"] == "5/5", cell  # same start state and seed: the engines decide alike

    table = (out / "engine.md").read_text()
    assert all(f"| {w} | 20 |" in table for w in WORKLOADS)
    # the heterogeneous scheduler_perf-like rows: their case's threshold and the ceiling beside them
    assert "| het-anti-affinity | required-anti-affinity | 20 | " in table and "| 60 | " in table
    assert "bind ceiling 1,234 pods/s" in table and results["bind_ceiling"]["pods_per_s"] == 1234

    chunks = _png_chunks((out / "engine.png").read_bytes())
    assert chunks[0][0] == b"IHDR" and chunks[-1][0] == b"IEND"
    width, height, depth, color = struct.unpack(">IIBB", chunks[0][1][:10])
    raw = zlib.decompress(b"".join(p for k, p in chunks if k == b"IDAT"))
    assert (depth, color) == (8, 2) and len(raw) == height * (1 + 3 * width)


def test_heterogeneous_workload_smoke(tmp_path: Path) -> None:
    """The heterogeneous workload next to basic: running pods with terms, distinct pending shapes, churn,
    and the heterogeneous / basic ratio of the same run in the output."""
    from bench import workloads

    cluster = workloads.base_cluster(30, 6, terms=True)
    running = [o for o in cluster if o["kind"] == "Pod"]
    with_terms = [o for o in running if o["spec"].get("affinity")]
    assert 0 < len(with_terms) < len(running) / 3  # ~7%: a few required anti-affinity, more preferred affinity
    pending = workloads.pending_pods("heterogeneous", 12)
    shapes = {json.dumps({k: v for k, v in p["spec"].items()}, sort_keys=True) for p in pending}
    assert len(shapes) == 12  # every pending pod a distinct shape
    plan = workloads.churn_plan("heterogeneous", cluster, 12)
    assert plan and workloads.churn_plan("basic", cluster, 12) == {}

    out = tmp_path / "results"
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "engine.py"), "--nodes", "30", "--pods", "12", "--pods-per-node", "6",
         "--reference-sample", "6", "--engines", "vector,reference", "--workloads", "basic,heterogeneous",
         "--budget", "10", "--out", str(out)],
        capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "heterogeneous / basic steady = " in done.stdout
    size = json.loads((out / "engine.json").read_text())["sizes"][0]
    assert size["running_pods"] == 180
    cells = {(c["workload"], c["engine"]): c for c in size["cells"]}
    het = cells[("heterogeneous", "vector")]
    assert het["running_with_terms"] and het["deleted"] == len([i for i in plan if i < 12]) > 0
    assert cells[("basic", "vector")]["deleted"] == 0
    assert het["agree"] == "6/6", het  # churn applied alike: the engines still decide alike
    assert "Heterogeneous vs identical pods" in (out / "engine.md").read_text()


def _kind_of(pod: dict[str, Any]) -> str:
    """Which scheduler_perf kind of constraint a pending pod carries (read from its spec)."""
    spec = pod["spec"]
    affinity = spec.get("affinity") or {}
    if spec.get("topologySpreadConstraints"):
        return "spreading"
    if "nodeAffinity" in affinity:
        return "node-affinity"
    if any(t.get("preferredDuringSchedulingIgnoredDuringExecution") for t in affinity.values()):
        return "preferred-affinity"
    if (affinity.get("podAntiAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution"):
        return "required-anti-affinity"
    if (affinity.get("podAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution"):
        return "required-affinity"
    return "basic"


def test_heterogeneous_scheduler_perf_workloads(tmp_path: Path) -> None:
    """Every het-* pod carries its scheduler_perf case's kind of constraint, pods are distinct shapes of
    several apps in several namespaces, the thresholds are their case's, and --ceiling reads an e2e.json."""
    from bench import engine, workloads

    for name, kind in workloads.HET_WORKLOADS.items():
        pods = workloads.pending_pods(name, 40)
        assert {_kind_of(p) for p in pods} == {kind}, name
        assert len({json.dumps(p["spec"], sort_keys=True) for p in pods}) == 40, name
        assert len({p["metadata"]["namespace"] for p in pods}) >= 3 and \
            len({p["metadata"]["labels"]["app"] for p in pods}) >= 10, name
        assert workloads.pending_pods(name, 5, seed=1) != pods[:5]  # the seed varies the draws
        assert workloads.scheduler_perf_threshold(name) == workloads.SCHEDULER_PERF_THRESHOLDS[kind]
        assert name in workloads.TERMED_WORKLOADS and workloads.churn_plan(name, workloads.base_cluster(10, 4, terms=True), 8)
    assert workloads.scheduler_perf_threshold("mixed") is None

    e2e_json = tmp_path / "e2e.json"
    e2e_json.write_text(json.dumps({"nodes": 50, "workloads": ["basic"], "runs": [
        {"run": "ours", "pods_per_s": 900.0}, *({"run": "ceiling", "pods_per_s": r} for r in (1200.0, 1500.0, 1300.0))]}))
    ceiling = engine.read_ceiling(str(e2e_json))
    assert ceiling["pods_per_s"] == 1300.0 and ceiling["runs"] == 3 and "median of 3" in ceiling["source"]
    e2e_json.write_text(json.dumps({"runs": [{"run": "ours", "pods_per_s": 900.0}]}))
    with pytest.raises(SystemExit, match="no ceiling run"):
        engine.read_ceiling(str(e2e_json))
    with pytest.raises(SystemExit, match=r"neither a number nor a readable e2e\.json"):
        engine.read_ceiling(str(tmp_path / "missing.json"))
