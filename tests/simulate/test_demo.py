"""The bundled demo cluster: up to date with its generator, and exercising every default rule."""

from __future__ import annotations

import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from policyscheduler.compiler import PolicySet
from policyscheduler.simulate import Simulation
from policyscheduler.simulate.defaults import default_policies_dir, demo_cluster_dir

REPO = Path(__file__).resolve().parents[2]


def test_committed_demo_matches_the_generator(tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(REPO / "examples" / "demo" / "generate.py"), str(tmp_path)],
                   check=True, capture_output=True)
    committed = sorted(p.name for p in demo_cluster_dir().glob("*.yaml"))
    assert committed == sorted(p.name for p in tmp_path.glob("*.yaml"))
    for name in committed:
        assert (tmp_path / name).read_text() == (demo_cluster_dir() / name).read_text(), (
            f"{name} is stale: run python3 examples/demo/generate.py"
        )


@pytest.fixture(scope="module")
def demo_run() -> tuple[PolicySet, Simulation]:
    from policyscheduler.inputs import read_objects
    from policyscheduler.loader import load_policy_set
    from policyscheduler.simulate import simulate
    from policyscheduler.simulate.run import prepare

    read = read_objects([demo_cluster_dir()])
    assert read.errors == [] and read.warnings == []
    loaded = load_policy_set([default_policies_dir()])
    assert loaded.policy_set is not None
    prepared = prepare(read.objects)
    assert prepared.snapshot.warnings == [], "the demo objects should be clean"
    return loaded.policy_set, simulate(loaded.policy_set, read.objects, seed=0, prepared=prepared)


def test_demo_has_the_advertised_shape(demo_run: tuple[PolicySet, Simulation]) -> None:
    _, sim = demo_run
    assert sim.node_count >= 30
    assert len(sim.decisions) >= 180
    assert 0 < len(sim.unplaced) < len(sim.decisions) // 4


def test_every_default_filter_rejects_some_node(demo_run: tuple[PolicySet, Simulation]) -> None:
    policy_set, sim = demo_run
    seen: dict[str, set[str]] = defaultdict(set)
    for d in sim.decisions:
        for verdict in d.verdicts.values():
            assert verdict.error is None, verdict
            if verdict.rule is not None:
                seen[verdict.rule].update(verdict.reasons)
    # node_name can only reject pods that already carry spec.nodeName, which are never pending. The demo
    # cluster has no storage and no DRA pods (its live run, examples/demo/live.py, has no claim binder or
    # provisioner): the volume filters and dynamic_resources are exercised by policies/tests/*.yaml and the
    # storage scenarios of tests/gen/storage.py instead.
    storage = {"volume_restrictions", "node_volume_limits", "volume_binding", "volume_zone", "dynamic_resources"}
    expected = {f.name for f in policy_set.filters} - {"node_name"} - storage
    assert expected <= set(seen), f"filters that never fired: {sorted(expected - set(seen))}"
    assert "Too many pods" in seen["node_resources_fit"]
    assert any("missing required label" in r for r in seen["pod_topology_spread"])
    assert len(seen["inter_pod_affinity"]) == 3


def test_every_default_score_discriminates_somewhere(demo_run: tuple[PolicySet, Simulation]) -> None:
    policy_set, sim = demo_run
    varied = {rule: False for rule in (s.name for s in policy_set.scores)}
    for d in sim.decisions:
        for rule, per_node in d.scores.items():
            if len({s.normalized for s in per_node.values()}) > 1:
                varied[rule] = True
    assert all(varied.values()), varied
