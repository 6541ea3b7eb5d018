"""The topology examples (examples/policies/rack-soft-spread, rack-hard-spread, zone-quota): each lints
clean on top of the bundled defaults, and `simulate` on a small snapshot shows its intended effect --
replicas spread over racks, rack skew never above 1 under the hard rule, the zone quota respected --
with the exact FailedScheduling message when a pod cannot fit, in both engines."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from policyscheduler.cli import lint
from tests.examples.helpers import EXAMPLES, messages, node, placements, pod, simulate

SOFT = EXAMPLES / "rack-soft-spread.policy"
HARD = EXAMPLES / "rack-hard-spread.policy"
QUOTA = EXAMPLES / "zone-quota.policy"
ZONE = "topology.kubernetes.io/zone"

engines = pytest.mark.parametrize("engine", ["reference", "vector"])


def run(tmp_path: Path, objects: list[dict[str, Any]], engine: str, *policies: Path) -> tuple[dict[str, Any], str]:
    """simulate with the defaults plus ``policies``; (JSON document, stderr); the run must succeed."""
    status, doc, err = simulate(tmp_path, objects, *policies, extra_args=("--engine", engine))
    assert status == 0 and doc is not None, err
    return doc, err


def racks_of(doc: dict[str, Any], rack: dict[str, str | None]) -> Counter[str | None]:
    """How many of the placed pods each rack got."""
    return Counter(rack[n] for n in placements(doc).values() if n is not None)


@pytest.mark.parametrize("example", [SOFT, HARD, QUOTA], ids=lambda p: p.name)
def test_topology_example_lints_clean(example: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert lint.main([str(example)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ok: 1 rule in 1 file + ") and "warning" not in out, out


# -- soft spread ----------------------------------------------------------------------------------------

RACK = {"a1": "r1", "a2": "r1", "b1": "r2", "c1": "r3", "c2": "r3", "c3": "r3", "norack": None}


def rack_nodes(*names: str) -> list[dict[str, Any]]:
    return [node(n, {"rack": rack} if (rack := RACK[n]) else {}) for n in names]


@engines
def test_soft_spread_puts_replicas_evenly_over_racks(tmp_path: Path, engine: str) -> None:
    """Six replicas over racks of 2, 1 and 3 nodes: two per rack, the one-node rack taking two; the
    defaults alone spread per node instead (one per node: the three-node rack gets three)."""
    objects = [*rack_nodes("a1", "a2", "b1", "c1", "c2", "c3"),
               *(pod(f"web-{i}", labels={"app": "web"}) for i in range(6))]
    with_rule, _ = run(tmp_path, objects, engine, SOFT)
    assert racks_of(with_rule, RACK) == {"r1": 2, "r2": 2, "r3": 2}
    assert Counter(placements(with_rule).values())["b1"] == 2
    defaults_only, _ = run(tmp_path, objects, engine)
    assert sorted(Counter(placements(defaults_only).values()).values()) == [1] * 6
    assert racks_of(defaults_only, RACK) == {"r1": 2, "r2": 1, "r3": 3}


@engines
def test_soft_spread_counts_only_the_app_and_is_only_a_preference(tmp_path: Path, engine: str) -> None:
    """Running pods of another app, or of the app in another namespace, do not count; a rack running the
    app is still used when the emptier rack has no room (a preference, not a filter)."""
    other_ns = pod("web-elsewhere", labels={"app": "web"}, on="a1")
    other_ns["metadata"]["namespace"] = "other"
    objects = [*rack_nodes("a1", "b1"),
               pod("db-0", labels={"app": "db"}, on="a1"), pod("db-1", labels={"app": "db"}, on="a1"), other_ns,
               pod("web-0", labels={"app": "web"}, on="b1"), pod("web-1", labels={"app": "web"})]
    doc, _ = run(tmp_path, objects, engine, SOFT)
    assert placements(doc) == {"web-1": "a1"}  # the busier node, but in the rack without web
    assert placements(run(tmp_path, objects, engine)[0]) == {"web-1": "b1"}  # the defaults: the emptier node
    full = [node("a1", {"rack": "r1"}, cpu="1"), node("b1", {"rack": "r2"}),
            pod("busy", on="a1", cpu="1"), pod("web-0", labels={"app": "web"}, on="b1"),
            pod("web-1", labels={"app": "web"}, cpu="500m")]
    doc, _ = run(tmp_path, full, engine, SOFT)
    assert placements(doc) == {"web-1": "b1"}


# -- hard spread ----------------------------------------------------------------------------------------


def skews(doc: dict[str, Any], rack: dict[str, str | None], racks: tuple[str, ...]) -> list[int]:
    """After each placement, in queue order, max - min of the app's pods over ``racks``."""
    counts = dict.fromkeys(racks, 0)
    out = []
    for placement in doc["placements"]:
        if placement["node"] is not None:
            where = rack[placement["node"]]
            assert where is not None, placement
            counts[where] += 1
            out.append(max(counts.values()) - min(counts.values()))
    return out


@engines
def test_hard_spread_keeps_rack_skew_at_most_one_and_says_why_a_pod_cannot_fit(tmp_path: Path, engine: str) -> None:
    """Racks r1 (two big nodes) and r2 (one node with room for two pods): r1 may run at most one more
    replica than r2, so the sixth replica fits nowhere, with the exact FailedScheduling message."""
    rack = {"a1": "r1", "a2": "r1", "b1": "r2", "norack": None}
    objects = [node("a1", {"rack": "r1"}), node("a2", {"rack": "r1"}), node("b1", {"rack": "r2"}, cpu="1"),
               node("norack"), *(pod(f"web-{i}", labels={"app": "web"}, cpu="500m") for i in range(6))]
    doc, _ = run(tmp_path, objects, engine, HARD)
    assert all(s <= 1 for s in skews(doc, rack, ("r1", "r2")))
    assert racks_of(doc, rack) == {"r1": 3, "r2": 2}
    unplaced = [p for p, n in placements(doc).items() if n is None]
    assert len(unplaced) == 1
    assert messages(doc)[unplaced[0]] == (
        "0/4 nodes are available: 1 Insufficient cpu, 1 node(s) have no rack label, "
        "2 node(s) would break the rack spread of app web (maxSkew 1). preemption: 0/4 nodes are available: 4 No preemption victims found for incoming pod.")
    # the defaults alone pile the replicas on the big nodes of r1 (and use the rack-less node)
    defaults_only, _ = run(tmp_path, objects, engine)
    assert max(skews(defaults_only, rack | {"norack": "r1"}, ("r1", "r2"))) > 1
    assert None not in placements(defaults_only).values()


@engines
def test_hard_spread_honours_the_pods_node_selector_for_the_minimum(tmp_path: Path, engine: str) -> None:
    """A rack the pod may not use (nodeSelector) does not hold the minimum at 0: pods pinned to disk=ssd
    racks r1 and r2 spread over those two, and an unrelated empty rack r3 does not block them."""
    objects = [node("a1", {"rack": "r1", "disk": "ssd"}), node("b1", {"rack": "r2", "disk": "ssd"}),
               node("c1", {"rack": "r3"})]
    for i in range(4):
        p = pod(f"web-{i}", labels={"app": "web"})
        p["spec"]["nodeSelector"] = {"disk": "ssd"}
        objects.append(p)
    doc, _ = run(tmp_path, objects, engine, HARD)
    assert Counter(placements(doc).values()) == {"a1": 2, "b1": 2}


@engines
def test_hard_spread_places_like_pod_topology_spread(tmp_path: Path, engine: str) -> None:
    """The same workload, once with a DoNotSchedule rack constraint on each pod (the default rule) and
    once with the example file instead: the same placements, pod for pod, in both engines."""
    def workload(constraint: bool) -> list[dict[str, Any]]:
        objects = [node("a1", {"rack": "r1"}), node("a2", {"rack": "r1"}, cpu="2"), node("b1", {"rack": "r2"}, cpu="1"),
                   node("c1", {"rack": "r3"}, cpu="3"), pod("old", labels={"app": "web"}, on="a1", cpu="500m")]
        for i in range(9):
            p = pod(f"web-{i}", labels={"app": "web"}, cpu="500m")
            if constraint:
                p["spec"]["topologySpreadConstraints"] = [{
                    "maxSkew": 1, "topologyKey": "rack", "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "web"}}}]
            objects.append(p)
        return objects

    builtin, _ = run(tmp_path, workload(True), engine)
    primitives, _ = run(tmp_path, workload(False), engine, HARD)
    assert placements(primitives) == placements(builtin)
    assert None in placements(builtin).values()  # b1 fills up, so the spread stops some replicas
    failed = [p for p, n in placements(builtin).items() if n is None]
    assert messages(builtin)[failed[0]] == (
        "0/4 nodes are available: 1 Insufficient cpu, 3 node(s) didn't match pod topology spread constraints."
        " preemption: 0/4 nodes are available: 4 No preemption victims found for incoming pod.")
    assert messages(primitives)[failed[0]] == (
        "0/4 nodes are available: 1 Insufficient cpu, 3 node(s) would break the rack spread of app web (maxSkew 1)."
        " preemption: 0/4 nodes are available: 4 No preemption victims found for incoming pod.")


# -- zone quota -----------------------------------------------------------------------------------------


def team_pod(name: str, team: str, *, on: str | None = None, namespace: str = "default") -> dict[str, Any]:
    p = pod(name, labels={"team": team}, on=on)
    p["metadata"]["namespace"] = namespace
    return p


@engines
def test_zone_quota_caps_a_team_per_zone_across_namespaces(tmp_path: Path, engine: str) -> None:
    """Zone z1 already runs two blue pods (in another namespace), z2 one: of four new blue pods, one fits
    z1 and two fit z2; the fourth fits nowhere and the message says how many the zones run. A red pod
    and a pod without a team are not limited."""
    objects = [node("a1", {ZONE: "z1"}), node("a2", {ZONE: "z1"}), node("b1", {ZONE: "z2"}),
               team_pod("blue-old-0", "blue", on="a1", namespace="tools"),
               team_pod("blue-old-1", "blue", on="a2", namespace="tools"),
               team_pod("blue-old-2", "blue", on="b1"),
               *(team_pod(f"blue-{i}", "blue") for i in range(4)),
               *(team_pod(f"red-{i}", "red") for i in range(4)), pod("plain")]
    doc, _ = run(tmp_path, objects, engine, QUOTA)
    zone = {"a1": "z1", "a2": "z1", "b1": "z2"}
    placed = placements(doc)
    blue = Counter(zone[n] for p, n in placed.items() if p.startswith("blue") and n is not None)
    assert blue == {"z1": 1, "z2": 2}
    assert [p for p, n in placed.items() if n is None] == ["blue-3"]
    assert messages(doc)["blue-3"] == (
        "0/3 nodes are available: 3 node(s) are in a zone at its quota of 3 pods of team blue."
        " preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.")
    assert all(placed[f"red-{i}"] is not None for i in range(4)) and placed["plain"] is not None
    # the defaults alone place every blue pod
    assert None not in placements(run(tmp_path, objects, engine)[0]).values()


@engines
def test_zone_quota_over_the_quota_already_and_a_node_without_zone(tmp_path: Path, engine: str) -> None:
    """A zone already over the quota (4 running: e.g. pods placed before the rule) rejects like a zone at
    it; a node without a zone label is in no zone, so the quota does not limit it."""
    objects = [node("a1", {ZONE: "z1"}), node("b1", {ZONE: "z2"}),
               *(team_pod(f"old-{i}", "blue", on="a1") for i in range(4)),
               *(team_pod(f"old-b{i}", "blue", on="b1") for i in range(3)),
               team_pod("new", "blue")]
    doc, _ = run(tmp_path, objects, engine, QUOTA)
    assert messages(doc)["new"] == ("0/2 nodes are available: 2 node(s) are in a zone at its quota of 3 pods of team blue."
                                    " preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.")
    doc, _ = run(tmp_path, [*objects, node("edge")], engine, QUOTA)
    assert placements(doc) == {"new": "edge"}
