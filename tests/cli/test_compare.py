"""``policyscheduler simulate --compare OLD NEW``: which pods move between two policy sets, and why.

Small clusters built so the answer is known: a zone preference pulls the pods of zone a into zone b (the
cause is that score rule, 0 -> 500 points); a filter on spot nodes pushes their pods elsewhere or leaves
them unschedulable (the cause is the filter and its reason, and the reverse comparison names the filter
that was lifted); a filter that moves one pod makes a second pod move only because the first took its node
(a knock-on). In-process through the CLI's ``main``: no cluster is needed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from policyscheduler.cli import main
from policyscheduler.simulate.compare import Cause, compare, explain_move
from tests.cli.test_simulate_cli import node, pod

PREFER_B = """## Prefer zone b.
score prefer_zone_b weight 5 normalize none
  value if node.labels["topology.kubernetes.io/zone"] == "b" then 100 else 0
"""
NO_SPOT = """## Keep pods off spot nodes.
filter no_spot
  require not ("lifecycle" in node.labels) else "node(s) are spot instances"
"""


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "internal error" not in captured.err, captured.err
    return code, captured.out, captured.err


def _write(folder: Path, name: str, objects: list[dict[str, Any]]) -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump_all(objects))
    return path


def _policy(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


@pytest.fixture
def zones(tmp_path: Path) -> Path:
    """Two empty nodes per zone and eight small pods: the defaults spread them over all four nodes."""
    nodes = [node(n, z, cpu="4") for n, z in (("a1", "a"), ("a2", "a"), ("b1", "b"), ("b2", "b"))]
    return _write(tmp_path, "cluster.yaml", nodes + [pod(f"p{i}") for i in range(8)])


def _compare_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code, out, err = _cli(capsys, "simulate", "-o", "json", "--compare", *argv)
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    return doc


def test_a_set_compared_with_itself_moves_nothing(capsys: pytest.CaptureFixture[str], zones: Path, tmp_path: Path) -> None:
    prefer = _policy(tmp_path, "prefer.policy", PREFER_B)
    for old, new in (("defaults", "defaults"), (str(prefer), str(prefer))):
        doc = _compare_json(capsys, old, new, str(zones))
        assert doc["moved"] == [] and doc["kept"] == doc["pods"] == 8
        assert doc["old"]["policy_digest"] == doc["new"]["policy_digest"]
    # the bundled folder given as a path is the default set itself (same digest, nothing moves)
    from policyscheduler.loader import bundled_defaults_dir

    doc = _compare_json(capsys, "defaults", str(bundled_defaults_dir()), str(zones))
    assert doc["moved"] == [] and doc["old"]["policy_digest"] == doc["new"]["policy_digest"]


def test_each_side_is_the_plain_simulation_of_its_set(capsys: pytest.CaptureFixture[str], zones: Path,
                                                       tmp_path: Path) -> None:
    """Same snapshot, order, seed and cycle: each side places every pod where ``simulate`` alone does."""
    prefer = _policy(tmp_path, "prefer.policy", PREFER_B)
    doc = _compare_json(capsys, "defaults", str(prefer), str(zones), "--seed", "3")
    placements = {}
    for label, extra in (("old", []), ("new", ["--policies", str(prefer)])):
        code, out, err = _cli(capsys, "simulate", str(zones), "-o", "json", "--seed", "3", *extra)
        assert code == 0, err
        sim = json.loads(out)
        assert sim["policy_digest"] == doc[label]["policy_digest"]
        placements[label] = {p["pod"]: p["node"] for p in sim["placements"]}
    moved = {m["pod"]: (m["from"], m["to"]) for m in doc["moved"]}
    for name, old_node in placements["old"].items():
        new_node = placements["new"][name]
        assert (moved.get(name) == (old_node, new_node)) if old_node != new_node else name not in moved


def test_a_preferred_zone_moves_the_pods_of_the_other_zone_and_names_the_score(
        capsys: pytest.CaptureFixture[str], zones: Path, tmp_path: Path) -> None:
    prefer = _policy(tmp_path, "prefer.policy", PREFER_B)
    doc = _compare_json(capsys, "defaults", str(prefer), str(zones))
    from_a = [m for m in doc["moved"] if m["from"].startswith("a")]
    assert len(from_a) == 4  # the defaults put two pods on each node; zone b takes all eight now
    for m in from_a:
        assert m["to"].startswith("b") and not m["knock_on"]
        cause = m["cause"]
        assert cause["kind"] == "score" and cause["rule"] == "prefer_zone_b"
        assert (cause["old_points"], cause["new_points"]) == (0, 500)  # 100 x weight 5, absent from OLD
        assert cause["location"].startswith(f"{prefer}:2:") and cause["node"] == m["from"]
    # pods moved within zone b: the preference does not tell b1 from b2, so only earlier moves explain them
    for m in doc["moved"]:
        if m["from"].startswith("b"):
            assert m["knock_on"] and m["cause"]["kind"] == "knock_on" and m["cause"]["rule"] is None
    assert doc["kept"] + len(doc["moved"]) == doc["pods"] == 8
    assert all(p.startswith("b") for p in [m["to"] for m in doc["moved"]])


@pytest.fixture
def spot(tmp_path: Path) -> Path:
    """Two spot nodes and one regular node; a pod too big for the regular one only fits a spot node."""
    spots = [node("spot-1", "a", cpu="8"), node("spot-2", "b", cpu="8")]
    for n in spots:
        n["metadata"]["labels"]["lifecycle"] = "spot"
    regular = node("regular", "a", cpu="4")
    pods = [pod(f"small-{i}", cpu="500m") for i in range(6)] + [pod("big", cpu="6")]
    return _write(tmp_path, "cluster.yaml", [*spots, regular, *pods])


def test_a_new_filter_names_its_reason_for_every_pod_it_pushes_off(capsys: pytest.CaptureFixture[str], spot: Path,
                                                                   tmp_path: Path) -> None:
    no_spot = _policy(tmp_path, "no-spot.policy", NO_SPOT)
    doc = _compare_json(capsys, "defaults", str(no_spot), str(spot))
    moved = {m["pod"]: m for m in doc["moved"]}
    assert moved["default/big"]["from"].startswith("spot-") and moved["default/big"]["to"] is None
    off_spot = [m for m in doc["moved"] if m["from"] and m["from"].startswith("spot-")]
    assert off_spot and all(m["to"] in (None, "regular") for m in off_spot)
    for m in off_spot:
        cause = m["cause"]
        assert cause["kind"] == "filter" and cause["rule"] == "no_spot" and cause["node"] == m["from"]
        assert cause["reasons"] == ["node(s) are spot instances"]
        assert cause["location"].startswith(f"{no_spot}:2:")
        assert "no_spot" in cause["text"] and "node(s) are spot instances" in cause["text"]
    assert doc["new"]["unschedulable"] >= 1 and doc["old"]["unschedulable"] == 0

    # the other way round the filter is lifted: the big pod finds a spot node, and the cause says which filter
    back = _compare_json(capsys, str(no_spot), "defaults", str(spot))
    big = next(m for m in back["moved"] if m["pod"] == "default/big")
    assert big["from"] is None and big["to"].startswith("spot-")
    assert big["cause"]["kind"] == "filter_lifted" and big["cause"]["rule"] == "no_spot"
    assert big["cause"]["reasons"] == ["node(s) are spot instances"] and big["cause"]["node"] == big["to"]

    code, out, _ = _cli(capsys, "simulate", "--compare", "defaults", str(no_spot), str(spot))
    assert code == 0
    assert "moved by a rule difference" in out and "<unschedulable>" in out
    assert "filter no_spot rejects" in out and "[no-spot.policy:2]" in out


KNOCK = """## Pod first may not use node x.
filter first_not_on_x
  require not (pod.labels["app"] == "first" and node.name == "x") else "node(s) are reserved"
"""
RANK = """## Rank the nodes by their label (x best, then y, then z).
score rank weight 10 normalize none
  value int(node.labels["rank"], default 0)
"""


def test_a_pod_that_moves_only_because_an_earlier_pod_took_its_node_is_a_knock_on(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """OLD: first -> x, second -> y (x is full). NEW forbids x to first: first -> y, so second takes x --
    a move no rule explains: on the cluster NEW left it, OLD would put second on x too."""
    nodes = []
    for name, rank in (("x", "90"), ("y", "60"), ("z", "30")):
        n = node(name, "a", cpu="1")
        n["metadata"]["labels"]["rank"] = rank
        nodes.append(n)
    cluster = _write(tmp_path, "cluster.yaml", [*nodes, pod("first", cpu="1"), pod("second", cpu="1")])
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    _policy(tmp_path / "old", "rank.policy", RANK)
    _policy(tmp_path / "new", "rank.policy", RANK)
    _policy(tmp_path / "new", "knock.policy", KNOCK)
    doc = _compare_json(capsys, str(tmp_path / "old"), str(tmp_path / "new"), str(cluster))
    moved = {m["pod"]: m for m in doc["moved"]}
    assert set(moved) == {"default/first", "default/second"}
    first, second = moved["default/first"], moved["default/second"]
    assert (first["from"], first["to"], first["knock_on"]) == ("x", "y", False)
    assert first["cause"]["kind"] == "filter" and first["cause"]["rule"] == "first_not_on_x"
    assert first["cause"]["reasons"] == ["node(s) are reserved"]
    assert (second["from"], second["to"], second["knock_on"]) == ("y", "x", True)
    assert second["cause"]["kind"] == "knock_on"
    assert second["cause"]["reasons"] == ["Insufficient cpu"]  # y is taken by first now, under both sets
    code, out, _ = _cli(capsys, "simulate", "--compare", str(tmp_path / "old"), str(tmp_path / "new"), str(cluster))
    assert code == 0
    rules_part, knock_part = out.split("moved as a knock-on of earlier moves")
    assert "default/first" in rules_part and "default/second" not in rules_part
    assert "default/second" in knock_part and "y no longer fits here (Insufficient cpu)" in knock_part
    assert "2 moved (1 by a rule difference, 1 as a knock-on of earlier moves)" in out


def test_json_shape(capsys: pytest.CaptureFixture[str], spot: Path, tmp_path: Path) -> None:
    no_spot = _policy(tmp_path, "no-spot.policy", NO_SPOT)
    doc = _compare_json(capsys, "defaults", str(no_spot), str(spot), "--seed", "7")
    assert set(doc) == {"old", "new", "seed", "pods", "kept", "unschedulable_in_both", "moved"}
    for side, source in (("old", "the bundled defaults"), ("new", str(no_spot))):
        assert set(doc[side]) == {"source", "policy_digest", "placed", "unschedulable"}
        assert doc[side]["source"] == source and len(doc[side]["policy_digest"]) == 64
        assert doc[side]["placed"] + doc[side]["unschedulable"] == doc["pods"] == 7
    assert doc["seed"] == 7 and doc["kept"] == doc["pods"] - len(doc["moved"])
    assert doc["moved"]
    for m in doc["moved"]:
        assert set(m) == {"pod", "from", "to", "knock_on", "cause"}
        assert set(m["cause"]) == {"kind", "rule", "location", "node", "reasons", "old_points", "new_points", "text"}
        assert m["cause"]["kind"] in {"score", "filter", "filter_lifted", "knock_on"}
        assert m["knock_on"] == (m["cause"]["kind"] == "knock_on")


def test_fail_on_change_exits_1_only_when_a_pod_moved(capsys: pytest.CaptureFixture[str], spot: Path,
                                                       tmp_path: Path) -> None:
    no_spot = _policy(tmp_path, "no-spot.policy", NO_SPOT)
    code, out, _ = _cli(capsys, "simulate", "--compare", "defaults", str(no_spot), str(spot), "--fail-on-change")
    assert code == 1 and "moved" in out
    code, out, _ = _cli(capsys, "simulate", "--compare", "defaults", "defaults", str(spot), "--fail-on-change")
    assert code == 0 and ", 0 moved" in out
    code, _, _ = _cli(capsys, "simulate", "--compare", "defaults", str(no_spot), str(spot))
    assert code == 0  # a comparison that ran is a success, whatever moved
    code, _, err = _cli(capsys, "simulate", str(spot), "--fail-on-change")
    assert code == 2 and "--fail-on-change needs --compare" in err


def test_bad_sets_are_located_errors_and_exit_2(capsys: pytest.CaptureFixture[str], spot: Path, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir"
    code, out, err = _cli(capsys, "simulate", "--compare", str(missing), "defaults", str(spot))
    assert code == 2 and out == ""
    assert f"{missing}:1:1: error unreadable-file: cannot read {missing}" in err
    assert f"the OLD policy set ({missing}) does not load" in err and "nothing was compared" in err

    broken = _policy(tmp_path, "broken.policy", "filter broken\n  require node.allocatable[\"memory\"] >= 5Xi\n")
    code, out, err = _cli(capsys, "simulate", "--compare", "defaults", str(broken), str(spot))
    assert code == 2 and out == ""
    assert f"{broken}:2:" in err and "bad-quantity" in err and "the NEW policy set" in err

    # both sides are checked before giving up, so one run shows every problem
    code, _, err = _cli(capsys, "simulate", "--compare", str(missing), str(broken), str(spot))
    assert code == 2 and "the OLD policy set" in err and "the NEW policy set" in err

    code, _, err = _cli(capsys, "simulate", "--compare", "defaults", "defaults", str(tmp_path / "no-cluster.yaml"))
    assert code == 2 and "nothing was compared" in err

    code, _, err = _cli(capsys, "simulate", "--compare", "defaults", "defaults", "--policies", str(broken), str(spot))
    assert code == 2 and "drop --policies" in err


def _config(path: Path, profiles: list[dict[str, Any]]) -> Path:
    path.write_text(yaml.safe_dump({"apiVersion": "policyscheduler.io/v1alpha1",
                                    "kind": "PolicySchedulerConfiguration", "profiles": profiles}))
    return path


def test_a_configuration_file_is_a_policy_source(capsys: pytest.CaptureFixture[str], zones: Path,
                                                 tmp_path: Path) -> None:
    prefer = _policy(tmp_path, "prefer.policy", PREFER_B)
    inline = {"schedulerName": "policy-scheduler", "policies": [{"name": "prefer.policy", "text": PREFER_B}]}
    cfg = _config(tmp_path / "scheduler.yaml", [inline])
    by_file = _compare_json(capsys, "defaults", str(prefer), str(zones))
    by_config = _compare_json(capsys, "defaults", str(cfg), str(zones))
    assert by_config["new"]["policy_digest"] == by_file["new"]["policy_digest"]
    assert by_config["new"]["source"] == f"{cfg} (profile policy-scheduler)"
    def without_location(moves: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**m, "cause": {**m["cause"], "location": None}} for m in moves]

    assert without_location(by_config["moved"]) == without_location(by_file["moved"])
    assert by_config["moved"][0]["cause"]["location"].startswith("prefer.policy:2:")  # the inline file's name
    code, out, err = _cli(capsys, "simulate", "-o", "json", "--config", str(cfg), str(zones))
    assert code == 0, err
    assert json.loads(out)["policy_digest"] == by_config["new"]["policy_digest"]  # simulate --config's set

    # several profiles: --scheduler-name chooses (and names the pods scheduled)
    two = _config(tmp_path / "two.yaml", [inline, {"schedulerName": "other", "statements": ["disable score image_locality"]}])
    code, _, err = _cli(capsys, "simulate", "--compare", "defaults", str(two), str(zones))
    assert code == 2 and "several profiles; choose one with --scheduler-name (profiles: policy-scheduler, other)" in err
    doc = _compare_json(capsys, str(two), str(prefer), str(zones), "--scheduler-name", "policy-scheduler")
    assert doc["moved"] == [] and doc["old"]["source"] == f"{two} (profile policy-scheduler)"
    code, _, err = _cli(capsys, "simulate", "--compare", str(two), "defaults", str(zones), "--scheduler-name", "nope")
    assert code == 2 and "no profile has schedulerName 'nope'" in err

    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: policyscheduler.io/v1alpha1\nkind: PolicySchedulerConfiguration\nprofiles:\n- schedulerName: x\n  colour: red\n")
    code, _, err = _cli(capsys, "simulate", "--compare", str(bad), "defaults", str(zones))
    assert code == 2 and f"{bad}:5:3" in err and "colour" in err

    with_cm = _config(tmp_path / "cm.yaml", [{"policies": [{"configMap": "kube-system/policies"}]}])
    code, _, err = _cli(capsys, "simulate", "--compare", str(with_cm), "defaults", str(zones))
    assert code == 2 and "ConfigMap kube-system/policies" in err and "offline" in err


def test_explain_move_on_handmade_decisions() -> None:
    """The order of the tests on one state, without a cluster: a tie under both sets is a knock-on."""
    from policyscheduler.evaluation import FEASIBLE, Decision, RuleScore
    from policyscheduler.loader import load_layered

    policy_set = load_layered([]).policy_set
    assert policy_set is not None

    def decision(top: list[str], totals: dict[str, int]) -> Decision:
        scores = {"taint_toleration": {n: RuleScore(0, 0, t) for n, t in totals.items()}}
        return Decision("default/p", top[0], dict.fromkeys(totals, FEASIBLE), list(totals), scores, totals, top,
                        max(totals.values()), None, "d")

    tied = decision(["n1", "n2"], {"n1": 10, "n2": 10})
    cause: Cause = explain_move("n1", "n2", tied, tied, policy_set, policy_set)
    assert cause.kind == "knock_on" and "tie" in cause.text
    # NEW breaks OLD's tie: the rule whose points changed is named
    new = decision(["n2"], {"n1": 10, "n2": 30})
    cause = explain_move("n1", "n2", new, tied, policy_set, policy_set)
    assert cause.kind == "score" and cause.rule == "taint_toleration"
    assert (cause.old_points, cause.new_points) == (0, 20)


def test_the_library_comparison_matches_the_cli(zones: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from policyscheduler.inputs import read_objects
    from policyscheduler.loader import load_layered

    prefer = _policy(tmp_path, "prefer.policy", PREFER_B)
    old, new = load_layered([]).policy_set, load_layered([prefer]).policy_set
    assert old is not None and new is not None
    result = compare(old, new, read_objects([zones]).objects, seed=0, engine="reference")
    doc = _compare_json(capsys, "defaults", str(prefer), str(zones), "--engine", "reference")
    assert [m.to_json() for m in result.moves] == doc["moved"]
    assert result.kept == doc["kept"]


def test_progress_of_both_runs_is_drawn_on_a_tty_and_erased(zones: Path, tmp_path: Path) -> None:
    """On the bundled demo (200 pods: the progress line is drawn every 10th attempt)."""
    import io

    from policyscheduler.cli import simulate as simulate_cli

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    parser = argparse.ArgumentParser()
    simulate_cli.add_arguments(parser)
    prefer = _policy(tmp_path, "prefer.policy", PREFER_B)
    args = parser.parse_args(["--compare", "defaults", str(prefer), "-o", "json"])
    out, err = io.StringIO(), Tty()
    assert simulate_cli.run(args, stdout=out, stderr=err) == 0
    drawn = err.getvalue()
    assert "\rsimulating OLD: " in drawn and "\rsimulating NEW: " in drawn
    assert drawn.endswith("\r\033[K")
    assert json.loads(out.getvalue())["pods"] == 200
    out, plain = io.StringIO(), io.StringIO()
    assert simulate_cli.run(parser.parse_args([str(zones), "--compare", "defaults", str(prefer)]), stdout=out,
                            stderr=plain) == 0
    assert plain.getvalue() == ""  # not a terminal: nothing drawn


def test_score_causes_read_from_the_changed_rules_only_equal_those_read_from_every_rule() -> None:
    """The comparison reads score points from decisions of the differing score rules only (same filters):
    on one state, for every demo pod the two sets place differently, the cause is the one the full
    decisions give."""
    import random

    from policyscheduler.evaluation import Decision, make_evaluator
    from policyscheduler.inputs import read_objects
    from policyscheduler.loader import load_layered
    from policyscheduler.simulate.compare import _changed_scores, _with_scores
    from policyscheduler.simulate.defaults import demo_cluster_dir
    from policyscheduler.simulate.run import prepare

    repo = Path(__file__).resolve().parents[2]
    old_set = load_layered([]).policy_set
    new_set = load_layered([repo / "examples" / "policies" / "tune-defaults.policy"]).policy_set
    assert old_set is not None and new_set is not None
    changed = _changed_scores(new_set, old_set)
    assert changed == {"taint_toleration", "image_locality"}  # a new weight, a disabled rule
    new_scores, old_scores = _with_scores(new_set, changed), _with_scores(old_set, changed)
    prepared = prepare(read_objects([demo_cluster_dir()]).objects)
    engine = make_evaluator("vector")
    checked = 0
    for pending in prepared.queue:
        old = engine.evaluate(old_set, prepared.snapshot, pending, rng=random.Random(0))
        new = engine.evaluate(new_set, prepared.snapshot, pending, rng=random.Random(0))
        if old.node == new.node or new.node is None:
            continue
        reduced = (engine.evaluate(new_scores, prepared.snapshot, pending, rng=random.Random(0)),
                   engine.evaluate(old_scores, prepared.snapshot, pending, rng=random.Random(0)))
        full = explain_move(old.node, new.node, new, old, new_set, old_set)

        def points(r: tuple[Decision, Decision] = reduced) -> tuple[Decision, Decision]:
            return r

        assert explain_move(old.node, new.node, new, old, new_set, old_set, points) == full
        checked += full.kind == "score"
    assert checked >= 5
