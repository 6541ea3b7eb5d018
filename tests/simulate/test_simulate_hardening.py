"""Issue 12 in simulate: no quadratic retries (event-driven requeue), and decisions without per-node detail."""

from __future__ import annotations

from policyscheduler.loader import load_layered
from policyscheduler.simulate import simulate
from tests.hardening.chain import chain_objects


def test_reversed_affinity_chain_places_every_pod_with_linear_evaluations() -> None:
    policies = load_layered().policy_set
    assert policies is not None
    sim = simulate(policies, chain_objects(200, 20), seed=0, detail=False)
    assert len(sim.placed) == 200 and not sim.unplaced
    # 199 failures in the first pass, then each pod once, right after the pod it waited for: 2P - 1
    assert sim.evaluations == 399
    assert sim.passes == 2
    # placements in the order they happened: the end of the chain first
    assert [d.pod for d in sim.placed][:3] == ["default/p199", "default/p198", "default/p197"]


def test_output_order_is_placements_then_unplaced_in_queue_order() -> None:
    policies = load_layered().policy_set
    assert policies is not None
    objs = chain_objects(6, 2)
    # p000..p004 wait for the next link; drop p003 so p000..p002 can never be placed
    objs = [o for o in objs if o["metadata"]["name"] != "p003"]
    sim = simulate(policies, objs, seed=0, detail=False)
    assert [d.pod for d in sim.decisions] == ["default/p005", "default/p004", "default/p000", "default/p001",
                                              "default/p002"]
    assert all(d.node is None and d.message for d in sim.unplaced)


def test_without_detail_decisions_keep_only_what_the_output_shows() -> None:
    policies = load_layered().policy_set
    assert policies is not None
    objs = chain_objects(4, 3)
    full = simulate(policies, objs, seed=3)
    lean = simulate(policies, objs, seed=3, detail=False)
    assert [d.to_json() for d in full.decisions] == [d.to_json() for d in lean.decisions]
    assert all(len(d.verdicts) == 3 for d in full.decisions)
    assert all(not d.verdicts and not d.scores and not d.totals and not d.feasible for d in lean.decisions)
