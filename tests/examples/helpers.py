"""Small snapshots and a `simulate` runner for the example-policy tests (the real CLI code path)."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

import yaml

from policyscheduler.cli import simulate as simulate_cli

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "policies"


def node(name: str, labels: dict[str, str] | None = None, *, cpu: str = "4", memory: str = "8Gi",
         extra: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None,
         images: list[tuple[str, int]] | None = None) -> dict[str, Any]:
    """A Ready node with the given labels, allocatable and taints."""
    allocatable = {"cpu": cpu, "memory": memory, "pods": "110", **(extra or {})}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"taints": taints or []},
        "status": {"allocatable": allocatable, "capacity": allocatable,
                   "images": [{"names": [n], "sizeBytes": size} for n, size in (images or [])]},
    }


def pod(name: str, *, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
        cpu: str = "100m", memory: str = "100Mi", extra: dict[str, str] | None = None, on: str | None = None,
        scheduler: str | None = "policy-scheduler", image: str = "registry.example/app:1") -> dict[str, Any]:
    """A pod (pending unless ``on`` names its node) requesting cpu/memory (+ ``extra`` resources)."""
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": image,
                                            "resources": {"requests": {"cpu": cpu, "memory": memory, **(extra or {})}}}]}
    if scheduler is not None:
        spec["schedulerName"] = scheduler
    if on is not None:
        spec["nodeName"] = on
    meta: dict[str, Any] = {"name": name, "namespace": "default", "labels": labels or {}}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
            "status": {"phase": "Running" if on else "Pending"}}


def simulate(tmp_path: Path, objects: list[dict[str, Any]], *policies: str | Path,
             extra_args: tuple[str, ...] = ()) -> tuple[int, dict[str, Any] | None, str]:
    """Run ``policyscheduler simulate SNAPSHOT --policies P ... -o json``: (status, JSON or None, stderr)."""
    snapshot = tmp_path / f"snapshot-{len(list(tmp_path.iterdir()))}.yaml"
    snapshot.write_text(yaml.safe_dump_all(objects))
    parser = argparse.ArgumentParser()
    simulate_cli.add_arguments(parser)
    argv = [str(snapshot), "-o", "json", "--engine", "reference", *extra_args]
    for p in policies:
        argv += ["--policies", str(p)]
    out, err = io.StringIO(), io.StringIO()
    status = simulate_cli.run(parser.parse_args(argv), stdout=out, stderr=err)
    doc = json.loads(out.getvalue()) if out.getvalue() else None
    return status, doc, err.getvalue()


def placements(doc: dict[str, Any] | None) -> dict[str, str | None]:
    """pod name -> node (None when it fits nowhere)."""
    assert doc is not None
    return {p["pod"].split("/", 1)[1]: p["node"] for p in doc["placements"]}


def messages(doc: dict[str, Any] | None) -> dict[str, str | None]:
    """pod name -> FailedScheduling message."""
    assert doc is not None
    return {p["pod"].split("/", 1)[1]: p["message"] for p in doc["placements"]}
