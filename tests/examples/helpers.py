"""Small snapshots and a `simulate` runner for the example-policy tests (the real CLI code path)."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any
from unittest import mock

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


ENGINES = ("reference", "vector")


def simulate(tmp_path: Path, objects: list[dict[str, Any]], *policies: str | Path,
             extra_args: tuple[str, ...] = ()) -> tuple[int, dict[str, Any] | None, str]:
    """Run ``policyscheduler simulate SNAPSHOT --policies P ... -o json``: (status, JSON or None, stderr).

    Every run is made with both engines, which must agree exactly (status, JSON document, stderr); the
    vector engine's runs take its array path even on these small snapshots (``backend.SMALL = 0``, else
    it hands rules on a handful of nodes to the reference closures). The result returned is the run of
    the engine ``extra_args`` names with ``--engine``, else the reference's.
    """
    snapshot = tmp_path / f"snapshot-{len(list(tmp_path.iterdir()))}.yaml"
    snapshot.write_text(yaml.safe_dump_all(objects))
    args = list(extra_args)
    engine = "reference"
    while "--engine" in args:
        at = args.index("--engine")
        engine = args[at + 1]
        del args[at:at + 2]
    assert engine in ENGINES, engine
    runs = {e: _simulate_once(snapshot, policies, e, args) for e in ENGINES}
    assert runs["vector"] == runs["reference"], _difference(runs["reference"], runs["vector"])
    return runs[engine]


def _simulate_once(snapshot: Path, policies: tuple[str | Path, ...], engine: str,
                   extra_args: list[str]) -> tuple[int, dict[str, Any] | None, str]:
    from policyscheduler.evaluation.vector import backend

    parser = argparse.ArgumentParser()
    simulate_cli.add_arguments(parser)
    argv = [str(snapshot), "-o", "json", "--engine", engine, *extra_args]
    for p in policies:
        argv += ["--policies", str(p)]
    out, err = io.StringIO(), io.StringIO()
    with mock.patch.object(backend, "SMALL", 0):
        status = simulate_cli.run(parser.parse_args(argv), stdout=out, stderr=err)
    doc = json.loads(out.getvalue()) if out.getvalue() else None
    return status, doc, err.getvalue()


def _difference(ref: tuple[int, dict[str, Any] | None, str], vec: tuple[int, dict[str, Any] | None, str]) -> str:
    """Where the vector engine's run differs from the reference's (for the assertion message)."""
    if ref[0] != vec[0] or ref[2] != vec[2]:
        return f"engines differ: reference status {ref[0]}, stderr {ref[2]!r}; vector status {vec[0]}, stderr {vec[2]!r}"
    a = json.dumps(ref[1], indent=1, sort_keys=True).splitlines()
    b = json.dumps(vec[1], indent=1, sort_keys=True).splitlines()
    import difflib

    return "engines differ:\n" + "\n".join(difflib.unified_diff(a, b, "reference", "vector", lineterm="", n=2))


def placements(doc: dict[str, Any] | None) -> dict[str, str | None]:
    """pod name -> node (None when it fits nowhere)."""
    assert doc is not None
    return {p["pod"].split("/", 1)[1]: p["node"] for p in doc["placements"]}


def messages(doc: dict[str, Any] | None) -> dict[str, str | None]:
    """pod name -> FailedScheduling message."""
    assert doc is not None
    return {p["pod"].split("/", 1)[1]: p["message"] for p in doc["placements"]}
