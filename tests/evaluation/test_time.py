"""Time in the language: ``timestamp`` / ``duration`` values, ``now``, their builtins, on both backends.

* the text forms (policyscheduler/times.py) against values computed by hand (Go's formats);
* the checker: what type-checks, what is a ``type-mismatch`` or ``bad-conversion``, with the hint;
* the differential test: random clusters (tests.gen) whose nodes carry random times -- RFC 3339 and
  label-safe labels, annotations that do not parse, creation timestamps -- under a time-reading policy
  set, decided alike by the reference and the vector backend (the array path forced), at several ``now``;
  the rules lower to whole-cluster operations (no fallback), and ``now`` is never reused across pods;
* ``now`` in the commands: fixed and printed by ``simulate`` / ``explain`` / ``test``, ``--now`` and a
  test file's ``now:`` change it.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from policyscheduler.cli import main
from policyscheduler.cycle.events import facets_of_reads
from policyscheduler.evaluation import diff_decisions, make_evaluator
from policyscheduler.loader import load_policy_texts
from policyscheduler.state import ClusterSnapshot
from policyscheduler.times import (
    DEFAULT_NOW,
    SECOND,
    format_duration,
    format_timestamp,
    parse_duration,
    parse_timestamp,
)
from tests.gen import random_cluster, random_pod

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "policies"
T0 = 1_796_385_600 * SECOND
"""2026-12-04T12:00:00Z, the instant the random node times are drawn around."""


# -- text forms ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "iso"), [
    ("2026-12-04T10:15:00Z", "2026-12-04T10:15:00Z"),
    ("2026-12-04t10:15:00z", "2026-12-04T10:15:00Z"),
    ("2026-12-04T10:15:00.250+01:00", "2026-12-04T09:15:00.25Z"),
    ("2026-12-04T10:15:00.000000001-00:30", "2026-12-04T10:45:00.000000001Z"),
    ("20261204T101500Z", "2026-12-04T10:15:00Z"),
    ("1970-01-01T00:00:00Z", "1970-01-01T00:00:00Z"),
    ("1969-12-31T23:59:59.5Z", "1969-12-31T23:59:59.5Z"),
    ("2024-02-29T00:00:00Z", "2024-02-29T00:00:00Z"),
])
def test_timestamps_parse_and_format(text: str, iso: str) -> None:
    value = parse_timestamp(text)
    assert value is not None and format_timestamp(value) == iso
    assert parse_timestamp(iso) == value


def test_timestamp_values_are_epoch_nanoseconds() -> None:
    assert parse_timestamp("2026-12-04T12:00:00Z") == T0
    assert parse_timestamp("1970-01-01T00:00:01Z") == SECOND
    assert parse_timestamp("1970-01-01T01:00:00+01:00") == 0
    assert parse_timestamp("2026-12-04T10:15:00Z") == 1_796_379_300 * SECOND


@pytest.mark.parametrize("text", [
    "", "2026-12-04", "2026-12-04 10:15:00Z", "2026-12-04T10:15:00", "2026-02-30T00:00:00Z", "2026-12-04T24:00:00Z",
    "2026-12-04T10:15:00.Z", "2026-12-04T10:15:00.1234567890Z", "2026-12-04T10:15:00+24:00", "20261204T1015Z",
    "20261204T101500", "1600-01-01T00:00:00Z", "2300-01-01T00:00:00Z", "last tuesday", "1796379300",
])
def test_what_is_not_a_timestamp(text: str) -> None:
    assert parse_timestamp(text) is None


@pytest.mark.parametrize(("text", "ns", "go"), [
    ("10m", 600 * SECOND, "10m0s"),
    ("1h30m", 5400 * SECOND, "1h30m0s"),
    ("1.5s", 1_500_000_000, "1.5s"),
    ("-90s", -90 * SECOND, "-1m30s"),
    ("+5m", 300 * SECOND, "5m0s"),
    ("0", 0, "0s"),
    ("500ms", 500_000_000, "500ms"),
    ("2us", 2_000, "2µs"),
    ("2µs", 2_000, "2µs"),
    ("7ns", 7, "7ns"),
    (".5h", 1800 * SECOND, "30m0s"),
    ("1h0.000000001s", 3600 * SECOND + 1, "1h0m0.000000001s"),
    ("168h", 168 * 3600 * SECOND, "168h0m0s"),
])
def test_durations_parse_and_format_like_go(text: str, ns: int, go: str) -> None:
    assert parse_duration(text) == ns
    assert format_duration(ns) == go
    assert parse_duration(go) == ns


@pytest.mark.parametrize("text", ["", "1", "10", "m", "1d", "10 m", "1h-5m", "--1s", ".s", "3000000h"])
def test_what_is_not_a_duration(text: str) -> None:
    assert parse_duration(text) is None


# -- the checker -----------------------------------------------------------------------------------------


def _diagnostics(body: str) -> list[str]:
    loaded = load_policy_texts([("t.policy", f"## t\nfilter t\n  reason \"r\"\n{body}\n")])
    return [f"{d.code}: {d.message}" for d in loaded.diagnostics]


@pytest.mark.parametrize("body", [
    '  require now - node.created < duration("10m")',
    '  require now > timestamp(node.labels["born"], default node.created) + duration("1h") * 2',
    '  require seconds(now - pod.created) / 60 > 5 and -duration("1s") < duration("0")',
    '  require max(now, node.created) == now and min(duration("1m"), duration("1h") / 2) > duration("0")',
    '  require max(p in node.pods: p.created, default now) <= now and min(p in node.pods: now - p.created, default duration("1s")) > duration("0")',
    '  require str(now) != str(now - now) and duration(node.annotations["ttl"], default duration("5m")) > duration("0")',
    '  require now - duration("5m") + duration("5m") == now',
])
def test_time_expressions_type_check(body: str) -> None:
    assert _diagnostics(body) == []


@pytest.mark.parametrize(("body", "code", "fragment"), [
    ("  require now > 5", "type-mismatch", "got timestamp and int; timestamp - timestamp is a duration"),
    ("  require now - node.created > 600", "type-mismatch", "seconds(d) converts a duration"),
    ("  require now == 0", "type-mismatch", "cannot compare timestamp with int"),
    ("  require now + now > now", "type-mismatch", "'+' is not defined for timestamp and timestamp"),
    ('  require duration("1m") * duration("1m") > duration("0")', "type-mismatch", "'*' is not defined"),
    ('  require now < duration("1m")', "type-mismatch", "got timestamp and duration"),
    ("  require seconds(5) > 0", "type-mismatch", "'seconds' needs a duration, got int"),
    ("  require seconds(now) > 0", "type-mismatch", "a timestamp minus a timestamp is a duration"),
    ('  require timestamp("yesterday") < now', "bad-conversion", "is not an RFC 3339 timestamp"),
    ('  require duration("10 minutes") > duration("0")', "bad-conversion", "is not a duration"),
    ('  require timestamp(node.labels["t"], default 0) < now', "type-mismatch", "must be a timestamp, got int"),
    ("  require timestamp(5) < now", "type-mismatch", "'timestamp' needs a string, got int"),
    ("  require -now < now", "type-mismatch", "unary '-' needs a number or a duration"),
    ("  let now = 5\n  require now > 1", "shadowed-name", "'now' is already bound"),
])
def test_time_type_errors(body: str, code: str, fragment: str) -> None:
    found = _diagnostics(body)
    assert any(d.startswith(code) and fragment in d for d in found), found


def test_rules_reading_times_requeue_on_the_right_events() -> None:
    loaded = load_policy_texts([("t.policy", '## t\nfilter t\n  reason "r"\n  require now - node.created > '
                                 'duration("1m")\n')])
    assert loaded.policy_set is not None
    reads = loaded.policy_set.analyses["filter t"].reads
    assert "Node.created" in reads
    assert facets_of_reads(reads) == frozenset()  # a creation time never changes; now is flushed periodically


# -- both backends ---------------------------------------------------------------------------------------

TIME_POLICIES = """
## Nodes provisioned (label born: label-safe or RFC 3339) within the last 30 hours, else by creation time.
filter recent_nodes
  reason "node(s) are too old"
  applies when pod.labels["tier"] != "db"
  let born = timestamp(node.labels["born"], default node.created)
  require now - born < duration("30h")
    else "node(s) were provisioned at " + str(born) + ", " + str(now - born) + " ago"

## Nodes under maintenance from annotation drain-at (RFC 3339) minus a lead time from annotation lead.
filter before_drain
  reason "node(s) are about to be drained"
  let lead = duration(node.annotations["lead"], default duration("1h"))
  require not ("drain-at" in node.annotations)
    or now < timestamp(node.annotations["drain-at"], default now + lead + lead) - lead

## Strict: a node whose born label does not parse fails at run time (no default) for app=strict pods.
filter strict_born
  reason "node(s) have no birth date"
  applies when pod.labels["app"] == "strict"
  require timestamp(node.labels["born"]) <= now

## Younger is better: minutes of age, clipped to 0..100, with durations scaled and compared.
score young weight 2 normalize none
  let age = max(now - max(node.created, timestamp(node.labels["born"], default node.created)), duration("0"))
  value if age * 2 > duration("200m") then 0 else 100 - seconds(age / 2) / 60 * 1

## The node whose newest pod started most recently wins (aggregates of timestamps, pods' creation times).
score busy_lately weight 1 normalize scale
  let last = max(p in node.pods: p.created, default node.created)
  value if last > now then 0 else max(0, 1000 - seconds(now - last) / 600)

## Reverse: the older the node the fewer points, in seconds (huge values for undated nodes).
score old_last weight 1 normalize reverse
  value seconds(max(now - node.created, duration("0")))
"""

_SHAPES = ("label-safe", "rfc3339", "offset", "junk", "none")


def _date_nodes(objects: list[dict[str, Any]], rng: random.Random) -> list[dict[str, Any]]:
    """The cluster with random times on its nodes (hours around T0, in every text form, some broken)."""
    for obj in objects:
        if obj.get("kind") != "Node":
            continue
        meta = obj.setdefault("metadata", {})
        at = T0 + rng.randint(-80, 10) * 1800 * SECOND + rng.choice((0, 1, 999_999_999))
        shape = rng.choice(_SHAPES)
        labels = meta.setdefault("labels", {})
        if shape == "label-safe":
            labels["born"] = format_timestamp(at - at % SECOND).replace("-", "").replace(":", "")
        elif shape == "rfc3339":
            labels["born"] = format_timestamp(at)
        elif shape == "offset":
            labels["born"] = format_timestamp(at - at % SECOND)[:-1] + "+00:00"
        elif shape == "junk":
            labels["born"] = rng.choice(("soon", "2026-13-01T00:00:00Z", ""))
        if rng.random() < 0.7:
            meta["creationTimestamp"] = format_timestamp(at - rng.randint(0, 50) * 3600 * SECOND - at % SECOND)
        annotations = meta.setdefault("annotations", {})
        for pod in objects:
            if pod.get("kind") == "Pod" and rng.random() < 0.3:
                pod["metadata"]["creationTimestamp"] = format_timestamp(T0 - rng.randint(-2, 60) * 1800 * SECOND)
        if rng.random() < 0.5:
            annotations["drain-at"] = rng.choice((format_timestamp(T0 + rng.randint(-5, 5) * 1800 * SECOND), "never"))
        if rng.random() < 0.4:
            annotations["lead"] = rng.choice(("30m", "2h", "90s", "1.5h", "forever"))
    return objects


@pytest.fixture
def array_path() -> Any:
    """The vector backend takes its array path on these small clusters (see test_backends_agree.py)."""
    from policyscheduler.evaluation.vector import backend

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(backend, "SMALL", 0)
        yield


def test_time_rules_lower_to_array_operations() -> None:
    from policyscheduler.evaluation.vector import lowering_report

    loaded = load_policy_texts([("time.policy", TIME_POLICIES)])
    assert loaded.policy_set is not None, loaded.diagnostics
    report = lowering_report(loaded.policy_set)
    for rule in ("filter recent_nodes", "filter before_drain", "filter strict_born", "score young",
                 "score busy_lately", "score old_last"):
        assert report[rule][0] == "vector", (rule, report[rule])


def test_backends_agree_on_time_rules(array_path: None) -> None:
    loaded = load_policy_texts([("time.policy", TIME_POLICIES)])
    assert loaded.policy_set is not None, loaded.diagnostics
    policies = loaded.policy_set
    reference, vector = make_evaluator("reference"), make_evaluator("vector")  # one each: caches live on
    placed = unplaced = errors = 0
    reasons: set[str] = set()
    for seed in range(150):
        rng = random.Random(seed)
        objects = _date_nodes(random_cluster(rng), rng)
        names = [o["metadata"]["name"] for o in objects if o.get("kind") == "Node"]
        snapshots = [ClusterSnapshot.from_objects(objects) for _ in range(2)]
        for i in range(3):
            pod = random_pod(rng, names, name=f"pending{i}")
            if rng.random() < 0.2:
                pod["metadata"].setdefault("labels", {})["app"] = "strict"
            now = T0 + rng.randint(-20, 20) * 1800 * SECOND
            for snap in snapshots:
                snap.now_ns = now
            left = reference.evaluate(policies, snapshots[0], pod, rng=random.Random(seed))
            right = vector.evaluate(policies, snapshots[1], pod, rng=random.Random(seed))
            assert not diff_decisions(left, right), (seed, i, diff_decisions(left, right)[:5])
            placed += left.node is not None
            unplaced += left.node is None
            errors += len(left.score_errors) + sum(
                1 for v in left.verdicts.values() if any("timestamp(" in r for r in v.reasons))
            reasons |= {r.split(" ")[1] for v in left.verdicts.values() for r in v.reasons if r.startswith("node(s) ")}
    assert placed > 50 and unplaced > 20, (placed, unplaced)
    assert errors > 0  # the runtime failures of timestamp() without default were compared too
    assert {"were", "are"} <= reasons, reasons  # both filters' reasons occurred


def test_now_is_read_afresh_for_every_pod(array_path: None) -> None:
    """Two pods alike, two decision times: the second decision is not the first one reused."""
    loaded = load_policy_texts([("time.policy", TIME_POLICIES)])
    assert loaded.policy_set is not None
    rng = random.Random(7)
    objects = _date_nodes(random_cluster(rng), rng)
    for obj in objects:
        if obj.get("kind") == "Node":
            obj["metadata"]["labels"]["born"] = format_timestamp(T0)
    pod = random_pod(rng, [], name="same")
    pod["metadata"]["labels"]["tier"] = "web"
    pod["metadata"]["labels"]["app"] = "web"
    vector = make_evaluator("vector")
    snapshot = ClusterSnapshot.from_objects(objects)
    feasible = []
    for hours in (1, 40, 1):
        snapshot.now_ns = T0 + hours * 3600 * SECOND
        decision = vector.evaluate(loaded.policy_set, snapshot, pod, rng=random.Random(0))
        reference = make_evaluator("reference").evaluate(loaded.policy_set, snapshot, pod, rng=random.Random(0))
        assert not diff_decisions(reference, decision)
        feasible.append(sum(v.feasible for v in decision.verdicts.values()))
    assert feasible[1] == 0 < feasible[0] == feasible[2]  # 40 hours on, every node is too old


def test_new_examples_pass_on_the_array_path(array_path: None, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("zone-cap", "prefer-newest-nodes", "no-evict-young-pods"):
        assert main(["test", str(EXAMPLES / "tests" / name), "--engine", "vector", "-o", "json"]) == 0, name
        doc = json.loads(capsys.readouterr().out)
        assert doc["failed"] == doc["errors"] == 0 and doc["passed"] >= 3


# -- now in the commands ---------------------------------------------------------------------------------


def test_simulate_prints_the_fixed_now_and_takes_another(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate"]) == 0
    assert f"now {format_timestamp(DEFAULT_NOW)})" in capsys.readouterr().out.splitlines()[-1]
    assert main(["simulate", "--now", "20261204T101500Z", "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["now"] == "2026-12-04T10:15:00Z"
    assert main(["simulate", "--now", "tomorrow"]) == 2
    assert "'tomorrow' is not an RFC 3339 time" in capsys.readouterr().err


def _write_suite(tmp_path: Path, now_line: str) -> Path:
    (tmp_path / "young.policy").write_text(
        "## Nodes created within the hour.\nfilter young\n  reason \"node(s) are older than an hour\"\n"
        "  require now - node.created < duration(\"1h\")\n")
    (tmp_path / "young.test.yaml").write_text(f"""policies: [young.policy]
{now_line}
objects:
  - {{apiVersion: v1, kind: Node, metadata: {{name: old, creationTimestamp: "2026-12-04T10:00:00Z"}},
     status: {{allocatable: {{cpu: "1", memory: 1Gi, pods: "10"}}}}}}
  - {{apiVersion: v1, kind: Node, metadata: {{name: new, creationTimestamp: "2026-12-04T11:30:00Z"}},
     status: {{allocatable: {{cpu: "1", memory: 1Gi, pods: "10"}}}}}}
cases:
  - name: at noon only the new node is young
    pod: {{apiVersion: v1, kind: Pod, metadata: {{name: p}}, spec: {{containers: [{{name: c, image: x}}]}}}}
    want: {{feasible: [new]}}
""")
    return tmp_path


def test_a_test_file_sets_now(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _write_suite(tmp_path, 'now: "2026-12-04T12:00:00Z"')
    assert main(["test", str(folder)]) == 0
    assert "now 2026-12-04T12:00:00Z" in capsys.readouterr().out
    # an unquoted time (YAML may read it as a datetime) is the same instant
    folder = _write_suite(tmp_path, "now: 2026-12-04T12:00:00Z")
    assert main(["test", str(folder)]) == 0
    capsys.readouterr()


def test_without_now_the_default_or_the_flag_decides(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _write_suite(tmp_path, "")
    assert main(["test", str(folder)]) == 1  # 2026-01-01: neither node exists yet, both count as young
    out = capsys.readouterr().out
    assert "now 2026-01-01T00:00:00Z" in out and 'expected: ["new"]' in out
    assert main(["test", str(folder), "--now", "2026-12-04T12:00:00Z"]) == 0
    capsys.readouterr()


def test_a_bad_now_in_a_test_file_is_located(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _write_suite(tmp_path, "now: noon")
    assert main(["test", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "young.test.yaml:2:" in err and "now must be an RFC 3339 time" in err


def test_the_language_server_knows_now() -> None:
    from policyscheduler.lsp import reference

    entry = reference.root_entry("now")
    assert entry is not None and "now: timestamp" in entry and "--now" in entry
    assert reference.resolve(["now"], {}) == reference.resolve(["pod", "created"], {})
    assert "timestamp(s, default D)" in (reference.builtin_entry("timestamp") or "")


def test_compare_runs_both_sides_at_the_given_now(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """simulate --compare OLD NEW --now T: a rule reading now decides alike on both sides (no moves)."""
    young = tmp_path / "young.policy"
    young.write_text('## Nodes created within the hour.\nfilter young\n  reason "old"\n'
                     '  require now - node.created < duration("1h")\n')
    (tmp_path / "cluster.yaml").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": n, "creationTimestamp": created},
         "status": {"allocatable": {"cpu": "4", "memory": "4Gi", "pods": "10"}}}
        for n, created in (("old", "2026-12-04T10:00:00Z"), ("new", "2026-12-04T11:30:00Z"))] + [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "default"},
         "spec": {"schedulerName": "policy-scheduler", "containers": [{"name": "c", "image": "x"}]}}
        for i in range(3)]}))
    assert main(["simulate", str(tmp_path / "cluster.yaml"), "--compare", str(young), str(young),
                 "--now", "2026-12-04T12:00:00Z", "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["moved"] == [] and doc["new"]["placed"] == doc["old"]["placed"] == 3, doc
    assert main(["simulate", str(tmp_path / "cluster.yaml"), "--policies", str(young),
                 "--now", "2026-12-04T12:00:00Z", "-o", "json"]) == 0
    placed = json.loads(capsys.readouterr().out)["placements"]
    assert {p["node"] for p in placed} == {"new"}  # at that now only the new node is young


@pytest.mark.parametrize("pending", [False, True])
def test_explain_decides_at_now_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str], pending: bool) -> None:
    """explain (and explain --with-pending, through simulate's run) decides at --now: the score of
    prefer-newest-nodes follows it, and the first line names it."""
    snapshot = EXAMPLES / "tests" / "prefer-newest-nodes" / "snapshot.yaml"
    (tmp_path / "pod.yaml").write_text(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "p", "namespace": "default"}, "spec": {"schedulerName": "policy-scheduler",
                                                       "containers": [{"name": "c", "image": "x"}]}}))
    policy = str(EXAMPLES / "prefer-newest-nodes.policy")
    extra = ["--with-pending"] if pending else []
    points = {}
    for now in ("2026-12-04T12:00:00Z", "2026-12-08T06:00:00Z"):
        args = ["explain", "default/p", "--cluster", str(snapshot), str(tmp_path / "pod.yaml"), "--policies", policy,
                "--now", now, "--node", "day-old", *extra]
        assert main(args) == 0
        assert f"now {now})" in capsys.readouterr().out.splitlines()[0]
        assert main([*args, "-o", "json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["now"] == now
        (node,) = doc["nodes"]
        points[now] = node["scores"]["prefer_newest_nodes"]["raw"]
    assert points == {"2026-12-04T12:00:00Z": 76, "2026-12-08T06:00:00Z": 0}
