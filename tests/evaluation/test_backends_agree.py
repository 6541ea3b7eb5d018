"""Differential test: the vectorised backend decides exactly what the reference (per-node) backend does.

The reference evaluator is the executable semantics; any other backend is correct when it returns an
equal :class:`Decision` -- every node verdict and reason, every raw / normalised / weighted score, the
feasible set, the best-node set, the chosen node and the FailedScheduling message -- and consumes the
tie-break ``rng`` identically. This runs both on seeded random (cluster, pod) cases from
:mod:`tests.gen` under the default policies and under the user-style set in ``tests/gen/policies``
(labels, pod counts, resource arithmetic, taint loops, negative and float scores, every normalisation
mode, runtime errors), plus whole ``simulate`` runs where each placement feeds the next decision.

A failure prints the case seed: ``tests.gen.random_case(seed)`` rebuilds the cluster and pod. Each
backend gets its own snapshot built from the same objects, so state one keeps cannot leak into the
other, and one evaluator instance per backend serves every case, as in a long-running scheduler.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from policyscheduler.compiler import PolicySet
from policyscheduler.evaluation import Decision, Evaluator, ReferenceEvaluator, diff_decisions
from policyscheduler.simulate.run import simulate
from policyscheduler.state import ClusterSnapshot
from tests.gen import Case, random_case, random_workload
from tests.gen.policysets import default_policy_set, user_policy_set
from tests.gen.strategies import cases


@pytest.fixture(autouse=True, scope="module")
def _vector_path_on_small_clusters() -> Any:
    """The vector engine hands a rule to the reference when at most ``backend.SMALL`` nodes are left (it
    is cheaper there); these clusters have 2-12 nodes, so without this most cases would compare the
    reference with itself. Every case here takes the array path."""
    from policyscheduler.evaluation.vector import backend

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(backend, "SMALL", 0)
        yield

CASES_PER_SET = 1000
"""Seeded cases per policy set (2,000 in all, issue 6's minimum), split into blocks for progress."""
BLOCKS = 10
BLOCK = CASES_PER_SET // BLOCKS
USER_SEED_OFFSET = 1_000_000
"""The user-style set runs on other seeds than the defaults, so the two sets see different clusters."""


def _make(name: str) -> tuple[Evaluator, str]:
    """The named evaluator and the backend actually behind it.

    Falls back to the reference backend while ``make_evaluator`` or the vector backend is not there
    yet, so this test runs (reference against itself) before the vectorised backend lands.
    """
    try:
        from policyscheduler.evaluation import make_evaluator
    except ImportError:
        return ReferenceEvaluator(), "reference"
    try:
        return make_evaluator(name), name
    except ImportError:
        return ReferenceEvaluator(), "reference"


REFERENCE, _ = _make("reference")
VECTOR, VECTOR_BACKEND = _make("vector")


def _policies(name: str) -> PolicySet:
    return default_policy_set() if name == "default" else user_policy_set()


def _seed(name: str, index: int) -> int:
    return index + (USER_SEED_OFFSET if name == "user" else 0)


def _decide(evaluator: Evaluator, policies: PolicySet, case: Case) -> tuple[Decision, float]:
    """Evaluate the case on a fresh snapshot; also return the next draw of the rng (same use of rng)."""
    snapshot = ClusterSnapshot.from_objects(case.objects)
    rng = random.Random(case.seed)
    decision = evaluator.evaluate(policies, snapshot, case.pod, rng=rng)
    return decision, rng.random()


def _disagreement(policies: PolicySet, case: Case) -> str | None:
    """None when both backends agree on the case, else a readable report naming the seed."""
    left, left_next = _decide(REFERENCE, policies, case)
    right, right_next = _decide(VECTOR, policies, case)
    diff = diff_decisions(left, right)
    if left_next != right_next:
        diff.append("the backends consumed the tie-break rng differently")
    if not diff and left != right:
        diff.append("decisions differ (==) but diff_decisions found nothing")
    if not diff:
        return None
    shown = "\n    ".join(diff[:20])
    more = f"\n    ... and {len(diff) - 20} more" if len(diff) > 20 else ""
    return f"seed {case.seed} (tests.gen.random_case({case.seed})), pod {left.pod}:\n    {shown}{more}"


def _outcome(decision: Decision) -> list[str]:
    """Tags for what a case exercised, so a drifting generator cannot quietly stop covering a branch."""
    tags = ["placed" if decision.node is not None else "unplaced"]
    if len(decision.top) > 1:
        tags.append("tie")
    message = decision.message or ""
    if "nodes are available: " in message and not message.split("nodes are available: ", 1)[1][:1].isdigit():
        tags.append("pod-rejected")  # a `reject pod` clause: the message has no per-node counts
    for verdict in decision.verdicts.values():
        if verdict.error is not None:
            tags.append(f"error:{verdict.rule}")
    for failure in getattr(decision, "score_errors", ()):  # score rules that failed on a node (node stays feasible)
        tags.append(f"error:{failure.rule}")
    for rule, per_node in decision.scores.items():
        if any(s.ignored for s in per_node.values()):
            tags.append(f"ignored:{rule}")
        if any(s.raw < 0 for s in per_node.values()):
            tags.append("negative-raw")
    return tags


REQUIRED_OUTCOMES: dict[str, set[str]] = {
    "default": {"placed", "unplaced", "tie", "pod-rejected", "ignored:pod_topology_spread"},
    "user": {"placed", "unplaced", "tie", "pod-rejected", "negative-raw", "error:memory_per_core",
             "error:tier_neighbours", "error:priority_neighbours", "ignored:memory_pressure",
             "ignored:namespace_spread"},
}
"""What each set's seeded cases must exercise (on the reference decisions)."""


@pytest.mark.parametrize("block", range(BLOCKS))
@pytest.mark.parametrize("policy_name", ["default", "user"])
def test_backends_agree_on_seeded_cases(policy_name: str, block: int) -> None:
    policies = _policies(policy_name)
    failures: list[str] = []
    for index in range(block * BLOCK, (block + 1) * BLOCK):
        case = random_case(_seed(policy_name, index))
        report = _disagreement(policies, case)
        if report is not None:
            failures.append(report)
    assert not failures, (f"{len(failures)} of {BLOCK} cases disagree (reference vs {VECTOR_BACKEND}):\n"
                          + "\n".join(failures[:5]))


@pytest.mark.parametrize("policy_name", ["default", "user"])
def test_seeded_cases_cover_every_branch(policy_name: str) -> None:
    """The 1,000 cases per set hit every outcome the differential test is meant to compare."""
    policies = _policies(policy_name)
    seen: Counter[str] = Counter()
    for index in range(CASES_PER_SET):
        seen.update(_outcome(_decide(REFERENCE, policies, random_case(_seed(policy_name, index)))[0]))
    missing = REQUIRED_OUTCOMES[policy_name] - set(seen)
    assert not missing, f"the generator no longer produces {sorted(missing)}; seen: {dict(seen)}"


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_backends_agree_on_hypothesis_cases(case: Case) -> None:
    """The same property through the shared hypothesis strategy, on seeds anywhere in 0..2**32."""
    for policies in (default_policy_set(), user_policy_set()):
        report = _disagreement(policies, case)
        assert report is None, report


def _run(evaluator: Evaluator, policies: PolicySet, objects: list[dict[str, Any]], seed: int) -> tuple[Decision, ...]:
    return simulate(policies, objects, seed=seed, evaluator=evaluator).decisions


@pytest.mark.parametrize("policy_name", ["default", "user"])
@pytest.mark.parametrize("seed", range(6))
def test_backends_agree_on_whole_simulations(policy_name: str, seed: int) -> None:
    """Whole runs: each placement is assumed into the snapshot the next decision sees (and requeues)."""
    policies = _policies(policy_name)
    objects = random_workload(random.Random(seed + 7_000), pending=10)
    left = _run(REFERENCE, policies, objects, seed)  # simulate never edits the objects it is given
    right = _run(VECTOR, policies, objects, seed)
    assert [d.to_json() for d in left] == [d.to_json() for d in right]
    for a, b in zip(left, right):
        assert a == b, f"workload seed {seed + 7_000}, pod {a.pod}:\n  " + "\n  ".join(diff_decisions(a, b))


# -- what-if evaluations (preemption's "without these pods", nominated pods' "with these pods") -------------

WHATIF_CASES = 300
"""Seeded what-if cases per policy set."""


def _placed_keys(snapshot: ClusterSnapshot) -> list[str]:
    from policyscheduler.state import pod_key as store_key

    return sorted(store_key(p) for node in snapshot.nodes for p in node.pods)


def _node_state(snapshot: ClusterSnapshot) -> list[Any]:
    """What a node record holds, comparable (records compare by identity): the same pod records in the
    same order, the same aggregates and ports."""
    return [(n.name, tuple(id(p) for p in n.pods), dict(n.requested), dict(n.nonzero_requested), n.pod_count,
             tuple(repr(port) for port in n.used_ports)) for n in snapshot.nodes]


def _whatif_run(evaluator: Evaluator, policies: PolicySet, case: Case) -> list[Any]:
    """Everything one backend answers on a case's what-if views, in a fixed order: filter verdicts of every
    node and the whole decision with some placed pods taken away, then also with a copy of the pending
    pod placed on some node (nested), then after both views closed -- and whether the node records came
    back exactly as they were."""
    from policyscheduler.state.whatif import pods_added, pods_removed

    snapshot = ClusterSnapshot.from_objects(case.objects)
    state = snapshot.state
    pick = random.Random(case.seed ^ 0x5EED)
    keys = _placed_keys(snapshot)
    removed = pick.sample(keys, k=min(len(keys), pick.randint(1, 4)))
    slots = list(range(len(snapshot.nodes)))
    twin = {**case.pod, "metadata": {**case.pod.get("metadata", {}), "name": "whatif-twin", "uid": "whatif-twin"}}
    target = snapshot.nodes[pick.randrange(len(slots))].name if slots else ""
    before = _node_state(snapshot)
    out: list[Any] = [evaluator.filter_nodes(policies, snapshot, case.pod, slots)]  # type: ignore[attr-defined]
    with pods_removed(state, removed):
        out.append(evaluator.filter_nodes(policies, snapshot, case.pod, slots))  # type: ignore[attr-defined]
        out.append(evaluator.evaluate(policies, snapshot, case.pod, rng=random.Random(case.seed)))
        with pods_added(state, [(snapshot.pod_record(twin), target)] if target else []):
            out.append(evaluator.filter_nodes(policies, snapshot, case.pod, slots))  # type: ignore[attr-defined]
            out.append(evaluator.evaluate(policies, snapshot, case.pod, rng=random.Random(case.seed)))
    out.append(evaluator.filter_nodes(policies, snapshot, case.pod, slots))  # type: ignore[attr-defined]
    out.append(evaluator.evaluate(policies, snapshot, case.pod, rng=random.Random(case.seed)))
    out.append(_node_state(snapshot) == before)
    return out


@pytest.mark.parametrize("policy_name", ["default", "user"])
def test_backends_agree_on_whatif_views(policy_name: str) -> None:
    """Both backends answer every what-if question alike, and each view leaves the state as it found it
    (the verdicts after the views equal the ones before, and so do the node records)."""
    policies = _policies(policy_name)
    failures: list[str] = []
    changed = 0
    for index in range(WHATIF_CASES):
        case = random_case(_seed(policy_name, index) + 500_000)
        left = _whatif_run(REFERENCE, policies, case)
        right = _whatif_run(VECTOR, policies, case)
        if not left[-1] or not right[-1] or left[0] != left[5]:
            failures.append(f"seed {case.seed}: the state did not come back after the what-if views")
        changed += left[0] != left[1] or left[1] != left[3]
        for i, (a, b) in enumerate(zip(left, right)):
            if isinstance(a, Decision):
                diff = diff_decisions(a, b)
                if diff or a != b:
                    failures.append(f"seed {case.seed}, step {i}: " + "; ".join(diff[:5]))
            elif a != b:
                failures.append(f"seed {case.seed}, step {i}: verdicts differ: {a} != {b}")
    assert not failures, f"{len(failures)} what-if disagreements:\n" + "\n".join(failures[:5])
    assert changed > WHATIF_CASES // 10, f"only {changed} cases had a verdict changed by a view: the test is too weak"


# -- the runtime budget (issue 24): a rule past it fails alike on both backends --------------------------

SMALL_BUDGET = 2_000
"""Steps per evaluation (and per pod) for the budget cases: the real 10,000,000 takes seconds per node in
Python; the mechanism is the same at any size."""

BUDGET_POLICY = '''\
filter label_triples
  reason "never"
  applies when "triples" in pod.labels
  require sum(a in pod.labels: sum(b in pod.labels: count(c in pod.labels where c == a))) >= 0

filter node_label_triples
  reason "never"
  require sum(a in node.labels: sum(b in node.labels: count(c in node.labels where c == a))) >= 0

score pod_triples weight 1 normalize scale
  value sum(a in pod.labels: sum(b in pod.labels: count(c in pod.labels where c == a)))

score pod_pairs weight 1 normalize scale
  value sum(a in pod.labels: count(b in pod.labels where b == a)) + len(node.labels)
'''
"""Work that grows with the pod's and the node's label counts, far beyond what the schema bound assumes
once they carry dozens of labels: ``pod_triples`` (pod-level, evaluated once per pod by the vector
backend) runs out of budget, and ``pod_pairs`` after it needs a fresh budget of its own."""


@pytest.fixture()
def _small_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    from policyscheduler.compiler import closures, program
    from policyscheduler.evaluation import driver

    monkeypatch.setattr(closures, "STEP_BUDGET", SMALL_BUDGET)
    monkeypatch.setattr(program, "STEP_BUDGET", SMALL_BUDGET)
    monkeypatch.setattr(driver, "POD_STEP_BUDGET", SMALL_BUDGET)


def _budget_case(*, triples: bool, node_labels: int) -> tuple[PolicySet, Case]:
    from policyscheduler.loader import load_policy_texts

    loaded = load_policy_texts([("budget.policy", BUDGET_POLICY)])
    assert loaded.policy_set is not None, [str(d) for d in loaded.diagnostics]
    case = random_case(11, nodes=4)
    labels = {f"l{i}": "x" for i in range(20)} | ({"triples": "yes"} if triples else {})
    pod = {**case.pod, "metadata": {**case.pod.get("metadata", {}), "labels": labels}}
    objects = [dict(o) for o in case.objects]
    big = next(o for o in objects if o.get("kind") == "Node")
    big["metadata"] = {**big["metadata"], "labels": {**big["metadata"].get("labels", {}),
                                                     **{f"n{i}": "y" for i in range(node_labels)}}}
    return loaded.policy_set, Case(case.seed, objects, pod)


@pytest.mark.usefixtures("_small_budget")
@pytest.mark.parametrize(("triples", "node_labels"), [(False, 0), (False, 20), (True, 0)])
def test_backends_agree_when_a_rule_runs_out_of_budget(triples: bool, node_labels: int) -> None:
    """A pod-level filter over budget (every node fails with its located ``budget:`` error), a node-level
    one over budget on the one node with many labels (that node fails, the others pass), a score rule
    over budget (recorded in ``score_errors``): the reference and the vector backend decide alike."""
    policies, case = _budget_case(triples=triples, node_labels=node_labels)
    vector = _make("vector")[0]
    left, right = _decide(REFERENCE, policies, case)[0], _decide(vector, policies, case)[0]
    assert diff_decisions(left, right) == [] and left == right, diff_decisions(left, right)
    if triples:
        assert left.node is None and {e.rule for e in left.filter_errors} == {"label_triples"}
        assert all(e.message.startswith("budget:") and e.location for e in left.filter_errors)
    elif node_labels:
        assert [e.rule for e in left.filter_errors] == ["node_label_triples"]
        assert left.filter_errors[0].message.startswith("budget:") and left.filter_errors[0].location
    else:
        assert not left.filter_errors
        failed = {e.rule for e in left.score_errors}
        assert failed == {"pod_triples"}, left.score_errors
        assert all(e.message.startswith("budget:") and e.location for e in left.score_errors)


@pytest.mark.usefixtures("_small_budget")
def test_vector_pod_level_work_gets_a_fresh_budget_after_a_rule_ran_out() -> None:
    """``pod_pairs`` (400 steps) runs right after ``pod_triples`` used up the thread's budget: evaluated
    once per pod by the vector backend, it must start from a fresh budget, not fail on what the previous
    rule left and send every row to the reference closures."""
    from policyscheduler.evaluation.driver import Driver
    from policyscheduler.evaluation.vector import VectorBackend

    policies, case = _budget_case(triples=False, node_labels=0)
    backend = VectorBackend()
    decision = _decide(Driver(backend), policies, case)[0]
    assert {e.rule for e in decision.score_errors} == {"pod_triples"}
    assert backend.reference_rows["score pod_pairs"] == 0, backend.reference_rows


# -- storage: pods with claims, volumes, classes and CSI limits (tests/gen/storage.py) ---------------------

STORAGE_RUNS = 60
"""Seeded storage scenarios run as whole simulations under the default policies (both backends)."""


def test_backends_agree_on_storage_scenarios() -> None:
    """Every volume plugin's verdicts and the claim work assumed between pods decide alike on both
    backends; the scenarios must reach every volume reason and place some pods, so the comparison
    cannot pass by covering nothing."""
    from tests.gen.storage import storage_scenario

    policies = default_policy_set()
    seen: Counter[str] = Counter()
    for seed in range(STORAGE_RUNS):
        objects, pods = storage_scenario(random.Random(seed))
        for pod in pods:
            pod["spec"]["schedulerName"] = "policy-scheduler"
        left = _run(REFERENCE, policies, objects + pods, seed)
        right = _run(VECTOR, policies, objects + pods, seed)
        for a, b in zip(left, right, strict=True):
            assert a == b, f"storage scenario {seed}, pod {a.pod}:\n  " + "\n  ".join(diff_decisions(a, b))
            seen["placed" if a.node is not None else "unplaced"] += 1
            seen.update(r for v in a.verdicts.values() for r in v.reasons)
            if a.message and "nodes are available: " in a.message \
                    and not a.message.split("nodes are available: ", 1)[1][:1].isdigit():
                seen["pod-rejected"] += 1
    wanted = {"placed", "pod-rejected", "node(s) didn't find available persistent volumes to bind",
              "node(s) didn't match PersistentVolume's node affinity", "node(s) exceed max volume count",
              "node(s) had no available disk", "node(s) had no available volume zone",
              "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use "
              "by another pod"}
    assert not wanted - set(seen), f"storage scenarios no longer reach {sorted(wanted - set(seen))}: {dict(seen)}"
