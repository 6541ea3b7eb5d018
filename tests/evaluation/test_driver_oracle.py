"""The phase driver against a plain per-node oracle written here without numpy.

Both backends share :class:`~policyscheduler.evaluation.driver.Driver` -- its filter bookkeeping (which
nodes a filter rejects, which reach the next one), the raw-value bounds, the normalisation of each mode,
the weights and the tie set -- so comparing the backends with each other cannot catch a mistake there.
Here every decision is recomputed from the compiled closures alone, node by node and rule by rule, in
the order the policy language defines (first failing filter is a node's verdict; scores normalised over
the feasible nodes with :func:`~policyscheduler.evaluation.normalize.normalize`, the list version; the
weighted sum; the best nodes), and both backends must give exactly that.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from bench import workloads
from policyscheduler.compiler import PolicySet
from policyscheduler.evaluation import Decision, make_evaluator
from policyscheduler.evaluation.normalize import normalize
from policyscheduler.loader import load_policy_set
from policyscheduler.simulate.run import prepare
from policyscheduler.state.snapshot import ClusterSnapshot
from tests.gen.policysets import default_policy_set


@pytest.fixture(autouse=True)
def _vector_path_on_small_clusters() -> Any:
    """As in test_backends_agree.py: on clusters this small the vector engine would hand every rule to the
    reference closures; without this the vector side would not run its own code."""
    from policyscheduler.evaluation.vector import backend

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(backend, "SMALL", 0)
        yield


def _oracle(policy_set: PolicySet, snapshot: ClusterSnapshot, pod: dict[str, Any]) -> dict[str, Any]:
    """Verdicts (node -> (rule, reasons) or None), totals (node -> int), per-rule weighted scores and the
    best nodes, straight from the rules' closures (no runtime errors expected in these cases)."""
    rec = snapshot.pod_record(pod)
    cluster = snapshot.context(rec)
    pod_env = {"pod": rec, "cluster": cluster}
    nodes = list(snapshot.nodes)
    filters = []
    for rule in policy_set.filters:
        if not rule.applies(pod_env):
            continue
        rejection = rule.pod_rejection(pod_env)
        if rejection is not None:
            return {"rejected": (rule.name, rejection)}
        filters.append(rule)
    verdicts: dict[str, tuple[str, tuple[str, ...]] | None] = {}
    for node in nodes:
        env = {"pod": rec, "node": node, "cluster": cluster}
        verdicts[node.name] = None
        for rule in filters:
            reasons = rule.reasons(env)
            if reasons:
                verdicts[node.name] = (rule.name, tuple(reasons))
                break
    feasible = [n for n in nodes if verdicts[n.name] is None]
    if not feasible:
        return {"verdicts": verdicts, "feasible": []}
    cluster.set_feasible([n.name for n in feasible])
    totals = dict.fromkeys((n.name for n in feasible), 0)
    weighted: dict[str, dict[str, int]] = {}
    for srule in policy_set.scores:
        per_node = dict.fromkeys((n.name for n in feasible), 0)
        if srule.applies(pod_env):
            kept, raws = [], []
            for node in feasible:
                env = {"pod": rec, "node": node, "cluster": cluster}
                if not srule.ignored(env):
                    kept.append(node.name)
                    raws.append(srule.raw(env))
            for name, value in zip(kept, normalize(srule.normalize, raws)):
                per_node[name] = value * srule.weight
        weighted[srule.name] = per_node
        for name, value in per_node.items():
            totals[name] += value
    best = max(totals.values())
    return {"verdicts": verdicts, "feasible": [n.name for n in feasible], "totals": totals,
            "weighted": weighted, "top": sorted(n for n, t in totals.items() if t == best), "best": best}


def _check(decision: Decision, want: dict[str, Any], where: str) -> None:
    assert not decision.score_errors and not decision.filter_errors, where
    if "rejected" in want:
        assert decision.node is None and {v.rule for v in decision.verdicts.values()} == {want["rejected"][0]}, where
        return
    got = {name: (None if v.rule is None else (v.rule, tuple(v.reasons))) for name, v in decision.verdicts.items()}
    assert got == want["verdicts"], where
    assert list(decision.feasible) == want["feasible"], where
    if not want["feasible"]:
        assert decision.node is None, where
        return
    assert dict(decision.totals) == want["totals"], where
    assert {rule: {n: s.weighted for n, s in per.items()} for rule, per in decision.scores.items()} \
        == want["weighted"], where
    assert sorted(decision.top) == want["top"] and decision.score == want["best"], where
    assert decision.node in want["top"], where


@pytest.mark.parametrize("engine", ["vector", "reference"])
@pytest.mark.parametrize("workload", ["heterogeneous", "het-basic", "het-anti-affinity"])
def test_decisions_equal_the_per_node_oracle_on_heterogeneous_streams(engine: str, workload: str) -> None:
    """Pods of distinct shapes with churn: taints reject some nodes, full nodes fail the fit filter,
    required anti-affinity rejects others (filters rejecting none, some and all of the nodes reaching
    them), and every default normalisation mode sees raw values that differ between nodes."""
    cluster = workloads.base_cluster(20, 6, seed=1, terms=True, varied=True)
    pods = workloads.pending_pods(workload, 24, seed=1)
    churn = workloads.churn_plan(workload, cluster, 24, 1)
    policies = default_policy_set()
    snapshot, queue = prepare(cluster + pods)
    evaluator = make_evaluator(engine)
    rejecting = placed = 0
    for done, pod in enumerate(queue):
        want = _oracle(policies, snapshot, pod)
        decision = evaluator.evaluate(policies, snapshot, pod, rng=random.Random(done))
        _check(decision, want, f"{workload} pod {done}")
        rejecting += sum(v is not None for v in want.get("verdicts", {}).values()) > 0
        if decision.node is not None:
            placed += 1
            snapshot.assume(pod, decision.node)
        gone = churn.get(done)
        if gone is not None:
            snapshot.remove_pod(gone)
    assert placed >= len(queue) // 2 and rejecting >= len(queue) // 2  # the cases exercise both phases


_MODES = """
filter small_only
  require node.allocatable["cpu"] <= 4 or pod.requests["cpu"] < 1 else "too big for the small-node pod"
filter not_odd
  applies when pod.labels["app"] == "odd"
  require len(node.name) % 2 == 0 else "odd name"
score by_none weight 1 normalize none
  value len(node.name) % 101
score by_scale weight 2 normalize scale
  value len(node.name) * 7
score by_reverse weight 3 normalize reverse
  value len(node.name) * 3
score by_minmax weight 2 normalize minmax
  value 29 - len(node.name) * 5
score by_minmax_order weight 1 normalize minmax
  value int(node.labels["m"], default 0)
score by_spread weight 1 normalize spread
  value len(node.name) % 5
score skipped weight 5 normalize minmax
  applies when pod.labels["app"] == "never"
  value len(node.name)
"""


def test_every_normalisation_mode_and_filter_outcome_equals_the_oracle(tmp_path: Path) -> None:
    """A policy whose scores use each mode with raw values that differ per node (negative ones for minmax,
    and the 0 / 29 / 100 that tells kube's order of operations apart) and whose filters reject none, some
    or all of the nodes that reach them."""
    (tmp_path / "modes.policy").write_text(_MODES)
    policies = load_policy_set([tmp_path]).policy_set
    assert policies is not None
    # label m: 0 .. 100 with 29 (minmax divides before multiplying: 28 there, 29 the other way round)
    nodes = [{"kind": "Node", "metadata": {"name": "n" * (1 + i % 9) + str(i), "labels": {"m": str((0, 29, 100)[i % 3])}},
              "status": {"allocatable": {"cpu": str(2 + i % 5), "memory": "8Gi", "pods": "20"}}}
             for i in range(40)]
    pods = [{"kind": "Pod", "metadata": {"name": f"p{k}", "namespace": "default", "labels": {"app": app}},
             "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]}}
            for k, (app, cpu) in enumerate([("a", "100m"), ("odd", "100m"), ("a", "2"), ("odd", "2"),
                                            ("odd", "64")])]
    snapshot = ClusterSnapshot.from_objects(nodes)
    for engine in ("vector", "reference"):
        for k, pod in enumerate(pods):
            _check(make_evaluator(engine).evaluate(policies, snapshot, pod, rng=random.Random(k)),
                   _oracle(policies, snapshot, pod), f"{engine} pod {k}")
