"""``simulate`` applies preemption offline and shows it: JSON's additive fields, the table, the summary."""

from __future__ import annotations

from typing import Any

from policyscheduler.simulate.output import render_table
from policyscheduler.simulate.run import simulate
from tests.cycle.test_preemption import node, pdb, pod
from tests.evaluation.policies import default_policies


def objects() -> list[dict[str, Any]]:
    return [node("n1", cpu="2"), node("n2", cpu="2"),
            pod("old", cpu="2", priority=10, on="n1", start=1), pod("young", cpu="2", priority=10, on="n2", start=9),
            pod("big", cpu="2", priority=1000), pod("never", cpu="2", priority=1000, preemptionPolicy="Never"),
            pod("late", cpu="2", priority=0), pdb("none", "nothing", 0)]


def test_victims_leave_the_cluster_and_the_preemptor_lands_on_its_nominated_node() -> None:
    sim = simulate(default_policies(), objects(), seed=0)
    doc = {p["pod"]: p for p in sim.to_json()["placements"]}
    # n2's victim started later: kube's last criterion picks n2; young is evicted, big lands there
    assert doc["default/big"]["node"] == "n2"
    assert doc["default/big"]["nominated_node"] == "n2" and doc["default/big"]["preempted"] == ["default/young"]
    # same priority as big: big's room is not held against it, but big was placed first (queue order)
    assert doc["default/never"]["node"] is None
    assert doc["default/never"]["message"].endswith("preemption: not eligible due to preemptionPolicy=Never.")
    assert "preempted" not in doc["default/never"] and "nominated_node" not in doc["default/never"]
    assert doc["default/late"]["node"] is None and set(doc["default/late"]) == {"pod", "node", "score", "top", "message"}
    table = render_table(sim, seed=0, width=200)
    assert "preempted default/young on n2" in table
    assert "1 pod preempted" in table.splitlines()[-1]
